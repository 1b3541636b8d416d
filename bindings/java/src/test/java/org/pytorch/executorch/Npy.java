package org.pytorch.executorch;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** A NumPy {@code .npy} file (little-endian, C order): its dtype, shape and bytes. */
final class Npy {
  final String descr; // "<f4", "<i8", ...
  final long[] shape;
  final ByteBuffer data; // little-endian

  private Npy(String descr, long[] shape, ByteBuffer data) {
    this.descr = descr;
    this.shape = shape;
    this.data = data;
  }

  static Npy read(Path path) throws IOException {
    byte[] b = Files.readAllBytes(path);
    if (b.length < 10 || b[0] != (byte) 0x93 || b[1] != 'N' || b[2] != 'U') {
      throw new IOException(path + " is not a .npy file");
    }
    ByteBuffer bb = ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN);
    int major = b[6];
    int headerLen;
    int start;
    if (major == 1) {
      headerLen = bb.getShort(8) & 0xffff;
      start = 10;
    } else {
      headerLen = bb.getInt(8);
      start = 12;
    }
    String header = new String(b, start, headerLen, java.nio.charset.StandardCharsets.US_ASCII);
    Matcher d = Pattern.compile("'descr':\\s*'([^']+)'").matcher(header);
    Matcher s = Pattern.compile("'shape':\\s*\\(([^)]*)\\)").matcher(header);
    if (!d.find() || !s.find() || header.contains("'fortran_order': True")) {
      throw new IOException(path + ": unsupported header " + header);
    }
    List<Long> dims = new ArrayList<>();
    for (String part : s.group(1).split(",")) {
      if (!part.trim().isEmpty()) {
        dims.add(Long.parseLong(part.trim()));
      }
    }
    long[] shape = new long[dims.size()];
    for (int i = 0; i < shape.length; i++) {
      shape[i] = dims.get(i);
    }
    int off = start + headerLen;
    ByteBuffer data =
        ByteBuffer.wrap(b, off, b.length - off).slice().order(ByteOrder.LITTLE_ENDIAN);
    return new Npy(d.group(1), shape, data);
  }

  int count() {
    return (int) Tensor.numel(shape);
  }

  float[] floats() {
    float[] a = new float[count()];
    data.duplicate().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(a);
    return a;
  }

  long[] longs() {
    long[] a = new long[count()];
    data.duplicate().order(ByteOrder.LITTLE_ENDIAN).asLongBuffer().get(a);
    return a;
  }

  int[] ints() {
    int[] a = new int[count()];
    data.duplicate().order(ByteOrder.LITTLE_ENDIAN).asIntBuffer().get(a);
    return a;
  }

  byte[] bytes() {
    byte[] a = new byte[count()];
    data.duplicate().get(a);
    return a;
  }

  /** The array as a Tensor of the matching dtype. */
  Tensor toTensor() {
    switch (descr) {
      case "<f4":
        return Tensor.fromBlob(floats(), shape);
      case "<i8":
        return Tensor.fromBlob(longs(), shape);
      case "<i4":
        return Tensor.fromBlob(ints(), shape);
      case "|i1":
        return Tensor.fromBlob(bytes(), shape);
      case "|u1":
        return Tensor.fromBlobUnsigned(bytes(), shape);
      default:
        throw new IllegalArgumentException("no Tensor for .npy dtype " + descr);
    }
  }
}
