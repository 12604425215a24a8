package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** DLPack exchange and the Hugging Face GPT-2 import/export from Java. */
class DLPackTest {
  private static void mentions(MixpException e, int status, String fn) {
    assertEquals(status, e.status(), e.getMessage());
    assertTrue(e.getMessage().contains(fn), () -> "'" + e.getMessage() + "' does not mention " + fn);
  }

  /** One library exports, another session imports: the same memory both ways, kept alive for the consumer. */
  @Test
  void sharesMemoryBetweenSessions() {
    try (Session a = new Session(1); Session b = new Session(2)) {
      Tensor x = Tensor.fromFloats(a, new float[] {1, 2, 3, 4, 5, 6}, 2, 3);
      long managed = DLPack.toManaged(x);
      assertNotEquals(0L, managed);
      try (Tensor y = DLPack.fromManaged(b, managed)) {
        assertArrayEquals(new long[] {2, 3}, y.shape());
        x.close(); // the consumer keeps the memory alive
        try (Tensor ones = Tensor.ones(b, DType.F32, 2, 3); Tensor z = y.add(ones)) {
          assertArrayEquals(new float[] {2, 3, 4, 5, 6, 7}, z.toFloats());
        }
      }
      try (Tensor v = Tensor.fromFloats(a, new float[] {7, 8}, 2)) {
        long versioned = DLPack.toManagedVersioned(v);
        try (Tensor w = DLPack.fromManagedVersioned(b, versioned);
             Tensor two = Tensor.fromFloats(b, new float[] {2, 2}, 2)) {
          w.copyFrom(two); // written through the importer, seen by the exporter
          assertArrayEquals(new float[] {2, 2}, v.toFloats());
        }
      }
      try (Tensor u = Tensor.zeros(a, DType.F32, 3)) {
        DLPack.release(DLPack.toManaged(u)); // never consumed: the deleter runs once
        DLPack.releaseVersioned(DLPack.toManagedVersioned(u));
        assertArrayEquals(new float[] {0, 0, 0}, u.toFloats());
      }
    }
  }

  @Test
  void misuse() {
    try (Session s = new Session()) {
      mentions(assertThrows(InvalidArgumentException.class, () -> DLPack.fromManaged(s, 0)),
               MixpException.INVALID_ARGUMENT, "mixp_tensor_from_dlpack");
      mentions(assertThrows(InvalidArgumentException.class, () -> DLPack.fromManagedVersioned(s, 0)),
               MixpException.INVALID_ARGUMENT, "mixp_tensor_from_dlpack_versioned");
      Tensor t = Tensor.zeros(s, DType.F32, 2);
      long managed = DLPack.toManaged(t);
      mentions(assertThrows(InvalidArgumentException.class, () -> DLPack.fromManaged(null, managed)),
               MixpException.INVALID_ARGUMENT, "mixp_tensor_from_dlpack");
      DLPack.release(managed); // the failed import took nothing
      t.close();
      mentions(assertThrows(InvalidArgumentException.class, () -> DLPack.toManaged(t)),
               MixpException.INVALID_ARGUMENT, "mixp_tensor_to_dlpack");
      mentions(assertThrows(InvalidArgumentException.class, () -> DLPack.toManagedVersioned(null)),
               MixpException.INVALID_ARGUMENT, "mixp_tensor_to_dlpack_versioned");
      DLPack.release(0);
      DLPack.releaseVersioned(0);
    }
  }

  private static final String ZOO = "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6 gelu=tanh";

  private static float[] logits(Session s, Module m) {
    try (Tensor tokens = Tensor.fromLongs(s, new long[] {1, 5, 12, 0, 7, 3}, 1, 6);
         Tensor y = m.forward(tokens)) {
      return y.toFloats();
    }
  }

  /** Exported, then imported into a model of other weights: the logits come back bit for bit. */
  @Test
  void hfGpt2RoundTrip(@TempDir Path tmp) {
    Path dir = tmp.resolve("gpt2");
    try (Session a = new Session(1); Session b = new Session(2);
         Module src = Module.model(a, ZOO); Module dst = Module.model(b, ZOO)) {
      src.saveHfGpt2(dir.toString(), DType.F32, null);
      assertTrue(Files.exists(dir.resolve("model.safetensors")));
      assertTrue(Files.exists(dir.resolve("config.json")));
      assertFalse(Arrays.equals(logits(a, src), logits(b, dst)), "two seeds, one model: the test proves nothing");
      Tensor[] params = dst.parameters();
      try (Optimizer opt = Optimizer.adamW(b, params)) {
        dst.loadHfGpt2(dir.toString(), opt);
      } finally {
        for (Tensor p : params) {
          p.close();
        }
      }
      assertArrayEquals(logits(a, src), logits(b, dst));
    }
  }

  @Test
  void hfGpt2Misuse(@TempDir Path tmp) {
    String dir = tmp.resolve("gpt2").toString();
    try (Session s = new Session(); Module m = Module.model(s, ZOO);
         Module erf = Module.model(s, "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6");
         Module wider = Module.model(s, "gpt n_layer=2 n_head=2 n_embd=16 vocab=13 block_size=6 gelu=tanh")) {
      m.saveHfGpt2(dir, DType.BF16, null);
      mentions(assertThrows(InvalidArgumentException.class, () -> erf.loadHfGpt2(dir, null)),
               MixpException.INVALID_ARGUMENT, "gelu");
      mentions(assertThrows(ShapeException.class, () -> wider.loadHfGpt2(dir, null)),
               MixpException.SHAPE, "mixp_model_load_hf_gpt2");
      mentions(assertThrows(MixpIOException.class, () -> m.loadHfGpt2(dir + "/missing", null)),
               MixpException.IO, "mixp_model_load_hf_gpt2");
      mentions(assertThrows(DTypeException.class, () -> m.saveHfGpt2(dir, DType.I64, null)),
               MixpException.DTYPE, "mixp_model_save_hf_gpt2");
    }
  }
}
