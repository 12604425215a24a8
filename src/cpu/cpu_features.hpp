// What this x86-64 CPU (and the OS, for the register state) offers to the
// CPU backend, read with cpuid/xgetbv: portable across gcc and clang (whose
// __builtin_cpu_supports differ in the names they accept).
#pragma once
#include <string>

namespace mixp::cpu {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512vl = false;
  bool avx512_bf16 = false, avx512_fp16 = false;
  bool amx_bf16 = false;  // AMX tiles with bf16 (the OS must enable the tile state)
  // The x86-64 micro-architecture levels the kernels are compiled for:
  // v3 = AVX2 FMA F16C BMI1/2 LZCNT MOVBE; v4 = v3 + AVX-512 F/BW/CD/DQ/VL.
  bool x86_64_v3 = false, x86_64_v4 = false;
};

// Read once, on first use (thread-safe).
const CpuFeatures &cpu_features() noexcept;

// The units among the above, by their usual names ("AVX2 FMA F16C ..."), or
// "no AVX2" on an older CPU.
std::string cpu_units(const CpuFeatures &f);

}  // namespace mixp::cpu
