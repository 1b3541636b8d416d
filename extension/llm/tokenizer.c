/*
 * tokenizer.c — ember_tokenizer (tokenizer.h): the format told from the
 * file's content, special tokens split off before a format's encoder runs,
 * and the streaming decoder over each format's per-token decoding.
 */
#define _POSIX_C_SOURCE 200809L

#include "tokenizer.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "text/json.h"
#include "tokenizers/tok_internal.h"

struct ember_tokenizer {
    tok_common c;
};

struct ember_token_decoder {
    const ember_tokenizer *tok;
    tok_decode_state st;
    tok_buf out;
};

ember_tokenizer_options ember_tokenizer_options_default(void) {
    ember_tokenizer_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    return o;
}

/* ------------------------------------------------------------------------ */
/* Telling the format                                                        */
/* ------------------------------------------------------------------------ */

/* Whether the first line is "<base64> <number>". */
static bool looks_tiktoken(const char *s, size_t n) {
    size_t i = 0, b64 = 0, digits = 0;
    while (i < n && s[i] != ' ' && s[i] != '\n') {
        char c = s[i++];
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  c == '+' || c == '/' || c == '=';
        if (!ok) return false;
        b64++;
    }
    if (b64 == 0 || i >= n || s[i] != ' ') return false;
    for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) digits++;
    return digits > 0 && (i == n || s[i] == '\n' || s[i] == '\r');
}

/* The first byte that is not whitespace (after a UTF-8 byte order mark). */
static size_t skip_space(const char *s, size_t n) {
    size_t i = n >= 3 && memcmp(s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r')) i++;
    return i;
}

static ember_status parse_json(const char *data, size_t len, const char *name,
                               ember_json_doc **doc) {
    ember_json_options o;
    memset(&o, 0, sizeof o);
    o.struct_size = sizeof o;
    o.name = name;
    return ember_json_parse_ex(data, len, &o, doc);
}

static ember_status load_json(const char *data, size_t len, const char *name, tok_common *c) {
    ember_json_doc *doc;
    ember_status st = parse_json(data, len, name, &doc);
    if (st != EMBER_OK) return st;
    const ember_json *root = ember_json_root(doc);
    if (ember_json_find(root, "model") != NULL)
        st = tok_hf_load_json(root, c);
    else
        st = ember_error_set(EMBER_ERR_NOT_SUPPORTED,
                             "%s is JSON but not a tokenizer.json (it has no \"model\"); GPT-2's "
                             "vocab.json loads with the merges.txt beside it (give its directory)",
                             name);
    ember_json_doc_destroy(doc);
    return st;
}

static ember_status load_content(const char *data, size_t len, const char *name,
                                 const ember_tokenizer_options *opt, tok_common *c) {
    size_t i = skip_space(data, len);
    if (looks_tiktoken(data, len)) return tok_tiktoken_load(data, len, name, opt, c);
    if (i < len && data[i] == '{') return load_json(data, len, name, c);
    /* a ModelProto starts with its pieces: field 1, length-delimited */
    if (len > 0 && (uint8_t)data[0] == 0x0A) return tok_sp_load(data, len, name, c);
    return ember_error_set(EMBER_ERR_NOT_SUPPORTED,
                           "%s is not a tokenizer ember reads (tiktoken ranks, tokenizer.json, a "
                           "SentencePiece model, or GPT-2's vocab.json with merges.txt)",
                           name);
}

static void common_free(tok_common *c) {
    if (c->ops != NULL && c->ops->destroy != NULL) c->ops->destroy(c->impl);
    free(c->specials.items);
    free(c->is_special);
    tok_ids_free(&c->eos_ids);
    free(c->bos_text);
    free(c->eos_text);
    free(c->chat_template);
    memset(c, 0, sizeof *c);
}

static ember_status add_end_of_turn(tok_common *c);

static const ember_tokenizer_options *options_or_default(const ember_tokenizer_options *o,
                                                         ember_tokenizer_options *def) {
    *def = ember_tokenizer_options_default();
    return o != NULL && o->struct_size >= sizeof *o ? o : def;
}

ember_status ember_tokenizer_load_memory(const void *data, size_t len, const char *name,
                                         const ember_tokenizer_options *options,
                                         ember_tokenizer **out) {
    if (data == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_tokenizer_load_memory: NULL");
    if (options != NULL && options->struct_size < sizeof *options)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_tokenizer_options.struct_size is %zu, expected %zu",
                               options->struct_size, sizeof *options);
    ember_tokenizer_options def;
    const ember_tokenizer_options *opt = options_or_default(options, &def);
    ember_tokenizer *t = calloc(1, sizeof *t);
    if (t == NULL) return tok_oom("tokenizer");
    t->c.bos_id = TOK_NO_ID;
    ember_status st = load_content(data, len, name ? name : "tokenizer", opt, &t->c);
    if (st == EMBER_OK) st = add_end_of_turn(&t->c);
    if (st != EMBER_OK) {
        common_free(&t->c);
        free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* GPT-2's two files, as the tokenizer.json they stand for                   */
/* ------------------------------------------------------------------------ */

static ember_status json_escape(tok_buf *b, const char *s, size_t n) {
    ember_status st = tok_buf_append(b, "\"", 1);
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        unsigned char c = (unsigned char)s[i];
        char esc[8];
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            st = tok_buf_append(b, esc, 2);
        } else if (c < 0x20) {
            snprintf(esc, sizeof esc, "\\u%04x", c);
            st = tok_buf_append(b, esc, 6);
        } else {
            st = tok_buf_append(b, s + i, 1);
        }
    }
    return st == EMBER_OK ? tok_buf_append(b, "\"", 1) : st;
}

/* vocab.json's ids: whole numbers below TOK_MAX_IDS, each given once. */
static ember_status check_gpt2_vocab(const ember_json *v, const char *path) {
    size_t n = ember_json_object_size(v), max = 0;
    for (size_t i = 0; i < n; i++) {
        const char *key;
        size_t kl;
        int64_t id;
        bool exact;
        if (ember_json_int64(ember_json_object_at(v, i, &key, &kl), &id, &exact) != EMBER_OK ||
            !exact || id < 0 || (uint64_t)id >= TOK_MAX_IDS)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: \"%.*s\": the id is not a whole number in 0 .. %zu", path,
                                   (int)(kl < 60 ? kl : 60), key, TOK_MAX_IDS - 1);
        if ((size_t)id > max) max = (size_t)id;
    }
    unsigned char *seen = calloc(max / 8 + 1, 1);
    if (seen == NULL) return tok_oom(path);
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        const char *key;
        size_t kl;
        int64_t id;
        const ember_json *value = ember_json_object_at(v, i, &key, &kl);
        ember_json_int64(value, &id, NULL);
        size_t k = (size_t)id;
        if (ember_json_get(v, key, kl) != value)
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: \"%.*s\" appears twice", path,
                                 (int)(kl < 60 ? kl : 60), key);
        else if (seen[k / 8] & (1u << (k % 8)))
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: \"%.*s\": id %zu is given to two tokens", path,
                                 (int)(kl < 60 ? kl : 60), key, k);
        seen[k / 8] |= (unsigned char)(1u << (k % 8));
    }
    free(seen);
    return st;
}

/* One line of merges.txt: two tokens of vocab.json separated by one space,
 * whose concatenation is a token too. */
static ember_status check_gpt2_merge(const ember_json *v, const char *line, size_t n,
                                     const char *path, size_t lineno, tok_buf *joined) {
    const char *sp = memchr(line, ' ', n);
    if (sp == NULL || sp == line || sp + 1 == line + n || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - line)))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s:%zu: expected two tokens separated by one space", path, lineno);
    size_t an = (size_t)(sp - line), bn = n - an - 1;
    joined->len = 0;
    ember_status st = tok_buf_append(joined, line, an);
    if (st == EMBER_OK) st = tok_buf_append(joined, sp + 1, bn);
    if (st != EMBER_OK) return st;
    if (ember_json_get(v, line, an) == NULL || ember_json_get(v, sp + 1, bn) == NULL ||
        ember_json_get(v, joined->data, joined->len) == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s:%zu: \"%.*s\" names or makes a token that is not in vocab.json",
                               path, lineno, (int)(n < 80 ? n : 80), line);
    return EMBER_OK;
}

/* vocab.json + merges.txt: a BPE model with GPT-2's byte-level
 * pre-tokenizer and decoder, its "<|...|>" tokens special. Errors name the
 * file (and the line of merges.txt) they are in. */
static ember_status load_gpt2(const char *vocab_path, const char *merges_path, tok_common *c) {
    char *vocab = NULL, *merges = NULL;
    size_t vlen = 0, mlen = 0;
    ember_json_doc *vdoc = NULL, *doc = NULL;
    tok_buf j = {0}, joined = {0};
    ember_status st = tok_read_file(vocab_path, &vocab, &vlen);
    if (st == EMBER_OK) st = tok_read_file(merges_path, &merges, &mlen);
    if (st == EMBER_OK) st = parse_json(vocab, vlen, vocab_path, &vdoc);
    const ember_json *v = ember_json_root(vdoc);
    if (st == EMBER_OK && ember_json_type_of(v) != EMBER_JSON_OBJECT)
        st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: expected an object of token: id",
                             vocab_path);
    if (st == EMBER_OK) st = check_gpt2_vocab(v, vocab_path);
    static const char head[] = "{\"model\":{\"type\":\"BPE\",\"vocab\":";
    if (st == EMBER_OK) st = tok_buf_append(&j, head, sizeof head - 1);
    if (st == EMBER_OK) st = tok_buf_append(&j, vocab, vlen);
    if (st == EMBER_OK) st = tok_buf_append(&j, ",\"merges\":[", 11);
    size_t line = 0, count = 0;
    for (size_t i = 0; i < mlen && st == EMBER_OK;) {
        const char *nl = memchr(merges + i, '\n', mlen - i);
        size_t end = nl ? (size_t)(nl - merges) : mlen, e = end;
        if (e > i && merges[e - 1] == '\r') e--;
        size_t b = i;
        i = end + 1;
        line++;
        if (e == b || (e - b >= 8 && memcmp(merges + b, "#version", 8) == 0)) continue;
        st = check_gpt2_merge(v, merges + b, e - b, merges_path, line, &joined);
        if (st == EMBER_OK && count++ > 0) st = tok_buf_append(&j, ",", 1);
        if (st == EMBER_OK) st = json_escape(&j, merges + b, e - b);
    }
    tok_buf_free(&joined);
    static const char tail[] =
        "]},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,"
        "\"use_regex\":true},\"decoder\":{\"type\":\"ByteLevel\"},\"added_tokens\":[";
    if (st == EMBER_OK) st = tok_buf_append(&j, tail, sizeof tail - 1);
    size_t added = 0;
    for (size_t i = 0; i < ember_json_object_size(v) && st == EMBER_OK; i++) {
        const char *key;
        size_t kl;
        const ember_json *idv = ember_json_object_at(v, i, &key, &kl);
        const char *idtext;
        size_t il;
        if (kl < 5 || memcmp(key, "<|", 2) != 0 || memcmp(key + kl - 2, "|>", 2) != 0) continue;
        if (ember_json_number_text(idv, &idtext, &il) != EMBER_OK) continue;
        if (added++ > 0) st = tok_buf_append(&j, ",", 1);
        if (st == EMBER_OK) st = tok_buf_append(&j, "{\"id\":", 6);
        if (st == EMBER_OK) st = tok_buf_append(&j, idtext, il);
        if (st == EMBER_OK) st = tok_buf_append(&j, ",\"content\":", 11);
        if (st == EMBER_OK) st = json_escape(&j, key, kl);
        static const char flags[] = ",\"special\":true,\"normalized\":false}";
        if (st == EMBER_OK) st = tok_buf_append(&j, flags, sizeof flags - 1);
    }
    if (st == EMBER_OK) st = tok_buf_append(&j, "]}", 2);
    if (st == EMBER_OK) st = parse_json(j.data, j.len, merges_path, &doc);
    if (st == EMBER_OK) st = tok_hf_load_json(ember_json_root(doc), c);
    if (st == EMBER_OK) c->format = EMBER_TOKENIZER_GPT2;
    ember_json_doc_destroy(doc);
    ember_json_doc_destroy(vdoc);
    tok_buf_free(&j);
    free(vocab);
    free(merges);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Files beside the tokenizer: tokenizer_config.json, generation_config.json, */
/* chat_template.jinja                                                       */
/* ------------------------------------------------------------------------ */

/* A token named in a config: "text" or {"content": "text"}. */
static const ember_json *token_string(const ember_json *v) {
    if (ember_json_type_of(v) == EMBER_JSON_OBJECT) return ember_json_find(v, "content");
    return v;
}

static ember_status dup_json_string(const ember_json *v, char **out) {
    const char *s;
    size_t n;
    if (ember_json_string(v, &s, &n) != EMBER_OK) return EMBER_OK;
    free(*out);
    *out = malloc(n + 1);
    if (*out == NULL) return tok_oom("tokenizer_config.json");
    memcpy(*out, s, n + 1);
    return EMBER_OK;
}

static ember_status add_eos(tok_common *c, int32_t id) {
    if (id < 0 || (size_t)id >= c->vocab_size) return EMBER_OK;
    for (size_t i = 0; i < c->eos_ids.len; i++)
        if (c->eos_ids.data[i] == id) return EMBER_OK;
    return tok_ids_push(&c->eos_ids, id);
}

/* The JSON document in the file at path. */
static ember_status read_json_file(const char *path, ember_json_doc **doc) {
    char *data;
    size_t len;
    ember_status st = tok_read_file(path, &data, &len);
    if (st != EMBER_OK) return st;
    st = parse_json(data, len, path, doc);
    free(data);
    return st;
}

static ember_status read_config(const char *path, tok_common *c) {
    ember_json_doc *doc;
    ember_status st = read_json_file(path, &doc);
    if (st != EMBER_OK) return st;
    const ember_json *root = ember_json_root(doc);
    st = dup_json_string(token_string(ember_json_find(root, "bos_token")), &c->bos_text);
    if (st == EMBER_OK) st = dup_json_string(token_string(ember_json_find(root, "eos_token")), &c->eos_text);
    const ember_json *tpl = ember_json_find(root, "chat_template");
    if (st == EMBER_OK && ember_json_type_of(tpl) == EMBER_JSON_ARRAY) {
        /* named templates: the "default" one, else the first */
        const ember_json *pick = NULL;
        for (size_t i = 0; i < ember_json_array_size(tpl); i++) {
            const ember_json *e = ember_json_array_at(tpl, i);
            const char *name;
            size_t nl;
            if (pick == NULL) pick = ember_json_find(e, "template");
            if (ember_json_string(ember_json_find(e, "name"), &name, &nl) == EMBER_OK &&
                strcmp(name, "default") == 0)
                pick = ember_json_find(e, "template");
        }
        tpl = pick;
    }
    if (st == EMBER_OK) st = dup_json_string(tpl, &c->chat_template);
    ember_json_doc_destroy(doc);
    return st;
}

static ember_status read_generation_config(const char *path, tok_common *c) {
    ember_json_doc *doc;
    ember_status st = read_json_file(path, &doc);
    if (st != EMBER_OK) return st;
    const ember_json *root = ember_json_root(doc);
    const ember_json *eos = ember_json_find(root, "eos_token_id");
    size_t n = ember_json_type_of(eos) == EMBER_JSON_ARRAY ? ember_json_array_size(eos) : 1;
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        const ember_json *e = ember_json_type_of(eos) == EMBER_JSON_ARRAY ? ember_json_array_at(eos, i) : eos;
        int64_t id;
        bool exact;
        if (ember_json_int64(e, &id, &exact) == EMBER_OK && exact && id >= 0 && id < INT32_MAX)
            st = add_eos(c, (int32_t)id);
    }
    int64_t bos;
    bool exact;
    if (c->bos_id == TOK_NO_ID &&
        ember_json_int64(ember_json_find(root, "bos_token_id"), &bos, &exact) == EMBER_OK && exact &&
        bos >= 0 && (uint64_t)bos < c->vocab_size)
        c->bos_id = (int32_t)bos;
    ember_json_doc_destroy(doc);
    return st;
}

/* Tokens that end a turn or the text, wherever a tokenizer has them as
 * special tokens. */
static const char *const END_OF_TURN[] = {
    "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>", "<|im_end|>", "<|endoftext|>",
    "<end_of_turn>", "<eos>", "<|end|>", "</s>",
};

static bool is_file(const char *path);

/* path = dir/name when it fits in cap bytes and names a file. */
static bool side_file(char *path, size_t cap, const char *dir, const char *name) {
    size_t d = strlen(dir), n = strlen(name);
    if (d >= cap || n >= cap - d - 1) return false;
    memcpy(path, dir, d);
    path[d] = '/';
    memcpy(path + d + 1, name, n + 1);
    return is_file(path);
}

static ember_status read_side_files(const char *dir, tok_common *c) {
    char path[4096];
    ember_status st = EMBER_OK;
    if (side_file(path, sizeof path, dir, "tokenizer_config.json")) st = read_config(path, c);
    if (st == EMBER_OK && side_file(path, sizeof path, dir, "chat_template.jinja")) {
        char *data;
        size_t len;
        st = tok_read_file(path, &data, &len);
        if (st == EMBER_OK) {
            free(c->chat_template);
            c->chat_template = data;
        }
    }
    int32_t id;
    if (st == EMBER_OK && c->bos_text != NULL &&
        (id = tok_vocab_find(c->spellings, c->bos_text, strlen(c->bos_text))) != TOK_NO_ID)
        c->bos_id = id;
    if (st == EMBER_OK && c->eos_text != NULL &&
        (id = tok_vocab_find(c->spellings, c->eos_text, strlen(c->eos_text))) != TOK_NO_ID)
        st = add_eos(c, id);
    if (st == EMBER_OK && side_file(path, sizeof path, dir, "generation_config.json"))
        st = read_generation_config(path, c);
    return st;
}

/* The end-of-turn tokens the vocabulary has as special tokens. */
static ember_status add_end_of_turn(tok_common *c) {
    ember_status st = EMBER_OK;
    for (size_t k = 0; k < sizeof END_OF_TURN / sizeof END_OF_TURN[0] && st == EMBER_OK; k++) {
        int32_t id = tok_vocab_find(c->spellings, END_OF_TURN[k], strlen(END_OF_TURN[k]));
        if (id != TOK_NO_ID && c->is_special != NULL && c->is_special[id]) st = add_eos(c, id);
    }
    return st;
}

static bool is_dir(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISDIR(sb.st_mode);
}

static bool is_file(const char *path) {
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

ember_status ember_tokenizer_load(const char *path, const ember_tokenizer_options *options,
                                  ember_tokenizer **out) {
    if (path == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_tokenizer_load: NULL argument");
    if (options != NULL && options->struct_size < sizeof *options)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "ember_tokenizer_options.struct_size is %zu, expected %zu",
                               options->struct_size, sizeof *options);
    char file[4096], dir[4096], merges[4096];
    int w = snprintf(dir, sizeof dir, "%s", path);
    if (w < 0 || (size_t)w >= sizeof dir)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "path too long: %s", path);
    bool gpt2 = false;
    if (is_dir(path)) {
        static const char *const names[] = {"tokenizer.json", "tokenizer.model", "vocab.json"};
        bool found = false;
        for (size_t k = 0; k < sizeof names / sizeof names[0] && !found; k++) {
            w = snprintf(file, sizeof file, "%s/%s", path, names[k]);
            found = w > 0 && (size_t)w < sizeof file && is_file(file);
            gpt2 = found && k == 2;
        }
        if (!found)
            return ember_error_set(EMBER_ERR_NOT_FOUND,
                                   "%s holds no tokenizer.json, tokenizer.model or vocab.json", path);
    } else {
        memcpy(file, dir, (size_t)w + 1);
        char *slash = strrchr(dir, '/');
        if (slash != NULL) *slash = '\0';
        else memcpy(dir, ".", 2);
        const char *base = slash ? slash + 1 : file;
        gpt2 = strcmp(base, "vocab.json") == 0;
    }
    if (gpt2) {
        w = snprintf(merges, sizeof merges, "%s/merges.txt", dir);
        if (w < 0 || (size_t)w >= sizeof merges || !is_file(merges))
            return ember_error_set(EMBER_ERR_NOT_FOUND, "%s has no merges.txt beside it", file);
    }
    ember_tokenizer_options def;
    const ember_tokenizer_options *opt = options_or_default(options, &def);
    ember_tokenizer *t = calloc(1, sizeof *t);
    if (t == NULL) return tok_oom("tokenizer");
    t->c.bos_id = TOK_NO_ID;
    ember_status st;
    if (gpt2) {
        st = load_gpt2(file, merges, &t->c);
    } else {
        char *data;
        size_t len;
        st = tok_read_file(file, &data, &len);
        if (st == EMBER_OK) {
            st = load_content(data, len, file, opt, &t->c);
            free(data);
        }
    }
    if (st == EMBER_OK) st = read_side_files(dir, &t->c);
    if (st == EMBER_OK) st = add_end_of_turn(&t->c);
    if (st != EMBER_OK) {
        common_free(&t->c);
        free(t);
        return st;
    }
    *out = t;
    return EMBER_OK;
}

void ember_tokenizer_destroy(ember_tokenizer *tok) {
    if (tok == NULL) return;
    common_free(&tok->c);
    free(tok);
}

/* ------------------------------------------------------------------------ */
/* Queries                                                                   */
/* ------------------------------------------------------------------------ */

ember_tokenizer_format ember_tokenizer_get_format(const ember_tokenizer *tok) {
    return tok->c.format;
}

size_t ember_tokenizer_vocab_size(const ember_tokenizer *tok) {
    return tok ? tok->c.vocab_size : 0;
}

ember_status ember_tokenizer_token_id(const ember_tokenizer *tok, const char *token, size_t len,
                                      int32_t *id) {
    if (tok == NULL || token == NULL || id == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_tokenizer_token_id: NULL");
    int32_t found = tok_vocab_find(tok->c.spellings, token, len);
    if (found == TOK_NO_ID)
        return ember_error_set(EMBER_ERR_NOT_FOUND, "no token \"%.*s\"", (int)(len < 80 ? len : 80),
                               token);
    *id = found;
    return EMBER_OK;
}

ember_status ember_tokenizer_token_text(const ember_tokenizer *tok, int32_t id, const char **text,
                                        size_t *len) {
    if (tok == NULL || text == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_tokenizer_token_text: NULL");
    if (!tok_vocab_get(tok->c.spellings, id, text, len))
        return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE, "token id %d is not in the vocabulary",
                               (int)id);
    return EMBER_OK;
}

bool ember_tokenizer_is_special(const ember_tokenizer *tok, int32_t id) {
    return tok != NULL && tok->c.is_special != NULL && id >= 0 &&
           (size_t)id < tok->c.vocab_size && tok->c.is_special[id];
}

int32_t ember_tokenizer_bos_id(const ember_tokenizer *tok) { return tok ? tok->c.bos_id : -1; }

size_t ember_tokenizer_eos_ids(const ember_tokenizer *tok, int32_t *ids, size_t cap) {
    if (tok == NULL) return 0;
    for (size_t i = 0; i < tok->c.eos_ids.len && i < cap; i++) ids[i] = tok->c.eos_ids.data[i];
    return tok->c.eos_ids.len;
}

const char *ember_tokenizer_chat_template(const ember_tokenizer *tok) {
    return tok ? tok->c.chat_template : NULL;
}

const char *ember_tokenizer_bos_text(const ember_tokenizer *tok) {
    return tok && tok->c.bos_text ? tok->c.bos_text : "";
}

const char *ember_tokenizer_eos_text(const ember_tokenizer *tok) {
    return tok && tok->c.eos_text ? tok->c.eos_text : "";
}

/* ------------------------------------------------------------------------ */
/* Encoding                                                                  */
/* ------------------------------------------------------------------------ */

ember_status ember_tokenizer_encode(const ember_tokenizer *tok, const char *text, size_t len,
                                    unsigned flags, int32_t **ids, size_t *n) {
    if (tok == NULL || (text == NULL && len > 0) || ids == NULL || n == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_tokenizer_encode: NULL argument");
    const tok_common *c = &tok->c;
    tok_ids out = {0};
    ember_status st = EMBER_OK;
    size_t pos = 0;
    /* the text between special tokens goes to the format's encoder */
    while (st == EMBER_OK && pos < len) {
        size_t at = len;
        const tok_special *sp = NULL;
        if ((flags & EMBER_ENCODE_SPECIAL) && c->specials.n > 0)
            tok_specials_next(&c->specials, text, len, pos, &at, &sp);
        if (at > pos) st = c->ops->encode(c->impl, text + pos, at - pos, flags, &out);
        if (st == EMBER_OK && sp != NULL) st = tok_ids_push(&out, sp->id);
        pos = sp != NULL ? at + sp->len : len;
    }
    if (st != EMBER_OK) {
        tok_ids_free(&out);
        return st;
    }
    *ids = out.data;
    *n = out.len;
    return EMBER_OK;
}

/* ------------------------------------------------------------------------ */
/* Decoding                                                                  */
/* ------------------------------------------------------------------------ */

ember_status ember_token_decoder_create(const ember_tokenizer *tok, ember_token_decoder **out) {
    if (tok == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_token_decoder_create: NULL");
    ember_token_decoder *d = calloc(1, sizeof *d);
    if (d == NULL) return tok_oom("decoder");
    d->tok = tok;
    *out = d;
    return EMBER_OK;
}

void ember_token_decoder_destroy(ember_token_decoder *dec) {
    if (dec == NULL) return;
    tok_buf_free(&dec->out);
    tok_decode_state_free(&dec->st);
    free(dec);
}

void ember_token_decoder_reset(ember_token_decoder *dec) { tok_decode_state_reset(&dec->st); }

ember_status ember_token_decoder_push(ember_token_decoder *dec, int32_t id, const char **text,
                                      size_t *len) {
    const tok_common *c = &dec->tok->c;
    if (id < 0 || (size_t)id >= c->vocab_size)
        return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE, "token id %d is not in the vocabulary "
                               "(%zu ids)", (int)id, c->vocab_size);
    dec->out.len = 0;
    ember_status st = c->ops->decode(c->impl, &dec->st, id, &dec->out);
    *text = dec->out.data ? dec->out.data : "";
    *len = dec->out.len;
    return st;
}

ember_status ember_token_decoder_finish(ember_token_decoder *dec, const char **text, size_t *len) {
    const tok_common *c = &dec->tok->c;
    dec->out.len = 0;
    ember_status st = c->ops->decode_finish(c->impl, &dec->st, &dec->out);
    ember_token_decoder_reset(dec);
    *text = dec->out.data ? dec->out.data : "";
    *len = dec->out.len;
    return st;
}

ember_status ember_tokenizer_decode(const ember_tokenizer *tok, const int32_t *ids, size_t n,
                                    char **text, size_t *len) {
    if (tok == NULL || (ids == NULL && n > 0) || text == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_tokenizer_decode: NULL argument");
    const tok_common *c = &tok->c;
    tok_decode_state st0;
    memset(&st0, 0, sizeof st0);
    tok_buf out = {0};
    ember_status st = EMBER_OK;
    for (size_t i = 0; i < n && st == EMBER_OK; i++) {
        if (ids[i] < 0 || (size_t)ids[i] >= c->vocab_size)
            st = ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE,
                                 "token id %d is not in the vocabulary (%zu ids)", (int)ids[i],
                                 c->vocab_size);
        else
            st = c->ops->decode(c->impl, &st0, ids[i], &out);
    }
    if (st == EMBER_OK) st = c->ops->decode_finish(c->impl, &st0, &out);
    if (st == EMBER_OK) st = tok_buf_append(&out, "", 1);
    tok_decode_state_free(&st0);
    if (st != EMBER_OK) {
        tok_buf_free(&out);
        return st;
    }
    *text = out.data;
    *len = out.len - 1;
    return EMBER_OK;
}
