// What the files of the CPU convolution share: the per-session cache of
// oneDNN primitives and reused buffers, the direction of a call, and the
// oneDNN path (conv_dnnl.cpp: direct convolution in F32/BF16, half types
// widened to fp32) that conv.cpp's dispatch calls.
#pragma once
#include <array>
#include <cstdint>
#include <dnnl.hpp>
#include <map>

#include "backend/backend.hpp"
#include "cpu/cpu_backend.hpp"
#include "cpu/scratch.hpp"

namespace mixp {
namespace cpu {

struct ConvCache {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  ScratchBuffer widened[4];  // fp32 copies of a widened convolution's operands, result, bias

  // One tensor argument of a primitive: the user's plain layout, the layout
  // the primitive wants, and the reorder between them when they differ.
  struct Slot {
    int arg = 0;
    dnnl::memory::desc user, want;
    bool reorder = false;
    dnnl::reorder r;
  };
  struct Entry {
    dnnl::primitive prim;
    Slot in0, in1, out;
    bool has_bias = false;
    dnnl::memory::desc bias;
  };
  using Key = std::array<int64_t, 22>;
  std::map<Key, Entry> cache;
  bool bf16_unavailable = false;  // learnt once: no bf16 convolution on this CPU
};

namespace conv {

enum class Dir { Fwd = 0, BwdData = 1, BwdWeights = 2 };

inline int64_t x_numel(const Conv2dGeom &g) { return g.n * g.c_in * g.h * g.w; }
inline int64_t y_numel(const Conv2dGeom &g) { return g.n * g.c_out * g.oh * g.ow; }
inline int64_t w_numel(const Conv2dGeom &g) { return g.c_out * (g.c_in / g.groups) * g.kh * g.kw; }

// ---- conv_dnnl.cpp ------------------------------------------------------------------

// Runs one convolution direction on F32 or BF16 buffers. Returns false when
// this CPU has no BF16 convolution (the caller then widens to fp32).
//   Fwd:        in0 = x,  in1 = w,  out = y  (bias fp32 or null)
//   BwdData:    in0 = gy, in1 = w,  out = gx
//   BwdWeights: in0 = x,  in1 = gy, out = gw
bool run_dnnl(CpuBackend &be, ConvCache &c, Dir dir, const Conv2dGeom &g, DType dtype, const void *in0, const void *in1,
              const float *bias, void *out);
// The n halves at p widened into buf (instantiated for bf16: conv.cpp
// widens a bf16 bias with it).
template <class H>
float *widen(const void *p, int64_t n, cpu::ScratchBuffer &buf);
// One direction on half buffers widened to fp32 and rounded back once: F16,
// and BF16 without a bf16 convolution (instantiated for f16 and bf16).
template <class H>
void run_widened(CpuBackend &be, ConvCache &c, Dir dir, const Conv2dGeom &g, const void *in0, const void *in1, const void *bias,
                 void *out);

}  // namespace conv
}  // namespace cpu
}  // namespace mixp
