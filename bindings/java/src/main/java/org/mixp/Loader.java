package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_loader_options;

/** Mini-batches of a dataset, epoch after epoch (shuffled by default, inputs x/255 in F32). */
public final class Loader extends NativeHandle {
  /** One mini-batch; close it to release both tensors. */
  public static final class Batch implements AutoCloseable {
    /** The inputs. */
    public final Tensor x;
    /** The labels (I64). */
    public final Tensor y;

    Batch(Tensor x, Tensor y) {
      this.x = x;
      this.y = y;
    }

    @Override
    public void close() {
      x.close();
      y.close();
    }
  }

  private final Dataset data; // the loader reads the dataset: keep it reachable

  /**
   * @param batchSize samples per batch
   * @param shuffle reshuffle every epoch
   * @param seed shuffle seed
   */
  public Loader(Dataset d, long batchSize, boolean shuffle, long seed) {
    this(d, batchSize, shuffle, seed, 0, 1);
  }

  /**
   * Shard shardIndex of shardCount, for data parallelism (e.g. {@link Dist#rank()} of {@link
   * Dist#worldSize()}): every shard walks the same per-epoch order (same seed on every rank) in
   * global batches of shardCount * batchSize samples and takes its contiguous part of each, so the
   * shards together see every sample once per epoch, and every shard yields the same number of
   * batches.
   *
   * @param batchSize samples per batch of this shard
   * @param shuffle reshuffle every epoch
   * @param seed shuffle seed (the same on every shard)
   * @param shardIndex this shard, in [0, shardCount)
   * @param shardCount number of shards, 1 for none
   */
  public Loader(Dataset d, long batchSize, boolean shuffle, long seed, int shardIndex, int shardCount) {
    super(create(d, batchSize, shuffle, seed, shardIndex, shardCount), mixp::mixp_loader_destroy);
    this.data = d;
  }

  private static long create(Dataset d, long batchSize, boolean shuffle, long seed, int shardIndex,
                             int shardCount) {
    mixp_loader_options o = new mixp_loader_options();
    try {
      o.setBatch_size(batchSize);
      o.setShuffle(shuffle ? 1 : 0);
      o.setSeed(seed);
      o.setShard_index(shardIndex);
      o.setShard_count(shardCount);
      long[] out = new long[1];
      mixp.mixp_loader_create(Tensor.p(d), o, out);
      return out[0];
    } finally {
      o.delete();
      Reference.reachabilityFence(d);
    }
  }

  /** @return the next batch, or null at the end of an epoch (the next call starts another) */
  public Batch next() {
    long[] x = new long[1];
    long[] y = new long[1];
    int st;
    try {
      st = mixp.mixp_loader_next(ptr(), x, y);
    } finally {
      Reference.reachabilityFence(this);
      Reference.reachabilityFence(data);
    }
    return st == 1 ? null : new Batch(new Tensor(x[0]), new Tensor(y[0]));
  }

  /** @return the batches per epoch */
  public long numBatches() {
    try {
      return mixp.mixp_loader_num_batches(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}
