// Multi-versioned hot loops. The library is built for baseline x86-64 so it
// loads on any machine; loops marked MIXP_KERNEL_CLONES are also compiled
// for AVX2 (x86-64-v3) and AVX-512 (x86-64-v4) and the best version is chosen
// once at load time. Measured here: bf16 elementwise ops ran ~4x slower than
// f32 in SSE2 code, because converting 16-bit floats needs wide integer ops.
// Results are bitwise identical across versions: ISO C++ mode keeps
// -ffp-contract=off (no FMA contraction) and vector sqrt/div are IEEE exact.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_ADDRESS__)
#define MIXP_KERNEL_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define MIXP_KERNEL_CLONES
#endif
