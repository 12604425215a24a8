package org.mixp;

/** A truncated or malformed file or buffer ({@code mixp_status} {@link MixpException#CORRUPT}). */
public class CorruptException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public CorruptException(String message) {
    super(CORRUPT, message);
  }
}
