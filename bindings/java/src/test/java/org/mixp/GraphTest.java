package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import org.junit.jupiter.api.Test;
import org.mixp.raw.mixp;

class GraphTest {
  /** A linear layer, AdamW, cross-entropy on a static input refilled each step. */
  static final class Rig implements AutoCloseable {
    final Session s = new Session("cpu", 7, 1);
    final Module lin = Module.linear(s, 4, 3, true, DType.F32);
    final Tensor[] params = lin.parameters();
    final Optimizer opt = Optimizer.adamW(s, params);
    final Tensor x = Tensor.zeros(s, DType.F32, 8, 4);
    final Tensor y = Tensor.fromLongs(s, new long[] {0, 1, 2, 0, 1, 2, 0, 1}, 8);

    void refill() {
      try (Tensor src = Tensor.randn(s, DType.F32, 8, 4)) {
        mixp.mixp_tensor_copy_(x.ptr(), src.ptr());
      }
    }

    Tensor step() {
      opt.zeroGrad();
      try (Tensor logits = lin.forward(x)) {
        Tensor loss = Mixp.crossEntropy(logits, y, Reduction.MEAN);
        loss.backward();
        opt.step();
        return loss;
      }
    }

    @Override
    public void close() {
      Mixp.closeAll(x, y, opt);
      Mixp.closeAll(params);
      Mixp.closeAll(lin, s);
    }
  }

  @Test
  void replayIsBitwiseTheEagerStep() {
    try (Rig e = new Rig(); Rig g = new Rig()) {
      Graph graph = null;
      Tensor gloss = null;
      for (int step = 0; step < 4; ++step) {
        e.refill();
        g.refill();
        try (Tensor eloss = e.step()) {
          if (step == 0) {
            g.step().close();
          } else if (step == 1) {
            g.s.graphCaptureBegin();
            gloss = g.step();
            assertThrows(StateException.class, gloss::item);
            graph = g.s.graphCaptureEnd();
          } else {
            graph.replay();
          }
          if (gloss != null) assertEquals(eloss.item(), gloss.item());
        }
        for (int i = 0; i < e.params.length; ++i)
          assertArrayEquals(e.params[i].toFloats(), g.params[i].toFloats());
      }
      graph.close();
      gloss.close();
      assertThrows(StateException.class, g.s::graphCaptureAbort);
    }
  }
}
