/*
 * stream.c - assay's STREAM probe (Copy, Scale, Add, Triad), OpenMP.
 *
 * Follows John D. McCalpin's STREAM (stream.c 5.10) and its run rules:
 *   - three double arrays, initialised in parallel with the kernels' own static schedule so
 *     that first touch places each page on the NUMA node of the thread that will use it;
 *   - each kernel of each iteration timed on its own, the first iteration not counted;
 *   - best rate = bytes / minimum time, bytes counted as STREAM counts them (2 arrays for
 *     Copy and Scale, 3 for Add and Triad - no write-allocate traffic);
 *   - results checked as checkSTREAMresults does, and never reported when they fail.
 * The array size rule (each array >= 4x the sum of last-level caches) is the caller's job:
 * assay's Python side passes --elements.
 *
 * Output: JSON Lines on stdout (see jsonl.h), one line per kernel, rates in bytes/second.
 * Exit codes: 0 ok, 1 runtime failure (memory), 2 bad arguments, 3 validation failed.
 *
 * Build: cc -O3 -march=native -fopenmp stream.c -o stream -lm
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "jsonl.h"

#define DEFAULT_ELEMENTS 10000000LL /* STREAM's STREAM_ARRAY_SIZE */
#define DEFAULT_NTIMES 10           /* STREAM's NTIMES */
#define SCALAR 3.0                  /* STREAM's scalar */
#define EPSILON 1.e-13              /* STREAM's epsilon for 8-byte elements */
/* 2 MiB alignment lets the kernel back the arrays with transparent huge pages. */
#define ALIGNMENT (2u * 1024u * 1024u)
#define NKERNELS 4

static const char *const kernel_metric[NKERNELS] = {"memory.copy", "memory.scale", "memory.add",
                                                     "memory.triad"};
static const char *const kernel_label[NKERNELS] = {"Copy", "Scale", "Add", "Triad"};
static const int kernel_arrays[NKERNELS] = {2, 2, 3, 3};

static double now(void)
{
#ifdef _OPENMP
    return omp_get_wtime();
#else
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
#endif
}

/*
 * STREAM's checktick(): spin until the clock moves, 20 times, and keep the smallest step.
 * STREAM spins for at least 1 us per step and returns whole microseconds; here the clock is
 * allowed to move by any amount, so a nanosecond clock reports its real granularity.
 */
static double timer_resolution(void)
{
    enum { M = 20 };
    double found[M];
    double t1 = now();
    for (int i = 0; i < M; i++) {
        double t2;
        while ((t2 = now()) - t1 <= 0.0)
            ;
        found[i] = t1 = t2;
    }
    double best = INFINITY;
    for (int i = 1; i < M; i++) {
        double d = found[i] - found[i - 1];
        if (d > 0.0 && d < best)
            best = d;
    }
    return best;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: stream [--elements N] [--ntimes K]\n"
            "\n"
            "STREAM Copy/Scale/Add/Triad (McCalpin's rules), OpenMP, JSON Lines on stdout.\n"
            "\n"
            "options:\n"
            "  --elements N   doubles per array (default %lld); STREAM's rule: each array\n"
            "                 at least 4x the sum of all last-level caches\n"
            "  --ntimes K     iterations, K >= 2; the first is not counted (default %d)\n"
            "  --help         this text\n"
            "\n"
            "Threads, binding and placement come from OMP_NUM_THREADS, OMP_PROC_BIND,\n"
            "OMP_PLACES.  Exit codes: 0 ok, 1 runtime error, 2 bad arguments,\n"
            "3 validation failed (nothing is printed on stdout then).\n",
            DEFAULT_ELEMENTS, DEFAULT_NTIMES);
}

/* The values a, b, c hold after initialisation and ntimes iterations, replayed on scalars as
 * checkSTREAMresults does. */
static void expected_values(long long ntimes, double *aj, double *bj, double *cj)
{
    double a = 1.0, b = 2.0, c = 0.0;
    a = 2.0E0 * a;
    for (long long k = 0; k < ntimes; k++) {
        c = a;
        b = SCALAR * c;
        c = a + b;
        a = b + SCALAR * c;
    }
    *aj = a;
    *bj = b;
    *cj = c;
}

/* checkSTREAMresults: average absolute error of each array relative to its expected value.
 * Returns the number of arrays that failed; explains each failure on stderr. */
static int check_array(const char *name, const double *x, long long n, double expected)
{
    double sum_err = 0.0;
    for (long long j = 0; j < n; j++)
        sum_err += fabs(x[j] - expected);
    double avg_err = sum_err / (double)n;
    if (fabs(avg_err / expected) <= EPSILON)
        return 0;

    long long bad = 0, first_bad = -1;
    for (long long j = 0; j < n; j++) {
        if (fabs(x[j] / expected - 1.0) > EPSILON) {
            if (first_bad < 0)
                first_bad = j;
            bad++;
        }
    }
    fprintf(stderr,
            "stream: Failed Validation on array %s[], AvgRelAbsErr > epsilon (%e)\n"
            "stream:      Expected Value: %e, AvgAbsErr: %e, AvgRelAbsErr: %e\n"
            "stream:      For array %s[], %lld errors were found",
            name, EPSILON, expected, avg_err, fabs(avg_err / expected), name, bad);
    if (first_bad >= 0)
        fprintf(stderr, " (first: %s[%lld] = %.17g)", name, first_bad, x[first_bad]);
    fputc('\n', stderr);
    return 1;
}

int main(int argc, char **argv)
{
    long long n = DEFAULT_ELEMENTS, ntimes = DEFAULT_NTIMES;
    char corrupt = 0; /* hidden --corrupt-for-test a|b|c: proves validation can fail */

    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i];
        if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
            usage(stdout);
            return 0;
        }
        if (strcmp(opt, "--elements") && strcmp(opt, "--ntimes") &&
            strcmp(opt, "--corrupt-for-test")) {
            fprintf(stderr, "stream: unknown option '%s' (see --help)\n", opt);
            return 2;
        }
        if (i + 1 >= argc) {
            fprintf(stderr, "stream: %s needs a value (see --help)\n", opt);
            return 2;
        }
        const char *val = argv[++i];
        if (!strcmp(opt, "--elements")) {
            /* 3 arrays of 8-byte elements must stay addressable */
            if (jl_parse_long(val, 1, (long long)(SIZE_MAX / 8 / 3), &n)) {
                fprintf(stderr, "stream: --elements: expected a positive integer, got '%s'\n",
                        val);
                return 2;
            }
        } else if (!strcmp(opt, "--ntimes")) {
            if (jl_parse_long(val, 2, 1000000, &ntimes)) {
                fprintf(stderr, "stream: --ntimes: expected an integer >= 2, got '%s'\n", val);
                return 2;
            }
        } else { /* --corrupt-for-test */
            if (strlen(val) != 1 || !strchr("abc", val[0])) {
                fprintf(stderr, "stream: --corrupt-for-test: expected a, b or c\n");
                return 2;
            }
            corrupt = val[0];
        }
    }

    /* The values grow 15x per iteration; past ~260 iterations they overflow a double and no
     * validation is possible, so refuse up front rather than report an unchecked rate. */
    double aj, bj, cj;
    expected_values(ntimes, &aj, &bj, &cj);
    if (!isfinite(aj) || !isfinite(bj) || !isfinite(cj)) {
        fprintf(stderr,
                "stream: --ntimes %lld: the array values overflow a double, so the results "
                "could not be validated; use fewer iterations\n",
                ntimes);
        return 2;
    }

    double *arr[3] = {NULL, NULL, NULL};
    size_t bytes = (size_t)n * sizeof(double);
    for (int i = 0; i < 3; i++) {
        int rc = posix_memalign((void **)&arr[i], ALIGNMENT, bytes);
        if (rc) {
            fprintf(stderr, "stream: cannot allocate 3 arrays of %zu bytes: %s\n", bytes,
                    strerror(rc));
            return 1;
        }
    }
    double *a = arr[0], *b = arr[1], *c = arr[2];

    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif

    /* First touch with the kernels' schedule: each thread faults in the pages it will use. */
#pragma omp parallel for schedule(static)
    for (long long j = 0; j < n; j++) {
        a[j] = 1.0;
        b[j] = 2.0;
        c[j] = 0.0;
    }

    double tick = timer_resolution();

    /* STREAM times this a = 2a pass only to tell the user how many ticks a kernel takes; its
     * effect on a[] is part of what validation expects. */
    double t = now();
#pragma omp parallel for schedule(static)
    for (long long j = 0; j < n; j++)
        a[j] = 2.0E0 * a[j];
    t = now() - t;

    double *times = malloc((size_t)NKERNELS * (size_t)ntimes * sizeof *times);
    double *rates = malloc((size_t)ntimes * sizeof *rates);
    if (!times || !rates) {
        fprintf(stderr, "stream: cannot allocate timing arrays for --ntimes %lld\n", ntimes);
        return 1;
    }
#define TIME(kern, it) times[(size_t)(kern) * (size_t)ntimes + (size_t)(it)]

    const double scalar = SCALAR;
    for (long long k = 0; k < ntimes; k++) {
        TIME(0, k) = now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            c[j] = a[j];
        TIME(0, k) = now() - TIME(0, k);

        TIME(1, k) = now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            b[j] = scalar * c[j];
        TIME(1, k) = now() - TIME(1, k);

        TIME(2, k) = now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            c[j] = a[j] + b[j];
        TIME(2, k) = now() - TIME(2, k);

        TIME(3, k) = now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            a[j] = b[j] + scalar * c[j];
        TIME(3, k) = now() - TIME(3, k);
    }

    if (corrupt) {
        double *x = corrupt == 'a' ? a : corrupt == 'b' ? b : c;
        /* doubling one element gives an average relative error of 1/n, far above 1e-13 */
        x[n / 2] *= 2.0;
    }

    /* Validate before any output: an unvalidated rate is never reported. */
    int failed = check_array("a", a, n, aj);
    failed += check_array("b", b, n, bj);
    failed += check_array("c", c, n, cj);
    if (failed) {
        fprintf(stderr, "stream: validation failed on %d array(s); no results reported\n", failed);
        return 3;
    }

    /* STREAM's own advice: a kernel shorter than ~20 clock ticks is not timed accurately. */
    if (t < 20.0 * tick)
        fprintf(stderr,
                "stream: warning: a pass over one array took %.3g s, under 20 clock ticks "
                "(%.3g s); use more --elements for accurate timing\n",
                t, tick);

    for (int kern = 0; kern < NKERNELS; kern++) {
        double kbytes = (double)kernel_arrays[kern] * (double)sizeof(double) * (double)n;
        double mint = INFINITY, maxt = 0.0, sumt = 0.0;
        for (long long k = 1; k < ntimes; k++) { /* k = 0 excluded, as STREAM */
            double tk = TIME(kern, k);
            sumt += tk;
            mint = tk < mint ? tk : mint;
            maxt = tk > maxt ? tk : maxt;
            rates[k - 1] = kbytes / tk;
        }
        if (!(mint > 0.0)) {
            fprintf(stderr,
                    "stream: %s: a timed pass took no measurable time; use more --elements\n",
                    kernel_label[kern]);
            return 1;
        }
        jl_stats st;
        if (jl_compute_stats(rates, ntimes - 1, &st)) {
            fprintf(stderr, "stream: out of memory computing statistics\n");
            return 1;
        }
        jl_begin(kernel_metric[kern], kbytes / mint);
        jl_param_long("threads", threads);
        jl_param_long("elements", n);
        jl_param_long("array_bytes", (long long)bytes);
        jl_param_long("ntimes", ntimes);
        jl_param_double("min_time", mint);
        jl_param_double("avg_time", sumt / (double)(ntimes - 1));
        jl_param_double("max_time", maxt);
        jl_param_double("timer_resolution", tick);
        jl_end(&st, JL_ALL);
    }
#undef TIME

    free(times);
    free(rates);
    free(a);
    free(b);
    free(c);
    return 0;
}
