/* mixp.i: the one SWIG interface of mixp, shared by every language.
 *
 * How the files fit together
 * --------------------------
 * SWIG runs on THIS file for every language (bindings/CMakeLists.txt and the
 * per-language CMakeLists pass `-c++ -doxygen -DSWIGWORDSIZE64 -I<bindings>
 * -I<include>`). It
 *   1. declares the module and includes the public header in the wrapper,
 *   2. includes the language file (python/mixp_python.i, go/mixp_go.i,
 *      java/mixp_java.i), which MUST define the SWIG macro
 *      MIXP_SWIG_RAISE(status, message): wrapper code that turns a failed
 *      mixp_status and the message of mixp_last_error() into the host
 *      language's error and leaves the wrapper (Python: set the exception and
 *      SWIG_fail; Java: throw and `return $null`; Go: whatever the Go layer
 *      reads back), plus the language's typemaps for shapes, buffers,
 *      out-parameters and tensor arrays,
 *   3. declares the parts every language shares: the handle types as proxy
 *      classes whose destructor is the C destroy/release function, ownership
 *      (%newobject / %delobject), constructors of the options structs that
 *      call their *_options_init(), and the one %exception block,
 *   4. %includes "mixp/mixp.h", so every public function and its Doxygen
 *      comment (-doxygen) reaches the binding.
 *
 * Errors: the %exception block below runs after every wrapped call, on the
 * same thread and inside the same wrapper call, so mixp_last_error() is
 * always the message of *this* call (Python releases the GIL around the call
 * only; a goroutine cannot move threads within one cgo call). Only functions
 * returning mixp_status can fail: the check is an overload that ignores every
 * other return type. Functions and struct members with no return value are
 * listed with %noexception below (a wrapper without `result` would not
 * compile, so a new void function that is not listed fails the build loudly).
 * MIXP_DONE (> 0) is not an error; the language layer sees it as the status.
 *
 * Ownership: every handle that reaches the host language as an owning proxy
 * holds exactly one reference (tensors) or the object itself (sessions,
 * modules, optimizers, scalers, datasets, loaders). Out-parameters
 * (`T **out`) are wrapped by the language typemaps as owning proxies;
 * mixp_tensor_retain() returns a new owning proxy (%newobject); the destroy
 * and release functions disown their argument (%delobject) so the proxy's
 * destructor does not run twice. Borrowed pointers (mixp_tensor_session())
 * come back as non-owning proxies.
 *
 * Generated files are never committed: SWIG runs at build time (UseSWIG).
 */

#if defined(SWIGPYTHON)
%module capi
#else
%module mixp
#endif

%{
#include <cmath>
#include <vector>

#include "mixp/mixp.h"

/* The status check of the %exception block: only a mixp_status result can
 * carry an error; counts, names, handles and flags never do. */
static inline mixp_status mixp_swig_status(mixp_status s) { return s; }
template <class T> static inline mixp_status mixp_swig_status(const T &) { return MIXP_OK; }
%}

%include <stdint.i>

/* ---- the language's typemaps and its MIXP_SWIG_RAISE -------------------- */
#if defined(SWIGPYTHON)
%include "python/mixp_python.i"
#elif defined(SWIGGO)
%include "go/mixp_go.i"
#elif defined(SWIGJAVA)
%include "java/mixp_java.i"
#else
#error "mixp.i: no language file for this SWIG target (python, go, java)"
#endif

#ifndef MIXP_SWIG_RAISE_DEFINED
#error "the language file must define MIXP_SWIG_RAISE(status, message) and MIXP_SWIG_RAISE_DEFINED"
#endif

/* ---- handles: opaque in C, proxy classes for SWIG ------------------------
 * SWIG sees an empty struct so that it can give each handle a destructor;
 * the wrapper never looks inside (no default constructor, no sizeof). */
%define MIXP_HANDLE(TYPE, DESTROY)
%nodefaultctor TYPE;
struct TYPE {};
%extend TYPE { ~TYPE() { DESTROY($self); } }
%delobject DESTROY;
%noexception TYPE::~TYPE;
%enddef

MIXP_HANDLE(mixp_session, mixp_session_destroy)
MIXP_HANDLE(mixp_tensor, mixp_tensor_release)
MIXP_HANDLE(mixp_module, mixp_module_destroy)
MIXP_HANDLE(mixp_optimizer, mixp_optimizer_destroy)
MIXP_HANDLE(mixp_grad_scaler, mixp_grad_scaler_destroy)
MIXP_HANDLE(mixp_dataset, mixp_dataset_destroy)
MIXP_HANDLE(mixp_loader, mixp_loader_destroy)
MIXP_HANDLE(mixp_trace, mixp_trace_destroy)
MIXP_HANDLE(mixp_profile, mixp_profile_destroy)
MIXP_HANDLE(mixp_dist, mixp_dist_destroy)
MIXP_HANDLE(mixp_graph, mixp_graph_destroy)

/* A retained tensor is a new reference owned by the caller. */
%newobject mixp_tensor_retain;

/* ---- options structs: a default constructor that calls *_options_init() --
 * (and sets struct_size), so no language ever sends an uninitialised struct.
 * The two "answer" structs get their struct_size the same way. */
%define MIXP_OPTIONS(TYPE, INIT)
%extend TYPE {
  TYPE() { TYPE *o = new TYPE(); INIT(o); return o; }
}
%noexception TYPE;
%noexception TYPE::~TYPE;
%enddef

MIXP_OPTIONS(mixp_session_options, mixp_session_options_init)
MIXP_OPTIONS(mixp_conv2d_options, mixp_conv2d_options_init)
MIXP_OPTIONS(mixp_pool2d_options, mixp_pool2d_options_init)
MIXP_OPTIONS(mixp_autocast_options, mixp_autocast_options_init)
MIXP_OPTIONS(mixp_grad_scaler_options, mixp_grad_scaler_options_init)
MIXP_OPTIONS(mixp_decorate_options, mixp_decorate_options_init)
MIXP_OPTIONS(mixp_synthetic_options, mixp_synthetic_options_init)
MIXP_OPTIONS(mixp_loader_options, mixp_loader_options_init)
MIXP_OPTIONS(mixp_cross_entropy_options, mixp_cross_entropy_options_init)
MIXP_OPTIONS(mixp_numerics_options, mixp_numerics_options_init)
MIXP_OPTIONS(mixp_state_spec, mixp_state_spec_init)
MIXP_OPTIONS(mixp_dist_options, mixp_dist_options_init)

%extend mixp_optimizer_options {
  mixp_optimizer_options(mixp_optimizer_kind kind = MIXP_OPTIM_ADAMW) {
    mixp_optimizer_options *o = new mixp_optimizer_options();
    mixp_optimizer_options_init(o, kind);
    return o;
  }
}
%noexception mixp_optimizer_options;
%noexception mixp_optimizer_options::~mixp_optimizer_options;

/* The init functions are static inline in mixp.h (SWIG sees plain
 * declarations): the constructors above run them in the wrapper, compiled
 * against this mixp.h, so they pass its sizeof to *_options_init_sized().
 * That size is a C matter, so the sized entry points are not wrapped. */
%ignore mixp_session_options_init_sized;
%ignore mixp_numerics_options_init_sized;
%ignore mixp_cross_entropy_options_init_sized;
%ignore mixp_conv2d_options_init_sized;
%ignore mixp_pool2d_options_init_sized;
%ignore mixp_autocast_options_init_sized;
%ignore mixp_optimizer_options_init_sized;
%ignore mixp_grad_scaler_options_init_sized;
%ignore mixp_decorate_options_init_sized;
%ignore mixp_synthetic_options_init_sized;
%ignore mixp_loader_options_init_sized;
%ignore mixp_dist_options_init_sized;
%ignore mixp_state_spec_init_sized;

%extend mixp_memory_stats {
  mixp_memory_stats() { mixp_memory_stats *s = new mixp_memory_stats(); s->struct_size = sizeof *s; return s; }
}
%noexception mixp_memory_stats;
%noexception mixp_memory_stats::~mixp_memory_stats;

%extend mixp_autocast_policy_info {
  mixp_autocast_policy_info() {
    mixp_autocast_policy_info *p = new mixp_autocast_policy_info();
    p->struct_size = sizeof *p;
    return p;
  }
}
%noexception mixp_autocast_policy_info;
%noexception mixp_autocast_policy_info::~mixp_autocast_policy_info;

%extend mixp_profile_row {
  mixp_profile_row() { mixp_profile_row *r = new mixp_profile_row(); r->struct_size = sizeof *r; return r; }
}
%noexception mixp_profile_row;
%noexception mixp_profile_row::~mixp_profile_row;

%extend mixp_dist_stats {
  mixp_dist_stats() { mixp_dist_stats *s = new mixp_dist_stats(); s->struct_size = sizeof *s; return s; }
}
%noexception mixp_dist_stats;
%noexception mixp_dist_stats::~mixp_dist_stats;

/* struct_size belongs to the library's versioning, not to the host. */
%immutable mixp_session_options::struct_size;
%immutable mixp_conv2d_options::struct_size;
%immutable mixp_pool2d_options::struct_size;
%immutable mixp_autocast_options::struct_size;
%immutable mixp_optimizer_options::struct_size;
%immutable mixp_grad_scaler_options::struct_size;
%immutable mixp_decorate_options::struct_size;
%immutable mixp_synthetic_options::struct_size;
%immutable mixp_loader_options::struct_size;
%immutable mixp_state_spec::struct_size;
%immutable mixp_memory_stats::struct_size;
%immutable mixp_autocast_policy_info::struct_size;
%immutable mixp_dist_options::struct_size;
%immutable mixp_dist_stats::struct_size;
%immutable mixp_profile_row::struct_size;
/* Borrowed from the profile: read only. */
%immutable mixp_profile_row::op;

/* Borrowed C strings in struct fields cannot be kept alive from a host
 * language: the device string is set through the session helper below, the
 * autocast op lists through mixp_swig_autocast_push(). */
%ignore mixp_session_options::device;
%ignore mixp_autocast_options::custom_white_list;
%ignore mixp_autocast_options::n_custom_white;
%ignore mixp_autocast_options::custom_black_list;
%ignore mixp_autocast_options::n_custom_black;
%ignore mixp_numerics_options::include_ops;
%ignore mixp_numerics_options::n_include;
%ignore mixp_numerics_options::exclude_ops;
%ignore mixp_numerics_options::n_exclude;
/* Array outs: hosts go through mixp_swig_optimizer_nonfinite_grad() and
 * mixp_swig_optimizer_grad_underflow(). */
%ignore mixp_optimizer_nonfinite_grads;
%ignore mixp_optimizer_grad_underflow;
/* The training-state spec holds arrays of handles and strings: hosts go
 * through mixp_swig_state_save/load below (one of each object kind). */
%ignore mixp_state_spec::modules;
%ignore mixp_state_spec::module_prefixes;
%ignore mixp_state_spec::num_modules;
%ignore mixp_state_spec::tensors;
%ignore mixp_state_spec::tensor_names;
%ignore mixp_state_spec::num_tensors;
%ignore mixp_state_spec::optimizers;
%ignore mixp_state_spec::num_optimizers;
%ignore mixp_state_spec::scalers;
%ignore mixp_state_spec::num_scalers;
%ignore mixp_state_spec::loaders;
%ignore mixp_state_spec::num_loaders;
%ignore mixp_state_spec::user_metadata;

/* ---- functions without a status ------------------------------------------- */
%noexception mixp_session_options_init;
%noexception mixp_conv2d_options_init;
%noexception mixp_pool2d_options_init;
%noexception mixp_autocast_options_init;
%noexception mixp_optimizer_options_init;
%noexception mixp_grad_scaler_options_init;
%noexception mixp_decorate_options_init;
%noexception mixp_synthetic_options_init;
%noexception mixp_loader_options_init;
%noexception mixp_cross_entropy_options_init;
%noexception mixp_numerics_options_init;
%noexception mixp_state_spec_init;
%noexception mixp_session_destroy;
%noexception mixp_tensor_release;
%noexception mixp_module_destroy;
%noexception mixp_optimizer_destroy;
%noexception mixp_grad_scaler_destroy;
%noexception mixp_dataset_destroy;
%noexception mixp_loader_destroy;
%noexception mixp_trace_destroy;
%noexception mixp_profile_destroy;
%noexception mixp_dist_options_init;
%noexception mixp_dist_destroy;
%noexception mixp_dlpack_release;
%noexception mixp_dlpack_release_versioned;
%noexception mixp_graph_destroy;
/* The report out-parameter: hosts read it with mixp_trace_report(). */
%ignore mixp_trace_compare;

/* ---- the one error translation ------------------------------------------- */
%exception {
  $action
  {
    const mixp_status mixp_swig_st = mixp_swig_status(result);
    if (mixp_swig_st < 0) {
      MIXP_SWIG_RAISE(mixp_swig_st, mixp_last_error());
    }
  }
}

/* ---- helpers for what a struct field cannot carry -------------------------
 * Each is a thin C function over the public API; the language files give
 * them typemaps like the header's own (string lists, device strings). */
%{
/** Fills a training-state spec with at most one module, optimizer, grad
 *  scaler and loader (NULL: not listed) and the session RNG. */
static void mixp_swig_state_spec(mixp_state_spec *spec, mixp_module **module,
                                 mixp_optimizer **optimizer, mixp_grad_scaler **scaler,
                                 mixp_loader **loader) {
  mixp_state_spec_init(spec);
  spec->modules = module;
  spec->num_modules = *module ? 1 : 0;
  spec->optimizers = optimizer;
  spec->num_optimizers = *optimizer ? 1 : 0;
  spec->scalers = scaler;
  spec->num_scalers = *scaler ? 1 : 0;
  spec->loaders = loader;
  spec->num_loaders = *loader ? 1 : 0;
}

%}

%inline %{
/** Creates a session like mixp_session_create() with @p options and the
 *  device string @p device ("cpu", "cuda", "cuda:N", "auto"; NULL or "" for
 *  the options' default).
 *  @param options NULL for the defaults.
 *  @param device The device string, borrowed during the call.
 *  @param[out] out Receives the session (owned).
 *  @return As mixp_session_create(). */
mixp_status mixp_swig_session_create(const mixp_session_options *options, const char *device,
                                     mixp_session **out) {
  mixp_session_options o;
  if (options) o = *options; else mixp_session_options_init(&o);
  if (device && *device) o.device = device;
  return mixp_session_create(&o, out);
}

/** Opens an autocast region like mixp_autocast_push() with the custom op
 *  lists given as arrays of names (borrowed during the call).
 *  @param session The session.
 *  @param options NULL for the defaults; its list fields are replaced.
 *  @param white Op names forced to low precision.
 *  @param n_white Entries in @p white.
 *  @param black Op names forced to fp32.
 *  @param n_black Entries in @p black.
 *  @return As mixp_autocast_push(). */
mixp_status mixp_swig_autocast_push(mixp_session *session, const mixp_autocast_options *options,
                                    const char *const *white, int n_white,
                                    const char *const *black, int n_black) {
  mixp_autocast_options o;
  if (options) o = *options; else mixp_autocast_options_init(&o);
  o.custom_white_list = white;
  o.n_custom_white = n_white;
  o.custom_black_list = black;
  o.n_custom_black = n_black;
  return mixp_autocast_push(session, &o);
}

/** Parameter k's entry of mixp_optimizer_grad_underflow() in @p value (NaN
 *  without a gradient) and the number of parameters in @p size; @p value is
 *  NaN for k outside [0, size). Each call scans every gradient: hosts call
 *  it for k = 0 .. size-1 every N steps.
 *  @param optimizer The optimizer.
 *  @param low MIXP_F16, MIXP_BF16 or MIXP_F32.
 *  @param k Which parameter.
 *  @param[out] value The fraction.
 *  @param[out] size The number of parameters.
 *  @return As mixp_optimizer_grad_underflow(). */
mixp_status mixp_swig_optimizer_grad_underflow(const mixp_optimizer *optimizer, mixp_dtype low, int k,
                                               double *value, int *size) {
  *value = NAN;
  *size = 0;
  std::vector<double> f(k < 0 ? 1 : size_t(k) + 1);
  const mixp_status st = mixp_optimizer_grad_underflow(optimizer, low, f.data(), int(f.size()), size);
  if (st == MIXP_OK && k >= 0 && k < *size) *value = f[size_t(k)];
  return st;
}

/** mixp_trace_compare() without the report out-parameter (read it with
 *  mixp_trace_report()); the first divergent entry, or -1, in @p count.
 *  @param reference The trusted run.
 *  @param test The run under test.
 *  @param rel_tol The relative tolerance, >= 0.
 *  @param[out] count The first divergent entry, or -1.
 *  @return As mixp_trace_compare(). */
mixp_status mixp_swig_trace_compare(const mixp_trace *reference, mixp_trace *test, double rel_tol,
                                    int64_t *count) {
  *count = -1;
  return mixp_trace_compare(reference, test, rel_tol, count, NULL);
}

/** Sets the numerics checker like mixp_session_set_numerics_options() with
 *  the op lists given as arrays of names (copied by the call).
 *  @param session The session.
 *  @param options NULL for the defaults; its list fields are replaced.
 *  @param include_ops Check only these ops (none: every op).
 *  @param n_include Entries in @p include_ops.
 *  @param exclude_ops Never check these ops.
 *  @param n_exclude Entries in @p exclude_ops.
 *  @return As mixp_session_set_numerics_options(). */
mixp_status mixp_swig_set_numerics_options(mixp_session *session, const mixp_numerics_options *options,
                                           const char *const *include_ops, int n_include,
                                           const char *const *exclude_ops, int n_exclude) {
  mixp_numerics_options o;
  if (options) o = *options; else mixp_numerics_options_init(&o);
  o.include_ops = include_ops;
  o.n_include = n_include;
  o.exclude_ops = exclude_ops;
  o.n_exclude = n_exclude;
  return mixp_session_set_numerics_options(session, &o);
}

/** The k-th (from 0) parameter of @p optimizer that holds a non-finite
 *  gradient, as mixp_optimizer_nonfinite_grads() lists them, in
 *  @p param_index; -1 past the last. Hosts call it for k = 0, 1, ... until -1
 *  (each call scans the gradients: a path for skipped steps only).
 *  @param optimizer The optimizer.
 *  @param k Which one, >= 0.
 *  @param[out] param_index Its index, or -1.
 *  @return As mixp_optimizer_nonfinite_grads(). */
mixp_status mixp_swig_optimizer_nonfinite_grad(const mixp_optimizer *optimizer, int k, int *param_index) {
  *param_index = -1;
  std::vector<int> found(k < 0 ? 1 : size_t(k) + 1);
  int count = 0;
  const mixp_status st = mixp_optimizer_nonfinite_grads(optimizer, found.data(), int(found.size()), &count);
  if (st == MIXP_OK && k >= 0 && k < count) *param_index = found[size_t(k)];
  return st;
}

/** Saves a training state like mixp_state_save() listing @p module,
 *  @p optimizer, @p scaler and @p loader (each may be NULL) and the RNG.
 *  @param session The session.
 *  @param path The file to write (atomically).
 *  @param module The model, or NULL.
 *  @param optimizer Its optimizer, or NULL.
 *  @param scaler The loss scaler, or NULL.
 *  @param loader The training loader, or NULL.
 *  @param step The global step to record.
 *  @param user_metadata NULL or a string stored as the metadata entry "user".
 *  @return As mixp_state_save(). */
mixp_status mixp_swig_state_save(mixp_session *session, const char *path, mixp_module *module,
                                 mixp_optimizer *optimizer, mixp_grad_scaler *scaler,
                                 mixp_loader *loader, int64_t step, const char *user_metadata) {
  mixp_state_spec spec;
  mixp_swig_state_spec(&spec, &module, &optimizer, &scaler, &loader);
  spec.step = step;
  spec.user_metadata = user_metadata;
  return mixp_state_save(session, path, &spec);
}

/** Restores what mixp_swig_state_save() wrote into the same kinds of objects.
 *  @param session The session.
 *  @param path The file to read.
 *  @param module The model, or NULL.
 *  @param optimizer Its optimizer, or NULL.
 *  @param scaler The loss scaler, or NULL.
 *  @param loader The training loader, or NULL.
 *  @param[out] step Receives the saved global step.
 *  @return As mixp_state_load(); a failed load changes nothing. */
mixp_status mixp_swig_state_load(mixp_session *session, const char *path, mixp_module *module,
                                 mixp_optimizer *optimizer, mixp_grad_scaler *scaler,
                                 mixp_loader *loader, int64_t *step) {
  mixp_state_spec spec;
  mixp_swig_state_spec(&spec, &module, &optimizer, &scaler, &loader);
  return mixp_state_load(session, path, &spec, step);
}
%}

%include "mixp/mixp.h"
