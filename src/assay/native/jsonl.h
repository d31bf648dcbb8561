/*
 * jsonl.h - the output contract shared by assay's native probes.
 *
 * A probe prints JSON Lines on stdout, one object per measured point and nothing else:
 *   {"metric": "...", "value": <SI unit>, "params": {...}, "stats": {...}}
 * Diagnostics go to stderr.  This header only writes that output (and computes the stats it
 * carries); the clock, options and errors are probe.h's.  Everything here is static inline
 * so that a probe that uses only part of it still compiles cleanly with -Wall -Wextra, and C
 * that is also C++ (the CUDA probes, C++ under nvcc, write their lines with it too).
 *
 * Statistics conventions (stated once, so every probe reports them the same way):
 *   - median: middle element of the sorted samples, mean of the two middle ones for even n
 *     (the "typical" figure of perftest's ib_send_lat).
 *   - stddev: sample standard deviation (n - 1 divisor); 0 for n = 1.
 *   - p99 / p99.9: nearest-rank percentile, the ceil(p * n)-th smallest sample.  A percentile
 *     is reported only when there are enough samples for it to differ from the maximum
 *     (n >= 100 for p99, n >= 1000 for p99.9); with fewer it would just repeat "max".
 */
#ifndef ASSAY_JSONL_H
#define ASSAY_JSONL_H

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum {
    JL_N = 1 << 0,
    JL_MIN = 1 << 1,
    JL_MAX = 1 << 2,
    JL_MEAN = 1 << 3,
    JL_MEDIAN = 1 << 4,
    JL_STDDEV = 1 << 5,
    JL_P99 = 1 << 6,
    JL_P999 = 1 << 7,
    JL_ALL = 0xff,
    /* The six fields without the percentiles: what memlat and the CUDA probes print. */
    JL_SUMMARY = JL_N | JL_MIN | JL_MAX | JL_MEAN | JL_MEDIAN | JL_STDDEV
};

typedef struct {
    unsigned have; /* JL_* bits of the fields that are set */
    long n;
    double min, max, mean, median, stddev, p99, p999;
} jl_stats;

static inline int jl_cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* Nearest rank: the ceil(num/den * n)-th smallest, in integer arithmetic so that 0.99 * 100
 * does not round to 99.00000000000001 and pick the wrong element. */
static inline double jl_nearest_rank(const double *sorted, long n, long num, long den)
{
    long rank = (n * num + den - 1) / den;
    if (rank < 1)
        rank = 1;
    return sorted[rank - 1];
}

/* Fill *s from n samples; returns 0, or -1 if n < 1 or memory ran out. */
static inline int jl_compute_stats(const double *x, long n, jl_stats *s)
{
    memset(s, 0, sizeof *s);
    if (n < 1)
        return -1;
    double *v = (double *)malloc((size_t)n * sizeof *v); /* the cast: C++ wants it */
    if (!v)
        return -1;
    memcpy(v, x, (size_t)n * sizeof *v);
    qsort(v, (size_t)n, sizeof *v, jl_cmp_double);

    double sum = 0.0;
    for (long i = 0; i < n; i++)
        sum += v[i];
    double mean = sum / (double)n;
    double ss = 0.0;
    for (long i = 0; i < n; i++)
        ss += (v[i] - mean) * (v[i] - mean);

    s->n = n;
    s->min = v[0];
    s->max = v[n - 1];
    s->mean = mean;
    s->median = (n % 2) ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    s->stddev = n > 1 ? sqrt(ss / (double)(n - 1)) : 0.0;
    s->have = JL_N | JL_MIN | JL_MAX | JL_MEAN | JL_MEDIAN | JL_STDDEV;
    if (n >= 100) {
        s->p99 = jl_nearest_rank(v, n, 99, 100);
        s->have |= JL_P99;
    }
    if (n >= 1000) {
        s->p999 = jl_nearest_rank(v, n, 999, 1000);
        s->have |= JL_P999;
    }
    free(v);
    return 0;
}

/* ---- writer: jl_begin, any number of jl_param_*, jl_end ----
 *
 * jl_begin takes stdout's lock and jl_end gives it back: a line is written by one thread at a
 * time and a flush from another thread (probe_die_now) waits for the line to end, so stdout
 * never holds half a line, which would make the whole output unreadable. */

static int jl_nfields_ = 0;

static inline void jl_str_(const char *str)
{
    fputc('"', stdout);
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            fputc(*p, stdout);
    }
    fputc('"', stdout);
}

/* %.17g round-trips every double.  A whole number gets ".0" so that readers see a float,
 * not an int, for a quantity that is one.  JSON has no inf/nan: null keeps the line
 * parseable, and the probes refuse to get there. */
static inline void jl_num_(double v)
{
    char buf[40];
    if (!isfinite(v)) {
        fputs("null", stdout);
        return;
    }
    snprintf(buf, sizeof buf, "%.17g", v);
    fputs(buf, stdout);
    if (!strpbrk(buf, ".e"))
        fputs(".0", stdout);
}

static inline void jl_key_(const char *key)
{
    if (jl_nfields_++)
        fputs(", ", stdout);
    jl_str_(key);
    fputs(": ", stdout);
}

static inline void jl_begin(const char *metric, double value)
{
    flockfile(stdout);
    fputs("{\"metric\": ", stdout);
    jl_str_(metric);
    fputs(", \"value\": ", stdout);
    jl_num_(value);
    fputs(", \"params\": {", stdout);
    jl_nfields_ = 0;
}

static inline void jl_param_long(const char *key, long long v)
{
    jl_key_(key);
    printf("%lld", v);
}

static inline void jl_param_double(const char *key, double v)
{
    jl_key_(key);
    jl_num_(v);
}

static inline void jl_param_bool(const char *key, int v)
{
    jl_key_(key);
    fputs(v ? "true" : "false", stdout);
}

static inline void jl_param_str(const char *key, const char *v)
{
    jl_key_(key);
    jl_str_(v);
}

static inline void jl_param_str_array(const char *key, const char *const *v, int n)
{
    jl_key_(key);
    fputc('[', stdout);
    for (int i = 0; i < n; i++) {
        if (i)
            fputs(", ", stdout);
        jl_str_(v[i]);
    }
    fputc(']', stdout);
}

/* Close params, write the stats fields selected by (mask & s->have), end the line.  Each
 * line is flushed so that a probe killed part-way leaves complete lines behind. */
static inline void jl_end(const jl_stats *s, unsigned mask)
{
    fputc('}', stdout);
    if (s && (mask & s->have)) {
        unsigned m = mask & s->have;
        fputs(", \"stats\": {", stdout);
        jl_nfields_ = 0;
        if (m & JL_N) {
            jl_key_("n");
            printf("%ld", s->n);
        }
        if (m & JL_MIN) {
            jl_key_("min");
            jl_num_(s->min);
        }
        if (m & JL_MAX) {
            jl_key_("max");
            jl_num_(s->max);
        }
        if (m & JL_MEAN) {
            jl_key_("mean");
            jl_num_(s->mean);
        }
        if (m & JL_MEDIAN) {
            jl_key_("median");
            jl_num_(s->median);
        }
        if (m & JL_STDDEV) {
            jl_key_("stddev");
            jl_num_(s->stddev);
        }
        if (m & JL_P99) {
            jl_key_("p99");
            jl_num_(s->p99);
        }
        if (m & JL_P999) {
            jl_key_("p999");
            jl_num_(s->p999);
        }
        fputc('}', stdout);
    }
    fputs("}\n", stdout);
    fflush(stdout);
    funlockfile(stdout);
}

#endif /* ASSAY_JSONL_H */
