// Matrix products of half operands (f16, bf16) where oneDNN has no matmul
// for them, on CPUs whose widest vectors are AVX2 (half_gemm_chosen). The operands are converted to fp32 while they are packed
// into the panels the micro-kernel reads, which a GEMM does anyway, and the
// result is rounded once as it is stored: no whole-tensor widening passes,
// half the bytes read of an fp32 product. Accumulation is fp32 with FMA,
// the numerics of a Tensor Core or of oneDNN's bf16 matmul.
#pragma once
#include <vector>

#include "backend/backend.hpp"
#include "backend/cpu/scratch.hpp"

namespace mixp::cpu {

// Buffers reused across products (one set per CPU backend; a session is used
// by one thread at a time): each OpenMP thread packs into its own.
struct HalfGemmBuffers {
  ScratchBuffer packed_a, packed_b, partial;
};
struct HalfGemmScratch {
  std::vector<HalfGemmBuffers> per_thread;
};

// Whether half products take this kernel: the CPU has what it needs (AVX2,
// FMA, F16C) and oneDNN's effective ISA is AVX2 exactly. With AVX-512,
// widening to oneDNN's fp32 product is faster for large f16 products (its
// FMAs are twice as wide; 1024^3: 289 against ~200 GFLOP/s here), and bf16
// has oneDNN's own path where the CPU has a bf16 unit; below AVX2
// (ONEDNN_MAX_CPU_ISA=SSE41, older CPUs) products are widened.
bool half_gemm_chosen() noexcept;

// C = alpha * A B + beta * C + bias for g.dtype F16 or BF16: the contract of
// Backend::gemm.
void half_gemm(const GemmArgs &g, HalfGemmScratch &scratch);

}  // namespace mixp::cpu
