package org.mixp;

/** An unknown or unavailable device, or objects of different sessions ({@code mixp_status} {@link MixpException#DEVICE}). */
public class DeviceException extends MixpException {
  private static final long serialVersionUID = 1L;

  /** @param message mixp's message */
  public DeviceException(String message) {
    super(DEVICE, message);
  }
}
