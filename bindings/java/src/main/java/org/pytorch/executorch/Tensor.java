package org.pytorch.executorch;

import java.nio.Buffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.Arrays;

/**
 * A tensor: a shape, an element type and the elements, row-major, in a direct buffer of native byte
 * order.
 *
 * <p>Make one with {@code Tensor.fromBlob(data, shape)}: from an array the elements are copied into
 * a new direct buffer; from a direct buffer they are used in place (changes to the buffer change the
 * tensor, and the next {@link Module#forward} reads them). Read the elements with the {@code
 * getDataAs*Array()} method of the tensor's type; the others throw {@link IllegalStateException}.
 * Tensors that {@link Module} returns own a copy of the output, so they stay valid after the next
 * run.
 */
public abstract class Tensor {
  final long[] shape;

  private Tensor(long[] shape) {
    checkShape(shape);
    this.shape = Arrays.copyOf(shape, shape.length);
  }

  // ---------------------------------------------------------------- buffers

  /** A new direct {@link ByteBuffer} of native byte order for {@code numElements} bytes. */
  public static ByteBuffer allocateByteBuffer(int numElements) {
    return ByteBuffer.allocateDirect(numElements).order(ByteOrder.nativeOrder());
  }

  /** A new direct {@link IntBuffer} of native byte order for {@code numElements} ints. */
  public static IntBuffer allocateIntBuffer(int numElements) {
    return allocateByteBuffer(Math.multiplyExact(numElements, 4)).asIntBuffer();
  }

  /** A new direct {@link FloatBuffer} of native byte order for {@code numElements} floats. */
  public static FloatBuffer allocateFloatBuffer(int numElements) {
    return allocateByteBuffer(Math.multiplyExact(numElements, 4)).asFloatBuffer();
  }

  /** A new direct {@link LongBuffer} of native byte order for {@code numElements} longs. */
  public static LongBuffer allocateLongBuffer(int numElements) {
    return allocateByteBuffer(Math.multiplyExact(numElements, 8)).asLongBuffer();
  }

  /** A new direct {@link DoubleBuffer} of native byte order for {@code numElements} doubles. */
  public static DoubleBuffer allocateDoubleBuffer(int numElements) {
    return allocateByteBuffer(Math.multiplyExact(numElements, 8)).asDoubleBuffer();
  }

  // ------------------------------------------------------------ from arrays

  /** A uint8 tensor holding a copy of {@code data} (read as unsigned bytes). */
  public static Tensor fromBlobUnsigned(byte[] data, long[] shape) {
    checkArray(data != null, shape, data == null ? 0 : data.length);
    ByteBuffer b = allocateByteBuffer(data.length);
    b.put(data).rewind();
    return new Tensor_uint8(b, shape);
  }

  /** An int8 tensor holding a copy of {@code data}. */
  public static Tensor fromBlob(byte[] data, long[] shape) {
    checkArray(data != null, shape, data == null ? 0 : data.length);
    ByteBuffer b = allocateByteBuffer(data.length);
    b.put(data).rewind();
    return new Tensor_int8(b, shape);
  }

  /** An int32 tensor holding a copy of {@code data}. */
  public static Tensor fromBlob(int[] data, long[] shape) {
    checkArray(data != null, shape, data == null ? 0 : data.length);
    IntBuffer b = allocateIntBuffer(data.length);
    b.put(data).rewind();
    return new Tensor_int32(b, shape);
  }

  /** A float32 tensor holding a copy of {@code data}. */
  public static Tensor fromBlob(float[] data, long[] shape) {
    checkArray(data != null, shape, data == null ? 0 : data.length);
    FloatBuffer b = allocateFloatBuffer(data.length);
    b.put(data).rewind();
    return new Tensor_float32(b, shape);
  }

  /** An int64 tensor holding a copy of {@code data}. */
  public static Tensor fromBlob(long[] data, long[] shape) {
    checkArray(data != null, shape, data == null ? 0 : data.length);
    LongBuffer b = allocateLongBuffer(data.length);
    b.put(data).rewind();
    return new Tensor_int64(b, shape);
  }

  /** A float64 tensor holding a copy of {@code data}. */
  public static Tensor fromBlob(double[] data, long[] shape) {
    checkArray(data != null, shape, data == null ? 0 : data.length);
    DoubleBuffer b = allocateDoubleBuffer(data.length);
    b.put(data).rewind();
    return new Tensor_float64(b, shape);
  }

  // ----------------------------------------------------------- from buffers

  /** A uint8 tensor over {@code data} (direct, native order), used in place. */
  public static Tensor fromBlobUnsigned(ByteBuffer data, long[] shape) {
    checkBuffer(data, shape);
    return new Tensor_uint8(data, shape);
  }

  /** An int8 tensor over {@code data} (direct, native order), used in place. */
  public static Tensor fromBlob(ByteBuffer data, long[] shape) {
    checkBuffer(data, shape);
    return new Tensor_int8(data, shape);
  }

  /** An int32 tensor over {@code data} (direct, native order), used in place. */
  public static Tensor fromBlob(IntBuffer data, long[] shape) {
    checkBuffer(data, shape);
    return new Tensor_int32(data, shape);
  }

  /** A float32 tensor over {@code data} (direct, native order), used in place. */
  public static Tensor fromBlob(FloatBuffer data, long[] shape) {
    checkBuffer(data, shape);
    return new Tensor_float32(data, shape);
  }

  /** An int64 tensor over {@code data} (direct, native order), used in place. */
  public static Tensor fromBlob(LongBuffer data, long[] shape) {
    checkBuffer(data, shape);
    return new Tensor_int64(data, shape);
  }

  /** A float64 tensor over {@code data} (direct, native order), used in place. */
  public static Tensor fromBlob(DoubleBuffer data, long[] shape) {
    checkBuffer(data, shape);
    return new Tensor_float64(data, shape);
  }

  // ------------------------------------------------------------- accessors

  /** The number of elements of {@code shape} (the product of its sizes; 1 for a scalar). */
  public static long numel(long[] shape) {
    checkShape(shape);
    long n = 1;
    for (long s : shape) {
      n = Math.multiplyExact(n, s);
    }
    return n;
  }

  /** The number of elements. */
  public long numel() {
    return numel(shape);
  }

  /** A copy of the shape. */
  public long[] shape() {
    return Arrays.copyOf(shape, shape.length);
  }

  /** The element type. */
  public abstract DType dtype();

  /** The elements of an int8 tensor. */
  public byte[] getDataAsByteArray() {
    throw wrongType("byte");
  }

  /** The elements of a uint8 tensor (as Java's signed bytes: mask with 0xff). */
  public byte[] getDataAsUnsignedByteArray() {
    throw wrongType("unsigned byte");
  }

  /** The elements of an int32 tensor. */
  public int[] getDataAsIntArray() {
    throw wrongType("int");
  }

  /** The elements of a float32 tensor. */
  public float[] getDataAsFloatArray() {
    throw wrongType("float");
  }

  /** The elements of an int64 tensor. */
  public long[] getDataAsLongArray() {
    throw wrongType("long");
  }

  /** The elements of a float64 tensor. */
  public double[] getDataAsDoubleArray() {
    throw wrongType("double");
  }

  /** The buffer holding the elements (the tensor's own, not a copy). */
  public abstract Buffer getRawDataBuffer();

  @Override
  public String toString() {
    return "Tensor(" + Arrays.toString(shape) + ", dtype=" + dtype() + ")";
  }

  private IllegalStateException wrongType(String what) {
    return new IllegalStateException(
        "a tensor of dtype " + dtype() + " cannot return its data as a " + what + " array");
  }

  // ----------------------------------------------------------------- checks

  private static void checkShape(long[] shape) {
    if (shape == null) {
      throw new IllegalArgumentException("shape must not be null");
    }
    for (long s : shape) {
      if (s < 0) {
        throw new IllegalArgumentException(
            "shape " + Arrays.toString(shape) + " has a negative size");
      }
    }
  }

  private static void checkArray(boolean present, long[] shape, int length) {
    if (!present) {
      throw new IllegalArgumentException("data must not be null");
    }
    checkShape(shape);
    if (numel(shape) != length) {
      throw new IllegalArgumentException(
          "data has "
              + length
              + " elements but shape "
              + Arrays.toString(shape)
              + " has "
              + numel(shape));
    }
  }

  private static void checkBuffer(Buffer data, long[] shape) {
    if (data == null) {
      throw new IllegalArgumentException("data must not be null");
    }
    checkArray(true, shape, data.capacity());
    if (!data.isDirect()) {
      throw new IllegalArgumentException(
          "data must be a direct buffer (Tensor.allocate*Buffer or ByteBuffer.allocateDirect)");
    }
    ByteOrder order;
    if (data instanceof ByteBuffer) {
      order = ((ByteBuffer) data).order();
    } else if (data instanceof IntBuffer) {
      order = ((IntBuffer) data).order();
    } else if (data instanceof FloatBuffer) {
      order = ((FloatBuffer) data).order();
    } else if (data instanceof LongBuffer) {
      order = ((LongBuffer) data).order();
    } else {
      order = ((DoubleBuffer) data).order();
    }
    // A byte buffer's order does not matter for one-byte elements.
    if (!(data instanceof ByteBuffer) && order != ByteOrder.nativeOrder()) {
      throw new IllegalArgumentException("data must have the native byte order");
    }
  }

  // ---------------------------------------------------------------- native

  /** Called by the native code: a tensor of any dtype over a copy of an output. */
  static Tensor nativeNewTensor(ByteBuffer data, long[] shape, int dtypeCode) {
    data.order(ByteOrder.nativeOrder());
    DType t = DType.fromJniCode(dtypeCode);
    switch (t) {
      case UINT8:
        return new Tensor_uint8(data, shape);
      case INT8:
        return new Tensor_int8(data, shape);
      case INT32:
        return new Tensor_int32(data.asIntBuffer(), shape);
      case FLOAT:
        return new Tensor_float32(data.asFloatBuffer(), shape);
      case INT64:
        return new Tensor_int64(data.asLongBuffer(), shape);
      case DOUBLE:
        return new Tensor_float64(data.asDoubleBuffer(), shape);
      default:
        return new Tensor_raw(data, shape, t);
    }
  }

  // ------------------------------------------------------------- one per type

  static final class Tensor_uint8 extends Tensor {
    private final ByteBuffer data;

    Tensor_uint8(ByteBuffer data, long[] shape) {
      super(shape);
      this.data = data;
    }

    @Override
    public DType dtype() {
      return DType.UINT8;
    }

    @Override
    public Buffer getRawDataBuffer() {
      return data;
    }

    @Override
    public byte[] getDataAsUnsignedByteArray() {
      byte[] a = new byte[data.capacity()];
      ByteBuffer d = data.duplicate();
      d.rewind();
      d.get(a);
      return a;
    }
  }

  static final class Tensor_int8 extends Tensor {
    private final ByteBuffer data;

    Tensor_int8(ByteBuffer data, long[] shape) {
      super(shape);
      this.data = data;
    }

    @Override
    public DType dtype() {
      return DType.INT8;
    }

    @Override
    public Buffer getRawDataBuffer() {
      return data;
    }

    @Override
    public byte[] getDataAsByteArray() {
      byte[] a = new byte[data.capacity()];
      ByteBuffer d = data.duplicate();
      d.rewind();
      d.get(a);
      return a;
    }
  }

  static final class Tensor_int32 extends Tensor {
    private final IntBuffer data;

    Tensor_int32(IntBuffer data, long[] shape) {
      super(shape);
      this.data = data;
    }

    @Override
    public DType dtype() {
      return DType.INT32;
    }

    @Override
    public Buffer getRawDataBuffer() {
      return data;
    }

    @Override
    public int[] getDataAsIntArray() {
      int[] a = new int[data.capacity()];
      IntBuffer d = data.duplicate();
      d.rewind();
      d.get(a);
      return a;
    }
  }

  static final class Tensor_float32 extends Tensor {
    private final FloatBuffer data;

    Tensor_float32(FloatBuffer data, long[] shape) {
      super(shape);
      this.data = data;
    }

    @Override
    public DType dtype() {
      return DType.FLOAT;
    }

    @Override
    public Buffer getRawDataBuffer() {
      return data;
    }

    @Override
    public float[] getDataAsFloatArray() {
      float[] a = new float[data.capacity()];
      FloatBuffer d = data.duplicate();
      d.rewind();
      d.get(a);
      return a;
    }
  }

  static final class Tensor_int64 extends Tensor {
    private final LongBuffer data;

    Tensor_int64(LongBuffer data, long[] shape) {
      super(shape);
      this.data = data;
    }

    @Override
    public DType dtype() {
      return DType.INT64;
    }

    @Override
    public Buffer getRawDataBuffer() {
      return data;
    }

    @Override
    public long[] getDataAsLongArray() {
      long[] a = new long[data.capacity()];
      LongBuffer d = data.duplicate();
      d.rewind();
      d.get(a);
      return a;
    }
  }

  static final class Tensor_float64 extends Tensor {
    private final DoubleBuffer data;

    Tensor_float64(DoubleBuffer data, long[] shape) {
      super(shape);
      this.data = data;
    }

    @Override
    public DType dtype() {
      return DType.DOUBLE;
    }

    @Override
    public Buffer getRawDataBuffer() {
      return data;
    }

    @Override
    public double[] getDataAsDoubleArray() {
      double[] a = new double[data.capacity()];
      DoubleBuffer d = data.duplicate();
      d.rewind();
      d.get(a);
      return a;
    }
  }

  /** An output of a type without a Java array of its own (bool, half, ...): raw bytes. */
  static final class Tensor_raw extends Tensor {
    private final ByteBuffer data;
    private final DType dtype;

    Tensor_raw(ByteBuffer data, long[] shape, DType dtype) {
      super(shape);
      this.data = data;
      this.dtype = dtype;
    }

    @Override
    public DType dtype() {
      return dtype;
    }

    @Override
    public Buffer getRawDataBuffer() {
      return data;
    }
  }
}
