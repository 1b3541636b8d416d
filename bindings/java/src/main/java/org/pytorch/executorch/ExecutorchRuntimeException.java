package org.pytorch.executorch;

/**
 * A failure reported by the native runtime: loading a program, loading or running a method,
 * generating text. {@link #getErrorCode()} is ember's status code ({@code ember_status}, e.g.
 * {@code 0x0200} for an invalid program) and the message carries ember's own explanation, which
 * names the offending file, field, input or operator.
 */
public class ExecutorchRuntimeException extends RuntimeException {
  private static final long serialVersionUID = 1L;

  /** The caller used the API wrongly (ember's 0x01xx range). */
  public static final int INVALID_ARGUMENT = 0x0100;
  /** Something is not in the state the call needs. */
  public static final int INVALID_STATE = 0x0101;
  /** No such method, key or file. */
  public static final int NOT_FOUND = 0x0102;
  /** An input or output index out of range. */
  public static final int INDEX_OUT_OF_RANGE = 0x0103;
  /** A value of the wrong type or dtype. */
  public static final int TYPE_MISMATCH = 0x0104;
  /** A tensor of the wrong shape. */
  public static final int SHAPE_MISMATCH = 0x0105;
  /** The program file is malformed (ember's 0x02xx range). */
  public static final int INVALID_PROGRAM = 0x0200;
  /** The file is shorter than it says. */
  public static final int TRUNCATED = 0x0201;
  /** The file is not a {@code .pte} program. */
  public static final int BAD_IDENTIFIER = 0x0202;
  /** Valid, but not supported by this build (ember's 0x03xx range). */
  public static final int NOT_SUPPORTED = 0x0300;
  /** An operator without a kernel in this build. */
  public static final int OPERATOR_MISSING = 0x0301;
  /** A delegate whose backend this build lacks. */
  public static final int BACKEND_MISSING = 0x0302;
  /** Out of memory (ember's 0x04xx range). */
  public static final int OUT_OF_MEMORY = 0x0400;
  /** A file could not be opened or read. */
  public static final int IO = 0x0401;

  private final int errorCode;

  /**
   * @param errorCode ember's status code
   * @param message what failed and why
   */
  public ExecutorchRuntimeException(int errorCode, String message) {
    super(message);
    this.errorCode = errorCode;
  }

  /** ember's status code ({@code ember_status}). */
  public int getErrorCode() {
    return errorCode;
  }
}
