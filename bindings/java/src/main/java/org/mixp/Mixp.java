package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;

/** Library-wide functions and the operations that take several tensors. */
public final class Mixp {
  private Mixp() {}

  /** Prints the version and build of the loaded library (a smoke test of the native loading). */
  public static void main(String[] args) {
    System.out.println("mixp " + version());
    System.out.println(buildInfo());
  }

  /** @return the library's version, e.g. "0.1.0" */
  public static String version() {
    return mixp.mixp_version();
  }

  /** @return one line describing the build */
  public static String buildInfo() {
    return mixp.mixp_build_info();
  }

  /** @param status a mixp_status code @return mixp's short description of it */
  public static String statusString(int status) {
    return mixp.mixp_status_string(status);
  }

  /**
   * Cross-entropy of logits [N, C] against I64 class indices [N]; targets equal to
   * -100 are ignored, as in PyTorch.
   */
  public static Tensor crossEntropy(Tensor logits, Tensor target, Reduction r) {
    long[] out = new long[1];
    try {
      mixp.mixp_cross_entropy(Tensor.p(logits), Tensor.p(target), r.ordinal(), -100, out);
    } finally {
      Reference.reachabilityFence(logits);
      Reference.reachabilityFence(target);
    }
    return new Tensor(out[0]);
  }

  /** Mean (or summed) squared error. */
  public static Tensor mseLoss(Tensor a, Tensor b, Reduction r) {
    long[] out = new long[1];
    try {
      mixp.mixp_mse_loss(Tensor.p(a), Tensor.p(b), r.ordinal(), out);
    } finally {
      Reference.reachabilityFence(a);
      Reference.reachabilityFence(b);
    }
    return new Tensor(out[0]);
  }

  /** Concatenates tensors along dim. */
  public static Tensor cat(int dim, Tensor... ts) {
    long[] out = new long[1];
    try {
      mixp.mixp_cat(Tensor.ptrs(ts), dim, out);
    } finally {
      Reference.reachabilityFence(ts);
    }
    return new Tensor(out[0]);
  }

  /**
   * Scales the optimizer's gradients so that their global L2 norm is at most maxNorm.
   * @return the norm before clipping
   */
  public static double clipGradNorm(Optimizer opt, double maxNorm) {
    long[] out = new long[1];
    try {
      mixp.mixp_clip_grad_norm(Tensor.p(opt), maxNorm, out);
    } finally {
      Reference.reachabilityFence(opt);
    }
    try (Tensor norm = new Tensor(out[0])) {
      return norm.item();
    }
  }

  /**
   * O2 decoration: casts the model's parameters to dtype and gives the optimizer fp32
   * master weights (fetch {@link Module#parameters()} again afterwards).
   */
  public static void decorate(Module model, Optimizer opt, DType dtype) {
    org.mixp.raw.mixp_decorate_options o = new org.mixp.raw.mixp_decorate_options();
    try {
      o.setDtype(dtype.code);
      mixp.mixp_amp_decorate(Tensor.p(model), Tensor.p(opt), o);
    } finally {
      o.delete();
      Reference.reachabilityFence(model);
      Reference.reachabilityFence(opt);
    }
  }

  /** Closes every non-null handle, e.g. the temporaries of one training step. */
  public static void closeAll(NativeHandle... hs) {
    for (NativeHandle h : hs) {
      if (h != null) {
        h.close();
      }
    }
  }
}
