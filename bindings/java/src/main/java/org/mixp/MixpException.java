package org.mixp;

/**
 * A failed mixp call: the {@link #status()} code of {@code mixp_status} and
 * mixp's own message (from {@code mixp_last_error()}, read inside the same
 * native call). Each failing status throws its own subclass, e.g.
 * {@link ShapeException}; catch this class for all of them.
 */
public class MixpException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** {@code MIXP_ERR_INVALID_ARGUMENT}. */
  public static final int INVALID_ARGUMENT = -1;
  /** {@code MIXP_ERR_SHAPE}. */
  public static final int SHAPE = -2;
  /** {@code MIXP_ERR_DTYPE}. */
  public static final int DTYPE = -3;
  /** {@code MIXP_ERR_DEVICE}. */
  public static final int DEVICE = -4;
  /** {@code MIXP_ERR_OUT_OF_MEMORY}. */
  public static final int OUT_OF_MEMORY = -5;
  /** {@code MIXP_ERR_STATE}. */
  public static final int STATE = -6;
  /** {@code MIXP_ERR_CORRUPT}. */
  public static final int CORRUPT = -7;
  /** {@code MIXP_ERR_IO}. */
  public static final int IO = -8;
  /** {@code MIXP_ERR_NUMERIC}. */
  public static final int NUMERIC = -9;
  /** {@code MIXP_ERR_UNSUPPORTED}. */
  public static final int UNSUPPORTED = -10;
  /** {@code MIXP_ERR_INTERNAL}. */
  public static final int INTERNAL = -11;

  private final int status;

  /**
   * @param status the mixp_status code (negative)
   * @param message mixp's message
   */
  public MixpException(int status, String message) {
    super(message);
    this.status = status;
  }

  /** @return the mixp_status code of the failure (negative). */
  public int status() {
    return status;
  }

  /** @return mixp's short description of the status, e.g. "shape mismatch". */
  public String statusString() {
    return Mixp.statusString(status);
  }
}
