package org.mixp;

import java.lang.ref.Reference;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_synthetic_options;

/** A set of (input, label) samples. */
public final class Dataset extends NativeHandle {
  private Dataset(long ptr) {
    super(ptr, mixp::mixp_dataset_destroy);
  }

  /**
   * Synthetic images: class prototypes plus noise, deterministic per seed.
   * @param samples number of samples
   * @param channels image channels
   * @param height image height
   * @param width image width
   * @param classes number of classes
   * @param seed data seed
   */
  public static Dataset synthetic(Session s, long samples, long channels, long height, long width,
                                  long classes, long seed) {
    mixp_synthetic_options o = new mixp_synthetic_options();
    try {
      o.setNum_samples(samples);
      o.setChannels(channels);
      o.setHeight(height);
      o.setWidth(width);
      o.setNum_classes(classes);
      o.setSeed(seed);
      long[] out = new long[1];
      mixp.mixp_dataset_synthetic(Tensor.p(s), o, out);
      return new Dataset(out[0]);
    } finally {
      o.delete();
      Reference.reachabilityFence(s);
    }
  }

  /** mixp's default synthetic set (1x28x28 images, 10 classes, seed 1) with n samples. */
  public static Dataset synthetic(Session s, long samples) {
    return synthetic(s, samples, 1, 28, 28, 10, 1);
  }

  /** @return the number of samples */
  public long size() {
    try {
      return mixp.mixp_dataset_size(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the number of classes */
  public long numClasses() {
    try {
      return mixp.mixp_dataset_num_classes(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}
