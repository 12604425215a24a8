package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

class TensorTest {
  private Session s;

  @BeforeEach
  void open() {
    s = new Session("cpu", 1, 1);
  }

  @AfterEach
  void close() {
    s.close();
  }

  @Test
  void sessionBasics() {
    assertEquals("cpu", s.device());
    assertEquals(1, s.numThreads());
    assertTrue(s.gradEnabled());
    try (Session.NoGrad ng = s.noGrad()) {
      assertFalse(s.gradEnabled());
    }
    assertTrue(s.gradEnabled());
    assertTrue(Mixp.buildInfo().contains(Mixp.version()));
  }

  private Tensor fp8(DType d, float[] v, long... shape) {
    try (Tensor f = Tensor.fromFloats(s, v, shape)) {
      return f.cast(d);
    }
  }

  /** fp8 products with scales, bias and amax, exact on small integers; misuse refused. */
  @Test
  void scaledMatmul() {
    final int m = 2, k = 16, n = 3;
    float[] av = new float[m * k], bv = new float[k * n], bias = {1f, -2f, 0.5f};
    for (int i = 0; i < av.length; ++i) av[i] = i % 7 - 3;
    for (int i = 0; i < bv.length; ++i) bv[i] = i % 5 - 2;
    try (Tensor a = fp8(DType.F8E4M3, av, m, k);
         Tensor b = fp8(DType.F8E4M3, bv, k, n);
         Tensor sa = Tensor.full(s, DType.F32, 0.5, 1);
         Tensor sb = Tensor.full(s, DType.F32, 4.0, 1);
         Tensor bf = Tensor.fromFloats(s, bias, n);
         Tensor bb = bf.cast(DType.BF16);
         Tensor amax = Tensor.full(s, DType.F32, 0.0, 1);
         Tensor d = Tensor.scaledMatmul(a, sa, b, sb, bb, DType.F32, 0, amax);
         Tensor fast = Tensor.scaledMatmul(a, sa, b, sb, null, DType.BF16,
                                           Tensor.SCALED_MATMUL_FAST_ACCUM, null)) {
      float[] got = d.toFloats();
      double most = 0;
      for (int i = 0; i < m; ++i) {
        for (int j = 0; j < n; ++j) {
          float sum = 0;
          for (int l = 0; l < k; ++l) sum += av[i * k + l] * bv[l * n + j];
          assertEquals(2 * sum + bias[j], got[i * n + j]);
          most = Math.max(most, Math.abs(2 * sum + bias[j]));
        }
      }
      assertEquals(most, amax.item());
      assertEquals(DType.BF16, fast.dtype());
      Tensor e5 = fp8(DType.F8E5M2, new float[16 * 16], 16, 16);
      assertThrows(DTypeException.class, () -> Tensor.scaledMatmul(e5, sa, e5, sb, null, DType.F32, 0, amax));
      assertThrows(ShapeException.class, () -> Tensor.scaledMatmul(a, sa, a, sb, null, DType.F32, 0, amax));
      assertThrows(InvalidArgumentException.class,
                   () -> Tensor.scaledMatmul(a, sa, b, sb, null, DType.F32, 4, amax));
      assertThrows(InvalidArgumentException.class,
                   () -> Tensor.scaledMatmul(null, sa, b, sb, null, DType.F32, 0, amax));
      assertEquals(most, amax.item()); // failed calls write nothing
      e5.close();
    }
  }

  /** The ops added with the op table's coverage check, against hand-computed values. */
  @Test
  void moreOps() {
    try (Tensor x = Tensor.fromFloats(s, new float[] {-4, -1, 0, 2, 4, 0.5f}, 2, 3);
         Tensor hs = x.hardswish();
         Tensor gt = x.geluTanh();
         Tensor hg = x.hardsigmoid();
         Tensor si = x.silu();
         Tensor rs = x.rsub(1);
         Tensor rd = x.rdiv(2);
         Tensor pt = x.permute(1, 0);
         Tensor pc = pt.contiguous();
         Tensor sl = x.slice(1, 0, 3, 2);
         Tensor slc = sl.contiguous();
         Tensor dr = x.dropout(0.5, false);
         Tensor a = Tensor.fromFloats(s, new float[] {1, 2, 3, 4}, 1, 2, 2);
         Tensor ab = a.bmm(a);
         Tensor w = Tensor.fromFloats(s, new float[] {1, 0, 0, 0, 1, 1}, 2, 3);
         Tensor lin = Tensor.linear(x, w, null)) {
      assertArrayEquals(new float[] {0, -1f / 3, 0, 5f / 3, 4, 0.5f * 3.5f / 6}, hs.toFloats(), 1e-6f);
      assertArrayEquals(new float[] {0, 2f / 6, 0.5f, 5f / 6, 1, 3.5f / 6}, hg.toFloats(), 1e-6f);
      assertEquals(2 / (1 + Math.exp(-2)), si.toFloats()[3], 1e-6);
      float[] xs = x.toFloats(), gts = gt.toFloats();
      for (int i = 0; i < xs.length; ++i) { // float32: relative 1e-5 of the tanh formula
        double v = xs[i];
        double want = 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v * v * v)));
        assertEquals(want, gts[i], 1e-5 * Math.abs(want) + 1e-7, "gelu_tanh(" + v + ")");
      }
      assertArrayEquals(new float[] {5, 2, 1, -1, -3, 0.5f}, rs.toFloats());
      assertArrayEquals(new float[] {-0.5f, -2, Float.POSITIVE_INFINITY, 1, 0.5f, 4}, rd.toFloats());
      assertArrayEquals(new float[] {-4, 2, -1, 4, 0, 0.5f}, pc.toFloats());
      assertArrayEquals(new float[] {-4, 0, 2, 0.5f}, slc.toFloats());
      assertArrayEquals(x.toFloats(), dr.toFloats()); // eval mode: the identity
      assertArrayEquals(new float[] {7, 10, 15, 22}, ab.toFloats());
      assertArrayEquals(new float[] {-4, -1, 2, 4.5f}, lin.toFloats());
      try (Tensor pd = x.pad(9, 1, 0);
           Tensor idx = Tensor.fromLongs(s, new long[] {1, 0}, 2);
           Tensor emb = Tensor.embedding(x, idx, -1);
           Tensor ln = Tensor.layerNorm(a, 1, null, null, 1e-5);
           Tensor gn = Tensor.groupNorm(a, 1, null, null, 1e-5);
           Tensor at = Tensor.scaledDotProductAttention(a, a, a, true, 0, 0)) {
        assertArrayEquals(new float[] {9, -4, -1, 0, 9, 2, 4, 0.5f}, pd.toFloats());
        assertArrayEquals(new float[] {2, 4, 0.5f, -4, -1, 0}, emb.toFloats());
        float z = (float) (0.5 / Math.sqrt(0.25 + 1e-5));
        assertArrayEquals(new float[] {-z, z, -z, z}, ln.toFloats(), 1e-6f);
        assertEquals(4, gn.numel());
        assertArrayEquals(new float[] {1, 2}, java.util.Arrays.copyOf(at.toFloats(), 2));
      }
      Tensor[] m = x.max(1, false);
      try {
        assertArrayEquals(new float[] {0, 4}, m[0].toFloats());
        assertArrayEquals(new float[] {2, 1}, m[1].toFloats());
      } finally {
        Mixp.closeAll(m);
      }
    }
  }

  @Test
  void roundTripsAndOps() {
    try (Tensor x = Tensor.fromFloats(s, new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
         Tensor h = x.cast(DType.F16);
         Tensor xt = x.transpose(0, 1);
         Tensor p = x.matmul(xt);
         Tensor sum = x.sum(false);
         Tensor z = Tensor.zeros(s, DType.BF16, 4)) {
      assertArrayEquals(new long[] {2, 3}, x.shape());
      assertEquals(DType.F32, x.dtype());
      assertEquals(6, x.numel());
      assertArrayEquals(new float[] {1, 2, 3, 4, 5, 6}, h.toFloats());
      assertArrayEquals(new float[] {14, 32, 32, 77}, p.toFloats());
      assertEquals(21.0, sum.item());
      assertArrayEquals(new float[4], z.toFloats());
      Tensor[] parts = x.split(1, 1, 2);
      try (Tensor c = Mixp.cat(1, parts)) {
        assertArrayEquals(new long[] {2, 2}, parts[1].shape());
        assertArrayEquals(x.toFloats(), c.toFloats());
      } finally {
        Mixp.closeAll(parts);
      }
      assertEquals("Tensor(f32, [2, 3])", x.toString());
    }
  }

  @Test
  void autograd() {
    try (Tensor w = Tensor.fromFloats(s, new float[] {1, -2, 3}, 3).requiresGrad(true);
         Tensor sq = w.mul(w);
         Tensor loss = sq.sum(false)) {
      loss.backward();
      try (Tensor g = w.grad()) {
        assertArrayEquals(new float[] {2, -4, 6}, g.toFloats());
      }
      w.zeroGrad();
      assertNull(w.grad());
      try (Tensor d = sq.detach()) {
        assertFalse(d.requiresGrad());
      }
    }
  }

  @Test
  void autocastPicksDtypes() {
    try (Tensor a = Tensor.randn(s, DType.F32, 4, 8); Tensor b = Tensor.randn(s, DType.F32, 8, 2)) {
      Tensor p;
      Tensor sm;
      try (Autocast ac = s.autocast(AmpLevel.O1, DType.F16)) {
        p = a.matmul(b);
        sm = p.softmax(1);
      }
      try (Tensor p2 = p; Tensor sm2 = sm; Tensor q = a.matmul(b)) {
        assertEquals(DType.F16, p2.dtype());
        assertEquals(DType.F32, sm2.dtype());
        assertEquals(DType.F32, q.dtype());
      }
      try (Autocast ac = new Autocast(s, AmpLevel.O1, DType.F16, null, new String[] {"matmul"});
           Tensor f = a.matmul(b)) {
        assertEquals(DType.F32, f.dtype());
      }
      Tensor odMm;
      Tensor odRelu;
      try (Autocast ac = s.autocast(AmpLevel.OD, DType.F16)) {
        odMm = a.matmul(b);
        odRelu = odMm.relu();
      }
      try (Tensor m = odMm; Tensor r = odRelu) {
        assertEquals(DType.F16, m.dtype()); // OD: only the low-precision list runs in half
        assertEquals(DType.F32, r.dtype());
      }
      try (Autocast ac = new Autocast(s, AmpLevel.O2, DType.F16, null, null, true);
           Tensor r = a.relu()) {
        assertEquals(DType.F32, r.dtype()); // O2 use_promote: an F32 input keeps it in fp32
      }
      try (Autocast ac = s.autocast("OD f16 white=relu");
           Tensor r = a.relu();
           Tensor q = a.matmul(b)) {
        assertEquals(DType.F16, r.dtype()); // white-listed by the policy line
        assertEquals(DType.F16, q.dtype());
      }
      assertThrows(InvalidArgumentException.class, () -> s.autocast("O3"));
    }
  }

  @Test
  void finalizersReleaseForgottenTensors() throws InterruptedException {
    long base = s.currentMemory();
    for (int i = 0; i < 50; i++) {
      Tensor.zeros(s, DType.F32, 256, 256); // never closed
    }
    assertTrue(s.currentMemory() >= base + 256 * 256 * 4);
    for (int i = 0; i < 100 && s.currentMemory() > base; i++) {
      System.gc();
      Thread.sleep(20);
    }
    assertEquals(base, s.currentMemory(), "the Cleaner did not release the forgotten tensors");
  }

  @Test
  void threadsWithTheirOwnSessions() throws InterruptedException {
    Thread[] ts = new Thread[6];
    String[] failures = new String[ts.length];
    for (int t = 0; t < ts.length; t++) {
      final int g = t;
      ts[t] = new Thread(() -> {
        try (Session own = new Session("cpu", g, 1)) {
          for (int i = 0; i < 50; i++) {
            try (Tensor a = Tensor.zeros(own, DType.F32, g + 1, 3); Tensor b = Tensor.zeros(own, DType.F32, 4, 5)) {
              a.matmul(b).close();
              failures[g] = "matmul did not throw";
            } catch (ShapeException e) {
              if (!e.getMessage().contains("a is [" + (g + 1) + ",3]")) {
                failures[g] = "foreign message: " + e.getMessage();
              }
            }
          }
        }
      });
      ts[t].start();
    }
    for (Thread t : ts) {
      t.join();
    }
    for (String f : failures) {
      assertNull(f);
    }
  }
}
