// 2-D convolution through oneDNN's direct convolution (forward, backward
// data, backward weights; F32, and BF16 on AMX with fp32 accumulation), one
// primitive per exact geometry, for conv.cpp. The primitives pick their own
// memory formats ("any"); the user's NCHW/NHWC buffers are reordered in and
// out when the chosen format differs. F16 (oneDNN 2.6 has no f16
// convolution) and BF16 on CPUs without a bf16 unit are widened to fp32,
// convolved, and rounded once (run_widened).
#include <algorithm>
#include <array>
#include <cstring>
#include <dnnl.hpp>
#include <map>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"
#include "cpu/conv_paths.hpp"
#include "cpu/convert_row.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/dnnl_error.hpp"
#include "cpu/scratch.hpp"

namespace mixp::cpu::conv {
namespace {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

// ---- oneDNN (F32, BF16) -----------------------------------------------------------

dnnl::memory::desc act_md(int64_t n, int64_t c, int64_t h, int64_t w, dt t, bool nhwc) {
  return dnnl::memory::desc({n, c, h, w}, t, nhwc ? tag::nhwc : tag::nchw);
}

dnnl::memory::desc wei_md(const Conv2dGeom &g, dt t) {
  if (g.groups == 1) return dnnl::memory::desc({g.c_out, g.c_in, g.kh, g.kw}, t, tag::oihw);
  return dnnl::memory::desc({g.groups, g.c_out / g.groups, g.c_in / g.groups, g.kh, g.kw}, t, tag::goihw);
}

dnnl::memory::desc any_like(const dnnl::memory::desc &md) {
  return dnnl::memory::desc(md.dims(), md.data_type(), tag::any);
}

ConvCache::Slot make_slot(ConvCache &c, int arg, const dnnl::memory::desc &user, const dnnl::memory::desc &want,
                          bool output) {
  ConvCache::Slot s;
  s.arg = arg;
  s.user = user;
  s.want = want;
  s.reorder = user != want;
  if (s.reorder)
    s.r = output ? dnnl::reorder(dnnl::reorder::primitive_desc(c.engine, want, c.engine, user))
                 : dnnl::reorder(dnnl::reorder::primitive_desc(c.engine, user, c.engine, want));
  return s;
}

ConvCache::Entry build(ConvCache &c, Dir dir, const Conv2dGeom &g, dt t, bool has_bias) {
  const auto alg = dnnl::algorithm::convolution_direct;
  const dnnl::memory::dims strides{g.stride_h, g.stride_w}, dil{g.dil_h - 1, g.dil_w - 1},
      pad{g.pad_h, g.pad_w};
  const auto x_user = act_md(g.n, g.c_in, g.h, g.w, t, g.nhwc);
  const auto y_user = act_md(g.n, g.c_out, g.oh, g.ow, t, g.nhwc);
  const auto w_user = wei_md(g, t);
  // oneDNN runs channels-last natively; for NCHW it prefers its blocked
  // formats, and one reorder each way costs less than a plain-layout kernel.
  const auto x_any = g.nhwc ? x_user : any_like(x_user);
  const auto y_any = g.nhwc ? y_user : any_like(y_user);
  const auto w_any = any_like(w_user);
  const dnnl::memory::desc b_md({g.c_out}, dt::f32, tag::x);
  // Padding on the far side equals the near side: oneDNN's size rule then
  // floors exactly like PyTorch's (rows that do not fill a window are dropped).
  dnnl::convolution_forward::desc fd =
      has_bias ? dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, x_any, w_any, b_md,
                                                 y_any, strides, dil, pad, pad)
               : dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training, alg, x_any, w_any, y_any,
                                                 strides, dil, pad, pad);
  dnnl::convolution_forward::primitive_desc fpd(fd, c.engine);
  ConvCache::Entry e;
  e.has_bias = has_bias;
  e.bias = b_md;
  if (dir == Dir::Fwd) {
    e.prim = dnnl::convolution_forward(fpd);
    e.in0 = make_slot(c, DNNL_ARG_SRC, x_user, fpd.src_desc(), false);
    e.in1 = make_slot(c, DNNL_ARG_WEIGHTS, w_user, fpd.weights_desc(), false);
    e.out = make_slot(c, DNNL_ARG_DST, y_user, fpd.dst_desc(), true);
  } else if (dir == Dir::BwdData) {
    dnnl::convolution_backward_data::desc bd(alg, x_any, w_any, y_any, strides, dil, pad, pad);
    dnnl::convolution_backward_data::primitive_desc bpd(bd, c.engine, fpd);
    e.prim = dnnl::convolution_backward_data(bpd);
    e.in0 = make_slot(c, DNNL_ARG_DIFF_DST, y_user, bpd.diff_dst_desc(), false);
    e.in1 = make_slot(c, DNNL_ARG_WEIGHTS, w_user, bpd.weights_desc(), false);
    e.out = make_slot(c, DNNL_ARG_DIFF_SRC, x_user, bpd.diff_src_desc(), true);
  } else {
    dnnl::convolution_backward_weights::desc bd(alg, x_any, w_any, y_any, strides, dil, pad, pad);
    dnnl::convolution_backward_weights::primitive_desc bpd(bd, c.engine, fpd);
    e.prim = dnnl::convolution_backward_weights(bpd);
    e.in0 = make_slot(c, DNNL_ARG_SRC, x_user, bpd.src_desc(), false);
    e.in1 = make_slot(c, DNNL_ARG_DIFF_DST, y_user, bpd.diff_dst_desc(), false);
    e.out = make_slot(c, DNNL_ARG_DIFF_WEIGHTS, w_user, bpd.diff_weights_desc(), true);
  }
  return e;
}

// A temporary buffer from the backend's block cache: the reordered copies
// have the same sizes every step, so they are served without page faults.
class Scratch {
 public:
  Scratch(CpuBackend &be, size_t n) : be_(be), n_(n), p_(be.allocate(n)) {}
  ~Scratch() { be_.deallocate(p_, n_); }
  Scratch(const Scratch &) = delete;
  Scratch &operator=(const Scratch &) = delete;
  void *get() const noexcept { return p_; }

 private:
  CpuBackend &be_;
  size_t n_;
  void *p_;
};

}  // namespace

// Runs one convolution direction on F32 or BF16 buffers. Returns false when
// this CPU has no BF16 convolution (the caller then widens to fp32).
//   Fwd:        in0 = x,  in1 = w,  out = y  (bias fp32 or null)
//   BwdData:    in0 = gy, in1 = w,  out = gx
//   BwdWeights: in0 = x,  in1 = gy, out = gw
bool run_dnnl(CpuBackend &be, ConvCache &c, Dir dir, const Conv2dGeom &g, DType dtype, const void *in0, const void *in1,
              const float *bias, void *out) {
  if (dtype == MIXP_BF16 && c.bf16_unavailable) return false;
  const dt t = dtype == MIXP_F32 ? dt::f32 : dt::bf16;
  const bool has_bias = dir == Dir::Fwd && bias;
  ConvCache::Key key = {int64_t(dir), int64_t(dtype), g.n, g.c_in, g.h, g.w, g.c_out, g.kh, g.kw, g.oh, g.ow,
                        g.stride_h, g.stride_w, g.pad_h, g.pad_w, g.dil_h, g.dil_w, g.groups, g.nhwc,
                        has_bias, 0, 0};
  try {
    auto it = c.cache.find(key);
    if (it == c.cache.end()) {
      ConvCache::Entry e;
      try {
        e = build(c, dir, g, t, has_bias);
      } catch (const dnnl::error &) {
        if (dtype != MIXP_BF16) throw;
        c.bf16_unavailable = true;
        return false;
      }
      if (c.cache.size() > 512) c.cache.clear();
      it = c.cache.emplace(key, std::move(e)).first;
    }
    ConvCache::Entry &e = it->second;
    std::unordered_map<int, dnnl::memory> args;
    std::vector<std::unique_ptr<Scratch>> scratch;
    auto reordered = [&](const dnnl::memory::desc &want) {
      scratch.push_back(std::make_unique<Scratch>(be, want.get_size()));
      return dnnl::memory(want, c.engine, scratch.back()->get());
    };
    auto bind_in = [&](const ConvCache::Slot &s, const void *p) {
      dnnl::memory user(s.user, c.engine, const_cast<void *>(p));
      if (!s.reorder) {
        args.emplace(s.arg, user);
        return;
      }
      dnnl::memory m = reordered(s.want);
      s.r.execute(c.stream, user, m);
      args.emplace(s.arg, m);
    };
    bind_in(e.in0, in0);
    bind_in(e.in1, in1);
    if (e.has_bias) args.emplace(DNNL_ARG_BIAS, dnnl::memory(e.bias, c.engine, const_cast<float *>(bias)));
    dnnl::memory out_user(e.out.user, c.engine, out);
    dnnl::memory out_mem = e.out.reorder ? reordered(e.out.want) : out_user;
    args.emplace(e.out.arg, out_mem);
    e.prim.execute(c.stream, args);
    if (e.out.reorder) e.out.r.execute(c.stream, out_mem, out_user);
    c.stream.wait();
  } catch (const dnnl::error &err) {
    cpu::fail_dnnl(err, "conv2d",
                   str(dtype_name(dtype), " x [", g.n, ",", g.c_in, ",", g.h, ",", g.w, "] weight [", g.c_out,
                       ",", g.c_in / g.groups, ",", g.kh, ",", g.kw, "] stride (", g.stride_h, ",", g.stride_w,
                       ") padding (", g.pad_h, ",", g.pad_w, ") dilation (", g.dil_h, ",", g.dil_w, ")"));
  }
  return true;
}

// Half buffers widened to fp32 (and results rounded back), for F16 and for
// BF16 without a bf16 unit: in chunks of the multi-versioned kernels, into
// the cache's reused buffers.
namespace {

constexpr int64_t kConvertChunk = 32768;

// Converts n contiguous elements, s -> d, in parallel chunks of rows.
template <class S, class D>
void convert(const S *s, D *d, int64_t n) {
  const int64_t chunks = (n + kConvertChunk - 1) / kConvertChunk;
#pragma omp parallel for schedule(static) if (chunks > 1)
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t lo = c * kConvertChunk, hi = std::min(n, lo + kConvertChunk);
    cpu::convert_row(s + lo, 1, d + lo, 1, hi - lo);
  }
}

}  // namespace

template <class H>
float *widen(const void *p, int64_t n, cpu::ScratchBuffer &buf) {
  float *v = buf.get(size_t(n > 0 ? n : 0));
  convert(static_cast<const H *>(p), v, n);
  return v;
}

namespace {

template <class H>
void narrow(const float *v, int64_t n, void *p) {
  convert(v, static_cast<H *>(p), n);
}

// The element count of each operand of a direction, in (in0, in1, out) order.
std::array<int64_t, 3> sizes(Dir dir, const Conv2dGeom &g) {
  switch (dir) {
    case Dir::Fwd: return {x_numel(g), w_numel(g), y_numel(g)};
    case Dir::BwdData: return {y_numel(g), w_numel(g), x_numel(g)};
    default: return {x_numel(g), y_numel(g), w_numel(g)};
  }
}

}  // namespace

template <class H>
void run_widened(CpuBackend &be, ConvCache &c, Dir dir, const Conv2dGeom &g, const void *in0, const void *in1, const void *bias,
                 void *out) {
  const auto n = sizes(dir, g);
  const float *a = widen<H>(in0, n[0], c.widened[0]), *b = widen<H>(in1, n[1], c.widened[1]);
  float *r = c.widened[2].get(size_t(n[2]));
  const float *bf = bias ? widen<H>(bias, g.c_out, c.widened[3]) : nullptr;
  run_dnnl(be, c, dir, g, MIXP_F32, a, b, bf, r);
  narrow<H>(r, n[2], out);
}

template float *widen<bf16>(const void *, int64_t, cpu::ScratchBuffer &);
template void run_widened<f16>(CpuBackend &, ConvCache &, Dir, const Conv2dGeom &, const void *, const void *,
                               const void *, void *);
template void run_widened<bf16>(CpuBackend &, ConvCache &, Dir, const Conv2dGeom &, const void *, const void *,
                                const void *, void *);

}  // namespace mixp::cpu::conv
