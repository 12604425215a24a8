package org.mixp;

/** A bug in mixp; the message says where ({@code mixp_status} {@link MixpException#INTERNAL}). */
public class InternalException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public InternalException(String message) {
    super(INTERNAL, message);
  }
}
