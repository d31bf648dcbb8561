/*
 * dgemm.c - assay's DGEMM / SGEMM probe: C = A * B through the CBLAS interface of a BLAS.
 *
 * The method:
 *   - square n x n matrices, column-major, C = 1.0 * A * B + 0.0 * C (no transposes);
 *   - FLOPs per multiply = 2 n^3 (n^3 multiplies and n^3 adds, the count HPL and vendors'
 *     DGEMM figures use), so rate = 2 n^3 / time;
 *   - `--warmup` untimed multiplies first (the BLAS starts its threads and allocates its
 *     packing buffers there), then timed multiplies, each timed on its own, until at least
 *     `--reps` were done AND at least `--min-time` seconds were spent;
 *   - the reported value is the best rate (fastest multiply); stats describe all of them.
 *
 * The result is checked before anything is reported.  A and B hold small nonzero integers
 * (-2, -1, 1, 2): every product and every partial sum is then an integer far below 2^24, so
 * it is exact in float and in double whatever order the BLAS sums in, and C is known
 * exactly.  (FP units take the same time for any normal operands, so the values do not
 * change the rate; there are no zeros a BLAS could skip and no subnormals.)  Two checks:
 *   1. Freivalds: C x == A (B x) exactly, for an integer vector x with entries 1..3.  This
 *      looks at every entry of C in O(n^2): one entry off by any amount changes its row.
 *   2. A spot check of SPOT_ENTRIES entries (the corners, the centre, the rest spread by a
 *      hash) against a plain dot product in long double: relative error, measured against
 *      sum_k |a_ik b_kj|, at most 1e-10 (DGEMM) or 1e-3 (SGEMM).
 * On a mismatch it says what differs on stderr, prints no measurement and exits 3.
 *
 * Threads: the BLAS's own (OPENBLAS_NUM_THREADS, OMP_NUM_THREADS, MKL_NUM_THREADS...).  The
 * matrices are initialised by one thread; a DGEMM copies its operands into per-thread
 * packed buffers, so where the original pages live matters little.
 *
 * The BLAS that ran (blasinfo.h): the library, its version and the kernels it chose
 * (OpenBLAS's core, MKL's code path, BLIS's arch) are params of every line.
 *
 * Build (OpenBLAS): cc -O2 -DASSAY_OPENBLAS -DASSAY_BLAS=openblas dgemm.c -o dgemm \
 *                   -lopenblas -lm -ldl
 * Another CBLAS:    cc -O2 -DASSAY_BLAS=mkl ['-DASSAY_CBLAS_HEADER=<mkl_cblas.h>'] \
 *                   dgemm.c -o dgemm -lmkl_rt -lm -ldl
 *
 * Output: JSON Lines on stdout (see jsonl.h), one line per precision, rates in flop/s.
 * Exit codes: 0 ok, 1 runtime failure (memory), 2 bad arguments, 3 wrong result.
 */
/* _GNU_SOURCE (POSIX 2008 and more): blasinfo.h needs dladdr. */
#define _GNU_SOURCE

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef ASSAY_CBLAS_HEADER
#include ASSAY_CBLAS_HEADER
#else
#include <cblas.h>
#endif

#include "blasinfo.h"
#include "jsonl.h"
#include "probe.h"

#ifdef ASSAY_OPENBLAS
/* OpenBLAS's own thread count (also declared by its cblas.h; redeclaring it is harmless). */
extern int openblas_get_num_threads(void);
#endif

#define STR_(x) #x
#define STR(x) STR_(x)
#ifndef ASSAY_BLAS
#define ASSAY_BLAS cblas
#endif

#define DEFAULT_N 4000LL
#define DEFAULT_MIN_TIME 1.0
#define DEFAULT_REPS 3LL
#define DEFAULT_WARMUP 1LL
#define MAX_N 100000LL       /* 3 double matrices of 80 GB each: past any node's memory */
#define MAX_REPS 10000000LL  /* a bound on the timing array, never reached in practice */
#define SPOT_ENTRIES 64
#define TOL_D 1e-10
#define TOL_S 1e-3
/* 2 MiB alignment lets the kernel back the matrices with transparent huge pages. */
#define ALIGNMENT (2u * 1024u * 1024u)
/* Below this a multiply is too short for its rate to mean much: clock_gettime's own cost
 * (tens of ns) and the BLAS's fixed per-call overhead start to show. */
#define SHORT_CALL_S 1e-4
#define SEED_A 0x9E3779B97F4A7C15ULL
#define SEED_B 0xD1B54A32D192ED03ULL
#define SEED_X 0x8CB92BA72F3D8DD7ULL
#define SEED_SPOT 0x2545F4914F6CDD1DULL

/* splitmix64: a cheap, well-mixed hash, so that entry (i, j) has the same value however and
 * wherever it is computed (initialisation, spot check). */
static uint64_t mix(uint64_t z)
{
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* Entry values: small nonzero integers (see the header comment for why). */
static double entry(uint64_t seed, uint64_t index)
{
    static const double values[4] = {-2.0, -1.0, 1.0, 2.0};
    return values[(mix(seed ^ index) >> 32) & 3u];
}

/* The Freivalds vector: integers 1..3, never 0, so that every column of C counts. */
static double xval(uint64_t j)
{
    return (double)(1 + (mix(SEED_X ^ j) >> 33) % 3u);
}

/* ---- the two precisions, generated from one template ---- */

typedef struct {
    const char *metric;
    const char *name;      /* "DGEMM" */
    const char *precision; /* "d" / "s" */
    size_t elem;
    double tol;
    void (*fill)(void *m, long long n, uint64_t seed);
    void (*zero)(void *m, long long n);
    void (*gemm)(long long n, const void *a, const void *b, void *c);
    double (*get)(const void *m, size_t idx);
    void (*add)(void *m, size_t idx, double v);
    /* y = M x (double: exact here, every value an integer below 2^53) */
    void (*matvec)(const void *m, long long n, const double *x, double *y);
} kind;

#define DEFINE_KIND(T, S, GEMM)                                                                \
    static void fill_##S(void *m, long long n, uint64_t seed)                                  \
    {                                                                                          \
        T *p = m;                                                                              \
        size_t nn = (size_t)n * (size_t)n;                                                     \
        for (size_t k = 0; k < nn; k++)                                                        \
            p[k] = (T)entry(seed, k);                                                          \
    }                                                                                          \
    static void zero_##S(void *m, long long n)                                                 \
    {                                                                                          \
        memset(m, 0, (size_t)n * (size_t)n * sizeof(T));                                       \
    }                                                                                          \
    static void gemm_##S(long long n, const void *a, const void *b, void *c)                   \
    {                                                                                          \
        GEMM(CblasColMajor, CblasNoTrans, CblasNoTrans, (int)n, (int)n, (int)n, (T)1.0, a,     \
             (int)n, b, (int)n, (T)0.0, c, (int)n);                                            \
    }                                                                                          \
    static double get_##S(const void *m, size_t idx)                                           \
    {                                                                                          \
        return (double)((const T *)m)[idx];                                                    \
    }                                                                                          \
    static void add_##S(void *m, size_t idx, double v)                                         \
    {                                                                                          \
        ((T *)m)[idx] += (T)v;                                                                 \
    }                                                                                          \
    static void matvec_##S(const void *m, long long n, const double *x, double *y)             \
    {                                                                                          \
        const T *p = m;                                                                        \
        for (long long i = 0; i < n; i++)                                                      \
            y[i] = 0.0;                                                                        \
        for (long long j = 0; j < n; j++) {                                                    \
            const T *col = p + (size_t)j * (size_t)n;                                          \
            double xj = x[j];                                                                  \
            for (long long i = 0; i < n; i++)                                                  \
                y[i] += (double)col[i] * xj;                                                   \
        }                                                                                      \
    }

DEFINE_KIND(double, d, cblas_dgemm)
DEFINE_KIND(float, s, cblas_sgemm)

static const kind KIND_D = {"compute.dgemm", "DGEMM", "d", sizeof(double), TOL_D, fill_d,
                            zero_d, gemm_d, get_d, add_d, matvec_d};
static const kind KIND_S = {"compute.sgemm", "SGEMM", "s", sizeof(float), TOL_S, fill_s,
                            zero_s, gemm_s, get_s, add_s, matvec_s};

/* ---- checks ---- */

/* Freivalds: C x must equal A (B x) exactly.  Returns 0 if so; else explains and returns 1. */
static int check_freivalds(const kind *k, long long n, const void *a, const void *b,
                           const void *c, int *oom)
{
    double *x = malloc((size_t)n * sizeof *x);
    double *bx = malloc((size_t)n * sizeof *bx);
    double *abx = malloc((size_t)n * sizeof *abx);
    double *cx = malloc((size_t)n * sizeof *cx);
    int bad = 0;
    if (!x || !bx || !abx || !cx) {
        *oom = 1;
        bad = 1;
        goto out;
    }
    for (long long j = 0; j < n; j++)
        x[j] = xval((uint64_t)j);
    k->matvec(b, n, x, bx);
    k->matvec(a, n, bx, abx);
    k->matvec(c, n, x, cx);
    long long rows = 0, first = -1;
    for (long long i = 0; i < n; i++) {
        if (cx[i] != abx[i] || !isfinite(cx[i])) {
            if (first < 0)
                first = i;
            rows++;
        }
    }
    if (rows) {
        probe_error("%s result is wrong: C*x differs from A*(B*x) in %lld of %lld rows "
                "(first: row %lld, %.17g instead of %.17g); with integer matrices the two "
                "must be equal exactly",
                k->name, rows, n, first, cx[first], abx[first]);
        bad = 1;
    }
out:
    free(x);
    free(bx);
    free(abx);
    free(cx);
    return bad;
}

/* Position of spot-check entry number s: the corners and the centre, then hashed ones. */
static void spot_position(long long n, int s, long long *i, long long *j)
{
    const long long fixed[5][2] = {{0, 0}, {n - 1, 0}, {0, n - 1}, {n - 1, n - 1}, {n / 2, n / 2}};
    if (s < 5) {
        *i = fixed[s][0];
        *j = fixed[s][1];
        return;
    }
    uint64_t h = mix(SEED_SPOT ^ (uint64_t)s);
    *i = (long long)((h >> 32) % (uint64_t)n);
    *j = (long long)((h & 0xFFFFFFFFu) % (uint64_t)n);
}

/* Spot check against long double dot products.  Sets *max_rel; returns 0 or 1 (explained). */
static int check_entries(const kind *k, long long n, const void *c, double *max_rel)
{
    int bad = 0;
    *max_rel = 0.0;
    for (int s = 0; s < SPOT_ENTRIES; s++) {
        long long i, j;
        spot_position(n, s, &i, &j);
        long double ref = 0.0L, scale = 0.0L;
        for (long long l = 0; l < n; l++) {
            /* a(i, l) and b(l, j), column-major, recomputed from the same hash */
            long double av = entry(SEED_A, (uint64_t)i + (uint64_t)l * (uint64_t)n);
            long double bv = entry(SEED_B, (uint64_t)l + (uint64_t)j * (uint64_t)n);
            ref += av * bv;
            scale += fabsl(av * bv);
        }
        double got = k->get(c, (size_t)i + (size_t)j * (size_t)n);
        double rel = (double)(fabsl((long double)got - ref) / scale);
        if (!(rel <= k->tol)) { /* a NaN fails too */
            if (!bad)
                probe_error("%s result is wrong: C[%lld][%lld] = %.17g, expected %.17Lg "
                        "(relative error %.3g > %g)",
                        k->name, i, j, got, ref, rel, k->tol);
            bad = 1;
        }
        if (rel > *max_rel || isnan(rel))
            *max_rel = rel;
    }
    return bad;
}

/* ---- one precision, timed and checked ---- */

typedef struct {
    const kind *k;
    long long reps;
    double *rates;
    double best_time, total_time, elapsed, max_rel;
    blas_info blas;
} result;

static void *alloc_matrix(long long n, size_t elem)
{
    void *p = NULL;
    if (posix_memalign(&p, ALIGNMENT, (size_t)n * (size_t)n * elem))
        return NULL;
    return p;
}

/* Returns 0 ok, 1 runtime failure, 3 wrong result (each explained on stderr). */
static int run_kind(const kind *k, long long n, double min_time, long long min_reps,
                    long long warmup, int corrupt, result *r)
{
    void *a = alloc_matrix(n, k->elem), *b = alloc_matrix(n, k->elem),
         *c = alloc_matrix(n, k->elem);
    size_t cap = 64;
    double *times = malloc(cap * sizeof *times);
    int rc = 0;
    memset(r, 0, sizeof *r);
    r->k = k;
    if (!a || !b || !c || !times) {
        probe_error("cannot allocate three %lld x %lld %s matrices (%.3g GB)", n, n,
                k->precision[0] == 'd' ? "double" : "float",
                3.0 * (double)n * (double)n * (double)k->elem / 1e9);
        rc = 1;
        goto out;
    }
    k->fill(a, n, SEED_A);
    k->fill(b, n, SEED_B);
    k->zero(c, n);

    for (long long w = 0; w < warmup; w++)
        k->gemm(n, a, b, c);

    long long reps = 0;
    double start = probe_now();
    while (reps < MAX_REPS && (reps < min_reps || probe_now() - start < min_time)) {
        if ((size_t)reps == cap) {
            double *grown = realloc(times, 2 * cap * sizeof *times);
            if (!grown) {
                probe_error("out of memory for the timings");
                rc = 1;
                goto out;
            }
            times = grown;
            cap *= 2;
        }
        double t0 = probe_now();
        k->gemm(n, a, b, c);
        times[reps++] = probe_now() - t0;
    }
    r->elapsed = probe_now() - start;
    blas_info_read(&r->blas); /* after the calls: a BLAS may choose its code path lazily */

    if (corrupt) /* --corrupt-for-test: one wrong entry, off the spot-checked positions */
        k->add(c, (size_t)(n / 2) + (size_t)(n / 3) * (size_t)n, 1.0);

    int oom = 0;
    int bad = check_freivalds(k, n, a, b, c, &oom);
    if (oom) {
        probe_error("out of memory for the result check");
        rc = 1;
        goto out;
    }
    bad |= check_entries(k, n, c, &r->max_rel);
    if (bad) {
        rc = 3;
        goto out;
    }

    double flops = 2.0 * (double)n * (double)n * (double)n;
    r->rates = malloc((size_t)reps * sizeof *r->rates);
    if (!r->rates) {
        probe_error("out of memory for the rates");
        rc = 1;
        goto out;
    }
    r->best_time = INFINITY;
    for (long long i = 0; i < reps; i++) {
        if (!(times[i] > 0.0)) {
            probe_error("a %s of order %lld took no measurable time; use a larger --n", k->name,
                        n);
            rc = 1;
            goto out;
        }
        r->rates[i] = flops / times[i];
        r->total_time += times[i];
        if (times[i] < r->best_time)
            r->best_time = times[i];
    }
    r->reps = reps;
    if (r->best_time < SHORT_CALL_S)
        probe_warn("the fastest %s took %.3g s, under %g s; its rate is mostly call overhead, "
                   "use a larger --n for a meaningful figure",
                   k->name, r->best_time, SHORT_CALL_S);
out:
    free(a);
    free(b);
    free(c);
    free(times);
    return rc;
}

static int emit(const result *r, long long n, double min_time, long long min_reps,
                long long warmup)
{
    jl_stats st;
    if (jl_compute_stats(r->rates, (long)r->reps, &st)) {
        probe_error("out of memory computing statistics");
        return 1;
    }
    double flops = 2.0 * (double)n * (double)n * (double)n;
    jl_begin(r->k->metric, flops / r->best_time);
    jl_param_long("n", n);
    jl_param_str("precision", r->k->precision);
    jl_param_long("reps", r->reps);
    jl_param_long("min_reps", min_reps);
    jl_param_long("warmup", warmup);
    jl_param_double("min_time", min_time);
    jl_param_str("blas", STR(ASSAY_BLAS));
#ifdef ASSAY_OPENBLAS
    jl_param_long("threads", openblas_get_num_threads());
#endif
    /* the library the loader gave us and the kernels it chose, whatever we were linked to */
    blas_info_params(&r->blas);
    jl_param_double("flops_per_call", flops);
    jl_param_double("time_s", r->best_time);
    jl_param_double("mean_time_s", r->total_time / (double)r->reps);
    jl_param_double("total_time_s", r->total_time);
    jl_param_double("elapsed_s", r->elapsed);
    jl_param_str("check", "exact C*x == A*(B*x), and 64 entries vs long double");
    jl_param_double("max_rel_error", r->max_rel);
    jl_end(&st, JL_ALL);
    return 0;
}

static void usage(void)
{
    printf(
            "usage: dgemm [--n N] [--precision d|s|both] [--min-time S] [--reps K] "
            "[--warmup W]\n"
            "\n"
            "CBLAS DGEMM and/or SGEMM, C = A*B on n x n matrices, checked; JSON Lines on\n"
            "stdout, one line per precision, best rate in flop/s (2 n^3 FLOPs a multiply).\n"
            "\n"
            "options:\n"
            "  --n N            matrix order (default %lld)\n"
            "  --precision P    d (DGEMM), s (SGEMM) or both (default both)\n"
            "  --min-time S     time multiplies for at least S seconds (default %g)\n"
            "  --reps K         and at least K timed multiplies (default %lld)\n"
            "  --warmup W       untimed multiplies first (default %lld)\n"
            "  --help           this text\n"
            "\n"
            "BLAS: %s.  Threads come from the BLAS's variables (OPENBLAS_NUM_THREADS,\n"
            "OMP_NUM_THREADS, MKL_NUM_THREADS...).  Exit codes: 0 ok, 1 runtime error,\n"
            "2 bad arguments, 3 wrong result (nothing is printed on stdout then).\n",
            DEFAULT_N, DEFAULT_MIN_TIME, DEFAULT_REPS, DEFAULT_WARMUP, STR(ASSAY_BLAS));
}

int main(int argc, char **argv)
{
    long long n = DEFAULT_N, min_reps = DEFAULT_REPS, warmup = DEFAULT_WARMUP;
    double min_time = DEFAULT_MIN_TIME;
    int precision = 2;  /* index in precisions[] */
    int corrupt = 0; /* hidden --corrupt-for-test: proves the result check can fail */
    static const char *const precisions[] = {"d", "s", "both", NULL};
    const probe_option opts[] = {
        {"--n", PROBE_INT, &n, .min = 1, .max = MAX_N},
        {"--precision", PROBE_CHOICE, &precision, .choices = precisions},
        {"--min-time", PROBE_REAL, &min_time, .rmin = 0.0, .rmax = 86400.0,
         .expect = "seconds from 0 to 86400"},
        {"--reps", PROBE_INT, &min_reps, .min = 1, .max = MAX_REPS, .expect = "an integer >= 1"},
        {"--warmup", PROBE_INT, &warmup, .min = 0, .max = 1000000, .expect = "an integer >= 0"},
        {.name = "--corrupt-for-test", .kind = PROBE_FLAG, .value = &corrupt},
        PROBE_END,
    };
    probe_init("dgemm");
    probe_options_or_exit(argc, argv, opts, usage);
    int want_d = precision != 1, want_s = precision != 0;

    /* Every result is checked before any is printed: a wrong SGEMM withholds the DGEMM too,
     * since a BLAS that computes one of them wrong cannot be trusted for the other. */
    result res[2];
    int nres = 0;
    const kind *kinds[2] = {want_d ? &KIND_D : NULL, want_s ? &KIND_S : NULL};
    int rc = 0;
    for (int q = 0; q < 2 && rc == 0; q++) {
        if (!kinds[q])
            continue;
        rc = run_kind(kinds[q], n, min_time, min_reps, warmup, corrupt, &res[nres]);
        if (rc == 0)
            nres++;
        else
            free(res[nres].rates);
    }
    if (rc == 3)
        probe_error("the result check failed; no results reported");
    for (int q = 0; q < nres && rc == 0; q++)
        rc = emit(&res[q], n, min_time, min_reps, warmup);
    for (int q = 0; q < nres; q++)
        free(res[q].rates);
    return rc;
}
