// Training-state files: what mixp_state_save() writes and mixp_state_load()
// restores (see mixp.h's "state" group and docs/checkpoints.md).
//
// Names in the file:
//   <prefix><module tensor name>         parameters (fp32 master values when
//                                        decorated) and buffers
//   <extra tensor name>                  spec->tensors
//   __mixp__.optimizer<j>.hparams        F64 [8]: lr momentum dampening
//                                        weight_decay beta1 beta2 eps min_lr
//   __mixp__.optimizer<j>.config         I64 [7]: kind nesterov schedule
//                                        warmup_steps total_steps step_count
//                                        number of parameters
//   __mixp__.optimizer<j>.<i>.<state>    exp_avg, exp_avg_sq or
//                                        momentum_buffer, step (F64 []), and
//                                        master for a decorated parameter that
//                                        no listed module or tensor covers
//   __mixp__.scaler<j>                   U8 [104]: the GradScaler state bytes
//   __mixp__.loader<j>                   I64 [8]: dataset size, batch_size,
//                                        shuffle, drop_last, seed, epoch,
//                                        position, epoch_done
//   __mixp__.rng                         I64 [2]: session seed, Philox offset
//   __mixp__.step                        I64 []: the global step
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "amp/grad_scaler.hpp"
#include "data/loader.hpp"
#include "mixp/mixp.h"
#include "nn/module.hpp"
#include "optim/optimizer.hpp"

namespace mixp::state {

constexpr const char *kFormat = "mixp.state";
constexpr const char *kFormatVersion = "1";
constexpr const char *kReserved = "__mixp__.";
constexpr int kOptHParams = 8;
constexpr int kOptConfig = 7;
constexpr int kLoaderFields = 8;

// A validated spec.
struct Objects {
  Session *session = nullptr;
  std::vector<Module *> modules;
  std::vector<std::string> prefixes;
  std::vector<std::pair<std::string, Tensor *>> extra;
  std::vector<Optimizer *> optimizers;
  std::vector<GradScaler *> scalers;
  std::vector<Loader *> loaders;
  bool rng = true;
  int64_t step = 0;
  std::string user;
};

// A tensor saved and restored by name: a module parameter or buffer or an
// extra tensor, with the fp32 master an optimizer keeps for it (or null).
struct Named {
  std::string name;
  Tensor *tensor;
  Tensor *master;
};

void default_spec(mixp_state_spec &spec) noexcept;
Objects check_spec(Session *s, const mixp_state_spec *spec, const char *fn);

// Every named tensor of the objects, in order (modules, then extras); fails
// (INVALID_ARGUMENT) when two share a name.
std::vector<Named> named_tensors(const std::vector<Module *> &modules,
                                 const std::vector<std::string> &prefixes,
                                 const std::vector<std::pair<std::string, Tensor *>> &extra,
                                 const std::vector<Optimizer *> &optimizers, const char *fn);

// The safetensors dtype name of a mixp dtype, and back (false if none).
const char *file_dtype(DType t) noexcept;
bool from_file_dtype(const std::string &name, DType *out) noexcept;

std::string optimizer_prefix(size_t j);
// PyTorch's names for the two moment buffers of an optimizer kind.
const char *buf1_name(mixp_optimizer_kind kind) noexcept;
const char *buf2_name() noexcept;

void save(const Objects &o, const std::string &path, const char *fn);
int64_t load(const Objects &o, const std::string &path, const char *fn);
void load_module_weights(Module &m, Optimizer *opt, const std::string &path, bool strict,
                         const char *fn);
std::string read_metadata(const std::string &path, const std::string &key, const char *fn);

}  // namespace mixp::state
