// Validation of a mixp_state_spec and the naming shared by save and load.
#include <cstring>
#include <set>
#include <unordered_map>

#include "core/error.hpp"
#include "core/options.hpp"
#include "state/state.hpp"

namespace mixp::state {
namespace {

void check_count(int n, const void *array, const char *count, const char *arr, const char *fn) {
  if (n < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->", count, " must be >= 0, got ", n);
  if (n > 0 && !array)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->", arr, " is NULL but spec->", count, " is ", n);
}

template <class T>
void same_session(const T *obj, Session *s, const char *what, int i, const char *fn) {
  if (obj->session.get() != s)
    fail(MIXP_ERR_DEVICE, fn, ": spec->", what, "[", i, "] belongs to a different session than `session`");
}

}  // namespace

void default_spec(mixp_state_spec &spec) noexcept {
  std::memset(&spec, 0, sizeof spec);
  spec.struct_size = sizeof(mixp_state_spec);
  spec.include_rng = 1;
}

Objects check_spec(Session *s, const mixp_state_spec *spec, const char *fn) {
  if (!spec) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec is NULL (fill one with mixp_state_spec_init())");
  check_struct_size(*spec, fn, "spec", "fill spec with mixp_state_spec_init()");
  Objects o;
  o.session = s;
  check_count(spec->num_modules, spec->modules, "num_modules", "modules", fn);
  check_count(spec->num_tensors, spec->tensors, "num_tensors", "tensors", fn);
  check_count(spec->num_optimizers, spec->optimizers, "num_optimizers", "optimizers", fn);
  check_count(spec->num_scalers, spec->scalers, "num_scalers", "scalers", fn);
  check_count(spec->num_loaders, spec->loaders, "num_loaders", "loaders", fn);
  if (spec->include_rng != 0 && spec->include_rng != 1)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->include_rng must be 0 or 1, got ", spec->include_rng);
  for (int i = 0; i < spec->num_modules; ++i) {
    const std::string arg = str("spec->modules[", i, "]");
    Module *m = check_module(spec->modules[i], fn, arg.c_str());
    if (m->session() != s)
      fail(MIXP_ERR_DEVICE, fn, ": ", arg, " belongs to a different session than `session`");
    for (Module *prev : o.modules)
      if (prev == m) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is listed twice");
    o.modules.push_back(m);
    const char *p = spec->module_prefixes ? spec->module_prefixes[i] : "";
    if (!p) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->module_prefixes[", i, "] is NULL");
    o.prefixes.emplace_back(p);
  }
  if (spec->num_tensors > 0 && !spec->tensor_names)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->tensor_names is NULL but spec->num_tensors is ",
         spec->num_tensors);
  for (int i = 0; i < spec->num_tensors; ++i) {
    const std::string arg = str("spec->tensors[", i, "]");
    Tensor *t = check_tensor(spec->tensors[i], fn, arg.c_str());
    if (t->session.get() != s)
      fail(MIXP_ERR_DEVICE, fn, ": ", arg, " belongs to a different session than `session`");
    const char *name = spec->tensor_names[i];
    if (!name || !*name)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->tensor_names[", i, "] is NULL or empty");
    o.extra.emplace_back(name, t);
  }
  for (int i = 0; i < spec->num_optimizers; ++i) {
    Optimizer *opt = check_optimizer(spec->optimizers[i], fn, str("spec->optimizers[", i, "]").c_str());
    same_session(opt, s, "optimizers", i, fn);
    for (Optimizer *prev : o.optimizers)
      if (prev == opt) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->optimizers[", i, "] is listed twice");
    o.optimizers.push_back(opt);
  }
  for (int i = 0; i < spec->num_scalers; ++i) {
    GradScaler *g = check_grad_scaler(spec->scalers[i], fn, str("spec->scalers[", i, "]").c_str());
    same_session(g, s, "scalers", i, fn);
    for (GradScaler *prev : o.scalers)
      if (prev == g) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->scalers[", i, "] is listed twice");
    o.scalers.push_back(g);
  }
  for (int i = 0; i < spec->num_loaders; ++i) {
    Loader *l = check_loader(spec->loaders[i], fn, str("spec->loaders[", i, "]").c_str());
    same_session(l, s, "loaders", i, fn);
    for (Loader *prev : o.loaders)
      if (prev == l) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": spec->loaders[", i, "] is listed twice");
    o.loaders.push_back(l);
  }
  o.rng = spec->include_rng != 0;
  o.step = spec->step;
  if (spec->user_metadata) o.user = spec->user_metadata;
  return o;
}

std::vector<Named> named_tensors(const std::vector<Module *> &modules,
                                 const std::vector<std::string> &prefixes,
                                 const std::vector<std::pair<std::string, Tensor *>> &extra,
                                 const std::vector<Optimizer *> &optimizers, const char *fn) {
  std::unordered_map<const Tensor *, Tensor *> master_of;
  for (Optimizer *opt : optimizers)
    for (const Optimizer::Slot &slot : opt->slots)
      if (slot.master) master_of[slot.param.get()] = slot.master.get();
  auto master = [&](const Tensor *t) -> Tensor * {
    auto it = master_of.find(t);
    return it == master_of.end() ? nullptr : it->second;
  };
  std::vector<Named> out;
  for (size_t k = 0; k < modules.size(); ++k) {
    const Module &m = *modules[k];
    for (size_t i = 0; i < m.num_parameters(); ++i) {
      Tensor *t = m.parameter(i).get();
      out.push_back({prefixes[k] + m.parameter_name(i), t, master(t)});
    }
    for (size_t i = 0; i < m.num_buffers(); ++i)
      out.push_back({prefixes[k] + m.buffer_name(i), m.buffer(i).get(), nullptr});
  }
  for (const auto &[name, t] : extra) out.push_back({name, t, master(t)});
  std::set<std::string> seen;
  for (const Named &n : out) {
    if (n.name.rfind(kReserved, 0) == 0)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": tensor name '", n.name, "' begins with the reserved '",
           kReserved, "'");
    if (!seen.insert(n.name).second)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": two tensors are named '", n.name,
           "' (give the modules distinct spec->module_prefixes)");
  }
  return out;
}

const char *file_dtype(DType t) noexcept {
  switch (t) {
    case MIXP_F32: return "F32";
    case MIXP_F16: return "F16";
    case MIXP_BF16: return "BF16";
    case MIXP_F64: return "F64";
    case MIXP_I32: return "I32";
    case MIXP_I64: return "I64";
    case MIXP_U8: return "U8";
    case MIXP_BOOL: return "BOOL";
    case MIXP_F8E4M3: return "F8_E4M3";  // safetensors' names (its E4M3 is the "fn" variant)
    case MIXP_F8E5M2: return "F8_E5M2";
  }
  return "?";
}

bool from_file_dtype(const std::string &name, DType *out) noexcept {
  static constexpr DType all[] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64,    MIXP_I32,
                                  MIXP_I64, MIXP_U8,  MIXP_BOOL, MIXP_F8E4M3, MIXP_F8E5M2};
  for (DType t : all)
    if (name == file_dtype(t)) {
      *out = t;
      return true;
    }
  return false;
}

std::string optimizer_prefix(size_t j) { return str(kReserved, "optimizer", j, "."); }

const char *buf1_name(mixp_optimizer_kind kind) noexcept {
  return kind == MIXP_OPTIM_SGD ? "momentum_buffer" : "exp_avg";
}
const char *buf2_name() noexcept { return "exp_avg_sq"; }

}  // namespace mixp::state
