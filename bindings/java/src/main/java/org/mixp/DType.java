package org.mixp;

/**
 * Element types (values fixed by the C ABI). F8E4M3 and F8E5M2 are 8-bit float storage types:
 * casts, copies, views and scaled products take them, other ops refuse them.
 */
public enum DType {
  F32(0), F16(1), BF16(2), F64(3), I32(4), I64(5), U8(6), BOOL(7), F8E4M3(8), F8E5M2(9);

  final int code;

  DType(int code) {
    this.code = code;
  }

  static DType of(int code) {
    for (DType d : values()) {
      if (d.code == code) {
        return d;
      }
    }
    throw new InternalException("mixp: unknown dtype code " + code);
  }

  /** @return the element size in bytes */
  public int size() {
    return (int) org.mixp.raw.mixp.mixp_dtype_size(code);
  }
}
