package org.mixp;

/** A file that could not be opened, read or written ({@code mixp_status} {@link MixpException#IO}). */
public class MixpIOException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public MixpIOException(String message) {
    super(IO, message);
  }
}
