// The CPU backend's optimizer steps: the OpenMP kernels of optim/cpu_kernels.cpp.
#include "backend/cpu/cpu_backend.hpp"
#include "optim/optimizer_kernels.hpp"

namespace mixp {

void CpuBackend::sgd_step(const optim::ParamArgs &p, void *momentum_buf,
                          const optim::SgdArgs &args, const float *found_inf) {
  optim::cpu_kernels().sgd(p, momentum_buf, args, found_inf);
}

void CpuBackend::adam_step(const optim::ParamArgs &p, void *exp_avg, void *exp_avg_sq,
                           const optim::AdamArgs &args, const float *found_inf) {
  optim::cpu_kernels().adam(p, exp_avg, exp_avg_sq, args, found_inf);
}

}  // namespace mixp
