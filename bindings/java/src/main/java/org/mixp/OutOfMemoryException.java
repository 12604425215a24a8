package org.mixp;

/** An allocation failed; the session stays usable ({@code mixp_status} {@link MixpException#OUT_OF_MEMORY}). */
public class OutOfMemoryException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public OutOfMemoryException(String message) {
    super(OUT_OF_MEMORY, message);
  }
}
