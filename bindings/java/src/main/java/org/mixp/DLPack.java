package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;

/**
 * DLPack exchange without copies (https://dmlc.github.io/dlpack/) with the
 * other native libraries of a Java host. A managed tensor crosses as the
 * {@code long} address of dlpack.h's {@code DLManagedTensor} (legacy, DLPack
 * &lt; 1.0) or {@code DLManagedTensorVersioned} (DLPack &ge; 1.0): the
 * address another library's JNI or Panama code produced or will consume.
 * The memory is native; the JVM neither moves nor frees it. Element types,
 * devices and the rules are mixp.h's ({@code mixp_tensor_from_dlpack} and
 * friends).
 */
public final class DLPack {
  private DLPack() {}

  /**
   * Wraps a legacy DLManagedTensor as a tensor of s without copying. On
   * success mixp owns the managed tensor and calls its deleter exactly once,
   * when the last tensor or view using the memory is closed; when this
   * throws nothing was taken (see {@link #release}).
   */
  public static Tensor fromManaged(Session s, long managed) {
    return Tensor.make(out -> mixp.mixp_tensor_from_dlpack(Tensor.p(s), managed, out), s);
  }

  /** {@link #fromManaged} for a DLPack 1.0 DLManagedTensorVersioned (read-only ones are refused). */
  public static Tensor fromManagedVersioned(Session s, long managed) {
    return Tensor.make(out -> mixp.mixp_tensor_from_dlpack_versioned(Tensor.p(s), managed, out), s);
  }

  /**
   * Shares t's memory as a legacy DLManagedTensor (no copy). The consumer
   * owns the result and must call its deleter exactly once (or
   * {@link #release} when it never consumes it); the memory stays alive until
   * then, even after t is closed. Writes through either side are seen by the
   * other.
   */
  public static long toManaged(Tensor t) {
    long[] out = new long[1];
    try {
      mixp.mixp_tensor_to_dlpack(Tensor.p(t), out);
    } finally {
      Reference.reachabilityFence(t);
    }
    return out[0];
  }

  /** {@link #toManaged} as a DLPack 1.0 DLManagedTensorVersioned (version 1.0, flags 0). */
  public static long toManagedVersioned(Tensor t) {
    long[] out = new long[1];
    try {
      mixp.mixp_tensor_to_dlpack_versioned(Tensor.p(t), out);
    } finally {
      Reference.reachabilityFence(t);
    }
    return out[0];
  }

  /** Drops a legacy managed tensor nobody consumed (calls its deleter); 0 is a no-op. */
  public static void release(long managed) {
    mixp.mixp_dlpack_release(managed);
  }

  /** {@link #release} for a DLManagedTensorVersioned. */
  public static void releaseVersioned(long managed) {
    mixp.mixp_dlpack_release_versioned(managed);
  }
}
