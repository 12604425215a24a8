package org.mixp;

import java.lang.ref.Reference;
import java.nio.file.Path;
import org.mixp.raw.mixp;

/**
 * Training-state checkpoints (safetensors files; see docs/checkpoints.md).
 *
 * <p>{@link #save} writes a model, its optimizer, a GradScaler, a loader's position
 * and the session's random stream to one file, atomically; {@link #load} restores
 * them, so training continues bit for bit. A load is all or nothing: a damaged or
 * foreign file throws {@link CorruptException} or {@link ShapeException} and changes
 * nothing. Each object may be {@code null}, which leaves it out.
 */
public final class State {
  private State() {}

  /**
   * Writes the training state to {@code path} (atomically: the file holds the previous
   * version or the complete new one).
   *
   * @param step the global step to record
   * @param metadata a string stored as the metadata entry "user", or null for none
   * @throws MixpIOException if the file cannot be written
   */
  public static void save(Session s, Path path, Module model, Optimizer optimizer,
                          GradScaler scaler, Loader loader, long step, String metadata) {
    try {
      mixp.mixp_swig_state_save(Tensor.p(s), path.toString(), p(model, "model"),
          p(optimizer, "optimizer"), p(scaler, "scaler"), p(loader, "loader"), step, metadata);
    } finally {
      Reference.reachabilityFence(s);
      Reference.reachabilityFence(model);
      Reference.reachabilityFence(optimizer);
      Reference.reachabilityFence(scaler);
      Reference.reachabilityFence(loader);
    }
  }

  /**
   * Restores what {@link #save} wrote into objects of the same kinds and shapes, and
   * the session's random stream.
   *
   * @return the saved step
   * @throws CorruptException if the file is damaged (nothing has changed)
   */
  public static long load(Session s, Path path, Module model, Optimizer optimizer,
                          GradScaler scaler, Loader loader) {
    long[] step = new long[1];
    try {
      mixp.mixp_swig_state_load(Tensor.p(s), path.toString(), p(model, "model"),
          p(optimizer, "optimizer"), p(scaler, "scaler"), p(loader, "loader"), step);
    } finally {
      Reference.reachabilityFence(s);
      Reference.reachabilityFence(model);
      Reference.reachabilityFence(optimizer);
      Reference.reachabilityFence(scaler);
      Reference.reachabilityFence(loader);
    }
    return step[0];
  }

  /* mixp reads NULL as "not listed": a closed object would be skipped silently,
   * so it throws here instead. */
  private static long p(NativeHandle h, String what) {
    if (h != null && h.isClosed()) {
      throw new InvalidArgumentException("org.mixp.State: the " + what + " is closed");
    }
    return Tensor.p(h);
  }
}
