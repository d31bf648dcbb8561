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

#ifdef _OPENMP
#include <omp.h>
#endif

#include "jsonl.h"
#include "probe.h"

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

static void usage(void)
{
    printf(
            "usage: stream [--elements N] [--ntimes K] [--offset E]\n"
            "\n"
            "STREAM Copy/Scale/Add/Triad (McCalpin's rules), OpenMP, JSON Lines on stdout.\n"
            "\n"
            "options:\n"
            "  --elements N   doubles per array (default %lld); STREAM's rule: each array\n"
            "                 at least 4x the sum of all last-level caches\n"
            "  --ntimes K     iterations, K >= 2; the first is not counted (default %d)\n"
            "  --offset E     STREAM's OFFSET: elements of padding after each array, which\n"
            "                 shifts their relative alignment (default 0, as stream.c)\n"
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
    long long n = DEFAULT_ELEMENTS, ntimes = DEFAULT_NTIMES, offset = 0;
    int corrupt = -1; /* hidden --corrupt-for-test a|b|c: proves validation can fail */
    static const char *const arrays[] = {"a", "b", "c", NULL};
    const probe_option opts[] = {
        /* 3 arrays of 8-byte elements must stay addressable */
        {"--elements", PROBE_INT, &n, .min = 1, .max = (long long)(SIZE_MAX / 8 / 3),
         .expect = "a positive integer"},
        {"--ntimes", PROBE_INT, &ntimes, .min = 2, .max = 1000000, .expect = "an integer >= 2"},
        {"--offset", PROBE_INT, &offset, .min = 0, .max = 1 << 20},
        {"--corrupt-for-test", PROBE_CHOICE, &corrupt, .choices = arrays},
        PROBE_END,
    };
    probe_init("stream");
    probe_options_or_exit(argc, argv, opts, usage);

    /* The values grow 15x per iteration; past ~260 iterations they overflow a double and no
     * validation is possible, so refuse up front rather than report an unchecked rate. */
    double aj, bj, cj;
    expected_values(ntimes, &aj, &bj, &cj);
    if (!isfinite(aj) || !isfinite(bj) || !isfinite(cj)) {
        probe_error("--ntimes %lld: the array values overflow a double, so the results could "
                    "not be validated; use fewer iterations",
                    ntimes);
        return PROBE_USAGE;
    }

    /* McCalpin's layout: stream.c declares `static double a[N+OFFSET], b[N+OFFSET],
     * c[N+OFFSET]`, three arrays back to back, so b starts (N + OFFSET) * 8 bytes after a.
     * One block laid out the same way gives the arrays the same relative alignment as the
     * reference for the same N - which decides which cache sets, DRAM channels and banks the
     * streams share - instead of three 2 MiB-aligned blocks whose a[j], b[j], c[j] all share
     * their low 21 address bits.  The block itself is 2 MiB-aligned for huge pages. */
    size_t bytes = (size_t)n * sizeof(double);
    size_t stride = (size_t)(n + offset);
    double *block = NULL;
    int rc = posix_memalign((void **)&block, ALIGNMENT, 3 * stride * sizeof(double));
    if (rc) {
        probe_error("cannot allocate 3 arrays of %zu bytes: %s", bytes, strerror(rc));
        return PROBE_RUNTIME;
    }
    double *arr[3] = {block, block + stride, block + 2 * stride};
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

    double tick = probe_timer_resolution(probe_now);

    /* STREAM times this a = 2a pass only to tell the user how many ticks a kernel takes; its
     * effect on a[] is part of what validation expects. */
    double t = probe_now();
#pragma omp parallel for schedule(static)
    for (long long j = 0; j < n; j++)
        a[j] = 2.0E0 * a[j];
    t = probe_now() - t;

    double *times = malloc((size_t)NKERNELS * (size_t)ntimes * sizeof *times);
    double *rates = malloc((size_t)ntimes * sizeof *rates);
    if (!times || !rates) {
        probe_error("cannot allocate timing arrays for --ntimes %lld", ntimes);
        return PROBE_RUNTIME;
    }
#define TIME(kern, it) times[(size_t)(kern) * (size_t)ntimes + (size_t)(it)]

    const double scalar = SCALAR;
    for (long long k = 0; k < ntimes; k++) {
        TIME(0, k) = probe_now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            c[j] = a[j];
        TIME(0, k) = probe_now() - TIME(0, k);

        TIME(1, k) = probe_now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            b[j] = scalar * c[j];
        TIME(1, k) = probe_now() - TIME(1, k);

        TIME(2, k) = probe_now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            c[j] = a[j] + b[j];
        TIME(2, k) = probe_now() - TIME(2, k);

        TIME(3, k) = probe_now();
#pragma omp parallel for schedule(static)
        for (long long j = 0; j < n; j++)
            a[j] = b[j] + scalar * c[j];
        TIME(3, k) = probe_now() - TIME(3, k);
    }

    if (corrupt >= 0) {
        double *x = arr[corrupt];
        /* doubling one element gives an average relative error of 1/n, far above 1e-13 */
        x[n / 2] *= 2.0;
    }

    /* Validate before any output: an unvalidated rate is never reported. */
    int failed = check_array("a", a, n, aj);
    failed += check_array("b", b, n, bj);
    failed += check_array("c", c, n, cj);
    if (failed) {
        probe_error("validation failed on %d array(s); no results reported", failed);
        return PROBE_INVALID;
    }

    /* STREAM's own advice: a kernel shorter than ~20 clock ticks is not timed accurately. */
    if (t < 20.0 * tick)
        probe_warn("a pass over one array took %.3g s, under 20 clock ticks (%.3g s); use more "
                   "--elements for accurate timing",
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
            probe_error("%s: a timed pass took no measurable time; use more --elements",
                        kernel_label[kern]);
            return PROBE_RUNTIME;
        }
        jl_stats st;
        if (jl_compute_stats(rates, ntimes - 1, &st)) {
            probe_error("out of memory computing statistics");
            return PROBE_RUNTIME;
        }
        jl_begin(kernel_metric[kern], kbytes / mint);
        jl_param_long("threads", threads);
        jl_param_long("elements", n);
        jl_param_long("array_bytes", (long long)bytes);
        jl_param_long("array_stride_bytes", (long long)((char *)b - (char *)a));
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
    free(block);
    return 0;
}
