// mixp_state_save: snapshots every listed object to host memory, checksums
// each tensor, then writes the safetensors file atomically.
#include <cstring>
#include <set>

#include "autograd/node.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "ops/ops.hpp"
#include "state/crc32c.hpp"
#include "state/file_io.hpp"
#include "state/safetensors.hpp"
#include "state/state.hpp"

namespace mixp::state {
namespace {

struct Out {
  OutTensor meta;
  std::vector<uint8_t> bytes;
};

class Writer {
 public:
  explicit Writer(Session *s) : s_(s) {}

  // A tensor's values (any layout) in its own dtype.
  void tensor(const std::string &name, const Tensor &t) {
    TensorPtr c = TensorPtr::share(const_cast<Tensor *>(&t));
    if (!t.is_contiguous()) {
      NoGradGuard no_grad(s_);
      c = clone(c);
    }
    Out o;
    o.meta.name = name;
    o.meta.dtype = file_dtype(t.dtype);
    o.meta.shape.assign(t.shape, t.shape + t.ndim);
    o.bytes.resize(size_t(t.numel()) * t.elem_size());
    if (!o.bytes.empty()) t.session->backend->copy_to_host(o.bytes.data(), c->data(), o.bytes.size());
    o.meta.nbytes = o.bytes.size();
    out_.push_back(std::move(o));
  }

  template <class T>
  void host(const std::string &name, const char *dtype, std::vector<int64_t> shape,
            const T *values, size_t n) {
    Out o;
    o.meta.name = name;
    o.meta.dtype = dtype;
    o.meta.shape = std::move(shape);
    o.bytes.resize(n * sizeof(T));
    if (n) std::memcpy(o.bytes.data(), values, n * sizeof(T));
    o.meta.nbytes = o.bytes.size();
    out_.push_back(std::move(o));
  }
  void i64s(const std::string &name, std::vector<int64_t> shape, const std::vector<int64_t> &v) {
    host(name, "I64", std::move(shape), v.data(), v.size());
  }

  void write(const std::string &path, std::map<std::string, std::string> metadata, const char *fn) {
    std::vector<OutTensor> metas;
    for (Out &o : out_) {
      Entry e;
      e.name = o.meta.name;
      e.dtype = o.meta.dtype;
      e.shape = o.meta.shape;
      e.begin = 0;
      e.end = o.bytes.size();
      metadata["crc32c." + e.name] = crc_hex(tensor_crc(e, o.bytes.data()));
      metas.push_back(o.meta);
    }
    metadata["crc32c.__metadata__"] = crc_hex(metadata_crc(metadata));
    const std::string header = build_header(metas, metadata);
    std::vector<Piece> pieces{{header.data(), header.size()}};
    for (Out &o : out_) pieces.push_back({o.bytes.data(), o.bytes.size()});
    write_atomic(path, pieces, fn);
  }

 private:
  Session *s_;
  std::vector<Out> out_;
};

}  // namespace

void save(const Objects &o, const std::string &path, const char *fn) {
  for (size_t j = 0; j < o.scalers.size(); ++j)
    if (o.scalers[j]->handshake.pending())
      fail(MIXP_ERR_STATE, fn, ": spec->scalers[", j,
           "] is between unscale()/step() and update(); save after update()");
  std::vector<Named> named = named_tensors(o.modules, o.prefixes, o.extra, o.optimizers, fn);
  std::set<const Tensor *> covered;
  for (const Named &n : named) covered.insert(n.tensor);

  Writer w(o.session);
  for (const Named &n : named) w.tensor(n.name, n.master ? *n.master : *n.tensor);

  for (size_t j = 0; j < o.optimizers.size(); ++j) {
    const Optimizer &opt = *o.optimizers[j];
    const mixp_optimizer_options &p = opt.options;
    const std::string pre = optimizer_prefix(j);
    const double h[kOptHParams] = {p.lr,    p.momentum, p.dampening, p.weight_decay,
                                   p.beta1, p.beta2,    p.eps,       p.min_lr};
    w.host(pre + "hparams", "F64", {kOptHParams}, h, kOptHParams);
    w.i64s(pre + "config", {kOptConfig},
           {int64_t(p.kind), int64_t(p.nesterov), int64_t(p.schedule), p.warmup_steps,
            p.total_steps, opt.step_count, int64_t(opt.slots.size())});
    for (size_t i = 0; i < opt.slots.size(); ++i) {
      const Optimizer::Slot &slot = opt.slots[i];
      const std::string sp = str(pre, i, ".");
      if (slot.buf1) w.tensor(sp + buf1_name(p.kind), *slot.buf1);
      if (slot.buf2) w.tensor(sp + buf2_name(), *slot.buf2);
      if (slot.step) w.tensor(sp + "step", *slot.step);
      if (slot.master && !covered.count(slot.param.get())) w.tensor(sp + "master", *slot.master);
    }
  }
  for (size_t j = 0; j < o.scalers.size(); ++j) {
    std::vector<unsigned char> bytes(GradScaler::state_size());
    o.scalers[j]->save_state(bytes.data());
    w.host(str(kReserved, "scaler", j), "U8", {int64_t(bytes.size())}, bytes.data(), bytes.size());
  }
  for (size_t j = 0; j < o.loaders.size(); ++j) {
    const Loader &l = *o.loaders[j];
    w.i64s(str(kReserved, "loader", j), {kLoaderFields},
           {l.data->size(), l.opts.batch_size, int64_t(l.opts.shuffle), int64_t(l.opts.drop_last),
            int64_t(l.opts.seed), l.epoch, l.pos, int64_t(l.epoch_done)});
  }
  if (o.rng)
    w.i64s(str(kReserved, "rng"), {2}, {int64_t(o.session->seed), int64_t(o.session->rng_offset)});
  w.i64s(str(kReserved, "step"), {}, {o.step});

  std::map<std::string, std::string> metadata{{"format", kFormat},
                                              {"format_version", kFormatVersion},
                                              {"mixp_version", mixp_version()}};
  if (!o.user.empty()) metadata["user"] = o.user;
  w.write(path, std::move(metadata), fn);
}

}  // namespace mixp::state
