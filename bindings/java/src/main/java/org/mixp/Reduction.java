package org.mixp;

/** How a loss reduces over samples (ordinals match mixp_reduction). */
public enum Reduction {
  MEAN, SUM, NONE
}
