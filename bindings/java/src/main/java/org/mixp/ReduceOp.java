package org.mixp;

/** The reductions of {@link Dist#allReduce} (ordinals match mixp_reduce_op). */
public enum ReduceOp {
  /** Element-wise sum over the ranks. */
  SUM,
  /** The sum divided by the world size (float tensors only). */
  AVG,
  /** Element-wise maximum (NaN wins). */
  MAX
}
