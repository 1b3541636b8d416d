/*
 * bindings/java/jni/module_jni.c — org.pytorch.executorch.Module over ember's
 * module helper (ember/module.h).
 *
 * A Java Module holds a pointer to a jni_module: the ember_module and, per
 * method, the storage this binding gives the method's unplanned tensor
 * outputs. Inputs arrive flattened by Module.execute() (one tag per input,
 * scalars in ints/doubles, tensors as a direct buffer with dtype, shape and
 * byte capacity); outputs go back as EValues, tensors copied into new direct
 * buffers, row-major, so they outlive the next run.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ember/module.h"
#include "ember_jni.h"

/* Storage of one method's unplanned tensor outputs (NULL where planned). */
typedef struct jni_method_outputs {
    struct jni_method_outputs *next;
    char *name;
    void **buffers; /* (num_outputs) */
    size_t count;
} jni_method_outputs;

typedef struct jni_module {
    ember_module *module;
    jni_method_outputs *outputs;
} jni_module;

/* ExecuTorch's tag codes (Java's EValue and MethodMetadata) from ember's. */
static jint java_tag(uint32_t tag) {
    switch (tag) {
    case EMBER_TAG_NONE: return 0;
    case EMBER_TAG_TENSOR: return 1;
    case EMBER_TAG_STRING: return 2;
    case EMBER_TAG_DOUBLE: return 3;
    case EMBER_TAG_INT: return 4;
    case EMBER_TAG_BOOL: return 5;
    case EMBER_TAG_BOOL_LIST: return 6;
    case EMBER_TAG_DOUBLE_LIST: return 7;
    case EMBER_TAG_INT_LIST: return 8;
    case EMBER_TAG_TENSOR_LIST: return 9;
    case EMBER_TAG_OPTIONAL_TENSOR_LIST: return 11;
    default: return -1;
    }
}

static const char *tag_name(uint32_t tag) {
    switch (tag) {
    case EMBER_TAG_NONE: return "None";
    case EMBER_TAG_TENSOR: return "Tensor";
    case EMBER_TAG_STRING: return "String";
    case EMBER_TAG_DOUBLE: return "Double";
    case EMBER_TAG_INT: return "Int";
    case EMBER_TAG_BOOL: return "Bool";
    case EMBER_TAG_BOOL_LIST: return "bool list";
    case EMBER_TAG_DOUBLE_LIST: return "double list";
    case EMBER_TAG_INT_LIST: return "int list";
    case EMBER_TAG_TENSOR_LIST: return "tensor list";
    case EMBER_TAG_OPTIONAL_TENSOR_LIST: return "optional tensor list";
    default: return "unknown value";
    }
}

static jni_module *module_of(jlong handle) { return (jni_module *)(intptr_t)handle; }

static void free_outputs(jni_method_outputs *o) {
    if (o == NULL) return;
    for (size_t i = 0; i < o->count; i++) ember_platform_free(o->buffers[i]);
    ember_platform_free(o->buffers);
    ember_platform_free(o->name);
    ember_platform_free(o);
}

/* ------------------------------------------------------------------------ */
/* Load, destroy, names, meta                                                */
/* ------------------------------------------------------------------------ */

JNIEXPORT jlong JNICALL Java_org_pytorch_executorch_Module_nativeLoad(JNIEnv *env, jclass cls,
                                                                      jstring jpath, jint load_mode,
                                                                      jint num_threads) {
    (void)cls;
    (void)load_mode; /* the module helper maps the file in every mode */
    const char *path = (*env)->GetStringUTFChars(env, jpath, NULL);
    if (path == NULL) return 0;
    jni_module *jm = ember_platform_alloc(sizeof *jm, _Alignof(jni_module));
    if (jm == NULL) {
        (*env)->ReleaseStringUTFChars(env, jpath, path);
        ember_jni_throw(env, EMBER_ERR_OUT_OF_MEMORY, "loading %s: out of memory", path);
        return 0;
    }
    jm->outputs = NULL;
    ember_module_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.num_threads = (size_t)num_threads;
    ember_status st = ember_module_load_with(path, &o, &jm->module);
    if (st != EMBER_OK) {
        ember_platform_free(jm);
        char what[64 + 256];
        snprintf(what, sizeof what, "loading %.256s", path);
        (*env)->ReleaseStringUTFChars(env, jpath, path);
        ember_jni_throw_status(env, st, what);
        return 0;
    }
    (*env)->ReleaseStringUTFChars(env, jpath, path);
    return (jlong)(intptr_t)jm;
}

JNIEXPORT void JNICALL Java_org_pytorch_executorch_Module_nativeDestroy(JNIEnv *env, jclass cls,
                                                                        jlong handle) {
    (void)env;
    (void)cls;
    jni_module *jm = module_of(handle);
    if (jm == NULL) return;
    ember_module_destroy(jm->module);
    while (jm->outputs != NULL) {
        jni_method_outputs *next = jm->outputs->next;
        free_outputs(jm->outputs);
        jm->outputs = next;
    }
    ember_platform_free(jm);
}

JNIEXPORT jobjectArray JNICALL Java_org_pytorch_executorch_Module_nativeMethodNames(JNIEnv *env,
                                                                                   jclass cls,
                                                                                   jlong handle) {
    (void)cls;
    const ember_program *prog = ember_module_program(module_of(handle)->module);
    size_t n = ember_program_method_count(prog);
    jobjectArray arr = (*env)->NewObjectArray(env, (jsize)n, ember_jni.string_class, NULL);
    if (arr == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *name;
        ember_status st = ember_program_method_name(prog, i, &name);
        if (st != EMBER_OK) {
            ember_jni_throw_status(env, st, "reading method names");
            return NULL;
        }
        jstring s = ember_jni_string(env, name, strlen(name));
        if (s == NULL) return NULL;
        (*env)->SetObjectArrayElement(env, arr, (jsize)i, s);
        (*env)->DeleteLocalRef(env, s);
    }
    return arr;
}

/* The backend id of each delegate the method calls, in order (repeats kept). */
JNIEXPORT jobjectArray JNICALL Java_org_pytorch_executorch_Module_nativeMethodBackends(
    JNIEnv *env, jclass cls, jlong handle, jstring jname) {
    (void)cls;
    const ember_program *prog = ember_module_program(module_of(handle)->module);
    const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
    if (name == NULL) return NULL;
    jobjectArray arr = NULL;
    ember_method_meta mm;
    ember_status st = ember_program_method_meta(prog, name, &mm);
    if (st != EMBER_OK) {
        ember_jni_throw_status(env, st, "reading method meta");
        goto done;
    }
    if (mm.num_delegates > 65536) {
        ember_jni_throw(env, EMBER_ERR_NOT_SUPPORTED, "method '%s' has too many delegates", name);
        goto done;
    }
    arr = (*env)->NewObjectArray(env, (jsize)mm.num_delegates, ember_jni.string_class, NULL);
    for (size_t i = 0; arr != NULL && i < mm.num_delegates; i++) {
        char id[EMBER_MAX_NAME];
        st = ember_program_delegate_name(prog, name, i, id, sizeof id);
        if (st != EMBER_OK) {
            ember_jni_throw_status(env, st, "reading delegate names");
            arr = NULL;
            break;
        }
        jstring s = ember_jni_string(env, id, strlen(id));
        if (s == NULL) {
            arr = NULL;
            break;
        }
        (*env)->SetObjectArrayElement(env, arr, (jsize)i, s);
        (*env)->DeleteLocalRef(env, s);
    }
done:
    (*env)->ReleaseStringUTFChars(env, jname, name);
    return arr;
}

/* Returns {num_delegates, num_inputs, num_outputs, input tags..., output tags...}. */
JNIEXPORT jintArray JNICALL Java_org_pytorch_executorch_Module_nativeMethodInfo(JNIEnv *env,
                                                                               jclass cls,
                                                                               jlong handle,
                                                                               jstring jname) {
    (void)cls;
    const ember_program *prog = ember_module_program(module_of(handle)->module);
    const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
    if (name == NULL) return NULL;
    jintArray result = NULL;
    jint *info = NULL;
    ember_method_meta mm;
    ember_status st = ember_program_method_meta(prog, name, &mm);
    if (st != EMBER_OK) {
        ember_jni_throw_status(env, st, "reading method meta");
        goto done;
    }
    if (mm.num_inputs > 65536 || mm.num_outputs > 65536) {
        ember_jni_throw(env, EMBER_ERR_NOT_SUPPORTED, "method '%s' has too many values", name);
        goto done;
    }
    size_t n = 3 + mm.num_inputs + mm.num_outputs;
    info = malloc(n * sizeof *info);
    if (info == NULL) {
        ember_jni_throw(env, EMBER_ERR_OUT_OF_MEMORY, "reading method meta: out of memory");
        goto done;
    }
    info[0] = (jint)mm.num_delegates;
    info[1] = (jint)mm.num_inputs;
    info[2] = (jint)mm.num_outputs;
    for (size_t i = 0; i < mm.num_inputs + mm.num_outputs; i++) {
        ember_value_meta vm;
        st = i < mm.num_inputs ? ember_program_input_meta(prog, name, i, &vm)
                               : ember_program_output_meta(prog, name, i - mm.num_inputs, &vm);
        if (st != EMBER_OK) {
            ember_jni_throw_status(env, st, "reading method meta");
            goto done;
        }
        info[3 + i] = java_tag(vm.tag);
    }
    result = (*env)->NewIntArray(env, (jsize)n);
    if (result != NULL) (*env)->SetIntArrayRegion(env, result, 0, (jsize)n, info);
done:
    free(info);
    (*env)->ReleaseStringUTFChars(env, jname, name);
    return result;
}

/* ------------------------------------------------------------------------ */
/* Method loading                                                            */
/* ------------------------------------------------------------------------ */

/*
 * Loads the method (once) and, the first time, gives its unplanned tensor
 * outputs storage for their largest shape. Returns the status; on failure
 * ember's last error says why.
 */
static ember_status get_method(jni_module *jm, const char *name, ember_method **out) {
    ember_method *m;
    ember_status st = ember_module_method(jm->module, name, &m);
    if (st != EMBER_OK) return st;
    for (jni_method_outputs *o = jm->outputs; o != NULL; o = o->next) {
        if (strcmp(o->name, name) == 0) {
            *out = m;
            return EMBER_OK;
        }
    }
    const ember_program *prog = ember_module_program(jm->module);
    size_t n = ember_method_output_count(m);
    size_t name_len = strlen(name) + 1;
    jni_method_outputs *o = ember_platform_alloc(sizeof *o, _Alignof(jni_method_outputs));
    if (o == NULL) return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    memset(o, 0, sizeof *o);
    o->name = ember_platform_alloc(name_len, 1);
    o->buffers = ember_platform_alloc((n ? n : 1) * sizeof *o->buffers, _Alignof(void *));
    if (o->name == NULL || o->buffers == NULL) {
        free_outputs(o);
        return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory");
    }
    memcpy(o->name, name, name_len);
    memset(o->buffers, 0, (n ? n : 1) * sizeof *o->buffers);
    o->count = n;
    for (size_t i = 0; i < n; i++) {
        ember_value_meta vm;
        st = ember_program_output_meta(prog, name, i, &vm);
        if (st != EMBER_OK) break;
        if (vm.tag != EMBER_TAG_TENSOR || vm.planned) continue;
        o->buffers[i] = ember_platform_alloc(vm.nbytes ? vm.nbytes : 1, 64);
        if (o->buffers[i] == NULL) {
            st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for output %zu (%zu bytes)",
                                 i, vm.nbytes);
            break;
        }
        st = ember_method_set_output_buffer(m, i, o->buffers[i], vm.nbytes);
        if (st != EMBER_OK) break;
    }
    if (st != EMBER_OK) {
        free_outputs(o);
        return st;
    }
    o->next = jm->outputs;
    jm->outputs = o;
    *out = m;
    return EMBER_OK;
}

JNIEXPORT jint JNICALL Java_org_pytorch_executorch_Module_nativeLoadMethod(JNIEnv *env, jclass cls,
                                                                          jlong handle,
                                                                          jstring jname) {
    (void)cls;
    const char *name = (*env)->GetStringUTFChars(env, jname, NULL);
    if (name == NULL) return (jint)EMBER_ERR_OUT_OF_MEMORY;
    ember_method *m;
    ember_status st = get_method(module_of(handle), name, &m);
    (*env)->ReleaseStringUTFChars(env, jname, name);
    return (jint)st;
}

/* ------------------------------------------------------------------------ */
/* Execute                                                                   */
/* ------------------------------------------------------------------------ */

/* Java's tag codes, as Module.execute() flattens inputs. */
enum { JTAG_NONE = 0, JTAG_TENSOR = 1, JTAG_STRING = 2, JTAG_DOUBLE = 3, JTAG_INT = 4, JTAG_BOOL = 5 };

/*
 * Sets tensor input i from a direct buffer of cap_bytes bytes. Returns false
 * with an exception pending.
 */
static bool set_tensor_input(JNIEnv *env, ember_method *m, const char *method, jsize i,
                             jobject buffer, jint dtype, jlongArray jshape, jlong cap_bytes) {
    void *data = buffer != NULL ? (*env)->GetDirectBufferAddress(env, buffer) : NULL;
    if (data == NULL && cap_bytes > 0) {
        ember_jni_throw(env, EMBER_ERR_INVALID_ARGUMENT,
                        "method '%s' input %d: the tensor's data is not a direct buffer", method,
                        (int)i);
        return false;
    }
    jsize dim = jshape != NULL ? (*env)->GetArrayLength(env, jshape) : 0;
    if (dim > EMBER_MAX_DIM) {
        ember_jni_throw(env, EMBER_ERR_NOT_SUPPORTED,
                        "method '%s' input %d: rank %d is above ember's limit of %d", method, (int)i,
                        (int)dim, EMBER_MAX_DIM);
        return false;
    }
    jlong sizes[EMBER_MAX_DIM];
    if (dim > 0) (*env)->GetLongArrayRegion(env, jshape, 0, dim, sizes);
    size_t esize = ember_dtype_size(dtype);
    if (esize == 0) {
        ember_jni_throw(env, EMBER_ERR_NOT_SUPPORTED, "method '%s' input %d: unknown dtype %d",
                        method, (int)i, (int)dtype);
        return false;
    }
    /* Checked again by the runtime against the input's bounds; here the
     * bytes must fit the buffer. */
    uint64_t nbytes = esize;
    int64_t sizes64[EMBER_MAX_DIM];
    for (jsize d = 0; d < dim; d++) {
        if (sizes[d] < 0 || (sizes[d] > 0 && nbytes > UINT64_MAX / (uint64_t)sizes[d])) {
            ember_jni_throw(env, EMBER_ERR_SHAPE_MISMATCH,
                            "method '%s' input %d: size %lld of dimension %d is out of range",
                            method, (int)i, (long long)sizes[d], (int)d);
            return false;
        }
        nbytes *= (uint64_t)sizes[d];
        sizes64[d] = sizes[d];
    }
    if (cap_bytes < 0 || nbytes > (uint64_t)cap_bytes || nbytes > SIZE_MAX) {
        ember_jni_throw(env, EMBER_ERR_INVALID_ARGUMENT,
                        "method '%s' input %d: the shape needs %llu bytes, the buffer holds %lld",
                        method, (int)i, (unsigned long long)nbytes, (long long)cap_bytes);
        return false;
    }
    ember_status st = ember_method_set_input_tensor(m, (size_t)i, (ember_dtype)dtype, sizes64,
                                                    (size_t)dim, data, (size_t)nbytes);
    if (st != EMBER_OK) {
        char what[128];
        snprintf(what, sizeof what, "setting input %d of method '%.64s'", (int)i, method);
        ember_jni_throw_status(env, st, what);
        return false;
    }
    return true;
}

/* Copies t row-major into dst (t may have a non-default dim order). */
static void copy_row_major(const ember_tensor *t, uint8_t *dst) {
    size_t esize = ember_dtype_size(t->dtype);
    if (ember_tensor_is_contiguous(t)) {
        memcpy(dst, t->data, t->nbytes);
        return;
    }
    int64_t index[EMBER_MAX_DIM] = {0};
    const uint8_t *src = t->data;
    for (int64_t k = 0; k < t->numel; k++) {
        int64_t off = 0;
        for (uint32_t d = 0; d < t->dim; d++) off += index[d] * t->strides[d];
        memcpy(dst + (size_t)k * esize, src + (size_t)off * esize, esize);
        for (uint32_t d = t->dim; d-- > 0;) {
            if (++index[d] < t->sizes[d]) break;
            index[d] = 0;
        }
    }
}

/* obj, or NULL (and obj's local reference dropped) when a Java exception is
 * pending: every call into Java is followed by this check. */
static jobject checked(JNIEnv *env, jobject obj) {
    if ((*env)->ExceptionCheck(env)) {
        if (obj != NULL) (*env)->DeleteLocalRef(env, obj);
        return NULL;
    }
    return obj;
}

/* An EValue holding a copy of tensor t, or NULL with an exception pending. */
static jobject tensor_evalue(JNIEnv *env, const ember_tensor *t, const char *method, size_t i) {
    if (t->nbytes > (size_t)INT32_MAX) {
        ember_jni_throw(env, EMBER_ERR_NOT_SUPPORTED,
                        "method '%s' output %zu has %zu bytes, above a Java buffer's limit", method,
                        i, t->nbytes);
        return NULL;
    }
    jobject buf = (*env)->CallStaticObjectMethod(env, ember_jni.tensor_class,
                                                 ember_jni.tensor_allocate, (jint)t->nbytes);
    if (checked(env, buf) == NULL) return NULL;
    if (t->nbytes > 0) {
        uint8_t *dst = (*env)->GetDirectBufferAddress(env, buf);
        if (dst == NULL || t->data == NULL) {
            (*env)->DeleteLocalRef(env, buf);
            ember_jni_throw(env, EMBER_ERR_INVALID_STATE, "method '%s' output %zu has no data",
                            method, i);
            return NULL;
        }
        copy_row_major(t, dst);
    }
    jlongArray shape = (*env)->NewLongArray(env, (jsize)t->dim);
    if (shape == NULL) {
        (*env)->DeleteLocalRef(env, buf);
        return NULL;
    }
    jlong sizes[EMBER_MAX_DIM];
    for (uint32_t d = 0; d < t->dim; d++) sizes[d] = t->sizes[d];
    (*env)->SetLongArrayRegion(env, shape, 0, (jsize)t->dim, sizes);
    jobject tensor = (*env)->CallStaticObjectMethod(env, ember_jni.tensor_class, ember_jni.tensor_new,
                                                    buf, shape, (jint)t->dtype);
    (*env)->DeleteLocalRef(env, buf);
    (*env)->DeleteLocalRef(env, shape);
    if (checked(env, tensor) == NULL) return NULL;
    jobject ev = (*env)->CallStaticObjectMethod(env, ember_jni.evalue_class,
                                                ember_jni.evalue_from_tensor, tensor);
    (*env)->DeleteLocalRef(env, tensor);
    return checked(env, ev);
}

/* Output i as an EValue, or NULL with an exception pending. */
static jobject output_evalue(JNIEnv *env, ember_method *m, const char *method, size_t i) {
    const ember_value *v;
    ember_status st = ember_method_output(m, i, &v);
    if (st != EMBER_OK) {
        ember_jni_throw_status(env, st, "reading outputs");
        return NULL;
    }
    jclass c = ember_jni.evalue_class;
    switch (v->tag) {
    case EMBER_TAG_NONE:
        return checked(env, (*env)->CallStaticObjectMethod(env, c, ember_jni.evalue_none));
    case EMBER_TAG_INT:
        return checked(env, (*env)->CallStaticObjectMethod(env, c, ember_jni.evalue_from_long,
                                                           (jlong)v->u.i));
    case EMBER_TAG_DOUBLE:
        return checked(env, (*env)->CallStaticObjectMethod(env, c, ember_jni.evalue_from_double,
                                                           (jdouble)v->u.d));
    case EMBER_TAG_BOOL:
        return checked(env, (*env)->CallStaticObjectMethod(
                                env, c, ember_jni.evalue_from_bool,
                                (jboolean)(v->u.b ? JNI_TRUE : JNI_FALSE)));
    case EMBER_TAG_STRING: {
        jstring s = ember_jni_string(env, v->u.str.data, v->u.str.len);
        if (s == NULL) return NULL;
        jobject ev = (*env)->CallStaticObjectMethod(env, c, ember_jni.evalue_from_string, s);
        (*env)->DeleteLocalRef(env, s);
        return checked(env, ev);
    }
    case EMBER_TAG_TENSOR: return tensor_evalue(env, v->u.t, method, i);
    default:
        ember_jni_throw(env, EMBER_ERR_NOT_SUPPORTED,
                        "method '%s' output %zu is a %s, which the Java binding does not convert",
                        method, i, tag_name(v->tag));
        return NULL;
    }
}

/* Sets every input; false with an exception pending. */
static bool set_inputs(JNIEnv *env, ember_method *m, const char *method, jsize n, const jint *tags,
                       const jlong *ints, const jdouble *doubles, jobjectArray objects,
                       const jint *dtypes, jobjectArray shapes) {
    for (jsize i = 0; i < n; i++) {
        ember_status st = EMBER_OK;
        switch (tags[i]) {
        case JTAG_TENSOR: {
            jobject buf = (*env)->GetObjectArrayElement(env, objects, i);
            jlongArray shape = (jlongArray)(*env)->GetObjectArrayElement(env, shapes, i);
            bool ok = set_tensor_input(env, m, method, i, buf, dtypes[i], shape, ints[i]);
            (*env)->DeleteLocalRef(env, buf);
            (*env)->DeleteLocalRef(env, shape);
            if (!ok) return false;
            continue;
        }
        case JTAG_INT: st = ember_method_set_input_int(m, (size_t)i, (int64_t)ints[i]); break;
        case JTAG_DOUBLE: st = ember_method_set_input_double(m, (size_t)i, (double)doubles[i]); break;
        case JTAG_BOOL: st = ember_method_set_input_bool(m, (size_t)i, ints[i] != 0); break;
        case JTAG_NONE: {
            const ember_value *v;
            st = ember_method_input(m, (size_t)i, &v);
            if (st == EMBER_OK && v->tag != EMBER_TAG_NONE)
                st = ember_error_set(EMBER_ERR_TYPE_MISMATCH, "input %d is a %s, not None", (int)i,
                                     tag_name(v->tag));
            break;
        }
        case JTAG_STRING:
            st = ember_error_set(EMBER_ERR_NOT_SUPPORTED, "input %d: ember takes no string inputs",
                                 (int)i);
            break;
        default:
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "input %d has unknown tag %d", (int)i,
                                 (int)tags[i]);
            break;
        }
        if (st != EMBER_OK) {
            char what[128];
            snprintf(what, sizeof what, "setting input %d of method '%.64s'", (int)i, method);
            ember_jni_throw_status(env, st, what);
            return false;
        }
    }
    return true;
}

JNIEXPORT jobjectArray JNICALL Java_org_pytorch_executorch_Module_nativeExecute(
    JNIEnv *env, jclass cls, jlong handle, jstring jmethod, jintArray jtags, jlongArray jints,
    jdoubleArray jdoubles, jobjectArray objects, jintArray jdtypes, jobjectArray shapes) {
    (void)cls;
    jni_module *jm = module_of(handle);
    const char *method = (*env)->GetStringUTFChars(env, jmethod, NULL);
    if (method == NULL) return NULL;
    jobjectArray result = NULL;
    jint *tags = NULL, *dtypes = NULL;
    jlong *ints = NULL;
    jdouble *doubles = NULL;

    ember_method *m;
    ember_status st = get_method(jm, method, &m);
    if (st != EMBER_OK) {
        char what[128];
        snprintf(what, sizeof what, "loading method '%.64s'", method);
        ember_jni_throw_status(env, st, what);
        goto done;
    }
    jsize n = (*env)->GetArrayLength(env, jtags);
    size_t want = ember_method_input_count(m);
    if ((size_t)n != want) {
        ember_jni_throw(env, EMBER_ERR_INVALID_ARGUMENT, "method '%s' takes %zu inputs, got %d",
                        method, want, (int)n);
        goto done;
    }
    size_t cnt = n > 0 ? (size_t)n : 1;
    tags = malloc(cnt * sizeof *tags);
    dtypes = malloc(cnt * sizeof *dtypes);
    ints = malloc(cnt * sizeof *ints);
    doubles = malloc(cnt * sizeof *doubles);
    if (tags == NULL || dtypes == NULL || ints == NULL || doubles == NULL) {
        ember_jni_throw(env, EMBER_ERR_OUT_OF_MEMORY, "running method '%s': out of memory", method);
        goto done;
    }
    (*env)->GetIntArrayRegion(env, jtags, 0, n, tags);
    (*env)->GetIntArrayRegion(env, jdtypes, 0, n, dtypes);
    (*env)->GetLongArrayRegion(env, jints, 0, n, ints);
    (*env)->GetDoubleArrayRegion(env, jdoubles, 0, n, doubles);
    if ((*env)->ExceptionCheck(env)) goto done;

    if (!set_inputs(env, m, method, n, tags, ints, doubles, objects, dtypes, shapes)) goto done;
    st = ember_method_execute(m);
    if (st != EMBER_OK) {
        char what[128];
        snprintf(what, sizeof what, "running method '%.64s'", method);
        ember_jni_throw_status(env, st, what);
        goto done;
    }
    size_t nout = ember_method_output_count(m);
    jobjectArray outs = (*env)->NewObjectArray(env, (jsize)nout, ember_jni.evalue_class, NULL);
    if (outs == NULL) goto done;
    for (size_t i = 0; i < nout; i++) {
        jobject ev = output_evalue(env, m, method, i);
        if (ev == NULL) {
            (*env)->DeleteLocalRef(env, outs);
            goto done;
        }
        (*env)->SetObjectArrayElement(env, outs, (jsize)i, ev);
        (*env)->DeleteLocalRef(env, ev);
    }
    result = outs;
done:
    free(tags);
    free(dtypes);
    free(ints);
    free(doubles);
    (*env)->ReleaseStringUTFChars(env, jmethod, method);
    return result;
}
