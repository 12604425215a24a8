package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Training-state checkpoints from Java: exact resume, and a damaged file changes nothing. */
class StateTest {
  /** Everything a state file covers, closed together. */
  static final class Run implements AutoCloseable {
    final Session s;
    final Dataset data;
    final Loader loader;
    final Module model;
    final Tensor[] params;
    final Optimizer opt;
    final GradScaler scaler;

    Run(long seed) {
      s = new Session("cpu", seed, 1);
      data = Dataset.synthetic(s, 512);
      loader = new Loader(data, 64, true, 3);
      model = Module.model(s, "mlp hidden=32");
      params = model.parameters();
      opt = Optimizer.adamW(s, params);
      scaler = new GradScaler(s, GradScaler.Mode.DYNAMIC, 1024.0, 2000);
    }

    /** Runs O1 f16 + GradScaler steps; returns the last loss. */
    double train(int steps) {
      double last = Double.NaN;
      for (int i = 0; i < steps; ++i) {
        Loader.Batch b = loader.next();
        if (b == null) {
          b = loader.next(); // the end of an epoch: the next call starts a new one
        }
        try (Loader.Batch batch = b) {
          Tensor logits;
          Tensor loss;
          try (Autocast region = s.autocast(AmpLevel.O1, DType.F16)) {
            logits = model.forward(batch.x);
            loss = Mixp.crossEntropy(logits, batch.y, Reduction.MEAN);
          }
          try (Tensor l = logits; Tensor lo = loss; Tensor scaled = scaler.scale(loss)) {
            opt.zeroGrad();
            scaled.backward();
            scaler.step(opt);
            scaler.update();
            last = lo.item();
          }
        }
      }
      return last;
    }

    float[][] values() {
      float[][] v = new float[params.length][];
      for (int i = 0; i < params.length; ++i) {
        v[i] = params[i].toFloats();
      }
      return v;
    }

    @Override
    public void close() {
      Mixp.closeAll(params);
      scaler.close();
      opt.close();
      model.close();
      loader.close();
      data.close();
      s.close();
    }
  }

  @Test
  void saveLoadResumesBitForBit(@TempDir Path dir) {
    double expected;
    try (Run straight = new Run(1)) {
      straight.train(5);
      expected = straight.train(7);
    }
    Path path = dir.resolve("run.safetensors");
    try (Run first = new Run(1);
         Run resumed = new Run(99)) { // another initialisation: everything comes from the file
      first.train(5);
      State.save(first.s, path, first.model, first.opt, first.scaler, first.loader, 5,
          "{\"run\": \"test\"}");
      assertEquals(5, State.load(resumed.s, path, resumed.model, resumed.opt, resumed.scaler,
          resumed.loader));
      assertEquals(first.scaler.getScale(), resumed.scaler.getScale());
      double got = resumed.train(7);
      assertEquals(Double.doubleToRawLongBits(expected), Double.doubleToRawLongBits(got),
          "resumed loss " + got + ", uninterrupted " + expected);
    }
  }

  @Test
  void damagedFileIsRefusedAndChangesNothing(@TempDir Path dir) throws Exception {
    Path path = dir.resolve("run.safetensors");
    try (Run r = new Run(1);
         Run other = new Run(7)) {
      State.save(r.s, path, r.model, r.opt, r.scaler, r.loader, 0, null);
      byte[] raw = Files.readAllBytes(path);
      raw[raw.length - 5] ^= 0x40; // a bit in the last tensor's bytes
      Files.write(path, raw);
      float[][] before = other.values();
      CorruptException e = assertThrows(CorruptException.class,
          () -> State.load(other.s, path, other.model, other.opt, other.scaler, other.loader));
      assertTrue(e.getMessage().contains("mixp_state_load"), e.getMessage());
      assertArrayEquals(before, other.values());

      assertThrows(MixpIOException.class, () -> State.save(r.s,
          dir.resolve("no-such-dir").resolve("x.safetensors"), r.model, null, null, null, 0, null));
      Module closed = Module.linear(r.s, 2, 2, true, DType.F32);
      closed.close();
      InvalidArgumentException c = assertThrows(InvalidArgumentException.class,
          () -> State.load(r.s, path, closed, null, null, null));
      assertTrue(c.getMessage().contains("model is closed"), c.getMessage());
    }
  }
}
