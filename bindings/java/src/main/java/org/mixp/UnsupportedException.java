package org.mixp;

/** A valid request this build cannot serve ({@code mixp_status} {@link MixpException#UNSUPPORTED}). */
public class UnsupportedException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public UnsupportedException(String message) {
    super(UNSUPPORTED, message);
  }
}
