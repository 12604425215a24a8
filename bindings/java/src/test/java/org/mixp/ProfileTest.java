package org.mixp;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ProfileTest {
  @Test
  void profiledStep(@TempDir Path dir) throws Exception {
    try (Session s = new Session("cpu", 1, 1);
         Module lin = Module.linear(s, 4, 2, true, DType.F32)) {
      Tensor[] params = lin.parameters();
      try (Optimizer opt = Optimizer.adamW(s, params);
           Tensor x = Tensor.randn(s, DType.F32, 8, 4);
           Tensor y = Tensor.fromLongs(s, new long[] {0, 1, 0, 1, 0, 1, 0, 1}, 8)) {
        assertThrows(StateException.class, s::profileEnd);
        s.profileBegin();
        assertThrows(StateException.class, s::profileBegin);
        try (Tensor logits = lin.forward(x);
             Tensor loss = Mixp.crossEntropy(logits, y, Reduction.MEAN)) {
          opt.zeroGrad();
          loss.backward();
          opt.step();
        }
        try (Profile p = s.profileEnd()) {
          assertTrue(p.length() >= 4);
          List<Profile.Row> rows = p.rows();
          long linearBackward = 0, steps = 0;
          for (int i = 0; i < rows.size(); ++i) {
            Profile.Row r = rows.get(i);
            if (i > 0) assertTrue(r.selfDeviceMs <= rows.get(i - 1).selfDeviceMs);
            assertTrue(r.selfHostMs <= r.hostMs + 1e-9);
            if (r.op.equals("linear") && r.backward) linearBackward = r.calls;
            if (r.op.equals("optimizer_step")) steps = r.calls;
          }
          assertEquals(1, linearBackward);
          assertEquals(1, steps);
          assertTrue(p.report(2).contains("more rows)"));
          Path trace = dir.resolve("step.json");
          p.writeTrace(trace.toString());
          String json = Files.readString(trace);
          assertTrue(json.startsWith("{\"traceEvents\":["));
          assertThrows(InvalidArgumentException.class, () -> p.writeTrace(""));
        }
        assertTrue(s.peakDeviceMemory() >= s.deviceMemory());
        assertTrue(s.deviceMemory() >= s.currentMemory());
      } finally {
        Mixp.closeAll(params);
      }
    }
  }
}
