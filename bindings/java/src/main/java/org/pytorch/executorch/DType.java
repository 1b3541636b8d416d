package org.pytorch.executorch;

/**
 * Element types of a {@link Tensor}. The codes are the {@code .pte} format's ScalarType numbers,
 * the same in ember and in ExecuTorch.
 */
public enum DType {
  /** unsigned 8-bit integer (ScalarType Byte) */
  UINT8(0, 1),
  /** signed 8-bit integer (Char) */
  INT8(1, 1),
  /** signed 16-bit integer (Short) */
  INT16(2, 2),
  /** signed 32-bit integer (Int) */
  INT32(3, 4),
  /** signed 64-bit integer (Long) */
  INT64(4, 8),
  /** IEEE half precision (Half) */
  HALF(5, 2),
  /** IEEE single precision (Float) */
  FLOAT(6, 4),
  /** IEEE double precision (Double) */
  DOUBLE(7, 8),
  /** one byte per element, 0 or 1 (Bool) */
  BOOL(11, 1),
  /** quantized signed 8-bit (QInt8) */
  QINT8(12, 1),
  /** quantized unsigned 8-bit (QUInt8) */
  QUINT8(13, 1),
  /** quantized signed 32-bit (QInt32) */
  QINT32(14, 4),
  /** bfloat16 (BFloat16) */
  BFLOAT16(15, 2),
  /** 16 raw bits (Bits16) */
  BITS16(22, 2),
  /** unsigned 16-bit integer (UInt16) */
  UINT16(27, 2),
  /** unsigned 32-bit integer (UInt32) */
  UINT32(28, 4),
  /** unsigned 64-bit integer (UInt64) */
  UINT64(29, 8);

  /** The ScalarType code, as the native library and the file format use it. */
  final int jniCode;

  /** Bytes per element. */
  final int elementSize;

  DType(int jniCode, int elementSize) {
    this.jniCode = jniCode;
    this.elementSize = elementSize;
  }

  /**
   * The type with the given ScalarType code.
   *
   * @throws IllegalArgumentException for a code this binding does not know
   */
  public static DType fromJniCode(int jniCode) {
    for (DType t : values()) {
      if (t.jniCode == jniCode) {
        return t;
      }
    }
    throw new IllegalArgumentException("no DType has code " + jniCode);
  }
}
