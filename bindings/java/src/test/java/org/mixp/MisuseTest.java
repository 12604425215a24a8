package org.mixp;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.concurrent.TimeUnit;
import java.util.zip.ZipEntry;
import java.util.zip.ZipInputStream;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Misuse throws the MixpException subclass of the status, with mixp's own message. */
class MisuseTest {
  private static void mentions(MixpException e, int status, String... fragments) {
    assertEquals(status, e.status(), e.getMessage());
    for (String f : fragments) {
      assertTrue(e.getMessage().contains(f), () -> "'" + e.getMessage() + "' does not mention " + f);
    }
  }

  @Test
  void badShape() {
    try (Session s = new Session(); Tensor a = Tensor.zeros(s, DType.F32, 2, 3); Tensor b = Tensor.zeros(s, DType.F32, 4, 5)) {
      mentions(assertThrows(ShapeException.class, () -> a.matmul(b)), MixpException.SHAPE, "mixp_matmul");
      mentions(assertThrows(ShapeException.class, () -> a.reshape(7)), MixpException.SHAPE);
      assertEquals("shape mismatch", assertThrows(MixpException.class, () -> a.add(b)).statusString());
    }
  }

  @Test
  void wrongDtype() {
    try (Session s = new Session(); Tensor i = Tensor.zeros(s, DType.I64, 3)) {
      mentions(assertThrows(DTypeException.class, i::exp), MixpException.DTYPE, "mixp_exp");
      mentions(assertThrows(DTypeException.class, () -> s.autocast(AmpLevel.O1, DType.I32)),
               MixpException.DTYPE, "i32");
    }
  }

  @Test
  void badArguments() {
    try (Session s = new Session()) {
      mentions(assertThrows(InvalidArgumentException.class,
                            () -> Tensor.fromBytes(s, new byte[7], DType.F32, 2)),
               MixpException.INVALID_ARGUMENT, "nbytes");
      mentions(assertThrows(InvalidArgumentException.class, () -> Module.model(s, "mlp bogus=1")),
               MixpException.INVALID_ARGUMENT, "bogus");
      mentions(assertThrows(InvalidArgumentException.class, () -> Optimizer.adamW(s, null)),
               MixpException.INVALID_ARGUMENT, "mixp_optimizer_create");
      mentions(assertThrows(InvalidArgumentException.class, () -> new Session("tpu", 0, 0)),
               MixpException.INVALID_ARGUMENT, "tpu");
      mentions(assertThrows(InvalidArgumentException.class,
                            () -> new Autocast(s, AmpLevel.O1, DType.F16, new String[] {"no_such_op"}, null)),
               MixpException.INVALID_ARGUMENT, "no_such_op");
    }
  }

  @Test
  void useAfterClose() {
    Session s = new Session();
    Tensor a = Tensor.zeros(s, DType.F32, 2);
    Tensor b = Tensor.zeros(s, DType.F32, 2);
    a.close();
    a.close(); // harmless
    assertTrue(a.isClosed());
    mentions(assertThrows(InvalidArgumentException.class, () -> a.add(b)), MixpException.INVALID_ARGUMENT, "mixp_add");
    mentions(assertThrows(InvalidArgumentException.class, a::shape), MixpException.INVALID_ARGUMENT);
    mentions(assertThrows(InvalidArgumentException.class, a::toFloats), MixpException.INVALID_ARGUMENT,
             "mixp_tensor_to_host");
    Module m = Module.linear(s, 2, 2, true, DType.F32);
    m.close();
    mentions(assertThrows(InvalidArgumentException.class, m::parameters), MixpException.INVALID_ARGUMENT,
             "mixp_module_parameter");
    mentions(assertThrows(InvalidArgumentException.class, () -> m.forward(b)), MixpException.INVALID_ARGUMENT,
             "mixp_module_forward");
    mentions(assertThrows(InvalidArgumentException.class, () -> b.add(null)), MixpException.INVALID_ARGUMENT, "mixp_add");
    s.close();
    mentions(assertThrows(InvalidArgumentException.class, () -> Tensor.zeros(s, DType.F32, 1)),
             MixpException.INVALID_ARGUMENT, "session");
    b.close();
  }

  @Test
  void unscaleTwice() {
    try (Session s = new Session(1);
         Module lin = Module.linear(s, 4, 2, true, DType.F32)) {
      Tensor[] params = lin.parameters();
      try (Optimizer opt = Optimizer.adamW(s, params);
           GradScaler scaler = new GradScaler(s, GradScaler.Mode.DYNAMIC);
           Tensor x = Tensor.randn(s, DType.F32, 3, 4);
           Tensor out = lin.forward(x);
           Tensor loss = out.sum(false);
           Tensor scaled = scaler.scale(loss)) {
        scaled.backward();
        scaler.unscale(opt);
        mentions(assertThrows(StateException.class, () -> scaler.unscale(opt)), MixpException.STATE, "unscale");
      } finally {
        Mixp.closeAll(params);
      }
    }
  }

  @Test
  void optimizerNamesWhatOverflowed() {
    try (Session s = new Session(1);
         Tensor a = Tensor.fromFloats(s, new float[] {1, 2}, 2).requiresGrad(true);
         Tensor b = Tensor.fromFloats(s, new float[] {3}, 1).requiresGrad(true);
         Tensor x = Tensor.fromFloats(s, new float[] {Float.POSITIVE_INFINITY, 1}, 2);
         Optimizer opt = Optimizer.adamW(s, new Tensor[] {a, b})) {
      assertArrayEquals(new int[0], opt.nonfiniteGrads());
      try (Tensor ax = a.mul(x);
           Tensor l = ax.sum(false);
           Tensor bs = b.sum(false);
           Tensor t = l.add(bs)) {
        t.backward();
      }
      assertArrayEquals(new int[] {0}, opt.nonfiniteGrads());
    }
  }

  @Test
  void nativeLoaderNamesEveryPathItTried(@TempDir Path dir) throws Exception {
    // A jar without the native resources, alone in a folder, no library
    // beside it, nothing on the paths: the error names every place tried.
    Path jar = Paths.get(NativeLoader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    assertTrue(jar.toString().endsWith(".jar"), jar.toString());
    Path stripped = dir.resolve("mixp.jar");
    try (ZipInputStream in = new ZipInputStream(Files.newInputStream(jar));
         ZipOutputStream out = new ZipOutputStream(Files.newOutputStream(stripped))) {
      for (ZipEntry e; (e = in.getNextEntry()) != null; ) {
        if (e.getName().startsWith("org/mixp/native/")) {
          continue;
        }
        out.putNextEntry(new ZipEntry(e.getName()));
        in.transferTo(out);
        out.closeEntry();
      }
    }
    String out = runMixp(stripped);
    for (String tried : new String[] {"/nonexistent/libmixp_jni.so (no such file)",
                                      dir.resolve("libmixp_jni.so") + " (no such file)",
                                      "java.library.path=/nonexistent-dir",
                                      "org/mixp/native/linux-x86_64/libmixp_jni.so (not in this jar)"}) {
      assertTrue(out.contains(tried), () -> "the error does not name " + tried + ":\n" + out);
    }
  }

  @Test
  void jarAloneLoadsTheLibrariesItCarries(@TempDir Path dir) throws Exception {
    Path jar = Paths.get(NativeLoader.class.getProtectionDomain().getCodeSource().getLocation().toURI());
    Path lonely = Files.copy(jar, dir.resolve("mixp.jar"));
    String out = runMixp(lonely);
    assertTrue(out.startsWith("mixp " + Mixp.version()), out);
  }

  // Runs org.mixp.Mixp from `jar` alone with every other way to the library
  // pointing nowhere; returns its output (an exit status 0 when it loaded).
  private static String runMixp(Path jar) throws Exception {
    String java = Paths.get(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "-D" + NativeLoader.PROPERTY + "=/nonexistent/libmixp_jni.so",
                                   "-Djava.library.path=/nonexistent-dir", "-cp", jar.toString(), "org.mixp.Mixp")
                    .redirectErrorStream(true).start();
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
    assertTrue(p.waitFor(60, TimeUnit.SECONDS));
    boolean carries = out.startsWith("mixp ");
    assertEquals(carries, p.exitValue() == 0, out);
    return out;
  }
}
