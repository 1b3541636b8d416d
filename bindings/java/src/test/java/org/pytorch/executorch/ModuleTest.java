package org.pytorch.executorch;

import static org.junit.Assert.assertArrayEquals;
import static org.junit.Assert.assertEquals;
import static org.junit.Assert.assertFalse;
import static org.junit.Assert.assertTrue;
import static org.junit.Assert.fail;

import java.io.IOException;
import java.nio.FloatBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Arrays;
import java.util.HashSet;
import java.util.List;
import org.junit.Rule;
import org.junit.Test;
import org.junit.rules.TemporaryFolder;

/**
 * Module, Tensor and EValue against programs exported by ember (expected outputs from PyTorch
 * eager, written by tests/make_test_data.py) and the committed fixtures; bad files and bad inputs;
 * native memory given back.
 *
 * <p>System properties: {@code ember.test.data} (make_test_data.py's output directory), {@code
 * ember.fixtures} (tests/fixtures).
 */
public class ModuleTest {
  @Rule public TemporaryFolder tmp = new TemporaryFolder();

  static final Path DATA = Paths.get(System.getProperty("ember.test.data", "build/java-test"));
  static final Path FIXTURES = Paths.get(System.getProperty("ember.fixtures", "tests/fixtures"));

  static String mixed() {
    return DATA.resolve("mixed.pte").toString();
  }

  static EValue[] mixedInputs() throws IOException {
    return new EValue[] {
      EValue.from(Npy.read(DATA.resolve("mixed/in0.npy")).toTensor()),
      EValue.from(Npy.read(DATA.resolve("mixed/in1.npy")).toTensor())
    };
  }

  /** float32: |got - want| <= atol + rtol * |want|, as the C fixture test checks. */
  static void assertClose(String what, float[] want, float[] got, double atol) {
    assertEquals(what + ": element count", want.length, got.length);
    for (int i = 0; i < want.length; i++) {
      double err = Math.abs((double) got[i] - want[i]);
      if (!(err <= atol + 1e-5 * Math.abs(want[i])) && got[i] != want[i]) {
        fail(what + ": element " + i + " is " + got[i] + ", expected " + want[i]);
      }
    }
  }

  static void assertMatches(String what, Npy want, Tensor got, double atol) {
    assertArrayEquals(what + ": shape", want.shape, got.shape());
    switch (want.descr) {
      case "<f4":
        assertEquals(what + ": dtype", DType.FLOAT, got.dtype());
        assertClose(what, want.floats(), got.getDataAsFloatArray(), atol);
        break;
      case "<i8":
        assertEquals(what + ": dtype", DType.INT64, got.dtype());
        assertArrayEquals(what, want.longs(), got.getDataAsLongArray());
        break;
      case "<i4":
        assertEquals(what + ": dtype", DType.INT32, got.dtype());
        assertArrayEquals(what, want.ints(), got.getDataAsIntArray());
        break;
      default:
        fail(what + ": no comparison for dtype " + want.descr);
    }
  }

  static ExecutorchRuntimeException expectRuntimeError(Runnable r) {
    try {
      r.run();
    } catch (ExecutorchRuntimeException e) {
      return e;
    }
    fail("expected an ExecutorchRuntimeException");
    return null;
  }

  // ------------------------------------------------------------ correctness

  @Test
  public void forwardMatchesEager() throws IOException {
    Module m = Module.load(mixed());
    try {
      EValue[] out = m.forward(mixedInputs());
      assertEquals(3, out.length);
      for (int i = 0; i < 3; i++) {
        assertTrue(out[i].isTensor());
        assertMatches("output " + i, Npy.read(DATA.resolve("mixed/out" + i + ".npy")),
            out[i].toTensor(), 1e-6);
      }
      // Outputs are copies: a second run leaves the first run's tensors alone.
      float[] first = out[0].toTensor().getDataAsFloatArray();
      EValue[] in = mixedInputs();
      float[] x = in[0].toTensor().getDataAsFloatArray();
      Arrays.fill(x, -1.0f);
      m.forward(EValue.from(Tensor.fromBlob(x, new long[] {2, 8})), in[1]);
      assertArrayEquals(first, out[0].toTensor().getDataAsFloatArray(), 0.0f);
    } finally {
      m.destroy();
    }
  }

  @Test
  public void directBufferInputIsReadInPlace() throws IOException {
    Module m = Module.load(mixed(), Module.LOAD_MODE_MMAP, 1);
    try {
      Npy x = Npy.read(DATA.resolve("mixed/in0.npy"));
      FloatBuffer buf = Tensor.allocateFloatBuffer(16);
      Tensor t = Tensor.fromBlob(buf, new long[] {2, 8});
      EValue ids = mixedInputs()[1];
      m.forward(EValue.from(t), ids); // zeros
      buf.put(x.floats()); // the same tensor, new contents
      EValue[] out = m.forward(EValue.from(t), ids);
      assertMatches("output 0", Npy.read(DATA.resolve("mixed/out0.npy")), out[0].toTensor(), 1e-6);
    } finally {
      m.destroy();
    }
  }

  /** Every fixture case the module helper can run (no data file, no test-only backend). */
  @Test
  public void fixturesMatchTheirExpectedOutputs() throws IOException {
    List<String> lines = Files.readAllLines(FIXTURES.resolve("manifest.txt"));
    int cases = 0;
    Module m = null;
    String method = null;
    double atol = 1e-6;
    String name = null;
    int run = 0;
    for (String line : lines) {
      String[] tok = line.trim().split("\\s+");
      if (tok[0].equals("case")) {
        name = tok[1];
        method = tok[3];
        atol = 1e-6;
        run = 0;
        boolean skip = false;
        for (int k = 4; k < tok.length; k++) {
          if (tok[k].startsWith("data=") || tok[k].equals("backend=EmberTestBackend")) {
            skip = true;
          } else if (tok[k].startsWith("atol=")) {
            atol = Double.parseDouble(tok[k].substring(5));
          }
        }
        m = skip ? null : Module.load(FIXTURES.resolve(tok[2]).toString());
      } else if (tok[0].equals("run") && m != null) {
        int sep = Arrays.asList(tok).indexOf("--");
        EValue[] in = new EValue[sep - 1];
        for (int k = 1; k < sep; k++) {
          in[k - 1] = EValue.from(Npy.read(FIXTURES.resolve(tok[k])).toTensor());
        }
        EValue[] out = m.execute(method, in);
        assertEquals(name + ": outputs", tok.length - sep - 1, out.length);
        for (int k = sep + 1; k < tok.length; k++) {
          assertMatches(name + " run " + run + " output " + (k - sep - 1),
              Npy.read(FIXTURES.resolve(tok[k])), out[k - sep - 1].toTensor(), atol);
        }
        run++;
      } else if (tok[0].equals("end") && m != null) {
        m.destroy();
        m = null;
        cases++;
      }
    }
    assertTrue("ran " + cases + " fixture cases", cases >= 10);
  }

  @Test
  public void methodsAndMetadata() {
    Module m = Module.load(FIXTURES.resolve("two_methods.pte").toString());
    try {
      assertEquals(
          new HashSet<>(Arrays.asList("forward", "decode")),
          new HashSet<>(Arrays.asList(m.getMethods())));
      MethodMetadata md = m.getMethodMetadata("decode");
      assertEquals("decode", md.getName());
      assertArrayEquals(new int[] {1}, md.getInputTags());
      assertArrayEquals(new int[] {1}, md.getOutputTags());
      assertEquals(0, m.loadMethod("decode"));
      assertEquals(ExecutorchRuntimeException.NOT_FOUND, m.loadMethod("nope"));
      try {
        m.getMethodMetadata("nope");
        fail("metadata of a missing method");
      } catch (IllegalArgumentException e) {
        assertTrue(e.getMessage(), e.getMessage().contains("nope"));
      }
    } finally {
      m.destroy();
    }
    Module x = Module.load(FIXTURES.resolve("xnnpack_cnn.pte").toString());
    try {
      assertTrue(x.getMethodMetadata("forward").getNumDelegates() > 0);
      assertArrayEquals(
          new String[] {"XnnpackBackend"}, x.getMethodMetadata("forward").getBackends());
    } finally {
      x.destroy();
    }
  }

  @Test
  public void evalueAndTensorBasics() {
    assertEquals(42L, EValue.from(42L).toInt());
    assertEquals(2.5, EValue.from(2.5).toDouble(), 0.0);
    assertTrue(EValue.from(true).toBool());
    assertEquals("hi", EValue.from("hi").toStr());
    assertTrue(EValue.optionalNone().isNone());
    Tensor t = Tensor.fromBlob(new int[] {1, 2, 3, 4, 5, 6}, new long[] {2, 3});
    assertEquals(DType.INT32, t.dtype());
    assertEquals(6, t.numel());
    assertArrayEquals(new long[] {2, 3}, t.shape());
    assertArrayEquals(new int[] {1, 2, 3, 4, 5, 6}, t.getDataAsIntArray());
    assertArrayEquals(new byte[] {-1, 7}, Tensor.fromBlob(new byte[] {-1, 7}, new long[] {2})
        .getDataAsByteArray());
    assertArrayEquals(new double[] {0.5}, Tensor.fromBlob(new double[] {0.5}, new long[] {1})
        .getDataAsDoubleArray(), 0.0);
    try {
      EValue.from(1L).toTensor();
      fail("toTensor of an int");
    } catch (IllegalStateException e) {
      assertTrue(e.getMessage().contains("Tensor"));
    }
    try {
      t.getDataAsFloatArray();
      fail("floats of an int tensor");
    } catch (IllegalStateException expected) {
      // the message names the dtype
    }
    try {
      Tensor.fromBlob(new float[5], new long[] {2, 3});
      fail("5 elements for shape [2, 3]");
    } catch (IllegalArgumentException expected) {
      // checked in Java, before any native call
    }
    try {
      Tensor.fromBlob(FloatBuffer.allocate(6), new long[] {2, 3});
      fail("a heap buffer");
    } catch (IllegalArgumentException e) {
      assertTrue(e.getMessage().contains("direct"));
    }
  }

  // ----------------------------------------------------------------- errors

  @Test
  public void missingFileThrowsWithEmbersMessage() {
    String path = tmp.getRoot().toPath().resolve("no_such_model.pte").toString();
    ExecutorchRuntimeException e = expectRuntimeError(() -> Module.load(path));
    assertEquals(ExecutorchRuntimeException.IO, e.getErrorCode());
    assertTrue(e.getMessage(), e.getMessage().contains("no_such_model.pte"));
  }

  @Test
  public void badFilesThrow() throws IOException {
    byte[] good = Files.readAllBytes(Paths.get(mixed()));
    Path garbage = tmp.newFile("garbage.pte").toPath();
    byte[] junk = new byte[4096];
    new java.util.Random(1).nextBytes(junk);
    Files.write(garbage, junk);
    ExecutorchRuntimeException e = expectRuntimeError(() -> Module.load(garbage.toString()));
    assertTrue(e.getMessage(), (e.getErrorCode() & 0xff00) == 0x0200);

    Path empty = tmp.newFile("empty.pte").toPath();
    e = expectRuntimeError(() -> Module.load(empty.toString()));
    assertTrue(e.getMessage(), e.getErrorCode() != 0);

    // Truncated at several points, and with bytes flipped: an exception or a
    // clean run, never a crash.
    for (int cut : new int[] {8, 64, good.length / 3, good.length / 2, good.length - 16}) {
      Path p = tmp.newFile("cut" + cut + ".pte").toPath();
      Files.write(p, Arrays.copyOf(good, cut));
      e = expectRuntimeError(() -> Module.load(p.toString()));
      assertTrue(e.getMessage(), e.getMessage().startsWith("loading "));
    }
    java.util.Random rnd = new java.util.Random(2);
    for (int k = 0; k < 20; k++) {
      byte[] bad = good.clone();
      for (int j = 0; j < 4; j++) {
        bad[rnd.nextInt(bad.length)] ^= (byte) (1 + rnd.nextInt(255));
      }
      Path p = tmp.newFile("flip" + k + ".pte").toPath();
      Files.write(p, bad);
      try {
        Module m = Module.load(p.toString());
        try {
          m.forward(mixedInputs());
        } catch (ExecutorchRuntimeException expected) {
          // a clean failure at method load or run
        } finally {
          m.destroy();
        }
      } catch (ExecutorchRuntimeException expected) {
        // a clean failure at load
      }
    }
  }

  @Test
  public void wrongInputsThrowWithEmbersMessage() throws IOException {
    Module m = Module.load(mixed());
    try {
      EValue[] in = mixedInputs();
      ExecutorchRuntimeException e = expectRuntimeError(() -> m.forward(in[0]));
      assertEquals(ExecutorchRuntimeException.INVALID_ARGUMENT, e.getErrorCode());
      assertTrue(e.getMessage(), e.getMessage().contains("takes 2 inputs, got 1"));

      // int32 where float32 is wanted
      EValue ints = EValue.from(Tensor.fromBlob(new int[16], new long[] {2, 8}));
      e = expectRuntimeError(() -> m.forward(ints, in[1]));
      assertEquals(ExecutorchRuntimeException.TYPE_MISMATCH, e.getErrorCode());
      assertTrue(e.getMessage(), e.getMessage().contains("input 0"));

      // [4, 4] where [2, 8] is wanted
      EValue square = EValue.from(Tensor.fromBlob(new float[16], new long[] {4, 4}));
      e = expectRuntimeError(() -> m.forward(square, in[1]));
      assertEquals(ExecutorchRuntimeException.SHAPE_MISMATCH, e.getErrorCode());

      // a scalar where a tensor is wanted
      e = expectRuntimeError(() -> m.forward(EValue.from(3L), in[1]));
      assertEquals(ExecutorchRuntimeException.TYPE_MISMATCH, e.getErrorCode());
      e = expectRuntimeError(() -> m.forward(EValue.from("text"), in[1]));
      assertEquals(ExecutorchRuntimeException.NOT_SUPPORTED, e.getErrorCode());

      // an id outside the embedding: a bounds check at run time
      EValue badIds = EValue.from(Tensor.fromBlob(new long[] {1, 99, 2}, new long[] {3}));
      e = expectRuntimeError(() -> m.forward(in[0], badIds));
      assertTrue(e.getMessage(), e.getMessage().startsWith("running method 'forward'"));

      e = expectRuntimeError(() -> m.execute("nope", in));
      assertEquals(ExecutorchRuntimeException.NOT_FOUND, e.getErrorCode());

      // and the module still works
      EValue[] out = m.forward(in);
      assertMatches("output 2", Npy.read(DATA.resolve("mixed/out2.npy")), out[2].toTensor(), 0);
    } finally {
      m.destroy();
    }
    m.destroy(); // twice: nothing happens
    try {
      m.forward(mixedInputs());
      fail("forward after destroy");
    } catch (IllegalStateException expected) {
      // the handle is gone
    }
  }

  // ----------------------------------------------------------------- memory

  /**
   * Loads, runs and destroys modules (and fails to load bad ones) many times: every block of
   * native memory the runtime took from its heap is given back.
   */
  @Test
  public void repeatedLoadDestroyGivesBackAllNativeMemory() throws IOException {
    EValue[] in = mixedInputs();
    Path garbage = tmp.newFile("junk.pte").toPath();
    Files.write(garbage, new byte[100]);
    for (int warm = 0; warm < 2; warm++) {
      Module.load(mixed()).destroy(); // the first load registers the kernels
    }
    long before = NativeLibrary.liveNativeBlocks();
    Module held = Module.load(mixed());
    held.forward(in);
    // The count sees the runtime's memory: a loaded method holds blocks.
    assertTrue(NativeLibrary.liveNativeBlocks() > before);
    held.destroy();
    assertEquals(before, NativeLibrary.liveNativeBlocks());
    for (int i = 0; i < 100; i++) {
      Module m = Module.load(mixed(), Module.LOAD_MODE_FILE, 1);
      m.forward(in);
      try {
        m.forward(in[0]);
      } catch (ExecutorchRuntimeException expected) {
        // wrong input count
      }
      m.getMethodMetadata("forward");
      m.destroy();
      try {
        Module.load(garbage.toString());
        fail("loaded junk");
      } catch (ExecutorchRuntimeException expected) {
        // bad file
      }
      Module f = Module.load(FIXTURES.resolve("xnnpack_cnn.pte").toString());
      f.forward(EValue.from(Tensor.fromBlob(new float[3 * 8 * 8], new long[] {1, 3, 8, 8})));
      f.destroy();
    }
    assertEquals("native blocks still held", before, NativeLibrary.liveNativeBlocks());
    assertFalse(before < 0);
  }

}
