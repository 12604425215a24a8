package org.mixp;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.List;

/**
 * Loads the JNI library {@code libmixp_jni.so} (which links {@code libmixp.so}).
 * It tries, in order: the file named by the system property
 * {@code mixp.jni.library}; {@code libmixp_jni.so} in the directory of the jar
 * (or class folder) holding this class; {@code System.loadLibrary("mixp_jni")}
 * along {@code java.library.path}; and last the copies the jar carries as
 * resources ({@code org/mixp/native/linux-x86_64/}: {@code libmixp.so.0},
 * {@code libmixp_jni.so} and, when built, the CUDA plugin
 * {@code libmixp_cuda.so} and the MPI transport plugin {@code libmixp_mpi.so}), extracted into a fresh temporary directory that
 * is deleted when the JVM exits, so {@code java -cp mixp.jar} alone works.
 * {@code libmixp.so} itself needs oneDNN, libgomp and zlib from the host
 * (Debian: libdnnl2). When all fail, the {@link UnsatisfiedLinkError} names
 * every path tried and why each failed. The raw JNI class calls {@link #load()}
 * from its static initialiser; calling it again does nothing.
 * {@code java -cp mixp.jar org.mixp.NativeLoader} prints where it loaded from.
 */
public final class NativeLoader {
  /** The system property naming the library file to load first. */
  public static final String PROPERTY = "mixp.jni.library";
  private static final String FILE = System.mapLibraryName("mixp_jni");
  private static final String RESOURCES = "/org/mixp/native/linux-x86_64/";
  // libmixp first: loading it by path satisfies libmixp_jni's NEEDED entry
  // by soname, whatever the JNI library's RUNPATH says.
  // The plugins (CUDA backend, MPI transport) are optional and never loaded here.
  private static final String[] BUNDLED = {"libmixp.so.0", "libmixp_cuda.so", "libmixp_mpi.so", FILE};
  private static boolean loaded;
  private static String source = "not loaded";

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
      source = FILE + " on java.library.path";
      return;
    } catch (UnsatisfiedLinkError e) {
      tried.add(FILE + " on java.library.path=" + System.getProperty("java.library.path") + ": " + e.getMessage());
    }
    if (loadBundled(tried)) {
      return;
    }
    throw new UnsatisfiedLinkError("mixp: cannot load the JNI library; tried " + String.join("; ", tried));
  }

  /** Where the JNI library came from (a path, or how it was found). */
  public static synchronized String source() {
    return source;
  }

  /** Prints where the library was loaded from and the library's version. */
  public static void main(String[] args) {
    String version = Mixp.version();
    System.out.println("mixp " + version + ": " + FILE + " loaded from " + source());
  }

  private static boolean tryLoad(File f, List<String> tried) {
    if (!f.isFile()) {
      tried.add(f.getAbsolutePath() + " (no such file)");
      return false;
    }
    try {
      System.load(f.getAbsolutePath());
      loaded = true;
      source = f.getAbsolutePath();
      return true;
    } catch (UnsatisfiedLinkError e) {
      tried.add(f.getAbsolutePath() + ": " + e.getMessage());
      return false;
    }
  }

  // Extracts the jar's copies next to each other (libmixp finds the CUDA
  // plugin in its own directory) and loads libmixp, then the JNI library.
  private static boolean loadBundled(List<String> tried) {
    if (NativeLoader.class.getResource(RESOURCES + FILE) == null) {
      tried.add("the jar's " + RESOURCES + FILE + " (not in this jar)");
      return false;
    }
    Path dir;
    try {
      dir = Files.createTempDirectory("mixp-native-");
    } catch (IOException | SecurityException e) {
      tried.add("extracting the jar's libraries: " + e);
      return false;
    }
    dir.toFile().deleteOnExit();
    List<File> extracted = new ArrayList<>();
    for (String name : BUNDLED) {
      try (InputStream in = NativeLoader.class.getResourceAsStream(RESOURCES + name)) {
        if (in == null) {
          continue;  // the plugins are optional
        }
        Path out = dir.resolve(name);
        Files.copy(in, out, StandardCopyOption.REPLACE_EXISTING);
        out.toFile().deleteOnExit();
        extracted.add(out.toFile());
      } catch (IOException | SecurityException e) {
        tried.add("extracting " + name + " into " + dir + ": " + e);
        return false;
      }
    }
    for (File f : extracted) {
      if (f.getName().equals("libmixp_cuda.so") || f.getName().equals("libmixp_mpi.so")) {
        continue;  // dlopen'ed by libmixp on demand, from its own directory
      }
      try {
        System.load(f.getAbsolutePath());
      } catch (UnsatisfiedLinkError e) {
        tried.add(f.getAbsolutePath() + " (from the jar): " + e.getMessage());
        return false;
      }
    }
    loaded = true;
    source = dir.resolve(FILE) + " (extracted from the jar)";
    return true;
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
