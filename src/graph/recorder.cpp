// The recorder's memory, its refusals, the host steps and the calls that
// draw random numbers (see recorder.hpp).
#include "graph/recorder.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mixp::graph {
namespace {

[[noreturn]] void refuse(const char *what) {
  fail(MIXP_ERR_STATE, "the host cannot ", what,
       " while a training step is captured (between mixp_graph_capture_begin and mixp_graph_capture_end): "
       "a replay could not repeat it; do it before mixp_graph_capture_begin or after mixp_graph_capture_end");
}

}  // namespace

void Recorder::touch(const void *p) {
  if (p && !paused_) out_.memory.touched.push_back(static_cast<const char *>(p));
}

void *Recorder::allocate(size_t nbytes) {
  void *p = real_->allocate(nbytes);
  std::lock_guard<std::mutex> lock(mem_mu_);
  if (!paused_) {
    try {
      blocks_[static_cast<char *>(p)] = out_.memory.blocks.size();
      out_.memory.blocks.push_back(GraphMemory::Block{static_cast<char *>(p), nbytes, true});
    } catch (...) {
      blocks_.erase(static_cast<char *>(p));
      real_->deallocate(p, nbytes);
      throw;
    }
  }
  return p;
}

// Nothing is freed while capturing: every address a call used stays the
// graph's, so no later call of the step can get the same block.
void Recorder::deallocate(void *p, size_t nbytes) noexcept {
  char *c = static_cast<char *>(p);
  std::lock_guard<std::mutex> lock(mem_mu_);
  auto it = blocks_.find(c);
  if (it != blocks_.end()) {
    out_.memory.blocks[it->second].held = false;
    return;
  }
  try {
    out_.memory.blocks.push_back(GraphMemory::Block{c, nbytes ? nbytes : 1, false});
    blocks_[c] = out_.memory.blocks.size() - 1;
    out_.released_inputs.push_back(c);
  } catch (...) {
    // Out of memory for the bookkeeping: the block leaks rather than be
    // reused under a recorded address.
  }
}

void Recorder::copy_from_host(void *dst, const void *src, size_t nbytes) {
  if (paused_) return real_->copy_from_host(dst, src, nbytes);
  refuse("upload host memory into a tensor");
}

void Recorder::copy_to_host(void *dst, const void *src, size_t nbytes) {
  if (paused_) return real_->copy_to_host(dst, src, nbytes);
  refuse("read a tensor's values (which waits for the device)");
}

void Recorder::count_values(const View &x, double tiny_below, double huge_from, ValueCounts *out) {
  if (paused_) return real_->count_values(x, tiny_below, huge_from, out);
  refuse("count a tensor's values (the numerics checker, gradient statistics)");
}

void Recorder::host_step(std::weak_ptr<const void> owner, const char *what, std::vector<const void *> uses,
                         std::function<void(uint64_t)> fn) {
  out_.calls.reserve(out_.calls.size() + 1);
  out_.owners.reserve(out_.owners.size() + 1);
  {
    CapturePause paused(this);
    fn(0);
  }
  if (paused_) return;
  for (const void *p : uses) touch(p);
  out_.owners.push_back(Recording::Owner{std::move(owner), what});
  out_.calls.emplace_back([fn = std::move(fn)](Backend &, const Replay &r) { fn(r.shift); });
}

void Recorder::upload_constant(void *dst, const void *src, size_t n) {
  auto bytes = std::make_shared<const std::vector<unsigned char>>(static_cast<const unsigned char *>(src),
                                                                  static_cast<const unsigned char *>(src) + n);
  touch(dst);
  record([=](Backend &b, const Replay &) { b.copy_from_host(dst, bytes->data(), bytes->size()); });
}

std::unique_ptr<Backend> Recorder::finish(Recording *out) {
  std::lock_guard<std::mutex> lock(mem_mu_);
  GraphMemory &m = out_.memory;
  std::sort(m.blocks.begin(), m.blocks.end(),
            [](const GraphMemory::Block &a, const GraphMemory::Block &b) { return a.p < b.p; });
  std::sort(m.touched.begin(), m.touched.end());
  m.touched.erase(std::unique(m.touched.begin(), m.touched.end()), m.touched.end());
  *out = std::move(out_);
  out_ = Recording{};
  blocks_.clear();
  return std::move(real_);
}

void Recorder::rand_uniform(const View &out, uint64_t seed, uint64_t offset) {
  touch(out);
  record([=](Backend &b, const Replay &r) { b.rand_uniform(out, r.seed(seed), offset + r.shift); });
}

void Recorder::rand_normal(const View &out, uint64_t seed, uint64_t offset) {
  touch(out);
  record([=](Backend &b, const Replay &r) { b.rand_normal(out, r.seed(seed), offset + r.shift); });
}

void Recorder::dropout_mask(const View &mask, double p, uint64_t seed, uint64_t offset) {
  touch(mask);
  record([=](Backend &b, const Replay &r) { b.dropout_mask(mask, p, r.seed(seed), offset + r.shift); });
}

namespace {

// Fused attention is a declinable kernel: only a call the device took is
// kept (a declined one wrote nothing, and the op composed the result from
// calls that were recorded themselves).
AttentionArgs shifted(AttentionArgs a, const Replay &r) {
  a.seed = r.seed(a.seed);
  a.offset += r.shift;
  return a;
}

}  // namespace

bool Recorder::attention_forward(const AttentionArgs &a) {
  if (!real_->attention_forward(a)) return false;
  if (paused_) return true;
  for (const View *v : {&a.q, &a.k, &a.v, &a.o, &a.lse}) touch(*v);
  out_.calls.emplace_back([a](Backend &b, const Replay &r) { b.attention_forward(shifted(a, r)); });
  return true;
}

bool Recorder::attention_backward(const AttentionArgs &a) {
  if (!real_->attention_backward(a)) return false;
  if (paused_) return true;
  for (const View *v : {&a.q, &a.k, &a.v, &a.o, &a.lse, &a.dout, &a.dq, &a.dk, &a.dv}) touch(*v);
  out_.calls.emplace_back([a](Backend &b, const Replay &r) { b.attention_backward(shifted(a, r)); });
  return true;
}

// Like fused attention, a declinable kernel: kept only when the device took it.
bool Recorder::gemm_row_sums(const GemmArgs &args, void *row_sums) {
  if (!real_->gemm_row_sums(args, row_sums)) return false;
  if (paused_) return true;
  touch(args.a), touch(args.b), touch(args.c), touch(args.bias), touch(row_sums);
  out_.calls.emplace_back([args, row_sums](Backend &b, const Replay &) { b.gemm_row_sums(args, row_sums); });
  return true;
}

// The optimizers' kernels reach the recorder only from outside a host step
// (the optimizer itself steps through StepCapture::host_step, which runs
// them unrecorded): recorded with their stochastic-rounding offsets shifted.
namespace {

std::vector<optim::ParamArgs> shifted(std::vector<optim::ParamArgs> ps, const Replay &r) {
  for (optim::ParamArgs &p : ps)
    if (p.stochastic) {
      p.seed = r.seed(p.seed);
      p.offset += r.shift;
    }
  return ps;
}

}  // namespace

// Both steps: every pointer of every parameter touched, the list kept, and
// each replay calls `step` with the stochastic-rounding offsets shifted.
template <class Step>
void Recorder::record_optimizer_step(const optim::ParamArgs *params, int count, const float *found_inf,
                                     Step step) {
  std::vector<optim::ParamArgs> ps(params, params + count);
  for (const optim::ParamArgs &p : ps)
    for (const void *q : std::initializer_list<const void *>{p.param, p.master, p.grad, p.step, p.buf1, p.buf2})
      touch(q);
  touch(found_inf);
  record([=](Backend &b, const Replay &r) {
    const std::vector<optim::ParamArgs> now = shifted(ps, r);
    step(b, now.data());
  });
}

void Recorder::sgd_step(const optim::ParamArgs *params, int count, const optim::SgdArgs &args,
                        const float *found_inf) {
  record_optimizer_step(params, count, found_inf, [=](Backend &b, const optim::ParamArgs *now) {
    b.sgd_step(now, count, args, found_inf);
  });
}

void Recorder::adam_step(const optim::ParamArgs *params, int count, const optim::AdamArgs &args,
                         const float *found_inf) {
  record_optimizer_step(params, count, found_inf, [=](Backend &b, const optim::ParamArgs *now) {
    b.adam_step(now, count, args, found_inf);
  });
}

}  // namespace mixp::graph
