#include "cpu/cpu_features.hpp"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "cpu/simd.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

namespace mixp::cpu {
namespace {

#if defined(__x86_64__) || defined(__i386__)
// The register state the OS saves (XCR0): without it a unit cannot be used
// even where cpuid lists it.
uint64_t xcr0() noexcept {
  uint32_t lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

CpuFeatures detect() noexcept {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = c & (1u << 27);
  const bool avx = c & (1u << 28);
  const uint64_t xcr = osxsave ? xcr0() : 0;
  const bool ymm_state = (xcr & 0x6) == 0x6;           // SSE and AVX state
  const bool zmm_state = ymm_state && (xcr & 0xe0) == 0xe0;  // opmask, ZMM
  const bool tile_state = (xcr & 0x60000) == 0x60000;  // XTILECFG, XTILEDATA
  f.fma = ymm_state && (c & (1u << 12));
  f.f16c = ymm_state && (c & (1u << 29));
  const bool movbe = c & (1u << 22);
  unsigned ea = 0, eb = 0, ec = 0, ed = 0;
  const bool lzcnt = __get_cpuid(0x80000001u, &ea, &eb, &ec, &ed) && (ec & (1u << 5));
  if (!avx || __get_cpuid_max(0, nullptr) < 7) return f;
  __cpuid_count(7, 0, a, b, c, d);
  const bool bmi1 = b & (1u << 3), bmi2 = b & (1u << 8);
  const bool avx512dq = b & (1u << 17), avx512cd = b & (1u << 28);
  f.avx2 = ymm_state && (b & (1u << 5));
  f.avx512f = zmm_state && (b & (1u << 16));
  f.avx512bw = f.avx512f && (b & (1u << 30));
  f.avx512vl = f.avx512f && (b & (1u << 31));
  f.avx512_fp16 = f.avx512f && (d & (1u << 23));
  f.amx_bf16 = tile_state && (d & (1u << 22)) && (d & (1u << 24));  // AMX-BF16, AMX-TILE
  unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
  __cpuid_count(7, 1, a1, b1, c1, d1);
  f.avx512_bf16 = f.avx512f && (a1 & (1u << 5));
  f.x86_64_v3 = f.avx2 && f.fma && f.f16c && bmi1 && bmi2 && lzcnt && movbe;
  f.x86_64_v4 = f.x86_64_v3 && f.avx512bw && f.avx512vl && avx512dq && avx512cd;
  return f;
}
#else
CpuFeatures detect() noexcept { return CpuFeatures{}; }
#endif

struct KernelChoice {
  KernelIsa isa = KernelIsa::baseline;
  char note[96] = "baseline";
};

KernelChoice choose_kernels() noexcept {
  const CpuFeatures &f = cpu_features();
  KernelChoice k;
  KernelIsa best = f.x86_64_v4 ? KernelIsa::avx512 : f.x86_64_v3 ? KernelIsa::avx2 : KernelIsa::baseline;
#if !(defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__))
  best = KernelIsa::baseline;  // built with one version only (simd.hpp)
#endif
  k.isa = best;
  const char *cap = std::getenv("MIXP_CPU_KERNELS");
  const char *why = "";
  if (cap && *cap) {
    KernelIsa want = best;
    if (std::strcmp(cap, "baseline") == 0) want = KernelIsa::baseline;
    else if (std::strcmp(cap, "avx2") == 0) want = KernelIsa::avx2;
    else if (std::strcmp(cap, "avx512") == 0) want = KernelIsa::avx512;
    else why = ", MIXP_CPU_KERNELS ignored: not baseline, avx2 or avx512";
    if (want < best) k.isa = want;
    if (!*why)
      why = want < best    ? ", capped by MIXP_CPU_KERNELS"
            : want == best ? ", as MIXP_CPU_KERNELS asks"
                           : ", MIXP_CPU_KERNELS asks for more than the CPU has";
  }
  std::snprintf(k.note, sizeof k.note, "%s%s", kernel_isa_name(k.isa), why);
  return k;
}

const KernelChoice &kernel_choice() noexcept {
  static const KernelChoice k = choose_kernels();
  return k;
}

}  // namespace

const KernelIsa detail::g_kernel_isa = kernel_choice().isa;
const char *kernel_isa_note() noexcept { return kernel_choice().note; }

const char *kernel_isa_name(KernelIsa isa) noexcept {
  switch (isa) {
    case KernelIsa::avx512: return "avx512";
    case KernelIsa::avx2: return "avx2";
    case KernelIsa::baseline: break;
  }
  return "baseline";
}

const CpuFeatures &cpu_features() noexcept {
  static const CpuFeatures f = detect();
  return f;
}

std::string cpu_units(const CpuFeatures &f) {
  std::string s;
  auto add = [&](bool on, const char *name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2, "AVX2");
  add(f.fma, "FMA");
  add(f.f16c, "F16C");
  add(f.avx512f, "AVX-512");
  add(f.avx512_bf16, "AVX512-BF16");
  add(f.avx512_fp16, "AVX512-FP16");
  add(f.amx_bf16, "AMX-BF16");
  return s.empty() ? "no AVX2" : s;
}

}  // namespace mixp::cpu
