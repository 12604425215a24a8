package org.mixp;

import java.lang.ref.Reference;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import org.mixp.raw.mixp;

/**
 * One reference to a mixp tensor: close it (try-with-resources) to drop the
 * reference; a {@link java.lang.ref.Cleaner} drops forgotten ones. Operations
 * return new tensors (recorded by autograd when an input requires grad) and
 * never change their inputs; under an autocast region they run in the dtype
 * the region's policy picks.
 */
public final class Tensor extends NativeHandle {
  Tensor(long ptr) {
    super(ptr, mixp::mixp_tensor_release);
  }

  /** One native call writing one tensor into out[0]. */
  @FunctionalInterface
  interface Call {
    void run(long[] out);
  }

  static Tensor make(Call c, Object... keep) {
    long[] out = new long[1];
    try {
      c.run(out);
    } finally {
      Reference.reachabilityFence(keep);
    }
    return new Tensor(out[0]);
  }

  /** @return the pointer of t, 0 (NULL, which mixp reports) for null */
  static long p(NativeHandle t) {
    return t == null ? 0 : t.ptr();
  }

  static long[] ptrs(Tensor[] ts) {
    if (ts == null) {
      return new long[0]; // mixp reports the empty list with its own message
    }
    long[] p = new long[ts.length];
    for (int i = 0; i < ts.length; i++) {
      p[i] = p(ts[i]);
    }
    return p;
  }

  // ---- creation --------------------------------------------------------------

  /** Copies little-endian host bytes of dtype into a new tensor of the shape. */
  public static Tensor fromBytes(Session s, byte[] data, DType dtype, long... shape) {
    return make(out -> mixp.mixp_tensor_from_host(s.ptr(), data, dtype.code, shape, out), s);
  }

  /** Copies floats into a new F32 tensor. */
  public static Tensor fromFloats(Session s, float[] data, long... shape) {
    ByteBuffer b = ByteBuffer.allocate(data.length * 4).order(ByteOrder.LITTLE_ENDIAN);
    b.asFloatBuffer().put(data);
    return fromBytes(s, b.array(), DType.F32, shape);
  }

  /** Copies longs into a new I64 tensor (e.g. class labels). */
  public static Tensor fromLongs(Session s, long[] data, long... shape) {
    ByteBuffer b = ByteBuffer.allocate(data.length * 8).order(ByteOrder.LITTLE_ENDIAN);
    b.asLongBuffer().put(data);
    return fromBytes(s, b.array(), DType.I64, shape);
  }

  /** @return a new tensor of zeros */
  public static Tensor zeros(Session s, DType d, long... shape) {
    return make(out -> mixp.mixp_tensor_zeros(s.ptr(), d.code, shape, out), s);
  }

  /** @return a new tensor of ones */
  public static Tensor ones(Session s, DType d, long... shape) {
    return make(out -> mixp.mixp_tensor_ones(s.ptr(), d.code, shape, out), s);
  }

  /** @return a new tensor filled with value */
  public static Tensor full(Session s, DType d, double value, long... shape) {
    return make(out -> mixp.mixp_tensor_full(s.ptr(), d.code, shape, value, out), s);
  }

  /** @return uniform [0, 1) values from the session's stream */
  public static Tensor rand(Session s, DType d, long... shape) {
    return make(out -> mixp.mixp_tensor_rand(s.ptr(), d.code, shape, out), s);
  }

  /** @return standard normal values from the session's stream */
  public static Tensor randn(Session s, DType d, long... shape) {
    return make(out -> mixp.mixp_tensor_randn(s.ptr(), d.code, shape, out), s);
  }

  // ---- queries and data --------------------------------------------------------

  /** @return the element type */
  public DType dtype() {
    try {
      return DType.of(mixp.mixp_tensor_dtype(ptr()));
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the shape (throws after close) */
  public long[] shape() {
    long[] buf = new long[8];
    int[] nd = new int[1];
    try {
      mixp.mixp_tensor_shape(ptr(), buf, nd);
    } finally {
      Reference.reachabilityFence(this);
    }
    return Arrays.copyOf(buf, nd[0]);
  }

  /** @return the number of elements */
  public long numel() {
    try {
      return mixp.mixp_tensor_numel(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the elements as little-endian host bytes (row-major) */
  public byte[] toBytes() {
    long n = Math.max(0, numel()) * dtype().size(); // numel is -1 once closed: mixp then reports it
    byte[] buf = new byte[(int) n];
    try {
      mixp.mixp_tensor_to_host(ptr(), buf);
    } finally {
      Reference.reachabilityFence(this);
    }
    return buf;
  }

  /** @return the elements as floats (other float dtypes are converted first) */
  public float[] toFloats() {
    if (dtype() != DType.F32) {
      try (Tensor f = cast(DType.F32)) {
        return f.toFloats();
      }
    }
    byte[] b = toBytes();
    float[] v = new float[b.length / 4];
    ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(v);
    return v;
  }

  /** @return the value of a one-element tensor */
  public double item() {
    double[] v = new double[1];
    try {
      mixp.mixp_tensor_item(ptr(), v);
    } finally {
      Reference.reachabilityFence(this);
    }
    return v[0];
  }

  // ---- autograd --------------------------------------------------------------

  /** Marks a leaf tensor as a parameter to differentiate. @return this */
  public Tensor requiresGrad(boolean on) {
    try {
      mixp.mixp_tensor_set_requires_grad(ptr(), on ? 1 : 0);
    } finally {
      Reference.reachabilityFence(this);
    }
    return this;
  }

  /** @return whether gradients flow to or through this tensor */
  public boolean requiresGrad() {
    try {
      return mixp.mixp_tensor_requires_grad(ptr()) != 0;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the accumulated gradient, or null when there is none */
  public Tensor grad() {
    long[] out = new long[1];
    try {
      mixp.mixp_tensor_grad(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return out[0] == 0 ? null : new Tensor(out[0]);
  }

  /** Drops the accumulated gradient. */
  public void zeroGrad() {
    try {
      mixp.mixp_tensor_zero_grad(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Copies src's values into this tensor, in place (same shape; dtypes may differ). */
  public void copyFrom(Tensor src) {
    try {
      mixp.mixp_tensor_copy_(ptr(), p(src));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(src);
    }
  }

  /** Differentiates this scalar into every leaf that requires grad. */
  public void backward() {
    try {
      mixp.mixp_backward(ptr(), 0);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  // ---- operations --------------------------------------------------------------

  /** @return this + o (broadcasting) */
  public Tensor add(Tensor o) {
    return make(out -> mixp.mixp_add(ptr(), p(o), out), this, o);
  }

  /** @return this - o (broadcasting) */
  public Tensor sub(Tensor o) {
    return make(out -> mixp.mixp_sub(ptr(), p(o), out), this, o);
  }

  /** @return this * o elementwise (broadcasting) */
  public Tensor mul(Tensor o) {
    return make(out -> mixp.mixp_mul(ptr(), p(o), out), this, o);
  }

  /** @return this / o elementwise (broadcasting) */
  public Tensor div(Tensor o) {
    return make(out -> mixp.mixp_div(ptr(), p(o), out), this, o);
  }

  /** @return the matrix product (batched over leading dimensions) */
  public Tensor matmul(Tensor o) {
    return make(out -> mixp.mixp_matmul(ptr(), p(o), out), this, o);
  }

  /** @return the batched matrix product of this [B, M, K] and o [B, K, N] */
  public Tensor bmm(Tensor o) {
    return make(out -> mixp.mixp_bmm(ptr(), p(o), out), this, o);
  }

  /** @return x @ weight^T + bias (bias may be null) */
  public static Tensor linear(Tensor x, Tensor weight, Tensor bias) {
    return make(out -> mixp.mixp_linear(p(x), p(weight), p(bias), out), x, weight, bias);
  }

  /** Flag of {@link #scaledMatmul}: let the device accumulate with fewer bits (the CPU ignores it). */
  public static final int SCALED_MATMUL_FAST_ACCUM = 1;

  /**
   * The fp8 product (scaleA * scaleB) * (a x b) + bias of a [M, K] and b [K, N] (F8E4M3 or F8E5M2,
   * not both E5M2), rounded once to outDtype (F32, F16 or BF16). Not differentiable.
   *
   * @param scaleA one-element F32 dequantisation scale of a
   * @param scaleB one-element F32 dequantisation scale of b
   * @param bias null, or [N] BF16 (F16 for an F16 output)
   * @param flags 0 or {@link #SCALED_MATMUL_FAST_ACCUM}
   * @param amax null, or a one-element F32 tensor that receives max |D| on the device
   * @return D [M, N]
   */
  public static Tensor scaledMatmul(Tensor a, Tensor scaleA, Tensor b, Tensor scaleB, Tensor bias,
                                    DType outDtype, int flags, Tensor amax) {
    return make(out -> mixp.mixp_scaled_matmul(p(a), p(scaleA), p(b), p(scaleB), p(bias), outDtype.code,
                                               flags, p(amax), out),
                a, scaleA, b, scaleB, bias, amax);
  }

  /** @return this + v */
  public Tensor add(double v) {
    return make(out -> mixp.mixp_add_scalar(ptr(), v, out), this);
  }

  /** @return this * v */
  public Tensor mul(double v) {
    return make(out -> mixp.mixp_mul_scalar(ptr(), v, out), this);
  }

  /** @return v - this */
  public Tensor rsub(double v) {
    return make(out -> mixp.mixp_rsub_scalar(ptr(), v, out), this);
  }

  /** @return v / this */
  public Tensor rdiv(double v) {
    return make(out -> mixp.mixp_rdiv_scalar(ptr(), v, out), this);
  }

  /** @return this ** v */
  public Tensor pow(double v) {
    return make(out -> mixp.mixp_pow(ptr(), v, out), this);
  }

  /** @return -this */
  public Tensor neg() {
    return make(out -> mixp.mixp_neg(ptr(), out), this);
  }

  /** @return e ** this */
  public Tensor exp() {
    return make(out -> mixp.mixp_exp(ptr(), out), this);
  }

  /** @return the natural logarithm */
  public Tensor log() {
    return make(out -> mixp.mixp_log(ptr(), out), this);
  }

  /** @return the square root */
  public Tensor sqrt() {
    return make(out -> mixp.mixp_sqrt(ptr(), out), this);
  }

  /** @return max(this, 0) */
  public Tensor relu() {
    return make(out -> mixp.mixp_relu(ptr(), out), this);
  }

  /** @return the logistic sigmoid */
  public Tensor sigmoid() {
    return make(out -> mixp.mixp_sigmoid(ptr(), out), this);
  }

  /** @return the hyperbolic tangent */
  public Tensor tanh() {
    return make(out -> mixp.mixp_tanh(ptr(), out), this);
  }

  /** @return this * sigmoid(this) */
  public Tensor silu() {
    return make(out -> mixp.mixp_silu(ptr(), out), this);
  }

  /** @return this * relu6(this + 3) / 6 */
  public Tensor hardswish() {
    return make(out -> mixp.mixp_hardswish(ptr(), out), this);
  }

  /** @return relu6(this + 3) / 6 */
  public Tensor hardsigmoid() {
    return make(out -> mixp.mixp_hardsigmoid(ptr(), out), this);
  }

  /** @return the erf GELU */
  public Tensor gelu() {
    return make(out -> mixp.mixp_gelu(ptr(), 0, out), this);
  }

  /** @return GELU's tanh approximation (PyTorch's approximate='tanh', GPT-2's) */
  public Tensor geluTanh() {
    return make(out -> mixp.mixp_gelu_tanh(ptr(), out), this);
  }

  /** @return this converted to dtype d */
  public Tensor cast(DType d) {
    return make(out -> mixp.mixp_cast(ptr(), d.code, out), this);
  }

  /** @return a view (or copy) with another shape; one entry may be -1 */
  public Tensor reshape(long... shape) {
    return make(out -> mixp.mixp_reshape(ptr(), shape, out), this);
  }

  /** @return this laid out row-major (this tensor itself when it already is) */
  public Tensor contiguous() {
    return make(out -> mixp.mixp_contiguous(ptr(), out), this);
  }

  /** @return the view [start:end:step] along dim */
  public Tensor slice(int dim, long start, long end, long step) {
    return make(out -> mixp.mixp_slice(ptr(), dim, start, end, step, out), this);
  }

  /** @return the view whose dimension i is dimension dims[i] of this */
  public Tensor permute(int... dims) {
    return make(out -> mixp.mixp_permute(ptr(), dims, out), this);
  }

  /** @return the view with dimensions d0 and d1 swapped */
  public Tensor transpose(int d0, int d1) {
    return make(out -> mixp.mixp_transpose(ptr(), d0, d1, out), this);
  }

  /** @return this with dimensions start..end (inclusive) merged */
  public Tensor flatten(int start, int end) {
    return make(out -> mixp.mixp_flatten(ptr(), start, end, out), this);
  }

  /** @return the sum over dims (all dimensions when none are given) */
  public Tensor sum(boolean keepdim, int... dims) {
    return make(out -> mixp.mixp_sum(ptr(), dims, keepdim ? 1 : 0, out), this);
  }

  /** @return the mean over dims (all dimensions when none are given) */
  public Tensor mean(boolean keepdim, int... dims) {
    return make(out -> mixp.mixp_mean(ptr(), dims, keepdim ? 1 : 0, out), this);
  }

  /** @return this padded with (before, after) pairs of value from the last dim (negative crops) */
  public Tensor pad(double value, long... pads) {
    return make(out -> mixp.mixp_pad(ptr(), pads, value, out), this);
  }

  /** @return the rows of weight [V, D] picked by I64 indices (paddingIdx -1: none) */
  public static Tensor embedding(Tensor weight, Tensor indices, long paddingIdx) {
    return make(out -> mixp.mixp_embedding(p(weight), p(indices), paddingIdx, out), weight, indices);
  }

  /** @return x normalised over its last normalizedNdim dims (weight, bias may be null) */
  public static Tensor layerNorm(Tensor x, int normalizedNdim, Tensor weight, Tensor bias, double eps) {
    return make(out -> mixp.mixp_layer_norm(p(x), normalizedNdim, p(weight), p(bias), eps, out),
        x, weight, bias);
  }

  /** @return x [N, C, ...] normalised over groups of C/groups channels (weight, bias may be null) */
  public static Tensor groupNorm(Tensor x, long groups, Tensor weight, Tensor bias, double eps) {
    return make(out -> mixp.mixp_group_norm(p(x), groups, p(weight), p(bias), eps, out),
        x, weight, bias);
  }

  /** @return softmax(q k^T * scale [+ causal mask]) v; scale &lt;= 0 means 1/sqrt(E) */
  public static Tensor scaledDotProductAttention(Tensor q, Tensor k, Tensor v, boolean causal,
      double dropoutP, double scale) {
    return make(out -> mixp.mixp_scaled_dot_product_attention(p(q), p(k), p(v), causal ? 1 : 0,
        dropoutP, scale, out), q, k, v);
  }

  /** @return {values, indices (I64)} of the largest value along dim, the first on ties */
  public Tensor[] max(int dim, boolean keepdim) {
    long[] v = new long[1];
    long[] i = new long[1];
    try {
      mixp.mixp_max(ptr(), dim, keepdim ? 1 : 0, v, i);
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Tensor[] {new Tensor(v[0]), new Tensor(i[0])};
  }

  /** @return this with elements zeroed with probability p (training), the rest scaled by 1/(1-p) */
  public Tensor dropout(double p, boolean training) {
    return make(out -> mixp.mixp_dropout(ptr(), p, training ? 1 : 0, out), this);
  }

  /** @return the index of the largest value along dim (I64) */
  public Tensor argmax(int dim, boolean keepdim) {
    return make(out -> mixp.mixp_argmax(ptr(), dim, keepdim ? 1 : 0, out), this);
  }

  /** @return the softmax along dim */
  public Tensor softmax(int dim) {
    return make(out -> mixp.mixp_softmax(ptr(), dim, out), this);
  }

  /** @return the log-softmax along dim */
  public Tensor logSoftmax(int dim) {
    return make(out -> mixp.mixp_log_softmax(ptr(), dim, out), this);
  }

  /** @return a view of the values outside the autograd graph */
  public Tensor detach() {
    return make(out -> mixp.mixp_tensor_detach(ptr(), out), this);
  }

  /** @return the pieces of the given sizes along dim */
  public Tensor[] split(int dim, long... sizes) {
    long[] outs = new long[sizes.length];
    try {
      mixp.mixp_split(ptr(), sizes, dim, outs);
    } finally {
      Reference.reachabilityFence(this);
    }
    Tensor[] r = new Tensor[outs.length];
    for (int i = 0; i < outs.length; i++) {
      r[i] = new Tensor(outs[i]);
    }
    return r;
  }

  @Override
  public String toString() {
    return isClosed() ? "Tensor(closed)" : "Tensor(" + dtype().name().toLowerCase() + ", " + Arrays.toString(shape()) + ")";
  }
}
