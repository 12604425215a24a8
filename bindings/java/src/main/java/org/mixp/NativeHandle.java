package org.mixp;

import java.lang.ref.Cleaner;
import java.util.function.LongConsumer;

/**
 * The C pointer of a mixp object and the function that frees it. {@link #close()}
 * frees at most once; a {@link Cleaner} frees what was never closed (mixp allows
 * the release and destroy functions from any thread once nobody else uses the
 * object, which holds for an unreachable one). After close the pointer is 0, so
 * a later call passes NULL to mixp, which throws its own
 * {@link InvalidArgumentException} instead of touching freed memory.
 */
public abstract class NativeHandle implements AutoCloseable {
  private static final Cleaner CLEANER = Cleaner.create();

  /** Frees the pointer; holds no reference to the wrapper. */
  private static final class Free implements Runnable {
    private final long ptr;
    private final LongConsumer free;

    Free(long ptr, LongConsumer free) {
      this.ptr = ptr;
      this.free = free;
    }

    @Override
    public void run() {
      free.accept(ptr);
    }
  }

  private volatile long ptr;
  private final Cleaner.Cleanable cleanable;

  NativeHandle(long ptr, LongConsumer free) {
    this.ptr = ptr;
    this.cleanable = CLEANER.register(this, new Free(ptr, free));
  }

  /** @return the C pointer, 0 after close. Callers keep {@code this} reachable during the native call. */
  final long ptr() {
    return ptr;
  }

  /** @return whether {@link #close()} has run */
  public final boolean isClosed() {
    return ptr == 0;
  }

  /** Frees the native object now; closing twice is harmless. */
  @Override
  public void close() {
    if (ptr != 0) {
      ptr = 0;
      cleanable.clean();
    }
  }
}
