package org.mixp;

/** A non-finite value where the numerics checker forbids it ({@code mixp_status} {@link MixpException#NUMERIC}). */
public class NumericException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public NumericException(String message) {
    super(NUMERIC, message);
  }
}
