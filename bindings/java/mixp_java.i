/* mixp_java.i: the Java part of mixp.i (included by it; never run alone).
 *
 * SWIG (-java -package org.mixp.raw) turns this into the raw classes
 * org.mixp.raw.mixp (the C API function for function), org.mixp.raw.mixpJNI
 * and the options-struct proxies, compiled with the JNI wrapper into
 * libmixp_jni.so. The hand-written package org.mixp wraps them:
 *   - every handle is a plain `long`, owned by the org.mixp class holding it
 *     (AutoCloseable, with a java.lang.ref.Cleaner as the safety net);
 *   - a failed status throws the org.mixp.MixpException subclass of that
 *     status from inside the JNI wrapper, with mixp_last_error() read in the
 *     same native call (mixp.i's %exception block); MIXP_OK and MIXP_DONE
 *     come back as the int result;
 *   - T **out parameters are long[1] arrays, scalar outs one-element arrays;
 *   - shapes and dims are long[]/int[], host memory byte[], tensor lists
 *     long[], op-name lists String[]; JNI copies them in and out during the
 *     call, C keeps nothing.
 *   - DLPack managed tensors (C structs another native library produced or
 *     will consume) are `long` addresses too (org.mixp.DLPack).
 * Not reachable from Java: mixp_tensor_borrow_host() (the JVM may move a
 * Java array; use from-host copies) and the log callback (warnings go to
 * stderr; mixp_session_numerics_report() is readable).
 */

%{
#include <vector>
#include <string>

/* The org.mixp exception class of a failed status (one per status). */
static const char *mixp_swig_java_class(mixp_status status) {
  switch (status) {
    case MIXP_ERR_INVALID_ARGUMENT: return "org/mixp/InvalidArgumentException";
    case MIXP_ERR_SHAPE: return "org/mixp/ShapeException";
    case MIXP_ERR_DTYPE: return "org/mixp/DTypeException";
    case MIXP_ERR_DEVICE: return "org/mixp/DeviceException";
    case MIXP_ERR_OUT_OF_MEMORY: return "org/mixp/OutOfMemoryException";
    case MIXP_ERR_STATE: return "org/mixp/StateException";
    case MIXP_ERR_CORRUPT: return "org/mixp/CorruptException";
    case MIXP_ERR_IO: return "org/mixp/MixpIOException";
    case MIXP_ERR_NUMERIC: return "org/mixp/NumericException";
    case MIXP_ERR_UNSUPPORTED: return "org/mixp/UnsupportedException";
    default: return "org/mixp/InternalException";
  }
}

static void mixp_swig_java_throw(JNIEnv *jenv, mixp_status status, const char *message) {
  jclass cls = jenv->FindClass(mixp_swig_java_class(status));
  if (!cls) return;  /* NoClassDefFoundError is pending: it surfaces instead */
  jenv->ThrowNew(cls, message);
  jenv->DeleteLocalRef(cls);
}
%}

%define MIXP_SWIG_RAISE(status, message)
  mixp_swig_java_throw(jenv, status, message); return $null;
%enddef
#define MIXP_SWIG_RAISE_DEFINED

/* 64-bit integers as Java long. With -DSWIGWORDSIZE64 (mixp.i's flags)
 * int64_t is C `long`, which SWIG's Java maps to a 32-bit int; uint64_t
 * (seeds) would be a BigInteger. Both are Java long here, bit for bit. */
%apply long long { int64_t };
%apply long long { uint64_t };

/* Enums as int constants: org.mixp has the Java enums. */
%include "enumtypeunsafe.swg"
%javaconst(1);

/* The JNI class loads libmixp_jni.so through org.mixp.NativeLoader, which
 * names every path it tried when loading fails. */
%pragma(java) jniclasscode=%{
  static {
    org.mixp.NativeLoader.load();
  }
%}

/* ---- status: the int (OK or DONE; errors have thrown) -------------------- */
%typemap(jni) mixp_status "jint"
%typemap(jtype) mixp_status "int"
%typemap(jstype) mixp_status "int"
%typemap(javain) mixp_status "$javainput"
%typemap(javaout) mixp_status { return $jnicall; }
%typemap(in) mixp_status %{ $1 = (mixp_status)$input; %}
%typemap(out) mixp_status %{ $result = (jint)$1; %}

/* ---- handles: long -------------------------------------------------------- */
%define MIXP_JAVA_HANDLE(TYPE)
%typemap(jni) TYPE *, const TYPE * "jlong"
%typemap(jtype) TYPE *, const TYPE * "long"
%typemap(jstype) TYPE *, const TYPE * "long"
%typemap(javain) TYPE *, const TYPE * "$javainput"
%typemap(javaout) TYPE *, const TYPE * { return $jnicall; }
%typemap(in) TYPE *, const TYPE * %{ $1 = ($1_ltype)$input; %}
%typemap(out) TYPE *, const TYPE * %{ $result = (jlong)$1; %}
%typemap(jni) TYPE ** "jlongArray"
%typemap(jtype) TYPE ** "long[]"
%typemap(jstype) TYPE ** "long[]"
%typemap(javain) TYPE ** "$javainput"
%typemap(in) TYPE ** (TYPE *tmp = NULL) %{
  if (!$input || jenv->GetArrayLength($input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIndexOutOfBoundsException, "$symname: an out array needs one element");
    return $null;
  }
  $1 = &tmp;
%}
%typemap(argout) TYPE ** %{
  { jlong v = (jlong)(intptr_t)tmp$argnum; jenv->SetLongArrayRegion($input, 0, 1, &v); }
%}
%enddef
MIXP_JAVA_HANDLE(mixp_session)
MIXP_JAVA_HANDLE(mixp_tensor)
MIXP_JAVA_HANDLE(mixp_module)
MIXP_JAVA_HANDLE(mixp_optimizer)
MIXP_JAVA_HANDLE(mixp_grad_scaler)
MIXP_JAVA_HANDLE(mixp_dataset)
MIXP_JAVA_HANDLE(mixp_loader)
MIXP_JAVA_HANDLE(mixp_trace)
MIXP_JAVA_HANDLE(mixp_profile)
MIXP_JAVA_HANDLE(mixp_dist)
MIXP_JAVA_HANDLE(DLManagedTensor)
MIXP_JAVA_HANDLE(DLManagedTensorVersioned)
MIXP_JAVA_HANDLE(mixp_graph)

/* split(): one output per entry of sizes (arg3 = n). */
%typemap(jni) mixp_tensor **outs "jlongArray"
%typemap(jtype) mixp_tensor **outs "long[]"
%typemap(jstype) mixp_tensor **outs "long[]"
%typemap(javain) mixp_tensor **outs "$javainput"
%typemap(in) mixp_tensor **outs (std::vector<mixp_tensor *> outs) %{
  if (!$input || jenv->GetArrayLength($input) < arg3) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIndexOutOfBoundsException, "$symname: the out array needs one element per size");
    return $null;
  }
  outs.assign(arg3 > 0 ? (size_t)arg3 : 1, NULL);
  $1 = outs.data();
%}
%typemap(argout) mixp_tensor **outs %{
  for (int i = 0; i < arg3; ++i) {
    jlong v = (jlong)(intptr_t)outs$argnum[(size_t)i];
    jenv->SetLongArrayRegion($input, i, 1, &v);
  }
%}

/* ---- scalar out-parameters: one-element arrays ------------------------------ */
%include <typemaps.i>
%apply double *OUTPUT { double *value, double *lr, double *scale };
%apply int *OUTPUT { int *found_inf, int *size, int *ndim, int *param_index };
%apply long long *OUTPUT { int64_t *growth_tracker, int64_t *step, int64_t *count };
%typemap(jni) size_t *size, size_t *written "jlongArray"
%typemap(jtype) size_t *size, size_t *written "long[]"
%typemap(jstype) size_t *size, size_t *written "long[]"
%typemap(javain) size_t *size, size_t *written "$javainput"
%typemap(in) size_t *size (size_t tmp = 0), size_t *written (size_t tmp = 0) %{
  if (!$input || jenv->GetArrayLength($input) < 1) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIndexOutOfBoundsException, "$symname: an out array needs one element");
    return $null;
  }
  $1 = &tmp;
%}
%typemap(argout) size_t *size, size_t *written %{
  { jlong v = (jlong)tmp$argnum; jenv->SetLongArrayRegion($input, 0, 1, &v); }
%}

/* ---- primitive arrays in and out -------------------------------------------
 * Copied into a std::vector for the call (and back after a successful call:
 * argout does not run after a throw). A vector, unlike pinned JNI elements,
 * is freed on every path out of the wrapper, the early error return too. */
%define MIXP_JAVA_ARRAY(CTYPE, PTR, COUNTTYPE, COUNT, JNIARR, JARR, JELEM, NAME, IS_OUT)
%typemap(jni) (CTYPE PTR, COUNTTYPE COUNT) "JNIARR"
%typemap(jtype) (CTYPE PTR, COUNTTYPE COUNT) "JARR"
%typemap(jstype) (CTYPE PTR, COUNTTYPE COUNT) "JARR"
%typemap(javain) (CTYPE PTR, COUNTTYPE COUNT) "$javainput"
%typemap(in) (CTYPE PTR, COUNTTYPE COUNT) (std::vector<JELEM> elems) %{
  if ($input) {
    elems.resize((size_t)jenv->GetArrayLength($input));
    if (!IS_OUT && !elems.empty()) jenv->Get##NAME##ArrayRegion($input, 0, (jsize)elems.size(), elems.data());
  }
  $1 = ($1_ltype)(elems.empty() ? NULL : elems.data());
  $2 = ($2_ltype)elems.size();
%}
%typemap(argout) (CTYPE PTR, COUNTTYPE COUNT) %{
  if (IS_OUT && !elems$argnum.empty()) jenv->Set##NAME##ArrayRegion($input, 0, (jsize)elems$argnum.size(), elems$argnum.data());
%}
%enddef
MIXP_JAVA_ARRAY(const int64_t *, shape, int, ndim, jlongArray, long[], jlong, Long, 0)
MIXP_JAVA_ARRAY(const int64_t *, pads, int, npads, jlongArray, long[], jlong, Long, 0)
MIXP_JAVA_ARRAY(const int64_t *, sizes, int, n, jlongArray, long[], jlong, Long, 0)
MIXP_JAVA_ARRAY(const int *, dims, int, ndim, jintArray, int[], jint, Int, 0)
MIXP_JAVA_ARRAY(const int *, dims, int, ndims, jintArray, int[], jint, Int, 0)
MIXP_JAVA_ARRAY(int64_t *, shape, int, capacity, jlongArray, long[], jlong, Long, 1)
MIXP_JAVA_ARRAY(const void *, data, size_t, nbytes, jbyteArray, byte[], jbyte, Byte, 0)
MIXP_JAVA_ARRAY(const void *, buf, size_t, n, jbyteArray, byte[], jbyte, Byte, 0)
MIXP_JAVA_ARRAY(void *, dst, size_t, nbytes, jbyteArray, byte[], jbyte, Byte, 1)
MIXP_JAVA_ARRAY(void *, buf, size_t, capacity, jbyteArray, byte[], jbyte, Byte, 1)
MIXP_JAVA_ARRAY(unsigned char *, bytes, int, capacity, jbyteArray, byte[], jbyte, Byte, 1)

/* mixp_dataset_sample_shape() writes up to MIXP_MAX_DIMS entries. */
%typemap(jni) int64_t *shape "jlongArray"
%typemap(jtype) int64_t *shape "long[]"
%typemap(jstype) int64_t *shape "long[]"
%typemap(javain) int64_t *shape "$javainput"
%typemap(in) int64_t *shape (int64_t buf[MIXP_MAX_DIMS]) %{
  if (!$input || jenv->GetArrayLength($input) < MIXP_MAX_DIMS) {
    SWIG_JavaThrowException(jenv, SWIG_JavaIndexOutOfBoundsException, "$symname: the shape array needs MIXP_MAX_DIMS elements");
    return $null;
  }
  $1 = buf;
%}
%typemap(argout) int64_t *shape %{
  jenv->SetLongArrayRegion($input, 0, MIXP_MAX_DIMS, (const jlong *)buf$argnum);
%}

/* ---- arrays of tensors: long[] of handles ----------------------------------- */
%define MIXP_JAVA_TENSORS(CTYPE, PTR, COUNT)
%typemap(jni) (CTYPE PTR, int COUNT) "jlongArray"
%typemap(jtype) (CTYPE PTR, int COUNT) "long[]"
%typemap(jstype) (CTYPE PTR, int COUNT) "long[]"
%typemap(javain) (CTYPE PTR, int COUNT) "$javainput"
%typemap(in) (CTYPE PTR, int COUNT) (std::vector<mixp_tensor *> tmp) %{
  if ($input) {
    jsize len = jenv->GetArrayLength($input);
    std::vector<jlong> raw((size_t)len);
    jenv->GetLongArrayRegion($input, 0, len, raw.data());
    for (jlong p : raw) tmp.push_back((mixp_tensor *)(intptr_t)p);
  }
  $1 = tmp.empty() ? NULL : tmp.data();
  $2 = (int)tmp.size();
%}
%typemap(argout) (CTYPE PTR, int COUNT) ""
%enddef
MIXP_JAVA_TENSORS(mixp_tensor *const *, params, n)
MIXP_JAVA_TENSORS(const mixp_tensor *const *, tensors, n)
MIXP_JAVA_TENSORS(mixp_tensor *const *, outputs, n)

/* ---- op-name lists: String[] ------------------------------------------------ */
%define MIXP_JAVA_NAMES(PTR, COUNT)
%typemap(jni) (const char *const *PTR, int COUNT) "jobjectArray"
%typemap(jtype) (const char *const *PTR, int COUNT) "String[]"
%typemap(jstype) (const char *const *PTR, int COUNT) "String[]"
%typemap(javain) (const char *const *PTR, int COUNT) "$javainput"
%typemap(in) (const char *const *PTR, int COUNT) (std::vector<std::string> strs, std::vector<const char *> ptrs) %{
  if ($input) {
    jsize len = jenv->GetArrayLength($input);
    for (jsize i = 0; i < len; ++i) {
      jstring js = (jstring)jenv->GetObjectArrayElement($input, i);
      if (!js) {
        SWIG_JavaThrowException(jenv, SWIG_JavaNullPointerException, "$symname: a null op name");
        return $null;
      }
      const char *c = jenv->GetStringUTFChars(js, NULL);
      if (!c) return $null;
      strs.emplace_back(c);
      jenv->ReleaseStringUTFChars(js, c);
      jenv->DeleteLocalRef(js);
    }
    for (const std::string &s : strs) ptrs.push_back(s.c_str());
  }
  $1 = ($1_ltype)(ptrs.empty() ? NULL : ptrs.data());
  $2 = (int)ptrs.size();
%}
%enddef
MIXP_JAVA_NAMES(white, n_white)
MIXP_JAVA_NAMES(black, n_black)
MIXP_JAVA_NAMES(include_ops, n_include)
MIXP_JAVA_NAMES(exclude_ops, n_exclude)

/* The JVM may move a Java array, and a native callback would need a global
 * JNI reference per session: these two stay C-only (see the file comment). */
%ignore mixp_tensor_borrow_host;
%ignore mixp_session_set_log_callback;
