/*
 * bindings/java/jni/ember_jni.h — what the JNI files share: the classes and
 * methods looked up once at JNI_OnLoad, and helpers that turn an ember status
 * into a pending Java exception.
 *
 * Rule of every native method here: on failure it leaves exactly one Java
 * exception pending and returns a neutral value (0, NULL); it frees every
 * native allocation it made on every path.
 */
#ifndef EMBER_JNI_H
#define EMBER_JNI_H

#include <jni.h>
#include <stddef.h>

#include "ember/ember.h"

/** Classes (global references) and method ids, valid after JNI_OnLoad. */
typedef struct ember_jni_ids {
    jclass string_class;              /* java.lang.String */
    jmethodID string_from_bytes;      /* String(byte[], String charsetName) */
    jstring utf8_name;                /* "UTF-8" (global reference) */
    jclass runtime_exception;         /* org.pytorch.executorch.ExecutorchRuntimeException */
    jmethodID runtime_exception_init; /* (int, String) */
    jclass illegal_argument;          /* java.lang.IllegalArgumentException */
    jclass evalue_class;              /* org.pytorch.executorch.EValue */
    jmethodID evalue_none;            /* static optionalNone() */
    jmethodID evalue_from_long;       /* static from(long) */
    jmethodID evalue_from_double;     /* static from(double) */
    jmethodID evalue_from_bool;       /* static from(boolean) */
    jmethodID evalue_from_string;     /* static from(String) */
    jmethodID evalue_from_tensor;     /* static from(Tensor) */
    jclass tensor_class;              /* org.pytorch.executorch.Tensor */
    jmethodID tensor_allocate;        /* static allocateByteBuffer(int) */
    jmethodID tensor_new;             /* static nativeNewTensor(ByteBuffer, long[], int) */
} ember_jni_ids;

extern ember_jni_ids ember_jni;

/**
 * A Java String from UTF-8 bytes (invalid sequences become U+FFFD), or NULL
 * with an exception pending.
 */
jstring ember_jni_string(JNIEnv *env, const char *bytes, size_t len);

/**
 * Throws ExecutorchRuntimeException(st, "<what>: <status name>: <ember's last
 * error message>").
 */
void ember_jni_throw_status(JNIEnv *env, ember_status st, const char *what);

/** Throws ExecutorchRuntimeException(st, printf-style message). */
void ember_jni_throw(JNIEnv *env, ember_status st, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/** Throws IllegalArgumentException(msg). */
void ember_jni_throw_illegal_argument(JNIEnv *env, const char *msg);

#endif /* EMBER_JNI_H */
