package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
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
