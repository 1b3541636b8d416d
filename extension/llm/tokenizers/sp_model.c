/*
 * extension/llm/tokenizers/sp_model.c — loads a SentencePiece model and
 * answers vocabulary questions (see sentencepiece.h).
 *
 * Loading checks what the library (0.2.3) checks when it loads a model:
 * pieces non-empty, without NUL bytes, shorter than 8000 bytes and unique;
 * one unknown piece; byte pieces only with byte_fallback, then all 256; a
 * Unigram model with pieces and finite scores; well-formed charsmaps. So a
 * file loads here exactly when it loads there (files over 1 GiB aside).
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_internal.h"

#define UNK_SURFACE_DEFAULT " \xE2\x81\x87 " /* " ⁇ " */

/* ------------------------------------------------------------------------ */
/* Small utilities shared by the module                                      */
/* ------------------------------------------------------------------------ */

void *sp_alloc_array(size_t n, size_t size) {
    size_t bytes;
    if (!sp_mul_ok(n == 0 ? 1 : n, size, &bytes)) return NULL;
    return malloc(bytes);
}

ember_status sp_oom(const char *what) {
    return ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory for the SentencePiece %s", what);
}

bool sp_buf_reserve(sp_buf *b, size_t extra) {
    size_t need;
    if (!sp_add_ok(b->n, extra, &need)) return false;
    if (need <= b->cap) return true;
    size_t ncap = b->cap < 64 ? 64 : b->cap;
    while (ncap < need) {
        if (ncap > SIZE_MAX / 2) {
            ncap = need;
            break;
        }
        ncap *= 2;
    }
    char *p = realloc(b->p, ncap);
    if (p == NULL) return false;
    b->p = p;
    b->cap = ncap;
    return true;
}

bool sp_buf_put(sp_buf *b, const void *s, size_t n) {
    if (!sp_buf_reserve(b, n)) return false;
    if (n > 0) memcpy(b->p + b->n, s, n);
    b->n += n;
    return true;
}

/* ------------------------------------------------------------------------ */
/* Building the model                                                        */
/* ------------------------------------------------------------------------ */

static bool is_normal_class(int type) {
    return type == EMBER_SP_PIECE_NORMAL || type == EMBER_SP_PIECE_USER_DEFINED ||
           type == EMBER_SP_PIECE_UNUSED;
}

/* Prints at most 48 bytes of a piece for a message. */
#define SHOWN(n) ((int)((n) > 48 ? 48 : (n)))

/* "<0xNN>" (upper-case hex, as the library writes it) -> NN, else -1. */
static int piece_to_byte(const uint8_t *p, size_t n) {
    if (n != 6 || memcmp(p, "<0x", 3) != 0 || p[5] != '>') return -1;
    int v = 0;
    for (int k = 3; k < 5; k++) {
        int c = p[k], d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        v = v * 16 + d;
    }
    return v;
}

static ember_status map_init(sp_map *map, size_t n) {
    size_t cap = 16;
    while (cap / 2 < n) {
        if (cap > SIZE_MAX / 4) return sp_oom("vocabulary");
        cap *= 2;
    }
    map->slots = sp_alloc_array(cap, sizeof *map->slots);
    if (map->slots == NULL) return sp_oom("vocabulary");
    map->cap = cap;
    for (size_t i = 0; i < cap; i++) map->slots[i] = (sp_map_slot){SP_NO_ID, 0};
    return EMBER_OK;
}

/* Inserts id; returns the id already there with the same spelling, or SP_NO_ID. */
static int32_t map_insert(const ember_sp_model *m, sp_map *map, int32_t id) {
    size_t n;
    const uint8_t *s = sp_piece(m, id, &n);
    uint64_t h = sp_hash(s, n);
    uint32_t tag = (uint32_t)(h >> 32);
    size_t mask = map->cap - 1;
    for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
        sp_map_slot *slot = &map->slots[i];
        if (slot->id == SP_NO_ID) {
            *slot = (sp_map_slot){id, tag};
            return SP_NO_ID;
        }
        if (slot->tag != tag) continue;
        size_t on;
        const uint8_t *os = sp_piece(m, slot->id, &on);
        if (on == n && memcmp(os, s, n) == 0) return slot->id;
    }
}

/* Copies the pieces and checks them as the library's InitializePieces does. */
static ember_status build_pieces(ember_sp_model *m, const sp_raw_model *raw, const char *name) {
    size_t n = raw->n_pieces, total = 0;
    if (n > (size_t)INT32_MAX)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: too many pieces (%zu)", name, n);
    for (size_t i = 0; i < n; i++)
        if (!sp_add_ok(total, raw->pieces[i].piece.n, &total)) return sp_oom("pieces");
    m->n_pieces = n;
    m->strings = malloc(total == 0 ? 1 : total);
    m->piece_off = sp_alloc_array(n, sizeof *m->piece_off);
    m->piece_len = sp_alloc_array(n, sizeof *m->piece_len);
    m->score = sp_alloc_array(n, sizeof *m->score);
    m->type = sp_alloc_array(n, sizeof *m->type);
    if (m->strings == NULL || m->piece_off == NULL || m->piece_len == NULL || m->score == NULL ||
        m->type == NULL)
        return sp_oom("pieces");
    size_t off = 0, n_normal = 0;
    for (size_t i = 0; i < n; i++) {
        const sp_raw_piece *p = &raw->pieces[i];
        if (p->piece.n > 0) memcpy(m->strings + off, p->piece.p, p->piece.n);
        m->piece_off[i] = (uint32_t)off;
        m->piece_len[i] = (uint32_t)p->piece.n;
        m->score[i] = p->score;
        m->type[i] = (uint8_t)p->type;
        off += p->piece.n;
        if (is_normal_class(p->type)) n_normal++;
    }

    ember_status st;
    if ((st = map_init(&m->normal, n_normal)) != EMBER_OK ||
        (st = map_init(&m->reserved, n - n_normal)) != EMBER_OK)
        return st;
    bool byte_found[256] = {false};
    m->unk = SP_NO_ID;
    for (size_t i = 0; i < n; i++) {
        int32_t id = (int32_t)i;
        size_t len;
        const uint8_t *s = sp_piece(m, id, &len);
        int type = m->type[i];
        if (len == 0)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: piece %zu is empty", name, i);
        if (memchr(s, 0, len) != NULL)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: piece %zu contains a NUL byte",
                                   name, i);
        if (len > SP_MAX_PIECE_BYTES)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: piece %zu is %zu bytes long (at most %d)", name, i, len,
                                   SP_MAX_PIECE_BYTES);
        sp_map *map = is_normal_class(type) ? &m->normal : &m->reserved;
        int32_t other = map_insert(m, map, id);
        /* A BPE model keeps all pieces in one table: no spelling twice. */
        if (other == SP_NO_ID && raw->model_type == EMBER_SP_MODEL_BPE)
            other = sp_map_find(m, map == &m->normal ? &m->reserved : &m->normal, s, len);
        if (other != SP_NO_ID)
            return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                   "%s: piece %zu \"%.*s\" is already defined (piece %d)", name, i,
                                   SHOWN(len), (const char *)s, (int)other);
        if (type == EMBER_SP_PIECE_UNUSED) m->has_unused = true;
        if (type == EMBER_SP_PIECE_USER_DEFINED) m->has_user = true;
        if (type == EMBER_SP_PIECE_UNKNOWN) {
            if (m->unk != SP_NO_ID)
                return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                       "%s: pieces %d and %zu are both of type UNKNOWN (only one "
                                       "unk piece is allowed)",
                                       name, (int)m->unk, i);
            m->unk = id;
        }
        if (type == EMBER_SP_PIECE_BYTE) {
            if (!raw->byte_fallback)
                return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                       "%s: byte piece %zu \"%.*s\" in a model without "
                                       "trainer_spec.byte_fallback",
                                       name, i, SHOWN(len), (const char *)s);
            int b = piece_to_byte(s, len);
            if (b < 0)
                return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                       "%s: byte piece %zu \"%.*s\" is not one of <0x00>..<0xFF>",
                                       name, i, SHOWN(len), (const char *)s);
            byte_found[b] = true;
        }
    }
    if (m->unk == SP_NO_ID)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                               "%s: no piece of type UNKNOWN (the unk piece is required)", name);
    for (int b = 0; b < 256; b++) m->byte_id[b] = SP_NO_ID;
    if (raw->byte_fallback) {
        for (int b = 0; b < 256; b++) {
            if (!byte_found[b])
                return ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                       "%s: trainer_spec.byte_fallback is set but byte piece "
                                       "<0x%02X> is missing",
                                       name, b);
            char spelling[8];
            snprintf(spelling, sizeof spelling, "<0x%02X>", b);
            m->byte_id[b] = sp_piece_to_id(m, (const uint8_t *)spelling, 6);
        }
    }
    return EMBER_OK;
}

typedef struct scored {
    uint32_t key; /* the score's bits, mapped so that unsigned order is score order */
    int32_t id;
} scored;

/* The library (0.2.3) orders merge scores by their bit patterns: the float
 * order, with -0.0 below +0.0 and equal only when the bits are. */
static uint32_t score_key(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return (u & 0x80000000u) != 0 ? ~u : u | 0x80000000u;
}

/* Highest score first. */
static int scored_cmp(const void *a, const void *b) {
    uint32_t x = ((const scored *)a)->key, y = ((const scored *)b)->key;
    return (x < y) - (x > y);
}

/* BPE merges compare scores; ranks make that one integer comparison. */
static ember_status build_ranks(ember_sp_model *m) {
    m->rank = sp_alloc_array(m->n_pieces, sizeof *m->rank);
    scored *order = sp_alloc_array(m->n_pieces, sizeof *order);
    if (m->rank == NULL || order == NULL) {
        free(order);
        return sp_oom("ranks");
    }
    size_t n = 0;
    for (size_t i = 0; i < m->n_pieces; i++) {
        m->rank[i] = 0;
        if (is_normal_class(m->type[i])) order[n++] = (scored){score_key(m->score[i]), (int32_t)i};
    }
    qsort(order, n, sizeof *order, scored_cmp);
    uint32_t rank = 0;
    for (size_t k = 0; k < n; k++) {
        if (k > 0 && order[k - 1].key != order[k].key) rank++;
        m->rank[order[k].id] = rank;
    }
    free(order);
    return EMBER_OK;
}

/* The Unigram vocabulary trie and the user-defined-symbol trie. */
static ember_status build_tries(ember_sp_model *m, const char *name) {
    sp_key *keys = sp_alloc_array(m->n_pieces, sizeof *keys);
    if (keys == NULL) return sp_oom("trie");
    ember_status st = EMBER_OK;
    size_t n = 0;
    if (m->model_type == EMBER_SP_MODEL_UNIGRAM) {
        for (size_t i = 0; i < m->n_pieces; i++) {
            if (!isfinite(m->score[i])) {
                st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                     "%s: piece %zu has a score that is NaN or infinite (a "
                                     "Unigram model needs finite scores)",
                                     name, i);
                goto done;
            }
        }
        m->min_score = FLT_MAX;
        for (size_t i = 0; i < m->n_pieces; i++) {
            int type = m->type[i];
            if (type == EMBER_SP_PIECE_NORMAL) {
                float s = m->score[i];
                if (s < m->min_score) m->min_score = s; /* as std::min */
            }
            /* Unused pieces are in the library's trie but skipped by its
             * walk; leaving them out changes nothing. */
            if (type != EMBER_SP_PIECE_NORMAL && type != EMBER_SP_PIECE_USER_DEFINED) continue;
            size_t len;
            keys[n].p = sp_piece(m, (int32_t)i, &len);
            keys[n].n = (uint32_t)len;
            keys[n].value = (int32_t)i;
            keys[n].score = m->score[i];
            n++;
        }
        /* User-defined symbols always win: the library (0.2.3) scores them
         * (length - 1) * 0.1, in double, stored as float. */
        for (size_t k = 0; k < n; k++) {
            if (m->type[keys[k].value] != EMBER_SP_PIECE_USER_DEFINED) continue;
            keys[k].score = (float)((double)((int)keys[k].n - 1) * 0.1);
        }
        bool any = n > 0;
        for (size_t i = 0; i < m->n_pieces && !any; i++) any = m->type[i] == EMBER_SP_PIECE_UNUSED;
        if (!any) {
            st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT,
                                 "%s: a Unigram model needs at least one normal, user-defined or "
                                 "unused piece",
                                 name);
            goto done;
        }
        if ((st = sp_trie_build(&m->vocab, keys, n)) != EMBER_OK) goto done;
    }
    if (m->has_user) {
        n = 0;
        for (size_t i = 0; i < m->n_pieces; i++) {
            if (m->type[i] != EMBER_SP_PIECE_USER_DEFINED) continue;
            size_t len;
            keys[n].p = sp_piece(m, (int32_t)i, &len);
            keys[n].n = (uint32_t)len;
            keys[n].value = (int32_t)i;
            keys[n].score = 0.0f;
            n++;
        }
        st = sp_trie_build(&m->user, keys, n);
    }
done:
    free(keys);
    return st;
}

static ember_status build_normalizers(ember_sp_model *m, const sp_raw_model *raw,
                                      const char *name) {
    const sp_view *a = &raw->normalizer.charsmap, *b = &raw->denormalizer.charsmap;
    size_t total;
    if (!sp_add_ok(a->n, b->n, &total)) return sp_oom("charsmap");
    m->charsmaps = malloc(total == 0 ? 1 : total);
    if (m->charsmaps == NULL) return sp_oom("charsmap");
    if (a->n > 0) memcpy(m->charsmaps, a->p, a->n);
    if (b->n > 0) memcpy(m->charsmaps + a->n, b->p, b->n);
    ember_status st = sp_normalizer_init(&m->norm, name, "normalizer_spec", &raw->normalizer,
                                         m->charsmaps, a->n, raw->treat_whitespace_as_suffix);
    if (st != EMBER_OK) return st;
    m->strip_leading_space =
        raw->normalizer.add_dummy_prefix || raw->normalizer.remove_extra_whitespaces;
    /* The library uses a denormalizer only when its charsmap is non-empty. */
    if (raw->denormalizer.present && b->n > 0) {
        m->has_denorm = true;
        st = sp_normalizer_init(&m->denorm, name, "denormalizer_spec", &raw->denormalizer,
                                m->charsmaps + a->n, b->n, false);
    }
    return st;
}

/* The id the library reports for a special piece named in trainer_spec. */
static int32_t special_id(const ember_sp_model *m, sp_view name, const char *fallback, int type) {
    const uint8_t *s = name.p;
    size_t n = name.n;
    if (n == 0) {
        s = (const uint8_t *)fallback;
        n = strlen(fallback);
    }
    int32_t id = sp_piece_to_id(m, s, n);
    return m->type[id] == type ? id : -1;
}

/* Decode tables: what each id prints. */
static ember_status build_decode(ember_sp_model *m, const sp_raw_model *raw) {
    m->dec = sp_alloc_array(m->n_pieces, sizeof *m->dec);
    m->surfaces = malloc(m->piece_off == NULL || m->n_pieces == 0
                             ? 1
                             : (size_t)m->piece_off[m->n_pieces - 1] + m->piece_len[m->n_pieces - 1]);
    if (m->dec == NULL || m->surfaces == NULL) return sp_oom("decoder");
    size_t out = 0;
    for (size_t i = 0; i < m->n_pieces; i++) {
        size_t len;
        const uint8_t *s = sp_piece(m, (int32_t)i, &len);
        sp_dec_entry *e = &m->dec[i];
        memset(e, 0, sizeof *e);
        e->off = (uint32_t)out;
        switch (m->type[i]) {
        case EMBER_SP_PIECE_CONTROL: e->kind = SP_DEC_CONTROL; break;
        case EMBER_SP_PIECE_UNKNOWN: e->kind = SP_DEC_UNKNOWN; break;
        case EMBER_SP_PIECE_BYTE:
            e->kind = SP_DEC_BYTE;
            e->byte = (uint8_t)piece_to_byte(s, len);
            break;
        default:
            e->kind = SP_DEC_TEXT;
            e->leading_space = len >= SP_SPACE_LEN && memcmp(s, SP_SPACE, SP_SPACE_LEN) == 0;
            for (size_t k = 0; k < len;) {
                if (len - k >= SP_SPACE_LEN && memcmp(s + k, SP_SPACE, SP_SPACE_LEN) == 0) {
                    m->surfaces[out++] = ' ';
                    k += SP_SPACE_LEN;
                } else {
                    m->surfaces[out++] = (char)s[k++];
                }
            }
            break;
        }
        e->len = (uint32_t)(out - e->off);
        if (e->len > m->max_surface) m->max_surface = e->len;
    }
    const uint8_t *us = (const uint8_t *)UNK_SURFACE_DEFAULT;
    size_t ul = sizeof UNK_SURFACE_DEFAULT - 1;
    if (raw->has_unk_surface) { /* set, even to "", it replaces the default */
        us = raw->unk_surface.p;
        ul = raw->unk_surface.n;
    }
    for (int b = 0; b < 256; b++) m->byte_chars[b] = (char)b;
    m->unk_surface = malloc(ul == 0 ? 1 : ul);
    if (m->unk_surface == NULL) return sp_oom("decoder");
    if (ul > 0) memcpy(m->unk_surface, us, ul);
    m->unk_surface_len = ul;
    if (ul > m->max_surface) m->max_surface = ul;
    return EMBER_OK;
}

static ember_status load(const uint8_t *data, size_t len, const char *name, ember_sp_model **out) {
    if (len > SP_MAX_FILE_BYTES)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s is larger than %zu bytes", name,
                               SP_MAX_FILE_BYTES);
    sp_raw_model raw;
    ember_status st = sp_proto_parse(data, len, name, &raw);
    if (st != EMBER_OK) return st;
    ember_sp_model *m = calloc(1, sizeof *m);
    if (m == NULL) {
        sp_raw_model_free(&raw);
        return sp_oom("model");
    }
    m->model_type = raw.model_type;
    m->byte_fallback = raw.byte_fallback;
    if ((st = build_pieces(m, &raw, name)) == EMBER_OK &&
        (st = build_tries(m, name)) == EMBER_OK &&
        (m->model_type != EMBER_SP_MODEL_BPE || (st = build_ranks(m)) == EMBER_OK) &&
        (st = build_normalizers(m, &raw, name)) == EMBER_OK &&
        (st = build_decode(m, &raw)) == EMBER_OK) {
        m->bos_id = special_id(m, raw.bos_piece, "<s>", EMBER_SP_PIECE_CONTROL);
        m->eos_id = special_id(m, raw.eos_piece, "</s>", EMBER_SP_PIECE_CONTROL);
        m->pad_id = special_id(m, raw.pad_piece, "<pad>", EMBER_SP_PIECE_CONTROL);
        m->unk_id = special_id(m, raw.unk_piece, "<unk>", EMBER_SP_PIECE_UNKNOWN);
    }
    sp_raw_model_free(&raw);
    if (st != EMBER_OK) {
        ember_sp_model_destroy(m);
        return st;
    }
    *out = m;
    return EMBER_OK;
}

ember_status ember_sp_model_load_memory(const void *data, size_t len, ember_sp_model **out) {
    if (out == NULL || (data == NULL && len != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_model_load_memory: NULL argument");
    static const uint8_t empty[1] = {0};
    return load(data == NULL ? empty : data, len, SP_MEMORY_NAME, out);
}

ember_status ember_sp_model_load(const char *path, ember_sp_model **out) {
    if (path == NULL || out == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_model_load: NULL argument");
    FILE *f = fopen(path, "rb");
    if (f == NULL) return ember_error_set(EMBER_ERR_IO, "cannot open %s: %s", path, strerror(errno));
    uint8_t *buf = NULL;
    size_t n = 0, cap = 0;
    ember_status st = EMBER_OK;
    for (;;) {
        if (n == cap) {
            if (cap > SP_MAX_FILE_BYTES) {
                st = ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s is larger than %zu bytes",
                                     path, SP_MAX_FILE_BYTES);
                break;
            }
            size_t ncap = cap == 0 ? 1 << 20 : cap * 2;
            uint8_t *p = realloc(buf, ncap);
            if (p == NULL) {
                st = ember_error_set(EMBER_ERR_OUT_OF_MEMORY, "out of memory reading %s", path);
                break;
            }
            buf = p;
            cap = ncap;
        }
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (got == 0) {
            if (ferror(f)) st = ember_error_set(EMBER_ERR_IO, "cannot read %s", path);
            break;
        }
    }
    fclose(f);
    if (st == EMBER_OK) st = load(buf, n, path, out);
    free(buf);
    return st;
}

void ember_sp_model_destroy(ember_sp_model *m) {
    if (m == NULL) return;
    free(m->strings);
    free(m->piece_off);
    free(m->piece_len);
    free(m->score);
    free(m->rank);
    free(m->type);
    free(m->normal.slots);
    free(m->reserved.slots);
    sp_trie_free(&m->vocab);
    sp_trie_free(&m->user);
    free(m->charsmaps);
    free(m->surfaces);
    free(m->dec);
    free(m->unk_surface);
    free(m);
}

/* ------------------------------------------------------------------------ */
/* Vocabulary                                                                */
/* ------------------------------------------------------------------------ */

size_t ember_sp_model_vocab_size(const ember_sp_model *m) { return m == NULL ? 0 : m->n_pieces; }

ember_sp_model_type ember_sp_model_kind(const ember_sp_model *m) {
    return m == NULL ? EMBER_SP_MODEL_UNIGRAM : (ember_sp_model_type)m->model_type;
}

int32_t ember_sp_model_bos_id(const ember_sp_model *m) { return m == NULL ? -1 : m->bos_id; }
int32_t ember_sp_model_eos_id(const ember_sp_model *m) { return m == NULL ? -1 : m->eos_id; }
int32_t ember_sp_model_pad_id(const ember_sp_model *m) { return m == NULL ? -1 : m->pad_id; }
int32_t ember_sp_model_unk_id(const ember_sp_model *m) { return m == NULL ? -1 : m->unk_id; }

bool ember_sp_model_strips_leading_space(const ember_sp_model *m) {
    return m != NULL && m->strip_leading_space;
}

ember_status ember_sp_piece_to_id(const ember_sp_model *m, const char *piece, size_t len,
                                  int32_t *id) {
    if (m == NULL || id == NULL || (piece == NULL && len != 0))
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_piece_to_id: NULL argument");
    const uint8_t *s = (const uint8_t *)(piece == NULL ? "" : piece);
    int32_t found = sp_map_find(m, &m->reserved, s, len);
    if (found == SP_NO_ID) found = sp_map_find(m, &m->normal, s, len);
    if (found == SP_NO_ID)
        return ember_error_set(EMBER_ERR_NOT_FOUND, "piece \"%.*s\" is not in the vocabulary",
                               SHOWN(len), (const char *)s);
    *id = found;
    return EMBER_OK;
}

static ember_status check_id(const ember_sp_model *m, int32_t id) {
    if (id < 0 || (size_t)id >= m->n_pieces)
        return ember_error_set(EMBER_ERR_INDEX_OUT_OF_RANGE,
                               "piece id %d is outside the vocabulary (%zu pieces)", (int)id,
                               m->n_pieces);
    return EMBER_OK;
}

ember_status ember_sp_id_to_piece(const ember_sp_model *m, int32_t id, const char **piece,
                                  size_t *len) {
    if (m == NULL || piece == NULL || len == NULL)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_id_to_piece: NULL argument");
    ember_status st = check_id(m, id);
    if (st != EMBER_OK) return st;
    *piece = (const char *)sp_piece(m, id, len);
    return EMBER_OK;
}

ember_status ember_sp_piece_info(const ember_sp_model *m, int32_t id, ember_sp_piece_type *type,
                                 float *score) {
    if (m == NULL) return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "ember_sp_piece_info: NULL model");
    ember_status st = check_id(m, id);
    if (st != EMBER_OK) return st;
    if (type != NULL) *type = (ember_sp_piece_type)m->type[id];
    if (score != NULL) *score = m->score[id];
    return EMBER_OK;
}
