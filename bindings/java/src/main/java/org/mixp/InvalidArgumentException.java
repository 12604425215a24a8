package org.mixp;

/** A NULL or closed handle, an out-of-range value or an unknown name ({@code mixp_status} {@link MixpException#INVALID_ARGUMENT}). */
public class InvalidArgumentException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public InvalidArgumentException(String message) {
    super(INVALID_ARGUMENT, message);
  }
}
