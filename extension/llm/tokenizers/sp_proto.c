/*
 * extension/llm/tokenizers/sp_proto.c — reads a serialized ModelProto
 * (sentencepiece_model.proto, proto2) from the protobuf wire format.
 *
 * As the protobuf runtime parses it: unknown fields (and known fields sent
 * with another wire type) are skipped, groups included; a scalar given twice
 * keeps the last value; a message given twice is merged; an enum value the
 * schema does not list leaves the field as it was. Every varint, length and
 * group is checked against the bytes that remain, so a truncated or
 * corrupted file is an error naming the byte offset and the message.
 * Field 4 (self_test_data) is not in the library's 0.2.3 schema: it
 * is skipped like any unknown field, and its samples are not run.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sp_internal.h"

/* Field numbers (sentencepiece_model.proto). */
enum {
    MODEL_PIECES = 1, MODEL_TRAINER = 2, MODEL_NORMALIZER = 3, MODEL_DENORMALIZER = 5,
    PIECE_PIECE = 1, PIECE_SCORE = 2, PIECE_TYPE = 3,
    TRAINER_MODEL_TYPE = 3, TRAINER_WS_SUFFIX = 24, TRAINER_BYTE_FALLBACK = 35,
    TRAINER_UNK_SURFACE = 44, TRAINER_UNK_PIECE = 45, TRAINER_BOS_PIECE = 46,
    TRAINER_EOS_PIECE = 47, TRAINER_PAD_PIECE = 48,
    NORM_CHARSMAP = 2, NORM_DUMMY_PREFIX = 3, NORM_REMOVE_EXTRA = 4,
    NORM_ESCAPE = 5
};

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_SGROUP = 3, WIRE_EGROUP = 4, WIRE_I32 = 5 };

/* The protobuf runtime's nesting limit: messages and groups together. */
#define MAX_DEPTH 100

/* A message being read: data[pos..end) of the whole input. */
typedef struct pb_reader {
    const uint8_t *data;
    size_t pos, end;
    const char *name; /* the input, for messages */
    const char *msg;  /* the message being read, for messages */
    size_t index;     /* element of a repeated message, or SIZE_MAX */
    size_t depth;     /* messages around this one */
} pb_reader;

typedef struct pb_field {
    uint32_t number;
    uint32_t wire;
    uint64_t varint; /* WIRE_VARINT */
    uint32_t fixed32; /* WIRE_I32 */
    sp_view bytes;   /* WIRE_LEN */
} pb_field;

static ember_status pb_error(const pb_reader *r, size_t at, const char *what) {
    if (r->index != SIZE_MAX)
        return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: %s[%zu] at byte %zu: %s", r->name,
                               r->msg, r->index, at, what);
    return ember_error_set(EMBER_ERR_INVALID_ARGUMENT, "%s: %s at byte %zu: %s", r->name, r->msg,
                           at, what);
}

/* Reads a varint; on failure the message names the field that starts at
 * byte at. */
static ember_status pb_varint(pb_reader *r, uint64_t *out, size_t at) {
    uint64_t v = 0;
    for (unsigned k = 0; k < 10; k++) {
        if (r->pos >= r->end) return pb_error(r, at, "truncated varint");
        uint8_t b = r->data[r->pos++];
        if (k < 9) v |= (uint64_t)(b & 0x7F) << (7 * k);
        else v |= (uint64_t)(b & 0x01) << 63; /* bits past 64 are dropped */
        if ((b & 0x80) == 0) {
            *out = v;
            return EMBER_OK;
        }
    }
    return pb_error(r, at, "varint longer than 10 bytes");
}

/* Skips a group whose start tag (field number) was just read. */
static ember_status pb_skip_group(pb_reader *r, uint32_t number) {
    uint32_t stack[MAX_DEPTH];
    size_t depth = 0, limit = MAX_DEPTH - r->depth;
    stack[depth++] = number;
    while (depth > 0) {
        size_t tag_at = r->pos;
        uint64_t tag;
        ember_status st = pb_varint(r, &tag, tag_at);
        if (st != EMBER_OK) return st;
        if (tag > UINT32_MAX || (tag >> 3) == 0) return pb_error(r, tag_at, "invalid field tag");
        uint32_t num = (uint32_t)(tag >> 3), wire = (uint32_t)(tag & 7);
        uint64_t v;
        switch (wire) {
        case WIRE_VARINT:
            if ((st = pb_varint(r, &v, tag_at)) != EMBER_OK) return st;
            break;
        case WIRE_I64:
        case WIRE_I32: {
            size_t w = wire == WIRE_I64 ? 8 : 4;
            if (r->end - r->pos < w) return pb_error(r, tag_at, "truncated fixed-size field");
            r->pos += w;
            break;
        }
        case WIRE_LEN:
            if ((st = pb_varint(r, &v, tag_at)) != EMBER_OK) return st;
            if (v > (uint64_t)(r->end - r->pos)) return pb_error(r, tag_at, "length runs past the end");
            r->pos += (size_t)v;
            break;
        case WIRE_SGROUP:
            if (depth == limit) return pb_error(r, tag_at, "groups nested too deeply");
            stack[depth++] = num;
            break;
        case WIRE_EGROUP:
            if (stack[depth - 1] != num) return pb_error(r, tag_at, "mismatched end-group tag");
            depth--;
            break;
        default: return pb_error(r, tag_at, "invalid wire type");
        }
    }
    return EMBER_OK;
}

/* Reads the next field into f; *more = false at the end of the message.
 * Groups are skipped whole (f->wire is WIRE_SGROUP then, with no value). */
static ember_status pb_next(pb_reader *r, pb_field *f, bool *more) {
    if (r->pos >= r->end) {
        *more = false;
        return EMBER_OK;
    }
    *more = true;
    size_t at = r->pos;
    uint64_t tag;
    ember_status st = pb_varint(r, &tag, at);
    if (st != EMBER_OK) return st;
    if (tag > UINT32_MAX || (tag >> 3) == 0) return pb_error(r, at, "invalid field tag");
    f->number = (uint32_t)(tag >> 3);
    f->wire = (uint32_t)(tag & 7);
    switch (f->wire) {
    case WIRE_VARINT: return pb_varint(r, &f->varint, at);
    case WIRE_I64:
        if (r->end - r->pos < 8) return pb_error(r, at, "truncated 64-bit field");
        r->pos += 8;
        return EMBER_OK;
    case WIRE_I32: {
        if (r->end - r->pos < 4) return pb_error(r, at, "truncated 32-bit field");
        const uint8_t *b = r->data + r->pos;
        f->fixed32 = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 |
                     (uint32_t)b[3] << 24;
        r->pos += 4;
        return EMBER_OK;
    }
    case WIRE_LEN: {
        uint64_t len;
        if ((st = pb_varint(r, &len, at)) != EMBER_OK) return st;
        if (len > (uint64_t)(r->end - r->pos)) {
            char what[96];
            snprintf(what, sizeof what, "field %u: length %llu runs past the end (%zu bytes left)",
                     (unsigned)f->number, (unsigned long long)len, r->end - r->pos);
            return pb_error(r, at, what);
        }
        f->bytes.p = r->data + r->pos;
        f->bytes.n = (size_t)len;
        r->pos += (size_t)len;
        return EMBER_OK;
    }
    case WIRE_SGROUP: return pb_skip_group(r, f->number);
    case WIRE_EGROUP: return pb_error(r, at, "end-group tag without a group");
    default: return pb_error(r, at, "invalid wire type (6 or 7)");
    }
}

/* A reader for the LEN field f of r. */
static pb_reader pb_sub(const pb_reader *r, const pb_field *f, const char *msg, size_t index) {
    pb_reader s = *r;
    s.pos = (size_t)(f->bytes.p - r->data);
    s.end = s.pos + f->bytes.n;
    s.msg = msg;
    s.index = index;
    s.depth = r->depth + 1;
    return s;
}

static float float_of_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

/* ------------------------------------------------------------------------ */
/* Messages                                                                  */
/* ------------------------------------------------------------------------ */

static ember_status parse_piece(pb_reader *r, sp_raw_piece *p) {
    pb_field f;
    bool more;
    ember_status st;
    while ((st = pb_next(r, &f, &more)) == EMBER_OK && more) {
        if (f.number == PIECE_PIECE && f.wire == WIRE_LEN) {
            p->piece = f.bytes;
        } else if (f.number == PIECE_SCORE && f.wire == WIRE_I32) {
            p->score = float_of_bits(f.fixed32);
        } else if (f.number == PIECE_TYPE && f.wire == WIRE_VARINT) {
            int32_t v = (int32_t)(uint32_t)f.varint;
            if (v >= EMBER_SP_PIECE_NORMAL && v <= EMBER_SP_PIECE_BYTE) p->type = v;
        }
    }
    return st;
}

static ember_status parse_trainer(pb_reader *r, sp_raw_model *m) {
    pb_field f;
    bool more;
    ember_status st;
    while ((st = pb_next(r, &f, &more)) == EMBER_OK && more) {
        if (f.wire == WIRE_VARINT) {
            switch (f.number) {
            case TRAINER_MODEL_TYPE: {
                int32_t v = (int32_t)(uint32_t)f.varint;
                if (v >= EMBER_SP_MODEL_UNIGRAM && v <= EMBER_SP_MODEL_CHAR) m->model_type = v;
                break;
            }
            case TRAINER_WS_SUFFIX: m->treat_whitespace_as_suffix = f.varint != 0; break;
            case TRAINER_BYTE_FALLBACK: m->byte_fallback = f.varint != 0; break;
            default: break;
            }
        } else if (f.wire == WIRE_LEN) {
            switch (f.number) {
            case TRAINER_UNK_SURFACE:
                m->unk_surface = f.bytes;
                m->has_unk_surface = true;
                break;
            case TRAINER_UNK_PIECE: m->unk_piece = f.bytes; break;
            case TRAINER_BOS_PIECE: m->bos_piece = f.bytes; break;
            case TRAINER_EOS_PIECE: m->eos_piece = f.bytes; break;
            case TRAINER_PAD_PIECE: m->pad_piece = f.bytes; break;
            default: break;
            }
        }
    }
    return st;
}

static ember_status parse_normalizer(pb_reader *r, sp_raw_normalizer *n) {
    n->present = true;
    pb_field f;
    bool more;
    ember_status st;
    while ((st = pb_next(r, &f, &more)) == EMBER_OK && more) {
        if (f.wire == WIRE_LEN) {
            if (f.number == NORM_CHARSMAP) n->charsmap = f.bytes;
        } else if (f.wire == WIRE_VARINT) {
            if (f.number == NORM_DUMMY_PREFIX) n->add_dummy_prefix = f.varint != 0;
            else if (f.number == NORM_REMOVE_EXTRA) n->remove_extra_whitespaces = f.varint != 0;
            else if (f.number == NORM_ESCAPE) n->escape_whitespaces = f.varint != 0;
        }
    }
    return st;
}

/* Makes room for one more element of a growing array. */
static bool grow(void **items, size_t *cap, size_t n, size_t size) {
    if (n < *cap) return true;
    size_t ncap = *cap == 0 ? 256 : *cap * 2, bytes;
    if (!sp_mul_ok(ncap, size, &bytes)) return false;
    void *p = realloc(*items, bytes);
    if (p == NULL) return false;
    *items = p;
    *cap = ncap;
    return true;
}

static void normalizer_defaults(sp_raw_normalizer *n) {
    memset(n, 0, sizeof *n);
    n->add_dummy_prefix = true;
    n->remove_extra_whitespaces = true;
    n->escape_whitespaces = true;
}

ember_status sp_proto_parse(const uint8_t *data, size_t len, const char *name, sp_raw_model *m) {
    memset(m, 0, sizeof *m);
    m->model_type = EMBER_SP_MODEL_UNIGRAM;
    normalizer_defaults(&m->normalizer);
    normalizer_defaults(&m->denormalizer);

    pb_reader r = {data, 0, len, name, "ModelProto", SIZE_MAX, 0};
    pb_field f;
    bool more;
    ember_status st;
    while ((st = pb_next(&r, &f, &more)) == EMBER_OK && more) {
        if (f.wire != WIRE_LEN) continue;
        pb_reader sub;
        switch (f.number) {
        case MODEL_PIECES: {
            if (!grow((void **)&m->pieces, &m->pieces_cap, m->n_pieces, sizeof *m->pieces)) {
                st = sp_oom("pieces");
                break;
            }
            sp_raw_piece *p = &m->pieces[m->n_pieces];
            p->piece.p = NULL;
            p->piece.n = 0;
            p->score = 0.0f;
            p->type = EMBER_SP_PIECE_NORMAL;
            sub = pb_sub(&r, &f, "ModelProto.pieces", m->n_pieces);
            st = parse_piece(&sub, p);
            m->n_pieces++;
            break;
        }
        case MODEL_TRAINER:
            sub = pb_sub(&r, &f, "ModelProto.trainer_spec", SIZE_MAX);
            st = parse_trainer(&sub, m);
            break;
        case MODEL_NORMALIZER:
            sub = pb_sub(&r, &f, "ModelProto.normalizer_spec", SIZE_MAX);
            st = parse_normalizer(&sub, &m->normalizer);
            break;
        case MODEL_DENORMALIZER:
            sub = pb_sub(&r, &f, "ModelProto.denormalizer_spec", SIZE_MAX);
            st = parse_normalizer(&sub, &m->denormalizer);
            break;
        default: break;
        }
        if (st != EMBER_OK) break;
    }
    if (st != EMBER_OK) sp_raw_model_free(m);
    return st;
}

void sp_raw_model_free(sp_raw_model *m) {
    free(m->pieces);
    m->pieces = NULL;
    m->n_pieces = m->pieces_cap = 0;
}
