package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;

/**
 * A training step captured once between {@link Session#graphCaptureBegin()} and {@link
 * Session#graphCaptureEnd()} and replayed on the same tensors, bitwise as an eager step (the AMP
 * guide, "Captured steps": inputs refilled in place, no host reads inside the step).
 *
 * <pre>{@code
 * s.graphCaptureBegin();
 * Tensor loss = step();                 // runs, and is recorded
 * try (Graph g = s.graphCaptureEnd()) {
 *   for (...) { refill(x); g.replay(); double l = loss.item(); }
 * }
 * }</pre>
 */
public final class Graph extends NativeHandle {
  Graph(long ptr) {
    super(ptr, mixp::mixp_graph_destroy);
  }

  /** Runs the captured step again. */
  public void replay() {
    try {
      mixp.mixp_graph_replay(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}
