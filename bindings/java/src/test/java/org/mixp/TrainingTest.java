package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class TrainingTest {
  @Test
  void optimizerAndGradScaler() {
    try (Session s = new Session("cpu", 1, 1);
         Module lin = Module.linear(s, 4, 2, true, DType.F32)) {
      Tensor[] params = lin.parameters();
      assertArrayEquals(new String[] {"weight", "bias"}, lin.parameterNames());
      try (Optimizer opt = Optimizer.adamW(s, params);
           GradScaler scaler = new GradScaler(s, GradScaler.Mode.DYNAMIC);
           Tensor x = Tensor.randn(s, DType.F32, 8, 4);
           Tensor y = Tensor.fromLongs(s, new long[] {0, 1, 0, 1, 0, 1, 0, 1}, 8)) {
        assertEquals(65536.0, scaler.getScale());
        float before = params[0].toFloats()[0];
        try (Tensor logits = lin.forward(x);
             Tensor loss = Mixp.crossEntropy(logits, y, Reduction.MEAN);
             Tensor scaled = scaler.scale(loss)) {
          opt.zeroGrad();
          scaled.backward();
          scaler.unscale(opt);
          assertTrue(Mixp.clipGradNorm(opt, 1.0) > 0);
          scaler.step(opt);
          scaler.update();
        }
        assertFalse(scaler.foundInf());
        assertEquals(1, opt.stepCount());
        assertNotEquals(before, params[0].toFloats()[0]);
        opt.setLr(0.5);
        assertEquals(0.5, opt.lr());
      } finally {
        Mixp.closeAll(params);
      }
    }
  }

  @Test
  void modelZooAndData() {
    try (Session s = new Session("cpu", 1, 1);
         Module m = Module.model(s, "cnn in_channels=1 classes=10 width=4 blocks=1 image_size=8 hidden=8");
         Dataset d = Dataset.synthetic(s, 20, 1, 8, 8, 10, 1);
         Loader l = new Loader(d, 8, false, 0)) {
      assertTrue(m.numParameterElements() > 0);
      assertEquals(20, d.size());
      assertEquals(10, d.numClasses());
      assertEquals(3, l.numBatches());
      m.setTraining(false);
      long seen = 0;
      for (Loader.Batch b = l.next(); b != null; b = l.next()) {
        try (Loader.Batch batch = b; Tensor out = m.forward(batch.x)) {
          assertEquals(10, out.shape()[1]);
          seen += batch.y.shape()[0];
        }
      }
      assertEquals(20, seen);
    }
  }

  @Test
  void o2DecorateTrainsInHalf() {
    try (Session s = new Session("cpu", 1, 1);
         Module m = Module.model(s, "mlp in=16 hidden=8 classes=4")) {
      Tensor[] params = m.parameters();
      try (Optimizer opt = Optimizer.adamW(s, params)) {
        Mixp.decorate(m, opt, DType.F16);
        Tensor[] half = m.parameters();
        try {
          assertEquals(DType.F16, half[0].dtype());
        } finally {
          Mixp.closeAll(half);
        }
      } finally {
        Mixp.closeAll(params);
      }
    }
  }
  /** SGD steps of 2^-12 on BF16 weights at 1.0: lost to nearest, kept on average stochastically. */
  private static double meanAfterSmallSteps(boolean stochastic) {
    try (Session s = new Session("cpu", 1, 1);
         Tensor w = Tensor.ones(s, DType.BF16, 4096).requiresGrad(true);
         Tensor g = Tensor.full(s, DType.BF16, 1.0 / 4096, 4096);
         Optimizer opt = Optimizer.create(s, new Tensor[] {w}, Optimizer.Kind.SGD, 1.0, DType.BF16,
             stochastic)) {
      for (int i = 0; i < 16; ++i) {
        opt.zeroGrad();
        try (Tensor wg = w.mul(g); Tensor loss = wg.sum(false)) {
          loss.backward();
        }
        opt.step();
      }
      double mean = 0;
      for (float v : w.toFloats()) mean += v / 4096.0;
      return mean;
    }
  }

  @Test
  void stochasticRoundingKeepsSmallUpdates() {
    assertEquals(1.0, meanAfterSmallSteps(false));
    assertEquals(1.0 - 1.0 / 256, meanAfterSmallSteps(true), 1.0 / 2048);
  }
}
