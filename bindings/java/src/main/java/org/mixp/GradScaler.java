package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_grad_scaler_options;

/**
 * Loss scaling for fp16 training (PyTorch's GradScaler): {@link #scale} the loss,
 * backward, {@link #step} the optimizer (unscaling first and skipping the update on
 * an overflow), then {@link #update} the scale.
 */
public final class GradScaler extends NativeHandle {
  /** How the scale evolves (ordinals match mixp_scaler_mode). */
  public enum Mode {
    AUTO, DYNAMIC, STATIC, DISABLED
  }

  /** A scaler with PyTorch's defaults (2^16, x2 every 2000 clean steps, x0.5 on overflow). */
  public GradScaler(Session s, Mode mode) {
    this(s, mode, 65536.0, 2000);
  }

  /**
   * @param initScale the initial scale
   * @param growthInterval clean steps before the scale grows
   */
  public GradScaler(Session s, Mode mode, double initScale, long growthInterval) {
    super(create(s, mode, initScale, growthInterval), mixp::mixp_grad_scaler_destroy);
  }

  private static long create(Session s, Mode mode, double initScale, long growthInterval) {
    mixp_grad_scaler_options o = new mixp_grad_scaler_options();
    try {
      o.setMode(mode.ordinal());
      o.setInit_scale(initScale);
      o.setGrowth_interval(growthInterval);
      long[] out = new long[1];
      mixp.mixp_grad_scaler_create(Tensor.p(s), o, out);
      return out[0];
    } finally {
      o.delete();
      Reference.reachabilityFence(s);
    }
  }

  /** @return loss times the scale (recorded by autograd) */
  public Tensor scale(Tensor loss) {
    return Tensor.make(out -> mixp.mixp_grad_scaler_scale(ptr(), Tensor.p(loss), out), this, loss);
  }

  /** Divides the optimizer's gradients by the scale (once per step; a second call throws). */
  public void unscale(Optimizer opt) {
    try {
      mixp.mixp_grad_scaler_unscale(ptr(), Tensor.p(opt));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(opt);
    }
  }

  /** Unscales (unless done) and steps the optimizer, skipping the update on overflow. */
  public void step(Optimizer opt) {
    try {
      mixp.mixp_grad_scaler_step(ptr(), Tensor.p(opt));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(opt);
    }
  }

  /** Ends the iteration: grows or backs off the scale. */
  public void update() {
    try {
      mixp.mixp_grad_scaler_update(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the scale now */
  public double getScale() {
    double[] v = new double[1];
    try {
      mixp.mixp_grad_scaler_get_scale(ptr(), v);
    } finally {
      Reference.reachabilityFence(this);
    }
    return v[0];
  }

  /** @return whether the last unscale found an Inf/NaN gradient */
  public boolean foundInf() {
    int[] v = new int[1];
    try {
      mixp.mixp_grad_scaler_found_inf(ptr(), v);
    } finally {
      Reference.reachabilityFence(this);
    }
    return v[0] != 0;
  }
}
