/* mixp_python.i: the Python part of mixp.i (included by it; never run alone).
 *
 * The raw module is `mixp.capi`: the C API function for function, with
 *   - status functions returning their out-parameters (nothing, one value or
 *     a tuple); a failed status raises the mixp.errors class of that status
 *     with mixp_last_error() as its message; MIXP_DONE from
 *     mixp_loader_next() returns (None, None);
 *   - shapes, dims, sizes and pads as sequences of ints;
 *   - host memory as buffer-protocol objects (numpy arrays, bytes,
 *     bytearray): read-only and C-contiguous for copies in, writable for
 *     copies out and for borrowed storage (mixp_swig_borrow_buffer);
 *   - arrays of tensors as sequences of tensor proxies;
 *   - the log callback as a Python callable.
 * The idiomatic layer (mixp/__init__.py and friends) is plain Python on top.
 * The GIL is released around every C call (-threads), except the few helpers
 * below that touch Python objects (%nothread).
 */

%{
#include <string>
#include <vector>

/* Raises the mixp.errors class registered for @p status (the message is
 * copied first: importing mixp.errors runs Python code). */
static void mixp_swig_py_raise(mixp_status status, const char *message) {
  const std::string msg = message ? message : "";
  static PyObject *factory = NULL;
  if (!factory) {
    PyObject *mod = PyImport_ImportModule("mixp.errors");
    if (mod) {
      factory = PyObject_GetAttrString(mod, "_from_status");
      Py_DECREF(mod);
    }
  }
  if (factory) {
    PyObject *exc = PyObject_CallFunction(factory, "is#", (int)status, msg.data(), (Py_ssize_t)msg.size());
    if (exc) {
      PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
      Py_DECREF(exc);
      return;
    }
  }
  PyErr_Clear();
  PyErr_SetString(PyExc_RuntimeError, msg.c_str());
}

/* A Python sequence of ints as a C array (any length: the C function
 * reports a bad ndim itself, with its own message). */
template <class T>
static bool mixp_swig_int_seq(PyObject *obj, std::vector<T> &out, const char *what) {
  if (obj == Py_None) { out.clear(); return true; }
  if (PyLong_Check(obj)) {  /* one int is a 1-element sequence, like numpy */
    long long v = PyLong_AsLongLong(obj);
    if (v == -1 && PyErr_Occurred()) return false;
    out.assign(1, (T)v);
    return true;
  }
  PyObject *seq = PySequence_Fast(obj, what);
  if (!seq) return false;
  Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
  out.resize((size_t)n);
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    PyObject *idx = PyNumber_Index(item);
    if (!idx) {
      Py_DECREF(seq);
      PyErr_Format(PyExc_TypeError, "%s: entry %zd is not an integer", what, i);
      return false;
    }
    long long v = PyLong_AsLongLong(idx);
    Py_DECREF(idx);
    if (v == -1 && PyErr_Occurred()) { Py_DECREF(seq); return false; }
    if ((long long)(T)v != v) {
      Py_DECREF(seq);
      PyErr_Format(PyExc_OverflowError, "%s: entry %zd (%lld) is out of range", what, i, v);
      return false;
    }
    out[(size_t)i] = (T)v;
  }
  Py_DECREF(seq);
  return true;
}

/* Called by mixp, from whichever thread drops the last reference of a
 * borrowed tensor: gives the buffer back to its exporter. */
static void mixp_swig_release_buffer(void *user_data) {
  Py_buffer *view = (Py_buffer *)user_data;
  if (Py_IsInitialized()) {
    PyGILState_STATE g = PyGILState_Ensure();
    PyBuffer_Release(view);
    PyGILState_Release(g);
  }
  delete view;
}

/* The session log callback: user_data is the Python callable, kept alive by
 * the Python Session object for as long as the callback is installed. */
static void mixp_swig_log_trampoline(void *user_data, mixp_log_level level, const char *message) {
  if (!Py_IsInitialized()) return;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *r = PyObject_CallFunction((PyObject *)user_data, "is", (int)level, message);
  if (r) Py_DECREF(r); else PyErr_WriteUnraisable((PyObject *)user_data);
  PyGILState_Release(g);
}
%}

%define MIXP_SWIG_RAISE(status, message)
  mixp_swig_py_raise(status, message); SWIG_fail;
%enddef
#define MIXP_SWIG_RAISE_DEFINED

/* ---- results: a status becomes nothing, out-parameters become the result -- */
%typemap(out) mixp_status {
  /* Only MIXP_OK and MIXP_DONE get here; the caller sees DONE as None outputs. */
  $result = SWIG_Py_Void();
}

/* ---- handle out-parameters: new owning proxies (None when C left NULL) ---- */
%define MIXP_PY_OUT_HANDLE(TYPE)
%typemap(in, numinputs=0) TYPE ** (TYPE *tmp = NULL) { $1 = &tmp; }
%typemap(argout) TYPE ** {
  $result = SWIG_Python_AppendOutput($result,
      tmp$argnum ? SWIG_NewPointerObj(SWIG_as_voidptr(tmp$argnum), $*1_descriptor, SWIG_POINTER_OWN)
                 : SWIG_Py_Void());
}
%enddef
MIXP_PY_OUT_HANDLE(mixp_session)
MIXP_PY_OUT_HANDLE(mixp_tensor)
MIXP_PY_OUT_HANDLE(mixp_module)
MIXP_PY_OUT_HANDLE(mixp_optimizer)
MIXP_PY_OUT_HANDLE(mixp_grad_scaler)
MIXP_PY_OUT_HANDLE(mixp_dataset)
MIXP_PY_OUT_HANDLE(mixp_loader)
MIXP_PY_OUT_HANDLE(mixp_trace)
MIXP_PY_OUT_HANDLE(mixp_profile)
MIXP_PY_OUT_HANDLE(mixp_dist)
MIXP_PY_OUT_HANDLE(mixp_graph)

/* ---- scalar out-parameters ------------------------------------------------ */
%include <typemaps.i>
%apply double *OUTPUT { double *value, double *lr, double *scale };
%apply int *OUTPUT { int *found_inf, int *param_index, int *benchmark, int *deterministic };
%apply int64_t *OUTPUT { int64_t *growth_tracker, int64_t *step, int64_t *count };
%typemap(in, numinputs=0) size_t *size (size_t tmp = 0), size_t *written (size_t tmp = 0) { $1 = &tmp; }
%typemap(argout) size_t *size, size_t *written {
  $result = SWIG_Python_AppendOutput($result, PyLong_FromSize_t(tmp$argnum));
}

/* ---- integer sequences in: shapes, dims, sizes, pads ---------------------- */
%define MIXP_PY_INT_SEQ(CTYPE, PTR, COUNT)
%typemap(in) (const CTYPE *PTR, int COUNT) (std::vector<CTYPE> tmp) {
  if (!mixp_swig_int_seq<CTYPE>($input, tmp, "$symname: argument PTR")) SWIG_fail;
  $1 = tmp.empty() ? NULL : tmp.data();
  $2 = (int)tmp.size();
}
%enddef
MIXP_PY_INT_SEQ(int64_t, shape, ndim)
MIXP_PY_INT_SEQ(int64_t, pads, npads)
MIXP_PY_INT_SEQ(int, dims, ndim)
MIXP_PY_INT_SEQ(int, dims, ndims)

MIXP_PY_INT_SEQ(int64_t, sizes, n)

/* split: one tensor per entry of sizes comes back as a list. The count is
 * mixp_split()'s argument n (arg3), converted before this argument. */
%typemap(in, numinputs=0) mixp_tensor **outs (std::vector<mixp_tensor *> outs) {
  outs.assign(arg3 > 0 ? (size_t)arg3 : 1, NULL);
  $1 = outs.data();
}
%typemap(argout) mixp_tensor **outs {
  PyObject *list = PyList_New(arg3 > 0 ? arg3 : 0);
  for (int i = 0; i < arg3; ++i)
    PyList_SET_ITEM(list, i, SWIG_NewPointerObj(SWIG_as_voidptr(outs$argnum[(size_t)i]),
                                                $descriptor(mixp_tensor *), SWIG_POINTER_OWN));
  $result = SWIG_Python_AppendOutput($result, list);
}

/* ---- integer sequences out: shapes ---------------------------------------- */
%typemap(in, numinputs=0) (int64_t *shape, int capacity, int *ndim) (int64_t buf[MIXP_MAX_DIMS], int nd = 0) {
  $1 = buf; $2 = MIXP_MAX_DIMS; $3 = &nd;
}
%typemap(argout) (int64_t *shape, int capacity, int *ndim) {
  PyObject *t = PyTuple_New(nd$argnum);
  for (int i = 0; i < nd$argnum; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(buf$argnum[i]));
  $result = SWIG_Python_AppendOutput($result, t);
}
%typemap(in, numinputs=0) (int64_t *shape, int *ndim) (int64_t buf[MIXP_MAX_DIMS], int nd = 0) {
  $1 = buf; $2 = &nd;
}
%typemap(argout) (int64_t *shape, int *ndim) {
  PyObject *t = PyTuple_New(nd$argnum);
  for (int i = 0; i < nd$argnum; ++i) PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(buf$argnum[i]));
  $result = SWIG_Python_AppendOutput($result, t);
}

/* ---- host memory: the buffer protocol ------------------------------------- */
%define MIXP_PY_BUFFER_IN(PTR, COUNT)
%typemap(in) (const void *PTR, size_t COUNT) (Py_buffer view, int have = 0) {
  if ($input == Py_None) { $1 = NULL; $2 = 0; }
  else {
    if (PyObject_GetBuffer($input, &view, PyBUF_C_CONTIGUOUS) != 0) SWIG_fail;
    have = 1;
    $1 = view.buf; $2 = (size_t)view.len;
  }
}
%typemap(freearg) (const void *PTR, size_t COUNT) { if (have$argnum) PyBuffer_Release(&view$argnum); }
%enddef
MIXP_PY_BUFFER_IN(data, nbytes)
MIXP_PY_BUFFER_IN(buf, n)

%define MIXP_PY_BUFFER_OUT(CTYPE, PTR, COUNTTYPE, COUNT)
%typemap(in) (CTYPE *PTR, COUNTTYPE COUNT) (Py_buffer view, int have = 0) {
  if (PyObject_GetBuffer($input, &view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) SWIG_fail;
  have = 1;
  $1 = (CTYPE *)view.buf; $2 = (COUNTTYPE)view.len;
}
%typemap(freearg) (CTYPE *PTR, COUNTTYPE COUNT) { if (have$argnum) PyBuffer_Release(&view$argnum); }
%enddef
MIXP_PY_BUFFER_OUT(void, dst, size_t, nbytes)
MIXP_PY_BUFFER_OUT(void, buf, size_t, capacity)
MIXP_PY_BUFFER_OUT(unsigned char, bytes, int, capacity)
%apply int *OUTPUT { int *size };

/* ---- arrays of tensors in ------------------------------------------------- */
%define MIXP_PY_TENSOR_ARRAY(CTYPE, PTR, COUNT)
%typemap(in) (CTYPE PTR, int COUNT) (std::vector<mixp_tensor *> handles) {
  PyObject *seq = PySequence_Fast($input, "$symname: argument PTR must be a sequence of tensors");
  if (!seq) SWIG_fail;
  Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
  handles.resize((size_t)len);
  for (Py_ssize_t i = 0; i < len; ++i) {
    void *p = NULL;
    PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
    if (item != Py_None && !SWIG_IsOK(SWIG_ConvertPtr(item, &p, $descriptor(mixp_tensor *), 0))) {
      Py_DECREF(seq);
      PyErr_Format(PyExc_TypeError, "$symname: argument PTR: entry %zd is not a tensor", i);
      SWIG_fail;
    }
    handles[(size_t)i] = (mixp_tensor *)p;
  }
  Py_DECREF(seq);
  $1 = handles.empty() ? NULL : ($1_ltype)handles.data();
  $2 = (int)len;
}
/* (SWIG matches `T *const *` to the out-parameter typemaps of `T **` too.) */
%typemap(argout) (CTYPE PTR, int COUNT) "";
%enddef
MIXP_PY_TENSOR_ARRAY(mixp_tensor *const *, params, n)
MIXP_PY_TENSOR_ARRAY(const mixp_tensor *const *, tensors, n)
MIXP_PY_TENSOR_ARRAY(mixp_tensor *const *, outputs, n)

/* ---- string lists in (autocast custom op lists) --------------------------- */
%define MIXP_PY_STRING_LIST(PTR, COUNT)
%typemap(in) (const char *const *PTR, int COUNT) (std::vector<std::string> strs, std::vector<const char *> ptrs) {
  if ($input != Py_None) {
    PyObject *seq = PySequence_Fast($input, "$symname: argument PTR must be a sequence of op names");
    if (!seq) SWIG_fail;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(seq);
    for (Py_ssize_t i = 0; i < len; ++i) {
      PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
      const char *s = PyUnicode_Check(item) ? PyUnicode_AsUTF8(item) : NULL;
      if (!s) {
        Py_DECREF(seq);
        if (!PyErr_Occurred()) PyErr_Format(PyExc_TypeError, "$symname: argument PTR: entry %zd is not a str", i);
        SWIG_fail;
      }
      strs.emplace_back(s);
    }
    Py_DECREF(seq);
    for (const std::string &s : strs) ptrs.push_back(s.c_str());
  }
  $1 = ptrs.empty() ? NULL : ($1_ltype)ptrs.data();
  $2 = (int)ptrs.size();
}
%enddef
MIXP_PY_STRING_LIST(white, n_white)
MIXP_PY_STRING_LIST(black, n_black)
MIXP_PY_STRING_LIST(include_ops, n_include)
MIXP_PY_STRING_LIST(exclude_ops, n_exclude)

/* ---- the log callback: a callable or None --------------------------------- */
%typemap(in) (mixp_log_fn fn, void *user_data) {
  if ($input == Py_None) { $1 = NULL; $2 = NULL; }
  else if (PyCallable_Check($input)) { $1 = mixp_swig_log_trampoline; $2 = (void *)$input; }
  else { PyErr_SetString(PyExc_TypeError, "$symname: the callback must be callable or None"); SWIG_fail; }
}

/* ---- DLPack capsules --------------------------------------------------------- *
 * The protocol's capsules ("dltensor", "dltensor_versioned") instead of raw
 * pointers: mixp_swig_from_dlpack consumes one (renaming it "used_...", as
 * the protocol asks), mixp_swig_to_dlpack makes one whose destructor drops
 * the managed tensor if no consumer took it. */
%ignore mixp_tensor_from_dlpack;
%ignore mixp_tensor_from_dlpack_versioned;
%ignore mixp_tensor_to_dlpack;
%ignore mixp_tensor_to_dlpack_versioned;
%ignore mixp_dlpack_release;
%ignore mixp_dlpack_release_versioned;
%nothread mixp_swig_from_dlpack;
%exception mixp_swig_from_dlpack {
  $action
  if (PyErr_Occurred()) SWIG_fail;
  if (result < 0) { MIXP_SWIG_RAISE(result, mixp_last_error()); }
}
%nothread mixp_swig_to_dlpack;
%exception mixp_swig_to_dlpack {
  $action
  if (!result) SWIG_fail;
}
%{
static void mixp_swig_dlpack_capsule_legacy(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor"))  /* never consumed */
    mixp_dlpack_release((struct DLManagedTensor *)PyCapsule_GetPointer(capsule, "dltensor"));
}
static void mixp_swig_dlpack_capsule_versioned(PyObject *capsule) {
  if (PyCapsule_IsValid(capsule, "dltensor_versioned"))
    mixp_dlpack_release_versioned(
        (struct DLManagedTensorVersioned *)PyCapsule_GetPointer(capsule, "dltensor_versioned"));
}
%}
%inline %{
/** Wraps an unconsumed DLPack capsule ("dltensor_versioned" or "dltensor",
 *  from a producer's __dlpack__) as a tensor sharing its memory, and marks
 *  the capsule consumed. The producer's deleter runs when the tensor and
 *  its views are released (numpy's and PyTorch's take the GIL themselves).
 *  @param session The session (its device must be the capsule's).
 *  @param capsule The capsule.
 *  @param[out] out Receives the tensor (owned).
 *  @return As mixp_tensor_from_dlpack(); a TypeError for anything else. */
mixp_status mixp_swig_from_dlpack(mixp_session *session, PyObject *capsule, mixp_tensor **out) {
  mixp_status st;
  if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
    void *p = PyCapsule_GetPointer(capsule, "dltensor_versioned");
    st = mixp_tensor_from_dlpack_versioned(session, (struct DLManagedTensorVersioned *)p, out);
    if (st == MIXP_OK && PyCapsule_SetName(capsule, "used_dltensor_versioned") != 0) return MIXP_ERR_INTERNAL;
    return st;
  }
  if (PyCapsule_IsValid(capsule, "dltensor")) {
    void *p = PyCapsule_GetPointer(capsule, "dltensor");
    st = mixp_tensor_from_dlpack(session, (struct DLManagedTensor *)p, out);
    if (st == MIXP_OK && PyCapsule_SetName(capsule, "used_dltensor") != 0) return MIXP_ERR_INTERNAL;
    return st;
  }
  PyErr_SetString(PyExc_TypeError,
                  "from_dlpack: expected an unconsumed DLPack capsule ('dltensor' or 'dltensor_versioned')");
  return MIXP_ERR_INVALID_ARGUMENT;
}

/** A DLPack capsule sharing the tensor's memory: "dltensor_versioned"
 *  (DLPack 1.0) when @p versioned, else the legacy "dltensor". A CUDA
 *  session's queued work is waited for first.
 *  @param tensor The tensor.
 *  @param versioned Non-zero for a DLPack 1.0 capsule.
 *  @return A new capsule; NULL with the mixp error raised on failure. */
PyObject *mixp_swig_to_dlpack(const mixp_tensor *tensor, int versioned) {
  mixp_status st;
  PyObject *cap = NULL;
  if (versioned) {
    struct DLManagedTensorVersioned *m = NULL;
    st = mixp_tensor_to_dlpack_versioned(tensor, &m);
    if (st == MIXP_OK) {
      cap = PyCapsule_New(m, "dltensor_versioned", mixp_swig_dlpack_capsule_versioned);
      if (!cap) mixp_dlpack_release_versioned(m);
    }
  } else {
    struct DLManagedTensor *m = NULL;
    st = mixp_tensor_to_dlpack(tensor, &m);
    if (st == MIXP_OK) {
      cap = PyCapsule_New(m, "dltensor", mixp_swig_dlpack_capsule_legacy);
      if (!cap) mixp_dlpack_release(m);
    }
  }
  if (st != MIXP_OK) mixp_swig_py_raise(st, mixp_last_error());
  return cap;
}
%}

/* ---- borrowed host memory ------------------------------------------------- *
 * mixp_tensor_borrow_host() takes a release function, so Python gets a
 * variant taking any writable C-contiguous buffer: the tensor holds the
 * buffer (and so the exporting object, e.g. a numpy array) until mixp
 * releases its storage. */
%ignore mixp_tensor_borrow_host;
%nothread mixp_swig_borrow_buffer;
%exception mixp_swig_borrow_buffer {
  $action
  if (PyErr_Occurred()) SWIG_fail;
  if (result < 0) { MIXP_SWIG_RAISE(result, mixp_last_error()); }
}
%inline %{
/** Wraps a writable, C-contiguous buffer-protocol object (a numpy array,
 *  a bytearray) as a tensor without copying; the object stays alive and its
 *  buffer exported until the tensor and every view of it are released.
 *  @param session The session.
 *  @param buffer_object The object exporting the memory.
 *  @param dtype Element type.
 *  @param shape Sizes of the @p ndim dimensions.
 *  @param ndim Number of entries in @p shape.
 *  @param[out] out Receives the tensor (owned).
 *  @return As mixp_tensor_borrow_host(). */
mixp_status mixp_swig_borrow_buffer(mixp_session *session, PyObject *buffer_object, mixp_dtype dtype,
                                    const int64_t *shape, int ndim, mixp_tensor **out) {
  Py_buffer *view = new Py_buffer;
  if (PyObject_GetBuffer(buffer_object, view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) != 0) {
    delete view;  /* the BufferError (read-only, not contiguous) stays set */
    return MIXP_ERR_INVALID_ARGUMENT;
  }
  mixp_status st = mixp_tensor_borrow_host(session, view->buf, (size_t)view->len, dtype, shape, ndim,
                                           mixp_swig_release_buffer, view, out);
  if (st != MIXP_OK) {  /* on failure mixp does not call the release function */
    PyBuffer_Release(view);
    delete view;
  }
  return st;
}
%}
