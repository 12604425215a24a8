package org.mixp;

/** Shapes that do not fit together ({@code mixp_status} {@link MixpException#SHAPE}). */
public class ShapeException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public ShapeException(String message) {
    super(SHAPE, message);
  }
}
