package org.mixp;

/** Autocast levels: O0 (off), O1 (per-op lists), O2 (almost everything in low precision). */
public enum AmpLevel {
  O0, O1, O2
}
