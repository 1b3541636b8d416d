package org.pytorch.executorch;

import java.lang.ref.Cleaner;
import java.lang.ref.Reference;
import java.nio.Buffer;
import java.util.HashMap;
import java.util.Map;

/**
 * A loaded {@code .pte} program and its methods, over ember's module helper.
 *
 * <p>{@link #load} opens and fully verifies the file; each method is loaded on its first {@link
 * #execute} (or by {@link #loadMethod}) and keeps its state (mutable buffers) between runs. Every
 * failure throws {@link ExecutorchRuntimeException} with ember's status code and message. A module
 * may be used from several threads: calls are serialized. Call {@link #destroy} to release the
 * native memory at once; otherwise it is released when the module becomes unreachable.
 */
public class Module {
  // Load modes, accepted for ExecuTorch compatibility. ember's module helper memory-maps the file
  // in every mode (and reads it through its file loader where a build has no mmap); it never locks
  // pages.

  /** Load mode: read the file. */
  public static final int LOAD_MODE_FILE = 0;
  /** Load mode: memory-map the file. */
  public static final int LOAD_MODE_MMAP = 1;
  /** Load mode: memory-map and lock (ember maps without locking). */
  public static final int LOAD_MODE_MMAP_USE_MLOCK = 2;
  /** Load mode: memory-map, lock, ignore locking errors (ember maps without locking). */
  public static final int LOAD_MODE_MMAP_USE_MLOCK_IGNORE_ERRORS = 3;

  private static final Cleaner CLEANER = Cleaner.create();

  /** The native handle, freed exactly once: by destroy() or by the cleaner. */
  private static final class NativeState implements Runnable {
    long handle;

    NativeState(long handle) {
      this.handle = handle;
    }

    @Override
    public synchronized void run() {
      if (handle != 0) {
        nativeDestroy(handle);
        handle = 0;
      }
    }
  }

  private final NativeState state;
  private final Cleaner.Cleanable cleanable;
  private final Map<String, MethodMetadata> metadata = new HashMap<>();

  static {
    NativeLibrary.load();
  }

  private Module(String path, int loadMode, int numThreads) {
    if (path == null) {
      throw new IllegalArgumentException("model path must not be null");
    }
    if (loadMode < LOAD_MODE_FILE || loadMode > LOAD_MODE_MMAP_USE_MLOCK_IGNORE_ERRORS) {
      throw new IllegalArgumentException("unknown load mode " + loadMode);
    }
    if (numThreads < 0) {
      throw new IllegalArgumentException("numThreads must be 0 (one per core) or more");
    }
    state = new NativeState(nativeLoad(path, loadMode, numThreads));
    cleanable = CLEANER.register(this, state);
  }

  /**
   * Loads a program file.
   *
   * @param modelPath the {@code .pte} file
   * @param loadMode one of the {@code LOAD_MODE_*} constants
   * @param numThreads threads the kernels and delegates may use, the caller's included: 0 for one
   *     per CPU core, 1 for the calling thread only
   * @throws ExecutorchRuntimeException when the file cannot be read or is not a valid program
   */
  public static Module load(String modelPath, int loadMode, int numThreads) {
    return new Module(modelPath, loadMode, numThreads);
  }

  /** {@link #load(String, int, int)} with one thread per CPU core. */
  public static Module load(String modelPath, int loadMode) {
    return new Module(modelPath, loadMode, 0);
  }

  /** {@link #load(String, int, int)} with {@link #LOAD_MODE_FILE}, one thread per CPU core. */
  public static Module load(String modelPath) {
    return new Module(modelPath, LOAD_MODE_FILE, 0);
  }

  /** Runs method {@code forward}; see {@link #execute}. */
  public EValue[] forward(EValue... inputs) {
    return execute("forward", inputs);
  }

  /**
   * Runs a method.
   *
   * @param methodName the method, e.g. {@code "forward"}
   * @param inputs one value per input of the method, in order
   * @return the method's outputs; tensors are copies, valid after later runs
   * @throws ExecutorchRuntimeException when the method is missing, fails to load, an input does not
   *     fit (count, type, dtype, shape) or the run fails
   * @throws IllegalStateException after {@link #destroy}
   */
  public synchronized EValue[] execute(String methodName, EValue... inputs) {
    if (methodName == null) {
      throw new IllegalArgumentException("method name must not be null");
    }
    if (inputs == null) {
      inputs = new EValue[0];
    }
    int n = inputs.length;
    int[] tags = new int[n];
    long[] ints = new long[n];
    double[] doubles = new double[n];
    Object[] objects = new Object[n];
    int[] dtypes = new int[n];
    long[][] shapes = new long[n][];
    for (int i = 0; i < n; i++) {
      EValue v = inputs[i];
      if (v == null) {
        throw new IllegalArgumentException("input " + i + " is null (use EValue.optionalNone())");
      }
      tags[i] = v.typeCode;
      switch (v.typeCode) {
        case EValue.TYPE_CODE_TENSOR:
          Tensor t = v.toTensor();
          Buffer b = t.getRawDataBuffer();
          objects[i] = b;
          ints[i] = (long) b.capacity() * bytesPerElement(b);
          dtypes[i] = t.dtype().jniCode;
          shapes[i] = t.shape;
          break;
        case EValue.TYPE_CODE_STRING:
          objects[i] = v.toStr();
          break;
        case EValue.TYPE_CODE_DOUBLE:
          doubles[i] = v.toDouble();
          break;
        case EValue.TYPE_CODE_INT:
          ints[i] = v.toInt();
          break;
        case EValue.TYPE_CODE_BOOL:
          ints[i] = v.toBool() ? 1 : 0;
          break;
        default:
          break;
      }
    }
    try {
      return nativeExecute(handle(), methodName, tags, ints, doubles, objects, dtypes, shapes);
    } finally {
      // The cleaner must not free the handle while native code uses it.
      Reference.reachabilityFence(this);
    }
  }

  /**
   * Loads a method ahead of its first run (it is loaded on first use otherwise).
   *
   * @return 0 on success, else ember's status code (the method is tried again on next use)
   */
  public synchronized int loadMethod(String methodName) {
    if (methodName == null) {
      throw new IllegalArgumentException("method name must not be null");
    }
    try {
      return nativeLoadMethod(handle(), methodName);
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /** The names of the program's methods. */
  public synchronized String[] getMethods() {
    try {
      return nativeMethodNames(handle());
    } finally {
      Reference.reachabilityFence(this);
    }
  }

  /**
   * What the program says about a method (read without loading it).
   *
   * @throws IllegalArgumentException when the program has no such method
   */
  public synchronized MethodMetadata getMethodMetadata(String name) {
    MethodMetadata m = metadata.get(name);
    if (m != null) {
      return m;
    }
    int[] info;
    try {
      info = nativeMethodInfo(handle(), name);
    } catch (ExecutorchRuntimeException e) {
      throw new IllegalArgumentException("method " + name + " does not exist in this module", e);
    } finally {
      Reference.reachabilityFence(this);
    }
    // info: numDelegates, numInputs, numOutputs, input tags..., output tags...
    int nIn = info[1];
    int nOut = info[2];
    int[] in = new int[nIn];
    int[] out = new int[nOut];
    System.arraycopy(info, 3, in, 0, nIn);
    System.arraycopy(info, 3 + nIn, out, 0, nOut);
    String[] backends;
    try {
      backends = nativeMethodBackends(handle(), name);
    } finally {
      Reference.reachabilityFence(this);
    }
    m = new MethodMetadata(name, in, out, info[0], backends);
    metadata.put(name, m);
    return m;
  }

  /**
   * Releases the program, its methods and the file now. Later calls throw {@link
   * IllegalStateException}; calling destroy again does nothing.
   */
  public synchronized void destroy() {
    cleanable.clean();
  }

  private static int bytesPerElement(Buffer b) {
    if (b instanceof java.nio.ByteBuffer) {
      return 1;
    } else if (b instanceof java.nio.ShortBuffer || b instanceof java.nio.CharBuffer) {
      return 2;
    } else if (b instanceof java.nio.IntBuffer || b instanceof java.nio.FloatBuffer) {
      return 4;
    }
    return 8;
  }

  private long handle() {
    synchronized (state) {
      if (state.handle == 0) {
        throw new IllegalStateException("the module was destroyed");
      }
      return state.handle;
    }
  }

  private static native long nativeLoad(String path, int loadMode, int numThreads);

  private static native void nativeDestroy(long handle);

  private static native String[] nativeMethodNames(long handle);

  private static native int[] nativeMethodInfo(long handle, String name);

  private static native String[] nativeMethodBackends(long handle, String name);

  private static native int nativeLoadMethod(long handle, String name);

  private static native EValue[] nativeExecute(
      long handle,
      String method,
      int[] tags,
      long[] ints,
      double[] doubles,
      Object[] objects,
      int[] dtypes,
      long[][] shapes);
}
