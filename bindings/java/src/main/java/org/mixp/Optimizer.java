package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_optimizer_options;

/** SGD, Adam or AdamW over a set of parameters (it holds its own references). */
public final class Optimizer extends NativeHandle {
  /** The algorithms (ordinals match mixp_optimizer_kind). */
  public enum Kind {
    SGD, ADAM, ADAMW
  }

  private Optimizer(long ptr) {
    super(ptr, mixp::mixp_optimizer_destroy);
  }

  /**
   * @param kind the algorithm, with mixp's defaults (AdamW: weight decay 0.01)
   * @param lr the learning rate
   */
  public static Optimizer create(Session s, Tensor[] params, Kind kind, double lr) {
    return create(s, params, kind, lr, DType.F32, false);
  }

  /**
   * With the memory options.
   *
   * @param stateDtype F32, or BF16 to store the moments / momentum in half the memory
   * @param stochasticRounding write BF16 parameters kept without fp32 masters with stochastic
   *     rounding, so updates below half a bf16 step are not lost
   */
  public static Optimizer create(
      Session s, Tensor[] params, Kind kind, double lr, DType stateDtype, boolean stochasticRounding) {
    mixp_optimizer_options o = new mixp_optimizer_options(kind.ordinal());
    try {
      o.setLr(lr);
      o.setState_dtype(stateDtype.code);
      o.setStochastic_rounding(stochasticRounding ? 1 : 0);
      long[] out = new long[1];
      mixp.mixp_optimizer_create(Tensor.p(s), Tensor.ptrs(params), o, out);
      return new Optimizer(out[0]);
    } finally {
      o.delete();
      Reference.reachabilityFence(s);
      Reference.reachabilityFence(params);
    }
  }

  /** AdamW with lr 1e-3 and mixp's defaults. */
  public static Optimizer adamW(Session s, Tensor[] params) {
    return create(s, params, Kind.ADAMW, 1e-3);
  }

  /** Applies one update. */
  public void step() {
    try {
      mixp.mixp_optimizer_step(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Drops the parameters' gradients. */
  public void zeroGrad() {
    try {
      mixp.mixp_optimizer_zero_grad(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the learning rate of the next step */
  public double lr() {
    double[] v = new double[1];
    try {
      mixp.mixp_optimizer_get_lr(ptr(), v);
    } finally {
      Reference.reachabilityFence(this);
    }
    return v[0];
  }

  /** Sets the base learning rate. */
  public void setLr(double lr) {
    try {
      mixp.mixp_optimizer_set_lr(ptr(), lr);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the steps taken, skipped AMP steps included */
  /**
   * The parameters (indices in the order given at construction) whose gradient holds NaN or Inf
   * now: what overflowed on a step the scaler skipped. Scans the gradients (waits for the device).
   */
  public int[] nonfiniteGrads() {
    java.util.ArrayList<Integer> found = new java.util.ArrayList<>();
    try {
      while (true) {
        int[] i = new int[1];
        mixp.mixp_swig_optimizer_nonfinite_grad(ptr(), found.size(), i);
        if (i[0] < 0) {
          break;
        }
        found.add(i[0]);
      }
    } finally {
      Reference.reachabilityFence(this);
    }
    return found.stream().mapToInt(Integer::intValue).toArray();
  }

  public long stepCount() {
    try {
      return mixp.mixp_optimizer_step_count(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}
