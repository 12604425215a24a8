package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

/** Data parallelism with the single-process transport (a world of one, no MPI), and sharded loaders. */
class DistTest {
  private static final float[] VALUES = {1.5f, -2f, 3.25f, 0f};

  @Test
  void worldOfOne() {
    try (Session s = new Session("cpu", 0, 1); Dist d = new Dist(s, Dist.Transport.SINGLE)) {
      assertEquals(0, d.rank());
      assertEquals(1, d.worldSize());
      assertEquals(0, d.localRank());
      assertTrue(d.describe().contains("single"), d.describe());
      assertTrue(Dist.envLocalRank() >= 0);
      d.barrier();
      for (ReduceOp op : ReduceOp.values()) {
        try (Tensor t = Tensor.fromFloats(s, VALUES, 2, 2)) {
          d.allReduce(t, op);
          assertArrayEquals(VALUES, t.toFloats(), op.name());
        }
      }
      try (Tensor t = Tensor.fromFloats(s, VALUES, 2, 2); Tensor g = d.allGather(t)) {
        assertArrayEquals(new long[] {1, 2, 2}, g.shape());
        assertArrayEquals(VALUES, g.toFloats());
        d.broadcast(t, 0);
        assertArrayEquals(VALUES, t.toFloats());
        MixpException e = assertThrows(InvalidArgumentException.class, () -> d.broadcast(t, 1));
        assertTrue(e.getMessage().contains("root"), e.getMessage());
      }
      try (Tensor ints = Tensor.fromLongs(s, new long[] {3, -4}, 2)) {
        d.allReduce(ints, ReduceOp.SUM);
        MixpException e = assertThrows(DTypeException.class, () -> d.allReduce(ints, ReduceOp.AVG));
        assertTrue(e.getMessage().contains("mixp_dist_all_reduce"), e.getMessage());
      }
    }
  }

  @Test
  void averageGradientsOfOneRankChangesNothing() {
    try (Session s = new Session("cpu", 1, 1);
         Dist d = new Dist(s, Dist.Transport.SINGLE, 256);
         Module lin = Module.linear(s, 3, 2, true, DType.F32)) {
      d.broadcastModule(lin);
      Tensor[] params = lin.parameters();
      try (Optimizer opt = Optimizer.create(s, params, Optimizer.Kind.SGD, 0.1);
           Tensor x = Tensor.randn(s, DType.F32, 4, 3);
           Tensor y = lin.forward(x);
           Tensor sq = y.mul(y);
           Tensor loss = sq.sum(false)) {
        d.prepareGradients(opt, 0); // averaged during backward: one rank, the same values
        loss.backward();
        float[][] before = new float[params.length][];
        for (int i = 0; i < params.length; i++) {
          try (Tensor g = params[i].grad()) {
            assertNotNull(g);
            before[i] = g.toFloats();
          }
        }
        d.averageGradients(opt, 0);
        d.averageGradients(opt, 4);
        for (int i = 0; i < params.length; i++) {
          try (Tensor g = params[i].grad()) {
            assertArrayEquals(before[i], g.toFloats());
          }
        }
        MixpException e = assertThrows(InvalidArgumentException.class, () -> d.averageGradients(opt, -1));
        assertTrue(e.getMessage().contains("local_samples"), e.getMessage());
        e = assertThrows(InvalidArgumentException.class, () -> d.prepareGradients(opt, -1));
        assertTrue(e.getMessage().contains("mixp_dist_prepare_gradients"), e.getMessage());
        opt.step();
      } finally {
        Mixp.closeAll(params);
      }
    }
  }

  @Test
  void misuse() {
    try (Session s = new Session(); Session other = new Session()) {
      assertThrows(InvalidArgumentException.class, () -> new Dist(s, Dist.Transport.SINGLE, 0));
      Dist d = new Dist(s, Dist.Transport.SINGLE);
      MixpException e = assertThrows(StateException.class, () -> new Dist(s, Dist.Transport.SINGLE));
      assertEquals(MixpException.STATE, e.status());
      try (Tensor x = Tensor.zeros(other, DType.F32, 2)) {
        e = assertThrows(DeviceException.class, () -> d.allReduce(x, ReduceOp.SUM));
        assertTrue(e.getMessage().contains("another session"), e.getMessage());
      }
      assertThrows(InvalidArgumentException.class, () -> d.allReduce(null, ReduceOp.SUM));
      assertThrows(InvalidArgumentException.class, () -> d.broadcastModule(null));
      d.close();
      d.close(); // harmless
      assertTrue(d.isClosed());
      assertEquals(-1, d.rank());
      assertEquals(-1, d.worldSize());
      assertEquals("", d.describe());
      e = assertThrows(InvalidArgumentException.class, d::barrier);
      assertTrue(e.getMessage().contains("mixp_dist_barrier"), e.getMessage());
      try (Dist again = new Dist(s, Dist.Transport.SINGLE)) { // the session is free again
        assertEquals(1, again.worldSize());
      }
    }
  }

  @Test
  void shardsMakeUpTheGlobalBatch() {
    try (Session s = new Session("cpu", 0, 1);
         Dataset data = Dataset.synthetic(s, 22, 1, 4, 4, 10, 3);
         Loader full = new Loader(data, 6, true, 7);
         Loader shard0 = new Loader(data, 3, true, 7, 0, 2);
         Loader shard1 = new Loader(data, 3, true, 7, 1, 2)) {
      assertEquals(full.numBatches(), shard0.numBatches());
      assertEquals(full.numBatches(), shard1.numBatches());
      for (Loader.Batch b = full.next(); b != null; b = full.next()) {
        try (Loader.Batch b0 = shard0.next(); Loader.Batch b1 = shard1.next()) {
          assertArrayEquals(b.y.toBytes(), concat(b0.y.toBytes(), b1.y.toBytes()));
          assertArrayEquals(b.x.toBytes(), concat(b0.x.toBytes(), b1.x.toBytes()));
        }
        b.close();
      }
      assertNull(shard0.next());
      assertNull(shard1.next());
      MixpException e = assertThrows(InvalidArgumentException.class, () -> new Loader(data, 3, true, 7, 2, 2));
      assertTrue(e.getMessage().contains("shard"), e.getMessage());
    }
  }

  private static byte[] concat(byte[] a, byte[] b) {
    byte[] out = java.util.Arrays.copyOf(a, a.length + b.length);
    System.arraycopy(b, 0, out, a.length, b.length);
    return out;
  }
}
