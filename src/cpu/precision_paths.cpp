#include "cpu/precision_paths.hpp"

#include <dnnl.h>

#include "cpu/cpu_features.hpp"
#include "cpu/half_gemm.hpp"

namespace mixp::cpu {
namespace {

bool isa_has(dnnl_cpu_isa_t isa, dnnl_cpu_isa_t want) { return (int(isa) & int(want)) == int(want); }

PrecisionPaths detect_paths() {
  const CpuFeatures &f = cpu_features();
  const dnnl_cpu_isa_t isa = dnnl_get_effective_cpu_isa();
  PrecisionPaths p;
  const char *kernel = half_gemm_wide() ? "AVX-512" : "AVX2";
  p.fp32 = isa_has(isa, dnnl_cpu_isa_avx512_core) ? "oneDNN on AVX-512"
           : isa_has(isa, dnnl_cpu_isa_avx2)      ? "oneDNN on AVX2/FMA"
                                                  : "oneDNN on SSE4.1";
  if (f.amx_bf16 && isa_has(isa, dnnl_cpu_isa_avx512_core_amx)) {
    p.bf16 = "oneDNN on AMX-BF16 tiles";
    p.bf16_faster = true;
  } else if (f.avx512_bf16 && isa_has(isa, dnnl_cpu_isa_avx512_core_bf16)) {
    p.bf16 = "oneDNN on AVX512-BF16 dot products";
    p.bf16_faster = true;
  } else if (half_gemm_chosen()) {
    p.bf16 = std::string("converted while packed for mixp's ") + kernel + " kernel, fp32 accumulation, rounded once (no bf16 unit in use)";
  } else {
    p.bf16 = "computed in fp32 and rounded once, no bf16 unit being in use";
  }
  p.f16 = half_gemm_chosen()
              ? std::string("converted while packed for mixp's ") + kernel +
                    " kernel, fp32 accumulation, rounded once (oneDNN 2.6 has no f16 matmul)"
              : "computed in fp32 and rounded once, oneDNN 2.6 having no f16 matmul";
  return p;
}

}  // namespace

const PrecisionPaths &precision_paths() {
  static const PrecisionPaths p = detect_paths();
  return p;
}

std::string describe_cpu() {
  const PrecisionPaths &p = precision_paths();
  auto speed = [](bool faster) { return faster ? " (faster than fp32)" : " (not faster than fp32)"; };
  return "cpu: " + cpu_units(cpu_features()) + "; fp32: " + p.fp32 + "; bf16: " + p.bf16 + speed(p.bf16_faster) +
         "; f16: " + p.f16 + speed(p.f16_faster);
}

}  // namespace mixp::cpu
