/*
 * ember._llm — the LLM extension of libember for Python: tokenizers
 * (extension/llm/tokenizer.h), generation and chat (extension/llm/runner.h).
 * python/ember/llm/runtime.py wraps it; see there for the Python API.
 *
 *   Tokenizer(path)                       any format ember_tokenizer_load() reads
 *     .encode(text, special) -> [int]     .decode(ids) -> str
 *     .token_id(text) -> int | None       .token_text(id) -> bytes
 *     .vocab_size, .bos_id, .eos_ids, .format, .chat_template
 *   Runner(model, tokenizer, threads)
 *     .generate(prompt, options, callback) -> str
 *     .encode(text) -> [int]              (with the program's BOS)
 *     .max_seq_len, .vocab_size, .stop_ids
 *   Chat(runner, system, template, thinking, note_callback)
 *     .send(message, options, callback) -> str
 *     .add(role, content)                 .reply(options, callback) -> str
 *
 * options: a dict of max_new_tokens, temperature, top_k, top_p,
 * repetition_penalty, seed, kv_keep. callback(token_id, text) gets each
 * token as it is chosen (token -1: the text still held at the end).
 * Failures raise ember.runtime.EmberError.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdlib.h>
#include <string.h>

#include "ember/ember.h"
#include "runner.h"
#include "tokenizer.h"

static PyObject *g_error_type; /* ember._runtime.EmberError */

/* Raises EmberError("<what>: <message>") with status, status_name, message
 * and debug_handle, as ember._runtime does. */
static PyObject *raise_status(ember_status st, const char *what) {
    const char *msg = ember_last_error();
    if (msg == NULL || msg[0] == '\0') msg = ember_status_str(st);
    PyObject *exc = PyObject_CallFunction(g_error_type, "s", what);
    if (exc == NULL) return NULL;
    PyObject *text = PyUnicode_FromFormat("%s: %s", what, msg);
    PyObject *args = text ? PyTuple_Pack(1, text) : NULL;
    int bad = args == NULL || PyObject_SetAttrString(exc, "args", args) < 0;
    PyObject *code = PyLong_FromLong((long)st), *m = PyUnicode_FromString(msg);
    PyObject *name = PyUnicode_FromString(ember_status_str(st)), *handle = PyLong_FromLong(-1);
    bad = bad || code == NULL || m == NULL || name == NULL || handle == NULL ||
          PyObject_SetAttrString(exc, "status", code) < 0 ||
          PyObject_SetAttrString(exc, "message", m) < 0 ||
          PyObject_SetAttrString(exc, "status_name", name) < 0 ||
          PyObject_SetAttrString(exc, "debug_handle", handle) < 0;
    Py_XDECREF(text);
    Py_XDECREF(args);
    Py_XDECREF(code);
    Py_XDECREF(m);
    Py_XDECREF(name);
    Py_XDECREF(handle);
    if (!bad) PyErr_SetObject(g_error_type, exc);
    Py_DECREF(exc);
    return NULL;
}

static PyObject *id_list(const int32_t *ids, size_t n) {
    PyObject *list = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; list != NULL && i < n; i++) {
        PyObject *v = PyLong_FromLong(ids[i]);
        if (v == NULL) {
            Py_CLEAR(list);
            break;
        }
        PyList_SET_ITEM(list, (Py_ssize_t)i, v);
    }
    return list;
}

/* A sequence of ints into a malloc'd array. */
static int32_t *ids_from(PyObject *seq, size_t *n) {
    PyObject *fast = PySequence_Fast(seq, "ids must be a sequence of ints");
    if (fast == NULL) return NULL;
    Py_ssize_t len = PySequence_Fast_GET_SIZE(fast);
    int32_t *ids = malloc((size_t)(len > 0 ? len : 1) * sizeof *ids);
    if (ids == NULL) {
        Py_DECREF(fast);
        PyErr_NoMemory();
        return NULL;
    }
    for (Py_ssize_t i = 0; i < len; i++) {
        long v = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, i));
        if (v == -1 && PyErr_Occurred()) {
            free(ids);
            Py_DECREF(fast);
            return NULL;
        }
        if (v < INT32_MIN || v > INT32_MAX) v = -1; /* out of range: the library says so */
        ids[i] = (int32_t)v;
    }
    Py_DECREF(fast);
    *n = (size_t)len;
    return ids;
}

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD ember_tokenizer *tok;
} TokenizerObject;

static void tok_dealloc(TokenizerObject *self) {
    ember_tokenizer_destroy(self->tok);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int tok_init(TokenizerObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"path", "pattern", "special_tokens", NULL};
    PyObject *path;
    const char *pattern = NULL;
    PyObject *specials = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|zO", names, PyUnicode_FSConverter, &path,
                                     &pattern, &specials))
        return -1;
    ember_tokenizer_options o = ember_tokenizer_options_default();
    o.pattern = pattern;
    const char **sp = NULL;
    PyObject *fast = NULL;
    if (specials != Py_None) {
        fast = PySequence_Fast(specials, "special_tokens must be a sequence of str");
        if (fast == NULL) {
            Py_DECREF(path);
            return -1;
        }
        Py_ssize_t n = PySequence_Fast_GET_SIZE(fast);
        sp = calloc((size_t)(n > 0 ? n : 1), sizeof *sp);
        for (Py_ssize_t i = 0; sp != NULL && i < n; i++) {
            sp[i] = PyUnicode_AsUTF8(PySequence_Fast_GET_ITEM(fast, i));
            if (sp[i] == NULL) {
                free(sp);
                Py_DECREF(fast);
                Py_DECREF(path);
                return -1;
            }
        }
        o.special_tokens = sp;
        o.num_special_tokens = (size_t)n;
    }
    ember_tokenizer_destroy(self->tok);
    self->tok = NULL;
    ember_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ember_tokenizer_load(PyBytes_AS_STRING(path), &o, &self->tok);
    Py_END_ALLOW_THREADS
    free(sp);
    Py_XDECREF(fast);
    Py_DECREF(path);
    if (st != EMBER_OK) {
        raise_status(st, "loading the tokenizer");
        return -1;
    }
    return 0;
}

static bool tok_ready(TokenizerObject *self) {
    if (self->tok != NULL) return true;
    PyErr_SetString(PyExc_RuntimeError, "the tokenizer is not loaded");
    return false;
}

static PyObject *tok_encode(TokenizerObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"text", "special", NULL};
    const char *text;
    Py_ssize_t len;
    int special = 1;
    if (!tok_ready(self) ||
        !PyArg_ParseTupleAndKeywords(args, kw, "s#|p", names, &text, &len, &special))
        return NULL;
    int32_t *ids = NULL;
    size_t n = 0;
    ember_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ember_tokenizer_encode(self->tok, text, (size_t)len, special ? EMBER_ENCODE_SPECIAL : 0,
                                &ids, &n);
    Py_END_ALLOW_THREADS
    if (st != EMBER_OK) return raise_status(st, "encoding");
    PyObject *out = id_list(ids, n);
    free(ids);
    return out;
}

static PyObject *tok_decode(TokenizerObject *self, PyObject *seq) {
    if (!tok_ready(self)) return NULL;
    size_t n;
    int32_t *ids = ids_from(seq, &n);
    if (ids == NULL) return NULL;
    char *text = NULL;
    size_t len = 0;
    ember_status st = ember_tokenizer_decode(self->tok, ids, n, &text, &len);
    free(ids);
    if (st != EMBER_OK) return raise_status(st, "decoding");
    PyObject *out = PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
    free(text);
    return out;
}

static PyObject *tok_token_id(TokenizerObject *self, PyObject *arg) {
    Py_ssize_t len;
    const char *s = tok_ready(self) ? PyUnicode_AsUTF8AndSize(arg, &len) : NULL;
    if (s == NULL) return NULL;
    int32_t id;
    if (ember_tokenizer_token_id(self->tok, s, (size_t)len, &id) != EMBER_OK) {
        ember_clear_error();
        Py_RETURN_NONE;
    }
    return PyLong_FromLong(id);
}

static PyObject *tok_token_text(TokenizerObject *self, PyObject *arg) {
    long id = tok_ready(self) ? PyLong_AsLong(arg) : -1;
    if (PyErr_Occurred()) return NULL;
    const char *s;
    size_t len;
    ember_status st = ember_tokenizer_token_text(self->tok, (int32_t)id, &s, &len);
    if (st != EMBER_OK) return raise_status(st, "token_text");
    return PyBytes_FromStringAndSize(s, (Py_ssize_t)len);
}

static PyObject *tok_get_vocab_size(TokenizerObject *self, void *unused) {
    (void)unused;
    return tok_ready(self) ? PyLong_FromSize_t(ember_tokenizer_vocab_size(self->tok)) : NULL;
}

static PyObject *tok_get_bos(TokenizerObject *self, void *unused) {
    (void)unused;
    return tok_ready(self) ? PyLong_FromLong(ember_tokenizer_bos_id(self->tok)) : NULL;
}

static PyObject *tok_get_eos(TokenizerObject *self, void *unused) {
    (void)unused;
    if (!tok_ready(self)) return NULL;
    int32_t ids[64];
    size_t n = ember_tokenizer_eos_ids(self->tok, ids, 64);
    return id_list(ids, n < 64 ? n : 64);
}

static PyObject *tok_get_format(TokenizerObject *self, void *unused) {
    (void)unused;
    if (!tok_ready(self)) return NULL;
    switch (ember_tokenizer_get_format(self->tok)) {
    case EMBER_TOKENIZER_TIKTOKEN: return PyUnicode_FromString("tiktoken");
    case EMBER_TOKENIZER_HUGGINGFACE: return PyUnicode_FromString("huggingface");
    case EMBER_TOKENIZER_SENTENCEPIECE: return PyUnicode_FromString("sentencepiece");
    default: return PyUnicode_FromString("gpt2");
    }
}

static PyObject *tok_get_template(TokenizerObject *self, void *unused) {
    (void)unused;
    if (!tok_ready(self)) return NULL;
    const char *t = ember_tokenizer_chat_template(self->tok);
    if (t == NULL) Py_RETURN_NONE;
    return PyUnicode_FromString(t);
}

static PyMethodDef tok_methods[] = {
    {"encode", (PyCFunction)(void (*)(void))tok_encode, METH_VARARGS | METH_KEYWORDS,
     "encode(text, special=True) -> list of ids (no BOS/EOS added)"},
    {"decode", (PyCFunction)tok_decode, METH_O, "decode(ids) -> str"},
    {"token_id", (PyCFunction)tok_token_id, METH_O, "token_id(text) -> int or None"},
    {"token_text", (PyCFunction)tok_token_text, METH_O, "token_text(id) -> bytes (the file's spelling)"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef tok_getset[] = {
    {"vocab_size", (getter)tok_get_vocab_size, NULL, "number of ids", NULL},
    {"bos_id", (getter)tok_get_bos, NULL, "the BOS id, or -1", NULL},
    {"eos_ids", (getter)tok_get_eos, NULL, "ids that end generation", NULL},
    {"format", (getter)tok_get_format, NULL, "tiktoken, huggingface, sentencepiece or gpt2", NULL},
    {"chat_template", (getter)tok_get_template, NULL, "the chat template, or None", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject TokenizerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember._llm.Tokenizer",
    .tp_basicsize = sizeof(TokenizerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Tokenizer(path, pattern=None, special_tokens=None)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)tok_init,
    .tp_dealloc = (destructor)tok_dealloc,
    .tp_methods = tok_methods,
    .tp_getset = tok_getset,
};

/* ------------------------------------------------------------------------ */
/* Runner and Chat                                                           */
/* ------------------------------------------------------------------------ */

typedef struct {
    PyObject_HEAD ember_llm_runner *r;
    int chats; /* Chat objects using it */
} RunnerObject;

static void run_dealloc(RunnerObject *self) {
    ember_llm_runner_destroy(self->r);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int run_init(RunnerObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"model", "tokenizer", "threads", NULL};
    PyObject *model, *tok = NULL;
    Py_ssize_t threads = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O&|O&n", names, PyUnicode_FSConverter, &model,
                                     PyUnicode_FSConverter, &tok, &threads))
        return -1;
    ember_llm_runner_destroy(self->r);
    self->r = NULL;
    ember_status st;
    Py_BEGIN_ALLOW_THREADS
    st = ember_llm_runner_load_with(PyBytes_AS_STRING(model), tok ? PyBytes_AS_STRING(tok) : NULL,
                                    threads > 0 ? (size_t)threads : 0, &self->r);
    Py_END_ALLOW_THREADS
    Py_DECREF(model);
    Py_XDECREF(tok);
    if (st != EMBER_OK) {
        raise_status(st, "loading the model");
        return -1;
    }
    return 0;
}

/* Generation options from a dict (None: the defaults). */
static int options_from(PyObject *d, ember_llm_options *o) {
    *o = ember_llm_options_default();
    if (d == NULL || d == Py_None) return 0;
    if (!PyDict_Check(d)) {
        PyErr_SetString(PyExc_TypeError, "options must be a dict");
        return -1;
    }
    PyObject *k, *v;
    Py_ssize_t pos = 0;
    while (PyDict_Next(d, &pos, &k, &v)) {
        const char *name = PyUnicode_AsUTF8(k);
        if (name == NULL) return -1;
        if (strcmp(name, "max_new_tokens") == 0) o->max_new_tokens = PyLong_AsSize_t(v);
        else if (strcmp(name, "kv_keep") == 0) o->kv_keep = PyLong_AsSize_t(v);
        else if (strcmp(name, "temperature") == 0) o->sampler.temperature = (float)PyFloat_AsDouble(v);
        else if (strcmp(name, "top_k") == 0) o->sampler.top_k = (int32_t)PyLong_AsLong(v);
        else if (strcmp(name, "top_p") == 0) o->sampler.top_p = (float)PyFloat_AsDouble(v);
        else if (strcmp(name, "repetition_penalty") == 0)
            o->sampler.repetition_penalty = (float)PyFloat_AsDouble(v);
        else if (strcmp(name, "seed") == 0) o->sampler.seed = PyLong_AsUnsignedLongLong(v);
        else {
            PyErr_Format(PyExc_TypeError, "unknown generation option '%s'", name);
            return -1;
        }
        if (PyErr_Occurred()) return -1;
    }
    return 0;
}

/* Streaming to a Python callback; the text is collected too. */
typedef struct stream {
    PyObject *callback; /* may be NULL */
    PyThreadState *saved;
    char *text;
    size_t len, cap;
    int failed;         /* a Python exception is pending or memory ran out */
} stream;

static void on_token(void *user, int32_t token, const char *piece, size_t len) {
    stream *s = user;
    if (s->failed) return;
    if (len > 0) {
        if (s->len + len + 1 > s->cap) {
            size_t cap = (s->len + len + 1) * 2;
            char *t = realloc(s->text, cap);
            if (t == NULL) {
                s->failed = 1;
                return;
            }
            s->text = t;
            s->cap = cap;
        }
        memcpy(s->text + s->len, piece, len);
        s->len += len;
    }
    if (s->callback == NULL) return;
    PyEval_RestoreThread(s->saved);
    PyObject *r = PyObject_CallFunction(s->callback, "is#", (int)token, piece, (Py_ssize_t)len);
    if (r == NULL) s->failed = 1;
    Py_XDECREF(r);
    s->saved = PyEval_SaveThread();
}

static PyObject *finish_stream(stream *s, ember_status st, const char *what) {
    if (s->failed && PyErr_Occurred()) {
        free(s->text);
        return NULL;
    }
    if (st == EMBER_OK && s->failed) st = EMBER_ERR_OUT_OF_MEMORY;
    if (st != EMBER_OK) {
        free(s->text);
        return raise_status(st, what);
    }
    PyObject *out = PyUnicode_DecodeUTF8(s->text ? s->text : "", (Py_ssize_t)s->len, "replace");
    free(s->text);
    return out;
}

static PyObject *run_generate(RunnerObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"prompt", "options", "callback", NULL};
    const char *prompt;
    Py_ssize_t len;
    PyObject *opts = Py_None, *cb = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s#|OO", names, &prompt, &len, &opts, &cb))
        return NULL;
    ember_llm_options o;
    if (options_from(opts, &o) < 0) return NULL;
    stream s = {cb == Py_None ? NULL : cb, NULL, NULL, 0, 0, 0};
    o.on_token = on_token;
    o.user = &s;
    s.saved = PyEval_SaveThread();
    ember_status st = ember_llm_runner_generate(self->r, prompt, (size_t)len, &o, NULL);
    PyEval_RestoreThread(s.saved);
    return finish_stream(&s, st, "generating");
}

static PyObject *run_encode(RunnerObject *self, PyObject *arg) {
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(arg, &len);
    if (s == NULL) return NULL;
    int32_t *ids;
    size_t n;
    ember_status st = ember_llm_runner_encode(self->r, s, (size_t)len, &ids, &n);
    if (st != EMBER_OK) return raise_status(st, "encoding");
    PyObject *out = id_list(ids, n);
    free(ids);
    return out;
}

static PyObject *run_get_max_seq_len(RunnerObject *self, void *unused) {
    (void)unused;
    return PyLong_FromSize_t(ember_llm_runner_max_seq_len(self->r));
}

static PyObject *run_get_vocab(RunnerObject *self, void *unused) {
    (void)unused;
    return PyLong_FromSize_t(ember_llm_runner_vocab_size(self->r));
}

static PyObject *run_get_stop(RunnerObject *self, void *unused) {
    (void)unused;
    int32_t ids[64];
    size_t n = ember_llm_runner_stop_ids(self->r, ids, 64);
    return id_list(ids, n < 64 ? n : 64);
}

static PyMethodDef run_methods[] = {
    {"generate", (PyCFunction)(void (*)(void))run_generate, METH_VARARGS | METH_KEYWORDS,
     "generate(prompt, options=None, callback=None) -> str"},
    {"encode", (PyCFunction)run_encode, METH_O, "encode(text) -> ids, with the program's BOS"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef run_getset[] = {
    {"max_seq_len", (getter)run_get_max_seq_len, NULL, "most tokens the program takes", NULL},
    {"vocab_size", (getter)run_get_vocab, NULL, "logits per step", NULL},
    {"stop_ids", (getter)run_get_stop, NULL, "ids that end generation", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject RunnerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember._llm.Runner",
    .tp_basicsize = sizeof(RunnerObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Runner(model, tokenizer=None, threads=0)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)run_init,
    .tp_dealloc = (destructor)run_dealloc,
    .tp_methods = run_methods,
    .tp_getset = run_getset,
};

typedef struct {
    PyObject_HEAD RunnerObject *runner; /* kept alive by the chat */
    ember_llm_chat *chat;
    PyObject *note;  /* note_callback or NULL */
    stream *current; /* the send in progress (the GIL released) */
} ChatObject;

static void chat_dealloc(ChatObject *self) {
    ember_llm_chat_destroy(self->chat);
    Py_XDECREF(self->note);
    Py_XDECREF(self->runner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Notes come during send, with the GIL released as for tokens. */
static void on_note(void *user, const char *note) {
    ChatObject *self = user;
    stream *s = self->current;
    if (self->note == NULL || s == NULL || s->failed) return;
    PyEval_RestoreThread(s->saved);
    PyObject *r = PyObject_CallFunction(self->note, "s", note);
    if (r == NULL) s->failed = 1;
    Py_XDECREF(r);
    s->saved = PyEval_SaveThread();
}

static int chat_init(ChatObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"runner", "system", "template", "thinking", "note_callback", NULL};
    PyObject *runner, *thinking = Py_None, *note = Py_None;
    const char *system = NULL, *tpl = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|zzOO", names, &RunnerType, &runner, &system,
                                     &tpl, &thinking, &note))
        return -1;
    ember_llm_chat_options o = ember_llm_chat_options_default();
    o.system = system;
    o.chat_template = tpl;
    if (thinking != Py_None)
        o.thinking = PyObject_IsTrue(thinking) ? EMBER_CHAT_THINKING_ON : EMBER_CHAT_THINKING_OFF;
    o.on_note = on_note;
    o.note_user = self;
    Py_XSETREF(self->note, note == Py_None ? NULL : Py_NewRef(note));
    ember_llm_chat_destroy(self->chat);
    self->chat = NULL;
    Py_XSETREF(self->runner, (RunnerObject *)Py_NewRef(runner));
    ember_status st = ember_llm_chat_create(self->runner->r, &o, &self->chat);
    if (st != EMBER_OK) {
        raise_status(st, "starting the chat");
        return -1;
    }
    return 0;
}

/* A reply (after adding message, when not NULL), streamed to cb. */
static PyObject *chat_run(ChatObject *self, const char *message, PyObject *opts, PyObject *cb) {
    if (self->chat == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the chat is not started");
        return NULL;
    }
    ember_llm_options o;
    if (options_from(opts, &o) < 0) return NULL;
    stream s = {cb == Py_None ? NULL : cb, NULL, NULL, 0, 0, 0};
    o.on_token = on_token;
    o.user = &s;
    self->current = &s;
    s.saved = PyEval_SaveThread();
    ember_status st = message != NULL ? ember_llm_chat_send(self->chat, message, &o, NULL, NULL)
                                      : ember_llm_chat_reply(self->chat, &o, NULL, NULL);
    PyEval_RestoreThread(s.saved);
    self->current = NULL;
    return finish_stream(&s, st, "chat");
}

static PyObject *chat_send(ChatObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"message", "options", "callback", NULL};
    const char *message;
    PyObject *opts = Py_None, *cb = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "s|OO", names, &message, &opts, &cb)) return NULL;
    return chat_run(self, message, opts, cb);
}

static PyObject *chat_reply(ChatObject *self, PyObject *args, PyObject *kw) {
    static char *names[] = {"options", "callback", NULL};
    PyObject *opts = Py_None, *cb = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OO", names, &opts, &cb)) return NULL;
    return chat_run(self, NULL, opts, cb);
}

static PyObject *chat_add(ChatObject *self, PyObject *args) {
    const char *role, *content;
    if (!PyArg_ParseTuple(args, "ss", &role, &content)) return NULL;
    if (self->chat == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "the chat is not started");
        return NULL;
    }
    ember_status st = ember_llm_chat_add(self->chat, role, content);
    if (st != EMBER_OK) return raise_status(st, "chat");
    Py_RETURN_NONE;
}

static PyObject *chat_get_messages(ChatObject *self, void *unused) {
    (void)unused;
    return PyLong_FromSize_t(ember_llm_chat_messages(self->chat));
}

static PyMethodDef chat_methods[] = {
    {"send", (PyCFunction)(void (*)(void))chat_send, METH_VARARGS | METH_KEYWORDS,
     "send(message, options=None, callback=None) -> the reply"},
    {"add", (PyCFunction)chat_add, METH_VARARGS, "add(role, content): history, no reply"},
    {"reply", (PyCFunction)(void (*)(void))chat_reply, METH_VARARGS | METH_KEYWORDS,
     "reply(options=None, callback=None) -> the reply to the conversation so far"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef chat_getset[] = {
    {"messages", (getter)chat_get_messages, NULL, "messages in the conversation", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyTypeObject ChatType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "ember._llm.Chat",
    .tp_basicsize = sizeof(ChatObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Chat(runner, system=None, template=None, thinking=None, note_callback=None)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)chat_init,
    .tp_dealloc = (destructor)chat_dealloc,
    .tp_methods = chat_methods,
    .tp_getset = chat_getset,
};

static struct PyModuleDef llm_module = {
    PyModuleDef_HEAD_INIT, "_llm", "ember's LLM extension: tokenizers, generation, chat", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__llm(void);

PyMODINIT_FUNC PyInit__llm(void) {
    PyObject *rt = PyImport_ImportModule("ember._runtime");
    if (rt == NULL) return NULL;
    g_error_type = PyObject_GetAttrString(rt, "EmberError");
    Py_DECREF(rt);
    if (g_error_type == NULL) return NULL;
    if (PyType_Ready(&TokenizerType) < 0 || PyType_Ready(&RunnerType) < 0 ||
        PyType_Ready(&ChatType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&llm_module);
    if (m == NULL) return NULL;
    if (PyModule_AddObjectRef(m, "Tokenizer", (PyObject *)&TokenizerType) < 0 ||
        PyModule_AddObjectRef(m, "Runner", (PyObject *)&RunnerType) < 0 ||
        PyModule_AddObjectRef(m, "Chat", (PyObject *)&ChatType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
