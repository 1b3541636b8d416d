/*
 * extension/llm/jinja/jinja.h — a Jinja template engine for the subset of
 * Jinja that chat templates use.
 *
 *     ember_jinja_template *t;
 *     ember_jinja_context *ctx;
 *     ember_jinja_parse(src, strlen(src), NULL, &t);
 *     ember_jinja_context_create(&ctx);
 *     ember_jinja_context_set_json(ctx, ember_json_root(doc));  // {"messages": [...], ...}
 *     char *text; size_t len;
 *     ember_jinja_render(t, ctx, NULL, &text, &len);
 *     ...
 *     free(text);
 *     ember_jinja_context_destroy(ctx);
 *     ember_jinja_template_destroy(t);
 *
 * It renders as jinja2's ImmutableSandboxedEnvironment does with
 * trim_blocks=True, lstrip_blocks=True and the loopcontrols extension (the
 * environment of Hugging Face transformers' apply_chat_template), with the
 * globals raise_exception(msg) and strftime_now(fmt), and a tojson filter
 * that writes as Python's json.dumps(x, ensure_ascii=False, indent=...,
 * separators=..., sort_keys=...).
 *
 * Language: text, {{ }}, {% %}, {# #}, whitespace control ("-" and "+" on
 * either side of a tag); if/elif/else, for (else, loop filters "if",
 * unpacking, the loop variable), set (names, tuples, namespace attributes,
 * block set), macro, call blocks (caller), break, continue, raw, print,
 * generation (transformers' assistant-mask tag, rendered in place); literals,
 * lists, tuples, dicts, attributes, subscripts, slices, arithmetic, "~",
 * comparisons, and/or/not, in/not in, "is" tests, conditional expressions,
 * filters, calls, Python string/dict/list methods; globals range,
 * namespace, dict, raise_exception, strftime_now. Values behave as
 * Python's do (ints are 64-bit: an overflow is an error). Undefined names
 * follow jinja2's default Undefined: they print as "", iterate as empty and
 * are false, while other uses (attributes, arithmetic, calls) are errors.
 * Templates that use anything else (extends, block, include, import, from,
 * with, filter blocks, autoescape, recursive loops, *args / **kwargs in
 * calls, filters and tests not listed in jinja_filters.c) fail to parse
 * with a message naming the construct and its line:column.
 *
 * Limits: parsing bounds nesting depth; rendering bounds evaluation steps,
 * recursion depth, output size and scratch memory, so hostile templates end
 * with an error, never a crash or a hang.
 *
 * Errors: messages read "NAME:LINE:COL: what" (NAME is "template" unless
 * the parse options name it); LINE and COL count from 1, COL in characters.
 *
 * This is an extension: it allocates with malloc. A parsed template is
 * immutable and a context is only read while rendering, so any number of
 * threads may render the same template with the same context at once.
 */
#ifndef EMBER_LLM_JINJA_JINJA_H
#define EMBER_LLM_JINJA_JINJA_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"
#include "text/json.h"

#ifdef __cplusplus
extern "C" {
#endif

/** A parsed template (opaque, immutable). */
typedef struct ember_jinja_template ember_jinja_template;

/** The variables a template is rendered with (opaque). */
typedef struct ember_jinja_context ember_jinja_context;

/** A value inside a context: none, bool, int, float, string, list or dict (opaque). */
typedef struct ember_jinja_value ember_jinja_value;

/** Default and largest nesting of blocks and expressions in a template. */
#define EMBER_JINJA_DEFAULT_MAX_NESTING 64
#define EMBER_JINJA_MAX_NESTING_LIMIT 256

/** Largest template source accepted. */
#define EMBER_JINJA_MAX_SOURCE ((size_t)64 << 20)

/** Options of ember_jinja_parse(). Zero-initialize, then set struct_size. */
typedef struct ember_jinja_parse_options {
    size_t struct_size;  /**< sizeof(ember_jinja_parse_options) */
    const char *name;    /**< name used in messages (e.g. "chat_template");
                              NULL means "template"; copied */
    size_t max_nesting;  /**< deepest nesting of blocks and of expressions;
                              0 means EMBER_JINJA_DEFAULT_MAX_NESTING; at most
                              EMBER_JINJA_MAX_NESTING_LIMIT */
} ember_jinja_parse_options;

/**
 * Parses a template.
 *
 * @param[in]  source  the template, len bytes of UTF-8 (need not be
 *                     NUL-terminated); not kept. Line endings may be "\n",
 *                     "\r\n" or "\r"; one final newline is dropped, as
 *                     jinja2 does.
 * @param[in]  len     its length in bytes
 * @param[in]  opt     options, or NULL for the defaults; not kept
 * @param[out] out     the template (release with
 *                     ember_jinja_template_destroy()); untouched on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, bad options,
 *         invalid UTF-8, or a syntax error: "NAME:LINE:COL: what");
 *         EMBER_ERR_NOT_SUPPORTED
 *         (a construct this engine does not implement, named in the message;
 *         nesting past the limit; a source over EMBER_JINJA_MAX_SOURCE);
 *         EMBER_ERR_OUT_OF_MEMORY.
 * Allocates. Thread-safe.
 */
ember_status ember_jinja_parse(const char *source, size_t len,
                               const ember_jinja_parse_options *opt,
                               ember_jinja_template **out);

/** Releases a template. NULL is a no-op. */
void ember_jinja_template_destroy(ember_jinja_template *tpl);

/* ------------------------------------------------------------------------ */
/* Contexts and values                                                       */
/* ------------------------------------------------------------------------ */

/**
 * Creates an empty context.
 *
 * @param[out] out  the context (release with ember_jinja_context_destroy())
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (out is NULL); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates.
 */
ember_status ember_jinja_context_create(ember_jinja_context **out);

/** Releases a context and every value made in it. NULL is a no-op. */
void ember_jinja_context_destroy(ember_jinja_context *ctx);

/**
 * Sets a variable (replacing one of the same name).
 *
 * @param[in] ctx    the context
 * @param[in] name   the variable's name, NUL-terminated; copied
 * @param[in] value  a value made in ctx; lists and dicts are shared, not
 *                   copied (as in Python), so items added later are seen
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument);
 *         EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_jinja_context_set(ember_jinja_context *ctx, const char *name,
                                     const ember_jinja_value *value);

/**
 * Sets one variable per member of a JSON object ({"messages": [...],
 * "add_generation_prompt": true, ...}), converted as
 * ember_jinja_value_from_json() does.
 *
 * @param[in] ctx     the context
 * @param[in] object  a JSON object; not kept (everything is copied)
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument);
 *         EMBER_ERR_TYPE_MISMATCH (not an object); EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_jinja_context_set_json(ember_jinja_context *ctx, const ember_json *object);

/*
 * Value constructors. Each makes a value owned by ctx, valid until the
 * context is destroyed. They return EMBER_OK, EMBER_ERR_INVALID_ARGUMENT
 * (a NULL argument) or EMBER_ERR_OUT_OF_MEMORY, and leave *out untouched
 * on failure. Not thread-safe for the same context.
 */

/** Python's None. */
ember_status ember_jinja_value_none(ember_jinja_context *ctx, ember_jinja_value **out);
/** A boolean. */
ember_status ember_jinja_value_bool(ember_jinja_context *ctx, bool b, ember_jinja_value **out);
/** An integer. */
ember_status ember_jinja_value_int(ember_jinja_context *ctx, int64_t i, ember_jinja_value **out);
/** A float. */
ember_status ember_jinja_value_float(ember_jinja_context *ctx, double d, ember_jinja_value **out);
/**
 * A string: len bytes of UTF-8 at s, copied (s may be NULL when len is 0).
 * Also EMBER_ERR_INVALID_ARGUMENT when the bytes are not valid UTF-8.
 */
ember_status ember_jinja_value_string(ember_jinja_context *ctx, const char *s, size_t len,
                                      ember_jinja_value **out);
/** An empty list; add items with ember_jinja_list_append(). */
ember_status ember_jinja_value_list(ember_jinja_context *ctx, ember_jinja_value **out);
/** An empty dict; add members with ember_jinja_dict_set(). */
ember_status ember_jinja_value_dict(ember_jinja_context *ctx, ember_jinja_value **out);

/**
 * A value converted from JSON: null -> None, true/false -> bool, a number
 * written as an integer that fits int64 -> int, other numbers -> float,
 * string -> string, array -> list, object -> dict (keys in file order; a
 * repeated key keeps its first position and its last value, as Python's
 * json does). Everything is copied.
 */
ember_status ember_jinja_value_from_json(ember_jinja_context *ctx, const ember_json *json,
                                         ember_jinja_value **out);

/**
 * Appends an item to a list value.
 *
 * @param[in] ctx   the context both values belong to
 * @param[in] list  a list made by ember_jinja_value_list()
 * @param[in] item  the item (a list or dict item is shared, not copied)
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument);
 *         EMBER_ERR_TYPE_MISMATCH (list is not a list); EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_jinja_list_append(ember_jinja_context *ctx, ember_jinja_value *list,
                                     const ember_jinja_value *item);

/**
 * Sets a member of a dict value (replacing one with the same key in place).
 *
 * @param[in] ctx      the context both values belong to
 * @param[in] dict     a dict made by ember_jinja_value_dict()
 * @param[in] key      the key, key_len bytes of UTF-8; copied
 * @param[in] key_len  its length
 * @param[in] value    the value (a list or dict value is shared, not copied)
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument or a key
 *         that is not UTF-8); EMBER_ERR_TYPE_MISMATCH (dict is not a dict);
 *         EMBER_ERR_OUT_OF_MEMORY.
 */
ember_status ember_jinja_dict_set(ember_jinja_context *ctx, ember_jinja_value *dict,
                                  const char *key, size_t key_len,
                                  const ember_jinja_value *value);

/* ------------------------------------------------------------------------ */
/* Rendering                                                                 */
/* ------------------------------------------------------------------------ */

/** Defaults of ember_jinja_render_options. */
#define EMBER_JINJA_DEFAULT_MAX_OUTPUT ((size_t)16 << 20)
#define EMBER_JINJA_DEFAULT_MAX_STEPS ((uint64_t)20000000)
#define EMBER_JINJA_DEFAULT_MAX_DEPTH 256
#define EMBER_JINJA_MAX_DEPTH_LIMIT 1024
#define EMBER_JINJA_DEFAULT_MAX_MEMORY ((size_t)256 << 20)

/** Options of ember_jinja_render(). Zero-initialize, then set struct_size;
 *  a zero limit means its default. */
typedef struct ember_jinja_render_options {
    size_t struct_size;  /**< sizeof(ember_jinja_render_options) */
    size_t max_output;   /**< largest output in bytes */
    uint64_t max_steps;  /**< most evaluation steps (statements, expression
                              nodes and loop iterations, each one step) */
    size_t max_depth;    /**< deepest recursion of the evaluator (nested
                              expressions, blocks and macro calls); at most
                              EMBER_JINJA_MAX_DEPTH_LIMIT. Each level takes
                              about 1 KB of C stack in optimized builds
                              (several under sanitizers): render on a
                              thread whose stack can hold max_depth KB */
    size_t max_memory;   /**< most bytes of scratch values during a render */
    bool fixed_time;     /**< strftime_now() reads `time` instead of the clock */
    int64_t time;        /**< seconds since the epoch, shown in local time */
} ember_jinja_render_options;

/**
 * Renders a template.
 *
 * @param[in]  tpl      the template
 * @param[in]  ctx      its variables, or NULL for none; only read
 * @param[in]  opt      options, or NULL for the defaults; not kept
 * @param[out] out      the text, NUL-terminated UTF-8, malloc'd: the caller
 *                      frees it; NULL on failure
 * @param[out] out_len  its length in bytes (not counting the NUL); may be NULL
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, bad options
 *         (struct_size too small, max_depth over its limit), or an error while rendering, such as an undefined variable used
 *         wrongly, a type error, or the template calling
 *         raise_exception(msg): "NAME:LINE:COL: what");
 *         EMBER_ERR_LOOP_LIMIT (the step or depth limit);
 *         EMBER_ERR_OUT_OF_MEMORY (the output or memory limit, or malloc).
 * Allocates. Thread-safe (see the top of this header).
 */
ember_status ember_jinja_render(const ember_jinja_template *tpl, const ember_jinja_context *ctx,
                                const ember_jinja_render_options *opt, char **out,
                                size_t *out_len);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_JINJA_JINJA_H */
