/*
 * extension/llm/text/json.h — a strict JSON reader (RFC 8259) producing an
 * immutable document tree.
 *
 *     ember_json_doc *doc;
 *     if (ember_json_parse(text, len, &doc) != EMBER_OK) ... ember_last_error() ...
 *     const ember_json *vocab = ember_json_find(ember_json_find(ember_json_root(doc),
 *                                                               "model"), "vocab");
 *     for (size_t i = 0; i < ember_json_object_size(vocab); i++) {
 *         const char *key; size_t key_len;
 *         const ember_json *v = ember_json_object_at(vocab, i, &key, &key_len);
 *         int64_t id; bool exact;
 *         ember_json_int64(v, &id, &exact);
 *     }
 *     ember_json_doc_destroy(doc);
 *
 * What is accepted: exactly RFC 8259 — one value of any kind at the top,
 * whitespace of space, tab, LF and CR only, no comments, no trailing commas,
 * no leading zeros, no NaN or Infinity, strings of valid UTF-8 without raw
 * control characters. A leading UTF-8 byte order mark is skipped (the RFC
 * allows a reader to ignore it). Escapes are decoded to UTF-8; \uXXXX
 * surrogate pairs become one character and a lone surrogate is an error.
 * Strings may hold NUL bytes (from \u0000), so their length is given.
 *
 * Objects keep their members in file order, duplicates included;
 * ember_json_get() finds the last member of that name (as Python's json
 * does). Objects of more than a few members carry a hash index built at
 * parse time, so a lookup costs O(1) on average.
 *
 * Numbers keep their text, their value as a double (as strtod rounds it;
 * out-of-range magnitudes become infinity or zero, as Python's json does)
 * and, when written as an integer that fits, their exact int64 value.
 *
 * Errors name the position: "json:LINE:COL: what" (or the name given in
 * the options instead of "json"); LINE and COL count from 1, COL in
 * characters.
 *
 * Memory: one document owns everything its values point to, held in a few
 * large blocks (no allocation per value). Values, keys and strings stay
 * valid until ember_json_doc_destroy(). A document is immutable: any number
 * of threads may read it at once.
 */
#ifndef EMBER_LLM_TEXT_JSON_H
#define EMBER_LLM_TEXT_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "ember/ember.h"

#ifdef __cplusplus
extern "C" {
#endif

/** Default and largest nesting depth of arrays and objects. */
#define EMBER_JSON_DEFAULT_MAX_DEPTH 512
#define EMBER_JSON_MAX_DEPTH_LIMIT 100000

/** Largest document accepted (sizes inside are 32-bit). */
#define EMBER_JSON_MAX_BYTES ((size_t)UINT32_MAX - 1)

/** A parsed document (opaque). */
typedef struct ember_json_doc ember_json_doc;

/** One value inside a document (opaque; always used through const pointers). */
typedef struct ember_json ember_json;

/** Kinds of values. */
typedef enum ember_json_type {
    EMBER_JSON_NULL = 0,
    EMBER_JSON_BOOL = 1,
    EMBER_JSON_NUMBER = 2,
    EMBER_JSON_STRING = 3,
    EMBER_JSON_ARRAY = 4,
    EMBER_JSON_OBJECT = 5
} ember_json_type;

/** Options of ember_json_parse_ex(). Zero-initialize, then set struct_size. */
typedef struct ember_json_options {
    size_t struct_size;  /**< sizeof(ember_json_options) */
    const char *name;    /**< name used in error messages (e.g. "tokenizer.json");
                              NULL means "json"; not kept */
    size_t max_depth;    /**< deepest nesting of arrays/objects accepted;
                              0 means EMBER_JSON_DEFAULT_MAX_DEPTH; at most
                              EMBER_JSON_MAX_DEPTH_LIMIT */
} ember_json_options;

/**
 * Parses a JSON document with the default options.
 *
 * @param[in]  text  the document, len bytes of UTF-8; need not be
 *                   NUL-terminated; may be NULL when len is 0 (which is an
 *                   error: an empty document); not kept
 * @param[in]  len   its length in bytes
 * @param[out] out   the document (release with ember_json_doc_destroy());
 *                   untouched on failure
 * @return EMBER_OK; EMBER_ERR_INVALID_ARGUMENT (a NULL argument, or text that
 *         is not JSON: the message says "json:LINE:COL: what");
 *         EMBER_ERR_NOT_SUPPORTED (nesting deeper than the limit, or a
 *         document over EMBER_JSON_MAX_BYTES); EMBER_ERR_OUT_OF_MEMORY.
 * Allocates. Thread-safe.
 */
ember_status ember_json_parse(const char *text, size_t len, ember_json_doc **out);

/**
 * Parses a JSON document (see ember_json_parse()) with options.
 *
 * @param[in]  text  as ember_json_parse()
 * @param[in]  len   its length in bytes
 * @param[in]  opt   options, or NULL for the defaults; not kept
 * @param[out] out   the document; untouched on failure
 * @return as ember_json_parse(); also EMBER_ERR_INVALID_ARGUMENT when
 *         opt->struct_size is too small or max_depth is over the limit.
 * Allocates. Thread-safe.
 */
ember_status ember_json_parse_ex(const char *text, size_t len, const ember_json_options *opt,
                                 ember_json_doc **out);

/** Releases a document and every value in it. NULL is a no-op. */
void ember_json_doc_destroy(ember_json_doc *doc);

/** The top-level value of a document (never NULL for a parsed one); NULL if doc is NULL. */
const ember_json *ember_json_root(const ember_json_doc *doc);

/**
 * The kind of a value. A NULL value reads as EMBER_JSON_NULL, so a missing
 * member and a null member look alike here; compare the pointer with NULL
 * to tell them apart.
 */
ember_json_type ember_json_type_of(const ember_json *v);

/* ------------------------------------------------------------------------ */
/* Objects and arrays                                                        */
/*                                                                           */
/* These accept any value (or NULL) and answer 0 / NULL when it is not the   */
/* right kind, so lookups can be chained. They never allocate and never set  */
/* the last error.                                                           */
/* ------------------------------------------------------------------------ */

/** Number of members of an object (duplicates counted); 0 for other values. */
size_t ember_json_object_size(const ember_json *obj);

/**
 * Member i of an object, in file order.
 *
 * @param[in]  obj      an object
 * @param[in]  i        index, below ember_json_object_size()
 * @param[out] key      its key (UTF-8, NUL-terminated after key_len bytes,
 *                      may hold NUL bytes), owned by the document; may be NULL
 * @param[out] key_len  the key's length in bytes; may be NULL
 * @return the member's value, or NULL (obj is not an object or i is out of
 *         range; *key and *key_len are then untouched).
 */
const ember_json *ember_json_object_at(const ember_json *obj, size_t i, const char **key,
                                       size_t *key_len);

/**
 * The value of the member named key (the last one, if the name repeats).
 *
 * @param[in] obj      an object
 * @param[in] key      the name, key_len bytes (may hold NUL bytes)
 * @param[in] key_len  its length
 * @return the value, or NULL (no such member, obj is not an object, or key
 *         is NULL with key_len > 0). Average O(1).
 */
const ember_json *ember_json_get(const ember_json *obj, const char *key, size_t key_len);

/** ember_json_get() with a NUL-terminated key (NULL key: NULL). */
const ember_json *ember_json_find(const ember_json *obj, const char *key);

/** Number of items of an array; 0 for other values. */
size_t ember_json_array_size(const ember_json *arr);

/** Item i of an array, or NULL (not an array, or i out of range). */
const ember_json *ember_json_array_at(const ember_json *arr, size_t i);

/* ------------------------------------------------------------------------ */
/* Scalars                                                                   */
/*                                                                           */
/* These return EMBER_ERR_TYPE_MISMATCH (with a message naming the kind      */
/* found) when the value is NULL or of another kind, and leave their outputs */
/* untouched then. They never allocate.                                      */
/* ------------------------------------------------------------------------ */

/**
 * The bytes of a string value.
 *
 * @param[in]  v    a string value
 * @param[out] s    its UTF-8 bytes, NUL-terminated after *len bytes (the
 *                  string itself may hold NUL bytes), owned by the document
 * @param[out] len  their count; may be NULL
 * @return EMBER_OK; EMBER_ERR_TYPE_MISMATCH; EMBER_ERR_INVALID_ARGUMENT (s is NULL).
 */
ember_status ember_json_string(const ember_json *v, const char **s, size_t *len);

/**
 * The value of a number as a double (correctly rounded from its text).
 *
 * @param[in]  v    a number value
 * @param[out] out  the value
 * @return EMBER_OK; EMBER_ERR_TYPE_MISMATCH; EMBER_ERR_INVALID_ARGUMENT (out is NULL).
 */
ember_status ember_json_number(const ember_json *v, double *out);

/**
 * The value of a number as an int64.
 *
 * @param[in]  v      a number value
 * @param[out] out    the value: exact when *exact is true; otherwise the
 *                    double value truncated toward zero and clamped to the
 *                    int64 range (0 for NaN, which JSON cannot write)
 * @param[out] exact  true when the number is written as an integer (no
 *                    fraction, no exponent) within the int64 range, as
 *                    Python's json reads it as an int; may be NULL
 * @return EMBER_OK; EMBER_ERR_TYPE_MISMATCH; EMBER_ERR_INVALID_ARGUMENT (out is NULL).
 */
ember_status ember_json_int64(const ember_json *v, int64_t *out, bool *exact);

/**
 * The text of a number as written in the document (e.g. "-1.50e+3").
 *
 * @param[in]  v     a number value
 * @param[out] text  its characters, NUL-terminated, owned by the document
 * @param[out] len   their count; may be NULL
 * @return EMBER_OK; EMBER_ERR_TYPE_MISMATCH; EMBER_ERR_INVALID_ARGUMENT (text is NULL).
 */
ember_status ember_json_number_text(const ember_json *v, const char **text, size_t *len);

/**
 * The value of true or false.
 *
 * @param[in]  v    a boolean value
 * @param[out] out  the value
 * @return EMBER_OK; EMBER_ERR_TYPE_MISMATCH; EMBER_ERR_INVALID_ARGUMENT (out is NULL).
 */
ember_status ember_json_bool(const ember_json *v, bool *out);

#ifdef __cplusplus
}
#endif

#endif /* EMBER_LLM_TEXT_JSON_H */
