/*
 * Element sizes and names of the file format's scalar types.
 */
#include "core/internal.h"

size_t ember_dtype_size(int dtype) {
    switch (dtype) {
    case EMBER_UINT8: case EMBER_INT8: case EMBER_BOOL: case EMBER_QINT8: case EMBER_QUINT8:
    case EMBER_QUINT4X2: case EMBER_QUINT2X4: case EMBER_FLOAT8_E5M2: case EMBER_FLOAT8_E4M3FN:
    case EMBER_FLOAT8_E5M2FNUZ: case EMBER_FLOAT8_E4M3FNUZ:
        return 1;
    case EMBER_INT16: case EMBER_FLOAT16: case EMBER_BFLOAT16: case EMBER_BITS16: case EMBER_UINT16:
        return 2;
    case EMBER_INT32: case EMBER_FLOAT32: case EMBER_QINT32: case EMBER_UINT32:
        return 4;
    case EMBER_INT64: case EMBER_FLOAT64: case EMBER_UINT64:
        return 8;
    default:
        return 0;
    }
}

const char *ember_dtype_name(int dtype) {
    switch (dtype) {
    case EMBER_UINT8: return "uint8";
    case EMBER_INT8: return "int8";
    case EMBER_INT16: return "int16";
    case EMBER_INT32: return "int32";
    case EMBER_INT64: return "int64";
    case EMBER_FLOAT16: return "float16";
    case EMBER_FLOAT32: return "float32";
    case EMBER_FLOAT64: return "float64";
    case EMBER_BOOL: return "bool";
    case EMBER_QINT8: return "qint8";
    case EMBER_QUINT8: return "quint8";
    case EMBER_QINT32: return "qint32";
    case EMBER_BFLOAT16: return "bfloat16";
    case EMBER_QUINT4X2: return "quint4x2";
    case EMBER_QUINT2X4: return "quint2x4";
    case EMBER_BITS16: return "bits16";
    case EMBER_FLOAT8_E5M2: return "float8_e5m2";
    case EMBER_FLOAT8_E4M3FN: return "float8_e4m3fn";
    case EMBER_FLOAT8_E5M2FNUZ: return "float8_e5m2fnuz";
    case EMBER_FLOAT8_E4M3FNUZ: return "float8_e4m3fnuz";
    case EMBER_UINT16: return "uint16";
    case EMBER_UINT32: return "uint32";
    case EMBER_UINT64: return "uint64";
    default: return "unknown";
    }
}
