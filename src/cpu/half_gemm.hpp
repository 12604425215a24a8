// Matrix products of half operands (f16, bf16) where oneDNN has no matmul
// for them (half_gemm_chosen). The operands are converted to fp32 while they are packed
// into the panels the micro-kernel reads, which a GEMM does anyway, and the
// result is rounded once as it is stored: no whole-tensor widening passes,
// half the bytes read of an fp32 product. Accumulation is fp32 with FMA,
// the numerics of a Tensor Core or of oneDNN's bf16 matmul.
#pragma once
#include <vector>

#include "backend/backend.hpp"
#include "cpu/scratch.hpp"

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
// FMA, F16C) and oneDNN runs at least AVX2 (ONEDNN_MAX_CPU_ISA=SSE41 or an
// older CPU: products are widened to fp32 instead). bf16 still takes
// oneDNN's own path where the CPU has a bf16 unit (gemm.cpp); f16 always
// comes here, oneDNN 2.6 having no f16 matmul. Where the kernels run their
// AVX-512 version (half_gemm_wide) the micro-kernel is 12x16 on zmm
// registers, which beats widening into oneDNN's AVX-512 fp32 product; the
// two micro-kernels give the same bits.
bool half_gemm_chosen() noexcept;
bool half_gemm_wide() noexcept;

// C = alpha * A B + beta * C + bias for g.dtype F16 or BF16: the contract of
// Backend::gemm.
void half_gemm(const GemmArgs &g, HalfGemmScratch &scratch);

}  // namespace mixp::cpu
