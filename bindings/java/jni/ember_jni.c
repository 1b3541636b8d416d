/*
 * bindings/java/jni/ember_jni.c — JNI_OnLoad, the shared helpers, and the
 * counting platform heap behind NativeLibrary.liveNativeBlocks().
 *
 * At load the library installs a platform table that forwards everything to
 * the built-in one and counts live heap blocks, so a Java test can check
 * that destroying modules gives back everything the runtime allocated.
 */
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ember_jni.h"

ember_jni_ids ember_jni;

/* ------------------------------------------------------------------------ */
/* Counting platform heap                                                    */
/* ------------------------------------------------------------------------ */

static const ember_platform *g_base;
static ember_platform g_counting;
static atomic_long g_live_blocks;

static void counting_log(void *user, ember_log_level level, const char *msg) {
    (void)user;
    if (g_base->log != NULL) g_base->log(g_base->user, level, msg);
}

static uint64_t counting_ticks(void *user) {
    (void)user;
    return g_base->ticks_ns != NULL ? g_base->ticks_ns(g_base->user) : 0;
}

static void counting_abort(void *user) {
    (void)user;
    if (g_base->abort != NULL) g_base->abort(g_base->user);
}

static void *counting_alloc(void *user, size_t size, size_t align) {
    (void)user;
    void *p = g_base->alloc(g_base->user, size, align);
    if (p != NULL) atomic_fetch_add(&g_live_blocks, 1);
    return p;
}

static void counting_free(void *user, void *ptr) {
    (void)user;
    if (ptr != NULL) atomic_fetch_sub(&g_live_blocks, 1);
    g_base->free(g_base->user, ptr);
}

static void install_counting_platform(void) {
    g_base = ember_platform_get();
    g_counting.struct_size = sizeof g_counting;
    g_counting.user = NULL;
    g_counting.log = counting_log;
    g_counting.ticks_ns = counting_ticks;
    g_counting.abort = counting_abort;
    g_counting.alloc = g_base->alloc != NULL && g_base->free != NULL ? counting_alloc : NULL;
    g_counting.free = g_base->alloc != NULL && g_base->free != NULL ? counting_free : NULL;
    ember_platform_set(&g_counting);
}

JNIEXPORT jlong JNICALL Java_org_pytorch_executorch_NativeLibrary_nativeLiveBlocks(JNIEnv *env,
                                                                                    jclass cls) {
    (void)env;
    (void)cls;
    return (jlong)atomic_load(&g_live_blocks);
}

/* ------------------------------------------------------------------------ */
/* Class and method lookup                                                   */
/* ------------------------------------------------------------------------ */

static jclass global_class(JNIEnv *env, const char *name) {
    jclass local = (*env)->FindClass(env, name);
    if (local == NULL) return NULL;
    jclass global = (jclass)(*env)->NewGlobalRef(env, local);
    (*env)->DeleteLocalRef(env, local);
    return global;
}

static int lookup_ids(JNIEnv *env) {
    ember_jni_ids *j = &ember_jni;
    if ((j->string_class = global_class(env, "java/lang/String")) == NULL) return -1;
    j->string_from_bytes =
        (*env)->GetMethodID(env, j->string_class, "<init>", "([BLjava/lang/String;)V");
    if (j->string_from_bytes == NULL) return -1;
    jstring utf8 = (*env)->NewStringUTF(env, "UTF-8");
    if (utf8 == NULL) return -1;
    j->utf8_name = (jstring)(*env)->NewGlobalRef(env, utf8);
    (*env)->DeleteLocalRef(env, utf8);
    if (j->utf8_name == NULL) return -1;

    j->runtime_exception = global_class(env, "org/pytorch/executorch/ExecutorchRuntimeException");
    if (j->runtime_exception == NULL) return -1;
    j->runtime_exception_init =
        (*env)->GetMethodID(env, j->runtime_exception, "<init>", "(ILjava/lang/String;)V");
    if (j->runtime_exception_init == NULL) return -1;
    if ((j->illegal_argument = global_class(env, "java/lang/IllegalArgumentException")) == NULL)
        return -1;

    const char *ev = "org/pytorch/executorch/EValue";
    if ((j->evalue_class = global_class(env, ev)) == NULL) return -1;
    jclass c = j->evalue_class;
    if ((j->evalue_none = (*env)->GetStaticMethodID(env, c, "optionalNone",
                                                    "()Lorg/pytorch/executorch/EValue;")) == NULL ||
        (j->evalue_from_long = (*env)->GetStaticMethodID(
             env, c, "from", "(J)Lorg/pytorch/executorch/EValue;")) == NULL ||
        (j->evalue_from_double = (*env)->GetStaticMethodID(
             env, c, "from", "(D)Lorg/pytorch/executorch/EValue;")) == NULL ||
        (j->evalue_from_bool = (*env)->GetStaticMethodID(
             env, c, "from", "(Z)Lorg/pytorch/executorch/EValue;")) == NULL ||
        (j->evalue_from_string = (*env)->GetStaticMethodID(
             env, c, "from", "(Ljava/lang/String;)Lorg/pytorch/executorch/EValue;")) == NULL ||
        (j->evalue_from_tensor = (*env)->GetStaticMethodID(
             env, c, "from", "(Lorg/pytorch/executorch/Tensor;)Lorg/pytorch/executorch/EValue;")) ==
            NULL)
        return -1;

    if ((j->tensor_class = global_class(env, "org/pytorch/executorch/Tensor")) == NULL) return -1;
    j->tensor_allocate = (*env)->GetStaticMethodID(env, j->tensor_class, "allocateByteBuffer",
                                                   "(I)Ljava/nio/ByteBuffer;");
    if (j->tensor_allocate == NULL) return -1;
    j->tensor_new = (*env)->GetStaticMethodID(
        env, j->tensor_class, "nativeNewTensor",
        "(Ljava/nio/ByteBuffer;[JI)Lorg/pytorch/executorch/Tensor;");
    if (j->tensor_new == NULL) return -1;
    return 0;
}

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved) {
    (void)reserved;
    JNIEnv *env;
    if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK) return JNI_ERR;
    if (lookup_ids(env) != 0) return JNI_ERR; /* a NoSuchMethodError etc. is pending */
    install_counting_platform();
    return JNI_VERSION_1_8;
}

/* ------------------------------------------------------------------------ */
/* Strings and exceptions                                                    */
/* ------------------------------------------------------------------------ */

jstring ember_jni_string(JNIEnv *env, const char *bytes, size_t len) {
    if (len > (size_t)INT32_MAX) len = (size_t)INT32_MAX;
    jbyteArray arr = (*env)->NewByteArray(env, (jsize)len);
    if (arr == NULL) return NULL;
    if (len > 0) (*env)->SetByteArrayRegion(env, arr, 0, (jsize)len, (const jbyte *)bytes);
    jstring s = (jstring)(*env)->NewObject(env, ember_jni.string_class, ember_jni.string_from_bytes,
                                           arr, ember_jni.utf8_name);
    (*env)->DeleteLocalRef(env, arr);
    if ((*env)->ExceptionCheck(env)) {
        if (s != NULL) (*env)->DeleteLocalRef(env, s);
        return NULL;
    }
    return s;
}

static void throw_message(JNIEnv *env, ember_status st, const char *msg) {
    jstring jmsg = ember_jni_string(env, msg, strlen(msg));
    if (jmsg == NULL) return; /* OutOfMemoryError pending */
    jobject ex = (*env)->NewObject(env, ember_jni.runtime_exception,
                                   ember_jni.runtime_exception_init, (jint)st, jmsg);
    (*env)->DeleteLocalRef(env, jmsg);
    if (ex == NULL) return;
    (*env)->Throw(env, (jthrowable)ex);
    (*env)->DeleteLocalRef(env, ex);
}

void ember_jni_throw_status(JNIEnv *env, ember_status st, const char *what) {
    char msg[EMBER_ERROR_MESSAGE_SIZE + 256];
    const char *detail = ember_last_error();
    if (detail != NULL && detail[0] != '\0')
        snprintf(msg, sizeof msg, "%s: %s: %s", what, ember_status_str(st), detail);
    else
        snprintf(msg, sizeof msg, "%s: %s", what, ember_status_str(st));
    throw_message(env, st, msg);
}

void ember_jni_throw(JNIEnv *env, ember_status st, const char *fmt, ...) {
    char msg[EMBER_ERROR_MESSAGE_SIZE + 256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    throw_message(env, st, msg);
}

void ember_jni_throw_illegal_argument(JNIEnv *env, const char *msg) {
    (*env)->ThrowNew(env, ember_jni.illegal_argument, msg);
}
