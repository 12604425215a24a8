// O2 decoration (Paddle's paddle.amp.decorate(level='O2'), Apex O2): casts a
// model's fp32 parameters to fp16/bf16, except those of normalisation
// layers, and gives the optimizer fp32 master weights for them.
#pragma once
#include "mixp/mixp.h"
#include "nn/module.hpp"
#include "optim/optimizer.hpp"

namespace mixp::amp {

void default_decorate_options(mixp_decorate_options &o) noexcept;

// See mixp_amp_decorate for the rules and status codes. `opt` may be null;
// `o` null means the defaults. All-or-nothing: every check and allocation
// happens before the model or the optimizer is touched.
void decorate(Module &model, Optimizer *opt, const mixp_decorate_options *o, const char *fn);

}  // namespace mixp::amp
