// Shared plumbing of the C ABI shims: every exported function runs its body
// through guard(), which turns mixp::Error and any other C++ exception into
// a status code plus the thread-local message, so nothing escapes the ABI.
#pragma once
#include <cstring>
#include <new>

#include "core/error.hpp"
#include "core/tensor.hpp"

namespace mixp {

// Whether msg begins with "<fn>:".
inline bool starts_with_name(const char *msg, const char *fn) noexcept {
  const size_t n = std::strlen(fn);
  return std::strncmp(msg, fn, n) == 0 && msg[n] == ':';
}

template <class F>
mixp_status guard(const char *fn, F &&body) noexcept {
  try {
    body();
    return MIXP_OK;
  } catch (const Error &e) {
    // Every message starts with the function the caller called. Errors
    // raised below the API layer (a backend's allocator, a device call) do
    // not know which one that is, and those of an inner public call (a
    // layer's forward runs mixp_linear) name the inner one: the caller's
    // name goes in front, the inner detail stays.
    set_last_error(e.status(), starts_with_name(e.what(), fn) ? e.message() : str(fn, ": ", e.message()));
    return e.status();
  } catch (const std::bad_alloc &) {
    set_last_error(MIXP_ERR_OUT_OF_MEMORY, str(fn, ": out of memory"));
    return MIXP_ERR_OUT_OF_MEMORY;
  } catch (const std::exception &e) {
    set_last_error(MIXP_ERR_INTERNAL, str(fn, ": internal error: ", e.what()));
    return MIXP_ERR_INTERNAL;
  } catch (...) {
    set_last_error(MIXP_ERR_INTERNAL, str(fn, ": internal error: unknown exception"));
    return MIXP_ERR_INTERNAL;
  }
}

// For functions that return a value instead of a status: returns `fallback`
// (and sets the error) when the body throws.
template <class T, class F>
T guard_value(const char *fn, T fallback, F &&body) noexcept {
  T result = fallback;
  mixp_status st = guard(fn, [&] { result = body(); });
  return st == MIXP_OK ? result : fallback;
}

// Fails with MIXP_ERR_INVALID_ARGUMENT when an out-pointer is NULL.
template <class T>
void check_out(T *out, const char *fn, const char *arg = "out") {
  if (!out) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
}

// Hands a tensor to the caller through an out-parameter.
inline void give(mixp_tensor **out, TensorPtr t) noexcept { *out = t.release(); }

// Borrows a C handle as a TensorPtr (adds a reference).
inline TensorPtr share(const mixp_tensor *t) noexcept {
  return TensorPtr::share(const_cast<mixp_tensor *>(t));
}

// A validated tensor argument, borrowed as a TensorPtr.
inline TensorPtr share_checked(const mixp_tensor *t, const char *fn, const char *arg) {
  return share(check_tensor(t, fn, arg));
}

// An optional tensor argument: NULL stays null, anything else is validated.
inline TensorPtr optional_tensor(const mixp_tensor *t, const char *fn, const char *arg) {
  return t ? share_checked(t, fn, arg) : TensorPtr();
}

// A 0/1 flag argument.
inline int check_flag(int v, const char *fn, const char *arg) {
  if (v != 0 && v != 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " must be 0 or 1, got ", v);
  return v;
}

// A dtype argument that must name one of mixp's dtypes.
inline DType check_dtype(mixp_dtype dtype, const char *fn) {
  if (!dtype_valid(int(dtype))) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown dtype ", int(dtype));
  return dtype;
}

}  // namespace mixp
