package org.pytorch.executorch;

/**
 * Loads the JNI library, once per class loader. By default it is {@code libember_jni.so} on
 * {@code java.library.path}; the system property {@code ember.jni.library} names the file
 * explicitly (an absolute path).
 */
public final class NativeLibrary {
  private static boolean loaded;

  private NativeLibrary() {}

  /** Loads the library if it is not loaded yet. */
  public static synchronized void load() {
    if (loaded) {
      return;
    }
    String path = System.getProperty("ember.jni.library");
    if (path != null && !path.isEmpty()) {
      System.load(path);
    } else {
      System.loadLibrary("ember_jni");
    }
    loaded = true;
  }

  /**
   * Blocks of native memory the runtime and this binding hold right now (allocations from ember's
   * platform heap, which the binding counts). A test can load and destroy modules and check that
   * the count comes back to where it was.
   */
  public static long liveNativeBlocks() {
    load();
    return nativeLiveBlocks();
  }

  private static native long nativeLiveBlocks();
}
