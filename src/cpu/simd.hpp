// Multi-versioned hot loops. The library is built for baseline x86-64 so it
// loads on any machine; the loops run through run_kernel() are also
// compiled for AVX2 (x86-64-v3) and AVX-512 (x86-64-v4), and the best
// version this CPU has runs. Measured here: bf16 elementwise ops ran ~4x
// slower than f32 in SSE2 code, because converting 16-bit floats needs wide
// integer ops.
//
// MIXP_CPU_KERNELS=baseline|avx2|avx512 caps the version (read once, when
// the library loads), so that every version can be tested on a CPU that has
// the largest; mixp_build_info() says which one runs. Results are bitwise
// identical across versions (a CTest checks it): the library is compiled
// with -ffp-contract=off (CMakeLists.txt; g++ contracts a*b+c into an FMA in
// the AVX2 and AVX-512 versions otherwise, even in ISO C++ mode) and vector
// sqrt/div are IEEE exact.
//
// The dispatch is a switch, not target_clones' ifuncs, which resolve before
// the sanitizers' runtimes start (sanitizer builds crashed at load) and
// cannot be pinned.
#pragma once

namespace mixp::cpu {

enum class KernelIsa { baseline, avx2, avx512 };

namespace detail {
// Chosen by cpu_features.cpp's static initialiser; a plain load for the
// kernels, which dispatch once per row. (Zero-initialised, it reads
// baseline before then.)
extern const KernelIsa g_kernel_isa;
}  // namespace detail

// The version the kernels run (the best this CPU has, capped by
// MIXP_CPU_KERNELS); and its name ("baseline", "avx2", "avx512").
inline KernelIsa kernel_isa() noexcept { return detail::g_kernel_isa; }
const char *kernel_isa_name(KernelIsa isa) noexcept;
// What chose it, for build info: "avx2 (MIXP_CPU_KERNELS=avx2)" or "avx2".
const char *kernel_isa_note() noexcept;

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
// Marks the lambda given to run_kernel(): inlined into each version, whose
// target attribute then decides the instructions of its loops.
#define MIXP_KERNEL_BODY __attribute__((always_inline))
namespace detail {
template <class F>
__attribute__((target("arch=x86-64-v4"), noinline)) void run_avx512(F &body) {
  body();
}
template <class F>
__attribute__((target("arch=x86-64-v3"), noinline)) void run_avx2(F &body) {
  body();
}
}  // namespace detail

template <class F>
inline void run_kernel(F &&body) {
  switch (kernel_isa()) {
    case KernelIsa::avx512: detail::run_avx512(body); return;
    case KernelIsa::avx2: detail::run_avx2(body); return;
    case KernelIsa::baseline: body(); return;
  }
}
#else
// clang (the fuzzing build) and other targets: one version.
#define MIXP_KERNEL_BODY
template <class F>
inline void run_kernel(F &&body) {
  body();
}
#endif

}  // namespace mixp::cpu
