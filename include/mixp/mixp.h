/**
 * @file mixp.h
 * @brief The whole public C API of mixp, an embeddable mixed-precision
 *        training library.
 *
 * @mainpage mixp C API
 *
 * Conventions that hold for every function in this header:
 *
 * - **Errors.** Every fallible function returns a ::mixp_status. `MIXP_OK`
 *   (0) is success, negative values are errors, positive values are
 *   non-error signals (::MIXP_DONE). On an error, mixp_last_error() returns a
 *   message naming the function, the argument and the expected/actual value.
 *   No C++ exception, abort() or assert ever crosses this boundary.
 * - **Out-parameters** come last, are written only on success, and stay
 *   untouched on failure. A failed call leaves every object as it was.
 * - **Ownership.** An object returned through `T **out` is owned by the
 *   caller: destroy it with its `*_destroy()` (or mixp_tensor_release() for
 *   tensors). A `const char *` returned by value is borrowed: it belongs to
 *   the library and stays valid as long as documented. `*_destroy(NULL)` and
 *   mixp_tensor_release(NULL) are harmless no-ops. Input pointers are
 *   borrowed for the duration of the call unless documented otherwise.
 * - **Threading.** A session, and every object created from it, must be used
 *   by one thread at a time (the thread may change between calls). Distinct
 *   sessions may be used concurrently from different threads. Functions that
 *   take no handle (version, status strings, options_init, mixp_last_error)
 *   are thread-safe. mixp_tensor_retain() and mixp_tensor_release() may be
 *   called from any thread (e.g. a garbage collector's finalizer thread).
 * - **Shapes** are `const int64_t *shape, int ndim` with `0 <= ndim <=
 *   MIXP_MAX_DIMS`; byte counts are `size_t`; strings are UTF-8.
 * - **Options structs** begin with `uint32_t struct_size`; fill them with the
 *   matching `*_options_init()` before changing fields. New fields are only
 *   ever appended, so a program compiled against an older header keeps
 *   working with a newer library: every library accepts each size a release
 *   gave a struct, and the fields a smaller struct lacks read as their
 *   defaults. Since 0.7 each `*_options_init()` is a static inline function
 *   that passes `sizeof` of the program's own struct to the exported
 *   `*_options_init_sized()`, which writes that many bytes and no more, so
 *   no later library can write past a struct of the program's header. The
 *   exported `mixp_*_options_init()` symbols that programs compiled against
 *   0.6 or older call fill the struct as first released (the 0.1/0.2
 *   layout) and set struct_size to that size, so they never write past any
 *   older program's struct either; a field appended later (use_promote,
 *   state_dtype, ...) then reads as its default until the program is
 *   recompiled. A host that resolves functions by name (dlsym, an FFI)
 *   calls `*_options_init_sized()` with its struct's size. The sizes and
 *   the version of every field are listed in docs/embedding.md.
 */
#ifndef MIXP_MIXP_H
#define MIXP_MIXP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** @defgroup base Versions, status codes and errors
 *  @{ */

#if defined(_WIN32)
#  if defined(MIXP_BUILDING_LIBRARY)
#    define MIXP_API __declspec(dllexport)
#  else
#    define MIXP_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__)
/** Marks a function as part of the exported C ABI. */
#  define MIXP_API __attribute__((visibility("default")))
#else
/** Marks a function as part of the exported C ABI (no attribute needed here). */
#  define MIXP_API
#endif

/* Every enum is int-sized in C. In C++ its underlying type is fixed to int
 * so that any int a C caller passes is a valid value (the library rejects
 * unknown values with MIXP_ERR_INVALID_ARGUMENT instead of invoking UB). */
#ifdef __cplusplus
#  define MIXP_ENUM(name) enum name : int
#else
/** Declares an int-sized enum type @p name (see the note above). */
#  define MIXP_ENUM(name) enum name
#endif

/* The *_options_init() functions are static inline (see "Options structs"
 * above). MIXP_LEGACY_OPTIONS_INIT is defined only where the exported
 * symbols of the same names are defined or tested (the library's
 * src/api/api_options_legacy.cpp, tests/c/test_options_init_legacy.c):
 * there the header declares those symbols instead. SWIG sees plain
 * declarations too; the wrapper code it generates includes this header, so
 * its calls reach the inline functions. */
#if defined(__cplusplus) || (defined(__STDC_VERSION__) && __STDC_VERSION__ >= 199901L)
/** How the header's own functions are defined: static inline (C99, C++). */
#  define MIXP_INLINE static inline
#elif defined(__GNUC__)
/** How the header's own functions are defined: static inline (older GNU C). */
#  define MIXP_INLINE static __inline__
#else
/** How the header's own functions are defined: static (C89 without inline). */
#  define MIXP_INLINE static
#endif

/** Major version: bumped on any ABI-breaking change (it is the SONAME). */
#define MIXP_VERSION_MAJOR 0
/** Minor version: bumped when functions or struct fields are added. */
#define MIXP_VERSION_MINOR 9
/** Patch version: bumped for fixes that change no interface. */
#define MIXP_VERSION_PATCH 0
/** The version as one comparable number: major*10000 + minor*100 + patch. */
#define MIXP_VERSION_NUMBER \
  (MIXP_VERSION_MAJOR * 10000 + MIXP_VERSION_MINOR * 100 + MIXP_VERSION_PATCH)

/** The largest number of dimensions a tensor may have. */
#define MIXP_MAX_DIMS 8

/**
 * Result of every fallible call. Values are explicit and append-only:
 * a value, once released, never changes meaning.
 */
typedef MIXP_ENUM(mixp_status) {
  MIXP_OK = 0,                     /**< Success. */
  MIXP_DONE = 1,                   /**< Not an error: an iteration ended (e.g. mixp_loader_next() at the end of an epoch). */
  MIXP_ERR_INVALID_ARGUMENT = -1,  /**< A NULL pointer, an out-of-range value or an unknown name. */
  MIXP_ERR_SHAPE = -2,             /**< Shapes that do not fit together. */
  MIXP_ERR_DTYPE = -3,             /**< A dtype the operation does not accept, or dtypes that do not match. */
  MIXP_ERR_DEVICE = -4,            /**< The device is unknown, unavailable, or tensors live on different sessions. */
  MIXP_ERR_OUT_OF_MEMORY = -5,     /**< An allocation failed; the session stays usable. */
  MIXP_ERR_STATE = -6,             /**< The call is not valid in the object's current state. */
  MIXP_ERR_CORRUPT = -7,           /**< A file or buffer is truncated or malformed. */
  MIXP_ERR_IO = -8,                /**< A file could not be opened, read or written. */
  MIXP_ERR_NUMERIC = -9,           /**< A non-finite value was found where the numerics checker forbids it. */
  MIXP_ERR_UNSUPPORTED = -10,      /**< A valid request this build cannot serve. */
  MIXP_ERR_INTERNAL = -11          /**< A bug in mixp; the message says where. */
} mixp_status;

/**
 * The library's version string, e.g. "0.1.0".
 * @return A static string (borrowed, never NULL). Thread-safe.
 */
MIXP_API const char *mixp_version(void);

/**
 * The run-time version number; compare with #MIXP_VERSION_NUMBER to detect a
 * header/library mismatch.
 * @return major*10000 + minor*100 + patch. Thread-safe.
 */
MIXP_API int mixp_version_number(void);

/**
 * One line describing the build: version, commit, compiler, whether the CUDA
 * backend was built and for which SM architectures, the CPU backend and which
 * low-precision units it found on this CPU.
 * @return A static string (borrowed, never NULL). Thread-safe.
 */
MIXP_API const char *mixp_build_info(void);

/**
 * A short constant description of a status code, e.g. "shape mismatch".
 * @param status Any value; unknown values give "unknown status".
 * @return A static string (borrowed, never NULL). Thread-safe.
 */
MIXP_API const char *mixp_status_string(mixp_status status);

/**
 * The message of the most recent failed call made on the calling thread.
 * Successful calls do not change it. Read it on the same thread, right after
 * the failing call.
 * @return A string owned by the library (never NULL; "" if no call failed on
 *         this thread yet), valid until the next failing call on this thread.
 */
MIXP_API const char *mixp_last_error(void);

/**
 * The status of the most recent failed call made on the calling thread.
 * @return A negative ::mixp_status, or MIXP_OK if no call failed yet.
 */
MIXP_API mixp_status mixp_last_status(void);

/** @} */

/** @defgroup session Sessions
 *  A session owns a device, a random-number stream, a thread count and the
 *  grad-mode stack. Every tensor belongs to exactly one session.
 *  @{ */

/** Opaque session handle. */
typedef struct mixp_session mixp_session;

/** What the numerics checker does after every operation (forward and
 *  backward): the tool Paddle users know as FLAGS_check_nan_inf. */
typedef MIXP_ENUM(mixp_numerics_mode) {
  MIXP_NUMERICS_OFF = 0,    /**< No check (default; no cost). */
  MIXP_NUMERICS_WARN = 1,   /**< Log the first non-finite output of each op (see mixp_session_set_log_callback()). */
  MIXP_NUMERICS_ERROR = 2   /**< Make the call fail with MIXP_ERR_NUMERIC and that report. */
} mixp_numerics_mode;

/** Severity of a log message. */
typedef MIXP_ENUM(mixp_log_level) {
  MIXP_LOG_INFO = 0,     /**< Informational (e.g. which device "auto" chose). */
  MIXP_LOG_WARNING = 1   /**< Something the user should look at (e.g. a numerics warning). */
} mixp_log_level;

/** Receives the session's log messages. @p message is valid during the call only. */
typedef void (*mixp_log_fn)(void *user_data, mixp_log_level level, const char *message);

/** Options for mixp_session_create(). Fill with mixp_session_options_init(). */
typedef struct mixp_session_options {
  uint32_t struct_size;  /**< sizeof(mixp_session_options); set by init. */
  /** "cpu", "cuda", "cuda:N" or "auto" (default "cpu"). "auto" uses CUDA when
   *  its backend loads and a GPU is present, else the CPU, and says which in
   *  mixp_session_device_note(). Borrowed during the call only. */
  const char *device;
  uint64_t seed;         /**< Seed of the counter-based (Philox) RNG; default 0. */
  int num_threads;       /**< CPU threads for kernels; 0 (default) = all cores. */
  /** Allow TF32 Tensor Core math for F32 matrix products on GPUs (default 0).
   *  The environment variable MIXP_TF32_OVERRIDE=0|1 wins over this field.
   *  The CPU backend records it and computes F32 products in full fp32. */
  int allow_tf32;
  mixp_numerics_mode check_numerics;  /**< Numerics checker mode (default off). */
  /** Since 0.9 (a 0.8-sized struct reads as 0 and 1). 1: choose each
   *  convolution's algorithm by timing the candidates on its first call
   *  (PyTorch's cudnn.benchmark), once per geometry, dtype and layout for the
   *  session; 0 (default): cuDNN's heuristic choice, no timing. 0 or 1; the
   *  environment variable MIXP_CUDNN_BENCHMARK=0|1 wins over this field.
   *  The CPU backend records it and has one algorithm per convolution. */
  int cudnn_benchmark;
  /** Since 0.9. 1 (default): convolutions use bitwise-reproducible
   *  algorithms only, so a run repeats bit for bit (what mixp has always
   *  promised; a geometry that has none on the GPU fails with
   *  MIXP_ERR_UNSUPPORTED naming it); 0: any algorithm, which with
   *  cudnn_benchmark=1 may be faster and round differently from run to run
   *  (atomics). 0 or 1; MIXP_CUDNN_DETERMINISTIC=0|1 in the environment
   *  wins. The CPU backend is deterministic either way. */
  int cudnn_deterministic;
} mixp_session_options;

/**
 * The entry point behind mixp_session_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_session_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_session_options_init_sized(mixp_session_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_session_options_init(mixp_session_options *options);
#else
/**
 * Fills @p options with defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_session_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options The struct to fill; NULL is ignored.
 */
MIXP_INLINE void mixp_session_options_init(mixp_session_options *options) {
  if (options) (void)mixp_session_options_init_sized(options, sizeof *options);
}
#endif

/**
 * Creates a session.
 * @param[in]  options NULL for defaults, or options filled by
 *                     mixp_session_options_init().
 * @param[out] out     Receives the session, owned by the caller: destroy it
 *                     with mixp_session_destroy().
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL @p out, a bad
 *         struct_size, an unknown device string or a negative thread count;
 *         MIXP_ERR_DEVICE when "cuda"/"cuda:N" is asked for and cannot be
 *         served, with the reason in the message: no CUDA backend plugin
 *         (libmixp_cuda.so, searched in MIXP_BACKEND_PATH, a file or a
 *         directory, then beside libmixp.so), a plugin that cannot be loaded
 *         (a missing CUDA library) or is from another build (ABI version), no
 *         GPU/driver, or a device index out of range;
 *         MIXP_ERR_OUT_OF_MEMORY when the device cannot hold the session's
 *         library workspaces.
 */
MIXP_API mixp_status mixp_session_create(const mixp_session_options *options,
                                         mixp_session **out);

/**
 * Destroys a session handle. Tensors and objects still alive keep the
 * session's internals alive and may still be released (and read), but using
 * them in new operations fails with MIXP_ERR_STATE.
 * @param session The session, or NULL (no-op).
 */
MIXP_API void mixp_session_destroy(mixp_session *session);

/**
 * The device the session runs on, e.g. "cpu" or "cuda:0".
 * @param session The session.
 * @return A string borrowed from the session, valid while it lives; "" for a
 *         NULL session.
 */
MIXP_API const char *mixp_session_device(const mixp_session *session);

/**
 * A human-readable note on the device: for a CUDA session the GPU's
 * description (name, sm_XY, memory, driver, runtime and library versions);
 * for a CPU session the CPU's: its relevant units and how each precision's
 * matrix products run, in the form "cpu: AVX2 FMA F16C ...; fp32: <path>;
 * bf16: <path> (faster than fp32); f16: <path> (not faster than fp32)" (the
 * "(faster|not faster than fp32)" endings are stable, for programs that
 * want to warn that a half type cannot speed this CPU up). For "auto" it
 * first says which device it picked and, when it fell back to the CPU, why
 * (e.g. "device 'auto': cuda is unavailable, using cpu: no GPU/driver: ...").
 * @param session The session.
 * @return A string borrowed from the session, valid while it lives.
 */
MIXP_API const char *mixp_session_device_note(const mixp_session *session);

/**
 * The number of CPU threads kernels of this session use.
 * @param session The session.
 * @return The thread count (>= 1), or 0 for a NULL session.
 */
MIXP_API int mixp_session_num_threads(const mixp_session *session);

/**
 * Re-seeds the session's random-number stream and resets its counter, so
 * that the same seed reproduces the same sequence of random tensors.
 * @param session The session.
 * @param seed The new seed.
 * @return MIXP_OK, or MIXP_ERR_INVALID_ARGUMENT for a NULL session.
 */
MIXP_API mixp_status mixp_session_set_seed(mixp_session *session, uint64_t seed);

/**
 * Enters a no-grad region: until the matching mixp_no_grad_end(), operations
 * record no autograd graph. Regions nest.
 * @param session The session.
 * @return MIXP_OK, or MIXP_ERR_INVALID_ARGUMENT for a NULL session.
 */
MIXP_API mixp_status mixp_no_grad_begin(mixp_session *session);

/**
 * Leaves the innermost no-grad region.
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_STATE if no region is open.
 */
MIXP_API mixp_status mixp_no_grad_end(mixp_session *session);

/**
 * Whether operations currently record gradients.
 * @param session The session.
 * @return 1 if grad mode is on, 0 inside a no-grad region or for NULL.
 */
MIXP_API int mixp_grad_enabled(const mixp_session *session);

/**
 * Turns TF32 math for F32 matrix products on or off (see
 * mixp_session_options::allow_tf32). MIXP_TF32_OVERRIDE in the environment,
 * when set to 0 or 1, wins.
 * @param session The session.
 * @param allow 1 to allow TF32, 0 to forbid it.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT for a NULL session.
 */
MIXP_API mixp_status mixp_session_set_tf32(mixp_session *session, int allow);

/**
 * Whether F32 matrix products may use TF32, after MIXP_TF32_OVERRIDE.
 * @param session The session.
 * @return 1 or 0 (0 for NULL).
 */
MIXP_API int mixp_session_tf32(const mixp_session *session);

/**
 * Sets how convolutions choose their algorithm (see
 * mixp_session_options::cudnn_benchmark and
 * mixp_session_options::cudnn_deterministic): for the
 * convolutions that run after the call; each choice is kept for the session.
 * MIXP_CUDNN_BENCHMARK and MIXP_CUDNN_DETERMINISTIC in the environment
 * (read when the session was created), when set, win. Since 0.9.
 * @param session The session.
 * @param benchmark 1 to time the candidates, 0 for the heuristic's choice.
 * @param deterministic 1 for bitwise-reproducible algorithms only, 0 for any.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL session or a value
 *         other than 0 and 1 (the message names the argument); then nothing
 *         changes. Not thread-safe with operations on the same session.
 */
MIXP_API mixp_status mixp_session_set_cudnn(mixp_session *session, int benchmark, int deterministic);

/**
 * How convolutions choose their algorithm, after the environment overrides.
 * Since 0.9.
 * @param session The session.
 * @param[out] benchmark Receives 1 or 0 (cudnn_benchmark); not NULL.
 * @param[out] deterministic Receives 1 or 0 (cudnn_deterministic); not NULL.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL arguments (nothing
 *         written).
 */
MIXP_API mixp_status mixp_session_cudnn(const mixp_session *session, int *benchmark, int *deterministic);

/**
 * Sets the numerics checker mode. After every operation, in the forward and
 * the backward pass, the first non-finite output is reported with the op
 * name, the phase, the output index, dtype, shape and NaN/Inf counts.
 * @param session The session.
 * @param mode The checker mode.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or an unknown mode.
 */
MIXP_API mixp_status mixp_session_set_numerics_check(mixp_session *session,
                                                     mixp_numerics_mode mode);

/**
 * The most recent numerics report of the session (warn or error mode).
 * @param session The session.
 * @return A string borrowed from the session, valid until the next operation
 *         on it; "" when nothing non-finite was seen (or for NULL).
 */
MIXP_API const char *mixp_session_numerics_report(const mixp_session *session);

/** @name Op traces: two runs compared op by op
 *  Record the outputs of every op of one batch in two runs (O0 against
 *  O1/O2, CPU against GPU), then compare them in execution order: the
 *  largest error of each op and the first op whose error passes a tolerance
 *  (Paddle's compare_accuracy). @{ */

/** Opaque trace handle: the recorded outputs, on the host. */
typedef struct mixp_trace mixp_trace;

/**
 * Starts recording a trace on @p session: from now on the outputs of every
 * op called on it (forward, and the gradients backward computes) are copied
 * to the host in double precision, in execution order; casts are recorded but
 * left out of comparisons. Meant for one batch: each output is a wait and a
 * copy, and at most 2^25 values (256 MiB) are kept (later entries keep their
 * op, dtype and shape only).
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_STATE when a
 *         trace is already being recorded.
 */
MIXP_API mixp_status mixp_trace_begin(mixp_session *session);

/**
 * Stops recording and hands over the trace.
 * @param session The session.
 * @param[out] out Receives the trace (owned: mixp_trace_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_STATE when no
 *         trace is being recorded.
 */
MIXP_API mixp_status mixp_trace_end(mixp_session *session, mixp_trace **out);

/**
 * Destroys a trace.
 * @param trace The trace, or NULL (no-op).
 */
MIXP_API void mixp_trace_destroy(mixp_trace *trace);

/**
 * The number of recorded outputs (casts included).
 * @param trace The trace.
 * @return The count, or -1 for NULL.
 */
MIXP_API int64_t mixp_trace_length(const mixp_trace *trace);

/**
 * The report of the last mixp_trace_compare() that took @p trace as its test.
 * @param trace The trace.
 * @return A string borrowed from @p trace ("" before any comparison, or for NULL).
 */
MIXP_API const char *mixp_trace_report(const mixp_trace *trace);

/**
 * Compares @p test with @p reference entry by entry (casts left out): for
 * each output the largest absolute difference and that over the reference's
 * largest magnitude (Inf where one holds NaN/Inf and the other not).
 * @param reference The trusted run (e.g. O0).
 * @param test The run under test (e.g. O2); receives the report.
 * @param rel_tol The relative error above which an op counts as divergent, >= 0.
 * @param[out] first_divergent Receives the index (among the compared
 *        entries) of the first op above @p rel_tol, or of the first entry
 *        where the runs called different ops; -1 when there is none. May be NULL.
 * @param[out] report Receives a table, one line per entry, then the verdict;
 *        borrowed from @p test, valid until its next compare or destroy. May be NULL.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL traces or a negative or
 *         NaN @p rel_tol.
 */
MIXP_API mixp_status mixp_trace_compare(const mixp_trace *reference, mixp_trace *test, double rel_tol,
                                        int64_t *first_divergent, const char **report);
/** @} */

/** @name Profiling: where a step's time goes
 *  Record every op a session runs -- name, forward or backward, input shapes
 *  and dtypes, host time and device time -- then read a table sorted by
 *  total time, or write a Chrome trace (chrome://tracing, Perfetto). On a
 *  cuda session device time is measured with events on the session's
 *  stream around each op; on cpu the ops run synchronously and device time
 *  is their wall-clock time. Recorded are the ops a caller makes (an op's
 *  internals are part of its time), each node a mixp_backward() runs (as
 *  "op (backward)", nested in "backward"), mixp_optimizer_step() and the
 *  GradScaler's calls. Not recording costs one branch per op. Since 0.7. @{ */

/** Opaque profile handle: the recorded op calls and their times, on the host. */
typedef struct mixp_profile mixp_profile;

/**
 * Starts recording a profile on @p session. It waits once for the device, so
 * that the host's and the device's times start together; on a cuda session
 * each recorded op then adds two event records to the stream (about a
 * microsecond of host time each), and nothing waits for the device again
 * until mixp_profile_end().
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_STATE when a
 *         profile is already being recorded or the session was destroyed.
 */
MIXP_API mixp_status mixp_profile_begin(mixp_session *session);

/**
 * Stops recording, waits for the device to finish the recorded work and hands
 * over the profile. At most 2^22 op calls are kept; later ones are counted
 * in the report's last line but not recorded.
 * @param session The session.
 * @param[out] out Receives the profile (owned: mixp_profile_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_STATE when no
 *         profile is being recorded; MIXP_ERR_DEVICE when the device failed
 *         (recording has stopped then too).
 */
MIXP_API mixp_status mixp_profile_end(mixp_session *session, mixp_profile **out);

/**
 * Destroys a profile.
 * @param profile The profile, or NULL (no-op).
 */
MIXP_API void mixp_profile_destroy(mixp_profile *profile);

/**
 * The number of recorded op calls.
 * @param profile The profile.
 * @return The count, or -1 for NULL.
 */
MIXP_API int64_t mixp_profile_length(const mixp_profile *profile);

/** One row of a profile's summary: one op in one pass, over all its calls.
 *  Fill struct_size before mixp_profile_summary_get(). */
typedef struct mixp_profile_row {
  uint32_t struct_size;  /**< sizeof(mixp_profile_row); set by the caller. */
  const char *op;        /**< The op's name ("matmul", "backward", "optimizer_step"); borrowed
                              from the profile. */
  int backward;          /**< 1 for the calls a backward pass made, else 0. */
  int64_t calls;         /**< How many calls. */
  double host_ms;        /**< Host time of the calls, nested ops included, in milliseconds. */
  double device_ms;      /**< Device time of the calls, nested ops included (cpu: = host_ms). */
  double self_host_ms;   /**< host_ms less that of the recorded ops nested in these calls. */
  double self_device_ms; /**< device_ms less that of the recorded ops nested in these calls. */
} mixp_profile_row;

/**
 * The number of rows in the profile's summary (distinct op and pass pairs).
 * @param profile The profile.
 * @return The count, or -1 for NULL.
 */
MIXP_API int64_t mixp_profile_summary_rows(const mixp_profile *profile);

/**
 * Row @p index of the summary; rows are sorted by self_device_ms, largest
 * first, so row 0 is where the most device time went.
 * @param profile The profile.
 * @param index In [0, mixp_profile_summary_rows()).
 * @param[out] row Filled on success; its struct_size must be set first.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL, an index out of range
 *         or a struct_size smaller than the first version of the struct.
 */
MIXP_API mixp_status mixp_profile_summary_get(const mixp_profile *profile, int64_t index,
                                              mixp_profile_row *row);

/**
 * The summary as a table, sorted like mixp_profile_summary_get(): op, pass,
 * calls, self and total device and host time, share of the recorded device
 * time; then a line with the totals.
 * @param profile The profile.
 * @param max_rows The most rows to print (0 or less: all).
 * @return A string borrowed from @p profile, valid until the next call of
 *         this function on it or its destruction; "" for NULL.
 */
MIXP_API const char *mixp_profile_report(mixp_profile *profile, int max_rows);

/**
 * Writes the profile as a Chrome trace event file (JSON object format, one
 * complete event "ph":"X" per op call with its shapes and dtypes in "args"):
 * host times on one track, device times on another. Open it in
 * chrome://tracing or https://ui.perfetto.dev.
 * @param profile The profile.
 * @param path The file to write (replaced if it exists).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL arguments or an empty
 *         path; MIXP_ERR_IO when the file cannot be written (@p path then
 *         keeps what it held: the file is written aside and renamed).
 */
MIXP_API mixp_status mixp_profile_write_trace(const mixp_profile *profile, const char *path);

/** @} */

/** The numerics checker narrowed and widened (Paddle's TensorCheckerConfig):
 *  which ops and steps it looks at, and whether it also looks for values
 *  that would overflow fp16. Fill with mixp_numerics_options_init(). Since 0.4. */
typedef struct mixp_numerics_options {
  uint32_t struct_size;            /**< sizeof(mixp_numerics_options). */
  mixp_numerics_mode mode;         /**< Off (default), warn or error. */
  const char *const *include_ops;  /**< Check only these ops (names as mixp_autocast_policy() and
                                        the op statistics print them, e.g. "matmul"); NULL or
                                        n_include 0: every op. Copied by the call. */
  int n_include;                   /**< Entries in include_ops. */
  const char *const *exclude_ops;  /**< Never check these ops; NULL: none. Copied. */
  int n_exclude;                   /**< Entries in exclude_ops. */
  int64_t start_step;              /**< Check from this step on (default 0)... */
  int64_t end_step;                /**< ...up to, not including, this step (-1, the default: no
                                        end). A step is a call of mixp_optimizer_step() on any
                                        optimizer of the session, counted from this call. */
  int fp16_overflow;               /**< 1: also report outputs of any float dtype holding finite
                                        values that would overflow fp16 (|x| >= 65520), to find
                                        before switching a bf16 or fp32 model to fp16 the ops
                                        that would overflow (Paddle's CHECK_ALL_FOR_OVERFLOW).
                                        0 (default). */
} mixp_numerics_options;

/**
 * The entry point behind mixp_numerics_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_numerics_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_numerics_options_init_sized(mixp_numerics_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_numerics_options_init(mixp_numerics_options *options);
#else
/**
 * Fills @p options with the defaults (off, every op, every step, no fp16
 * overflow check) and sets struct_size. Inline since 0.7: it passes the size of
 * the program's own struct to mixp_numerics_options_init_sized(), so it never
 * writes past it, whichever library runs the program (see "Options structs" in
 * the introduction).
 * @param[out] options NULL is ignored.
 */
MIXP_INLINE void mixp_numerics_options_init(mixp_numerics_options *options) {
  if (options) (void)mixp_numerics_options_init_sized(options, sizeof *options);
}
#endif

/**
 * Sets the numerics checker's mode, op filter, step range and fp16-overflow
 * check, and restarts its step count at 0. mixp_session_set_numerics_check()
 * changes only the mode.
 * @param session The session.
 * @param options The configuration; the op name lists are copied.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT (nothing changed) for NULL, a bad
 *         struct_size, an unknown mode, a negative count, a NULL list with a
 *         positive count, a NULL or empty name, an op name mixp does not
 *         know, start_step < 0, or end_step not -1 and below start_step.
 */
MIXP_API mixp_status mixp_session_set_numerics_options(mixp_session *session,
                                                       const mixp_numerics_options *options);


/**
 * Routes the session's log messages to @p fn (NULL restores the default:
 * warnings to stderr, info dropped). The callback runs on the thread that
 * makes the call producing the message.
 * @param session The session.
 * @param fn The callback, or NULL for the default.
 * @param user_data Passed to @p fn.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT for a NULL session.
 */
MIXP_API mixp_status mixp_session_set_log_callback(mixp_session *session, mixp_log_fn fn,
                                                   void *user_data);

/** Byte counts of the tensor memory a session has allocated. */
typedef struct mixp_memory_stats {
  uint32_t struct_size;    /**< sizeof(mixp_memory_stats); set by the caller. */
  uint64_t current_bytes;  /**< Bytes held by live tensor storage now (on a cuda session: the
                                bytes taken from the session's stream-ordered memory pool and not
                                yet given back, counted in stream order). */
  uint64_t peak_bytes;     /**< Highest current_bytes since creation or the last reset. */
  /* Since 0.7: what the device really held, tensors and the kernels' scratch
   * and workspaces together. A field lies past an older caller's struct_size
   * and is then not written. */
  uint64_t device_bytes;      /**< Bytes the session holds on its device now: on cuda, the memory
                                   pool's bytes in use (tensors and every kernel's scratch:
                                   cuDNN, cuBLASLt plans, reductions) plus the fixed cuBLASLt
                                   workspace; on cpu, current_bytes (scratch is not counted). */
  uint64_t device_peak_bytes; /**< Highest device_bytes since creation or the last reset (on
                                   cuda the pool's own high-water mark). The figure to compare
                                   with PyTorch's torch.cuda.max_memory_allocated. */
  uint64_t reserved_bytes;    /**< Bytes the session's memory pool has taken from the device now,
                                   in use or cached for reuse (plus the workspace); on cpu,
                                   current_bytes. */
  uint64_t reserved_peak_bytes; /**< Highest reserved_bytes since creation or the last reset;
                                     compare with torch.cuda.max_memory_reserved. */
  /* Since 0.9. */
  uint64_t graph_bytes; /**< Bytes the session's captured graphs (mixp_graph) keep beyond its
                             tensors: the memory their step used and released, held as their
                             private pool until mixp_graph_destroy (not in current_bytes). */
} mixp_memory_stats;

/**
 * Reads the session's tensor-memory statistics.
 * @param session The session.
 * @param[out] stats Filled on success; its struct_size must be set first.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_memory_stats_get(const mixp_session *session,
                                           mixp_memory_stats *stats);

/**
 * Sets the peaks (peak_bytes, device_peak_bytes, reserved_peak_bytes) to the
 * current values.
 * @param session The session.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_memory_stats_reset_peak(mixp_session *session);

/**
 * Counts the times the host has waited for the session's device so far: every
 * value read back (mixp_tensor_to_host, mixp_tensor_item, a loss printed, a
 * GradScaler scale queried) and every explicit wait. A cpu session has no
 * queue and always reports 0. Meant for tests and profiling: a GradScaler
 * training step (scale, backward, unscale, clip, step, update) adds none.
 * @param session The session.
 * @param[out] count Receives the count; written only on success.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL session or count;
 *         MIXP_ERR_STATE for a destroyed session (one its tensors keep alive).
 * @note Thread-safety: like every call on a session, not concurrently with
 *       other calls on it.
 */
MIXP_API mixp_status mixp_session_host_syncs(const mixp_session *session, uint64_t *count);

/** @} */

/** @defgroup tensor Tensors
 *  Reference-counted n-dimensional arrays. Views (reshape, transpose,
 *  permute, slice) share storage with their base.
 *  @{ */

/** Opaque tensor handle (reference-counted). */
typedef struct mixp_tensor mixp_tensor;

/** Element types. Values are explicit and append-only. */
typedef MIXP_ENUM(mixp_dtype) {
  MIXP_F32 = 0,   /**< IEEE binary32. */
  MIXP_F16 = 1,   /**< IEEE binary16. */
  MIXP_BF16 = 2,  /**< bfloat16 (binary32 with 8 mantissa bits). */
  MIXP_F64 = 3,   /**< IEEE binary64. */
  MIXP_I32 = 4,   /**< int32_t. */
  MIXP_I64 = 5,   /**< int64_t. */
  MIXP_U8 = 6,    /**< uint8_t. */
  MIXP_BOOL = 7,  /**< One byte, 0 or 1. */
  /** 8-bit float, OCP E4M3 "fn" (since 0.9): bias 7, 3 mantissa bits, no
   *  infinity; 0x7F/0xFF are NaN, the largest finite value is 448, the
   *  smallest subnormal 2^-9. A storage type: mixp_cast converts to and from
   *  it, views and copies take it, and the scaled products
   *  (mixp_scaled_matmul) compute with it; every other op fails with
   *  MIXP_ERR_DTYPE naming the op. */
  MIXP_F8E4M3 = 8,
  /** 8-bit float, OCP E5M2 (since 0.9): bias 15, 2 mantissa bits, IEEE-like
   *  (0x7C is inf, 0x7D-0x7F NaN, with sign); the largest finite value is
   *  57344, the smallest subnormal 2^-16. A storage type like MIXP_F8E4M3. */
  MIXP_F8E5M2 = 9
} mixp_dtype;

/**
 * Size of one element in bytes.
 * @param dtype The dtype.
 * @return 1, 2, 4 or 8; 0 for an unknown dtype. Thread-safe.
 */
MIXP_API size_t mixp_dtype_size(mixp_dtype dtype);

/**
 * Lowercase name of a dtype: "f32", "f16", "bf16", "f64", "i32", "i64",
 * "u8", "bool", "f8e4m3", "f8e5m2".
 * @param dtype The dtype.
 * @return A static string; "unknown" for an unknown dtype. Thread-safe.
 */
MIXP_API const char *mixp_dtype_name(mixp_dtype dtype);

/**
 * Creates a contiguous tensor holding a copy of host memory.
 * @param session The session that owns the result.
 * @param[in]  data   Host values in row-major order, @p nbytes long; copied.
 *                    May be NULL only when the tensor has no elements.
 * @param      nbytes Must equal numel(shape) * mixp_dtype_size(dtype).
 * @param dtype Element type of the tensor.
 * @param shape Sizes of the @p ndim dimensions.
 * @param ndim Number of entries in @p shape.
 * @param[out] out    Receives the tensor (owned: release it).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT (NULL pointers, bad ndim or
 *         negative dimension, unknown dtype, wrong nbytes).
 */
MIXP_API mixp_status mixp_tensor_from_host(mixp_session *session, const void *data,
                                           size_t nbytes, mixp_dtype dtype,
                                           const int64_t *shape, int ndim,
                                           mixp_tensor **out);

/** Called when a borrowed host buffer is no longer used by mixp. */
typedef void (*mixp_release_fn)(void *user_data);

/**
 * Wraps host memory as a tensor without copying (CPU sessions only). The
 * memory must stay valid, and not be freed, until @p on_release is called
 * (or, when @p on_release is NULL, until the last tensor or view that uses it
 * is released). mixp may write into it through in-place operations such as
 * optimizer steps on a borrowed parameter.
 * @param session The session that owns the result.
 * @param[in] data       Host memory, aligned to the dtype's size.
 * @param nbytes Size of @p data; must equal numel(shape) * mixp_dtype_size(dtype).
 * @param dtype Element type of the tensor.
 * @param shape Sizes of the @p ndim dimensions.
 * @param ndim Number of entries in @p shape.
 * @param     on_release Optional; called exactly once, from the thread that
 *                       drops the last reference, when mixp stops using @p data.
 * @param     user_data  Passed to @p on_release.
 * @param[out] out       Receives the tensor (owned: release it).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT as for mixp_tensor_from_host()
 *         or for misaligned data; MIXP_ERR_DEVICE on a non-CPU session.
 *         On failure @p on_release is not called.
 */
MIXP_API mixp_status mixp_tensor_borrow_host(mixp_session *session, void *data,
                                             size_t nbytes, mixp_dtype dtype,
                                             const int64_t *shape, int ndim,
                                             mixp_release_fn on_release,
                                             void *user_data, mixp_tensor **out);

/* DLPack (https://dmlc.github.io/dlpack/) exchange without copies. The
 * structs are dlpack.h's; this header only names their tags, so it does not
 * need dlpack.h and callers pass dlpack.h's own types. Both the legacy
 * DLManagedTensor (DLPack < 1.0) and DLManagedTensorVersioned (>= 1.0) are
 * accepted and produced. Element types: kDLFloat 16/32/64 (F16, F32, F64),
 * kDLBfloat 16 (BF16), kDLInt 32/64, kDLUInt 8, kDLBool 8, one lane.
 * Devices: kDLCPU and kDLCUDAHost for a cpu session, kDLCUDA and
 * kDLCUDAManaged with the session's ordinal for a cuda:N session. */
struct DLManagedTensor;
struct DLManagedTensorVersioned;

/**
 * Wraps a DLPack tensor as a mixp tensor without copying. On success mixp
 * owns @p managed: it calls `managed->deleter(managed)` exactly once (if the
 * deleter is not NULL), from the thread that drops the last tensor or view
 * using the memory; the producer must keep the memory valid until then. On
 * failure nothing is taken and the deleter is not called. Strides are
 * honoured (NULL strides mean compact row-major); mixp may write into the
 * memory (in-place operations, optimizer steps). The producer's pending work
 * on CUDA memory must be complete before the call (mixp's stream is its
 * own); the Python binding asks the producer for that.
 * @param session The session that owns the result; its device must be the
 *        tensor's.
 * @param managed The legacy managed tensor; ownership moves on success.
 * @param[out] out Receives the tensor (owned: release it).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL arguments, ndim
 *         outside [0, MIXP_MAX_DIMS], NULL shape, negative sizes or strides,
 *         sizes past mixp's limits, a NULL data pointer with elements, or
 *         data not aligned to the element size; MIXP_ERR_DTYPE for an element
 *         type mixp does not have (or lanes != 1); MIXP_ERR_DEVICE for a
 *         device other than the session's.
 */
MIXP_API mixp_status mixp_tensor_from_dlpack(mixp_session *session,
                                             struct DLManagedTensor *managed,
                                             mixp_tensor **out);

/**
 * mixp_tensor_from_dlpack() for a DLPack >= 1.0 managed tensor. Also fails
 * with MIXP_ERR_UNSUPPORTED for a major version other than 1 and with
 * MIXP_ERR_INVALID_ARGUMENT for a read-only tensor (DLPACK_FLAG_BITMASK_READ_ONLY:
 * mixp tensors are writable).
 * @param session The session that owns the result.
 * @param managed The versioned managed tensor; ownership moves on success.
 * @param[out] out Receives the tensor (owned: release it).
 * @return As mixp_tensor_from_dlpack(), and the above.
 */
MIXP_API mixp_status mixp_tensor_from_dlpack_versioned(mixp_session *session,
                                                       struct DLManagedTensorVersioned *managed,
                                                       mixp_tensor **out);

/**
 * Exports a tensor as a legacy DLPack managed tensor sharing its memory (no
 * copy): data points at the first element, strides are the tensor's (in
 * elements), the device is kDLCPU or kDLCUDA with the session's ordinal. The
 * consumer owns *@p out and must call its deleter exactly once; until then
 * the memory stays alive even after @p tensor is released. Writes through
 * either side are seen by the other. On a CUDA session the call first waits
 * for the session's queued work (one host synchronisation, counted by
 * mixp_session_host_syncs()), so the consumer may read the memory at once
 * from any stream.
 * @param tensor The tensor to share; borrowed during the call.
 * @param[out] out Receives the managed tensor (owned by the caller).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL arguments;
 *         MIXP_ERR_OUT_OF_MEMORY.
 */
MIXP_API mixp_status mixp_tensor_to_dlpack(const mixp_tensor *tensor,
                                           struct DLManagedTensor **out);

/**
 * mixp_tensor_to_dlpack() as a DLPack 1.0 DLManagedTensorVersioned (version
 * 1.0, flags 0: writable, not a copy).
 * @param tensor The tensor to share; borrowed during the call.
 * @param[out] out Receives the managed tensor (owned by the caller).
 * @return As mixp_tensor_to_dlpack().
 */
MIXP_API mixp_status mixp_tensor_to_dlpack_versioned(const mixp_tensor *tensor,
                                                     struct DLManagedTensorVersioned **out);

/**
 * Drops a managed tensor nobody consumed: calls `managed->deleter(managed)`
 * when the deleter is not NULL; NULL is a no-op. For hosts that hold DLPack
 * tensors without dlpack.h (language bindings: a capsule never consumed).
 * @param managed The managed tensor; invalid after the call.
 */
MIXP_API void mixp_dlpack_release(struct DLManagedTensor *managed);

/**
 * mixp_dlpack_release() for a DLPack >= 1.0 managed tensor.
 * @param managed The managed tensor; invalid after the call.
 */
MIXP_API void mixp_dlpack_release_versioned(struct DLManagedTensorVersioned *managed);

/**
 * Copies a tensor's values to host memory in row-major order (any strides).
 * @param tensor The tensor.
 * @param[out] dst    Receives the values.
 * @param      nbytes Must equal numel * element size.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL pointers or a wrong
 *         size.
 */
MIXP_API mixp_status mixp_tensor_to_host(const mixp_tensor *tensor, void *dst,
                                         size_t nbytes);

/**
 * Creates a tensor filled with zeros.
 * @param session The session that owns the result.
 * @param dtype Element type of the tensor.
 * @param shape Sizes of the @p ndim dimensions.
 * @param ndim Number of entries in @p shape.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_zeros(mixp_session *session, mixp_dtype dtype,
                                       const int64_t *shape, int ndim,
                                       mixp_tensor **out);

/**
 * Creates a tensor filled with ones.
 * @param session The session that owns the result.
 * @param dtype Element type of the tensor.
 * @param shape Sizes of the @p ndim dimensions.
 * @param ndim Number of entries in @p shape.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_ones(mixp_session *session, mixp_dtype dtype,
                                      const int64_t *shape, int ndim,
                                      mixp_tensor **out);

/**
 * Creates a tensor filled with @p value, converted to @p dtype with
 * round-to-nearest-even (integers: truncation toward zero).
 * @param session The session that owns the result.
 * @param dtype Element type of the tensor.
 * @param shape Sizes of the @p ndim dimensions.
 * @param ndim Number of entries in @p shape.
 * @param value The fill value.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_full(mixp_session *session, mixp_dtype dtype,
                                      const int64_t *shape, int ndim,
                                      double value, mixp_tensor **out);

/**
 * Creates a 1-D tensor with values start, start+step, ... < end (> end for a
 * negative step), like numpy.arange.
 * @param session The session that owns the result.
 * @param dtype Element type of the tensor.
 * @param start First value.
 * @param end Bound that is not reached.
 * @param step Distance between values; non-zero.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for step 0, non-finite bounds or
 *         a range whose direction contradicts the step.
 */
MIXP_API mixp_status mixp_tensor_arange(mixp_session *session, mixp_dtype dtype,
                                        double start, double end, double step,
                                        mixp_tensor **out);

/**
 * Creates a float tensor of uniform values in [0, 1) drawn from the session's
 * Philox stream (the stream advances).
 * @param session The session that owns the result.
 * @param dtype Element type of the tensor.
 * @param shape Sizes of the @p ndim dimensions.
 * @param ndim Number of entries in @p shape.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK; MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_tensor_rand(mixp_session *session, mixp_dtype dtype,
                                      const int64_t *shape, int ndim,
                                      mixp_tensor **out);

/**
 * Creates a float tensor of standard-normal values (Box-Muller over the
 * session's Philox stream).
 * @param session The session that owns the result.
 * @param dtype Element type of the tensor.
 * @param shape Sizes of the @p ndim dimensions.
 * @param ndim Number of entries in @p shape.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK; MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_tensor_randn(mixp_session *session, mixp_dtype dtype,
                                       const int64_t *shape, int ndim,
                                       mixp_tensor **out);

/**
 * Adds a reference.
 * @param tensor The tensor.
 * @return @p tensor itself (so `b = mixp_tensor_retain(a)` reads naturally),
 *         or NULL for NULL. Thread-safe.
 */
MIXP_API mixp_tensor *mixp_tensor_retain(mixp_tensor *tensor);

/**
 * Drops a reference; the tensor is freed when the last one goes.
 * @param tensor The tensor, or NULL (no-op). Thread-safe.
 */
MIXP_API void mixp_tensor_release(mixp_tensor *tensor);

/** @param tensor The tensor.
 *  @return The tensor's dtype; MIXP_F32 for NULL (and the error is set). */
MIXP_API mixp_dtype mixp_tensor_dtype(const mixp_tensor *tensor);

/** @param tensor The tensor.
 *  @return The number of dimensions, or -1 for NULL. */
MIXP_API int mixp_tensor_ndim(const mixp_tensor *tensor);

/**
 * Size of one dimension; negative @p dim counts from the end.
 * @param tensor The tensor.
 * @param dim The dimension; negative counts from the end.
 * @return The size, or -1 for NULL or an out-of-range dim (error set).
 */
MIXP_API int64_t mixp_tensor_dim(const mixp_tensor *tensor, int dim);

/**
 * Stride of one dimension in elements; negative @p dim counts from the end.
 * @param tensor The tensor.
 * @param dim The dimension; negative counts from the end.
 * @return The stride, or 0 for NULL or an out-of-range dim (error set).
 */
MIXP_API int64_t mixp_tensor_stride(const mixp_tensor *tensor, int dim);

/**
 * Copies the shape into a caller buffer.
 * @param tensor The tensor.
 * @param[out] shape    At least @p capacity entries; receives ndim sizes.
 * @param      capacity Entries available in @p shape (MIXP_MAX_DIMS always fits).
 * @param[out] ndim     Receives the number of dimensions.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or too small a buffer.
 */
MIXP_API mixp_status mixp_tensor_shape(const mixp_tensor *tensor, int64_t *shape,
                                       int capacity, int *ndim);

/** @param tensor The tensor.
 *  @return The number of elements, or -1 for NULL. */
MIXP_API int64_t mixp_tensor_numel(const mixp_tensor *tensor);

/** @param tensor The tensor.
 *  @return 1 if the tensor is row-major contiguous, 0 otherwise or for NULL. */
MIXP_API int mixp_tensor_is_contiguous(const mixp_tensor *tensor);

/**
 * The session a tensor belongs to.
 * @param tensor The tensor.
 * @return Borrowed pointer (do not destroy), or NULL for NULL.
 */
MIXP_API mixp_session *mixp_tensor_session(const mixp_tensor *tensor);

/**
 * Reads a one-element tensor as a double.
 * @param tensor The tensor.
 * @param[out] value Receives the value.
 * @return MIXP_OK; MIXP_ERR_SHAPE if the tensor has more than one element.
 */
MIXP_API mixp_status mixp_tensor_item(const mixp_tensor *tensor, double *value);

/**
 * Copies the values of @p src into @p dst in place (converting the dtype,
 * broadcasting @p src). Not recorded by autograd; @p dst must not require
 * grad unless grad mode is off.
 * @param dst Destination tensor, written in place.
 * @param src Source tensor; broadcast to @p dst.
 * @return MIXP_OK; MIXP_ERR_SHAPE if @p src does not broadcast to @p dst;
 *         MIXP_ERR_STATE if @p dst is a leaf that requires grad while grad
 *         mode is on.
 */
MIXP_API mixp_status mixp_tensor_copy_(mixp_tensor *dst, const mixp_tensor *src);

/** @} */

/** @defgroup autograd Autograd
 *  @{ */

/**
 * Marks a leaf tensor as one whose gradient is wanted (or not).
 * @param tensor The tensor.
 * @param requires_grad 1 to require a gradient, 0 not to.
 * @return MIXP_OK; MIXP_ERR_DTYPE for a non-float tensor; MIXP_ERR_STATE for a
 *         non-leaf tensor (one produced by a recorded operation).
 */
MIXP_API mixp_status mixp_tensor_set_requires_grad(mixp_tensor *tensor,
                                                   int requires_grad);

/** @param tensor The tensor.
 *  @return 1 if the tensor requires grad, else 0 (also for NULL). */
MIXP_API int mixp_tensor_requires_grad(const mixp_tensor *tensor);

/** @param tensor The tensor.
 *  @return 1 if the tensor is a leaf of the graph (made by the user, not by a
 *          recorded operation), else 0 (also for NULL). */
MIXP_API int mixp_tensor_is_leaf(const mixp_tensor *tensor);

/**
 * The gradient accumulated in a leaf tensor.
 * @param tensor The tensor.
 * @param[out] out Receives a new reference to the gradient (release it), or
 *                 NULL if no gradient has been accumulated.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_grad(const mixp_tensor *tensor, mixp_tensor **out);

/**
 * Drops the accumulated gradient (the next backward starts from none).
 * @param tensor The tensor.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_zero_grad(mixp_tensor *tensor);

/**
 * A tensor sharing storage with @p tensor but cut off from the graph.
 * @param tensor The tensor.
 * @param[out] out Receives the new tensor (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_detach(const mixp_tensor *tensor, mixp_tensor **out);

/**
 * Back-propagates from @p loss, accumulating into the .grad of every leaf
 * that requires grad, then frees the graph (saved tensors are released).
 * @param loss      The tensor to differentiate; must require grad.
 * @param seed_grad The gradient of @p loss (same shape; converted to its
 *                  dtype); NULL means 1 and requires a one-element @p loss.
 * @return MIXP_OK; MIXP_ERR_STATE if @p loss does not require grad or the
 *         graph was already freed by an earlier backward (nothing is
 *         accumulated then), or inside a checkpoint region;
 *         MIXP_ERR_SHAPE for a wrong seed shape or a non-scalar loss without
 *         a seed.
 */
MIXP_API mixp_status mixp_backward(mixp_tensor *loss, const mixp_tensor *seed_grad);

/** @} */

/** @defgroup checkpoint Activation checkpointing
 *  A checkpoint region trades compute for memory: the operations called
 *  between mixp_checkpoint_begin() and mixp_checkpoint_end() keep no
 *  activations for backward. Instead the region records an op tape (each
 *  operation the caller makes, with its non-tensor arguments and its tensor
 *  inputs by identity) and mixp_checkpoint_end() attaches one graph node
 *  (op name "checkpoint") to the region's outputs. When backward reaches it,
 *  the node recomputes the region by replaying the tape, with grad mode on,
 *  then back-propagates through the recomputed operations. No host callback
 *  runs, so regions work the same from every binding.
 *
 *  Guarantees: the replay runs the same kernels in the same order on the
 *  same values, draws each random operation (dropout) from the same Philox
 *  position as in forward, and applies the casts autocast made in forward
 *  (whatever autocast state is active during backward), so gradients are
 *  bitwise identical to those computed without the region. (The one
 *  exception: a value that receives more than two gradient contributions,
 *  some inside and some outside the region, may have them summed in another
 *  order.)
 *
 *  Typical use is one region per block of a deep model (a residual block, a
 *  transformer layer): the forward pass then keeps only the blocks' inputs
 *  and outputs, and backward holds one block's activations at a time. A
 *  single region around a whole model saves nothing at the peak, since its
 *  replay rebuilds every activation at once.
 *
 *  Rules:
 *  - Tensors made before the region, or inside it by anything other than an
 *    operation (mixp_tensor_from_host(), mixp_tensor_detach(), ...), are the
 *    region's inputs: the region keeps them alive until backward, and they
 *    must not be modified in place before then.
 *  - Every value made inside the region and used after it must be passed to
 *    mixp_checkpoint_end() as an output; other values carry no gradient
 *    history, like values computed in a no-grad region.
 *  - Regions do not nest. Any operation and mixp_module_forward() can run
 *    inside one; mixp_backward() and mixp_optimizer_step() are refused
 *    there (MIXP_ERR_STATE). mixp_tensor_copy_() into a tensor the region
 *    reads (before or after the copy), and calls that cannot be replayed
 *    (loss scaling, O2 decorate), make mixp_checkpoint_end() fail with
 *    MIXP_ERR_UNSUPPORTED; a copy into a tensor the region never reads (a
 *    layer's batch counter) is done once, in forward.
 *  - Batch normalisation inside a region updates its running statistics
 *    once, in forward; the replay does not repeat the update.
 *  - The outputs can be back-propagated once, like any graph.
 *  @{ */

/**
 * Opens a checkpoint region on @p session: until mixp_checkpoint_end(),
 * operations on its tensors record no autograd graph and keep no saved
 * activations; they are recorded on the region's op tape instead.
 * mixp_grad_enabled() reports 0 inside the region.
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL session;
 *         MIXP_ERR_STATE for a destroyed session (one its tensors keep alive)
 *         or if a region is already open on the session.
 */
MIXP_API mixp_status mixp_checkpoint_begin(mixp_session *session);

/**
 * Closes the open region and gives @p outputs a gradient history through
 * the region: one "checkpoint" node whose backward replays the op tape.
 * Outputs that were not made inside the region are left as they are, and
 * no node is made when grad mode was off at mixp_checkpoint_begin() or no
 * input of the region requires grad.
 * @param session The session.
 * @param outputs The values of the region used after it (borrowed; each
 *                must belong to @p session). May be NULL when @p n is 0.
 * @param n       Number of entries in @p outputs (>= 0).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL session, a NULL or
 *         invalid outputs array or entry, or a negative @p n (the region
 *         stays open); MIXP_ERR_STATE when no region is open or a no-grad
 *         region opened inside it is still open (the region stays open);
 *         MIXP_ERR_DEVICE for an output of another session (the region stays
 *         open); MIXP_ERR_UNSUPPORTED, naming the operation, when the region
 *         ran something that cannot be replayed (the region is closed and
 *         the outputs carry no gradient history).
 */
MIXP_API mixp_status mixp_checkpoint_end(mixp_session *session, mixp_tensor *const *outputs,
                                         int n);

/**
 * Discards the open region, for error paths: when an operation inside a
 * region fails, abort the region so that begin and end stay balanced. The
 * values made inside the region keep no gradient history (like values
 * computed in a no-grad region), the tape and the region's hold on its
 * inputs are released, and grad mode is what it was at
 * mixp_checkpoint_begin(): no-grad regions opened inside the region and still
 * open are closed with it.
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL session;
 *         MIXP_ERR_STATE for a destroyed session (one its tensors keep alive)
 *         or when no region is open.
 */
MIXP_API mixp_status mixp_checkpoint_abort(mixp_session *session);

/** @} */

/** @defgroup ops Operations
 *  Every operation has a stable lowercase name (in parentheses below) used in
 *  error messages. Operations on floating tensors accept F32, F64, F16 and
 *  BF16; half types compute in fp32 and round the result to nearest-even.
 *  Binary operations broadcast like numpy and require equal dtypes. Every
 *  result is returned through @p out as a new tensor owned by the caller.
 *  Errors: MIXP_ERR_INVALID_ARGUMENT (NULL, bad dims), MIXP_ERR_SHAPE,
 *  MIXP_ERR_DTYPE, MIXP_ERR_DEVICE (tensors from different sessions).
 *  @{ */

/** (cast) Converts to another dtype: floats round to nearest-even with
 *  overflow to +-inf; float to integer truncates toward zero. Differentiable
 *  between float types (F32, F64, F16, BF16; not into or out of fp8).
 *
 *  Into MIXP_F8E4M3 and MIXP_F8E5M2, every value rounds once to nearest,
 *  ties to even, from its exact value; NaN stays NaN with its sign (0x7F or
 *  0xFF). Past the largest finite value E4M3 saturates (+-inf and everything
 *  above 448 become +-448) and E5M2 overflows to +-inf (from 61440, the
 *  midpoint between 57344 and 2^16, up). From F32, F16 and BF16 this is bit
 *  for bit PyTorch's .to(torch.float8_e4m3fn) / .to(torch.float8_e5m2)
 *  (tests/golden/fp8_casts_vs_torch.py with PyTorch 2.15: every F16 and BF16
 *  pattern and 90.8 million F32 values, 0 mismatches). From F64 mixp rounds once,
 *  where PyTorch rounds to F32 first: the two differ only for doubles within
 *  2^-24 (relative) of a midpoint between two fp8 values. Out of fp8 every
 *  value is exact; NaNs come out quiet with their sign.
 *  @param x Input tensor.
 *  @param dtype The target dtype.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_cast(const mixp_tensor *x, mixp_dtype dtype, mixp_tensor **out);

/** (reshape) A view with a new shape of equal numel; one entry may be -1.
 *  Copies when the strides do not allow a view.
 *  @param x Input tensor.
 *  @param shape The new sizes; one entry may be -1.
 *  @param ndim Number of entries in @p shape.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_reshape(const mixp_tensor *x, const int64_t *shape, int ndim,
                                  mixp_tensor **out);

/** (transpose) A view with dimensions @p dim0 and @p dim1 swapped.
 *  @param x Input tensor.
 *  @param dim0 First dimension.
 *  @param dim1 Second dimension.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_transpose(const mixp_tensor *x, int dim0, int dim1,
                                    mixp_tensor **out);

/** (permute) A view with dimensions reordered: output dim i is input dim
 *  dims[i]; @p ndim must equal the tensor's ndim.
 *  @param x Input tensor.
 *  @param dims The new order of the dimensions.
 *  @param ndim Number of entries in @p dims.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_permute(const mixp_tensor *x, const int *dims, int ndim,
                                  mixp_tensor **out);

/** (slice) A view of elements start, start+step, ... < end along @p dim.
 *  Negative start/end count from the end; both are clamped to the size;
 *  @p step must be >= 1.
 *  @param x Input tensor.
 *  @param dim The dimension to slice.
 *  @param start First index.
 *  @param end End index (excluded).
 *  @param step Step (>= 1).
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_slice(const mixp_tensor *x, int dim, int64_t start, int64_t end,
                                int64_t step, mixp_tensor **out);

/** (contiguous) A row-major copy, or a new reference if already contiguous.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_contiguous(const mixp_tensor *x, mixp_tensor **out);

/** (matmul) Matrix product of 2-D tensors [M,K] x [K,N], or batched when
 *  either has more dims (batch dims broadcast), like numpy.matmul.
 *  @param a Left matrix (or batch of matrices).
 *  @param b Right matrix (or batch of matrices).
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_matmul(const mixp_tensor *a, const mixp_tensor *b,
                                 mixp_tensor **out);

/** (bmm) Batched matrix product [B,M,K] x [B,K,N] -> [B,M,N].
 *  @param a [B, M, K] tensor.
 *  @param b [B, K, N] tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_bmm(const mixp_tensor *a, const mixp_tensor *b,
                              mixp_tensor **out);

/** (linear) y = x W^T + b with x [..., in], W [out, in], b [out] or NULL.
 *  @param x Input [..., in].
 *  @param weight Weight [out, in].
 *  @param bias Bias [out], or NULL.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_linear(const mixp_tensor *x, const mixp_tensor *weight,
                                 const mixp_tensor *bias, mixp_tensor **out);

/** Flag of mixp_scaled_matmul(): let the device accumulate with fewer bits
 *  where it can (cuBLASLt's fast accumulation on the GPU; the CPU ignores
 *  it). Faster; no longer exact up to fp32 accumulation. */
#define MIXP_SCALED_MATMUL_FAST_ACCUM 1

/** (scaled_matmul) The product of two fp8 matrices with per-tensor scales
 *  (since 0.9), Transformer Engine's and torch._scaled_mm's GEMM:
 *
 *      D = (scale_a * scale_b) * (A x B) + bias
 *
 *  where A [M,K] and B [K,N] hold the quantised values (MIXP_F8E4M3 or
 *  MIXP_F8E5M2, not both E5M2) and scale_a, scale_b are the dequantisation
 *  scales: A's real values are scale_a * A. Precisely: the products A[i,l] *
 *  B[l,j] (exact in fp32) are summed in fp32; the sum is multiplied by the
 *  fp32 product scale_a * scale_b (one rounding each), bias[j] is added in
 *  fp32, and the result is rounded once to @p out_dtype. On the CPU this is
 *  exact up to the fp32 accumulation (the operands run on the bf16 units,
 *  every fp8 value being exact in bf16); on the GPU cuBLASLt computes the
 *  same terms, in an order of its own.
 *
 *  The scales are read where they live, on the device, never by the host
 *  (no synchronisation): the call cannot check their values. A scale that
 *  is not finite and positive (zero, negative, NaN, inf) makes every
 *  element of D, and the amax, NaN, so the mistake surfaces in the numerics
 *  checker and in a GradScaler's found-inf instead of as plausible numbers.
 *  Not differentiable: fp8 tensors carry no gradient, and scales or a bias
 *  that require grad are refused (MIXP_ERR_UNSUPPORTED; detach them).
 *
 *  GPU: cuBLASLt's FP8 GEMM, on sm_89 (Ada) or newer, with M, N and K
 *  multiples of 16; other GPUs and shapes fail with MIXP_ERR_UNSUPPORTED
 *  and the reason (B is transposed into the TN layout cuBLASLt's FP8 needs
 *  by a kernel of its own, unless it is already a transposed view).
 *
 *  @param a       [M,K], MIXP_F8E4M3 or MIXP_F8E5M2 (any strides); borrowed.
 *  @param scale_a One-element F32 tensor of the same session; borrowed.
 *  @param b       [K,N], MIXP_F8E4M3 or MIXP_F8E5M2 (any strides); borrowed.
 *  @param scale_b One-element F32 tensor of the same session; borrowed.
 *  @param bias    NULL, or [N]: MIXP_BF16 (for F32 and BF16 outputs) or
 *                 MIXP_F16 (for an F16 output), as cuBLASLt's FP8 epilogue
 *                 takes it; borrowed.
 *  @param out_dtype MIXP_F32, MIXP_F16 or MIXP_BF16.
 *  @param flags   0 or MIXP_SCALED_MATMUL_FAST_ACCUM.
 *  @param amax    NULL, or a one-element F32 tensor of the same session that
 *                 receives max |D| over D as stored (NaN if D holds a NaN),
 *                 on the device; borrowed, written in place.
 *  @param[out] out Receives D [M,N] of out_dtype (owned: release it).
 *  @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT (NULL, unknown flags),
 *          MIXP_ERR_DTYPE (a or b not fp8 or both E5M2, scales or amax not
 *          F32, bias of the wrong dtype, out_dtype not F32/F16/BF16),
 *          MIXP_ERR_SHAPE (inner dimensions, bias length, scales or amax
 *          not one element), MIXP_ERR_DEVICE (tensors of different
 *          sessions), MIXP_ERR_UNSUPPORTED (see GPU above; scales or bias
 *          requiring grad). On failure nothing is written, amax included.
 *  @note Thread-safety: like every call on a session, not concurrently with
 *        other calls on it. */
MIXP_API mixp_status mixp_scaled_matmul(const mixp_tensor *a, const mixp_tensor *scale_a,
                                        const mixp_tensor *b, const mixp_tensor *scale_b,
                                        const mixp_tensor *bias, mixp_dtype out_dtype,
                                        unsigned flags, mixp_tensor *amax, mixp_tensor **out);

/** (add) a + b.
 *  @param a Left operand.
 *  @param b Right operand.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_add(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);
/** (sub) a - b.
 *  @param a Left operand.
 *  @param b Right operand.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_sub(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);
/** (mul) a * b.
 *  @param a Left operand.
 *  @param b Right operand.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_mul(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);
/** (div) a / b.
 *  @param a Left operand.
 *  @param b Right operand.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_div(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);

/** (add_scalar) x + s.
 *  @param x Input tensor.
 *  @param s The scalar.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_add_scalar(const mixp_tensor *x, double s, mixp_tensor **out);
/** (mul_scalar) x * s.
 *  @param x Input tensor.
 *  @param s The scalar.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_mul_scalar(const mixp_tensor *x, double s, mixp_tensor **out);
/** (rsub_scalar) s - x.
 *  @param x Input tensor.
 *  @param s The scalar.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_rsub_scalar(const mixp_tensor *x, double s, mixp_tensor **out);
/** (rdiv_scalar) s / x.
 *  @param x Input tensor.
 *  @param s The scalar.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_rdiv_scalar(const mixp_tensor *x, double s, mixp_tensor **out);

/** (neg) -x.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_neg(const mixp_tensor *x, mixp_tensor **out);
/** (exp) e^x.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_exp(const mixp_tensor *x, mixp_tensor **out);
/** (log) natural logarithm.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_log(const mixp_tensor *x, mixp_tensor **out);
/** (sqrt) square root.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_sqrt(const mixp_tensor *x, mixp_tensor **out);
/** (pow) x^exponent for a scalar exponent.
 *  @param x Input tensor.
 *  @param exponent The scalar exponent.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_pow(const mixp_tensor *x, double exponent, mixp_tensor **out);
/** (sum) Sum over @p dims (each in [-ndim, ndim), no repeats); @p ndims = 0
 *  (dims may be NULL) sums everything. @p keepdim keeps reduced dims as 1.
 *  @param x Input tensor.
 *  @param dims Dimensions to reduce (may be NULL when @p ndims is 0).
 *  @param ndims Number of entries in @p dims.
 *  @param keepdim 1 keeps reduced dimensions with size 1, 0 drops them.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_sum(const mixp_tensor *x, const int *dims, int ndims, int keepdim,
                              mixp_tensor **out);
/** (mean) Mean over @p dims, as mixp_sum().
 *  @param x Input tensor.
 *  @param dims Dimensions to reduce (may be NULL when @p ndims is 0).
 *  @param ndims Number of entries in @p dims.
 *  @param keepdim 1 keeps reduced dimensions with size 1, 0 drops them.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_mean(const mixp_tensor *x, const int *dims, int ndims, int keepdim,
                               mixp_tensor **out);

/** (max) Maximum along @p dim. @p values receives the maxima (owned); @p indices
 *  (may be NULL) receives their I64 positions (owned; the first on ties).
 *  The gradient flows to the first maximal position.
 *  @param x Input tensor.
 *  @param dim The dimension to reduce.
 *  @param keepdim 1 keeps reduced dimensions with size 1, 0 drops them.
 *  @param[out] values Receives the maxima (owned).
 *  @param[out] indices NULL, or receives the I64 positions (owned).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_max(const mixp_tensor *x, int dim, int keepdim,
                              mixp_tensor **values, mixp_tensor **indices);
/** (argmax) I64 positions of the maxima along @p dim (first on ties).
 *  @param x Input tensor.
 *  @param dim The dimension to reduce.
 *  @param keepdim 1 keeps reduced dimensions with size 1, 0 drops them.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_argmax(const mixp_tensor *x, int dim, int keepdim,
                                 mixp_tensor **out);

/** (softmax) Softmax along @p dim.
 *  @param x Input tensor.
 *  @param dim The dimension.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_softmax(const mixp_tensor *x, int dim, mixp_tensor **out);
/** (log_softmax) Log of the softmax along @p dim, computed stably.
 *  @param x Input tensor.
 *  @param dim The dimension.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_log_softmax(const mixp_tensor *x, int dim, mixp_tensor **out);

/** How a loss reduces over its elements. */
typedef MIXP_ENUM(mixp_reduction) {
  MIXP_REDUCTION_MEAN = 0,  /**< Mean over the (non-ignored) elements. */
  MIXP_REDUCTION_SUM = 1,   /**< Sum. */
  MIXP_REDUCTION_NONE = 2   /**< One value per element/sample. */
} mixp_reduction;

/** The conventional ignore_index value (PyTorch's default). */
#define MIXP_IGNORE_INDEX_DEFAULT (-100)

/** (cross_entropy) Softmax cross-entropy of @p logits [N, C] against I64 class
 *  indices @p target [N]. Targets equal to @p ignore_index contribute nothing
 *  and are excluded from the mean; other targets must be in [0, C). On a cpu
 *  session an out-of-range target fails this call (MIXP_ERR_INVALID_ARGUMENT
 *  naming its position and value). On a cuda session the targets are checked
 *  on the device, without waiting: the call succeeds (the bad row's loss is
 *  NaN) and the next call that waits for the device (mixp_tensor_item,
 *  mixp_tensor_to_host, ...) fails with that error, "(detected on the
 *  device)", before writing its output; the session stays usable.
 *  @param logits Logits [N, C].
 *  @param target I64 class indices [N].
 *  @param reduction How the loss reduces over its elements.
 *  @param ignore_index Target value to ignore (e.g. MIXP_IGNORE_INDEX_DEFAULT).
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_cross_entropy(const mixp_tensor *logits, const mixp_tensor *target,
                                        mixp_reduction reduction, int64_t ignore_index,
                                        mixp_tensor **out);

/** Options of mixp_cross_entropy_ex(); fill with mixp_cross_entropy_options_init(). */
typedef struct mixp_cross_entropy_options {
  uint32_t struct_size;        /**< sizeof(mixp_cross_entropy_options). */
  mixp_reduction reduction;    /**< MIXP_REDUCTION_MEAN. */
  int64_t ignore_index;        /**< MIXP_IGNORE_INDEX_DEFAULT (-100). */
  /** In [0, 1] (0): PyTorch's label smoothing. The target distribution is
   *  (1 - e) on the class plus e / C on every class, so a row's loss is
   *  (1 - e) (-log p[target]) + e mean_c(-log p[c]); ignored rows stay 0 and
   *  out of the mean. */
  double label_smoothing;
} mixp_cross_entropy_options;

/**
 * The entry point behind mixp_cross_entropy_options_init(): fills the first @p
 * size bytes of @p options with the defaults and sets struct_size to @p size,
 * the size of the caller's struct. Call it directly only where the inline
 * function cannot be used (a host that resolves functions by name: dlsym, an
 * FFI). Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_cross_entropy_options) in the caller's mixp.h: one of
 *             the sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_cross_entropy_options_init_sized(mixp_cross_entropy_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_cross_entropy_options_init(mixp_cross_entropy_options *options);
#else
/**
 * Fills @p options with the defaults above and sets struct_size. Inline since
 * 0.7: it passes the size of the program's own struct to
 * mixp_cross_entropy_options_init_sized(), so it never writes past it,
 * whichever library runs the program (see "Options structs" in the
 * introduction).
 * @param[out] options NULL is ignored. Thread-safe.
 */
MIXP_INLINE void mixp_cross_entropy_options_init(mixp_cross_entropy_options *options) {
  if (options) (void)mixp_cross_entropy_options_init_sized(options, sizeof *options);
}
#endif

/** (cross_entropy) mixp_cross_entropy() with options: label smoothing
 *  beside the reduction and ignore_index. label_smoothing = 0 gives the
 *  results of mixp_cross_entropy() bit for bit.
 *  @param logits Logits [N, C].
 *  @param target I64 class indices [N].
 *  @param options NULL for the defaults; otherwise validated field by field
 *                 (a wrong struct_size, an unknown reduction or a
 *                 label_smoothing outside [0, 1] is MIXP_ERR_INVALID_ARGUMENT).
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_cross_entropy_ex(const mixp_tensor *logits, const mixp_tensor *target,
                                           const mixp_cross_entropy_options *options,
                                           mixp_tensor **out);
/** (mse_loss) Mean (or sum, or none) of (a - b)^2; shapes must be equal.
 *  @param a First input.
 *  @param b Second input (same shape as @p a).
 *  @param reduction How the loss reduces over its elements.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_mse_loss(const mixp_tensor *a, const mixp_tensor *b,
                                   mixp_reduction reduction, mixp_tensor **out);
/** (dropout) Zeroes each element with probability @p p (Philox stream of the
 *  session) and scales the rest by 1/(1-p); identity when @p training is 0 or
 *  p = 0. @p p must be in [0, 1).
 *  @param x Input tensor.
 *  @param p Drop probability in [0, 1).
 *  @param training 1 applies dropout, 0 is the identity.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_dropout(const mixp_tensor *x, double p, int training,
                                  mixp_tensor **out);
/** (cat) Concatenates @p n >= 1 tensors of equal dtype along @p dim; other dims
 *  must match.
 *  @param tensors The @p n tensors to join (borrowed).
 *  @param n Number of tensors (>= 1).
 *  @param dim The dimension to join along.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops). */
MIXP_API mixp_status mixp_cat(const mixp_tensor *const *tensors, int n, int dim,
                              mixp_tensor **out);

/** @} */

/** @defgroup activations Activations
 *  Elementwise nonlinearities, with the conventions of the @ref ops group: any float
 *  dtype (half types compute in fp32 and round once), the result a new tensor
 *  owned by the caller. Errors: MIXP_ERR_INVALID_ARGUMENT (NULL),
 *  MIXP_ERR_DTYPE (not a float tensor).
 *  @{ */

/** (relu) max(x, 0).
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_relu(const mixp_tensor *x, mixp_tensor **out);

/** Which formula mixp_gelu() uses. */
typedef MIXP_ENUM(mixp_gelu_approx) {
  MIXP_GELU_ERF = 0,   /**< x/2 (1 + erf(x / sqrt 2)), PyTorch's default. */
  MIXP_GELU_TANH = 1   /**< x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
} mixp_gelu_approx;

/** (gelu) Gaussian error linear unit.
 *  @param x Input tensor.
 *  @param approx Which formula to use.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_gelu(const mixp_tensor *x, mixp_gelu_approx approx,
                               mixp_tensor **out);
/** (gelu_tanh) GELU's tanh approximation, x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
 *  PyTorch's gelu(x, approximate='tanh') (GPT-2's activation); its gradient
 *  is the exact derivative of that formula. mixp_gelu(x, MIXP_GELU_TANH, out)
 *  is this op too (op name "gelu_tanh" in profiles, op statistics and
 *  autocast policies).
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_gelu_tanh(const mixp_tensor *x, mixp_tensor **out);
/** (sigmoid) 1 / (1 + e^-x).
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_sigmoid(const mixp_tensor *x, mixp_tensor **out);
/** (tanh) hyperbolic tangent.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_tanh(const mixp_tensor *x, mixp_tensor **out);
/** (hardswish) x * relu6(x + 3) / 6.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_hardswish(const mixp_tensor *x, mixp_tensor **out);
/** (hardsigmoid) relu6(x + 3) / 6.
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_hardsigmoid(const mixp_tensor *x, mixp_tensor **out);
/** (silu) x * sigmoid(x).
 *  @param x Input tensor.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref activations). */
MIXP_API mixp_status mixp_silu(const mixp_tensor *x, mixp_tensor **out);

/** @} */

/** @defgroup ops_nn Convolution, normalisation, pooling and attention
 *  The operations of convolutional networks and transformers. Same
 *  conventions as @ref ops "Operations": float dtypes F32/F64/F16/BF16, results owned by
 *  the caller, errors naming the argument.
 *  @{ */

/** Memory layout of 4-D image tensors. */
typedef MIXP_ENUM(mixp_layout) {
  MIXP_NCHW = 0,  /**< [N, C, H, W] (PyTorch's default). */
  MIXP_NHWC = 1   /**< [N, H, W, C] (channels last; Tensor Core friendly). */
} mixp_layout;

/** Geometry of mixp_conv2d(); fill with mixp_conv2d_options_init(). */
typedef struct mixp_conv2d_options {
  uint32_t struct_size;      /**< sizeof(mixp_conv2d_options). */
  int64_t stride_h;          /**< Vertical stride (default 1). */
  int64_t stride_w;          /**< Horizontal stride (default 1). */
  int64_t pad_h;             /**< Zero padding on top and bottom (default 0). */
  int64_t pad_w;             /**< Zero padding left and right (default 0). */
  int64_t dilation_h;        /**< Vertical dilation (default 1). */
  int64_t dilation_w;        /**< Horizontal dilation (default 1). */
  int64_t groups;            /**< Channel groups; groups == C_in is depthwise (default 1). */
  mixp_layout layout;        /**< Layout of x and of the result (default NCHW). The weight is
                                  always [C_out, C_in/groups, kH, kW]. */
} mixp_conv2d_options;

/**
 * The entry point behind mixp_conv2d_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_conv2d_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_conv2d_options_init_sized(mixp_conv2d_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_conv2d_options_init(mixp_conv2d_options *options);
#else
/**
 * Fills @p options with defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_conv2d_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored.
 */
MIXP_INLINE void mixp_conv2d_options_init(mixp_conv2d_options *options) {
  if (options) (void)mixp_conv2d_options_init_sized(options, sizeof *options);
}
#endif

/** (conv2d) 2-D convolution (cross-correlation, as PyTorch): x [N,C_in,H,W]
 *  (or NHWC), weight [C_out, C_in/groups, kH, kW], bias [C_out] or NULL;
 *  @p options NULL for the defaults.
 *  @param x Input [N, C_in, H, W] (or NHWC).
 *  @param weight Weight [C_out, C_in/groups, kH, kW].
 *  @param bias Bias [C_out], or NULL.
 *  @param options Geometry, or NULL for the defaults.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_conv2d(const mixp_tensor *x, const mixp_tensor *weight,
                                 const mixp_tensor *bias, const mixp_conv2d_options *options,
                                 mixp_tensor **out);

/** Geometry of the 2-D pooling ops; fill with mixp_pool2d_options_init(). */
typedef struct mixp_pool2d_options {
  uint32_t struct_size;   /**< sizeof(mixp_pool2d_options). */
  int64_t kernel_h;       /**< Window height (default 2). */
  int64_t kernel_w;       /**< Window width (default 2). */
  int64_t stride_h;       /**< Vertical stride (default 0 = kernel_h). */
  int64_t stride_w;       /**< Horizontal stride (default 0 = kernel_w). */
  int64_t pad_h;          /**< Implicit padding (-inf for max, excluded or zero for avg; default 0). */
  int64_t pad_w;          /**< See pad_h. */
  int count_include_pad;  /**< avg_pool2d: count padded zeros in the divisor (default 1, as PyTorch). */
  mixp_layout layout;     /**< Layout of x and of the result (default NCHW). */
} mixp_pool2d_options;

/**
 * The entry point behind mixp_pool2d_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_pool2d_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_pool2d_options_init_sized(mixp_pool2d_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_pool2d_options_init(mixp_pool2d_options *options);
#else
/**
 * Fills @p options with defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_pool2d_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored.
 */
MIXP_INLINE void mixp_pool2d_options_init(mixp_pool2d_options *options) {
  if (options) (void)mixp_pool2d_options_init_sized(options, sizeof *options);
}
#endif

/** (max_pool2d) Maximum over windows; the gradient goes to the first maximum.
 *  @param x Input tensor.
 *  @param options Window geometry, or NULL for the defaults.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_max_pool2d(const mixp_tensor *x, const mixp_pool2d_options *options,
                                     mixp_tensor **out);
/** (avg_pool2d) Mean over windows.
 *  @param x Input tensor.
 *  @param options Window geometry, or NULL for the defaults.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_avg_pool2d(const mixp_tensor *x, const mixp_pool2d_options *options,
                                     mixp_tensor **out);
/** (adaptive_avg_pool2d) Mean pooling to an output of out_h x out_w (1 x 1
 *  is global average pooling), PyTorch's adaptive window rule.
 *  @param x Input tensor.
 *  @param out_h Output height.
 *  @param out_w Output width.
 *  @param layout Layout of @p x and of the result.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_adaptive_avg_pool2d(const mixp_tensor *x, int64_t out_h, int64_t out_w,
                                              mixp_layout layout, mixp_tensor **out);

/** (batch_norm) Batch normalisation over the channel dim (dim 1 for NCHW,
 *  the last for NHWC; 2-D [N, C] inputs also work). In training it
 *  normalises with the batch statistics and updates @p running_mean and
 *  @p running_var in place (momentum update with the unbiased variance, as
 *  PyTorch; either may be NULL); in eval it uses them. @p weight/@p bias
 *  ([C]) may be NULL (no affine). Statistics are computed in double and
 *  the normalisation in fp32 (fp64 for F64 data) whatever the dtypes: F32,
 *  F16 and BF16 data and parameters mix freely (half activations with the
 *  F32 parameters of an O2-decorated model run without casts, as cuDNN's
 *  batch norm); the result has @p x's dtype, parameter gradients their
 *  parameter's. F64 data and F64 parameters do not mix with other dtypes.
 *  Under autocast only @p x is cast (O2: to the region's dtype).
 *  @param x Input tensor.
 *  @param weight Scale [C], or NULL.
 *  @param bias Shift [C], or NULL.
 *  @param running_mean Running mean [C], or NULL.
 *  @param running_var Running variance [C], or NULL.
 *  @param training 1 uses batch statistics, 0 the running ones.
 *  @param momentum Weight of the batch in the running statistics.
 *  @param eps Added to the variance for numerical stability.
 *  @param layout Layout of @p x and of the result.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_batch_norm(const mixp_tensor *x, const mixp_tensor *weight,
                                     const mixp_tensor *bias, mixp_tensor *running_mean,
                                     mixp_tensor *running_var, int training, double momentum,
                                     double eps, mixp_layout layout, mixp_tensor **out);
/** (layer_norm) Normalises over the last @p normalized_ndim dims; weight and
 *  bias have those dims' shape, or are NULL.
 *  @param x Input tensor.
 *  @param normalized_ndim Number of trailing dimensions to normalise over.
 *  @param weight Scale, or NULL.
 *  @param bias Shift, or NULL.
 *  @param eps Added to the variance for numerical stability.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_layer_norm(const mixp_tensor *x, int normalized_ndim,
                                     const mixp_tensor *weight, const mixp_tensor *bias,
                                     double eps, mixp_tensor **out);
/** (group_norm) Normalises NCHW (or [N, C, ...]) x over @p groups channel
 *  groups; weight/bias [C] or NULL.
 *  @param x Input tensor.
 *  @param groups Number of channel groups.
 *  @param weight Scale [C], or NULL.
 *  @param bias Shift [C], or NULL.
 *  @param eps Added to the variance for numerical stability.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_group_norm(const mixp_tensor *x, int64_t groups,
                                     const mixp_tensor *weight, const mixp_tensor *bias,
                                     double eps, mixp_tensor **out);


/** (embedding) Rows of @p weight [V, D] picked by I64 @p indices (any shape)
 *  -> [..., D]. Rows equal to @p padding_idx get no gradient (pass -1 for
 *  none); indices must be in [0, V). A bad index is reported as for the
 *  targets of mixp_cross_entropy: at once on a cpu session, at the next call
 *  that waits for the device on a cuda session (its row is zeros).
 *  @param weight Embedding table [V, D].
 *  @param indices I64 row indices (any shape, borrowed).
 *  @param padding_idx Row that gets no gradient, or -1.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_embedding(const mixp_tensor *weight, const mixp_tensor *indices,
                                    int64_t padding_idx, mixp_tensor **out);

/** (scaled_dot_product_attention) softmax(q k^T * scale + mask) v with q
 *  [..., L, E], k [..., S, E], v [..., S, Ev]. @p is_causal masks positions
 *  j > i; @p dropout_p applies dropout to the attention weights (Philox
 *  stream of the session); @p scale <= 0 means 1/sqrt(E).
 *  Where the device runs the case (the CPU: f32, f64, f16 and bf16, E =
 *  Ev <= 256, at most 4 dims with equal batch dims, a unit stride along
 *  E), one fused kernel computes it without the [..., L, S] weights: q, k
 *  and v are read in place (views of one projection included), fp32 (f64:
 *  fp64) accumulation, and backward keeps one log-sum-exp per query row
 *  instead of the weights. Otherwise it is composed of matmul, softmax and
 *  dropout; both drop the same elements for the same seed on the CPU. The
 *  environment variable MIXP_ATTENTION=fused|composed|auto (read at every
 *  call) forces a path: fused fails with MIXP_ERR_UNSUPPORTED where the
 *  device declines the case. The op statistics' report counts which ran.
 *  @param q Queries [..., L, E].
 *  @param k Keys [..., S, E].
 *  @param v Values [..., S, Ev].
 *  @param is_causal 1 for a causal mask, else 0.
 *  @param dropout_p Dropout probability on the attention weights.
 *  @param scale Score scale; <= 0 means 1/sqrt(E).
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_scaled_dot_product_attention(const mixp_tensor *q, const mixp_tensor *k,
                                                       const mixp_tensor *v, int is_causal,
                                                       double dropout_p, double scale,
                                                       mixp_tensor **out);

/** (split) Splits @p x along @p dim into @p n pieces of the given sizes
 *  (they must add up to the dim's size); @p outs receives @p n tensors
 *  (views; each owned by the caller).
 *  @param x Input tensor.
 *  @param sizes The @p n piece sizes.
 *  @param n Number of pieces.
 *  @param dim The dimension to split.
 *  @param[out] outs Receives @p n tensors (each owned).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_split(const mixp_tensor *x, const int64_t *sizes, int n, int dim,
                                mixp_tensor **outs);
/** (flatten) Merges dims start_dim..end_dim (inclusive; negative count from
 *  the end) into one.
 *  @param x Input tensor.
 *  @param start_dim First dimension to merge.
 *  @param end_dim Last dimension to merge (inclusive).
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_flatten(const mixp_tensor *x, int start_dim, int end_dim,
                                  mixp_tensor **out);
/** (pad) Constant padding like PyTorch's F.pad: @p pads holds (before,
 *  after) pairs starting from the LAST dim; @p npads is even and at most
 *  2*ndim; negative pads crop.
 *  @param x Input tensor.
 *  @param pads (before, after) pairs from the last dimension.
 *  @param npads Number of entries in @p pads.
 *  @param value The padding value.
 *  @param[out] out Receives the result (owned: release it).
 *  @return MIXP_OK or an error status (see @ref ops_nn). */
MIXP_API mixp_status mixp_pad(const mixp_tensor *x, const int64_t *pads, int npads, double value,
                              mixp_tensor **out);

/** @} */

/** @defgroup autocast Autocast (mixed-precision op policies)
 *  Inside an autocast region, each operation casts its float inputs by a
 *  policy: GEMM-like ops run in the low dtype, range-sensitive ops in fp32,
 *  binary ops at the widest input type. Regions nest and are per session.
 *  @{ */

/** Mixed-precision levels (Apex/Paddle naming). */
typedef MIXP_ENUM(mixp_amp_level) {
  MIXP_AMP_O0 = 0,  /**< Everything in the inputs' dtypes (autocast off). */
  MIXP_AMP_O1 = 1,  /**< Per-op lists: low precision for GEMM-like ops, fp32 for sensitive ops. */
  MIXP_AMP_O2 = 2,  /**< Everything in low precision except the fp32 list and the custom black list. */
  /** Paddle's OD: only the low-precision list (GEMM-like ops and the custom
   *  white list) in low precision; every other castable op in fp32. */
  MIXP_AMP_OD = 3
} mixp_amp_level;

/** What an op does with its float inputs (F64 inputs are never cast). */
typedef MIXP_ENUM(mixp_cast_policy) {
  MIXP_CAST_NONE = 0,     /**< Runs in its inputs' dtypes. */
  MIXP_CAST_LOWER = 1,    /**< Casts F32 inputs to the region's low dtype. */
  MIXP_CAST_FP32 = 2,     /**< Casts F16/BF16 inputs to F32. */
  MIXP_CAST_PROMOTE = 3   /**< Casts all float inputs to the widest among them. */
} mixp_cast_policy;

/** Options of mixp_autocast_push(); fill with mixp_autocast_options_init(). */
typedef struct mixp_autocast_options {
  uint32_t struct_size;       /**< sizeof(mixp_autocast_options). */
  int enabled;                /**< 0 runs everything in fp32 inside the region (default 1). */
  mixp_dtype dtype;           /**< MIXP_F16 or MIXP_BF16 (default BF16, PyTorch's CPU default). */
  mixp_amp_level level;       /**< O0, O1 (default), O2 or OD. */
  /** Op names forced to low precision (Paddle's custom_white_list); borrowed during the call. */
  const char *const *custom_white_list;
  int n_custom_white;         /**< Entries in custom_white_list. */
  /** Op names forced to fp32 (custom_black_list); borrowed during the call. */
  const char *const *custom_black_list;
  int n_custom_black;         /**< Entries in custom_black_list. */
  int cache_enabled;          /**< Cache low-precision copies of fp32 parameters (default 1). */
  /** O2 only (Paddle's use_promote): an op off the low-precision list whose
   *  inputs include F32 runs in fp32 (its inputs meet at the widest type),
   *  instead of casting them down (default 0: mixp's O2, everything low but
   *  the fp32 list). Added in 0.3; a struct_size without it reads 0. */
  int use_promote;
} mixp_autocast_options;

/**
 * The entry point behind mixp_autocast_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_autocast_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_autocast_options_init_sized(mixp_autocast_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_autocast_options_init(mixp_autocast_options *options);
#else
/**
 * Fills @p options with defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_autocast_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored.
 */
MIXP_INLINE void mixp_autocast_options_init(mixp_autocast_options *options) {
  if (options) (void)mixp_autocast_options_init_sized(options, sizeof *options);
}
#endif

/**
 * Opens an autocast region on the session; it lasts until the matching
 * mixp_autocast_pop(). The cast cache (low-precision copies of fp32 leaf
 * tensors that require grad, i.e. parameters) is cleared when the outermost
 * region closes: keep regions around the forward pass, as in PyTorch.
 * @param session The session.
 * @param[in] options NULL for the defaults.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for an unknown level, an unknown
 *         op name in a custom list, or an op in both lists; MIXP_ERR_DTYPE for
 *         a dtype other than F16/BF16.
 */
MIXP_API mixp_status mixp_autocast_push(mixp_session *session,
                                        const mixp_autocast_options *options);

/**
 * Opens an autocast region described by one line of text, for hosts that
 * configure through text (a config file, an environment variable):
 * space-separated words, each optional, in any order —
 * a level (`O0`, `O1`, `O2`, `OD`), a dtype (`bf16`/`bfloat16`,
 * `f16`/`fp16`/`float16`), and `key=value` pairs `white=op,op,...`,
 * `black=op,...`, `promote=0|1` (use_promote), `cache=0|1`, `enabled=0|1`.
 * Words not given keep mixp_autocast_options_init()'s defaults, so `""` is
 * O1 bf16. Example: `"O2 bf16 black=softmax,layer_norm promote=1"`.
 * Closed by mixp_autocast_pop() like any region.
 * @param session The session.
 * @param policy The line (borrowed during the call).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL, an unknown word or
 *         value (quoted in the message), or what mixp_autocast_push() refuses.
 *         A failed call opens no region.
 */
MIXP_API mixp_status mixp_autocast_push_policy(mixp_session *session, const char *policy);

/**
 * Closes the innermost autocast region, restoring the outer state.
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_STATE if no region is open.
 */
MIXP_API mixp_status mixp_autocast_pop(mixp_session *session);

/** The answer of mixp_autocast_policy(). */
typedef struct mixp_autocast_policy_info {
  uint32_t struct_size;     /**< sizeof(mixp_autocast_policy_info); set by the caller. */
  mixp_cast_policy cast;    /**< What the op does with its float inputs now. */
  mixp_dtype dtype;         /**< The dtype MIXP_CAST_LOWER/FP32 cast to (F32 otherwise). */
} mixp_autocast_policy_info;

/**
 * What op @p op_name would do with its inputs under the session's current
 * autocast state.
 * @param session The session.
 * @param op_name The stable name of the operation, e.g. "matmul".
 * @param[out] policy Filled on success; set its struct_size first.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or an unknown op name.
 */
MIXP_API mixp_status mixp_autocast_policy(const mixp_session *session, const char *op_name,
                                          mixp_autocast_policy_info *policy);

/** @return The number of named operations. Thread-safe. */
MIXP_API int mixp_op_count(void);

/**
 * The stable name of operation @p index, e.g. "matmul".
 * @param index In [0, mixp_op_count()).
 * @return A static string, or NULL for an index out of [0, mixp_op_count()).
 *         Thread-safe.
 */
MIXP_API const char *mixp_op_name(int index);

/**
 * Starts counting op calls (Paddle's collect_operator_stats): from now on
 * every operation the caller makes on the session -- the casts autocast
 * inserts included, an op's internals not -- counts one call for the dtype
 * of its (first) output, and the operations a mixp_backward() runs are
 * counted apart. Clears the previous counts. Costs one branch per op.
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL.
 */
MIXP_API mixp_status mixp_session_op_stats_start(mixp_session *session);

/**
 * Stops counting; the counts stay readable until the next start.
 * @param session The session.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL.
 */
MIXP_API mixp_status mixp_session_op_stats_stop(mixp_session *session);

/**
 * The calls of one op counted since the last start.
 * @param session The session.
 * @param op The op's name (mixp_op_name(), e.g. "matmul", "cast").
 * @param backward 0: calls outside mixp_backward(); 1: calls a backward
 *        pass made.
 * @param dtype The output dtype counted.
 * @param[out] count Receives the number of calls.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL arguments, an unknown
 *         op name, @p backward not 0 or 1 or an unknown dtype.
 */
MIXP_API mixp_status mixp_session_op_stats_count(const mixp_session *session, const char *op,
                                                 int backward, mixp_dtype dtype, int64_t *count);

/**
 * The counts since the last start as a table, one row per op and pass
 * ("matmul", "matmul (backward)") with its fp16, bf16, fp32, fp64 and other
 * (integer, bool) calls, then "N ops, M calls".
 * @param session The session.
 * @return A string borrowed from the session, valid until the next call of
 *         this function or the session's destruction; "" for NULL.
 */
MIXP_API const char *mixp_session_op_stats_report(mixp_session *session);

/** @} */

/** @defgroup nn Layers (modules)
 *  A module owns parameters (tensors that require grad) and computes a
 *  forward pass from public operations.
 *  @{ */

/** Opaque module handle. */
typedef struct mixp_module mixp_module;

/**
 * Creates a Linear layer y = x W^T + b with PyTorch's default initialisation:
 * W and b uniform in [-1/sqrt(in), 1/sqrt(in)] from the session's stream.
 * Parameters are named "weight" [out, in] and "bias" [out].
 * @param session The session that owns the result.
 * @param in_features Size of the input's last dimension.
 * @param out_features Size of the output's last dimension.
 * @param bias 1 to learn a bias, 0 for none.
 * @param dtype   A float dtype for the parameters.
 * @param[out] out Receives the module (owned: mixp_module_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for non-positive features;
 *         MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_linear_create(mixp_session *session, int64_t in_features,
                                        int64_t out_features, int bias, mixp_dtype dtype,
                                        mixp_module **out);

/**
 * Destroys a module handle. Parameter tensors the caller retained stay valid.
 * @param module The module, or NULL (no-op).
 */
MIXP_API void mixp_module_destroy(mixp_module *module);

/**
 * Runs the module's forward pass.
 * @param module The module.
 * @param x The input tensor.
 * @param[out] out Receives the output (owned).
 * @return The status of the underlying operations.
 */
MIXP_API mixp_status mixp_module_forward(mixp_module *module, const mixp_tensor *x,
                                         mixp_tensor **out);

/** @param module The module.
 *  @return The number of parameters, or -1 for NULL. */
MIXP_API int mixp_module_num_parameters(const mixp_module *module);

/**
 * One parameter of a module.
 * @param module The module.
 * @param index In [0, mixp_module_num_parameters()).
 * @param[out] out Receives a new reference (release it).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_module_parameter(const mixp_module *module, int index,
                                           mixp_tensor **out);

/**
 * The dotted name of a parameter, e.g. "weight".
 * @param module The module.
 * @param index In [0, mixp_module_num_parameters()).
 * @return A string borrowed from the module, valid while it lives; NULL for
 *         a bad module or index (error set).
 */
MIXP_API const char *mixp_module_parameter_name(const mixp_module *module, int index);

/**
 * Switches training mode (1) or evaluation mode (0), recursively.
 * @param module The module.
 * @param training 1 for training mode, 0 for evaluation mode.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_module_set_training(mixp_module *module, int training);

/**
 * Creates a Conv2d layer: y = mixp_conv2d(x, weight, bias, geom), with
 * PyTorch's default initialisation (weight and bias uniform in
 * [-1/sqrt(fan_in), 1/sqrt(fan_in)], fan_in = in_channels/groups * kh * kw,
 * weight first, from the session's stream). Parameters: "weight"
 * [out_channels, in_channels/groups, kernel_h, kernel_w] and "bias"
 * [out_channels].
 * @param session The session that owns the result.
 * @param in_channels Channels of the input.
 * @param out_channels Channels of the output.
 * @param kernel_h Kernel height.
 * @param kernel_w Kernel width.
 * @param geom  Stride, padding, dilation, groups and layout (copied); NULL for
 *              the defaults of mixp_conv2d_options_init().
 * @param bias  1 to learn a bias, 0 for none.
 * @param dtype A float dtype for the parameters.
 * @param[out] out Receives the module (owned: mixp_module_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a non-positive size, stride,
 *         dilation or group count, negative padding, channels not divisible
 *         by the groups, a bad struct_size or layout, bias not 0/1;
 *         MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_conv2d_create(mixp_session *session, int64_t in_channels,
                                        int64_t out_channels, int64_t kernel_h,
                                        int64_t kernel_w, const mixp_conv2d_options *geom,
                                        int bias, mixp_dtype dtype, mixp_module **out);

/**
 * Creates a BatchNorm2d layer over the channels of NCHW input (2-D [N, C]
 * input works too), as torch.nn.BatchNorm2d: in training mode it normalises
 * with the batch statistics, updates the running statistics with @p momentum
 * and counts the batch; in evaluation mode (mixp_module_set_training(m, 0))
 * it uses the running statistics. Parameters (when @p affine): "weight" [C]
 * (ones) and "bias" [C] (zeros). Buffers: "running_mean" [C] (zeros),
 * "running_var" [C] (ones) in @p dtype and "num_batches_tracked" (I64
 * scalar). O2 decorate keeps this layer in fp32; an input of another float
 * dtype is then normalised in the parameters' dtype and returned in its own.
 * @param session The session that owns the result.
 * @param num_features Number of channels C.
 * @param eps      Added to the variance; finite and > 0 (PyTorch: 1e-5).
 * @param momentum Weight of the new batch in the running statistics, in
 *                 [0, 1] (PyTorch: 0.1).
 * @param affine 1 to learn "weight" and "bias", 0 for none.
 * @param dtype A float dtype for the parameters.
 * @param[out] out Receives the module (owned).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for num_features < 1, a bad eps
 *         or momentum, affine not 0/1; MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_batchnorm2d_create(mixp_session *session, int64_t num_features,
                                             double eps, double momentum, int affine,
                                             mixp_dtype dtype, mixp_module **out);

/**
 * Creates a LayerNorm layer over the last dimension (of size
 * @p normalized_size), as torch.nn.LayerNorm(normalized_size). Parameters
 * (when @p affine): "weight" (ones) and "bias" (zeros), both
 * [normalized_size]. Kept in fp32 by O2 decorate, like BatchNorm2d.
 * @param session The session that owns the result.
 * @param normalized_size Size of the normalised last dimension.
 * @param eps Finite and > 0 (PyTorch: 1e-5).
 * @param affine 1 to learn "weight" and "bias", 0 for none.
 * @param dtype A float dtype for the parameters.
 * @param[out] out Receives the module (owned).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for normalized_size < 1, a bad
 *         eps, affine not 0/1; MIXP_ERR_DTYPE for a non-float dtype. Its
 *         forward fails with MIXP_ERR_SHAPE when the input's last dimension
 *         differs.
 */
MIXP_API mixp_status mixp_layernorm_create(mixp_session *session, int64_t normalized_size,
                                           double eps, int affine, mixp_dtype dtype,
                                           mixp_module **out);

/**
 * Creates an Embedding layer: I64 indices of any shape -> rows of "weight"
 * [num_embeddings, dim], drawn from N(0, 1) as torch.nn.Embedding. The row
 * @p padding_idx starts at zero and receives no gradient.
 * @param session The session that owns the result.
 * @param num_embeddings Number of rows (vocabulary size).
 * @param dim Size of each embedding vector.
 * @param padding_idx -1 for none, or a row in [0, num_embeddings).
 * @param dtype A float dtype for the parameters.
 * @param[out] out Receives the module (owned).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a size < 1 or a bad
 *         padding_idx; MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_embedding_create(mixp_session *session, int64_t num_embeddings,
                                           int64_t dim, int64_t padding_idx, mixp_dtype dtype,
                                           mixp_module **out);

/**
 * Creates a multi-head self-attention layer on [B, T, embed_dim] input, laid
 * out and initialised like torch.nn.MultiheadAttention(batch_first=True):
 * "in_proj_weight" [3E, E] (xavier-uniform; rows q, k, v), "in_proj_bias"
 * [3E] (zeros), then "out_proj.weight" [E, E] (Linear's default init) and
 * "out_proj.bias" [E] (zeros). The forward pass projects, splits into
 * @p num_heads heads, runs mixp_scaled_dot_product_attention() (scale
 * 1/sqrt(E/H), causal mask when @p causal, dropout on the attention weights
 * in training mode only) and projects back.
 * @param session The session that owns the result.
 * @param embed_dim Model width E.
 * @param num_heads Number of heads H; divides @p embed_dim.
 * @param bias    1 for the in/out projection biases, 0 for none.
 * @param dropout Attention-weight dropout probability in [0, 1).
 * @param causal  1 masks future positions (decoder self-attention), else 0.
 * @param dtype A float dtype for the parameters.
 * @param[out] out Receives the module (owned).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for sizes < 1, embed_dim not
 *         divisible by num_heads, a bad dropout, flags not 0/1;
 *         MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_multihead_attention_create(mixp_session *session, int64_t embed_dim,
                                                     int64_t num_heads, int bias,
                                                     double dropout, int causal,
                                                     mixp_dtype dtype, mixp_module **out);

/**
 * The number of buffers (state saved with the module but not trained, such as
 * BatchNorm's running statistics) of the module and its descendants.
 * @param module The module.
 * @return The count, or -1 for a NULL or dead module (error set).
 */
MIXP_API int mixp_module_num_buffers(const mixp_module *module);

/**
 * One buffer of a module, in the order of mixp_module_buffer_name() (a
 * module's own buffers, then each child's, depth first, like PyTorch's
 * named_buffers()).
 * @param module The module.
 * @param index In [0, mixp_module_num_buffers()).
 * @param[out] out Receives a new reference (release it). Writing into it
 *                 (mixp_tensor_copy_) changes the module's state.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_module_buffer(const mixp_module *module, int index,
                                        mixp_tensor **out);

/**
 * The dotted name of a buffer, e.g. "bn1.running_mean".
 * @param module The module.
 * @param index In [0, mixp_module_num_buffers()).
 * @return A string borrowed from the module, valid while it lives; NULL for
 *         a bad module or index (error set).
 */
MIXP_API const char *mixp_module_buffer_name(const mixp_module *module, int index);

/**
 * The total number of parameter elements (the sum of the parameters'
 * numel), e.g. 11,689,512 for ResNet-18 with 1000 classes.
 * @param module The module.
 * @return The count, or -1 for a NULL or dead module (error set).
 */
MIXP_API int64_t mixp_module_num_parameter_elements(const mixp_module *module);

/**
 * Creates a model of the zoo from a configuration string (see
 * docs/model-zoo.md). Grammar: a model name, then whitespace-separated
 * `key=value` pairs, each key at most once; values are integers, reals,
 * words or comma-separated integer lists. Every model accepts
 * `dtype=f32|f64|f16|bf16` (parameter dtype, default f32) and
 * `checkpoint=0|1` (default 0): with 1, a training-mode forward pass with
 * grad mode on runs each block (gpt: transformer block; resnet: BasicBlock or
 * Bottleneck; mobilenet_v3: inverted residual; cnn: conv block; mlp: hidden
 * Linear with its activation) in a checkpoint region of its own, so that
 * backward recomputes one block at a time; gradients are bitwise those of
 * checkpoint=0 and the peak memory is lower. Models are built
 * from the public layers and operations; parameter names follow PyTorch and
 * torchvision (e.g. "layer1.0.conv1.weight").
 *
 * - `mlp in=784 hidden=256,128 classes=10 dropout=0`: Linear+ReLU layers
 *   ("hidden=none" for none); input [N, in] (or [N, ...], flattened).
 * - `cnn in_channels=1 classes=10 width=32 blocks=2 image_size=28 hidden=128
 *   dropout=0.25`: blocks of conv3x3-BN-ReLU-maxpool2 (channels width,
 *   2*width, ...), then dropout, Linear(hidden), ReLU, dropout, Linear(classes);
 *   input [N, in_channels, image_size, image_size].
 * - `resnet depth=18|34|50 classes=1000 in_channels=3 width=64`: torchvision's
 *   ResNet (7x7/2 stem, 3x3/2 max pool, BasicBlock or Bottleneck stages of
 *   width, 2, 4, 8 x width planes, 1x1 conv+BN downsample, global average
 *   pool, fc; kaiming-normal fan_out convs). Names "resnet18", "resnet34",
 *   "resnet50" preset the depth. Input NCHW, any size >= 1x1 after the stem.
 * - `mobilenet_v3 size=large|small classes=1000 in_channels=3 width_mult=1.0
 *   dropout=0.2`: torchvision's MobileNetV3 (inverted residuals, SE blocks with
 *   hardsigmoid, hardswish, BN eps 0.001 momentum 0.01, classifier
 *   Linear-Hardswish-Dropout-Linear). Names "mobilenet_v3_large" and
 *   "mobilenet_v3_small" preset the size.
 * - `gpt n_layer=2 n_head=2 n_embd=64 vocab=65 block_size=64 dropout=0.0
 *   gelu=erf|tanh`: a decoder-only transformer (learned position embedding,
 *   pre-LN blocks of causal MultiheadAttention and a GELU MLP of 4*n_embd,
 *   final LayerNorm, output projection tied to the token embedding); input
 *   I64 [B, T] with T <= block_size, output logits [B, T, vocab]. `gelu`:
 *   the MLP's GELU formula (mixp_gelu_approx; default erf); GPT-2's is tanh,
 *   which mixp_model_load_hf_gpt2() requires.
 *
 * mixp_module_forward() runs the model; mixp_module_set_training() switches
 * dropout and batch norm between training and evaluation.
 * @param session The session that owns the result.
 * @param config NUL-terminated UTF-8; borrowed during the call.
 * @param[out] out Receives the model (owned: mixp_module_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL, an unknown model name,
 *         an unknown or repeated key, a missing or malformed value, or a value
 *         out of range (the message names the key and the value).
 */
MIXP_API mixp_status mixp_model_create(mixp_session *session, const char *config,
                                       mixp_module **out);

/** @} */

/** @defgroup optim Optimizers and learning-rate schedules
 *  @{ */

/** Opaque optimizer handle. */
typedef struct mixp_optimizer mixp_optimizer;

/** Optimizer algorithms. */
typedef MIXP_ENUM(mixp_optimizer_kind) {
  MIXP_OPTIM_SGD = 0,    /**< SGD with optional momentum, Nesterov and (coupled) weight decay. */
  MIXP_OPTIM_ADAM = 1,   /**< Adam; weight decay is added to the gradient (L2). */
  MIXP_OPTIM_ADAMW = 2   /**< AdamW; weight decay is decoupled (p -= lr*wd*p). */
} mixp_optimizer_kind;

/** Learning-rate schedule shapes. */
typedef MIXP_ENUM(mixp_lr_schedule_kind) {
  MIXP_LR_CONSTANT = 0,       /**< lr = base lr at every step. */
  MIXP_LR_WARMUP_COSINE = 1   /**< Linear warmup from 0, then cosine decay to min_lr. */
} mixp_lr_schedule_kind;

/** Options for mixp_optimizer_create(); fill with mixp_optimizer_options_init(). */
typedef struct mixp_optimizer_options {
  uint32_t struct_size;          /**< sizeof(mixp_optimizer_options). */
  mixp_optimizer_kind kind;      /**< The algorithm. */
  double lr;                     /**< Base learning rate (SGD 0.01, Adam/AdamW 1e-3). */
  double momentum;               /**< SGD momentum (0). */
  double dampening;              /**< SGD dampening (0). */
  int nesterov;                  /**< SGD Nesterov momentum (0); needs momentum > 0 and dampening 0. */
  double weight_decay;           /**< SGD/Adam: L2 added to the grad (0); AdamW: decoupled (0.01). */
  double beta1;                  /**< Adam/AdamW first-moment decay (0.9). */
  double beta2;                  /**< Adam/AdamW second-moment decay (0.999). */
  double eps;                    /**< Adam/AdamW epsilon (1e-8). */
  mixp_lr_schedule_kind schedule;  /**< LR schedule (constant). */
  int64_t warmup_steps;          /**< Warmup steps for MIXP_LR_WARMUP_COSINE. */
  int64_t total_steps;           /**< Steps at which the cosine reaches min_lr. */
  double min_lr;                 /**< Final learning rate of the cosine (0). */
  /** Storage of the optimizer state (SGD's momentum, Adam's exp_avg and
   *  exp_avg_sq) of F32/F16/BF16 parameters: MIXP_F32 (default) or MIXP_BF16,
   *  half the memory. The update is computed in fp32 either way; the new
   *  state is stored rounded to nearest. F64 parameters keep F64 state.
   *  Since 0.4 (a 0.3-sized struct reads as MIXP_F32). */
  mixp_dtype state_dtype;
  /** 1: BF16 parameters updated without an fp32 master (mixp_amp_decorate()
   *  with master_weights = 0, or plain BF16 parameters) are written with
   *  stochastic rounding: rounded up with probability equal to the part that
   *  bf16 cannot hold, from the session's Philox stream, so an update smaller
   *  than half a bf16 step moves the parameter on average instead of being
   *  rounded away. The same seed gives the same result on every device.
   *  Other parameters are unaffected. 0 (default): round to nearest. Since 0.4. */
  int stochastic_rounding;
} mixp_optimizer_options;

/**
 * The entry point behind mixp_optimizer_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_optimizer_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @param kind The optimizer whose defaults are wanted.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_optimizer_options_init_sized(mixp_optimizer_options *options, size_t size,
                                                      mixp_optimizer_kind kind);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_optimizer_options_init(mixp_optimizer_options *options,
                                          mixp_optimizer_kind kind);
#else
/**
 * Fills @p options with PyTorch's defaults for @p kind and sets struct_size.
 * Inline since 0.7: it passes the size of the program's own struct to
 * mixp_optimizer_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored.
 * @param kind The optimizer whose defaults are wanted.
 */
MIXP_INLINE void mixp_optimizer_options_init(mixp_optimizer_options *options,
                                               mixp_optimizer_kind kind) {
  if (options) (void)mixp_optimizer_options_init_sized(options, sizeof *options, kind);
}
#endif

/**
 * Creates an optimizer over @p n parameters. The optimizer keeps references
 * to them; their state (moments) is created lazily on the first step.
 * @param session The session that owns the result.
 * @param[in] params Leaf float tensors that require grad, all of one session,
 *                   no duplicates; the array is copied.
 * @param n Number of entries in @p params.
 * @param options Kind and hyper-parameters; fill with mixp_optimizer_options_init().
 * @param[out] out   Receives the optimizer (owned: mixp_optimizer_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for bad hyper-parameters (named
 *         in the message), NULL or duplicate parameters; MIXP_ERR_STATE for a
 *         parameter that does not require grad or is not a leaf;
 *         MIXP_ERR_DTYPE for a non-float parameter; MIXP_ERR_DEVICE for a
 *         parameter of another session.
 */
MIXP_API mixp_status mixp_optimizer_create(mixp_session *session,
                                           mixp_tensor *const *params, int n,
                                           const mixp_optimizer_options *options,
                                           mixp_optimizer **out);

/**
 * Destroys an optimizer and drops its references to the parameters.
 * @param optimizer The optimizer, or NULL (no-op).
 */
MIXP_API void mixp_optimizer_destroy(mixp_optimizer *optimizer);

/**
 * Updates every parameter that has a gradient from that gradient, using the
 * learning rate of the schedule at the current step, then advances the step.
 * Parameters without a gradient are skipped. Parameters with an fp32 master
 * (see mixp_amp_decorate()) update the master from the fp32-cast gradient
 * and receive its rounding; optimizer state is fp32 for half parameters.
 *
 * The optimizer owns a skip flag in device memory, set when
 * mixp_grad_scaler_unscale() finds an Inf/NaN gradient or
 * mixp_clip_grad_norm() a non-finite norm. When it is set, the kernels skip
 * the whole update on the device (parameters, masters, moments and
 * per-parameter step counts stay bit-identical, without a host sync); the
 * step still counts (mixp_optimizer_step_count() and the LR schedule
 * advance, as PyTorch's scheduler does), and the flag is cleared.
 * @param optimizer The optimizer.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_STATE inside
 *         a checkpoint region (mixp_checkpoint_begin()).
 */
MIXP_API mixp_status mixp_optimizer_step(mixp_optimizer *optimizer);

/**
 * Drops the gradients of all parameters (PyTorch's set_to_none=True).
 * @param optimizer The optimizer.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_optimizer_zero_grad(mixp_optimizer *optimizer);

/**
 * The learning rate the next step will use.
 * @param optimizer The optimizer.
 * @param[out] lr Receives it.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_optimizer_get_lr(const mixp_optimizer *optimizer, double *lr);

/**
 * Sets the base learning rate (the schedule scales it).
 * @param optimizer The optimizer.
 * @param lr The new base learning rate; finite and >= 0.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a negative or non-finite lr.
 */
MIXP_API mixp_status mixp_optimizer_set_lr(mixp_optimizer *optimizer, double lr);

/**
 * The number of steps taken so far (calls of mixp_optimizer_step(), directly
 * or through a scaler, including steps skipped on the device).
 * @param optimizer The optimizer.
 * @return The count, or -1 for NULL.
 */
MIXP_API int64_t mixp_optimizer_step_count(const mixp_optimizer *optimizer);

/**
 * Which parameters hold a non-finite gradient now: to say what overflowed on
 * a step the scaler skipped (mixp_grad_scaler_found_inf() is 1), before the
 * next zero_grad. Scans every gradient for NaN/Inf (Paddle #37021's
 * question), so it waits for the device: call it on a skipped step, not on
 * every step.
 * @param optimizer The optimizer.
 * @param[out] indices Receives the first min(*count, capacity) indices, in
 *        the order of mixp_optimizer_create()'s parameters (ascending); may be
 *        NULL when capacity is 0.
 * @param capacity Room in @p indices, >= 0.
 * @param[out] count Receives how many parameters hold one (may exceed
 *        capacity).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL handle or @p count, a
 *         negative capacity, or NULL @p indices with capacity > 0.
 */
MIXP_API mixp_status mixp_optimizer_nonfinite_grads(const mixp_optimizer *optimizer, int *indices,
                                                    int capacity, int *count);

/**
 * Gradient underflow statistics (gpt-neox #477): for each parameter, the
 * fraction of its gradient's elements that are zero or would be subnormal in
 * @p low (|g| below its smallest normal: 2^-14 for F16, 2^-126 for BF16 and
 * F32), as the gradients are now. Called after backward and before
 * unscale, it says how much of each gradient the loss scale failed to lift
 * out of the low type's underflow range. Scans every gradient (waits for the
 * device): call it every N steps, not every step.
 * @param optimizer The optimizer.
 * @param low MIXP_F16, MIXP_BF16 or MIXP_F32.
 * @param[out] fractions Receives, for the first min(n, capacity) parameters
 *        in mixp_optimizer_create()'s order, a fraction in [0, 1], or NaN for
 *        a parameter without a gradient (or with 0 elements); may be NULL
 *        when capacity is 0.
 * @param capacity Room in @p fractions, >= 0.
 * @param[out] count Receives the number of parameters n.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL handle or @p count, a
 *         negative capacity, NULL @p fractions with capacity > 0, or another
 *         @p low.
 */
MIXP_API mixp_status mixp_optimizer_grad_underflow(const mixp_optimizer *optimizer, mixp_dtype low,
                                                   double *fractions, int capacity, int *count);

/**
 * The learning rate a schedule gives at a step, without an optimizer (for
 * plots and tests). Uses options->lr, schedule, warmup_steps, total_steps and
 * min_lr.
 * @param options Optimizer options holding the schedule.
 * @param step The step (>= 0).
 * @param[out] lr Receives it.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for bad options or step < 0.
 */
MIXP_API mixp_status mixp_lr_schedule_value(const mixp_optimizer_options *options,
                                            int64_t step, double *lr);

/** @} */

/** @defgroup amp_scaler Loss scaling, O2 decorate and gradient clipping
 *  The fp16 half of mixed precision: a dynamic loss scaler with PyTorch's
 *  algorithm and state machine (plus Paddle's decr_every_n_nan_or_inf,
 *  Apex/Megatron hysteresis and min/max bounds), O2 model decoration with
 *  fp32 master weights, and clipping by global norm.
 *
 *  A training step with a scaler and gradient accumulation over N
 *  micro-batches:
 *  @code
 *  mixp_optimizer_zero_grad(opt);
 *  for (int i = 0; i < N; ++i) {            // each loss already divided by N
 *    mixp_grad_scaler_scale(scaler, loss[i], &scaled);
 *    mixp_backward(scaled, NULL);            // grads accumulate, scaled
 *  }
 *  mixp_grad_scaler_unscale(scaler, opt);    // once, after the last backward
 *  mixp_clip_grad_norm(opt, 1.0, NULL);      // clips the true gradients
 *  mixp_grad_scaler_step(scaler, opt);       // skipped on the device on overflow
 *  mixp_grad_scaler_update(scaler);          // grows or backs off the scale
 *  @endcode
 *  No call of this loop waits for the device: the scale, the growth tracker
 *  and the overflow flags live in device memory and the optimizer kernels
 *  read the flag there. Only mixp_grad_scaler_get_scale(),
 *  mixp_grad_scaler_found_inf(), mixp_grad_scaler_growth_tracker(),
 *  mixp_grad_scaler_skipped_steps() and mixp_grad_scaler_save_state() read
 *  values back (and so synchronise).
 *  @{ */

/** Opaque loss-scaler handle. */
typedef struct mixp_grad_scaler mixp_grad_scaler;

/** How a scaler scales. Values are explicit and append-only. */
typedef MIXP_ENUM(mixp_scaler_mode) {
  /** Resolved once, by mixp_grad_scaler_create(): DISABLED when the
   *  session's current autocast dtype is BF16 (bf16 has fp32's range and
   *  needs no scaling), DYNAMIC otherwise (no autocast region, or F16).
   *  Create the scaler inside the autocast region, or pick a mode. */
  MIXP_SCALER_AUTO = 0,
  MIXP_SCALER_DYNAMIC = 1,  /**< Grow and back off the scale (the default algorithm). */
  /** Scale by a fixed factor; overflowing steps are still skipped, but the
   *  scale never changes (except by mixp_grad_scaler_update_to()). */
  MIXP_SCALER_STATIC = 2,
  /** No scaling: scale() returns the loss itself, unscale() and update() do
   *  nothing, step() is a plain mixp_optimizer_step(), get_scale() is 1. */
  MIXP_SCALER_DISABLED = 3
} mixp_scaler_mode;

/** What a dynamic scaler does when its scale falls below 1 (the gradients
 *  overflow fp16 even unscaled: no fp16 scale fits; pytorch #99640). */
typedef MIXP_ENUM(mixp_low_scale_action) {
  MIXP_LOW_SCALE_IGNORE = 0,  /**< Nothing (default; PyTorch's behaviour). */
  MIXP_LOW_SCALE_WARN = 1,    /**< Log a warning once (session log callback). */
  MIXP_LOW_SCALE_ERROR = 2    /**< mixp_grad_scaler_scale() fails with MIXP_ERR_NUMERIC while the
                                   scale stays below 1. */
} mixp_low_scale_action;

/**
 * Options for mixp_grad_scaler_create(); fill with
 * mixp_grad_scaler_options_init(). After each update(), with n clean steps
 * in a row counted by the growth tracker and bad overflows in a row:
 * on overflow the scale is multiplied by @c backoff_factor once @c bad
 * reaches @c decr_every_n_nan_or_inf and the hysteresis allowance is spent,
 * never going below @c min_scale; after @c growth_interval clean steps it is
 * multiplied by @c growth_factor, never above @c max_scale nor to infinity.
 * With the defaults this is exactly PyTorch's torch.amp.GradScaler.
 */
typedef struct mixp_grad_scaler_options {
  uint32_t struct_size;       /**< sizeof(mixp_grad_scaler_options). */
  mixp_scaler_mode mode;      /**< MIXP_SCALER_AUTO. */
  double init_scale;          /**< Initial scale, finite, in [min_scale, max_scale] (65536 = 2^16). */
  double growth_factor;       /**< Growth multiplier, finite, > 1 (2). */
  double backoff_factor;      /**< Backoff multiplier, in (0, 1) (0.5). */
  int64_t growth_interval;    /**< Clean steps before growing, in [1, 2^31-1] (2000). */
  /** Consecutive overflowing steps before backing off, in [1, 2^31-1] (1;
   *  Paddle's decr_every_n_nan_or_inf). */
  int64_t decr_every_n_nan_or_inf;
  /** Overflowing steps tolerated before the first backoff, in [1, 2^31-1]
   *  (1 = none; Apex/Megatron's hysteresis). Refilled by every clean step. */
  int64_t hysteresis;
  double min_scale;           /**< Lower bound of a backoff, >= 0 (0: no minimum). */
  double max_scale;           /**< Upper bound of a growth, > 0, may be HUGE_VAL (HUGE_VAL: no maximum). */
  /** What to do when the scale falls below 1 (MIXP_LOW_SCALE_IGNORE). Checked
   *  after each mixp_grad_scaler_update(), which then reads the scale (on a
   *  GPU: one wait per step) unless IGNORE. Not part of the saved state.
   *  Since 0.4 (a 0.3-sized struct reads as IGNORE). */
  mixp_low_scale_action below_one;
} mixp_grad_scaler_options;

/**
 * The entry point behind mixp_grad_scaler_options_init(): fills the first @p
 * size bytes of @p options with the defaults and sets struct_size to @p size,
 * the size of the caller's struct. Call it directly only where the inline
 * function cannot be used (a host that resolves functions by name: dlsym, an
 * FFI). Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_grad_scaler_options) in the caller's mixp.h: one of
 *             the sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_grad_scaler_options_init_sized(mixp_grad_scaler_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_grad_scaler_options_init(mixp_grad_scaler_options *options);
#else
/**
 * Fills @p options with the defaults above and sets struct_size. Inline since
 * 0.7: it passes the size of the program's own struct to
 * mixp_grad_scaler_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored. Thread-safe.
 */
MIXP_INLINE void mixp_grad_scaler_options_init(mixp_grad_scaler_options *options) {
  if (options) (void)mixp_grad_scaler_options_init_sized(options, sizeof *options);
}
#endif

/**
 * Creates a loss scaler. Its scale and counters are scalars in the
 * session's device memory.
 * @param session The session whose optimizers and losses it will serve.
 * @param options NULL for the defaults; otherwise validated field by field.
 * @param[out] out Receives the scaler (owned: mixp_grad_scaler_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL @p session / @p out, a
 *         wrong struct_size, an unknown mode or an out-of-range field (named
 *         in the message).
 */
MIXP_API mixp_status mixp_grad_scaler_create(mixp_session *session,
                                             const mixp_grad_scaler_options *options,
                                             mixp_grad_scaler **out);

/**
 * Destroys a scaler. Optimizers it served are not affected (a skip flag it
 * set stays set until their next step).
 * @param scaler The scaler, or NULL (no-op).
 */
MIXP_API void mixp_grad_scaler_destroy(mixp_grad_scaler *scaler);

/**
 * Multiplies a loss by the current scale, in fp32 on the device (F64 for an
 * F64 loss), rounding the product to the loss's dtype as PyTorch does. The
 * product is recorded by autograd, so mixp_backward() on it produces scaled
 * gradients.
 * @param scaler The scaler.
 * @param loss A float tensor of the scaler's session (any shape).
 * @param[out] out Receives the scaled loss (owned; a new reference to
 *                 @p loss itself when the scaler is DISABLED).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL arguments;
 *         MIXP_ERR_DTYPE for a non-float loss; MIXP_ERR_DEVICE for a loss of
 *         another session.
 */
MIXP_API mixp_status mixp_grad_scaler_scale(mixp_grad_scaler *scaler, const mixp_tensor *loss,
                                            mixp_tensor **out);

/**
 * Divides the optimizer's gradients by the scale in place, in one fused pass
 * that also checks them for Inf/NaN (before dividing) and records an
 * overflow in the optimizer's skip flag. Call it once per optimizer and
 * step, after the last backward and before clipping. No-op when DISABLED.
 * @param scaler The scaler.
 * @param optimizer The optimizer whose gradients are unscaled.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or stale handles;
 *         MIXP_ERR_DEVICE for an optimizer of another session;
 *         MIXP_ERR_STATE "unscale() has already been called on this
 *         optimizer since the last update()" or "unscale() is being called
 *         after step()" (nothing changes then).
 */
MIXP_API mixp_status mixp_grad_scaler_unscale(mixp_grad_scaler *scaler,
                                              mixp_optimizer *optimizer);

/**
 * Steps the optimizer through the scaler: unscales first unless unscale()
 * was already called for this optimizer, then runs mixp_optimizer_step(),
 * whose kernels skip the whole update on the device when an overflow (or a
 * non-finite clip norm) was flagged. DISABLED: a plain mixp_optimizer_step().
 * If the optimizer step itself fails, the gradients stay unscaled and the
 * optimizer counts as unscaled (a retry does not unscale twice).
 * @param scaler The scaler.
 * @param optimizer The optimizer to step.
 * @return MIXP_OK; the errors of mixp_grad_scaler_unscale() and
 *         mixp_optimizer_step(); MIXP_ERR_STATE "step() has already been
 *         called since the last update()".
 */
MIXP_API mixp_status mixp_grad_scaler_step(mixp_grad_scaler *scaler,
                                           mixp_optimizer *optimizer);

/**
 * Ends the iteration: sums the overflow flags of every optimizer unscaled or
 * stepped since the last update (one overflow anywhere backs off once),
 * updates the scale on the device (DYNAMIC only) and returns every optimizer
 * to the ready state. The overflow flag of an optimizer that was unscaled
 * but not stepped is cleared. An optimizer destroyed since its unscale or
 * step still counts. No-op when DISABLED.
 * @param scaler The scaler.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_STATE when
 *         no unscale() or step() was recorded since the last update.
 */
MIXP_API mixp_status mixp_grad_scaler_update(mixp_grad_scaler *scaler);

/**
 * Sets the scale explicitly (PyTorch's update(new_scale)): like
 * mixp_grad_scaler_update() it ends the iteration (flags are summed for
 * mixp_grad_scaler_found_inf(), optimizers return to ready), but the scale
 * becomes @p new_scale and the counters are kept. Ignored when DISABLED.
 * @param scaler The scaler.
 * @param new_scale Finite and > 0 (the min/max bounds do not apply).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a bad @p new_scale.
 */
MIXP_API mixp_status mixp_grad_scaler_update_to(mixp_grad_scaler *scaler, double new_scale);

/**
 * The current scale (reads device memory: synchronises).
 * @param scaler The scaler.
 * @param[out] scale Receives it; 1.0 when DISABLED.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_grad_scaler_get_scale(const mixp_grad_scaler *scaler, double *scale);

/**
 * Whether the step(s) of the last update (or update_to) found an overflow
 * (synchronises).
 * @param scaler The scaler.
 * @param[out] found_inf Receives 1 or 0 (0 before the first update and when
 *                       DISABLED).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_grad_scaler_found_inf(const mixp_grad_scaler *scaler, int *found_inf);

/**
 * The number of clean steps since the scale last changed by growth or
 * overflow (PyTorch's _growth_tracker; synchronises).
 * @param scaler The scaler.
 * @param[out] growth_tracker Receives it (0 when DISABLED).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_grad_scaler_growth_tracker(const mixp_grad_scaler *scaler,
                                                     int64_t *growth_tracker);

/**
 * The number of optimizer steps skipped for an overflow: the updates since
 * the scaler was created whose iteration found an Inf or NaN (DYNAMIC and
 * STATIC modes; counted on the device without waiting, read here with one
 * synchronisation; not part of the saved state). mixp_grad_scaler_found_inf()
 * tells whether the last step was one of them.
 * @param scaler The scaler.
 * @param[out] count Receives it (0 when DISABLED).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_grad_scaler_skipped_steps(const mixp_grad_scaler *scaler, int64_t *count);

/** The mode a scaler runs in (AUTO already resolved).
 *  @param scaler The scaler.
 *  @return The mode, or MIXP_SCALER_AUTO for NULL (error set). */
MIXP_API mixp_scaler_mode mixp_grad_scaler_mode(const mixp_grad_scaler *scaler);

/**
 * The number of bytes mixp_grad_scaler_save_state() writes.
 * @param scaler The scaler.
 * @param[out] size Receives it.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_grad_scaler_state_size(const mixp_grad_scaler *scaler, size_t *size);

/**
 * Serialises the scaler for a checkpoint: mode, options, scale, growth
 * tracker, backoff and hysteresis counters, in a versioned little-endian
 * format with a magic number and a checksum (synchronises).
 * @param scaler The scaler.
 * @param[out] buf      Receives the bytes (@p capacity available).
 * @param capacity Bytes available in @p buf.
 * @param[out] written  Receives the number of bytes written.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL pointers or a
 *         @p capacity below mixp_grad_scaler_state_size().
 */
MIXP_API mixp_status mixp_grad_scaler_save_state(const mixp_grad_scaler *scaler, void *buf,
                                                 size_t capacity, size_t *written);

/**
 * Restores a state saved by mixp_grad_scaler_save_state(), mode and options
 * included (except below_one, which stays the scaler's own), so that
 * training continues exactly where it was saved.
 * @param scaler The scaler.
 * @param[in] buf The bytes (copied), @p n long.
 * @param n Number of bytes in @p buf.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_CORRUPT for
 *         a truncated buffer, a wrong magic, an unknown version, a checksum
 *         mismatch or an invalid field (the scaler is unchanged);
 *         MIXP_ERR_STATE when called between unscale()/step() and update().
 */
MIXP_API mixp_status mixp_grad_scaler_load_state(mixp_grad_scaler *scaler, const void *buf,
                                                 size_t n);

/** Options for mixp_amp_decorate(); fill with mixp_decorate_options_init(). */
typedef struct mixp_decorate_options {
  uint32_t struct_size;  /**< sizeof(mixp_decorate_options). */
  mixp_dtype dtype;      /**< The low-precision dtype: MIXP_F16 (default) or MIXP_BF16. */
  /** 1 (default): the optimizer keeps an fp32 master of every cast parameter,
   *  updates it from the fp32-cast gradient and rounds it into the half
   *  parameter (Paddle's multi_precision, Apex O2). 0: pure half training. */
  int master_weights;
  /** 1: cast parameters accumulate their gradients in F32 (Paddle's
   *  master_grad), for exact clipping and weight decay. 0 (default): the
   *  gradients have the parameter's dtype. */
  int master_grad;
  /** 1 (default): parameters of normalisation layers stay F32, whatever
   *  @c dtype is. 0: they are cast too. */
  int keep_norm_fp32;
} mixp_decorate_options;

/**
 * The entry point behind mixp_decorate_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_decorate_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_decorate_options_init_sized(mixp_decorate_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_decorate_options_init(mixp_decorate_options *options);
#else
/**
 * Fills @p options with the defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_decorate_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored. Thread-safe.
 */
MIXP_INLINE void mixp_decorate_options_init(mixp_decorate_options *options) {
  if (options) (void)mixp_decorate_options_init_sized(options, sizeof *options);
}
#endif

/**
 * O2 ("pure half") decoration: casts every F32 parameter of @p model to
 * @p options->dtype (F64 and already-half parameters are left as they are;
 * norm layers too with keep_norm_fp32), replacing the parameter tensors in
 * the module, and in @p optimizer replaces each of those parameters by its
 * half version with the old fp32 values as its fp32 master. Parameter
 * handles obtained before the call keep referring to the old fp32 tensors:
 * fetch them again with mixp_module_parameter(). Call it before training.
 * @param model     The module tree to cast.
 * @param optimizer Optional (NULL: only the model is cast). It may also hold
 *                  parameters of other modules (decorate each module with
 *                  the same optimizer); those are left alone, but it must
 *                  hold at least one parameter of @p model.
 * @param options   NULL for the defaults.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or stale handles, a bad
 *         options field, or an optimizer holding none of the model's
 *         parameters; MIXP_ERR_STATE when the model (or a module of it) was
 *         already decorated, or the optimizer has already stepped (its state
 *         exists); MIXP_ERR_DEVICE when model
 *         and optimizer belong to different sessions. A failed call changes
 *         nothing.
 */
MIXP_API mixp_status mixp_amp_decorate(mixp_module *model, mixp_optimizer *optimizer,
                                       const mixp_decorate_options *options);

/**
 * Clips the optimizer's gradients by their global L2 norm (PyTorch's
 * clip_grad_norm_): total = sqrt(sum of g^2 over every gradient) in fp32,
 * then every gradient *= min(1, max_norm / (total + 1e-6)), on the device.
 * A non-finite total leaves the gradients unchanged and sets the
 * optimizer's skip flag, so its next step (plain or through a scaler) is
 * skipped and a scaler counts it as an overflow. With a scaler, call it
 * after mixp_grad_scaler_unscale() so that it clips the true gradients.
 * Parameters without a gradient are ignored (no gradient at all: the norm
 * is 0).
 * @param optimizer The optimizer whose gradients are clipped.
 * @param max_norm   Finite and > 0.
 * @param[out] total_norm NULL, or receives the norm before clipping: an F32
 *                   scalar tensor on the device (owned; reading it
 *                   synchronises).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a bad @p max_norm.
 */
MIXP_API mixp_status mixp_clip_grad_norm(mixp_optimizer *optimizer, double max_norm,
                                         mixp_tensor **total_norm);

/** @} */

/** @defgroup data Datasets and loaders
 *  @{ */

/** Opaque dataset handle: an indexable set of (sample, label) pairs. */
typedef struct mixp_dataset mixp_dataset;
/** Opaque loader handle: yields shuffled mini-batches of a dataset. */
typedef struct mixp_loader mixp_loader;

/**
 * Opens an IDX image file and its IDX label file (MNIST format, gzip or not).
 * Images become U8 samples of shape [1, rows, cols]; labels I64.
 * @param session The session that owns the result.
 * @param[in] images_path Path of the idx3 images file.
 * @param[in] labels_path Path of the idx1 labels file.
 * @param[out] out Receives the dataset (owned: mixp_dataset_destroy()).
 * @return MIXP_OK; MIXP_ERR_IO if a file cannot be opened; MIXP_ERR_CORRUPT
 *         for a truncated or malformed file, or counts that differ.
 */
MIXP_API mixp_status mixp_dataset_idx_open(mixp_session *session, const char *images_path,
                                           const char *labels_path, mixp_dataset **out);

/**
 * Opens the Fashion-MNIST (or MNIST) split found in @p dir, which holds
 * train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz],
 * t10k-images-idx3-ubyte[.gz] and t10k-labels-idx1-ubyte[.gz].
 * @param session The session that owns the result.
 * @param dir   NULL for Debian's /usr/share/datasets/fashion-mnist.
 * @param train 1 for the 60,000 training images, 0 for the 10,000 test images.
 * @param[out] out Receives the dataset (owned).
 * @return As mixp_dataset_idx_open(); the MIXP_ERR_IO message says how to
 *         install the data (apt-get install dataset-fashion-mnist).
 */
MIXP_API mixp_status mixp_dataset_fashion_mnist(mixp_session *session, const char *dir,
                                                int train, mixp_dataset **out);

/** Options for mixp_dataset_synthetic(); fill with mixp_synthetic_options_init(). */
typedef struct mixp_synthetic_options {
  uint32_t struct_size;  /**< sizeof(mixp_synthetic_options). */
  int64_t num_samples;   /**< Samples (default 4096). */
  int64_t channels;      /**< Sample shape C x H x W (default 1 x 28 x 28). */
  int64_t height;        /**< See channels. */
  int64_t width;         /**< See channels. */
  int64_t num_classes;   /**< Classes (default 10). */
  uint64_t seed;         /**< Seed; the same seed gives the same data (default 1). */
  double noise;          /**< Per-pixel noise around each class prototype (default 0.35). */
} mixp_synthetic_options;

/**
 * The entry point behind mixp_synthetic_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_synthetic_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_synthetic_options_init_sized(mixp_synthetic_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_synthetic_options_init(mixp_synthetic_options *options);
#else
/**
 * Fills @p options with defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_synthetic_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored.
 */
MIXP_INLINE void mixp_synthetic_options_init(mixp_synthetic_options *options) {
  if (options) (void)mixp_synthetic_options_init_sized(options, sizeof *options);
}
#endif

/**
 * Creates a learnable synthetic classification dataset: each class has a
 * random prototype image in [0, 255]; a sample is its class prototype plus
 * noise, stored as U8 [C, H, W], with an I64 label. The prototypes depend
 * only on the sample shape and the class count, not on the seed; the seed
 * picks the labels and the noise. So two datasets with different seeds are
 * a train/test split of the same task.
 * @param session The session that owns the result.
 * @param options Sample shape, class count, size, noise and seed.
 * @param[out] out Receives the dataset (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT (non-positive sizes, noise < 0).
 */
MIXP_API mixp_status mixp_dataset_synthetic(mixp_session *session,
                                            const mixp_synthetic_options *options,
                                            mixp_dataset **out);

/**
 * Destroys a dataset. Loaders created from it keep it alive until they are
 * destroyed.
 * @param dataset The dataset, or NULL (no-op).
 */
MIXP_API void mixp_dataset_destroy(mixp_dataset *dataset);

/**
 * Reads any file as a character-level text dataset (for language models
 * such as the zoo's gpt). The vocabulary is the set of distinct bytes in the
 * file, sorted by byte value: token id i stands for the i-th smallest byte
 * present (mixp_dataset_vocab() lists them; mixp_dataset_num_classes() is
 * their count). Sample i is the window of @p block_size tokens starting at
 * byte i, so a file of L bytes has L - block_size samples, and its targets
 * are the same window shifted by one token: loaders yield inputs I64
 * [B, block_size] and labels I64 [B, block_size] (next-token targets).
 * UTF-8 text works byte by byte. The whole file is held in memory.
 * @param session The session that owns the result.
 * @param[in] path       The file.
 * @param     block_size Tokens per sample (>= 1).
 * @param[out] out Receives the dataset (owned: mixp_dataset_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL pointers, block_size
 *         < 1 or a file of at most block_size bytes; MIXP_ERR_IO if the file
 *         cannot be opened or read.
 */
MIXP_API mixp_status mixp_dataset_text(mixp_session *session, const char *path,
                                       int64_t block_size, mixp_dataset **out);

/**
 * The vocabulary of a text dataset: @p bytes[id] receives the byte that
 * token @p id stands for, which is how generated ids are decoded.
 * @param dataset A text dataset.
 * @param[out] bytes    At least mixp_dataset_num_classes() entries (256
 *                      always fits).
 * @param      capacity Entries available in @p bytes.
 * @param[out] size     Receives the vocabulary size.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL pointers, too small a
 *         buffer, or a dataset that is not a text dataset.
 */
MIXP_API mixp_status mixp_dataset_vocab(const mixp_dataset *dataset, unsigned char *bytes,
                                        int capacity, int *size);

/**
 * A new dataset made of samples [start, start + count) of @p dataset
 * (copied), e.g. a held-out split. A text subset holds the windows that
 * start in the range (and the block_size tokens after them) and keeps the
 * parent's vocabulary, so token ids mean the same in both; leaving
 * block_size samples between two subsets keeps their tokens apart.
 * @param dataset The parent dataset.
 * @param start First sample, in [0, size).
 * @param count Number of samples, in [1, size - start].
 * @param[out] out Receives the dataset (owned: mixp_dataset_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL pointers, start
 *         outside [0, size) or count outside [1, size - start].
 */
MIXP_API mixp_status mixp_dataset_subset(const mixp_dataset *dataset, int64_t start,
                                         int64_t count, mixp_dataset **out);

/** @param dataset The dataset.
 *  @return The number of samples, or -1 for NULL. */
MIXP_API int64_t mixp_dataset_size(const mixp_dataset *dataset);

/** @param dataset The dataset.
 *  @return The number of classes (the vocabulary size of a text dataset),
 *          or -1 for NULL. */
MIXP_API int64_t mixp_dataset_num_classes(const mixp_dataset *dataset);

/**
 * The shape of one sample, e.g. {1, 28, 28} ({block_size} for text).
 * @param dataset The dataset.
 * @param[out] shape At least MIXP_MAX_DIMS entries.
 * @param[out] ndim  Receives the number of dimensions.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_dataset_sample_shape(const mixp_dataset *dataset, int64_t *shape,
                                               int *ndim);

/** Options for mixp_loader_create(); fill with mixp_loader_options_init(). */
typedef struct mixp_loader_options {
  uint32_t struct_size;  /**< sizeof(mixp_loader_options). */
  int64_t batch_size;    /**< Samples per batch (default 64). */
  int shuffle;           /**< Reshuffle every epoch (default 1). */
  int drop_last;         /**< Drop the last incomplete batch (default 0). */
  uint64_t seed;         /**< Shuffle seed; epoch e uses a stream derived from (seed, e) (default 0). */
  mixp_dtype dtype;      /**< Float dtype of the input batch (default MIXP_F32); text datasets ignore it (their inputs are I64 token ids), as they ignore scale, mean and std. */
  double scale;          /**< Pixels are first multiplied by this (default 1/255). */
  double mean;           /**< ... then (x - mean) / std (default 0). */
  double std;            /**< See mean (default 1). */
  /** Data parallelism (since 0.5; a 0.4-sized struct reads as 0 and 1): this
   *  loader is shard @c shard_index of @c shard_count, one per rank (see
   *  mixp_dist_rank()). Every shard walks the same per-epoch order (same
   *  seed on every rank) in global batches of shard_count * batch_size
   *  samples and takes its contiguous part of each, so that the shards
   *  together see every sample exactly once per epoch and the global batch
   *  is the one a single process with batch_size * shard_count would see.
   *  Every shard yields the same number of batches: the last global batch is
   *  split as evenly as possible (sizes differ by at most one), and a last
   *  remainder smaller than shard_count joins the batch before it. */
  int shard_index;
  int shard_count;       /**< Number of shards, >= 1 (default 1: no sharding). */
} mixp_loader_options;

/**
 * The entry point behind mixp_loader_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_loader_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_loader_options_init_sized(mixp_loader_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_loader_options_init(mixp_loader_options *options);
#else
/**
 * Fills @p options with defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_loader_options_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored.
 */
MIXP_INLINE void mixp_loader_options_init(mixp_loader_options *options) {
  if (options) (void)mixp_loader_options_init_sized(options, sizeof *options);
}
#endif

/**
 * Creates a loader over a dataset (which it keeps alive).
 * @param dataset The dataset (kept alive by the loader).
 * @param options Batch size, shuffling, normalisation and dtype.
 * @param[out] out Receives the loader (owned: mixp_loader_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for batch_size < 1, std <= 0,
 *         a non-float dtype, shard_count < 1, shard_index outside
 *         [0, shard_count), or (without drop_last) fewer samples than
 *         shards.
 */
MIXP_API mixp_status mixp_loader_create(mixp_dataset *dataset,
                                        const mixp_loader_options *options,
                                        mixp_loader **out);

/**
 * Destroys a loader.
 * @param loader The loader, or NULL (no-op).
 */
MIXP_API void mixp_loader_destroy(mixp_loader *loader);

/**
 * The next batch of the current epoch.
 * @param loader The loader.
 * @param[out] inputs Receives [B, sample shape...] in the loader's dtype
 *                    (owned): [B, C, H, W] for image datasets; I64 token ids
 *                    [B, block_size] for text datasets.
 * @param[out] labels Receives I64 [B] (owned); I64 next-token targets
 *                    [B, block_size] for text datasets.
 * @return MIXP_OK with a batch; MIXP_DONE (outputs untouched) when the epoch
 *         is over, after which the next call starts a new epoch, reshuffled.
 */
MIXP_API mixp_status mixp_loader_next(mixp_loader *loader, mixp_tensor **inputs,
                                      mixp_tensor **labels);

/** @param loader The loader.
 *  @return Batches per epoch, or -1 for NULL. */
MIXP_API int64_t mixp_loader_num_batches(const mixp_loader *loader);

/** @param loader The loader.
 *  @return The current epoch (0-based; incremented when a new epoch starts),
 *          or -1 for NULL. */
MIXP_API int64_t mixp_loader_epoch(const mixp_loader *loader);

/** @} */

/** @defgroup dist Data-parallel training (MPI and NCCL)
 *  One process per rank, launched by `mpirun -np N` (Open MPI); each rank
 *  trains a replica of the model on its shard of the data and the ranks
 *  average their gradients before every optimizer step. CPU tensors move
 *  through MPI, CUDA tensors through NCCL (one communicator per session,
 *  created over MPI). Both are loaded on demand: libmixp.so does not link
 *  them, so it loads and trains where they are absent, and asking for them
 *  there fails with a message naming what is missing.
 *
 *  Every collective is called by every rank, in the same order, with
 *  tensors of the same dtype and shape (a rank that skips one makes the
 *  others wait forever: MPI cannot tell a slow rank from a missing call).
 *  Sums are taken in at least fp32 and rounded once, in a fixed order
 *  (CPU tensors: rank 0 first, whatever algorithm MPI would pick; CUDA
 *  tensors: NCCL's order), so every rank receives bit-identical results.
 *
 *  Mixed precision across ranks: once gradients are averaged every rank
 *  holds the same gradients; on top of that, an optimizer whose gradients a
 *  communicator averaged (mixp_dist_average_gradients()) agrees with the
 *  other ranks on its skip flag before each step: the flag (set by a
 *  GradScaler's unscale or a non-finite clip norm) is reduced with MAX, so
 *  an overflow on any rank makes every rank skip that step and back off its
 *  scale the same way.
 *
 *  Threading: a communicator is used by one thread at a time, like its
 *  session. MPI is initialised once per process, by the first
 *  mixp_dist_create(), and finalised when the last communicator is
 *  destroyed; it cannot be initialised again after that.
 *  @{ */

/** Opaque communicator handle: this process's place among the ranks. */
typedef struct mixp_dist mixp_dist;

/** How the ranks find each other. Values are explicit and append-only. */
typedef MIXP_ENUM(mixp_dist_transport) {
  /** The MPI world this process was launched into (`mpirun -np N`; a process
   *  started alone is a world of one). Needs Open MPI and mixp's MPI plugin
   *  (libmixp_mpi.so, built beside libmixp.so when MPI was found at build
   *  time; the environment variable MIXP_MPI_PLUGIN names another plugin
   *  file or folder, searched first). */
  MIXP_DIST_MPI = 0,
  /** One process, no MPI: rank 0 of a world of one. Collectives still run
   *  (through NCCL with one rank for CUDA tensors), so code written for N
   *  ranks runs unchanged on a machine without MPI. */
  MIXP_DIST_SINGLE = 1
} mixp_dist_transport;

/** Reductions of mixp_dist_all_reduce(). Values are explicit and append-only. */
typedef MIXP_ENUM(mixp_reduce_op) {
  MIXP_REDUCE_SUM = 0, /**< Element-wise sum over the ranks. */
  MIXP_REDUCE_AVG = 1, /**< The sum divided by the world size (float tensors only). */
  MIXP_REDUCE_MAX = 2  /**< Element-wise maximum (NaN wins, as in PyTorch). */
} mixp_reduce_op;

/** Options for mixp_dist_create(); fill with mixp_dist_options_init(). */
typedef struct mixp_dist_options {
  uint32_t struct_size;           /**< sizeof(mixp_dist_options). */
  mixp_dist_transport transport;  /**< MIXP_DIST_MPI. */
  /** Gradients are averaged in buckets of about this many bytes (of their
   *  fp32 staging copies), one collective per bucket, in reverse parameter
   *  order; in [1, 2^40] (default 25 MiB, PyTorch DDP's). */
  int64_t bucket_bytes;
} mixp_dist_options;

/**
 * The entry point behind mixp_dist_options_init(): fills the first @p size
 * bytes of @p options with the defaults and sets struct_size to @p size, the
 * size of the caller's struct. Call it directly only where the inline function
 * cannot be used (a host that resolves functions by name: dlsym, an FFI).
 * Since 0.7.
 * @param[out] options The struct to fill.
 * @param size sizeof(mixp_dist_options) in the caller's mixp.h: one of the
 *             sizes a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_dist_options_init_sized(mixp_dist_options *options, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_dist_options_init(mixp_dist_options *options);
#else
/**
 * Fills @p options with defaults and sets struct_size. Inline since 0.7: it
 * passes the size of the program's own struct to
 * mixp_dist_options_init_sized(), so it never writes past it, whichever library
 * runs the program (see "Options structs" in the introduction).
 * @param[out] options NULL is ignored. Thread-safe.
 */
MIXP_INLINE void mixp_dist_options_init(mixp_dist_options *options) {
  if (options) (void)mixp_dist_options_init_sized(options, sizeof *options);
}
#endif

/**
 * The local rank the launcher gave this process (its index among the ranks
 * on this host), read from the environment (OMPI_COMM_WORLD_LOCAL_RANK,
 * MPI_LOCALRANKID, LOCAL_RANK), for choosing a GPU (`"cuda:<local rank>"`)
 * before any session exists.
 * @return The local rank, or 0 when no launcher set one. Thread-safe.
 */
MIXP_API int mixp_dist_env_local_rank(void);

/**
 * Joins this process to the ranks of its launch and binds the communicator
 * to @p session: collectives take that session's tensors. On a CUDA session
 * this also creates an NCCL communicator on the session's GPU (its unique
 * id made by rank 0 and broadcast over MPI).
 * @param session The session (one communicator per session at a time).
 * @param options NULL for the defaults.
 * @param[out] out Receives the communicator (owned: mixp_dist_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL @p session / @p out or
 *         bad options; MIXP_ERR_STATE when @p session already has a
 *         communicator or MPI was finalised; MIXP_ERR_UNSUPPORTED when MPI
 *         (or mixp's MPI plugin) is not available, saying what is missing,
 *         or when the session's device is neither the CPU nor one with
 *         device collectives (naming the device);
 *         MIXP_ERR_DEVICE when NCCL cannot be loaded or started.
 */
MIXP_API mixp_status mixp_dist_create(mixp_session *session, const mixp_dist_options *options,
                                      mixp_dist **out);

/**
 * Destroys a communicator (the last one in the process finalises MPI).
 * Collective: every rank destroys its communicator.
 * @param dist The communicator, or NULL (no-op).
 */
MIXP_API void mixp_dist_destroy(mixp_dist *dist);

/** @param dist The communicator.
 *  @return This process's rank in [0, world size), or -1 for NULL. */
MIXP_API int mixp_dist_rank(const mixp_dist *dist);
/** @param dist The communicator.
 *  @return The number of ranks, or -1 for NULL. */
MIXP_API int mixp_dist_world_size(const mixp_dist *dist);
/** @param dist The communicator.
 *  @return This process's rank among the ranks on its host, or -1 for NULL. */
MIXP_API int mixp_dist_local_rank(const mixp_dist *dist);
/** @param dist The communicator.
 *  @return A description: transport, MPI library, NCCL version when used
 *          (borrowed, valid until destroy); "" for NULL. */
MIXP_API const char *mixp_dist_describe(const mixp_dist *dist);

/**
 * Reduces @p tensor over the ranks, in place: afterwards every rank holds
 * the result. Collective.
 * @param dist The communicator.
 * @param tensor A tensor of the communicator's session (any strides; float,
 *               I32, I64, U8 or BOOL; AVG needs a float dtype), with the
 *               same dtype and shape on every rank.
 * @param op     The reduction.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or an unknown @p op;
 *         MIXP_ERR_DEVICE for a tensor of another session; MIXP_ERR_DTYPE
 *         for AVG of an integer tensor; MIXP_ERR_DEVICE when the transport
 *         fails.
 */
MIXP_API mixp_status mixp_dist_all_reduce(mixp_dist *dist, mixp_tensor *tensor,
                                          mixp_reduce_op op);

/**
 * Copies rank @p root's @p tensor into every other rank's, in place.
 * Collective.
 * @param dist The communicator.
 * @param tensor Same dtype and shape on every rank.
 * @param root   The source rank, in [0, world size).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a bad @p root.
 */
MIXP_API mixp_status mixp_dist_broadcast(mixp_dist *dist, mixp_tensor *tensor, int root);

/**
 * Gathers every rank's @p tensor: @p out is [world size, tensor's shape...]
 * with rank r's tensor at index r, on every rank. Collective.
 * @param dist The communicator.
 * @param tensor Same dtype and shape on every rank; at most
 *               MIXP_MAX_DIMS - 1 dimensions.
 * @param[out] out Receives the gathered tensor (owned).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_SHAPE for
 *         a tensor of MIXP_MAX_DIMS dimensions.
 */
MIXP_API mixp_status mixp_dist_all_gather(mixp_dist *dist, const mixp_tensor *tensor,
                                          mixp_tensor **out);

/**
 * Returns once every rank has called it. Collective.
 * @param dist The communicator.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL.
 */
MIXP_API mixp_status mixp_dist_barrier(mixp_dist *dist);

/**
 * Makes every rank's copy of @p module equal to rank 0's: broadcasts every
 * parameter and buffer. Call it once after creating the model and before
 * mixp_amp_decorate() (which makes the fp32 masters from the parameters).
 * Collective.
 * @param dist The communicator.
 * @param module A module of the communicator's session.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL; MIXP_ERR_DEVICE for
 *         a module of another session.
 */
MIXP_API mixp_status mixp_dist_broadcast_module(mixp_dist *dist, mixp_module *module);

/**
 * Data parallelism's gradient step: replaces every gradient of @p optimizer's
 * parameters by its average over the ranks, in buckets of
 * mixp_dist_options.bucket_bytes (gradients are summed in fp32, F64 ones in
 * F64, and rounded once to their dtype). A parameter without a gradient
 * counts as zeros and receives the average. From then on the optimizer
 * agrees with the other ranks on skipping steps (see the group's
 * description). Call it after the backward pass of the last micro-batch of
 * a step (with gradient accumulation, not after the others), before
 * mixp_grad_scaler_unscale()/mixp_clip_grad_norm()/the step. Collective.
 * @param dist The communicator.
 * @param optimizer An optimizer of the communicator's session, with the same
 *               parameters (order, dtypes, shapes) on every rank.
 * @param local_samples 0 for the plain average (each rank's gradient weighs
 *               1/world size, as PyTorch DDP); or the samples this rank's
 *               gradient was averaged over, >= 1, to weigh each rank by its
 *               share of the global batch (equal to a single process
 *               training on the whole batch when the ranks' batches differ
 *               in size, as a sharded loader's last batch may).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a negative
 *         @p local_samples; MIXP_ERR_DEVICE for another session's optimizer.
 */
MIXP_API mixp_status mixp_dist_average_gradients(mixp_dist *dist, mixp_optimizer *optimizer,
                                                 int64_t local_samples);

/**
 * Arms the session's next backward pass to average @p optimizer's gradients
 * while it runs (PyTorch DDP's overlap): each bucket is packed as soon as
 * its gradients are final and reduced as soon as it and every bucket
 * planned before it are packed, so the last layers' buckets travel while
 * backward still computes the first layers' gradients. On a CUDA session
 * the reductions run on a second stream beside backward's kernels; the
 * host transport (CPU tensors, MPI) reduces each bucket at once, inside
 * backward. mixp_dist_average_gradients() with the same @p optimizer and
 * @p local_samples then packs what backward did not (unused parameters),
 * reduces the rest, waits and writes the averages: the same bits as
 * averaging after backward without this call. Buckets are reduced in their
 * planned order only, so ranks whose gradients become final in different
 * orders still issue the same collectives.
 *
 * Call it right before the backward pass of a step's last micro-batch
 * (with gradient accumulation, not before the others). The plan covers the
 * next backward pass only; calling this again replaces a plan that no
 * backward pass took. Collective (one small exchange of the ranks' sizes
 * and sample counts). Replacing a gradient it packed (another backward,
 * mixp_optimizer_zero_grad()) before the average fails that average with
 * MIXP_ERR_STATE; if a step fails on one rank, the others wait for its
 * collectives (as with every collective).
 * @param dist The communicator.
 * @param optimizer As for mixp_dist_average_gradients().
 * @param local_samples As for mixp_dist_average_gradients().
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a negative
 *         @p local_samples; MIXP_ERR_DEVICE for another session's
 *         optimizer; MIXP_ERR_SHAPE when the ranks' models differ in size;
 *         MIXP_ERR_OUT_OF_MEMORY for the buckets (allocated here).
 */
MIXP_API mixp_status mixp_dist_prepare_gradients(mixp_dist *dist, mixp_optimizer *optimizer,
                                                 int64_t local_samples);

/** Counters of a communicator's gradient averaging since its creation. */
typedef struct mixp_dist_stats {
  uint32_t struct_size;        /**< sizeof(mixp_dist_stats); set by the caller. */
  int64_t gradient_averages;   /**< Completed mixp_dist_average_gradients() calls. */
  int64_t buckets;             /**< Buckets reduced by them (none in a world of one on the
                                    host transport, where the average is the gradient). */
  int64_t buckets_in_backward; /**< Of those, launched during a backward pass armed by
                                    mixp_dist_prepare_gradients(). */
  int64_t bytes;               /**< Bytes of the buckets reduced (their fp32/f64 staging). */
} mixp_dist_stats;

/**
 * Reads @p dist's gradient-averaging counters.
 * @param dist The communicator.
 * @param[out] stats Filled on success; its struct_size must be set first.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a struct_size
 *         smaller than this version's.
 */
MIXP_API mixp_status mixp_dist_get_stats(const mixp_dist *dist, mixp_dist_stats *stats);

/** @} */

/** @defgroup state Training-state files (safetensors checkpoints)
 *  Saving and resuming a training run. A state file is a
 *  [safetensors](https://github.com/huggingface/safetensors) file, so the
 *  Python `safetensors` package (and PyTorch through it) reads it: module
 *  parameters and buffers under their PyTorch names (fp32 master values for
 *  parameters decorated by mixp_amp_decorate()), optimizer state, the
 *  GradScaler state, loader positions, the session's RNG position and the
 *  global step under names beginning with `__mixp__.`, and metadata strings
 *  (format, mixp version, the caller's metadata, a CRC-32C of every tensor).
 *  See docs/checkpoints.md for the layout.
 *
 *  Files are written atomically (temporary file in the same directory,
 *  fsync, rename, fsync of the directory): after a crash at any moment the
 *  path holds the old file or the complete new one. Loading validates the
 *  whole file (layout, checksums, names, shapes, dtypes) before it changes
 *  anything: a failed load leaves every object as it was.
 *  @{ */

/** What mixp_state_save() writes and mixp_state_load() restores; fill with
 *  mixp_state_spec_init(), then set the arrays (all borrowed during the
 *  call). The same spec shape (same objects, in the same order) must be
 *  used to save and to load. */
typedef struct mixp_state_spec {
  uint32_t struct_size;               /**< sizeof(mixp_state_spec). */
  mixp_module *const *modules;        /**< Modules: parameters and buffers, by name. */
  /** NULL, or one name prefix per module (e.g. "encoder."), prepended to
   *  its tensor names; with NULL the names are the modules' own, which
   *  must then not collide. */
  const char *const *module_prefixes;
  int num_modules;                    /**< Entries in @c modules (0 default). */
  mixp_tensor *const *tensors;        /**< Extra tensors saved and restored in place. */
  const char *const *tensor_names;    /**< Their names (required with @c tensors). */
  int num_tensors;                    /**< Entries in @c tensors (0 default). */
  mixp_optimizer *const *optimizers;  /**< Optimizers: hyper-parameters, step count, per-parameter state. */
  int num_optimizers;                 /**< Entries in @c optimizers (0 default). */
  mixp_grad_scaler *const *scalers;   /**< Loss scalers (their mixp_grad_scaler_save_state() bytes). */
  int num_scalers;                    /**< Entries in @c scalers (0 default). */
  mixp_loader *const *loaders;        /**< Loaders: epoch, position and shuffle seed. */
  int num_loaders;                    /**< Entries in @c loaders (0 default). */
  /** 1 (default): the session's seed and Philox offset (dropout and random
   *  tensors continue the same stream after a resume). */
  int include_rng;
  int64_t step;                       /**< Saved as the global step (0 default); ignored by load. */
  /** NUL-terminated UTF-8 saved as the metadata entry "user" (NULL default:
   *  none); ignored by load (read it with mixp_state_read_metadata()). */
  const char *user_metadata;
} mixp_state_spec;

/**
 * The entry point behind mixp_state_spec_init(): fills the first @p size bytes
 * of @p spec with the defaults and sets struct_size to @p size, the size of the
 * caller's struct. Call it directly only where the inline function cannot be
 * used (a host that resolves functions by name: dlsym, an FFI). Since 0.7.
 * @param[out] spec The struct to fill.
 * @param size sizeof(mixp_state_spec) in the caller's mixp.h: one of the sizes
 *             a release gave the struct (docs/embedding.md).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or a size no release gave
 *         the struct (a newer header's, say): then only struct_size is written,
 *         with a value every function refuses. Thread-safe.
 */
MIXP_API mixp_status mixp_state_spec_init_sized(mixp_state_spec *spec, size_t size);

#if defined(MIXP_LEGACY_OPTIONS_INIT) || defined(SWIG)
MIXP_API void mixp_state_spec_init(mixp_state_spec *spec);
#else
/**
 * Fills @p spec with the defaults (nothing listed, include_rng 1) and sets
 * struct_size. Inline since 0.7: it passes the size of the program's own struct
 * to mixp_state_spec_init_sized(), so it never writes past it, whichever
 * library runs the program (see "Options structs" in the introduction).
 * @param[out] spec NULL is ignored. Thread-safe.
 */
MIXP_INLINE void mixp_state_spec_init(mixp_state_spec *spec) {
  if (spec) (void)mixp_state_spec_init_sized(spec, sizeof *spec);
}
#endif

/**
 * Saves the training state described by @p spec to @p path, atomically
 * (see the group description). Reads every tensor (synchronises).
 * @param session The session all listed objects belong to.
 * @param path NUL-terminated file path; its directory must exist and be
 *             writable. Borrowed during the call.
 * @param spec What to save; borrowed during the call.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL pointers, a bad
 *         struct_size, negative counts, NULL entries or names, stale
 *         handles, or two tensors that end up with the same name;
 *         MIXP_ERR_DEVICE for an object of another session; MIXP_ERR_STATE
 *         for a scaler between unscale()/step() and update(); MIXP_ERR_IO
 *         when the file cannot be written (the old file is left intact).
 *         Threading: no other thread may use the listed objects meanwhile.
 */
MIXP_API mixp_status mixp_state_save(mixp_session *session, const char *path,
                                     const mixp_state_spec *spec);

/**
 * Restores the training state saved by mixp_state_save() with a spec of the
 * same shape: parameter and buffer values (copied in place, so existing
 * handles see them; decorated parameters get their fp32 master and its
 * rounding), optimizer hyper-parameters, step counts and state, scaler
 * state, loader epoch, position and seed, the session's seed and RNG
 * offset. Training then continues bit for bit as if it had not stopped
 * (same thread count). Values are cast to the target dtype when the file's
 * float dtype differs (e.g. an O0 checkpoint into an O2 model).
 * @param session The session all listed objects belong to.
 * @param path NUL-terminated file path; borrowed during the call.
 * @param spec What to restore; borrowed during the call.
 * @param[out] step NULL, or receives the saved global step.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT as for mixp_state_save();
 *         MIXP_ERR_IO when the file cannot be read; MIXP_ERR_CORRUPT for a
 *         truncated or malformed file, a checksum mismatch or an invalid
 *         saved value (the message names the tensor); MIXP_ERR_SHAPE when
 *         the file does not fit the objects: a missing or extra tensor, a
 *         different shape, another number of optimizers, scalers, loaders
 *         or optimizer parameters, another optimizer kind or a loader over
 *         a dataset of another size (the message names the tensor);
 *         MIXP_ERR_DTYPE for a tensor whose dtype cannot be cast to the
 *         target's; MIXP_ERR_STATE for a scaler between unscale()/step()
 *         and update(). A failed call changes nothing.
 */
MIXP_API mixp_status mixp_state_load(mixp_session *session, const char *path,
                                     const mixp_state_spec *spec, int64_t *step);

/**
 * Reads one metadata string of a safetensors file (e.g. "user",
 * "mixp_version", "format") after validating the file's header and layout
 * (not the tensor checksums).
 * @param path NUL-terminated file path; borrowed during the call.
 * @param key NUL-terminated metadata key; borrowed during the call.
 * @param[out] buf NULL (with @p capacity 0) to query the length, or a buffer
 *                 of @p capacity bytes that receives the value and a NUL.
 * @param capacity Bytes available in @p buf.
 * @param[out] length Receives the value's length in bytes, without the NUL.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL @p path, @p key or
 *         @p length, a NULL @p buf with a nonzero capacity, a @p capacity
 *         too small for the value and its NUL (nothing is written to
 *         @p buf; @p length is set), or a key the file does not hold;
 *         MIXP_ERR_IO; MIXP_ERR_CORRUPT for a malformed file. Thread-safe.
 */
MIXP_API mixp_status mixp_state_read_metadata(const char *path, const char *key, char *buf,
                                              size_t capacity, size_t *length);

/**
 * Loads module weights from any safetensors file, e.g. one written by
 * PyTorch (`safetensors.torch.save_file(model.state_dict(), path)`) or by
 * mixp_state_save(): each parameter and buffer of @p module takes the
 * tensor of the same name, cast from F64, F32, F16, BF16, F8_E4M3 or
 * F8_E5M2 (the fp8 values exactly; integer tensors must match the buffer's
 * dtype) to the target's dtype. Tensors
 * whose names begin with `__mixp__.` are ignored, and mixp checksums are
 * verified where present.
 * @param module The module tree to fill (values copied in place).
 * @param optimizer NULL, or the optimizer holding fp32 masters of the
 *                  module's decorated parameters: their masters take the
 *                  values too (in F32) and the parameters their rounding.
 * @param path NUL-terminated file path; borrowed during the call.
 * @param strict 1: every parameter and buffer must be in the file and every
 *               tensor of the file (other than `__mixp__.` ones) must be
 *               one of them (PyTorch's strict load_state_dict). 0: tensors
 *               without a counterpart are skipped on both sides.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or stale handles or
 *         @p strict not 0 or 1; MIXP_ERR_DEVICE when the optimizer belongs
 *         to another session; MIXP_ERR_IO; MIXP_ERR_CORRUPT for a malformed
 *         file or a checksum mismatch; MIXP_ERR_SHAPE for a shape mismatch
 *         or (strict) a missing or unexpected tensor; MIXP_ERR_DTYPE for a
 *         dtype that cannot be cast. The message names the tensor. A
 *         failed call changes nothing.
 */
MIXP_API mixp_status mixp_module_load_safetensors(mixp_module *module, mixp_optimizer *optimizer,
                                                  const char *path, int strict);

/**
 * Imports Hugging Face GPT-2 weights into a zoo gpt (docs/model-zoo.md,
 * "GPT-2 weights"): the safetensors file transformers writes for
 * GPT2LMHeadModel or GPT2Model (names with or without `transformer.`;
 * Conv1D weights [in, out], transposed into mixp's [out, in]; `c_attn`
 * kept packed as the in-projection; `lm_head.weight` absent or equal to
 * `wte.weight`; older files' `attn.bias` causal masks checked, their
 * `attn.masked_bias` ignored). Values are F32, F16 or BF16 in the file and
 * are rounded once to each parameter's dtype. The import checks everything
 * first and writes nothing unless all of it fits: the `config.json` beside
 * the file when there is one (model_type gpt2, activation gelu_new,
 * LayerNorm epsilon 1e-5, tied embeddings, and n_layer, n_head, n_embd,
 * vocab_size, n_positions equal to the model's), the GPT-2 size the
 * shapes give (n_layer, n_embd, vocab, n_positions), then every name,
 * shape and dtype. n_head shapes no tensor: without a config.json it is
 * not checked.
 * @param model A model from mixp_model_create("gpt ... gelu=tanh"); its
 *              parameters are overwritten in place.
 * @param optimizer NULL, or the optimizer holding fp32 masters of the
 *                  model's decorated (O2) parameters: the masters take the
 *                  file's values and the parameters their rounding.
 * @param path A `.safetensors` file, or a directory holding
 *             `model.safetensors` (what save_pretrained writes);
 *             NUL-terminated, borrowed during the call.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or stale handles, an
 *         empty path, a model that is not a gpt or has gelu=erf;
 *         a config.json of another architecture; MIXP_ERR_DEVICE when the
 *         optimizer belongs to another session; MIXP_ERR_IO;
 *         MIXP_ERR_CORRUPT for a malformed file or config.json;
 *         MIXP_ERR_SHAPE for a GPT-2 of another size, a missing, unexpected
 *         or wrongly shaped tensor, an untied `lm_head.weight` or a mask
 *         that is not causal; MIXP_ERR_DTYPE for a tensor not F32, F16 or
 *         BF16. The message names the tensors. A failed call changes
 *         nothing. Not thread-safe for the model (one thread at a time).
 */
MIXP_API mixp_status mixp_model_load_hf_gpt2(mixp_module *model, mixp_optimizer *optimizer,
                                             const char *path);

/**
 * Exports a zoo gpt (gelu=tanh) in the Hugging Face GPT-2 layout, so that
 * `transformers.GPT2LMHeadModel.from_pretrained(dir)` reads it: writes
 * `dir/model.safetensors` (names `transformer.*`, Conv1D weights
 * transposed to [in, out], `lm_head` left tied as transformers saves it,
 * metadata `format=pt`) and `dir/config.json` (model_type gpt2, the
 * model's sizes, activation_function gelu_new, layer_norm_epsilon 1e-5,
 * tied embeddings), each replaced atomically. `dir` is created when it
 * does not exist (not its parents).
 * @param model The gpt to export (read only).
 * @param optimizer NULL, or the optimizer holding fp32 masters of decorated
 *                  parameters: the masters are written instead of the
 *                  half-precision parameters.
 * @param dir Directory path; NUL-terminated, borrowed during the call.
 * @param dtype The file's dtype: MIXP_F32, MIXP_F16 or MIXP_BF16 (values
 *              rounded once to it).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or stale handles, an
 *         empty dir, an unknown dtype, a model that is not a gpt or has
 *         gelu=erf; MIXP_ERR_DTYPE for another dtype; MIXP_ERR_DEVICE when
 *         the optimizer belongs to another session; MIXP_ERR_IO when the
 *         directory or a file cannot be written (files already there keep
 *         their old content).
 */
MIXP_API mixp_status mixp_model_save_hf_gpt2(mixp_module *model, mixp_optimizer *optimizer,
                                             const char *dir, mixp_dtype dtype);

/** @} */

/** @defgroup graph Captured training steps (record once, replay)
 *  A training step captured once and replayed on the same tensors: small
 *  models spend most of an eager step in per-op host work (dispatch,
 *  autocast, autograd), which a replay skips.
 *
 *  Between mixp_graph_capture_begin() and mixp_graph_capture_end() the host
 *  runs one ordinary step (zero_grad, forward, backward, the GradScaler's
 *  scale/unscale/step/update, clipping, the optimizer's step; micro-batches
 *  of gradient accumulation), exactly as eagerly: it runs, and is recorded.
 *  mixp_graph_replay() runs it again, bitwise as an eager step would run on
 *  the same values. The rules:
 *  - Inputs are tensors made before the capture; the host refills them in
 *    place before each replay: mixp_tensor_copy_() from a tensor made with
 *    mixp_tensor_from_host(), or writes into the memory of a tensor made by
 *    mixp_tensor_borrow_host().
 *    Shapes are fixed: a tensor cannot change shape, and releasing an input
 *    (to make one of another shape) makes the graph refuse to replay.
 *  - Tensors made during the capture and still held after it (the loss, the
 *    gradients, the scaled loss) keep valid handles; each replay rewrites
 *    them. Their memory, and all memory the step released, is the graph's
 *    until mixp_graph_destroy() (reported as mixp_memory_stats.graph_bytes).
 *  - What a replay resolves again rather than repeats: the random numbers
 *    (dropout, random fills, stochastic rounding) continue the session's
 *    Philox stream as eager steps would; the optimizer's step count, hence
 *    its learning rate and schedule, advances; optimizer state made by the
 *    captured step (its first one) is made once, not reset by replays; the
 *    GradScaler skips, grows and backs off on the device at each replay.
 *  - Calls that read device values on the host or upload from it cannot be
 *    replayed and fail during a capture with MIXP_ERR_STATE, their message
 *    naming the called function ("mixp_tensor_item: the host cannot read a
 *    tensor's values ... while a training step is captured ..."):
 *    mixp_tensor_item, mixp_tensor_to_host, mixp_tensor_from_host, a
 *    GradScaler's get_scale, the optimizer's gradient statistics, a loader's
 *    next batch, state load and save. The capture
 *    stays usable (the failed call recorded nothing but what it ran before
 *    failing, which has no effect on the step's results).
 *  - The step must not keep a value from before the capture that it
 *    releases: accumulating into last step's gradients (no zero_grad in the
 *    step) is refused by mixp_graph_capture_end.
 *  - The cpu records and replays the backend calls; other devices return
 *    MIXP_ERR_UNSUPPORTED (CUDA graph capture is not implemented yet).
 *  Threading: a graph is used with its session, by one thread at a time.
 *  @{ */

/** Opaque captured step. */
typedef struct mixp_graph mixp_graph;

/**
 * Starts capturing a training step on the session: every call on it until
 * mixp_graph_capture_end() runs as usual and is recorded.
 * @param session The session (borrowed).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL or stale session;
 *         MIXP_ERR_STATE when the session is capturing already, was
 *         destroyed, has the numerics checker on or records an op trace, or
 *         inside backward or a checkpoint region; MIXP_ERR_UNSUPPORTED on a
 *         device other than the cpu, or with a communicator (mixp_dist).
 * @note Thread-safety: like every call on a session.
 */
MIXP_API mixp_status mixp_graph_capture_begin(mixp_session *session);

/**
 * Ends the capture begun on this session and returns the step as a graph.
 * @param session The capturing session (borrowed).
 * @param[out] out Receives the graph, owned by the caller (mixp_graph_destroy);
 *                 written only on success.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL arguments or a stale
 *         session; MIXP_ERR_STATE when the session is not capturing (no begin,
 *         or begun on another session), or when the step used a tensor made
 *         before the capture and released it during the capture (the capture
 *         is then aborted, as by mixp_graph_capture_abort).
 */
MIXP_API mixp_status mixp_graph_capture_end(mixp_session *session, mixp_graph **out);

/**
 * Ends the capture begun on this session without a graph. The step ran as
 * an eager step; tensors it made stay valid.
 * @param session The capturing session (borrowed).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL or stale session;
 *         MIXP_ERR_STATE when the session is not capturing.
 */
MIXP_API mixp_status mixp_graph_capture_abort(mixp_session *session);

/**
 * Runs the captured step again on the same tensors.
 * @param graph The graph (borrowed).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL or destroyed graph;
 *         MIXP_ERR_STATE, having run nothing, when the graph's session was
 *         destroyed or is capturing, when a tensor the step uses that was
 *         made before the capture (an input, a parameter, optimizer or scaler
 *         state, e.g. replaced by mixp_state_load) was released since, or when
 *         an optimizer the step uses was destroyed. A failure inside the step
 *         (an index out of range in an input) is that call's error; the calls
 *         before it have run.
 * @note Thread-safety: like every call on the graph's session.
 */
MIXP_API mixp_status mixp_graph_replay(mixp_graph *graph);

/**
 * Destroys a graph and gives its memory back (blocks still held by tensors
 * stay theirs). NULL is a no-op. The graph's session may have been destroyed.
 * @param graph The graph (owned; invalid afterwards).
 */
MIXP_API void mixp_graph_destroy(mixp_graph *graph);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MIXP_MIXP_H */
