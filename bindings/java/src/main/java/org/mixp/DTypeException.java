package org.mixp;

/** A dtype the operation does not accept, or dtypes that do not match ({@code mixp_status} {@link MixpException#DTYPE}). */
public class DTypeException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public DTypeException(String message) {
    super(DTYPE, message);
  }
}
