package org.mixp;

import java.lang.ref.Reference;
import java.util.ArrayList;
import java.util.List;
import org.mixp.raw.mixp;
import org.mixp.raw.mixp_profile_row;

/**
 * What the profiler recorded between {@link Session#profileBegin()} and {@link
 * Session#profileEnd()}: every op the session ran, with its input shapes and dtypes, host time
 * and device time (CUDA events on a GPU, the wall clock on the CPU).
 *
 * <pre>{@code
 * s.profileBegin();
 * ... one training step ...
 * try (Profile p = s.profileEnd()) {
 *   System.out.print(p.report(20));
 *   p.writeTrace("step.json");   // chrome://tracing or ui.perfetto.dev
 * }
 * }</pre>
 */
public final class Profile extends NativeHandle {
  /** One op in one pass over all its calls; times in milliseconds. */
  public static final class Row {
    /** The op's name ("matmul", "backward", "optimizer_step"). */
    public final String op;
    /** Whether these are the calls a backward pass made. */
    public final boolean backward;
    /** How many calls. */
    public final long calls;
    /** Host and device time, the recorded ops nested in the calls included. */
    public final double hostMs, deviceMs;
    /** Host and device time less that of the recorded ops nested in the calls. */
    public final double selfHostMs, selfDeviceMs;

    Row(mixp_profile_row r) {
      op = r.getOp();
      backward = r.getBackward() != 0;
      calls = r.getCalls();
      hostMs = r.getHost_ms();
      deviceMs = r.getDevice_ms();
      selfHostMs = r.getSelf_host_ms();
      selfDeviceMs = r.getSelf_device_ms();
    }
  }

  Profile(long ptr) {
    super(ptr, mixp::mixp_profile_destroy);
  }

  /** @return the number of recorded op calls, -1 after close */
  public long length() {
    try {
      return mixp.mixp_profile_length(ptr());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** @return the summary, largest self device time first */
  public List<Row> rows() {
    mixp_profile_row r = new mixp_profile_row();
    try {
      long n = mixp.mixp_profile_summary_rows(ptr());
      List<Row> rows = new ArrayList<>();
      for (long i = 0; i < n; ++i) {
        mixp.mixp_profile_summary_get(ptr(), i, r);
        rows.add(new Row(r));
      }
      return rows;
    } finally {
      r.delete();
      Reference.reachabilityFence(this);
    }
  }

  /**
   * @param maxRows the most rows to print (0 or less: all)
   * @return the summary as a table and a totals line
   */
  public String report(int maxRows) {
    try {
      return mixp.mixp_profile_report(ptr(), maxRows);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** Writes the Chrome trace event file (chrome://tracing, Perfetto) to {@code path}. */
  public void writeTrace(String path) {
    try {
      mixp.mixp_profile_write_trace(ptr(), path);
    } finally {
      Reference.reachabilityFence(this);
    }
  }
}
