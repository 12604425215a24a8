package org.mixp;

/**
 * Autocast levels: O0 (off), O1 (per-op lists), O2 (almost everything in low precision), OD
 * (Paddle's: only GEMM-like ops in low precision, everything else fp32). The order is the C
 * enum's.
 */
public enum AmpLevel {
  O0, O1, O2, OD
}
