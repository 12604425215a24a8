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
 *   working with a newer library.
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
#  define MIXP_API
#endif

/* Every enum is int-sized in C. In C++ its underlying type is fixed to int
 * so that any int a C caller passes is a valid value (the library rejects
 * unknown values with MIXP_ERR_INVALID_ARGUMENT instead of invoking UB). */
#ifdef __cplusplus
#  define MIXP_ENUM(name) enum name : int
#else
#  define MIXP_ENUM(name) enum name
#endif

/** Major version: bumped on any ABI-breaking change (it is the SONAME). */
#define MIXP_VERSION_MAJOR 0
/** Minor version: bumped when functions or struct fields are added. */
#define MIXP_VERSION_MINOR 1
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

/** Options for mixp_session_create(). Fill with mixp_session_options_init(). */
typedef struct mixp_session_options {
  uint32_t struct_size;  /**< sizeof(mixp_session_options); set by init. */
  /** "cpu", "cuda", "cuda:N" or "auto" (default "cpu"). "auto" uses CUDA when
   *  its backend loads and a GPU is present, else the CPU, and says which in
   *  mixp_session_device_note(). Borrowed during the call only. */
  const char *device;
  uint64_t seed;         /**< Seed of the counter-based (Philox) RNG; default 0. */
  int num_threads;       /**< CPU threads for kernels; 0 (default) = all cores. */
} mixp_session_options;

/**
 * Fills @p options with defaults and sets struct_size.
 * @param[out] options The struct to fill; NULL is ignored.
 */
MIXP_API void mixp_session_options_init(mixp_session_options *options);

/**
 * Creates a session.
 * @param[in]  options NULL for defaults, or options filled by
 *                     mixp_session_options_init().
 * @param[out] out     Receives the session, owned by the caller: destroy it
 *                     with mixp_session_destroy().
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a NULL @p out, a bad
 *         struct_size, an unknown device string or a negative thread count;
 *         MIXP_ERR_DEVICE when "cuda" is asked for and cannot be served.
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
 * @return A string borrowed from the session, valid while it lives; "" for a
 *         NULL session.
 */
MIXP_API const char *mixp_session_device(const mixp_session *session);

/**
 * A human-readable note on how the device was chosen, e.g. "device 'auto':
 * no CUDA backend in this build, using cpu". "" when there is nothing to say.
 * @return A string borrowed from the session, valid while it lives.
 */
MIXP_API const char *mixp_session_device_note(const mixp_session *session);

/**
 * The number of CPU threads kernels of this session use.
 * @return The thread count (>= 1), or 0 for a NULL session.
 */
MIXP_API int mixp_session_num_threads(const mixp_session *session);

/**
 * Re-seeds the session's random-number stream and resets its counter, so
 * that the same seed reproduces the same sequence of random tensors.
 * @return MIXP_OK, or MIXP_ERR_INVALID_ARGUMENT for a NULL session.
 */
MIXP_API mixp_status mixp_session_set_seed(mixp_session *session, uint64_t seed);

/**
 * Enters a no-grad region: until the matching mixp_no_grad_end(), operations
 * record no autograd graph. Regions nest.
 * @return MIXP_OK, or MIXP_ERR_INVALID_ARGUMENT for a NULL session.
 */
MIXP_API mixp_status mixp_no_grad_begin(mixp_session *session);

/**
 * Leaves the innermost no-grad region.
 * @return MIXP_OK; MIXP_ERR_STATE if no region is open.
 */
MIXP_API mixp_status mixp_no_grad_end(mixp_session *session);

/**
 * Whether operations currently record gradients.
 * @return 1 if grad mode is on, 0 inside a no-grad region or for NULL.
 */
MIXP_API int mixp_grad_enabled(const mixp_session *session);

/** Byte counts of the tensor memory a session has allocated. */
typedef struct mixp_memory_stats {
  uint32_t struct_size;    /**< sizeof(mixp_memory_stats); set by the caller. */
  uint64_t current_bytes;  /**< Bytes held by live tensor storage now. */
  uint64_t peak_bytes;     /**< Highest current_bytes since creation or the last reset. */
} mixp_memory_stats;

/**
 * Reads the session's tensor-memory statistics.
 * @param[out] stats Filled on success; its struct_size must be set first.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_memory_stats_get(const mixp_session *session,
                                           mixp_memory_stats *stats);

/**
 * Sets the peak to the current value.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_memory_stats_reset_peak(mixp_session *session);

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
  MIXP_BOOL = 7   /**< One byte, 0 or 1. */
} mixp_dtype;

/**
 * Size of one element in bytes.
 * @return 1, 2, 4 or 8; 0 for an unknown dtype. Thread-safe.
 */
MIXP_API size_t mixp_dtype_size(mixp_dtype dtype);

/**
 * Lowercase name of a dtype: "f32", "f16", "bf16", "f64", "i32", "i64",
 * "u8", "bool".
 * @return A static string; "unknown" for an unknown dtype. Thread-safe.
 */
MIXP_API const char *mixp_dtype_name(mixp_dtype dtype);

/**
 * Creates a contiguous tensor holding a copy of host memory.
 * @param[in]  data   Host values in row-major order, @p nbytes long; copied.
 *                    May be NULL only when the tensor has no elements.
 * @param      nbytes Must equal numel(shape) * mixp_dtype_size(dtype).
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
 * @param[in] data       Host memory, aligned to the dtype's size.
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

/**
 * Copies a tensor's values to host memory in row-major order (any strides).
 * @param[out] dst    Receives the values.
 * @param      nbytes Must equal numel * element size.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL pointers or a wrong
 *         size.
 */
MIXP_API mixp_status mixp_tensor_to_host(const mixp_tensor *tensor, void *dst,
                                         size_t nbytes);

/**
 * Creates a tensor filled with zeros.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_zeros(mixp_session *session, mixp_dtype dtype,
                                       const int64_t *shape, int ndim,
                                       mixp_tensor **out);

/**
 * Creates a tensor filled with ones.
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_ones(mixp_session *session, mixp_dtype dtype,
                                      const int64_t *shape, int ndim,
                                      mixp_tensor **out);

/**
 * Creates a tensor filled with @p value, converted to @p dtype with
 * round-to-nearest-even (integers: truncation toward zero).
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_full(mixp_session *session, mixp_dtype dtype,
                                      const int64_t *shape, int ndim,
                                      double value, mixp_tensor **out);

/**
 * Creates a 1-D tensor with values start, start+step, ... < end (> end for a
 * negative step), like numpy.arange.
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
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK; MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_tensor_rand(mixp_session *session, mixp_dtype dtype,
                                      const int64_t *shape, int ndim,
                                      mixp_tensor **out);

/**
 * Creates a float tensor of standard-normal values (Box-Muller over the
 * session's Philox stream).
 * @param[out] out Receives the tensor (owned).
 * @return MIXP_OK; MIXP_ERR_DTYPE for a non-float dtype.
 */
MIXP_API mixp_status mixp_tensor_randn(mixp_session *session, mixp_dtype dtype,
                                       const int64_t *shape, int ndim,
                                       mixp_tensor **out);

/**
 * Adds a reference.
 * @return @p tensor itself (so `b = mixp_tensor_retain(a)` reads naturally),
 *         or NULL for NULL. Thread-safe.
 */
MIXP_API mixp_tensor *mixp_tensor_retain(mixp_tensor *tensor);

/**
 * Drops a reference; the tensor is freed when the last one goes.
 * @param tensor The tensor, or NULL (no-op). Thread-safe.
 */
MIXP_API void mixp_tensor_release(mixp_tensor *tensor);

/** @return The tensor's dtype; MIXP_F32 for NULL (and the error is set). */
MIXP_API mixp_dtype mixp_tensor_dtype(const mixp_tensor *tensor);

/** @return The number of dimensions, or -1 for NULL. */
MIXP_API int mixp_tensor_ndim(const mixp_tensor *tensor);

/**
 * Size of one dimension; negative @p dim counts from the end.
 * @return The size, or -1 for NULL or an out-of-range dim (error set).
 */
MIXP_API int64_t mixp_tensor_dim(const mixp_tensor *tensor, int dim);

/**
 * Stride of one dimension in elements; negative @p dim counts from the end.
 * @return The stride, or 0 for NULL or an out-of-range dim (error set).
 */
MIXP_API int64_t mixp_tensor_stride(const mixp_tensor *tensor, int dim);

/**
 * Copies the shape into a caller buffer.
 * @param[out] shape    At least @p capacity entries; receives ndim sizes.
 * @param      capacity Entries available in @p shape (MIXP_MAX_DIMS always fits).
 * @param[out] ndim     Receives the number of dimensions.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL or too small a buffer.
 */
MIXP_API mixp_status mixp_tensor_shape(const mixp_tensor *tensor, int64_t *shape,
                                       int capacity, int *ndim);

/** @return The number of elements, or -1 for NULL. */
MIXP_API int64_t mixp_tensor_numel(const mixp_tensor *tensor);

/** @return 1 if the tensor is row-major contiguous, 0 otherwise or for NULL. */
MIXP_API int mixp_tensor_is_contiguous(const mixp_tensor *tensor);

/**
 * The session a tensor belongs to.
 * @return Borrowed pointer (do not destroy), or NULL for NULL.
 */
MIXP_API mixp_session *mixp_tensor_session(const mixp_tensor *tensor);

/**
 * Reads a one-element tensor as a double.
 * @param[out] value Receives the value.
 * @return MIXP_OK; MIXP_ERR_SHAPE if the tensor has more than one element.
 */
MIXP_API mixp_status mixp_tensor_item(const mixp_tensor *tensor, double *value);

/**
 * Copies the values of @p src into @p dst in place (converting the dtype,
 * broadcasting @p src). Not recorded by autograd; @p dst must not require
 * grad unless grad mode is off.
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
 * @return MIXP_OK; MIXP_ERR_DTYPE for a non-float tensor; MIXP_ERR_STATE for a
 *         non-leaf tensor (one produced by a recorded operation).
 */
MIXP_API mixp_status mixp_tensor_set_requires_grad(mixp_tensor *tensor,
                                                   int requires_grad);

/** @return 1 if the tensor requires grad, else 0 (also for NULL). */
MIXP_API int mixp_tensor_requires_grad(const mixp_tensor *tensor);

/** @return 1 if the tensor is a leaf of the graph (made by the user, not by a
 *          recorded operation), else 0 (also for NULL). */
MIXP_API int mixp_tensor_is_leaf(const mixp_tensor *tensor);

/**
 * The gradient accumulated in a leaf tensor.
 * @param[out] out Receives a new reference to the gradient (release it), or
 *                 NULL if no gradient has been accumulated.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_grad(const mixp_tensor *tensor, mixp_tensor **out);

/**
 * Drops the accumulated gradient (the next backward starts from none).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_tensor_zero_grad(mixp_tensor *tensor);

/**
 * A tensor sharing storage with @p tensor but cut off from the graph.
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
 *         accumulated then); MIXP_ERR_SHAPE for a wrong seed shape or a
 *         non-scalar loss without a seed.
 */
MIXP_API mixp_status mixp_backward(mixp_tensor *loss, const mixp_tensor *seed_grad);

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
 *  between float types. */
MIXP_API mixp_status mixp_cast(const mixp_tensor *x, mixp_dtype dtype, mixp_tensor **out);

/** (reshape) A view with a new shape of equal numel; one entry may be -1.
 *  Copies when the strides do not allow a view. */
MIXP_API mixp_status mixp_reshape(const mixp_tensor *x, const int64_t *shape, int ndim,
                                  mixp_tensor **out);

/** (transpose) A view with dimensions @p dim0 and @p dim1 swapped. */
MIXP_API mixp_status mixp_transpose(const mixp_tensor *x, int dim0, int dim1,
                                    mixp_tensor **out);

/** (permute) A view with dimensions reordered: output dim i is input dim
 *  dims[i]; @p ndim must equal the tensor's ndim. */
MIXP_API mixp_status mixp_permute(const mixp_tensor *x, const int *dims, int ndim,
                                  mixp_tensor **out);

/** (slice) A view of elements start, start+step, ... < end along @p dim.
 *  Negative start/end count from the end; both are clamped to the size;
 *  @p step must be >= 1. */
MIXP_API mixp_status mixp_slice(const mixp_tensor *x, int dim, int64_t start, int64_t end,
                                int64_t step, mixp_tensor **out);

/** (contiguous) A row-major copy, or a new reference if already contiguous. */
MIXP_API mixp_status mixp_contiguous(const mixp_tensor *x, mixp_tensor **out);

/** (matmul) Matrix product of 2-D tensors [M,K] x [K,N], or batched when
 *  either has more dims (batch dims broadcast), like numpy.matmul. */
MIXP_API mixp_status mixp_matmul(const mixp_tensor *a, const mixp_tensor *b,
                                 mixp_tensor **out);

/** (bmm) Batched matrix product [B,M,K] x [B,K,N] -> [B,M,N]. */
MIXP_API mixp_status mixp_bmm(const mixp_tensor *a, const mixp_tensor *b,
                              mixp_tensor **out);

/** (linear) y = x W^T + b with x [..., in], W [out, in], b [out] or NULL. */
MIXP_API mixp_status mixp_linear(const mixp_tensor *x, const mixp_tensor *weight,
                                 const mixp_tensor *bias, mixp_tensor **out);

/** (add) a + b. */
MIXP_API mixp_status mixp_add(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);
/** (sub) a - b. */
MIXP_API mixp_status mixp_sub(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);
/** (mul) a * b. */
MIXP_API mixp_status mixp_mul(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);
/** (div) a / b. */
MIXP_API mixp_status mixp_div(const mixp_tensor *a, const mixp_tensor *b, mixp_tensor **out);

/** (add_scalar) x + s. */
MIXP_API mixp_status mixp_add_scalar(const mixp_tensor *x, double s, mixp_tensor **out);
/** (mul_scalar) x * s. */
MIXP_API mixp_status mixp_mul_scalar(const mixp_tensor *x, double s, mixp_tensor **out);
/** (rsub_scalar) s - x. */
MIXP_API mixp_status mixp_rsub_scalar(const mixp_tensor *x, double s, mixp_tensor **out);
/** (rdiv_scalar) s / x. */
MIXP_API mixp_status mixp_rdiv_scalar(const mixp_tensor *x, double s, mixp_tensor **out);

/** (neg) -x. */
MIXP_API mixp_status mixp_neg(const mixp_tensor *x, mixp_tensor **out);
/** (exp) e^x. */
MIXP_API mixp_status mixp_exp(const mixp_tensor *x, mixp_tensor **out);
/** (log) natural logarithm. */
MIXP_API mixp_status mixp_log(const mixp_tensor *x, mixp_tensor **out);
/** (sqrt) square root. */
MIXP_API mixp_status mixp_sqrt(const mixp_tensor *x, mixp_tensor **out);
/** (pow) x^exponent for a scalar exponent. */
MIXP_API mixp_status mixp_pow(const mixp_tensor *x, double exponent, mixp_tensor **out);
/** (relu) max(x, 0). */
MIXP_API mixp_status mixp_relu(const mixp_tensor *x, mixp_tensor **out);

/** Which formula mixp_gelu() uses. */
typedef MIXP_ENUM(mixp_gelu_approx) {
  MIXP_GELU_ERF = 0,   /**< x/2 (1 + erf(x / sqrt 2)), PyTorch's default. */
  MIXP_GELU_TANH = 1   /**< x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))). */
} mixp_gelu_approx;

/** (gelu) Gaussian error linear unit. */
MIXP_API mixp_status mixp_gelu(const mixp_tensor *x, mixp_gelu_approx approx,
                               mixp_tensor **out);
/** (sigmoid) 1 / (1 + e^-x). */
MIXP_API mixp_status mixp_sigmoid(const mixp_tensor *x, mixp_tensor **out);
/** (tanh) hyperbolic tangent. */
MIXP_API mixp_status mixp_tanh(const mixp_tensor *x, mixp_tensor **out);

/** (sum) Sum over @p dims (each in [-ndim, ndim), no repeats); @p ndims = 0
 *  (dims may be NULL) sums everything. @p keepdim keeps reduced dims as 1. */
MIXP_API mixp_status mixp_sum(const mixp_tensor *x, const int *dims, int ndims, int keepdim,
                              mixp_tensor **out);
/** (mean) Mean over @p dims, as mixp_sum(). */
MIXP_API mixp_status mixp_mean(const mixp_tensor *x, const int *dims, int ndims, int keepdim,
                               mixp_tensor **out);

/** (max) Maximum along @p dim. @p values receives the maxima (owned); @p indices
 *  (may be NULL) receives their I64 positions (owned; the first on ties).
 *  The gradient flows to the first maximal position. */
MIXP_API mixp_status mixp_max(const mixp_tensor *x, int dim, int keepdim,
                              mixp_tensor **values, mixp_tensor **indices);
/** (argmax) I64 positions of the maxima along @p dim (first on ties). */
MIXP_API mixp_status mixp_argmax(const mixp_tensor *x, int dim, int keepdim,
                                 mixp_tensor **out);

/** (softmax) Softmax along @p dim. */
MIXP_API mixp_status mixp_softmax(const mixp_tensor *x, int dim, mixp_tensor **out);
/** (log_softmax) Log of the softmax along @p dim, computed stably. */
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
 *  and are excluded from the mean; other targets must be in [0, C). */
MIXP_API mixp_status mixp_cross_entropy(const mixp_tensor *logits, const mixp_tensor *target,
                                        mixp_reduction reduction, int64_t ignore_index,
                                        mixp_tensor **out);
/** (mse_loss) Mean (or sum, or none) of (a - b)^2; shapes must be equal. */
MIXP_API mixp_status mixp_mse_loss(const mixp_tensor *a, const mixp_tensor *b,
                                   mixp_reduction reduction, mixp_tensor **out);
/** (dropout) Zeroes each element with probability @p p (Philox stream of the
 *  session) and scales the rest by 1/(1-p); identity when @p training is 0 or
 *  p = 0. @p p must be in [0, 1). */
MIXP_API mixp_status mixp_dropout(const mixp_tensor *x, double p, int training,
                                  mixp_tensor **out);
/** (cat) Concatenates @p n >= 1 tensors of equal dtype along @p dim; other dims
 *  must match. */
MIXP_API mixp_status mixp_cat(const mixp_tensor *const *tensors, int n, int dim,
                              mixp_tensor **out);

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
 * @param[out] out Receives the output (owned).
 * @return The status of the underlying operations.
 */
MIXP_API mixp_status mixp_module_forward(mixp_module *module, const mixp_tensor *x,
                                         mixp_tensor **out);

/** @return The number of parameters, or -1 for NULL. */
MIXP_API int mixp_module_num_parameters(const mixp_module *module);

/**
 * One parameter of a module.
 * @param index In [0, mixp_module_num_parameters()).
 * @param[out] out Receives a new reference (release it).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_module_parameter(const mixp_module *module, int index,
                                           mixp_tensor **out);

/**
 * The dotted name of a parameter, e.g. "weight".
 * @return A string borrowed from the module, valid while it lives; NULL for
 *         a bad module or index (error set).
 */
MIXP_API const char *mixp_module_parameter_name(const mixp_module *module, int index);

/**
 * Switches training mode (1) or evaluation mode (0), recursively.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_module_set_training(mixp_module *module, int training);

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
} mixp_optimizer_options;

/**
 * Fills @p options with PyTorch's defaults for @p kind and sets struct_size.
 * @param[out] options NULL is ignored.
 */
MIXP_API void mixp_optimizer_options_init(mixp_optimizer_options *options,
                                          mixp_optimizer_kind kind);

/**
 * Creates an optimizer over @p n parameters. The optimizer keeps references
 * to them; their state (moments) is created lazily on the first step.
 * @param[in] params Leaf float tensors that require grad, all of one session,
 *                   no duplicates; the array is copied.
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
 * Parameters without a gradient are skipped.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for NULL.
 */
MIXP_API mixp_status mixp_optimizer_step(mixp_optimizer *optimizer);

/**
 * Drops the gradients of all parameters (PyTorch's set_to_none=True).
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_optimizer_zero_grad(mixp_optimizer *optimizer);

/**
 * The learning rate the next step will use.
 * @param[out] lr Receives it.
 * @return MIXP_OK or MIXP_ERR_INVALID_ARGUMENT.
 */
MIXP_API mixp_status mixp_optimizer_get_lr(const mixp_optimizer *optimizer, double *lr);

/**
 * Sets the base learning rate (the schedule scales it).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for a negative or non-finite lr.
 */
MIXP_API mixp_status mixp_optimizer_set_lr(mixp_optimizer *optimizer, double lr);

/**
 * The number of steps taken so far.
 * @return The count, or -1 for NULL.
 */
MIXP_API int64_t mixp_optimizer_step_count(const mixp_optimizer *optimizer);

/**
 * The learning rate a schedule gives at a step, without an optimizer (for
 * plots and tests). Uses options->lr, schedule, warmup_steps, total_steps and
 * min_lr.
 * @param[out] lr Receives it.
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for bad options or step < 0.
 */
MIXP_API mixp_status mixp_lr_schedule_value(const mixp_optimizer_options *options,
                                            int64_t step, double *lr);

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
 * Fills @p options with defaults and sets struct_size.
 * @param[out] options NULL is ignored.
 */
MIXP_API void mixp_synthetic_options_init(mixp_synthetic_options *options);

/**
 * Creates a learnable synthetic classification dataset: each class has a
 * random prototype image in [0, 255]; a sample is its class prototype plus
 * noise, stored as U8 [C, H, W], with an I64 label. The prototypes depend
 * only on the sample shape and the class count, not on the seed; the seed
 * picks the labels and the noise. So two datasets with different seeds are
 * a train/test split of the same task.
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

/** @return The number of samples, or -1 for NULL. */
MIXP_API int64_t mixp_dataset_size(const mixp_dataset *dataset);

/** @return The number of classes, or -1 for NULL. */
MIXP_API int64_t mixp_dataset_num_classes(const mixp_dataset *dataset);

/**
 * The shape of one sample, e.g. {1, 28, 28}.
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
  mixp_dtype dtype;      /**< Float dtype of the input batch (default MIXP_F32). */
  double scale;          /**< Pixels are first multiplied by this (default 1/255). */
  double mean;           /**< ... then (x - mean) / std (default 0). */
  double std;            /**< See mean (default 1). */
} mixp_loader_options;

/**
 * Fills @p options with defaults and sets struct_size.
 * @param[out] options NULL is ignored.
 */
MIXP_API void mixp_loader_options_init(mixp_loader_options *options);

/**
 * Creates a loader over a dataset (which it keeps alive).
 * @param[out] out Receives the loader (owned: mixp_loader_destroy()).
 * @return MIXP_OK; MIXP_ERR_INVALID_ARGUMENT for batch_size < 1, std <= 0 or
 *         a non-float dtype.
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
 * @param[out] inputs Receives [B, sample shape...] in the loader's dtype (owned).
 * @param[out] labels Receives I64 [B] (owned).
 * @return MIXP_OK with a batch; MIXP_DONE (outputs untouched) when the epoch
 *         is over, after which the next call starts a new epoch, reshuffled.
 */
MIXP_API mixp_status mixp_loader_next(mixp_loader *loader, mixp_tensor **inputs,
                                      mixp_tensor **labels);

/** @return Batches per epoch, or -1 for NULL. */
MIXP_API int64_t mixp_loader_num_batches(const mixp_loader *loader);

/** @return The current epoch (0-based; incremented when a new epoch starts),
 *          or -1 for NULL. */
MIXP_API int64_t mixp_loader_epoch(const mixp_loader *loader);

/** @} */

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* MIXP_MIXP_H */
