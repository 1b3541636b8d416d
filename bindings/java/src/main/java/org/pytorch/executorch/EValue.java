package org.pytorch.executorch;

/**
 * A method's input or output value: None, a tensor, a string, a double, an int (Java {@code long})
 * or a bool. Make one with {@code EValue.from(...)} and read it with the {@code toX()} method of its
 * type; the others throw {@link IllegalStateException}. A string must be read with {@link
 * #toStr()}, not {@link #toString()}.
 */
public class EValue {
  // The tag codes of ExecuTorch's runtime (and of MethodMetadata's tags).
  static final int TYPE_CODE_NONE = 0;
  static final int TYPE_CODE_TENSOR = 1;
  static final int TYPE_CODE_STRING = 2;
  static final int TYPE_CODE_DOUBLE = 3;
  static final int TYPE_CODE_INT = 4;
  static final int TYPE_CODE_BOOL = 5;

  private static final String[] TYPE_NAMES = {"None", "Tensor", "String", "Double", "Int", "Bool"};

  final int typeCode;
  private final Object data;

  private EValue(int typeCode, Object data) {
    this.typeCode = typeCode;
    this.data = data;
  }

  /** An empty optional (None). */
  public static EValue optionalNone() {
    return new EValue(TYPE_CODE_NONE, null);
  }

  /** A tensor value. */
  public static EValue from(Tensor tensor) {
    if (tensor == null) {
      throw new IllegalArgumentException("tensor must not be null");
    }
    return new EValue(TYPE_CODE_TENSOR, tensor);
  }

  /** A bool value. */
  public static EValue from(boolean value) {
    return new EValue(TYPE_CODE_BOOL, value);
  }

  /** An int value (64-bit). */
  public static EValue from(long value) {
    return new EValue(TYPE_CODE_INT, value);
  }

  /** A double value. */
  public static EValue from(double value) {
    return new EValue(TYPE_CODE_DOUBLE, value);
  }

  /** A string value. */
  public static EValue from(String value) {
    if (value == null) {
      throw new IllegalArgumentException("string must not be null");
    }
    return new EValue(TYPE_CODE_STRING, value);
  }

  public boolean isNone() {
    return typeCode == TYPE_CODE_NONE;
  }

  public boolean isTensor() {
    return typeCode == TYPE_CODE_TENSOR;
  }

  public boolean isString() {
    return typeCode == TYPE_CODE_STRING;
  }

  public boolean isDouble() {
    return typeCode == TYPE_CODE_DOUBLE;
  }

  public boolean isInt() {
    return typeCode == TYPE_CODE_INT;
  }

  public boolean isBool() {
    return typeCode == TYPE_CODE_BOOL;
  }

  public Tensor toTensor() {
    expect(TYPE_CODE_TENSOR);
    return (Tensor) data;
  }

  public String toStr() {
    expect(TYPE_CODE_STRING);
    return (String) data;
  }

  public double toDouble() {
    expect(TYPE_CODE_DOUBLE);
    return (Double) data;
  }

  public long toInt() {
    expect(TYPE_CODE_INT);
    return (Long) data;
  }

  public boolean toBool() {
    expect(TYPE_CODE_BOOL);
    return (Boolean) data;
  }

  @Override
  public String toString() {
    return "EValue(" + typeName(typeCode) + (isNone() ? "" : ": " + data) + ")";
  }

  static String typeName(int code) {
    return code >= 0 && code < TYPE_NAMES.length ? TYPE_NAMES[code] : "Unknown";
  }

  private void expect(int code) {
    if (typeCode != code) {
      throw new IllegalStateException(
          "expected an EValue of type " + typeName(code) + ", not " + typeName(typeCode));
    }
  }
}
