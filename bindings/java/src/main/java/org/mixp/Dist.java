package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_dist_options;

/**
 * This process's place among the ranks of a data-parallel run, bound to one session: the
 * collectives take that session's tensors. One process per rank ({@code mpirun -np N java ...});
 * every collective (and {@link #close()}) is called by every rank, in the same order, with tensors
 * of the same dtype and shape. A training step averages the gradients before the optimizer step:
 *
 * <pre>{@code
 * try (Dist d = new Dist(s, Dist.Transport.MPI)) {
 *   d.broadcastModule(model);                 // rank 0's weights on every rank
 *   ...                                       // forward and backward on this rank's shard
 *   d.averageGradients(opt, 0);
 *   opt.step();
 * }
 * }</pre>
 */
public final class Dist extends NativeHandle {
  /** How the ranks find each other (ordinals match mixp_dist_transport). */
  public enum Transport {
    /**
     * The MPI world this process was launched into; needs Open MPI and mixp's MPI plugin
     * (libmixp_mpi.so), else {@link UnsupportedException}.
     */
    MPI,
    /** One process without MPI: rank 0 of a world of one. */
    SINGLE
  }

  /** The default gradient bucket size, 25 MiB (PyTorch DDP's). */
  public static final long DEFAULT_BUCKET_BYTES = 25L << 20;

  /** Joins the ranks of this launch with 25 MiB gradient buckets. */
  public Dist(Session s, Transport transport) {
    this(s, transport, DEFAULT_BUCKET_BYTES);
  }

  /**
   * @param s the session whose tensors the collectives take (one communicator per session)
   * @param transport MPI or SINGLE
   * @param bucketBytes gradients are averaged in buckets of about this many bytes, in [1, 2^40]
   */
  public Dist(Session s, Transport transport, long bucketBytes) {
    super(create(s, transport, bucketBytes), mixp::mixp_dist_destroy);
  }

  private static long create(Session s, Transport transport, long bucketBytes) {
    mixp_dist_options o = new mixp_dist_options();
    try {
      o.setTransport(transport.ordinal());
      o.setBucket_bytes(bucketBytes);
      long[] out = new long[1];
      mixp.mixp_dist_create(Tensor.p(s), o, out);
      return out[0];
    } finally {
      o.delete();
      Reference.reachabilityFence(s);
    }
  }

  /**
   * @return the local rank the launcher gave this process (its index among the ranks on this
   *     host), 0 when none: for choosing a GPU before any session exists
   */
  public static int envLocalRank() {
    return mixp.mixp_dist_env_local_rank();
  }

  /** @return this process's rank in [0, worldSize()), -1 after close */
  public int rank() {
    try {
      return mixp.mixp_dist_rank(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the number of ranks, -1 after close */
  public int worldSize() {
    try {
      return mixp.mixp_dist_world_size(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return this process's rank among the ranks on its host, -1 after close */
  public int localRank() {
    try {
      return mixp.mixp_dist_local_rank(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the transport, MPI library and NCCL version when used ("" after close) */
  public String describe() {
    try {
      return mixp.mixp_dist_describe(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Reduces t over the ranks in place: afterwards every rank holds the result. */
  public void allReduce(Tensor t, ReduceOp op) {
    try {
      mixp.mixp_dist_all_reduce(ptr(), Tensor.p(t), op.ordinal());
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(t);
    }
  }

  /** Copies rank root's t into every other rank's, in place. */
  public void broadcast(Tensor t, int root) {
    try {
      mixp.mixp_dist_broadcast(ptr(), Tensor.p(t), root);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(t);
    }
  }

  /** @return a new tensor [worldSize(), t's shape...] with rank r's t at index r */
  public Tensor allGather(Tensor t) {
    return Tensor.make(out -> mixp.mixp_dist_all_gather(ptr(), Tensor.p(t), out), this, t);
  }

  /** Returns once every rank has called it. */
  public void barrier() {
    try {
      mixp.mixp_dist_barrier(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Makes every rank's copy of m equal to rank 0's (every parameter and buffer): once after
   * creating the model, before decorating it.
   */
  public void broadcastModule(Module m) {
    try {
      mixp.mixp_dist_broadcast_module(ptr(), Tensor.p(m));
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(m);
    }
  }

  /**
   * Replaces every gradient of opt's parameters by its average over the ranks: after the backward
   * pass of a step's last micro-batch, before unscale, clipping or the step.
   *
   * @param localSamples 0 weighs every rank 1/worldSize() (PyTorch DDP); else the samples this
   *     rank's gradient was averaged over, weighing each rank by its share of the global batch
   */
  public void averageGradients(Optimizer opt, long localSamples) {
    try {
      mixp.mixp_dist_average_gradients(ptr(), Tensor.p(opt), localSamples);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(opt);
    }
  }

  /**
   * Arms the next backward pass to average {@code opt}'s gradients while it runs (each bucket
   * reduced as soon as its gradients are final, in the planned order); {@link #averageGradients}
   * with the same arguments then finishes the step, with the same result as without this call.
   * Call it right before the last micro-batch's backward pass.
   */
  public void prepareGradients(Optimizer opt, long localSamples) {
    try {
      mixp.mixp_dist_prepare_gradients(ptr(), Tensor.p(opt), localSamples);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(opt);
    }
  }
}
