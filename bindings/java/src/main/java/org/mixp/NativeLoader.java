package org.mixp;

import java.io.File;
import java.net.URISyntaxException;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the JNI library {@code libmixp_jni.so} (which links {@code libmixp.so}).
 * It tries, in order: the file named by the system property
 * {@code mixp.jni.library}; {@code libmixp_jni.so} in the directory of the jar
 * (or class folder) holding this class; {@code System.loadLibrary("mixp_jni")}
 * along {@code java.library.path}. When all fail, the {@link UnsatisfiedLinkError}
 * names every path tried and why each failed. The raw JNI class calls
 * {@link #load()} from its static initialiser; calling it again does nothing.
 */
public final class NativeLoader {
  /** The system property naming the library file to load first. */
  public static final String PROPERTY = "mixp.jni.library";
  private static final String FILE = System.mapLibraryName("mixp_jni");
  private static boolean loaded;

  private NativeLoader() {}

  /** Loads the library once. @throws UnsatisfiedLinkError naming every path tried */
  public static synchronized void load() {
    if (loaded) {
      return;
    }
    List<String> tried = new ArrayList<>();
    String prop = System.getProperty(PROPERTY);
    if (prop != null && !prop.isEmpty()) {
      if (tryLoad(new File(prop), tried)) {
        return;
      }
    } else {
      tried.add("-D" + PROPERTY + " (not set)");
    }
    File here = codeDirectory();
    if (here != null && tryLoad(new File(here, FILE), tried)) {
      return;
    }
    try {
      System.loadLibrary("mixp_jni");
      loaded = true;
      return;
    } catch (UnsatisfiedLinkError e) {
      tried.add(FILE + " on java.library.path=" + System.getProperty("java.library.path") + ": " + e.getMessage());
    }
    throw new UnsatisfiedLinkError("mixp: cannot load the JNI library; tried " + String.join("; ", tried));
  }

  private static boolean tryLoad(File f, List<String> tried) {
    if (!f.isFile()) {
      tried.add(f.getAbsolutePath() + " (no such file)");
      return false;
    }
    try {
      System.load(f.getAbsolutePath());
      loaded = true;
      return true;
    } catch (UnsatisfiedLinkError e) {
      tried.add(f.getAbsolutePath() + ": " + e.getMessage());
      return false;
    }
  }

  private static File codeDirectory() {
    try {
      CodeSource cs = NativeLoader.class.getProtectionDomain().getCodeSource();
      if (cs == null || cs.getLocation() == null) {
        return null;
      }
      File f = new File(cs.getLocation().toURI());
      return f.isDirectory() ? f : f.getParentFile();
    } catch (URISyntaxException | SecurityException e) {
      return null;
    }
  }
}
