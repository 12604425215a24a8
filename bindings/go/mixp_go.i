/* mixp_go.i: the Go part of mixp.i (included by it; never run alone).
 *
 * SWIG (-go -cgo) turns this into the internal package mixp.dev/mixp/internal/raw:
 * the C API function for function, shaped so that the hand-written package
 * mixp.dev/mixp can wrap it without ever handing C a Go pointer to keep:
 *   - every handle (session, tensor, module, ...) is a plain uintptr, owned
 *     by the idiomatic layer's Close()/finalizer;
 *   - a mixp_status result comes back as raw.Status{Code, Message}; the
 *     message is the text of mixp_last_error() read by the %exception block
 *     of mixp.i inside this same C call. A cgo call runs start to finish on
 *     one OS thread, so no goroutine needs runtime.LockOSThread;
 *   - T **out parameters are *uintptr, scalar outs are *float64/*int32/...;
 *   - shapes, dims and byte buffers are Go slices, read or written by C only
 *     during the call (Go memory holding no Go pointers: allowed by cgo);
 *   - arrays of tensors are []uintptr; lists of op names a NUL-joined string.
 *   - DLPack managed tensors (C memory another native library produced or
 *     will consume) are uintptr too; the idiomatic layer hands them out as
 *     unsafe.Pointer (dlpack.go).
 * Not reachable from Go: mixp_tensor_borrow_host() (C would keep a Go
 * pointer) and the log callback (it would need a cgo export; warnings go to
 * stderr, the numerics report is readable with mixp_session_numerics_report()).
 */

%{
#include <string>
#include <string.h>

/* Filled by MIXP_SWIG_RAISE in the %exception block and read by the
 * mixp_status out typemap, both inside one wrapper call on one thread. */
static thread_local std::string mixp_swig_go_message;
%}

%define MIXP_SWIG_RAISE(status, message)
  mixp_swig_go_message.assign(message);
%enddef
#define MIXP_SWIG_RAISE_DEFINED

%go_import("strings")

/* ---- status: raw.Status{Code, Message} ----------------------------------- */
%insert(go_wrapper) %{
// Status is the result of a C call: Code is the mixp_status value (0 OK,
// 1 DONE, negative errors) and Message the text of mixp_last_error() read
// inside the same C call (empty unless Code < 0).
type Status struct {
	Code    int
	Message string
}

func swigParseStatus(s string) Status {
	if s == "" {
		return Status{}
	}
	i := strings.IndexByte(s, ':')
	code := 0
	neg := false
	for _, c := range s[:i] {
		if c == '-' {
			neg = true
			continue
		}
		code = code*10 + int(c-'0')
	}
	if neg {
		code = -code
	}
	return Status{Code: code, Message: s[i+1:]}
}

// JoinNames encodes a list of op names for the autocast helpers.
func JoinNames(names []string) string {
	var b strings.Builder
	for _, n := range names {
		b.WriteString(n)
		b.WriteByte(0)
	}
	return b.String()
}
%}

%typemap(gotype) mixp_status "Status"
%typemap(imtype) mixp_status "string"
%typemap(out, fragment="AllocateString") mixp_status %{
  if ($1 == MIXP_OK) {
    $result = Swig_AllocateString("", 0);
  } else {
    std::string enc = std::to_string((int)$1) + ":";
    if ($1 < 0) enc += mixp_swig_go_message;
    $result = Swig_AllocateString(enc.data(), enc.size());
  }
%}
%typemap(goout, fragment="CopyString") mixp_status %{ $result = swigParseStatus(swigCopyString($1)) %}

/* A status passed in (mixp_status_string) is just its int. */
%typemap(gotype) mixp_status status "int"
%typemap(imtype) mixp_status status "int"
%typemap(in) mixp_status status %{ $1 = (mixp_status)$input; %}

/* The status values themselves are Go constants of the idiomatic package
 * (mixp.Status); as raw constants they would go through the result typemap. */
%ignore MIXP_OK;
%ignore MIXP_DONE;
%ignore MIXP_ERR_INVALID_ARGUMENT;
%ignore MIXP_ERR_SHAPE;
%ignore MIXP_ERR_DTYPE;
%ignore MIXP_ERR_DEVICE;
%ignore MIXP_ERR_OUT_OF_MEMORY;
%ignore MIXP_ERR_STATE;
%ignore MIXP_ERR_CORRUPT;
%ignore MIXP_ERR_IO;
%ignore MIXP_ERR_NUMERIC;
%ignore MIXP_ERR_UNSUPPORTED;
%ignore MIXP_ERR_INTERNAL;

/* ---- handles: uintptr ------------------------------------------------------ */
%define MIXP_GO_HANDLE(TYPE)
%typemap(gotype) TYPE *, const TYPE * "uintptr"
%typemap(imtype) TYPE *, const TYPE * "uintptr"
%typemap(in) TYPE *, const TYPE * %{ $1 = ($1_ltype)$input; %}
%typemap(out) TYPE *, const TYPE * %{ $result = $1; %}
%typemap(goout) TYPE *, const TYPE * ""
%typemap(gotype) TYPE ** "*uintptr"
%typemap(imtype) TYPE ** "*uintptr"
%typemap(in) TYPE ** %{ $1 = ($1_ltype)$input; %}
%enddef
MIXP_GO_HANDLE(mixp_session)
MIXP_GO_HANDLE(mixp_tensor)
MIXP_GO_HANDLE(mixp_module)
MIXP_GO_HANDLE(mixp_optimizer)
MIXP_GO_HANDLE(mixp_grad_scaler)
MIXP_GO_HANDLE(mixp_dataset)
MIXP_GO_HANDLE(mixp_loader)
MIXP_GO_HANDLE(mixp_trace)
MIXP_GO_HANDLE(mixp_profile)
MIXP_GO_HANDLE(mixp_dist)
MIXP_GO_HANDLE(DLManagedTensor)
MIXP_GO_HANDLE(DLManagedTensorVersioned)
MIXP_GO_HANDLE(mixp_graph)

/* split(): one output per entry of sizes (arg3); a short slice becomes NULL
 * so that mixp reports it instead of writing past the Go memory. */
%typemap(gotype) mixp_tensor **outs "[]uintptr"
%typemap(imtype) mixp_tensor **outs "[]uintptr"
%typemap(in) mixp_tensor **outs %{
  $1 = ($input.len >= (intgo)arg3 && arg3 > 0) ? (mixp_tensor **)$input.array : NULL;
%}

/* ---- scalar out-parameters -------------------------------------------------- */
%define MIXP_GO_OUT(CTYPE, GOTYPE)
%typemap(gotype) CTYPE "GOTYPE"
%typemap(imtype) CTYPE "GOTYPE"
%typemap(in) CTYPE %{ $1 = ($1_ltype)$input; %}
%enddef
MIXP_GO_OUT(double *value, *float64)
MIXP_GO_OUT(double *lr, *float64)
MIXP_GO_OUT(double *scale, *float64)
MIXP_GO_OUT(int *found_inf, *int32)
MIXP_GO_OUT(int *param_index, *int32)
MIXP_GO_OUT(int *size, *int32)
MIXP_GO_OUT(int *ndim, *int32)
MIXP_GO_OUT(int64_t *growth_tracker, *int64)
MIXP_GO_OUT(int64_t *step, *int64)
MIXP_GO_OUT(int64_t *count, *int64)
MIXP_GO_OUT(size_t *size, *uint64)
MIXP_GO_OUT(size_t *written, *uint64)

/* The training-state metadata: "" stores none (NULL), like Python's None.
 * (A named "in" typemap drops go.swg's char * freearg: free the copy here.) */
%typemap(in) const char *user_metadata (char *copy = NULL) %{
  if ($input.n > 0) {
    copy = (char *)malloc($input.n + 1);
    memcpy(copy, $input.p, $input.n);
    copy[$input.n] = '\0';
  }
  $1 = copy;
%}
%typemap(freearg) const char *user_metadata %{ free(copy$argnum); %}

/* ---- slices in and out ------------------------------------------------------ */
%define MIXP_GO_SLICE(CTYPE, PTR, COUNTTYPE, COUNT, GOTYPE)
%typemap(gotype) (CTYPE PTR, COUNTTYPE COUNT) "GOTYPE"
%typemap(imtype) (CTYPE PTR, COUNTTYPE COUNT) "GOTYPE"
%typemap(in) (CTYPE PTR, COUNTTYPE COUNT) %{
  $1 = ($1_ltype)($input.len ? $input.array : NULL);
  $2 = ($2_ltype)$input.len;
%}
%enddef
MIXP_GO_SLICE(const int64_t *, shape, int, ndim, []int64)
MIXP_GO_SLICE(const int64_t *, pads, int, npads, []int64)
MIXP_GO_SLICE(const int64_t *, sizes, int, n, []int64)
MIXP_GO_SLICE(const int *, dims, int, ndim, []int32)
MIXP_GO_SLICE(const int *, dims, int, ndims, []int32)
MIXP_GO_SLICE(int64_t *, shape, int, capacity, []int64)
MIXP_GO_SLICE(const void *, data, size_t, nbytes, []byte)
MIXP_GO_SLICE(const void *, buf, size_t, n, []byte)
MIXP_GO_SLICE(void *, dst, size_t, nbytes, []byte)
MIXP_GO_SLICE(void *, buf, size_t, capacity, []byte)
MIXP_GO_SLICE(unsigned char *, bytes, int, capacity, []byte)
MIXP_GO_SLICE(mixp_tensor *const *, params, int, n, []uintptr)
MIXP_GO_SLICE(const mixp_tensor *const *, tensors, int, n, []uintptr)
MIXP_GO_SLICE(mixp_tensor *const *, outputs, int, n, []uintptr)

/* mixp_dataset_sample_shape() writes up to MIXP_MAX_DIMS entries. */
%typemap(gotype) int64_t *shape "[]int64"
%typemap(imtype) int64_t *shape "[]int64"
%typemap(in) int64_t *shape %{
  $1 = ($input.len >= MIXP_MAX_DIMS) ? (int64_t *)$input.array : NULL;
%}

/* ---- op-name lists: "a\0b\0" (C copies nothing; pointers live for the call) */
%define MIXP_GO_NAMES(PTR, COUNT)
%typemap(gotype) (const char *const *PTR, int COUNT) "string"
%typemap(imtype) (const char *const *PTR, int COUNT) "string"
%typemap(in) (const char *const *PTR, int COUNT) (std::string joined, std::vector<const char *> ptrs) %{
  joined.assign($input.p, (size_t)$input.n);
  for (size_t start = 0; start < joined.size();) {
    size_t end = joined.find('\0', start);
    if (end == std::string::npos) end = joined.size();
    ptrs.push_back(joined.c_str() + start);
    start = end + 1;
  }
  $1 = ($1_ltype)(ptrs.empty() ? NULL : ptrs.data());
  $2 = (int)ptrs.size();
%}
%enddef
%{
#include <vector>
%}
MIXP_GO_NAMES(white, n_white)
MIXP_GO_NAMES(black, n_black)
MIXP_GO_NAMES(include_ops, n_include)
MIXP_GO_NAMES(exclude_ops, n_exclude)

/* C must never keep a Go pointer, and Go cannot be called back without a
 * cgo export: these two stay C-only (see the file comment). */
%ignore mixp_tensor_borrow_host;
%ignore mixp_session_set_log_callback;
