// MIXP_HOST_DEVICE marks code written once for the host and, under nvcc,
// for the device (Philox, the elementwise formulas, the loss-scale rule), so
// the CPU and CUDA backends evaluate the same functions.
#pragma once

#if defined(__CUDACC__)
#define MIXP_HOST_DEVICE __host__ __device__
#else
#define MIXP_HOST_DEVICE
#endif
