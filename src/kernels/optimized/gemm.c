/*
 * f32 GEMM: configurations by instruction set, weight packing, and the
 * driver that spreads tiles of the output over the thread pool (gemm.h).
 */
#include "gemm.h"
#include "tiles.h"

#include <string.h>

#include "core/internal.h"
#include "ember/threadpool.h"

static const eko_f32_gemm_config g_configs[EKO_ISA_COUNT] = {
    [EKO_ISA_SCALAR] = {EKO_ISA_SCALAR, 4, 8, eko_f32_gemm_4x8_scalar,
                        eko_f32_igemm_4x8_scalar},
#ifdef EMBER_HAVE_AVX2_KERNELS
    [EKO_ISA_AVX2] = {EKO_ISA_AVX2, 6, 16, eko_f32_gemm_6x16_avx2,
                      eko_f32_igemm_6x16_avx2},
#endif
#ifdef EMBER_HAVE_AVX512_KERNELS
    [EKO_ISA_AVX512] = {EKO_ISA_AVX512, 8, 32, eko_f32_gemm_8x32_avx512,
                        eko_f32_igemm_8x32_avx512},
#endif
#ifdef EMBER_HAVE_NEON_KERNELS
    [EKO_ISA_NEON] = {EKO_ISA_NEON, 8, 8, eko_f32_gemm_8x8_neon,
                      eko_f32_igemm_8x8_neon},
#endif
};

const eko_f32_gemm_config *eko_f32_gemm_config_for(eko_isa isa) {
    if ((unsigned)isa >= EKO_ISA_COUNT || g_configs[isa].ukernel == NULL) return NULL;
    return &g_configs[isa];
}

#ifdef EMBER_HAVE_AVX2_KERNELS
/* 8 columns a panel, in AVX2 registers (AVX-512 runs them as well) */
static const eko_f32_gemm_config g_narrow_avx2 = {EKO_ISA_AVX2, 8, 8, eko_f32_gemm_8x8_avx2,
                                                  eko_f32_igemm_8x8_avx2};
#endif

const eko_f32_gemm_config *eko_f32_gemm_config_grouped(const eko_f32_gemm_config *cfg,
                                                       size_t gout) {
#ifdef EMBER_HAVE_AVX2_KERNELS
    if (cfg->isa == EKO_ISA_AVX2 || cfg->isa == EKO_ISA_AVX512) {
        if (gout <= 8) return &g_narrow_avx2;
        if (gout <= 16 && cfg->nr > 16) return &g_configs[EKO_ISA_AVX2];
    }
#endif
    (void)gout;
    return cfg;
}

const eko_f32_gemm_config *eko_f32_gemm_config_active(void) {
    const eko_f32_gemm_config *cfg = eko_f32_gemm_config_for(eko_isa_active());
    return cfg != NULL ? cfg : &g_configs[EKO_ISA_SCALAR];
}

bool eko_f32_packed_size(const eko_f32_gemm_config *cfg, size_t n, size_t k, size_t *floats) {
    size_t panels = n / cfg->nr + (n % cfg->nr != 0), per_panel;
    /* each panel: nr biases, then k rows of nr weights */
    return !ember_add_overflow(k, 1, &per_panel) &&
           !ember_mul_overflow(per_panel, cfg->nr, &per_panel) &&
           !ember_mul_overflow(per_panel, panels, floats);
}

/* Panels [p0, p1) of a packed weight. */
static void pack_panels(const eko_f32_gemm_config *cfg, size_t n, size_t k, const float *w,
                        bool k_major, const float *bias, float *packed, size_t p0, size_t p1) {
    const size_t nr = cfg->nr;
    float *out = packed + p0 * (k + 1) * nr;
    for (size_t n0 = p0 * nr; n0 < n && n0 < p1 * nr; n0 += nr) {
        const size_t nc = n - n0 < nr ? n - n0 : nr;
        for (size_t j = 0; j < nr; j++) out[j] = bias != NULL && j < nc ? bias[n0 + j] : 0.0f;
        out += nr;
        for (size_t kk = 0; kk < k; kk++, out += nr) {
            for (size_t j = 0; j < nc; j++)
                out[j] = k_major ? w[kk * n + n0 + j] : w[(n0 + j) * k + kk];
            for (size_t j = nc; j < nr; j++) out[j] = 0.0f;
        }
    }
}

void eko_f32_pack(const eko_f32_gemm_config *cfg, size_t n, size_t k, const float *w, bool k_major,
                  const float *bias, float *out) {
    pack_panels(cfg, n, k, w, k_major, bias, out, 0, n / cfg->nr + (n % cfg->nr != 0));
}

typedef struct pack_job {
    const eko_f32_gemm_config *cfg;
    size_t n, k;
    const float *w;
    bool k_major;
    const float *bias;
    float *out;
} pack_job;

static void pack_task(void *ctx, size_t thread, size_t start, size_t count) {
    const pack_job *j = ctx;
    (void)thread;
    pack_panels(j->cfg, j->n, j->k, j->w, j->k_major, j->bias, j->out, start, start + count);
}

void eko_f32_pack_parallel(const eko_f32_gemm_config *cfg, struct ember_threadpool *pool,
                           size_t n, size_t k, const float *w, bool k_major, const float *bias,
                           float *out) {
    pack_job j = {cfg, n, k, w, k_major, bias, out};
    /* tiles of 16 panels: each thread writes (and first touches) runs of
     * whole pages of the packed copy */
    ember_parallel_1d_on(pool, ember_parallel_threads(pool, ember_work_mul(ember_work_mul(n, k), 8)),
                         pack_task, &j, n / cfg->nr + (n % cfg->nr != 0), 16);
}

/* One product split in tiles: a block of rows by a group of panels. */
typedef struct gemm_job {
    const eko_f32_gemm_config *cfg;
    size_t m, n, k;
    const float *a;
    size_t a_stride;
    const float *packed;
    float *c;
    size_t c_stride;
    float min, max;
    size_t panel_floats;
    eko_tiles tiles;
} gemm_job;

static void gemm_tiles(void *ctx, size_t thread, size_t start, size_t count) {
    const gemm_job *j = ctx;
    const size_t mr = j->cfg->mr, nr = j->cfg->nr;
    (void)thread;
    for (size_t t = start; t < start + count; t++) {
        size_t m0, m1, p0, p1;
        eko_tiles_bounds(&j->tiles, t, &m0, &m1, &p0, &p1);
        for (size_t p = p0; p < p1; p++) {
            const size_t n0 = p * nr, nc = j->n - n0 < nr ? j->n - n0 : nr;
            const float *w = j->packed + p * j->panel_floats;
            for (size_t r = m0; r < m1; r += mr) {
                const size_t rows = m1 - r < mr ? m1 - r : mr;
                j->cfg->ukernel(rows, nc, j->k, j->a + r * j->a_stride, j->a_stride, w,
                                j->c + r * j->c_stride + n0, j->c_stride, j->min, j->max);
            }
        }
    }
}

void eko_f32_gemm_serial(const eko_f32_gemm_config *cfg, size_t m, size_t n, size_t k,
                         const float *a, size_t a_stride, const float *packed, float *c,
                         size_t c_stride, float min, float max) {
    if (m == 0 || n == 0) return;
    gemm_job j = {cfg, m, n, k, a, a_stride, packed, c, c_stride, min, max, (k + 1) * cfg->nr,
                  eko_tiles_single(m, n / cfg->nr + (n % cfg->nr != 0))};
    gemm_tiles(&j, 0, 0, 1);
}

void eko_f32_gemm(const eko_f32_gemm_config *cfg, struct ember_threadpool *pool, size_t m,
                  size_t n, size_t k, const float *a, size_t a_stride, const float *packed,
                  float *c, size_t c_stride, float min, float max) {
    if (m == 0 || n == 0) return;
    const size_t threads = ember_parallel_threads(pool, ember_work_mul(ember_work_mul(m, n), k));
    gemm_job j = {cfg, m, n, k, a, a_stride, packed, c, c_stride, min, max, (k + 1) * cfg->nr,
                  eko_tiles_plan(m, n / cfg->nr + (n % cfg->nr != 0), threads)};
    ember_parallel_1d_on(pool, threads, gemm_tiles, &j, j.tiles.count, 1);
}
