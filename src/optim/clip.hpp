// Clipping by global norm over an optimizer's gradients, on the device.
#pragma once
#include "optim/optimizer.hpp"

namespace mixp::optim {

// torch.nn.utils.clip_grad_norm_ over the gradients of `opt`: returns the
// total L2 norm (F32 scalar tensor on the device) and multiplies every
// gradient by min(1, max_norm / (norm + 1e-6)). A non-finite norm leaves the
// gradients unchanged and sets opt.found_inf, so the next step is skipped
// (and a GradScaler counts it as an overflow). No host sync.
TensorPtr clip_grad_norm(Optimizer &opt, double max_norm, const char *fn);

}  // namespace mixp::optim
