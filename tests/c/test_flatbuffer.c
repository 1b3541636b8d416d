/*
 * The bounds-checked flatbuffer reader (src/format/flatbuffer.h) on tiny
 * hand-built buffers: every accessor on good data, then out-of-range
 * offsets, vtables before the buffer, vectors and strings running past the
 * end, strings without their NUL. Bad input must give false, never a read
 * outside the buffer: each buffer under test lives in its own heap block of
 * exactly its size, so AddressSanitizer reports any stray byte.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "format/flatbuffer.h"

/* ---------------------------------------------------------------------- */
/* A tiny builder: bytes at explicit positions                             */
/* ---------------------------------------------------------------------- */

typedef struct fbuf {
    uint8_t b[512];
    size_t n;
} fbuf;

static void w8(fbuf *f, size_t pos, uint8_t v) {
    f->b[pos] = v;
    if (pos + 1 > f->n) f->n = pos + 1;
}
static void w16(fbuf *f, size_t pos, uint16_t v) {
    w8(f, pos, (uint8_t)v);
    w8(f, pos + 1, (uint8_t)(v >> 8));
}
static void w32(fbuf *f, size_t pos, uint32_t v) {
    w16(f, pos, (uint16_t)v);
    w16(f, pos + 2, (uint16_t)(v >> 16));
}
static void w64(fbuf *f, size_t pos, uint64_t v) {
    w32(f, pos, (uint32_t)v);
    w32(f, pos + 4, (uint32_t)(v >> 32));
}
/* A uoffset at pos pointing at target. */
static void wref(fbuf *f, size_t pos, size_t target) { w32(f, pos, (uint32_t)(target - pos)); }
/* A string at pos: length, bytes, NUL. Returns the next free position. */
static size_t wstr(fbuf *f, size_t pos, const char *s) {
    size_t n = strlen(s);
    w32(f, pos, (uint32_t)n);
    for (size_t i = 0; i < n; i++) w8(f, pos + 4 + i, (uint8_t)s[i]);
    w8(f, pos + 4 + n, 0);
    return pos + 4 + n + 1;
}

/*
 * The test buffer (all offsets in bytes):
 *
 *   0    u32 root -> 40
 *   4    "TEST"
 *   8    vtable of root: size 4+2*13=30, table size 64, fields:
 *          0 u8 @4, 1 u32 @8, 2 i32 @12, 3 u64 @16, 4 i64 @24, 5 f64 @32,
 *          6 str @40, 7 [i32] @44, 8 table @48, 9 [table] @52, 10 [str] @56,
 *          11 absent, 12 [u8]/[i64]/[f64] @60
 *   40   root table (soffset 32 -> vtable at 8), 64 bytes
 *   104  string "hello"
 *   116  vector<i32> [1, -2, 3]
 *   132  vector<table> [A, B]        (uoffsets point forward only)
 *   144  vtable of small tables: size 6, table size 8, field 0 u32 @4
 *   152  small table A (soffset 8), field 0 = 42
 *   160  small table B (soffset 16), field 0 = 43
 *   168  vector<string> ["a", "bc"]
 *   180  string "a"   188 string "bc"
 *   196  vector<i64> [-5, 7]        (also read as u64 / f64 / u8)
 *   216  end
 */
enum {
    ROOT = 40, VT = 8, STR = 104, VI32 = 116, VTAB = 132, SVT = 144, TA = 152, TB = 160,
    VSTR = 168, S1 = 180, S2 = 188, VI64 = 196, END = 216
};

static void build(fbuf *f) {
    memset(f, 0, sizeof *f);
    w32(f, 0, ROOT);
    memcpy(f->b + 4, "TEST", 4);
    w16(f, VT, 30);
    w16(f, VT + 2, 64);
    static const uint16_t offs[13] = {4, 8, 12, 16, 24, 32, 40, 44, 48, 52, 56, 0, 60};
    for (int i = 0; i < 13; i++) w16(f, VT + 4 + 2 * i, offs[i]);
    w32(f, ROOT, (uint32_t)(ROOT - VT));
    w8(f, ROOT + 4, 7);
    w32(f, ROOT + 8, 0xdeadbeefu);
    w32(f, ROOT + 12, (uint32_t)-5);
    w64(f, ROOT + 16, 0x0123456789abcdefull);
    w64(f, ROOT + 24, (uint64_t)-2);
    double d = 3.25;
    uint64_t db;
    memcpy(&db, &d, 8);
    w64(f, ROOT + 32, db);
    wref(f, ROOT + 40, STR);
    wref(f, ROOT + 44, VI32);
    wref(f, ROOT + 48, TA);
    wref(f, ROOT + 52, VTAB);
    wref(f, ROOT + 56, VSTR);
    wref(f, ROOT + 60, VI64);
    wstr(f, STR, "hello");
    w32(f, VI32, 3);
    w32(f, VI32 + 4, 1);
    w32(f, VI32 + 8, (uint32_t)-2);
    w32(f, VI32 + 12, 3);
    w16(f, SVT, 6);
    w16(f, SVT + 2, 8);
    w16(f, SVT + 4, 4);
    w32(f, TA, TA - SVT);
    w32(f, TA + 4, 42);
    w32(f, TB, TB - SVT);
    w32(f, TB + 4, 43);
    w32(f, VTAB, 2);
    wref(f, VTAB + 4, TA);
    wref(f, VTAB + 8, TB);
    wstr(f, S1, "a");
    wstr(f, S2, "bc");
    w32(f, VSTR, 2);
    wref(f, VSTR + 4, S1);
    wref(f, VSTR + 8, S2);
    w32(f, VI64, 2);
    w64(f, VI64 + 4, (uint64_t)-5);
    w64(f, VI64 + 12, 7);
    f->n = END;
}

/* A reader over an exact-size heap copy of the first n bytes of f. */
static fb_reader reader_of(const fbuf *f, size_t n) {
    fb_reader r;
    uint8_t *copy = malloc(n > 0 ? n : 1);
    if (n > 0) memcpy(copy, f->b, n);
    r.buf = copy;
    r.size = n;
    return r;
}
static void reader_free(fb_reader *r) {
    free((void *)r->buf);
    r->buf = NULL;
}

/* ---------------------------------------------------------------------- */
/* Good data                                                              */
/* ---------------------------------------------------------------------- */

static void test_good(void) {
    fbuf f;
    fb_table root, sub, t;
    fb_vec v;
    fb_str s;
    bool present = false;
    uint8_t u8 = 0;
    uint32_t u32 = 0;
    int32_t i32 = 0;
    uint64_t u64 = 0;
    int64_t i64 = 0;
    double f64 = 0;
    check_section("accessors on a good buffer");
    build(&f);
    fb_reader r = reader_of(&f, f.n);

    if (!CHECK(fb_root(&r, &root))) {
        reader_free(&r);
        return;
    }
    CHECK_EQ_INT(root.pos, ROOT);
    CHECK_EQ_INT(root.vt, VT);
    CHECK_EQ_INT(root.vt_size, 30);
    CHECK_EQ_INT(root.size, 64);

    CHECK(fb_u8(&r, &root, 0, 9, &u8) && u8 == 7);
    CHECK(fb_u32(&r, &root, 1, 9, &u32) && u32 == 0xdeadbeefu);
    CHECK(fb_i32(&r, &root, 2, 9, &i32) && i32 == -5);
    CHECK(fb_u64(&r, &root, 3, 9, &u64) && u64 == 0x0123456789abcdefull);
    CHECK(fb_i64(&r, &root, 4, 9, &i64) && i64 == -2);
    CHECK(fb_f64(&r, &root, 5, 9.0, &f64) && f64 == 3.25);
    for (unsigned id = 0; id <= 12; id++) CHECK_MSG(fb_has(&r, &root, id) == (id != 11), "id %u", id);
    /* Absent fields (zero in the vtable, or past its end) give the default. */
    CHECK(!fb_has(&r, &root, 13) && !fb_has(&r, &root, 1000));
    CHECK(fb_u8(&r, &root, 11, 99, &u8) && u8 == 99);
    CHECK(fb_u32(&r, &root, 13, 77, &u32) && u32 == 77);
    CHECK(fb_i32(&r, &root, 500, -1, &i32) && i32 == -1);
    CHECK(fb_u64(&r, &root, 11, 5, &u64) && u64 == 5);
    CHECK(fb_i64(&r, &root, 11, -9, &i64) && i64 == -9);
    CHECK(fb_f64(&r, &root, 11, 1.5, &f64) && f64 == 1.5);
    CHECK(fb_f64(&r, &root, 100, -0.5, &f64) && f64 == -0.5);

    CHECK(fb_str_field(&r, &root, 6, &s, &present) && present && s.len == 5 &&
          memcmp(s.data, "hello", 6) == 0);
    CHECK(fb_str_field(&r, &root, 11, &s, &present) && !present && s.len == 0 && s.data != NULL);

    CHECK(fb_vec_field(&r, &root, 7, 4, &v, &present) && present && v.len == 3);
    CHECK_EQ_INT(fb_vec_i32(&r, &v, 0), 1);
    CHECK_EQ_INT(fb_vec_i32(&r, &v, 1), -2);
    CHECK_EQ_INT(fb_vec_i32(&r, &v, 2), 3);
    CHECK_EQ_INT(fb_vec_i32(&r, &v, 3), 0); /* index past len reads nothing */
    CHECK_EQ_INT(fb_vec_i32(&r, &v, UINT32_MAX), 0);
    CHECK(fb_vec_bytes(&r, &v) == r.buf + VI32 + 4);
    CHECK(fb_vec_field(&r, &root, 11, 4, &v, &present) && !present && v.len == 0);

    CHECK(fb_table_field(&r, &root, 8, &sub, &present) && present && sub.pos == TA);
    CHECK(fb_u32(&r, &sub, 0, 0, &u32) && u32 == 42);
    CHECK(!fb_has(&r, &sub, 1));
    CHECK(fb_table_field(&r, &root, 11, &sub, &present) && !present);

    CHECK(fb_vec_field(&r, &root, 9, 4, &v, &present) && present && v.len == 2);
    CHECK(fb_vec_table(&r, &v, 0, &t) && fb_u32(&r, &t, 0, 0, &u32) && u32 == 42);
    CHECK(fb_vec_table(&r, &v, 1, &t) && fb_u32(&r, &t, 0, 0, &u32) && u32 == 43);
    CHECK(!fb_vec_table(&r, &v, 2, &t));

    CHECK(fb_vec_field(&r, &root, 10, 4, &v, &present) && present && v.len == 2);
    CHECK(fb_vec_str(&r, &v, 0, &s) && s.len == 1 && strcmp(s.data, "a") == 0);
    CHECK(fb_vec_str(&r, &v, 1, &s) && s.len == 2 && strcmp(s.data, "bc") == 0);
    CHECK(!fb_vec_str(&r, &v, 2, &s));

    CHECK(fb_vec_field(&r, &root, 12, 8, &v, &present) && present && v.len == 2);
    CHECK_EQ_INT(fb_vec_i64(&r, &v, 0), -5);
    CHECK_EQ_INT(fb_vec_i64(&r, &v, 1), 7);
    CHECK_EQ_INT(fb_vec_i64(&r, &v, 2), 0);
    CHECK(fb_vec_u64(&r, &v, 0) == (uint64_t)-5);
    CHECK(fb_vec_u64(&r, &v, 2) == 0);
    uint64_t bits = (uint64_t)-5;
    double want_d;
    memcpy(&want_d, &bits, 8);
    double got_d = fb_vec_f64(&r, &v, 0);
    CHECK(memcmp(&got_d, &want_d, 8) == 0);
    CHECK(fb_vec_f64(&r, &v, 2) == 0.0);
    /* The same vector as bytes: length 2, elements 1 byte. */
    CHECK(fb_vec_field(&r, &root, 12, 1, &v, &present) && v.len == 2);
    CHECK_EQ_INT(fb_vec_u8(&r, &v, 0), 0xfb);
    CHECK_EQ_INT(fb_vec_u8(&r, &v, 2), 0);

    /* Little-endian helpers. */
    static const uint8_t le[8] = {1, 2, 3, 4, 5, 6, 7, 0x88};
    CHECK_EQ_INT(fb_rd_u16(le), 0x0201);
    CHECK(fb_rd_u32(le) == 0x04030201u);
    CHECK(fb_rd_u64(le) == 0x8807060504030201ull);
    reader_free(&r);
}

/* A vtable placed after its table (negative soffset) is valid. */
static void test_vtable_after_table(void) {
    fbuf f;
    fb_table root;
    uint32_t u32 = 0;
    check_section("vtable after its table");
    memset(&f, 0, sizeof f);
    w32(&f, 0, 8);           /* root at 8 */
    w32(&f, 8, (uint32_t)-8); /* vtable at 16 */
    w32(&f, 12, 1234);
    w16(&f, 16, 6);
    w16(&f, 18, 8);
    w16(&f, 20, 4);
    fb_reader r = reader_of(&f, 22);
    CHECK(fb_root(&r, &root) && root.vt == 16);
    CHECK(fb_u32(&r, &root, 0, 0, &u32) && u32 == 1234);
    reader_free(&r);
}

/* ---------------------------------------------------------------------- */
/* Bad data                                                               */
/* ---------------------------------------------------------------------- */

/* Builds, lets edit() corrupt it, and reads root (must succeed if want_root). */
typedef void (*edit_fn)(fbuf *f);

static fb_reader edited(edit_fn edit) {
    fbuf f;
    build(&f);
    edit(&f);
    return reader_of(&f, f.n);
}

static void e_root_past_end(fbuf *f) { w32(f, 0, END); }
static void e_root_huge(fbuf *f) { w32(f, 0, 0xfffffffcu); }
static void e_vt_before_start(fbuf *f) { w32(f, ROOT, ROOT + 1); }         /* vt = -1 */
static void e_vt_far_before(fbuf *f) { w32(f, ROOT, 0x7fffffffu); }        /* vt << 0 */
static void e_vt_past_end(fbuf *f) { w32(f, ROOT, (uint32_t)-1000); }      /* vt beyond end */
static void e_vt_int_min(fbuf *f) { w32(f, ROOT, 0x80000000u); }           /* vt = pos + 2^31 */
static void e_vt_size_odd(fbuf *f) { w16(f, VT, 29); }
static void e_vt_size_small(fbuf *f) { w16(f, VT, 2); }
static void e_vt_size_huge(fbuf *f) { w16(f, VT, 0xfffe); }
static void e_table_size_huge(fbuf *f) { w16(f, VT + 2, 0xffff); }
static void e_table_size_small(fbuf *f) { w16(f, VT + 2, 2); }

static void test_bad_root(void) {
    static const struct { edit_fn fn; const char *what; } cases[] = {
        {e_root_past_end, "root offset at end"},
        {e_root_huge, "root offset huge"},
        {e_vt_before_start, "vtable one byte before the buffer"},
        {e_vt_far_before, "vtable far before the buffer"},
        {e_vt_past_end, "vtable past the end"},
        {e_vt_int_min, "soffset INT32_MIN"},
        {e_vt_size_odd, "odd vtable size"},
        {e_vt_size_small, "vtable size < 4"},
        {e_vt_size_huge, "vtable runs past the end"},
        {e_table_size_huge, "table runs past the end"},
        {e_table_size_small, "table size < 4"},
    };
    check_section("bad root / table / vtable");
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        fb_table t;
        fb_reader r = edited(cases[i].fn);
        CHECK_MSG(!fb_root(&r, &t), "%s", cases[i].what);
        reader_free(&r);
    }
    /* Buffers too small to hold a root offset. */
    for (size_t n = 0; n < 4; n++) {
        fbuf f;
        fb_table t;
        build(&f);
        fb_reader r = reader_of(&f, n);
        CHECK_MSG(!fb_root(&r, &t), "%zu-byte buffer", n);
        reader_free(&r);
    }
}

/* Field-level corruption: root reads fine; one accessor must fail. */
static void e_u32_offset_past_table(fbuf *f) { w16(f, VT + 4 + 2 * 1, 62); }  /* 62+4 > 64 */
static void e_u64_offset_past_table(fbuf *f) { w16(f, VT + 4 + 2 * 3, 60); }  /* 60+8 > 64 */
static void e_field_in_soffset(fbuf *f) { w16(f, VT + 4 + 2 * 0, 2); }        /* off < 4 */
static void e_str_ref_past_end(fbuf *f) { w32(f, ROOT + 40, 0x10000); }
static void e_str_ref_wraps(fbuf *f) { w32(f, ROOT + 40, 0xfffffff0u); }
static void e_str_len_past_end(fbuf *f) { w32(f, STR, 1000); }
static void e_str_len_huge(fbuf *f) { w32(f, STR, 0xffffffffu); }
static void e_str_no_nul(fbuf *f) { w8(f, STR + 4 + 5, 'x'); }
static void e_str_inner_nul(fbuf *f) { w8(f, STR + 4 + 2, 0); }
static void e_vec_len_past_end(fbuf *f) { w32(f, VI32, 30); }                  /* 120 bytes */
static void e_vec_len_huge(fbuf *f) { w32(f, VI32, 0x40000001u); }            /* *4 wraps u32 */
static void e_vec_len_max(fbuf *f) { w32(f, VI32, 0xffffffffu); }
static void e_table_ref_past_end(fbuf *f) { w32(f, ROOT + 48, END); }
static void e_table_bad_vt(fbuf *f) { w32(f, TA, 0x7ffffff0u); }
static void e_vec_elem_ref_bad(fbuf *f) { w32(f, VTAB + 8, 0xfffffff0u); }
static void e_vec_str_elem_no_nul(fbuf *f) { w8(f, S2 + 4 + 2, 'z'); }
static void e_vec_str_elem_past_end(fbuf *f) { w32(f, S2, 500); }

static void test_bad_fields(void) {
    fb_table root, t;
    fb_vec v;
    fb_str s;
    bool present;
    uint32_t u32;
    uint64_t u64;
    uint8_t u8;
    check_section("bad fields");
#define WITH(editf)                                                                               \
    for (fb_reader r = edited(editf), *once_ = &r; once_ != NULL; reader_free(&r), once_ = NULL) \
        if (CHECK_MSG(fb_root(&r, &root), "%s: root", #editf))

    WITH(e_u32_offset_past_table) {
        CHECK(!fb_u32(&r, &root, 1, 0, &u32));
        CHECK(fb_u8(&r, &root, 0, 0, &u8) && u8 == 7); /* neighbours still fine */
    }
    WITH(e_u64_offset_past_table) {
        double d;
        int64_t i64;
        CHECK(!fb_u64(&r, &root, 3, 0, &u64));
        CHECK(!fb_i64(&r, &root, 3, 0, &i64));
        CHECK(!fb_f64(&r, &root, 3, 0, &d));
    }
    WITH(e_field_in_soffset) CHECK(!fb_u8(&r, &root, 0, 0, &u8));
    WITH(e_str_ref_past_end) CHECK(!fb_str_field(&r, &root, 6, &s, &present));
    WITH(e_str_ref_wraps) CHECK(!fb_str_field(&r, &root, 6, &s, &present));
    WITH(e_str_len_past_end) CHECK(!fb_str_field(&r, &root, 6, &s, &present));
    WITH(e_str_len_huge) CHECK(!fb_str_field(&r, &root, 6, &s, &present));
    WITH(e_str_no_nul) CHECK(!fb_str_field(&r, &root, 6, &s, &present));
    WITH(e_str_inner_nul) CHECK(!fb_str_field(&r, &root, 6, &s, &present));
    WITH(e_vec_len_past_end) {
        CHECK(!fb_vec_field(&r, &root, 7, 4, &v, &present));
        CHECK(fb_vec_field(&r, &root, 7, 1, &v, &present) && v.len == 30); /* 30 bytes fit */
    }
    WITH(e_vec_len_huge) {
        CHECK(!fb_vec_field(&r, &root, 7, 4, &v, &present));
        CHECK(!fb_vec_field(&r, &root, 7, 8, &v, &present));
    }
    WITH(e_vec_len_max) {
        CHECK(!fb_vec_field(&r, &root, 7, 1, &v, &present));
        CHECK(!fb_vec_field(&r, &root, 7, 8, &v, &present));
    }
    WITH(e_table_ref_past_end) CHECK(!fb_table_field(&r, &root, 8, &t, &present));
    WITH(e_table_bad_vt) {
        CHECK(!fb_table_field(&r, &root, 8, &t, &present));
        CHECK(fb_vec_field(&r, &root, 9, 4, &v, &present));
        CHECK(!fb_vec_table(&r, &v, 0, &t));
        CHECK(fb_vec_table(&r, &v, 1, &t)); /* B is untouched */
    }
    WITH(e_vec_elem_ref_bad) {
        CHECK(fb_vec_field(&r, &root, 9, 4, &v, &present));
        CHECK(fb_vec_table(&r, &v, 0, &t));
        CHECK(!fb_vec_table(&r, &v, 1, &t));
    }
    WITH(e_vec_str_elem_no_nul) {
        CHECK(fb_vec_field(&r, &root, 10, 4, &v, &present));
        CHECK(fb_vec_str(&r, &v, 0, &s));
        CHECK(!fb_vec_str(&r, &v, 1, &s));
    }
    WITH(e_vec_str_elem_past_end) {
        CHECK(fb_vec_field(&r, &root, 10, 4, &v, &present));
        CHECK(!fb_vec_str(&r, &v, 1, &s));
    }
#undef WITH

    /* A string that ends exactly at the end of the buffer has no room for
     * its NUL: refused, and the byte after it is never read. */
    {
        fbuf f;
        build(&f);
        fb_reader r = reader_of(&f, STR + 4 + 5); /* cut right before the NUL */
        if (CHECK(fb_root(&r, &root))) CHECK(!fb_str_field(&r, &root, 6, &s, &present));
        reader_free(&r);
        r = reader_of(&f, STR + 4 + 6); /* NUL included: fine */
        if (CHECK(fb_root(&r, &root))) CHECK(fb_str_field(&r, &root, 6, &s, &present) && s.len == 5);
        reader_free(&r);
    }
    /* A vector whose elements end exactly at the end is fine; one short is not. */
    {
        fbuf f;
        build(&f);
        fb_reader r = reader_of(&f, VI32 + 16);
        if (CHECK(fb_root(&r, &root))) CHECK(fb_vec_field(&r, &root, 7, 4, &v, &present) && v.len == 3);
        reader_free(&r);
        r = reader_of(&f, VI32 + 15);
        if (CHECK(fb_root(&r, &root))) CHECK(!fb_vec_field(&r, &root, 7, 4, &v, &present));
        reader_free(&r);
    }
}

/* ---------------------------------------------------------------------- */
/* Robustness sweeps: never a crash                                       */
/* ---------------------------------------------------------------------- */

static unsigned g_sink;

/* Calls every accessor, following references, on whatever the buffer holds. */
static void walk(const fb_reader *r) {
    fb_table root, t;
    fb_vec v;
    fb_str s;
    bool present;
    uint8_t u8;
    uint32_t u32;
    int32_t i32;
    uint64_t u64;
    int64_t i64;
    double d;
    if (!fb_root(r, &root)) return;
    for (unsigned id = 0; id < 16; id++) {
        g_sink += fb_has(r, &root, id);
        g_sink += fb_u8(r, &root, id, 0, &u8);
        g_sink += fb_u32(r, &root, id, 0, &u32);
        g_sink += fb_i32(r, &root, id, 0, &i32);
        g_sink += fb_u64(r, &root, id, 0, &u64);
        g_sink += fb_i64(r, &root, id, 0, &i64);
        g_sink += fb_f64(r, &root, id, 0, &d);
        if (fb_str_field(r, &root, id, &s, &present) && present) g_sink += (unsigned)strlen(s.data);
        if (fb_table_field(r, &root, id, &t, &present) && present)
            g_sink += fb_u32(r, &t, 0, 0, &u32) ? u32 : 0;
        static const size_t elems[] = {1, 4, 8};
        for (size_t e = 0; e < 3; e++) {
            if (!fb_vec_field(r, &root, id, elems[e], &v, &present) || !present) continue;
            for (uint32_t i = 0; i < v.len && i < 8; i++) {
                g_sink += fb_vec_u8(r, &v, i);
                if (elems[e] >= 4) g_sink += (unsigned)fb_vec_i32(r, &v, i);
                if (elems[e] == 8) {
                    g_sink += (unsigned)fb_vec_i64(r, &v, i) + (unsigned)fb_vec_u64(r, &v, i);
                    g_sink += fb_vec_f64(r, &v, i) > 0;
                }
                if (elems[e] == 4) {
                    if (fb_vec_table(r, &v, i, &t)) g_sink += fb_u32(r, &t, 0, 0, &u32);
                    if (fb_vec_str(r, &v, i, &s)) g_sink += (unsigned)strlen(s.data);
                }
            }
        }
    }
}

static void test_sweeps(void) {
    fbuf f;
    check_section("truncations and byte flips never crash");
    build(&f);
    /* Every truncation. */
    int roots = 0;
    for (size_t n = 0; n <= f.n; n++) {
        fb_reader r = reader_of(&f, n);
        fb_table t;
        roots += fb_root(&r, &t);
        walk(&r);
        reader_free(&r);
    }
    CHECK(roots > 0); /* long enough prefixes do have a root */
    /* Every byte set to a few hostile values. */
    static const uint8_t vals[] = {0x00, 0x01, 0x7f, 0x80, 0xfe, 0xff};
    int walks = 0;
    for (size_t pos = 0; pos < f.n; pos++) {
        for (size_t k = 0; k < sizeof vals; k++) {
            fbuf g = f;
            g.b[pos] = vals[k];
            fb_reader r = reader_of(&g, g.n);
            walk(&r);
            reader_free(&r);
            walks++;
        }
    }
    CHECK_EQ_INT(walks, (int)(f.n * sizeof vals));
    /* Random 32-bit words written over random positions. */
    uint32_t x = 0x9e3779b9u;
    for (int i = 0; i < 20000; i++) {
        fbuf g = f;
        for (int j = 0; j < 3; j++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            size_t pos = x % (g.n - 3);
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            w32(&g, pos, x);
        }
        g.n = f.n;
        fb_reader r = reader_of(&g, g.n);
        walk(&r);
        reader_free(&r);
    }
    CHECK(1); /* reaching here without a sanitizer report is the check */
    printf("  (sink %u)\n", g_sink & 1);
}

int main(void) {
    test_good();
    test_vtable_after_table();
    test_bad_root();
    test_bad_fields();
    test_sweeps();
    return check_finish();
}
