// mixp_state_load and mixp_module_load_safetensors. Both run in two phases:
// the plan reads and validates the whole file and stages every new value in
// freshly allocated tensors (anything that can fail happens here), then the
// commit copies the staged values into place and swaps state pointers.
#include <cmath>
#include <set>

#include "autocast/autocast.hpp"
#include "backend/backend.hpp"
#include "core/error.hpp"
#include "backend/optimizer_args.hpp"
#include "state/file_io.hpp"
#include "state/safetensors.hpp"
#include "state/state.hpp"

namespace mixp::state {
namespace {

// n values of dtype `from` at src as dtype `to` (float to float only;
// doubles hold every value exactly, so each conversion rounds once).
std::vector<uint8_t> convert(DType from, const uint8_t *src, int64_t n, DType to) {
  std::vector<uint8_t> out(size_t(n) * dtype_size(to));
  if (from == to) {
    if (!out.empty()) std::memcpy(out.data(), src, out.size());
    return out;
  }
  const size_t fs = dtype_size(from), ts = dtype_size(to);
  for (int64_t i = 0; i < n; ++i)
    double_to_element(element_to_double(src + size_t(i) * fs, from), out.data() + size_t(i) * ts, to);
  return out;
}

TensorPtr upload(Session *s, DType dtype, const Shape &shape, const std::vector<uint8_t> &bytes) {
  TensorPtr t = empty(s, dtype, shape);
  if (!bytes.empty()) s->backend->copy_from_host(t->data(), bytes.data(), bytes.size());
  return t;
}

// A staged copy into an existing tensor.
struct Copy {
  Tensor *dst;
  TensorPtr src;
};

class Reader {
 public:
  Reader(const std::string &path, const char *fn)
      : what_(str(fn, ": '", path, "'")), bytes_(read_file(path, fn)),
        file_(parse(bytes_.data(), bytes_.size(), what_)) {}

  void verify(bool require_checksums) const {
    verify_checksums(file_, bytes_.data(), require_checksums, what_);
  }

  const std::string &what() const noexcept { return what_; }
  const File &file() const noexcept { return file_; }

  // The entry of `name`, marked as consumed; null (or a MIXP_ERR_SHAPE
  // failure when `required`) when the file lacks it.
  const Entry *get(const std::string &name, bool required) {
    const Entry *e = file_.find(name);
    if (!e) {
      if (required)
        fail(MIXP_ERR_SHAPE, what_, " does not fit: it holds no tensor '", name,
             "' (saved from another model or spec?)");
      return nullptr;
    }
    used_.insert(name);
    return e;
  }
  const uint8_t *data(const Entry &e) const noexcept {
    return bytes_.data() + file_.data_offset + e.begin;
  }

  // The values of `e` as dtype `to`, with e's shape checked against `shape`.
  std::vector<uint8_t> values(const Entry &e, DType to, const Shape &shape) const {
    check_shape(e, shape);
    DType from;
    // Floats of any width meet (fp8 included: an F8_E4M3 checkpoint loads into
    // bf16 parameters exactly); integers only their own dtype.
    auto floating = [](DType t) { return is_float(t) || is_fp8(t); };
    if (!from_file_dtype(e.dtype, &from) || (from != to && !(floating(from) && floating(to))))
      fail(MIXP_ERR_DTYPE, what_, ": tensor '", e.name, "' is ", e.dtype,
           " in the file and cannot be cast to the target's ", dtype_name(to));
    return convert(from, data(e), shape.numel(), to);
  }

  void check_shape(const Entry &e, const Shape &shape) const {
    bool same = int(e.shape.size()) == shape.ndim;
    for (int i = 0; same && i < shape.ndim; ++i) same = e.shape[size_t(i)] == shape[i];
    if (!same)
      fail(MIXP_ERR_SHAPE, what_, " does not fit: tensor '", e.name, "' has shape ",
           shape_str(e.shape.data(), int(e.shape.size())), " in the file, the target's is ",
           shape_str(shape));
  }

  // A small mixp-internal tensor of known dtype and shape [n] (or [] for
  // n = 0); anything else is corruption.
  const uint8_t *internal(const std::string &name, const char *dtype, int64_t n) {
    const Entry *e = get(name, true);
    const bool scalar = n == 0;
    if (e->dtype != dtype || e->shape.size() != (scalar ? 0u : 1u) || (!scalar && e->shape[0] != n))
      fail(MIXP_ERR_CORRUPT, what_, " is corrupt: tensor '", name, "' must be ", dtype, " ",
           scalar ? "[]" : str("[", n, "]"), ", got ", e->dtype, " ",
           shape_str(e->shape.data(), int(e->shape.size())));
    return data(*e);
  }
  std::vector<int64_t> i64s(const std::string &name, int64_t n) {
    const uint8_t *p = internal(name, "I64", n);
    std::vector<int64_t> v(size_t(n ? n : 1));
    std::memcpy(v.data(), p, v.size() * 8);
    return v;
  }

  // Fails (MIXP_ERR_SHAPE) on a tensor no target consumed, except those
  // `skip` accepts.
  template <class Skip>
  void require_all_used(Skip &&skip) const {
    for (const Entry &e : file_.tensors)
      if (!used_.count(e.name) && !skip(e.name))
        fail(MIXP_ERR_SHAPE, what_, " does not fit: it holds tensor '", e.name,
             "', which nothing in the target takes (saved from another model or spec?)");
  }

 private:
  std::string what_;
  std::vector<uint8_t> bytes_;
  File file_;
  std::set<std::string> used_;
};

// Stages the value of a named tensor (and of its master).
void plan_named(Reader &r, const Entry &e, const Named &n, std::vector<Copy> &copies) {
  Session *s = n.tensor->session.get();
  const Shape shape = shape_of(*n.tensor);
  if (n.master) {
    std::vector<uint8_t> m = r.values(e, MIXP_F32, shape);
    copies.push_back({n.master, upload(s, MIXP_F32, shape, m)});
    copies.push_back({n.tensor, upload(s, n.tensor->dtype, shape,
                                       convert(MIXP_F32, m.data(), shape.numel(), n.tensor->dtype))});
  } else {
    copies.push_back({n.tensor, upload(s, n.tensor->dtype, shape, r.values(e, n.tensor->dtype, shape))});
  }
}

void commit_copies(const std::vector<Copy> &copies) {
  for (const Copy &c : copies)
    if (c.dst->numel() > 0) c.dst->session->backend->copy(view_of(*c.src), view_of(*c.dst));
}

// Values loaded in place change what an autocast cast cache holds for them.
void drop_cast_cache(Session *s) noexcept {
  autocast::clear_cache(s);
}

struct OptPlan {
  Optimizer *opt;
  mixp_optimizer_options options;
  int64_t step_count;
  struct SlotState {
    TensorPtr buf1, buf2, step;
  };
  std::vector<SlotState> slots;
};

OptPlan plan_optimizer(Reader &r, Optimizer &opt, size_t j, const std::set<const Tensor *> &covered,
                       std::vector<Copy> &copies) {
  const std::string pre = optimizer_prefix(j);
  const std::string what = r.what();
  const uint8_t *hp = r.internal(pre + "hparams", "F64", kOptHParams);
  double h[kOptHParams];
  std::memcpy(h, hp, sizeof h);
  std::vector<int64_t> c = r.i64s(pre + "config", kOptConfig);
  if (c[0] != int64_t(opt.options.kind))
    fail(MIXP_ERR_SHAPE, what, " does not fit: tensor '", pre, "config' holds optimizer kind ",
         c[0], ", spec->optimizers[", j, "] is of kind ", int(opt.options.kind));
  if (c[6] != int64_t(opt.slots.size()))
    fail(MIXP_ERR_SHAPE, what, " does not fit: tensor '", pre, "config' holds ", c[6],
         " parameters, spec->optimizers[", j, "] has ", opt.slots.size());
  OptPlan p{&opt, opt.options, c[5], {}};
  mixp_optimizer_options &o = p.options;
  o.lr = h[0], o.momentum = h[1], o.dampening = h[2], o.weight_decay = h[3];
  o.beta1 = h[4], o.beta2 = h[5], o.eps = h[6], o.min_lr = h[7];
  if (c[1] != 0 && c[1] != 1)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", pre, "config' holds nesterov ", c[1]);
  if (c[2] != MIXP_LR_CONSTANT && c[2] != MIXP_LR_WARMUP_COSINE)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", pre, "config' holds schedule ", c[2]);
  o.nesterov = int(c[1]);
  o.schedule = mixp_lr_schedule_kind(c[2]);
  o.warmup_steps = c[3];
  o.total_steps = c[4];
  try {
    optim::check_options(o, "saved optimizer");
  } catch (const Error &e) {
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensors '", pre, "hparams'/'config': ", e.message());
  }
  if (p.step_count < 0)
    fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", pre, "config' holds step count ",
         p.step_count);

  Session *s = opt.session.get();
  for (size_t i = 0; i < opt.slots.size(); ++i) {
    const Optimizer::Slot &slot = opt.slots[i];
    const std::string sp = str(pre, i, ".");
    const Shape shape = shape_of(*slot.param);
    const DType sd = optim::state_dtype_for(o, slot.param->dtype);
    OptPlan::SlotState st;
    auto buffer = [&](const std::string &name) -> TensorPtr {
      const Entry *e = r.get(name, false);
      return e ? upload(s, sd, shape, r.values(*e, sd, shape)) : TensorPtr();
    };
    st.buf1 = buffer(sp + buf1_name(o.kind));
    st.buf2 = buffer(sp + buf2_name());
    if (o.kind != MIXP_OPTIM_SGD && bool(st.buf1) != bool(st.buf2))
      fail(MIXP_ERR_CORRUPT, what, " is corrupt: parameter ", i, " of optimizer ", j,
           " has only one of exp_avg and exp_avg_sq");
    if (const Entry *e = r.get(sp + "step", false)) {
      std::vector<uint8_t> v = r.values(*e, MIXP_F64, Shape{});
      double step;
      std::memcpy(&step, v.data(), 8);
      if (!std::isfinite(step) || step < 0 || step != std::floor(step))
        fail(MIXP_ERR_CORRUPT, what, " is corrupt: tensor '", sp, "step' holds ", step);
      st.step = upload(s, MIXP_F64, Shape{}, v);
    }
    if (slot.master && !covered.count(slot.param.get())) {
      plan_named(r, *r.get(sp + "master", true), Named{sp + "master", slot.param.get(), slot.master.get()},
                 copies);
    }
    p.slots.push_back(std::move(st));
  }
  return p;
}

struct LoaderPlan {
  Loader *loader;
  uint64_t seed;
  int64_t epoch, pos;
  bool done;
  std::vector<int64_t> order;
};

LoaderPlan plan_loader(Reader &r, Loader &l, size_t j) {
  const std::string name = str(kReserved, "loader", j);
  std::vector<int64_t> v = r.i64s(name, kLoaderFields);
  const int64_t n = l.data->size();
  if (v[0] != n || v[1] != l.opts.batch_size || (v[2] != 0) != (l.opts.shuffle != 0) ||
      (v[3] != 0) != (l.opts.drop_last != 0))
    fail(MIXP_ERR_SHAPE, r.what(), " does not fit: tensor '", name, "' is of a loader over ", v[0],
         " samples (batch_size ", v[1], ", shuffle ", v[2], ", drop_last ", v[3],
         "), spec->loaders[", j, "] has ", n, " (", l.opts.batch_size, ", ", l.opts.shuffle, ", ",
         l.opts.drop_last, ")");
  if (v[5] < 0 || v[6] < 0 || v[6] > n || (v[7] != 0 && v[7] != 1))
    fail(MIXP_ERR_CORRUPT, r.what(), " is corrupt: tensor '", name, "' holds epoch ", v[5],
         ", position ", v[6], ", epoch_done ", v[7], " for ", n, " samples");
  LoaderPlan p{&l, uint64_t(v[4]), v[5], v[6], v[7] != 0, {}};
  p.order = epoch_order(n, l.opts.shuffle != 0, p.seed, p.epoch);
  return p;
}

}  // namespace

int64_t load(const Objects &o, const std::string &path, const char *fn) {
  for (size_t j = 0; j < o.scalers.size(); ++j)
    if (o.scalers[j]->handshake.pending())
      fail(MIXP_ERR_STATE, fn, ": spec->scalers[", j,
           "] is between unscale()/step() and update(); load after update()");
  std::vector<Named> named = named_tensors(o.modules, o.prefixes, o.extra, o.optimizers, fn);
  Reader r(path, fn);
  const std::string *format = r.file().meta("format");
  const std::string *version = r.file().meta("format_version");
  if (!format || *format != kFormat)
    fail(MIXP_ERR_CORRUPT, r.what(), " is not a mixp training-state file (metadata 'format' is ",
         format ? "'" + *format + "'" : std::string("missing"),
         "); load plain weights with mixp_module_load_safetensors()");
  if (!version || *version != kFormatVersion)
    fail(MIXP_ERR_CORRUPT, r.what(), " has format_version ", version ? *version : "(missing)",
         "; this library reads version ", kFormatVersion);
  r.verify(true);

  std::vector<Copy> copies;
  std::set<const Tensor *> covered;
  for (const Named &n : named) {
    covered.insert(n.tensor);
    plan_named(r, *r.get(n.name, true), n, copies);
  }
  std::vector<OptPlan> opts;
  for (size_t j = 0; j < o.optimizers.size(); ++j)
    opts.push_back(plan_optimizer(r, *o.optimizers[j], j, covered, copies));
  std::vector<GradScaler::LoadedState> scalers;
  for (size_t j = 0; j < o.scalers.size(); ++j) {
    const std::string name = str(kReserved, "scaler", j);
    const Entry *e = r.get(name, true);
    if (e->dtype != "U8" || e->shape.size() != 1)
      fail(MIXP_ERR_CORRUPT, r.what(), " is corrupt: tensor '", name, "' must be U8 [n], got ",
           e->dtype, " ", shape_str(e->shape.data(), int(e->shape.size())));
    const std::string where = str(r.what(), " is corrupt: tensor '", name, "'");
    scalers.push_back(o.scalers[j]->prepare_load_state(r.data(*e), size_t(e->nbytes()), where.c_str()));
  }
  std::vector<LoaderPlan> loaders;
  for (size_t j = 0; j < o.loaders.size(); ++j) loaders.push_back(plan_loader(r, *o.loaders[j], j));
  std::vector<int64_t> rng;
  if (o.rng) rng = r.i64s(str(kReserved, "rng"), 2);
  const int64_t step = r.i64s(str(kReserved, "step"), 0)[0];
  r.require_all_used([](const std::string &) { return false; });

  // Commit.
  commit_copies(copies);
  for (OptPlan &p : opts) {
    p.opt->options = p.options;
    p.opt->step_count = p.step_count;
    for (size_t i = 0; i < p.slots.size(); ++i) {
      Optimizer::Slot &slot = p.opt->slots[i];
      slot.buf1 = std::move(p.slots[i].buf1);
      slot.buf2 = std::move(p.slots[i].buf2);
      slot.step = std::move(p.slots[i].step);
    }
  }
  for (size_t j = 0; j < scalers.size(); ++j) o.scalers[j]->commit_load_state(std::move(scalers[j]));
  for (LoaderPlan &p : loaders) {
    p.loader->opts.seed = p.seed;
    p.loader->epoch = p.epoch;
    p.loader->pos = p.pos;
    p.loader->epoch_done = p.done;
    p.loader->order.swap(p.order);
  }
  if (o.rng) {
    o.session->seed = uint64_t(rng[0]);
    o.session->rng_offset = uint64_t(rng[1]);
  }
  drop_cast_cache(o.session);
  return step;
}

void load_module_weights(Module &m, Optimizer *opt, const std::string &path, bool strict,
                         const char *fn) {
  std::vector<Optimizer *> opts;
  if (opt) opts.push_back(opt);
  std::vector<Named> named = named_tensors({&m}, {""}, {}, opts, fn);
  Reader r(path, fn);
  r.verify(false);
  std::vector<Copy> copies;
  for (const Named &n : named)
    if (const Entry *e = r.get(n.name, strict)) plan_named(r, *e, n, copies);
  if (strict)
    r.require_all_used([](const std::string &name) { return name.rfind(kReserved, 0) == 0; });
  commit_copies(copies);
  drop_cast_cache(m.session());
}

std::string read_metadata(const std::string &path, const std::string &key, const char *fn) {
  const std::string what = str(fn, ": '", path, "'");
  uint64_t size = 0;
  // The header length comes first; then at most that many bytes more.
  std::vector<uint8_t> head = read_prefix(path, 8, &size, fn);
  if (head.size() < 8) parse_header(head.data(), head.size(), size, what);  // reports truncation
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | head[size_t(i)];
  const size_t want = n <= kMaxHeaderBytes ? size_t(n) + 8 : 8;
  std::vector<uint8_t> bytes = read_prefix(path, want, &size, fn);
  File f = parse_header(bytes.data(), bytes.size(), size, what);
  const std::string *v = f.meta(key);
  if (!v) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": '", path, "' has no metadata entry '", key, "'");
  return *v;
}

}  // namespace mixp::state
