/*
 * roofline: the two ceilings a CPU puts on a model, measured.
 *
 *   read bandwidth  stream-read a buffer far larger than the caches with wide
 *                   vector loads into several accumulators; each thread reads
 *                   its own contiguous share; best of N passes
 *   fp32 FMA peak   independent FMA chains held in registers (more chains than
 *                   FMA latency x FMA ports, so the chains never wait on each
 *                   other); best of N runs
 *
 * Both at each thread count asked for. The vector width is picked at run time:
 * AVX-512F where the CPU and OS have it, else AVX2+FMA, else plain C (which the
 * output then says). One line of JSON on stdout:
 *
 *   {"isa": "avx2+fma", "lanes": 8, "fma_chains": 12, "buffer_bytes": ...,
 *    "passes": 20, "read_gbs": {"1": 11.9, "2": 17.5},
 *    "fma_gflops": {"1": 68.3, "2": 135.9}}
 *
 * usage: roofline [--mib N] [--passes N] [--threads 1,2] [--isa auto|avx512|avx2|scalar]
 *                 [--fma-seconds S]
 * Defaults: a 512 MiB buffer, 20 passes, FMA runs of 0.05 s: many short
 * passes, so that on a shared machine the best of them ran uncontended.
 *
 * Build (one file, C11 + pthreads; the ISA code is compiled per function with
 * __attribute__((target))):  cc -O2 -std=c11 -pthread roofline.c -o roofline
 */
#define _DEFAULT_SOURCE /* madvise, MADV_HUGEPAGE (Linux), beside POSIX */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ROOFLINE_X86 1
#else
#define ROOFLINE_X86 0
#endif

#define MAX_THREADS 64
#define MAX_COUNTS 16

enum isa { ISA_SCALAR, ISA_AVX2, ISA_AVX512 };

static const char *isa_name(enum isa isa) {
    switch (isa) {
    case ISA_AVX512: return "avx512f";
    case ISA_AVX2: return "avx2+fma";
    default: return "scalar";
    }
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* ------------------------------------------------------------------------- */
/* Read kernels: sum n floats (n a multiple of 128) into 8 vector accumulators,
 * 8 loads per iteration, so the adds' latency never limits the loads. */

static float read_scalar(const float *p, size_t n) {
    float acc[8] = {0};
    for (size_t i = 0; i < n; i += 8) {
        for (int j = 0; j < 8; j++) acc[j] += p[i + (size_t)j];
    }
    float s = 0.0f;
    for (int j = 0; j < 8; j++) s += acc[j];
    return s;
}

#if ROOFLINE_X86
__attribute__((target("avx2,fma")))
static float read_avx2(const float *p, size_t n) {
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 64) {  /* 256 bytes per iteration */
        a0 = _mm256_add_ps(a0, _mm256_load_ps(p + i));
        a1 = _mm256_add_ps(a1, _mm256_load_ps(p + i + 8));
        a2 = _mm256_add_ps(a2, _mm256_load_ps(p + i + 16));
        a3 = _mm256_add_ps(a3, _mm256_load_ps(p + i + 24));
        a4 = _mm256_add_ps(a4, _mm256_load_ps(p + i + 32));
        a5 = _mm256_add_ps(a5, _mm256_load_ps(p + i + 40));
        a6 = _mm256_add_ps(a6, _mm256_load_ps(p + i + 48));
        a7 = _mm256_add_ps(a7, _mm256_load_ps(p + i + 56));
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)),
                             _mm256_add_ps(_mm256_add_ps(a4, a5), _mm256_add_ps(a6, a7)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[1] + out[2] + out[3] + out[4] + out[5] + out[6] + out[7];
}

__attribute__((target("avx512f")))
static float read_avx512(const float *p, size_t n) {
    __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m512 a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (size_t i = 0; i < n; i += 128) {  /* 512 bytes per iteration */
        a0 = _mm512_add_ps(a0, _mm512_load_ps(p + i));
        a1 = _mm512_add_ps(a1, _mm512_load_ps(p + i + 16));
        a2 = _mm512_add_ps(a2, _mm512_load_ps(p + i + 32));
        a3 = _mm512_add_ps(a3, _mm512_load_ps(p + i + 48));
        a4 = _mm512_add_ps(a4, _mm512_load_ps(p + i + 64));
        a5 = _mm512_add_ps(a5, _mm512_load_ps(p + i + 80));
        a6 = _mm512_add_ps(a6, _mm512_load_ps(p + i + 96));
        a7 = _mm512_add_ps(a7, _mm512_load_ps(p + i + 112));
    }
    __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(a0, a1), _mm512_add_ps(a2, a3)),
                             _mm512_add_ps(_mm512_add_ps(a4, a5), _mm512_add_ps(a6, a7)));
    return _mm512_reduce_add_ps(s);
}
#endif

/* ------------------------------------------------------------------------- */
/* FMA kernels: `iters` rounds of c = c * m + d on every chain. Returns a value
 * that depends on every chain, so none can be dropped. m is just below 1 and d
 * small, so the chains settle at d / (1 - m) without overflow or denormals. */

#define SCALAR_CHAINS 16
#define AVX2_CHAINS 12    /* 12 accumulators + m + d = 14 of 16 ymm registers */
#define AVX512_CHAINS 24  /* 24 accumulators + m + d = 26 of 32 zmm registers */

static float fma_scalar(long iters, float m, float d) {
    float c[SCALAR_CHAINS];
    for (int j = 0; j < SCALAR_CHAINS; j++) c[j] = (float)j;
    for (long i = 0; i < iters; i++) {
        for (int j = 0; j < SCALAR_CHAINS; j++) c[j] = c[j] * m + d;
    }
    float s = 0.0f;
    for (int j = 0; j < SCALAR_CHAINS; j++) s += c[j];
    return s;
}

#if ROOFLINE_X86
__attribute__((target("avx2,fma")))
static float fma_avx2(long iters, float mf, float df) {
    const __m256 m = _mm256_set1_ps(mf), d = _mm256_set1_ps(df);
    __m256 c0 = _mm256_set1_ps(0.0f), c1 = _mm256_set1_ps(1.0f), c2 = _mm256_set1_ps(2.0f);
    __m256 c3 = _mm256_set1_ps(3.0f), c4 = _mm256_set1_ps(4.0f), c5 = _mm256_set1_ps(5.0f);
    __m256 c6 = _mm256_set1_ps(6.0f), c7 = _mm256_set1_ps(7.0f), c8 = _mm256_set1_ps(8.0f);
    __m256 c9 = _mm256_set1_ps(9.0f), c10 = _mm256_set1_ps(10.0f), c11 = _mm256_set1_ps(11.0f);
    for (long i = 0; i < iters; i++) {
        c0 = _mm256_fmadd_ps(c0, m, d);
        c1 = _mm256_fmadd_ps(c1, m, d);
        c2 = _mm256_fmadd_ps(c2, m, d);
        c3 = _mm256_fmadd_ps(c3, m, d);
        c4 = _mm256_fmadd_ps(c4, m, d);
        c5 = _mm256_fmadd_ps(c5, m, d);
        c6 = _mm256_fmadd_ps(c6, m, d);
        c7 = _mm256_fmadd_ps(c7, m, d);
        c8 = _mm256_fmadd_ps(c8, m, d);
        c9 = _mm256_fmadd_ps(c9, m, d);
        c10 = _mm256_fmadd_ps(c10, m, d);
        c11 = _mm256_fmadd_ps(c11, m, d);
    }
    __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                             _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
    s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
    float out[8];
    _mm256_storeu_ps(out, s);
    return out[0] + out[7];
}

__attribute__((target("avx512f")))
static float fma_avx512(long iters, float mf, float df) {
    const __m512 m = _mm512_set1_ps(mf), d = _mm512_set1_ps(df);
    __m512 c[AVX512_CHAINS];
    for (int j = 0; j < AVX512_CHAINS; j++) c[j] = _mm512_set1_ps((float)j);
    for (long i = 0; i < iters; i++) {
        /* a fixed-count loop over a register array: fully unrolled at -O2 with
         * the chains kept in zmm registers */
#if defined(__clang__)
#pragma clang loop unroll(full)
#elif defined(__GNUC__)
#pragma GCC unroll 24
#endif
        for (int j = 0; j < AVX512_CHAINS; j++) c[j] = _mm512_fmadd_ps(c[j], m, d);
    }
    __m512 s = c[0];
    for (int j = 1; j < AVX512_CHAINS; j++) s = _mm512_add_ps(s, c[j]);
    return _mm512_reduce_add_ps(s);
}
#endif

/* ------------------------------------------------------------------------- */
/* Threads: every worker waits at a barrier, runs its share, waits again; the
 * main thread times from the first barrier to the second. */

typedef struct {
    enum isa isa;
    int fma;              /* 1: FMA kernel, 0: read kernel */
    const float *p;       /* read: this thread's share */
    size_t n;             /* read: floats in the share */
    long iters;           /* fma: rounds */
    float sink;           /* result, so the work stays */
    pthread_barrier_t *start, *stop;
} job;

static void run_job(job *j) {
    float s = 0.0f;
    if (j->fma) {
        const float m = 0.999999f, d = 1e-6f;
        switch (j->isa) {
#if ROOFLINE_X86
        case ISA_AVX512: s = fma_avx512(j->iters, m, d); break;
        case ISA_AVX2: s = fma_avx2(j->iters, m, d); break;
#endif
        default: s = fma_scalar(j->iters, m, d); break;
        }
    } else {
        switch (j->isa) {
#if ROOFLINE_X86
        case ISA_AVX512: s = read_avx512(j->p, j->n); break;
        case ISA_AVX2: s = read_avx2(j->p, j->n); break;
#endif
        default: s = read_scalar(j->p, j->n); break;
        }
    }
    j->sink = s;
}

static void *worker(void *arg) {
    job *j = arg;
    pthread_barrier_wait(j->start);
    run_job(j);
    pthread_barrier_wait(j->stop);
    return NULL;
}

/* Runs jobs[0..nt) at once (the caller is worker 0); returns the seconds
 * between the start and the end of the slowest. */
static double run_parallel(job *jobs, int nt, float *sink) {
    pthread_t tid[MAX_THREADS];
    pthread_barrier_t start, stop;
    pthread_barrier_init(&start, NULL, (unsigned)nt);
    pthread_barrier_init(&stop, NULL, (unsigned)nt);
    for (int t = 0; t < nt; t++) {
        jobs[t].start = &start;
        jobs[t].stop = &stop;
    }
    for (int t = 1; t < nt; t++) {
        if (pthread_create(&tid[t], NULL, worker, &jobs[t]) != 0) {
            fprintf(stderr, "roofline: pthread_create failed\n");
            exit(1);
        }
    }
    pthread_barrier_wait(&start);
    double t0 = now_s();
    run_job(&jobs[0]);
    pthread_barrier_wait(&stop);
    double dt = now_s() - t0;
    for (int t = 1; t < nt; t++) pthread_join(tid[t], NULL);
    pthread_barrier_destroy(&start);
    pthread_barrier_destroy(&stop);
    for (int t = 0; t < nt; t++) *sink += jobs[t].sink;
    return dt;
}

/* Best read bandwidth (bytes/s) over `passes` passes of nt threads over buf. */
static double measure_read(enum isa isa, const float *buf, size_t n, int nt, int passes,
                           float *sink) {
    job jobs[MAX_THREADS];
    /* shares in whole 512-byte blocks, so every kernel's stride divides them */
    size_t blocks = n / 128, per = blocks / (size_t)nt;
    for (int t = 0; t < nt; t++) {
        size_t first = per * (size_t)t;
        size_t count = (t == nt - 1) ? blocks - first : per;
        jobs[t] = (job){.isa = isa, .fma = 0, .p = buf + first * 128, .n = count * 128};
    }
    double best = 0.0;
    for (int k = 0; k < passes; k++) {
        double dt = run_parallel(jobs, nt, sink);
        double bw = (double)(blocks * 128 * sizeof(float)) / dt;
        if (bw > best) best = bw;
    }
    return best;
}

static int chains_of(enum isa isa) {
    return isa == ISA_AVX512 ? AVX512_CHAINS : isa == ISA_AVX2 ? AVX2_CHAINS : SCALAR_CHAINS;
}

static int lanes_of(enum isa isa) {
    return isa == ISA_AVX512 ? 16 : isa == ISA_AVX2 ? 8 : 1;
}

/* Best FMA rate (flop/s, an FMA counting 2) over `passes` runs on nt threads. */
static double measure_fma(enum isa isa, int nt, int passes, double seconds, float *sink) {
    const double flops_per_iter = 2.0 * chains_of(isa) * lanes_of(isa);
    /* calibrate the rounds to about `seconds` on one thread */
    long iters = 1L << 16;
    for (;;) {
        job j = {.isa = isa, .fma = 1, .iters = iters};
        double t0 = now_s();
        run_job(&j);
        double dt = now_s() - t0;
        *sink += j.sink;
        if (dt > seconds / 8 || iters > (1L << 40)) {
            iters = (long)((double)iters * seconds / (dt > 1e-9 ? dt : 1e-9));
            break;
        }
        iters *= 4;
    }
    if (iters < 1) iters = 1;
    job jobs[MAX_THREADS];
    for (int t = 0; t < nt; t++) jobs[t] = (job){.isa = isa, .fma = 1, .iters = iters};
    double best = 0.0;
    for (int k = 0; k < passes; k++) {
        double dt = run_parallel(jobs, nt, sink);
        double rate = flops_per_iter * (double)iters * nt / dt;
        if (rate > best) best = rate;
    }
    return best;
}

static enum isa detect_isa(void) {
#if ROOFLINE_X86 && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    /* __builtin_cpu_supports also checks that the OS saves the registers */
    if (__builtin_cpu_supports("avx512f")) return ISA_AVX512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return ISA_AVX2;
#endif
    return ISA_SCALAR;
}

_Noreturn static void usage(void) {
    fprintf(stderr,
            "usage: roofline [--mib N] [--passes N] [--threads 1,2] "
            "[--isa auto|avx512|avx2|scalar] [--fma-seconds S]\n");
    exit(2);
}

static long parse_long(const char *s, long lo, long hi) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi) usage();
    return v;
}

int main(int argc, char **argv) {
    long mib = 512, passes = 20;
    double fma_seconds = 0.05;
    int counts[MAX_COUNTS] = {1, 2}, ncounts = 2;
    enum isa isa = detect_isa(), best_isa = isa;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (i + 1 >= argc) usage();
        const char *v = argv[++i];
        if (strcmp(a, "--mib") == 0) {
            mib = parse_long(v, 1, 1L << 20);
        } else if (strcmp(a, "--passes") == 0) {
            passes = parse_long(v, 1, 1000);
        } else if (strcmp(a, "--fma-seconds") == 0) {
            fma_seconds = strtod(v, NULL);
            if (!(fma_seconds > 0.0 && fma_seconds < 100.0)) usage();
        } else if (strcmp(a, "--threads") == 0) {
            ncounts = 0;
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
                if (ncounts == MAX_COUNTS) usage();
                counts[ncounts++] = (int)parse_long(tok, 1, MAX_THREADS);
            }
            if (ncounts == 0) usage();
        } else if (strcmp(a, "--isa") == 0) {
            enum isa want = strcmp(v, "avx512") == 0   ? ISA_AVX512
                            : strcmp(v, "avx2") == 0   ? ISA_AVX2
                            : strcmp(v, "scalar") == 0 ? ISA_SCALAR
                            : strcmp(v, "auto") == 0   ? best_isa
                                                       : (usage(), ISA_SCALAR);
            if (want > best_isa) {
                fprintf(stderr, "roofline: this CPU lacks %s\n", isa_name(want));
                return 1;
            }
            isa = want;
        } else {
            usage();
        }
    }

    size_t bytes = (size_t)mib << 20;
    size_t n = bytes / sizeof(float) / 128 * 128;  /* whole 512-byte blocks */
    /* 2 MiB aligned and sized, so the whole buffer can sit on huge pages */
    const size_t huge_align = (size_t)2 << 20;
    size_t alloc = (n * sizeof(float) + huge_align - 1) / huge_align * huge_align;
    float *buf = aligned_alloc(huge_align, alloc);
    if (!buf) {
        fprintf(stderr, "roofline: cannot allocate %ld MiB\n", mib);
        return 1;
    }
    int huge = 0;
#if defined(MADV_HUGEPAGE)
    /* huge pages where the kernel offers them: the probe measures DRAM, not
     * TLB misses (a runtime that maps its weights with 4 KiB pages may lose
     * some of this) */
    if (madvise(buf, alloc, MADV_HUGEPAGE) == 0) huge = 1;
#endif
    /* touch every page (and keep the sums finite) before timing */
    for (size_t i = 0; i < n; i++) buf[i] = (float)(i & 1023) * (1.0f / 1024.0f);

    float sink = 0.0f;
    double read_gbs[MAX_COUNTS], fma_gflops[MAX_COUNTS];
    for (int c = 0; c < ncounts; c++) {
        read_gbs[c] = measure_read(isa, buf, n, counts[c], (int)passes, &sink) / 1e9;
        fma_gflops[c] = measure_fma(isa, counts[c], (int)passes, fma_seconds, &sink) / 1e9;
    }
    free(buf);

    printf("{\"isa\": \"%s\", \"lanes\": %d, \"fma_chains\": %d, \"buffer_bytes\": %zu, "
           "\"huge_pages\": %s, \"passes\": %ld, \"read_gbs\": {",
           isa_name(isa), lanes_of(isa), chains_of(isa), n * sizeof(float),
           huge ? "true" : "false", passes);
    for (int c = 0; c < ncounts; c++) printf("%s\"%d\": %.3f", c ? ", " : "", counts[c], read_gbs[c]);
    printf("}, \"fma_gflops\": {");
    for (int c = 0; c < ncounts; c++) {
        printf("%s\"%d\": %.3f", c ? ", " : "", counts[c], fma_gflops[c]);
    }
    /* sink is printed so no compiler may drop the work that produced it */
    printf("}, \"sink\": %.3g}\n", (double)sink);
    return 0;
}
