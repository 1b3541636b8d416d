/*
 * _runtime.c — the CPython extension `ember._runtime`: libember's programs,
 * methods and kernel registry, seen from Python.
 *
 * Written against the CPython C API alone (no numpy or torch headers).
 * Tensors cross the boundary as (dtype code, shape, buffer): inputs are any
 * C-contiguous object with the buffer protocol, outputs come back as fresh
 * bytearrays. runtime.py turns them into torch tensors and holds the
 * user-facing API; this module is its thin, checked core.
 *
 * Lifetimes: a Program owns a 16-byte aligned copy of the file's bytes
 * (loaded with the buffer loader, so the program never touches the caller's
 * memory or the file again); a DataMap (a .ptd file) likewise; a Program
 * holds references to the DataMaps it was loaded with, and a Method to its
 * Program, so the program and its maps outlive every method loaded from it. Methods use platform
 * heap memory (ember_method_load() with NULL memory).
 *
 * Threads: loading and execute release the GIL. A Method runs on one thread
 * at a time (libember's rule): a second concurrent execute raises instead of
 * racing.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "ember/backend.h"
#include "ember/devtools.h"
#include "ember/bundled_program.h"
#include "ember/threadpool.h"
#include "ember/ember.h"
#include "ember/kernel.h"

/* Alignment of the program bytes and of unplanned tensor storage. */
#define RT_ALIGN 16

static PyObject *g_error_type; /* ember.runtime.EmberError */

/* ------------------------------------------------------------------------ */
/* Aligned memory                                                            */
/* ------------------------------------------------------------------------ */

/* size bytes aligned to RT_ALIGN from the raw Python heap (safe without the
 * GIL); the pointer malloc gave is kept just below the aligned block. */
static void *aligned_malloc(size_t size) {
    size_t total;
    if (ember_add_overflow(size, RT_ALIGN + sizeof(void *), &total)) return NULL;
    unsigned char *raw = PyMem_RawMalloc(total);
    if (raw == NULL) return NULL;
    uintptr_t p = ((uintptr_t)(raw + sizeof(void *)) + (RT_ALIGN - 1)) & ~(uintptr_t)(RT_ALIGN - 1);
    ((void **)p)[-1] = raw;
    return (void *)p;
}

static void aligned_free(void *p) {
    if (p != NULL) PyMem_RawFree(((void **)p)[-1]);
}

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */
/* ------------------------------------------------------------------------ */

/* Symbolic name of a status ("NOT_FOUND"), for EmberError.status_name. */
static const char *status_symbol(ember_status st) {
    switch (st) {
    case EMBER_OK: return "OK";
    case EMBER_ERR_INVALID_ARGUMENT: return "INVALID_ARGUMENT";
    case EMBER_ERR_INVALID_STATE: return "INVALID_STATE";
    case EMBER_ERR_NOT_FOUND: return "NOT_FOUND";
    case EMBER_ERR_INDEX_OUT_OF_RANGE: return "INDEX_OUT_OF_RANGE";
    case EMBER_ERR_TYPE_MISMATCH: return "TYPE_MISMATCH";
    case EMBER_ERR_SHAPE_MISMATCH: return "SHAPE_MISMATCH";
    case EMBER_ERR_INVALID_PROGRAM: return "INVALID_PROGRAM";
    case EMBER_ERR_TRUNCATED: return "TRUNCATED";
    case EMBER_ERR_BAD_IDENTIFIER: return "BAD_IDENTIFIER";
    case EMBER_ERR_NOT_SUPPORTED: return "NOT_SUPPORTED";
    case EMBER_ERR_OPERATOR_MISSING: return "OPERATOR_MISSING";
    case EMBER_ERR_BACKEND_MISSING: return "BACKEND_MISSING";
    case EMBER_ERR_OUT_OF_MEMORY: return "OUT_OF_MEMORY";
    case EMBER_ERR_IO: return "IO";
    case EMBER_ERR_TABLE_FULL: return "TABLE_FULL";
    case EMBER_ERR_KERNEL_FAILED: return "KERNEL_FAILED";
    case EMBER_ERR_DELEGATE_FAILED: return "DELEGATE_FAILED";
    case EMBER_ERR_DATA_OUT_OF_BOUNDS: return "DATA_OUT_OF_BOUNDS";
    case EMBER_ERR_LOOP_LIMIT: return "LOOP_LIMIT";
    case EMBER_ERR_OUTPUT_MISMATCH: return "OUTPUT_MISMATCH";
    }
    return "UNKNOWN";
}

/* Every status, in enum order, for status_codes(). */
static const ember_status k_all_statuses[] = {
    EMBER_OK,
    EMBER_ERR_INVALID_ARGUMENT, EMBER_ERR_INVALID_STATE, EMBER_ERR_NOT_FOUND,
    EMBER_ERR_INDEX_OUT_OF_RANGE, EMBER_ERR_TYPE_MISMATCH, EMBER_ERR_SHAPE_MISMATCH,
    EMBER_ERR_INVALID_PROGRAM, EMBER_ERR_TRUNCATED, EMBER_ERR_BAD_IDENTIFIER,
    EMBER_ERR_NOT_SUPPORTED, EMBER_ERR_OPERATOR_MISSING, EMBER_ERR_BACKEND_MISSING,
    EMBER_ERR_OUT_OF_MEMORY, EMBER_ERR_IO, EMBER_ERR_TABLE_FULL,
    EMBER_ERR_KERNEL_FAILED, EMBER_ERR_DELEGATE_FAILED, EMBER_ERR_DATA_OUT_OF_BOUNDS,
    EMBER_ERR_LOOP_LIMIT, EMBER_ERR_OUTPUT_MISMATCH,
};

/*
 * Raises EmberError("<what>: <status text>: <detail>") with attributes
 * status (int), status_name ("NOT_FOUND"), message (detail) and debug_handle
 * (the failing delegate node's handle, or None). Returns NULL.
 */
static PyObject *raise_ember(ember_status st, const char *what, const char *detail,
                             int64_t debug_handle) {
    if (detail == NULL) detail = "";
    PyObject *text = detail[0] != '\0'
                         ? PyUnicode_FromFormat("%s: %s: %s", what, ember_status_str(st), detail)
                         : PyUnicode_FromFormat("%s: %s", what, ember_status_str(st));
    if (text == NULL) return NULL;
    PyObject *exc = PyObject_CallOneArg(g_error_type, text);
    Py_DECREF(text);
    if (exc == NULL) return NULL;
    PyObject *code = PyLong_FromLong((long)st);
    PyObject *name = PyUnicode_FromString(status_symbol(st));
    PyObject *msg = PyUnicode_DecodeUTF8(detail, (Py_ssize_t)strlen(detail), "replace");
    PyObject *handle = debug_handle >= 0 ? PyLong_FromLongLong((long long)debug_handle)
                                         : Py_NewRef(Py_None);
    int bad = code == NULL || name == NULL || msg == NULL || handle == NULL ||
              PyObject_SetAttrString(exc, "status", code) < 0 ||
              PyObject_SetAttrString(exc, "status_name", name) < 0 ||
              PyObject_SetAttrString(exc, "message", msg) < 0 ||
              PyObject_SetAttrString(exc, "debug_handle", handle) < 0;
    Py_XDECREF(code);
    Py_XDECREF(name);
    Py_XDECREF(msg);
    Py_XDECREF(handle);
    if (!bad) PyErr_SetObject(g_error_type, exc);
    Py_DECREF(exc);
    return NULL;
}

/* Raises EmberError for a failed libember call, with ember_last_error(). */
static PyObject *raise_status(ember_status st, const char *what) {
    return raise_ember(st, what, ember_last_error(), ember_last_error_debug_handle());
}

/* Raises EmberError for a failure found here, with a formatted detail. */
static PyObject *raise_fmt(ember_status st, const char *what, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

static PyObject *raise_fmt(ember_status st, const char *what, const char *fmt, ...) {
    char detail[EMBER_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    return raise_ember(st, what, detail, -1);
}

/* ------------------------------------------------------------------------ */
/* Value meta → dict                                                         */
/* ------------------------------------------------------------------------ */

static const char *tag_name(uint32_t tag) {
    switch (tag) {
    case EMBER_TAG_NONE: return "none";
    case EMBER_TAG_INT: return "int";
    case EMBER_TAG_BOOL: return "bool";
    case EMBER_TAG_DOUBLE: return "double";
    case EMBER_TAG_TENSOR: return "tensor";
    case EMBER_TAG_STRING: return "string";
    case EMBER_TAG_INT_LIST: return "int_list";
    case EMBER_TAG_DOUBLE_LIST: return "double_list";
    case EMBER_TAG_BOOL_LIST: return "bool_list";
    case EMBER_TAG_TENSOR_LIST: return "tensor_list";
    case EMBER_TAG_OPTIONAL_TENSOR_LIST: return "optional_tensor_list";
    default: return "unknown";
    }
}

static const char *dynamism_name(uint8_t d) {
    switch (d) {
    case EMBER_SHAPE_STATIC: return "static";
    case EMBER_SHAPE_DYNAMIC_BOUND: return "dynamic_bound";
    case EMBER_SHAPE_DYNAMIC_UNBOUND: return "dynamic_unbound";
    default: return "unknown";
    }
}

/* Tuple of n ints from int32 sizes / uint8 dim order. */
static PyObject *tuple_i32(const int32_t *v, uint32_t n) {
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    if (t == NULL) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong((long)v[i]);
        if (x == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, x);
    }
    return t;
}

static PyObject *tuple_u8(const uint8_t *v, uint32_t n) {
    PyObject *t = PyTuple_New((Py_ssize_t)n);
    if (t == NULL) return NULL;
    for (uint32_t i = 0; i < n; i++) {
        PyObject *x = PyLong_FromLong((long)v[i]);
        if (x == NULL) {
            Py_DECREF(t);
            return NULL;
        }
        PyTuple_SET_ITEM(t, (Py_ssize_t)i, x);
    }
    return t;
}

/* {"kind", "dtype", "sizes", "dim_order", "dynamism", "planned", "nbytes"};
 * dtype is None for non-tensors. */
static PyObject *value_meta_dict(const ember_value_meta *vm) {
    bool tensor = vm->tag == EMBER_TAG_TENSOR;
    uint32_t dim = tensor ? vm->dim : 0;
    if (dim > EMBER_MAX_DIM) dim = EMBER_MAX_DIM;
    PyObject *sizes = tuple_i32(vm->sizes, dim);
    PyObject *order = tuple_u8(vm->dim_order, dim);
    PyObject *d = NULL;
    if (sizes != NULL && order != NULL) {
        if (tensor)
            d = Py_BuildValue("{s:s,s:i,s:O,s:O,s:s,s:O,s:n}", "kind", tag_name(vm->tag), "dtype",
                              (int)vm->dtype, "sizes", sizes, "dim_order", order, "dynamism",
                              dynamism_name(vm->dynamism), "planned", vm->planned ? Py_True : Py_False,
                              "nbytes", (Py_ssize_t)vm->nbytes);
        else
            d = Py_BuildValue("{s:s,s:O,s:O,s:O,s:s,s:O,s:n}", "kind", tag_name(vm->tag), "dtype",
                              Py_None, "sizes", sizes, "dim_order", order, "dynamism", "static",
                              "planned", Py_False, "nbytes", (Py_ssize_t)0);
    }
    Py_XDECREF(sizes);
    Py_XDECREF(order);
    return d;
}

/* Decodes a name from the program (UTF-8; bad bytes become U+FFFD). */
static PyObject *decode_name(const char *s) {
    return PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace");
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

/* Reads a whole file into RT_ALIGN-aligned memory (*data, *size; free with
 * aligned_free). The caller may rewrite the file afterwards. -1 with a
 * Python exception on failure. */
static int read_file_aligned(PyObject *arg, void **data, size_t *size) {
    PyObject *path_bytes = NULL;
    if (!PyUnicode_FSConverter(arg, &path_bytes)) return -1;
    const char *path = PyBytes_AS_STRING(path_bytes);
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
        Py_DECREF(path_bytes);
        return -1;
    }
    long end = -1;
    if (fseek(f, 0, SEEK_END) == 0) end = ftell(f);
    if (end < 0 || fseek(f, 0, SEEK_SET) != 0) {
        PyErr_SetFromErrnoWithFilenameObject(PyExc_OSError, arg);
        fclose(f);
        Py_DECREF(path_bytes);
        return -1;
    }
    *size = (size_t)end;
    *data = aligned_malloc(*size == 0 ? 1 : *size);
    if (*data == NULL) {
        fclose(f);
        Py_DECREF(path_bytes);
        PyErr_NoMemory();
        return -1;
    }
    size_t got;
    Py_BEGIN_ALLOW_THREADS
    got = fread(*data, 1, *size, f);
    Py_END_ALLOW_THREADS
    int failed = ferror(f);
    fclose(f);
    if (failed || got != *size) {
        PyErr_Format(PyExc_OSError, "cannot read all %zu bytes of %s", *size, path);
        aligned_free(*data);
        *data = NULL;
        Py_DECREF(path_bytes);
        return -1;
    }
    Py_DECREF(path_bytes);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* DataMap (.ptd files)                                                      */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    void *data;                /* (size) the .ptd file, owned, RT_ALIGN-aligned */
    size_t size;
    ember_buffer_loader loader;/* over data; its address is fixed for the map's life */
    ember_data_map *map;
} DataMapObject;

static PyTypeObject DataMapType;

static void DataMap_dealloc(DataMapObject *self) {
    ember_data_map_close(self->map);
    aligned_free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Takes ownership of data (size bytes): opens and verifies the map. */
static PyObject *data_map_open(void *data, size_t size) {
    DataMapObject *self = PyObject_New(DataMapObject, &DataMapType);
    if (self == NULL) {
        aligned_free(data);
        return NULL;
    }
    self->data = data;
    self->size = size;
    self->map = NULL;
    ember_buffer_loader_init(&self->loader, self->data, self->size);
    ember_status st;
    Py_BEGIN_ALLOW_THREADS
    ember_clear_error();
    st = ember_data_map_open(&self->loader.base, NULL, &self->map);
    Py_END_ALLOW_THREADS
    if (st != EMBER_OK) {
        self->map = NULL;
        Py_DECREF(self);
        return raise_status(st, "loading data map");
    }
    return (PyObject *)self;
}

static PyObject *rt_load_data_map_bytes(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    void *data = aligned_malloc(view.len == 0 ? 1 : (size_t)view.len);
    if (data == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    if (view.len > 0) memcpy(data, view.buf, (size_t)view.len);
    size_t size = (size_t)view.len;
    PyBuffer_Release(&view);
    return data_map_open(data, size);
}

static PyObject *rt_load_data_map_file(PyObject *mod, PyObject *arg) {
    (void)mod;
    void *data;
    size_t size;
    if (read_file_aligned(arg, &data, &size) < 0) return NULL;
    return data_map_open(data, size);
}

static PyObject *DataMap_keys(DataMapObject *self, PyObject *unused) {
    (void)unused;
    size_t n = ember_data_map_key_count(self->map);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *key;
        ember_status st = ember_data_map_key(self->map, i, &key);
        PyObject *s = st == EMBER_OK ? PyUnicode_DecodeUTF8(key, (Py_ssize_t)strlen(key), "replace")
                                     : raise_status(st, "reading data map keys");
        if (s == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

/* info(key) -> {"size", "dtype", "sizes", "dim_order", "nbytes"} (the last
 * four None for a blob without a tensor layout). */
static PyObject *DataMap_info(DataMapObject *self, PyObject *arg) {
    const char *key = PyUnicode_AsUTF8(arg);
    if (key == NULL) return NULL;
    ember_data_info info;
    ember_clear_error();
    ember_status st = ember_data_map_info(self->map, key, &info);
    if (st != EMBER_OK) return raise_status(st, "reading data map entry");
    if (!info.has_layout)
        return Py_BuildValue("{s:n,s:O,s:O,s:O,s:O}", "size", (Py_ssize_t)info.size, "dtype",
                             Py_None, "sizes", Py_None, "dim_order", Py_None, "nbytes", Py_None);
    return Py_BuildValue("{s:n,s:i,s:N,s:N,s:n}", "size", (Py_ssize_t)info.size, "dtype",
                         (int)info.dtype, "sizes", tuple_i32(info.sizes, info.dim), "dim_order",
                         tuple_u8(info.dim_order, info.dim), "nbytes", (Py_ssize_t)info.nbytes);
}

/* load(key) -> bytes: a copy of the blob. */
static PyObject *DataMap_load(DataMapObject *self, PyObject *arg) {
    const char *key = PyUnicode_AsUTF8(arg);
    if (key == NULL) return NULL;
    ember_buffer buf;
    ember_clear_error();
    ember_status st = ember_data_map_load(self->map, key, &buf);
    if (st != EMBER_OK) return raise_status(st, "loading data map entry");
    PyObject *b = PyBytes_FromStringAndSize(buf.data, (Py_ssize_t)buf.size);
    ember_data_map_release(self->map, &buf);
    return b;
}

static PyObject *DataMap_get_size(DataMapObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->size);
}

static PyMethodDef DataMap_methods[] = {
    {"keys", (PyCFunction)DataMap_keys, METH_NOARGS, "keys() -> list of str, in file order."},
    {"info", (PyCFunction)DataMap_info, METH_O,
     "info(key) -> dict: size, and dtype code, sizes, dim_order, nbytes of a tensor entry."},
    {"load", (PyCFunction)DataMap_load, METH_O, "load(key) -> bytes: a copy of the blob."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef DataMap_getset[] = {
    {"nbytes", (getter)DataMap_get_size, NULL, "size of the .ptd file in bytes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject DataMapType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._runtime.DataMap",
    .tp_basicsize = sizeof(DataMapObject),
    .tp_dealloc = (destructor)DataMap_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A verified .ptd data map (use ember.runtime.Runtime.get().load_data_map).",
    .tp_methods = DataMap_methods,
    .tp_getset = DataMap_getset,
};

/* ------------------------------------------------------------------------ */
/* Program                                                                   */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    void *data;                /* (size) the program file, owned, RT_ALIGN-aligned */
    size_t size;
    ember_buffer_loader loader;/* over data; its address is fixed for the program's life */
    ember_program *program;
    PyObject *data_maps;       /* tuple of DataMap the methods are loaded with, or NULL */
    const ember_data_map **maps; /* (num_maps) their ember_data_map */
    size_t num_maps;
} ProgramObject;

static PyTypeObject ProgramType;

static void Program_dealloc(ProgramObject *self) {
    ember_program_destroy(self->program);
    aligned_free(self->data);
    PyMem_Free(self->maps);
    Py_XDECREF(self->data_maps);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Keeps the data maps (a sequence of DataMap, or None) for the methods. */
static int program_set_maps(ProgramObject *self, PyObject *maps) {
    if (maps == NULL || maps == Py_None) return 0;
    PyObject *tuple = PySequence_Tuple(maps);
    if (tuple == NULL) return -1;
    Py_ssize_t n = PyTuple_GET_SIZE(tuple);
    self->maps = PyMem_Calloc(n > 0 ? (size_t)n : 1, sizeof *self->maps);
    if (self->maps == NULL) {
        Py_DECREF(tuple);
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(tuple, i);
        if (!PyObject_TypeCheck(item, &DataMapType)) {
            PyErr_Format(PyExc_TypeError, "data map %zd is a %s, not an ember DataMap", i,
                         Py_TYPE(item)->tp_name);
            Py_DECREF(tuple);
            return -1;
        }
        self->maps[i] = ((DataMapObject *)item)->map;
    }
    self->data_maps = tuple;
    self->num_maps = (size_t)n;
    return 0;
}

/* Loads and verifies self->data (GIL released: the bytes are ours). */
static PyObject *program_finish_load(ProgramObject *self) {
    ember_status st;
    ember_buffer_loader_init(&self->loader, self->data, self->size);
    Py_BEGIN_ALLOW_THREADS
    ember_clear_error();
    st = ember_program_load(&self->loader.base, NULL, &self->program);
    Py_END_ALLOW_THREADS
    if (st != EMBER_OK) {
        self->program = NULL;
        raise_status(st, "loading program");
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static ProgramObject *program_alloc(size_t size) {
    ProgramObject *self = PyObject_New(ProgramObject, &ProgramType);
    if (self == NULL) return NULL;
    self->program = NULL;
    self->data_maps = NULL;
    self->maps = NULL;
    self->num_maps = 0;
    self->size = size;
    self->data = aligned_malloc(size == 0 ? 1 : size);
    if (self->data == NULL) {
        Py_DECREF(self);
        PyErr_NoMemory();
        return NULL;
    }
    return self;
}

static PyObject *rt_load_program_bytes(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *arg, *maps = NULL;
    if (!PyArg_ParseTuple(args, "O|O:load_program_bytes", &arg, &maps)) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    ProgramObject *self = program_alloc((size_t)view.len);
    if (self == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    if (view.len > 0) memcpy(self->data, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    if (program_set_maps(self, maps) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return program_finish_load(self);
}

/* Reads a whole file; the program then never depends on it again (the file
 * may be rewritten while the program is in use). */
static PyObject *rt_load_program_file(PyObject *mod, PyObject *args) {
    (void)mod;
    PyObject *arg, *maps = NULL;
    if (!PyArg_ParseTuple(args, "O|O:load_program_file", &arg, &maps)) return NULL;
    ProgramObject *self = PyObject_New(ProgramObject, &ProgramType);
    if (self == NULL) return NULL;
    self->program = NULL;
    self->data_maps = NULL;
    self->maps = NULL;
    self->num_maps = 0;
    self->data = NULL;
    if (read_file_aligned(arg, &self->data, &self->size) < 0 ||
        program_set_maps(self, maps) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return program_finish_load(self);
}

static PyObject *Program_method_names(ProgramObject *self, PyObject *unused) {
    (void)unused;
    size_t n = ember_program_method_count(self->program);
    PyObject *list = PyList_New((Py_ssize_t)n);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        const char *name;
        ember_status st = ember_program_method_name(self->program, i, &name);
        if (st != EMBER_OK) {
            Py_DECREF(list);
            return raise_status(st, "reading method names");
        }
        PyObject *s = decode_name(name);
        if (s == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, s);
    }
    return list;
}

/* Appends one item to list, stealing it; -1 on failure. */
static int append_steal(PyObject *list, PyObject *item) {
    if (item == NULL) return -1;
    int rc = PyList_Append(list, item);
    Py_DECREF(item);
    return rc;
}

static PyObject *Program_method_meta(ProgramObject *self, PyObject *args) {
    const char *name;
    if (!PyArg_ParseTuple(args, "s:method_meta", &name)) return NULL;
    ember_method_meta mm;
    ember_clear_error();
    ember_status st = ember_program_method_meta(self->program, name, &mm);
    if (st != EMBER_OK) return raise_status(st, "reading method meta");

    PyObject *inputs = PyList_New(0), *outputs = PyList_New(0);
    PyObject *buffers = PyList_New(0), *ops = PyList_New(0);
    PyObject *result = NULL;
    if (inputs == NULL || outputs == NULL || buffers == NULL || ops == NULL) goto done;
    for (size_t i = 0; i < mm.num_inputs; i++) {
        ember_value_meta vm;
        if ((st = ember_program_input_meta(self->program, name, i, &vm)) != EMBER_OK) {
            raise_status(st, "reading input meta");
            goto done;
        }
        if (append_steal(inputs, value_meta_dict(&vm)) < 0) goto done;
    }
    for (size_t i = 0; i < mm.num_outputs; i++) {
        ember_value_meta vm;
        if ((st = ember_program_output_meta(self->program, name, i, &vm)) != EMBER_OK) {
            raise_status(st, "reading output meta");
            goto done;
        }
        if (append_steal(outputs, value_meta_dict(&vm)) < 0) goto done;
    }
    for (size_t i = 0; i < mm.num_planned_buffers; i++) {
        size_t bytes;
        if ((st = ember_program_planned_buffer_size(self->program, name, i, &bytes)) != EMBER_OK) {
            raise_status(st, "reading planned buffer sizes");
            goto done;
        }
        if (append_steal(buffers, PyLong_FromSize_t(bytes)) < 0) goto done;
    }
    for (size_t i = 0; i < mm.num_operators; i++) {
        char op[EMBER_MAX_NAME + 1];
        if ((st = ember_program_operator_name(self->program, name, i, op, sizeof op)) != EMBER_OK) {
            raise_status(st, "reading operator names");
            goto done;
        }
        if (append_steal(ops, decode_name(op)) < 0) goto done;
    }
    result = Py_BuildValue("{s:N,s:O,s:O,s:O,s:O,s:n,s:n,s:n}", "name", decode_name(mm.name),
                           "inputs", inputs, "outputs", outputs, "planned_buffer_sizes", buffers,
                           "operators", ops, "num_delegates", (Py_ssize_t)mm.num_delegates,
                           "num_instructions", (Py_ssize_t)mm.num_instructions, "num_values",
                           (Py_ssize_t)mm.num_values);
done:
    Py_XDECREF(inputs);
    Py_XDECREF(outputs);
    Py_XDECREF(buffers);
    Py_XDECREF(ops);
    return result;
}

/* ------------------------------------------------------------------------ */
/* Bundled programs                                                          */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    void *data;                /* (size) the bundled file, owned, RT_ALIGN-aligned */
    size_t size;
    ember_bundled_program bp;  /* verified view of data */
} BundledObject;

static PyTypeObject BundledType;

static void Bundled_dealloc(BundledObject *self) {
    aligned_free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* open_bundled_bytes(data) -> Bundled: copies and verifies a bundled program. */
static PyObject *rt_open_bundled_bytes(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    BundledObject *self = PyObject_New(BundledObject, &BundledType);
    if (self == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    self->size = (size_t)view.len;
    self->data = aligned_malloc(self->size == 0 ? 1 : self->size);
    if (self->data == NULL) {
        PyBuffer_Release(&view);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    if (view.len > 0) memcpy(self->data, view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    ember_clear_error();
    ember_status st = ember_bundled_program_open(&self->bp, self->data, self->size);
    if (st != EMBER_OK) {
        Py_DECREF(self);
        return raise_status(st, "opening bundled program");
    }
    return (PyObject *)self;
}

static PyObject *rt_is_bundled(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    bool yes = ember_bundled_program_is_bundled(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyBool_FromLong(yes);
}

/* program() -> bytes: a copy of the embedded .pte. */
static PyObject *Bundled_program(BundledObject *self, PyObject *unused) {
    (void)unused;
    return PyBytes_FromStringAndSize(self->bp.program, (Py_ssize_t)self->bp.program_size);
}

/* suites() -> [(method name, number of cases)], in file order. */
static PyObject *Bundled_suites(BundledObject *self, PyObject *unused) {
    (void)unused;
    PyObject *list = PyList_New((Py_ssize_t)self->bp.num_suites);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < self->bp.num_suites; i++) {
        const char *name;
        size_t n;
        ember_status st = ember_bundled_program_suite(&self->bp, i, &name, &n);
        if (st != EMBER_OK) {
            Py_DECREF(list);
            return raise_status(st, "reading bundled suites");
        }
        PyObject *item = Py_BuildValue("(Nn)", decode_name(name), (Py_ssize_t)n);
        if (item == NULL) {
            Py_DECREF(list);
            return NULL;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, item);
    }
    return list;
}

static PyObject *Bundled_get_version(BundledObject *self, void *closure) {
    (void)closure;
    return PyLong_FromUnsignedLong(self->bp.version);
}

static PyMethodDef Bundled_methods[] = {
    {"program", (PyCFunction)Bundled_program, METH_NOARGS, "program() -> bytes of the .pte."},
    {"suites", (PyCFunction)Bundled_suites, METH_NOARGS,
     "suites() -> list of (method name, number of test cases)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Bundled_getset[] = {
    {"version", (getter)Bundled_get_version, NULL, "bundled schema version", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject BundledType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._runtime.Bundled",
    .tp_basicsize = sizeof(BundledObject),
    .tp_dealloc = (destructor)Bundled_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A verified bundled program (use ember.runtime.Runtime.load_bundled_program).",
    .tp_methods = Bundled_methods,
    .tp_getset = Bundled_getset,
};

/* ------------------------------------------------------------------------ */
/* Method                                                                    */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD
    ProgramObject *program;    /* strong reference: the program outlives us */
    ember_method *method;
    char *name;                /* owned copy, for messages */
    size_t num_inputs;
    size_t num_outputs;
    ember_value_meta *in_meta; /* (num_inputs) */
    void **out_buffers;        /* (num_outputs) storage of unplanned outputs, or NULL */
    int busy;                  /* set while execute runs without the GIL */
    ember_threadpool *pool;    /* this method's threads (NULL: one) */
    void *trace_mem;           /* the event tracer's buffer, or NULL */
    void *debug_mem;           /* its debug buffer, or NULL */
    ember_event_tracer *tracer;
} MethodObject;

static PyTypeObject MethodType;

static void Method_dealloc(MethodObject *self) {
    ember_method_destroy(self->method);
    ember_threadpool_destroy(self->pool);
    aligned_free(self->trace_mem);
    aligned_free(self->debug_mem);
    if (self->out_buffers != NULL) {
        for (size_t i = 0; i < self->num_outputs; i++) aligned_free(self->out_buffers[i]);
        PyMem_Free(self->out_buffers);
    }
    PyMem_Free(self->in_meta);
    PyMem_Free(self->name);
    Py_XDECREF(self->program);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Program_load_method(ProgramObject *self, PyObject *args) {
    const char *name;
    Py_ssize_t threads = 0, trace_bytes = 0, debug_bytes = 0;
    unsigned int trace_flags = 0;
    if (!PyArg_ParseTuple(args, "s|nInn:load_method", &name, &threads, &trace_flags, &trace_bytes,
                          &debug_bytes))
        return NULL;
    if (trace_bytes < 0 || debug_bytes < 0) {
        PyErr_SetString(PyExc_ValueError, "trace and debug buffer sizes must be >= 0");
        return NULL;
    }
    if (threads < 0 || threads > 256) {
        PyErr_SetString(PyExc_ValueError, "num_threads must be from 0 (one per core) to 256");
        return NULL;
    }
    if (threads == 0) threads = (Py_ssize_t)ember_cpu_count();
    char what[EMBER_MAX_NAME + 32];
    snprintf(what, sizeof what, "loading method '%.*s'", EMBER_MAX_NAME, name);

    ember_method_meta mm;
    ember_clear_error();
    ember_status st = ember_program_method_meta(self->program, name, &mm);
    if (st != EMBER_OK) return raise_status(st, what);

    MethodObject *m = PyObject_New(MethodObject, &MethodType);
    if (m == NULL) return NULL;
    Py_INCREF(self);
    m->program = self;
    m->method = NULL;
    m->busy = 0;
    m->pool = NULL;
    m->trace_mem = NULL;
    m->debug_mem = NULL;
    m->tracer = NULL;
    m->num_inputs = mm.num_inputs;
    m->num_outputs = mm.num_outputs;
    m->in_meta = PyMem_Calloc(mm.num_inputs ? mm.num_inputs : 1, sizeof *m->in_meta);
    m->out_buffers = PyMem_Calloc(mm.num_outputs ? mm.num_outputs : 1, sizeof *m->out_buffers);
    size_t name_len = strlen(name);
    m->name = PyMem_Malloc(name_len + 1);
    if (m->in_meta == NULL || m->out_buffers == NULL || m->name == NULL) {
        Py_DECREF(m);
        return PyErr_NoMemory();
    }
    memcpy(m->name, name, name_len + 1);
    for (size_t i = 0; i < mm.num_inputs; i++) {
        if ((st = ember_program_input_meta(self->program, name, i, &m->in_meta[i])) != EMBER_OK) {
            Py_DECREF(m);
            return raise_status(st, what);
        }
    }

    /* Each method has threads of its own: two methods may execute at once
     * (execute releases the GIL), and a pool runs one call at a time. */
    if (threads > 1 && (st = ember_threadpool_create((size_t)threads, &m->pool)) != EMBER_OK) {
        Py_DECREF(m);
        return raise_status(st, what);
    }
    ember_method_options options;
    memset(&options, 0, sizeof options);
    options.struct_size = sizeof options;
    options.threadpool = m->pool;
    options.data_maps = self->maps;
    options.num_data_maps = self->num_maps;
    /* A tracer of the caller's size, attached from load on. */
    if (trace_flags != 0) {
        m->trace_mem = aligned_malloc((size_t)trace_bytes > 0 ? (size_t)trace_bytes : 1);
        if (m->trace_mem == NULL) {
            Py_DECREF(m);
            return PyErr_NoMemory();
        }
        ember_clear_error();
        st = ember_event_tracer_init(m->trace_mem, (size_t)trace_bytes, trace_flags, &m->tracer);
        if (st == EMBER_OK && debug_bytes > 0) {
            m->debug_mem = aligned_malloc((size_t)debug_bytes);
            if (m->debug_mem == NULL) {
                Py_DECREF(m);
                return PyErr_NoMemory();
            }
            st = ember_event_tracer_set_debug_buffer(m->tracer, m->debug_mem, (size_t)debug_bytes);
        }
        if (st != EMBER_OK) {
            Py_DECREF(m);
            return raise_status(st, "creating the event tracer");
        }
        options.event_tracer = m->tracer;
    }
    Py_BEGIN_ALLOW_THREADS
    st = ember_method_load_with(self->program, m->name, &options, &m->method);
    Py_END_ALLOW_THREADS
    if (st != EMBER_OK) {
        m->method = NULL;
        Py_DECREF(m);
        return raise_status(st, what);
    }

    /* Unplanned tensor outputs get storage for their largest shape. */
    for (size_t i = 0; i < mm.num_outputs; i++) {
        ember_value_meta vm;
        if ((st = ember_program_output_meta(self->program, name, i, &vm)) != EMBER_OK) {
            Py_DECREF(m);
            return raise_status(st, what);
        }
        if (vm.tag != EMBER_TAG_TENSOR || vm.planned) continue;
        m->out_buffers[i] = aligned_malloc(vm.nbytes ? vm.nbytes : 1);
        if (m->out_buffers[i] == NULL) {
            Py_DECREF(m);
            return PyErr_NoMemory();
        }
        st = ember_method_set_output_buffer(m->method, i, m->out_buffers[i], vm.nbytes);
        if (st != EMBER_OK) {
            Py_DECREF(m);
            return raise_status(st, what);
        }
    }
    return (PyObject *)m;
}

/* One tensor input's buffer, held until execute returns. */
typedef struct {
    Py_buffer view;
    bool held;
    void *copy; /* aligned private copy, or NULL */
} held_input;

/* Reads a shape sequence into sizes[EMBER_MAX_DIM]; -1 with an exception. */
static int parse_shape(PyObject *shape, size_t i, int64_t *sizes, size_t *dim) {
    PyObject *seq = PySequence_Fast(shape, "tensor shape must be a sequence of ints");
    if (seq == NULL) return -1;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if (n > EMBER_MAX_DIM) {
        Py_DECREF(seq);
        raise_fmt(EMBER_ERR_SHAPE_MISMATCH, "setting inputs", "input %zu: rank %zd is above %d", i,
                  n, EMBER_MAX_DIM);
        return -1;
    }
    for (Py_ssize_t d = 0; d < n; d++) {
        long long v = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(seq, d));
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(seq);
            return -1;
        }
        sizes[d] = (int64_t)v;
    }
    *dim = (size_t)n;
    Py_DECREF(seq);
    return 0;
}

/* What a Python object passed as an input is, for messages. */
static const char *item_kind(PyObject *item) {
    if (item == Py_None) return "None";
    if (PyBool_Check(item)) return "bool";
    if (PyLong_Check(item)) return "int";
    if (PyFloat_Check(item)) return "float";
    if (PyTuple_Check(item)) return "tensor";
    return Py_TYPE(item)->tp_name;
}

/* Binds a tensor input from a (dtype, shape, buffer) tuple. */
static ember_status set_tensor_input(MethodObject *self, size_t i, PyObject *item, held_input *h,
                                     int *py_error) {
    const ember_value_meta *vm = &self->in_meta[i];
    int dtype;
    PyObject *shape, *data;
    *py_error = 1;
    if (!PyArg_ParseTuple(item, "iOO;a tensor input is a (dtype, shape, buffer) tuple", &dtype,
                          &shape, &data))
        return EMBER_ERR_INVALID_ARGUMENT;
    int64_t sizes[EMBER_MAX_DIM];
    size_t dim = 0;
    if (parse_shape(shape, i, sizes, &dim) < 0) return EMBER_ERR_INVALID_ARGUMENT;
    if (PyObject_GetBuffer(data, &h->view, PyBUF_C_CONTIGUOUS) < 0) return EMBER_ERR_INVALID_ARGUMENT;
    h->held = true;
    const void *ptr = h->view.buf;
    /* An unplanned input is used in place by execute: give it memory that
     * is aligned and that the program may write. */
    if (!vm->planned && h->view.len > 0 &&
        (h->view.readonly || ((uintptr_t)ptr % RT_ALIGN) != 0)) {
        h->copy = aligned_malloc((size_t)h->view.len);
        if (h->copy == NULL) {
            PyErr_NoMemory();
            return EMBER_ERR_OUT_OF_MEMORY;
        }
        memcpy(h->copy, ptr, (size_t)h->view.len);
        ptr = h->copy;
    }
    *py_error = 0;
    return ember_method_set_input_tensor(self->method, i, (ember_dtype)dtype, sizes, dim, ptr,
                                         (size_t)h->view.len);
}

/* Binds input i from item; -1 with an exception set. */
static int set_input(MethodObject *self, size_t i, PyObject *item, held_input *h) {
    const ember_value_meta *vm = &self->in_meta[i];
    ember_status st = EMBER_OK;
    bool matches;
    int py_error = 0;
    ember_clear_error();
    switch (vm->tag) {
    case EMBER_TAG_NONE:
        matches = item == Py_None;
        break;
    case EMBER_TAG_INT:
        matches = PyLong_Check(item);
        if (matches) {
            long long v = PyLong_AsLongLong(item);
            if (v == -1 && PyErr_Occurred()) return -1;
            st = ember_method_set_input_int(self->method, i, (int64_t)v);
        }
        break;
    case EMBER_TAG_DOUBLE:
        matches = PyFloat_Check(item) || PyLong_Check(item);
        if (matches) {
            double v = PyFloat_AsDouble(item);
            if (v == -1.0 && PyErr_Occurred()) return -1;
            st = ember_method_set_input_double(self->method, i, v);
        }
        break;
    case EMBER_TAG_BOOL:
        matches = PyBool_Check(item);
        if (matches) st = ember_method_set_input_bool(self->method, i, item == Py_True);
        break;
    case EMBER_TAG_TENSOR:
        matches = PyTuple_Check(item);
        if (matches) {
            st = set_tensor_input(self, i, item, h, &py_error);
            if (py_error) return -1;
        }
        break;
    default:
        raise_fmt(EMBER_ERR_NOT_SUPPORTED, "setting inputs",
                  "input %zu is a %s; only tensors and scalars can be set from Python", i,
                  tag_name(vm->tag));
        return -1;
    }
    if (!matches) {
        raise_fmt(EMBER_ERR_TYPE_MISMATCH, "setting inputs", "input %zu is a %s, got %s", i,
                  tag_name(vm->tag), item_kind(item));
        return -1;
    }
    if (st != EMBER_OK) {
        char what[48];
        snprintf(what, sizeof what, "setting input %zu", i);
        raise_status(st, what);
        return -1;
    }
    return 0;
}

/* A tensor as (dtype, shape, bytearray) in row-major order. */
static PyObject *tensor_to_py(const ember_tensor *t, size_t i) {
    size_t elsize = ember_dtype_size(t->dtype);
    if (elsize == 0)
        return raise_fmt(EMBER_ERR_NOT_SUPPORTED, "reading outputs", "output %zu has dtype code %u",
                         i, (unsigned)t->dtype);
    if (t->data == NULL && t->numel > 0)
        return raise_fmt(EMBER_ERR_INVALID_STATE, "reading outputs", "output %zu has no storage", i);
    PyObject *shape = tuple_i32(t->sizes, t->dim);
    if (shape == NULL) return NULL;
    PyObject *bytes = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)t->nbytes);
    if (bytes == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    char *dst = PyByteArray_AS_STRING(bytes);
    if (t->nbytes > 0) {
        if (ember_tensor_is_contiguous(t)) {
            memcpy(dst, t->data, t->nbytes);
        } else {
            /* Gather element k (row-major) through the strides. */
            const char *src = t->data;
            for (int64_t k = 0; k < t->numel; k++) {
                int64_t rest = k, off = 0;
                for (uint32_t d = t->dim; d-- > 0;) {
                    int64_t size = t->sizes[d] > 0 ? t->sizes[d] : 1;
                    off += (rest % size) * t->strides[d];
                    rest /= size;
                }
                memcpy(dst + (size_t)k * elsize, src + (size_t)off * elsize, elsize);
            }
        }
    }
    return Py_BuildValue("(iNN)", (int)t->dtype, shape, bytes);
}

static PyObject *value_to_py(const ember_value *v, size_t i) {
    switch (v->tag) {
    case EMBER_TAG_NONE: Py_RETURN_NONE;
    case EMBER_TAG_INT: return PyLong_FromLongLong((long long)v->u.i);
    case EMBER_TAG_DOUBLE: return PyFloat_FromDouble(v->u.d);
    case EMBER_TAG_BOOL: return PyBool_FromLong(v->u.b);
    case EMBER_TAG_TENSOR: return tensor_to_py(v->u.t, i);
    case EMBER_TAG_TENSOR_LIST:
    case EMBER_TAG_OPTIONAL_TENSOR_LIST: {
        PyObject *list = PyList_New((Py_ssize_t)v->u.tensor_list.len);
        if (list == NULL) return NULL;
        for (size_t k = 0; k < v->u.tensor_list.len; k++) {
            const ember_value *item = v->u.tensor_list.items[k];
            PyObject *x = item == NULL ? (Py_INCREF(Py_None), Py_None) : value_to_py(item, i);
            if (x == NULL) {
                Py_DECREF(list);
                return NULL;
            }
            PyList_SET_ITEM(list, (Py_ssize_t)k, x);
        }
        return list;
    }
    default:
        return raise_fmt(EMBER_ERR_NOT_SUPPORTED, "reading outputs",
                         "output %zu is a %s, which Python cannot read yet", i, tag_name(v->tag));
    }
}

/*
 * execute(inputs) -> list. Each input is None, an int, float or bool
 * (scalar inputs), or a (dtype code, shape, buffer) tuple (tensor inputs).
 * Tensor outputs come back as (dtype code, shape, bytearray).
 */
static PyObject *Method_execute(MethodObject *self, PyObject *arg) {
    char what[EMBER_MAX_NAME + 32];
    snprintf(what, sizeof what, "executing '%.*s'", EMBER_MAX_NAME, self->name);
    if (self->busy)
        return raise_fmt(EMBER_ERR_INVALID_STATE, what,
                         "the method is running on another thread; load one method per thread");
    PyObject *seq = PySequence_Fast(arg, "execute() takes a sequence of inputs");
    if (seq == NULL) return NULL;
    Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    if ((size_t)n != self->num_inputs) {
        Py_DECREF(seq);
        return raise_fmt(EMBER_ERR_INVALID_ARGUMENT, what, "the method takes %zu input%s, %zd given",
                         self->num_inputs, self->num_inputs == 1 ? "" : "s", n);
    }

    PyObject *result = NULL;
    held_input *held = PyMem_Calloc(n ? (size_t)n : 1, sizeof *held);
    if (held == NULL) {
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    self->busy = 1;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM(seq, i);
        if (set_input(self, (size_t)i, item, &held[i]) < 0) goto done;
    }

    ember_status st;
    Py_BEGIN_ALLOW_THREADS
    ember_clear_error();
    st = ember_method_execute(self->method);
    Py_END_ALLOW_THREADS
    if (st != EMBER_OK) {
        raise_status(st, what);
        goto done;
    }

    result = PyList_New((Py_ssize_t)self->num_outputs);
    if (result == NULL) goto done;
    for (size_t i = 0; i < self->num_outputs; i++) {
        const ember_value *v;
        if ((st = ember_method_output(self->method, i, &v)) != EMBER_OK) {
            raise_status(st, what);
            Py_CLEAR(result);
            goto done;
        }
        PyObject *x = value_to_py(v, i);
        if (x == NULL) {
            Py_CLEAR(result);
            goto done;
        }
        PyList_SET_ITEM(result, (Py_ssize_t)i, x);
    }
done:
    self->busy = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (held[i].held) PyBuffer_Release(&held[i].view);
        aligned_free(held[i].copy);
    }
    PyMem_Free(held);
    Py_DECREF(seq);
    return result;
}

static int need_tracer(MethodObject *self) {
    if (self->tracer != NULL) return 0;
    PyErr_SetString(PyExc_RuntimeError, "this method was loaded without an event tracer "
                                        "(load_method(..., trace_flags=...))");
    return -1;
}

static int not_busy(MethodObject *self) {
    if (!self->busy) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the method is executing on another thread");
    return -1;
}

static PyObject *Method_etdump(MethodObject *self, PyObject *unused) {
    (void)unused;
    if (need_tracer(self) < 0 || not_busy(self) < 0) return NULL;
    size_t need = 0;
    ember_clear_error();
    ember_status st = ember_etdump_write(self->tracer, NULL, 0, &need);
    if (st != EMBER_OK) return raise_status(st, "writing the ETDump");
    void *buf = aligned_malloc(need ? need : 1);
    if (buf == NULL) return PyErr_NoMemory();
    st = ember_etdump_write(self->tracer, buf, need, &need);
    PyObject *out = st == EMBER_OK ? PyBytes_FromStringAndSize(buf, (Py_ssize_t)need)
                                   : raise_status(st, "writing the ETDump");
    aligned_free(buf);
    return out;
}

static PyObject *Method_debug_buffer(MethodObject *self, PyObject *unused) {
    (void)unused;
    if (need_tracer(self) < 0 || not_busy(self) < 0) return NULL;
    const void *data;
    size_t size;
    ember_status st = ember_event_tracer_debug_data(self->tracer, &data, &size);
    if (st != EMBER_OK) return raise_status(st, "reading the debug buffer");
    return PyBytes_FromStringAndSize(size > 0 ? data : "", (Py_ssize_t)size);
}

static PyObject *Method_trace_stats(MethodObject *self, PyObject *unused) {
    (void)unused;
    if (need_tracer(self) < 0 || not_busy(self) < 0) return NULL;
    ember_event_tracer_stats s;
    ember_status st = ember_event_tracer_get_stats(self->tracer, &s);
    if (st != EMBER_OK) return raise_status(st, "reading the tracer's counts");
    ember_clear_error();
    st = ember_event_tracer_status(self->tracer);
    return Py_BuildValue("{s:n,s:n,s:n,s:n,s:n,s:n,s:s}", "events", (Py_ssize_t)s.events,
                         "dropped", (Py_ssize_t)s.dropped, "runs", (Py_ssize_t)s.runs,
                         "bytes_used", (Py_ssize_t)s.bytes_used, "bytes_total",
                         (Py_ssize_t)s.bytes_total, "debug_used", (Py_ssize_t)s.debug_used,
                         "status", st == EMBER_OK ? "" : ember_last_error());
}

static PyObject *Method_trace_reset(MethodObject *self, PyObject *unused) {
    (void)unused;
    if (need_tracer(self) < 0 || not_busy(self) < 0) return NULL;
    ember_event_tracer_reset(self->tracer);
    Py_RETURN_NONE;
}

static PyObject *Method_get_name(MethodObject *self, void *closure) {
    (void)closure;
    return decode_name(self->name);
}

static PyObject *Method_get_program(MethodObject *self, void *closure) {
    (void)closure;
    Py_INCREF(self->program);
    return (PyObject *)self->program;
}

/*
 * run_bundled(bundled, method_name or None, case, rtol, atol) -> dict: sets the
 * inputs of test case `case`, executes, compares the outputs. The dict has
 * "passed", "message" and the comparison's statistics; a failure other than
 * a mismatch (bad case, execute error) raises EmberError.
 */
static PyObject *Method_run_bundled(MethodObject *self, PyObject *args) {
    PyObject *bobj, *name_obj;
    Py_ssize_t case_index;
    double rtol, atol;
    if (!PyArg_ParseTuple(args, "O!Ondd:run_bundled", &BundledType, &bobj, &name_obj, &case_index,
                          &rtol, &atol))
        return NULL;
    const char *name = NULL;
    if (name_obj != Py_None && (name = PyUnicode_AsUTF8(name_obj)) == NULL) return NULL;
    if (case_index < 0) {
        PyErr_SetString(PyExc_ValueError, "case index must be >= 0");
        return NULL;
    }
    char what[EMBER_MAX_NAME + 64];
    snprintf(what, sizeof what, "bundled case %zd of '%.*s'", case_index, EMBER_MAX_NAME,
             self->name);
    if (self->busy)
        return raise_fmt(EMBER_ERR_INVALID_STATE, what,
                         "the method is running on another thread; load one method per thread");
    BundledObject *b = (BundledObject *)bobj;
    ember_bundled_compare cmp;
    memset(&cmp, 0, sizeof cmp);
    cmp.struct_size = sizeof cmp;
    ember_status st;
    /* The inputs may point into b's bytes: hold b until execute is done. */
    Py_INCREF(b);
    self->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    ember_clear_error();
    st = ember_bundled_program_load_test_inputs(self->method, &b->bp, name, (size_t)case_index);
    if (st == EMBER_OK) st = ember_method_execute(self->method);
    if (st == EMBER_OK)
        st = ember_bundled_program_verify_outputs(self->method, &b->bp, name, (size_t)case_index,
                                                  rtol, atol, &cmp);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    Py_DECREF(b);
    if (st != EMBER_OK && st != EMBER_ERR_OUTPUT_MISMATCH) return raise_status(st, what);
    return Py_BuildValue("{s:O,s:s,s:n,s:n,s:n,s:d,s:d,s:L,s:L}", "passed",
                         st == EMBER_OK ? Py_True : Py_False, "message",
                         st == EMBER_OK ? "" : ember_last_error(), "num_outputs",
                         (Py_ssize_t)cmp.num_outputs, "num_elements", (Py_ssize_t)cmp.num_elements,
                         "num_mismatches", (Py_ssize_t)cmp.num_mismatches, "max_abs_error",
                         cmp.max_abs_error, "max_rel_error", cmp.max_rel_error, "first_output",
                         (long long)cmp.first_output, "first_element", (long long)cmp.first_element);
}

static PyMethodDef Method_methods[] = {
    {"execute", (PyCFunction)Method_execute, METH_O,
     "execute(inputs) -> list: set every input, run the method, copy every output out."},
    {"etdump", (PyCFunction)Method_etdump, METH_NOARGS,
     "etdump() -> bytes: the events recorded so far, as an ETDump (.etdp)."},
    {"debug_buffer", (PyCFunction)Method_debug_buffer, METH_NOARGS,
     "debug_buffer() -> bytes: recorded tensor data the ETDump refers to by offset."},
    {"trace_stats", (PyCFunction)Method_trace_stats, METH_NOARGS,
     "trace_stats() -> dict: events, dropped, runs, bytes_used, bytes_total, debug_used, "
     "status (empty, or why events were dropped)."},
    {"trace_reset", (PyCFunction)Method_trace_reset, METH_NOARGS,
     "trace_reset(): forget every recorded event and tensor."},
    {"run_bundled", (PyCFunction)Method_run_bundled, METH_VARARGS,
     "run_bundled(bundled, method_name, case, rtol, atol) -> dict: run and verify a test case."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Method_getset[] = {
    {"name", (getter)Method_get_name, NULL, "method name", NULL},
    {"program", (getter)Method_get_program, NULL, "the Program this method came from", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject MethodType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._runtime.Method",
    .tp_basicsize = sizeof(MethodObject),
    .tp_dealloc = (destructor)Method_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A loaded method (use ember.runtime.Program.load_method).",
    .tp_methods = Method_methods,
    .tp_getset = Method_getset,
};

static PyObject *Program_get_size(ProgramObject *self, void *closure) {
    (void)closure;
    return PyLong_FromSize_t(self->size);
}

static PyMethodDef Program_methods[] = {
    {"method_names", (PyCFunction)Program_method_names, METH_NOARGS,
     "method_names() -> list of str, in file order."},
    {"method_meta", (PyCFunction)Program_method_meta, METH_VARARGS,
     "method_meta(name) -> dict: inputs, outputs, planned buffer sizes, operators."},
    {"load_method", (PyCFunction)Program_load_method, METH_VARARGS,
     "load_method(name, num_threads=0, trace_flags=0, trace_bytes=0, debug_bytes=0) -> Method "
     "(platform-heap memory; 0 threads: one per core; trace_flags: TRACE_* bits for an event "
     "tracer of trace_bytes, with a debug buffer of debug_bytes)."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Program_getset[] = {
    {"nbytes", (getter)Program_get_size, NULL, "size of the program file in bytes", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ProgramType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "ember._runtime.Program",
    .tp_basicsize = sizeof(ProgramObject),
    .tp_dealloc = (destructor)Program_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A verified program (use ember.runtime.Runtime.get().load_program).",
    .tp_methods = Program_methods,
    .tp_getset = Program_getset,
};

/* ------------------------------------------------------------------------ */
/* Module functions                                                          */
/* ------------------------------------------------------------------------ */

static PyObject *rt_kernel_names(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    size_t n = ember_portable_kernel_count();
    PyObject *list = PyList_New(0);
    if (list == NULL) return NULL;
    for (size_t i = 0; i < n; i++) {
        const ember_kernel *k = ember_portable_kernel_at(i);
        if (k == NULL || k->name == NULL) continue;
        if (append_steal(list, decode_name(k->name)) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

static PyObject *rt_has_kernel(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_ssize_t len;
    const char *name = PyUnicode_AsUTF8AndSize(arg, &len);
    if (name == NULL) return NULL;
    return PyBool_FromLong(ember_kernel_find(name, (size_t)len) != NULL);
}

static PyObject *rt_manual_seed(PyObject *mod, PyObject *arg) {
    (void)mod;
    unsigned long long seed = PyLong_AsUnsignedLongLongMask(arg);
    if (seed == (unsigned long long)-1 && PyErr_Occurred()) return NULL;
    ember_portable_kernels_seed((uint64_t)seed);
    Py_RETURN_NONE;
}

static PyObject *rt_has_backend(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_ssize_t len;
    const char *id = PyUnicode_AsUTF8AndSize(arg, &len);
    if (id == NULL) return NULL;
    return PyBool_FromLong(ember_backend_find(id, (size_t)len) != NULL);
}

static PyObject *rt_backend_available(PyObject *mod, PyObject *arg) {
    (void)mod;
    Py_ssize_t len;
    const char *id = PyUnicode_AsUTF8AndSize(arg, &len);
    if (id == NULL) return NULL;
    const ember_backend *b = ember_backend_find(id, (size_t)len);
    return PyBool_FromLong(b != NULL && b->is_available != NULL && b->is_available());
}

static PyObject *rt_vulkan_device_name(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    const char *name = ember_vulkan_device_name();
    if (name == NULL) Py_RETURN_NONE;
    return PyUnicode_FromString(name);
}

static PyObject *rt_vulkan_info(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    ember_vulkan_info info;
    if (ember_vulkan_info_get(&info) != EMBER_OK) Py_RETURN_NONE;
    return Py_BuildValue("{s:s,s:O,s:n,s:n,s:n,s:n,s:n,s:n}", "device", info.device,
                         "float16_storage", info.float16_storage ? Py_True : Py_False,
                         "weights_bytes", (Py_ssize_t)info.weights_bytes, "arena_bytes",
                         (Py_ssize_t)info.arena_bytes, "delegates", (Py_ssize_t)info.delegates,
                         "objects", (Py_ssize_t)info.objects, "pipelines",
                         (Py_ssize_t)info.pipelines, "instances_made",
                         (Py_ssize_t)info.instances_made);
}

static PyObject *rt_vulkan_device_release(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    ember_status st = ember_vulkan_device_release();
    if (st != EMBER_OK) return raise_status(st, "releasing the Vulkan device");
    Py_RETURN_NONE;
}

static PyObject *rt_status_codes(PyObject *mod, PyObject *unused) {
    (void)mod;
    (void)unused;
    PyObject *d = PyDict_New();
    if (d == NULL) return NULL;
    for (size_t i = 0; i < sizeof k_all_statuses / sizeof k_all_statuses[0]; i++) {
        PyObject *code = PyLong_FromLong((long)k_all_statuses[i]);
        int rc = code == NULL ? -1 : PyDict_SetItemString(d, status_symbol(k_all_statuses[i]), code);
        Py_XDECREF(code);
        if (rc < 0) {
            Py_DECREF(d);
            return NULL;
        }
    }
    return d;
}

static PyObject *rt_status_str(PyObject *mod, PyObject *arg) {
    (void)mod;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(ember_status_str((ember_status)code));
}

static PyObject *rt_dtype_name(PyObject *mod, PyObject *arg) {
    (void)mod;
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred()) return NULL;
    return PyUnicode_FromString(ember_dtype_name((int)code));
}

/*
 * load_library(path): dlopen a shared library built against libember.so and
 * call its registration entry point, ember_library_register(), which adds
 * its kernels and backends to the process-wide tables. The library stays
 * loaded for the life of the process (the tables point into it).
 */
static PyObject *rt_load_library(PyObject *mod, PyObject *arg) {
    (void)mod;
    PyObject *bytes = NULL;
    if (!PyUnicode_FSConverter(arg, &bytes)) return NULL;
    const char *path = PyBytes_AS_STRING(bytes);
    void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        const char *why = dlerror();
        raise_fmt(EMBER_ERR_NOT_FOUND, "loading library", "%s: %s", path,
                  why ? why : "dlopen failed");
        Py_DECREF(bytes);
        return NULL;
    }
    typedef ember_status (*register_fn)(void);
    register_fn fn;
    /* dlsym returns an object pointer; POSIX allows this conversion. */
    *(void **)&fn = dlsym(lib, "ember_library_register");
    if (fn == NULL) {
        raise_fmt(EMBER_ERR_NOT_FOUND, "loading library",
                  "%s has no ember_library_register() entry point", path);
        Py_DECREF(bytes);
        return NULL;
    }
    ember_clear_error();
    ember_status st = fn();
    if (st != EMBER_OK) {
        char what[512];
        snprintf(what, sizeof what, "registering library %s", path);
        Py_DECREF(bytes);
        return raise_status(st, what);
    }
    Py_DECREF(bytes);
    Py_RETURN_NONE;
}

static PyMethodDef rt_functions[] = {
    {"load_library", rt_load_library, METH_O,
     "load_library(path): load a shared library of kernels/backends and call its "
     "ember_library_register()."},
    {"load_program_bytes", rt_load_program_bytes, METH_VARARGS,
     "load_program_bytes(buffer, data_maps=None) -> Program: copy the bytes (16-byte aligned), "
     "load and verify; its methods load with the DataMaps given."},
    {"load_program_file", rt_load_program_file, METH_VARARGS,
     "load_program_file(path, data_maps=None) -> Program: read the whole file, load and verify; "
     "its methods load with the DataMaps given."},
    {"open_bundled_bytes", rt_open_bundled_bytes, METH_O,
     "open_bundled_bytes(data) -> Bundled: a verified copy of a bundled program."},
    {"is_bundled", rt_is_bundled, METH_O,
     "is_bundled(data) -> bool: whether data carries the bundled identifier."},
    {"load_data_map_bytes", rt_load_data_map_bytes, METH_O,
     "load_data_map_bytes(buffer) -> DataMap: copy the bytes of a .ptd file, open and verify."},
    {"load_data_map_file", rt_load_data_map_file, METH_O,
     "load_data_map_file(path) -> DataMap: read a whole .ptd file, open and verify."},
    {"kernel_names", rt_kernel_names, METH_NOARGS,
     "kernel_names() -> list of str: every kernel key of the portable library, in table order."},
    {"has_kernel", rt_has_kernel, METH_O,
     "has_kernel(name) -> bool: a kernel is registered for this key (\"aten::add.out\")."},
    {"manual_seed", rt_manual_seed, METH_O,
     "manual_seed(n): seed the portable kernels' random generator (rand, randn, dropout)."},
    {"has_backend", rt_has_backend, METH_O,
     "has_backend(id) -> bool: a backend is registered under this id."},
    {"backend_available", rt_backend_available, METH_O,
     "backend_available(id) -> bool: a backend is registered under this id and can run here."},
    {"vulkan_device_name", rt_vulkan_device_name, METH_NOARGS,
     "vulkan_device_name() -> str or None: the device VulkanBackend runs on."},
    {"vulkan_info", rt_vulkan_info, METH_NOARGS,
     "vulkan_info() -> dict or None: device, float16_storage, weights_bytes, arena_bytes, "
     "delegates, objects, pipelines, instances_made."},
    {"vulkan_device_release", rt_vulkan_device_release, METH_NOARGS,
     "vulkan_device_release(): destroy VulkanBackend's device context (none may be loaded)."},
    {"status_codes", rt_status_codes, METH_NOARGS,
     "status_codes() -> dict: symbolic name (\"NOT_FOUND\") -> ember_status code."},
    {"status_str", rt_status_str, METH_O, "status_str(code) -> str: libember's short text."},
    {"dtype_name", rt_dtype_name, METH_O, "dtype_name(code) -> str: \"float32\", ..."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef rt_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ember._runtime",
    .m_doc = "libember bindings (use ember.runtime).",
    .m_size = -1,
    .m_methods = rt_functions,
};

/* The kernel registry is process-wide: register the portable library once,
 * even if the module is initialized again. */
static bool g_kernels_registered;

PyMODINIT_FUNC PyInit__runtime(void) {
    if (!g_kernels_registered) {
        ember_status st = ember_portable_kernels_register();
        if (st == EMBER_OK) st = ember_optimized_kernels_register();
        if (st == EMBER_OK) st = ember_xnnpack_backend_register();
        if (st == EMBER_OK) st = ember_vulkan_backend_register();
        if (st != EMBER_OK) {
            PyErr_Format(PyExc_ImportError, "ember: cannot register the portable kernels: %s: %s",
                         ember_status_str(st), ember_last_error());
            return NULL;
        }
        g_kernels_registered = true;
    }
    if (PyType_Ready(&ProgramType) < 0 || PyType_Ready(&MethodType) < 0 ||
        PyType_Ready(&DataMapType) < 0 || PyType_Ready(&BundledType) < 0)
        return NULL;
    PyObject *mod = PyModule_Create(&rt_module);
    if (mod == NULL) return NULL;

    if (g_error_type == NULL) {
        g_error_type = PyErr_NewExceptionWithDoc(
            "ember.runtime.EmberError",
            "A libember call failed. Attributes: status (int, an ember_status code), "
            "status_name (\"NOT_FOUND\", ...), message (libember's last error message).",
            PyExc_RuntimeError, NULL);
        if (g_error_type == NULL) {
            Py_DECREF(mod);
            return NULL;
        }
    }
    Py_INCREF(g_error_type);
    if (PyModule_AddObject(mod, "EmberError", g_error_type) < 0) {
        Py_DECREF(g_error_type);
        Py_DECREF(mod);
        return NULL;
    }
    Py_INCREF(&ProgramType);
    if (PyModule_AddObject(mod, "Program", (PyObject *)&ProgramType) < 0) {
        Py_DECREF(&ProgramType);
        Py_DECREF(mod);
        return NULL;
    }
    Py_INCREF(&MethodType);
    if (PyModule_AddObject(mod, "Method", (PyObject *)&MethodType) < 0) {
        Py_DECREF(&MethodType);
        Py_DECREF(mod);
        return NULL;
    }
    Py_INCREF(&DataMapType);
    if (PyModule_AddObject(mod, "DataMap", (PyObject *)&DataMapType) < 0) {
        Py_DECREF(&DataMapType);
        Py_DECREF(mod);
        return NULL;
    }
    if (PyModule_AddObject(mod, "version",
                           Py_BuildValue("(iii)", EMBER_VERSION_MAJOR, EMBER_VERSION_MINOR,
                                         EMBER_VERSION_PATCH)) < 0 ||
        PyModule_AddIntConstant(mod, "MAX_DIM", EMBER_MAX_DIM) < 0 ||
        PyModule_AddIntConstant(mod, "TRACE_PROFILE", EMBER_TRACE_PROFILE) < 0 ||
        PyModule_AddIntConstant(mod, "TRACE_ALLOCATIONS", EMBER_TRACE_ALLOCATIONS) < 0 ||
        PyModule_AddIntConstant(mod, "TRACE_DEBUG_OUTPUTS", EMBER_TRACE_DEBUG_OUTPUTS) < 0 ||
        PyModule_AddIntConstant(mod, "TRACE_DEBUG_STATS", EMBER_TRACE_DEBUG_STATS) < 0 ||
        PyModule_AddIntConstant(mod, "TRACE_PROGRAM_OUTPUTS", EMBER_TRACE_PROGRAM_OUTPUTS) < 0 ||
        PyModule_AddIntConstant(mod, "EVENT_TRACER", EMBER_EVENT_TRACER) < 0) {
        Py_DECREF(mod);
        return NULL;
    }
    return mod;
}
