package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_autocast_options;

/**
 * An open autocast region of a session, for try-with-resources: operations inside
 * run in the dtype the level's policy picks. Regions nest and close in reverse
 * order; closing twice is harmless.
 */
public final class Autocast implements AutoCloseable {
  private final Session session;
  private boolean open;

  /**
   * @param white op names forced to low precision (or null)
   * @param black op names forced to fp32 (or null)
   */
  public Autocast(Session s, AmpLevel level, DType dtype, String[] white, String[] black) {
    this(s, level, dtype, white, black, false);
  }

  /**
   * @param white op names forced to low precision (or null)
   * @param black op names forced to fp32 (or null)
   * @param usePromote O2 only (Paddle's use_promote): an op off the low-precision list with an
   *     F32 input runs in fp32
   */
  public Autocast(
      Session s, AmpLevel level, DType dtype, String[] white, String[] black, boolean usePromote) {
    mixp_autocast_options o = new mixp_autocast_options();
    try {
      o.setLevel(level.ordinal());
      o.setUse_promote(usePromote ? 1 : 0);
      o.setDtype(dtype.code);
      mixp.mixp_swig_autocast_push(Tensor.p(s), o, white, black);
    } finally {
      o.delete();
      Reference.reachabilityFence(s);
    }
    this.session = s;
    this.open = true;
  }

  /**
   * Opens the region a policy line describes (mixp_autocast_push_policy), e.g. {@code "O2 bf16
   * black=softmax promote=1"}.
   */
  public Autocast(Session s, String policy) {
    try {
      mixp.mixp_autocast_push_policy(Tensor.p(s), policy);
    } finally {
      Reference.reachabilityFence(s);
    }
    this.session = s;
    this.open = true;
  }

  /** Ends the region. */
  @Override
  public void close() {
    if (open) {
      open = false;
      try {
        mixp.mixp_autocast_pop(Tensor.p(session));
      } finally {
        Reference.reachabilityFence(session);
      }
    }
  }
}
