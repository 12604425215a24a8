package org.mixp;

/** A call that is not valid in the object's current state (e.g. unscale twice) ({@code mixp_status} {@link MixpException#STATE}). */
public class StateException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public StateException(String message) {
    super(STATE, message);
  }
}
