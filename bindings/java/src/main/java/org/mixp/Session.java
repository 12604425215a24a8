package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_memory_stats;
import org.mixp.raw.mixp_session_options;

/**
 * A device, a random-number stream, a thread count and the grad-mode and autocast
 * stacks. A session and its objects are used by one thread at a time; distinct
 * sessions run concurrently.
 */
public final class Session extends NativeHandle {
  /** A CPU session with seed 0 on all cores. */
  public Session() {
    this("cpu", 0, 0);
  }

  /** A CPU session with the given seed on all cores. */
  public Session(long seed) {
    this("cpu", seed, 0);
  }

  /**
   * @param device "cpu", "cuda", "cuda:N" or "auto"
   * @param seed seed of the Philox stream
   * @param threads CPU threads for kernels, 0 for all cores
   */
  public Session(String device, long seed, int threads) {
    super(create(device, seed, threads), mixp::mixp_session_destroy);
  }

  private static long create(String device, long seed, int threads) {
    mixp_session_options o = new mixp_session_options();
    try {
      o.setSeed(seed);
      o.setNum_threads(threads);
      long[] out = new long[1];
      mixp.mixp_swig_session_create(o, device, out);
      return out[0];
    } finally {
      o.delete();
    }
  }

  /** @return the device the session runs on, e.g. "cpu" */
  public String device() {
    try {
      return mixp.mixp_session_device(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the CPU threads the session's kernels use */
  public int numThreads() {
    try {
      return mixp.mixp_session_num_threads(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Re-seeds the session's random-number stream. */
  public void setSeed(long seed) {
    try {
      mixp.mixp_session_set_seed(ptr(), seed);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return whether operations record gradients now */
  public boolean gradEnabled() {
    try {
      return mixp.mixp_grad_enabled(ptr()) != 0;
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** A no-grad region: operations record no graph until it is closed. */
  public final class NoGrad implements AutoCloseable {
    private boolean open = true;

    NoGrad() {
      mixp.mixp_no_grad_begin(ptr());
    }

    @Override
    public void close() {
      if (open) {
        open = false;
        mixp.mixp_no_grad_end(ptr());
      }
    }
  }

  /** @return a no-grad region, for try-with-resources */
  public NoGrad noGrad() {
    return new NoGrad();
  }

  /**
   * Opens an autocast region (close it, e.g. with try-with-resources).
   * @param level O0, O1, O2 or OD
   * @param dtype F16 or BF16
   */
  public Autocast autocast(AmpLevel level, DType dtype) {
    return new Autocast(this, level, dtype, null, null);
  }

  /**
   * Opens the autocast region a policy line describes, e.g. {@code "O2 bf16 black=softmax
   * promote=1"} (see mixp_autocast_push_policy).
   */
  public Autocast autocast(String policy) {
    return new Autocast(this, policy);
  }

  /** @return bytes of tensor memory held now */
  public long currentMemory() {
    return memory(0);
  }

  /** @return the peak of tensor memory held */
  public long peakMemory() {
    return memory(1);
  }

  /**
   * @return bytes the device really holds for the session now, kernels' scratch and workspaces
   *     included (on the CPU: the tensors)
   */
  public long deviceMemory() {
    return memory(2);
  }

  /**
   * @return the peak of {@link #deviceMemory()}: the figure to compare with PyTorch's
   *     max_memory_allocated
   */
  public long peakDeviceMemory() {
    return memory(3);
  }

  private long memory(int which) {
    mixp_memory_stats st = new mixp_memory_stats();
    try {
      mixp.mixp_memory_stats_get(ptr(), st);
      switch (which) {
        case 0: return st.getCurrent_bytes();
        case 1: return st.getPeak_bytes();
        case 2: return st.getDevice_bytes();
        default: return st.getDevice_peak_bytes();
      }
    } finally {
      st.delete();
      Reference.reachabilityFence(this);
    }
  }

  /** Starts recording every op the session runs (one profile at a time). */
  public void profileBegin() {
    try {
      mixp.mixp_profile_begin(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the profile recorded since {@link #profileBegin()} (owned: close it) */
  public Profile profileEnd() {
    long[] out = new long[1];
    try {
      mixp.mixp_profile_end(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Profile(out[0]);
  }

  /** Starts capturing the training step the session runs next ({@link Graph}). */
  public void graphCaptureBegin() {
    try {
      mixp.mixp_graph_capture_begin(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the step captured since {@link #graphCaptureBegin()} (owned: close it) */
  public Graph graphCaptureEnd() {
    long[] out = new long[1];
    try {
      mixp.mixp_graph_capture_end(ptr(), out);
    } finally {
      Reference.reachabilityFence(this);
    }
    return new Graph(out[0]);
  }

  /** Ends the capture without a graph (the step ran as an eager step). */
  public void graphCaptureAbort() {
    try {
      mixp.mixp_graph_capture_abort(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}
