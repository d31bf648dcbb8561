/*
 * probe.h - the harness shared by assay's native probes: clock, command-line options, errors
 * and exit codes.  What a probe prints on stdout is jsonl.h's job; what it measures (its
 * kernels) is the probe's own.  The split is BabelStream's: one harness, many kernels.
 *
 *   probe_init("stream");                       name that prefixes every message
 *   probe_option opts[] = {
 *       {"--elements", PROBE_INT, &n, .min = 1, .max = LLONG_MAX},
 *       {"--mode", PROBE_CHOICE, &mode, .choices = (const char *const[]){"a", "b", NULL}},
 *       PROBE_END};
 *   probe_options_or_exit(argc, argv, opts, usage);     (--help: usage, exit 0; error: exit 2)
 *
 * Options are strict: "10x", "" or an out-of-range value is an error naming the option, never
 * read as 10 or 0.  Sizes in bytes (PROBE_SIZE) take K, M or G (2^10, 2^20, 2^30); lower-case
 * suffixes are refused, since "k" means 1000 to some readers and 1024 to others.
 *
 * Everything is static inline so that a probe using part of it compiles cleanly with
 * -Wall -Wextra.  It is C that is also C++ (no implicit void * conversion, no designated
 * initializer in the header itself): the CUDA probes, C++ under nvcc, include it too.  C++17
 * has no designated initializers, so a C++ table is built with probe_opt_int() and friends.
 */
#ifndef ASSAY_PROBE_H
#define ASSAY_PROBE_H

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Exit codes, the same for every probe (assay reads them). */
enum {
    PROBE_OK = 0,      /* measured and printed */
    PROBE_RUNTIME = 1, /* could not measure: memory, a clock that does not move, MPI */
    PROBE_USAGE = 2,   /* bad arguments, or a launch the method cannot use (rank count) */
    PROBE_INVALID = 3  /* the result check failed: nothing was printed on stdout */
};

static const char *probe_name_ = "probe";
static int probe_quiet_ = 0;

/* The name every message starts with ("stream: ..."). */
static inline void probe_init(const char *name)
{
    probe_name_ = name;
}

/* MPI probes parse on every rank but let only rank 0 explain: quiet the others. */
static inline void probe_set_quiet(int quiet)
{
    probe_quiet_ = quiet;
}

/* The lock keeps a message whole when several threads (OpenMP, one per GPU) speak at once. */
static inline void probe_vsay_(const char *prefix, const char *fmt, va_list ap)
{
    flockfile(stderr);
    fprintf(stderr, "%s: %s", probe_name_, prefix);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    funlockfile(stderr);
}

/* "name: message" on stderr (unless quiet); returns -1 so that callers can `return
 * probe_error(...)`. */
__attribute__((format(printf, 1, 2))) static inline int probe_error(const char *fmt, ...)
{
    if (!probe_quiet_) {
        va_list ap;
        va_start(ap, fmt);
        probe_vsay_("", fmt, ap);
        va_end(ap);
    }
    return -1;
}

/* "name: warning: message" on stderr; the run goes on. */
__attribute__((format(printf, 1, 2))) static inline void probe_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    probe_vsay_("warning: ", fmt, ap);
    va_end(ap);
}

/* "name: message" on stderr, then exit with `code`.  Not for MPI probes after MPI_Init (they
 * must MPI_Abort or MPI_Finalize): those use probe_error and return. */
__attribute__((format(printf, 2, 3), noreturn)) static inline void probe_die(int code,
                                                                              const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    probe_vsay_("", fmt, ap);
    va_end(ap);
    exit(code);
}

/* As probe_die, but ends with _Exit once stdout and stderr are flushed: no atexit handler
 * runs.  For a process whose other threads may be inside a runtime (CUDA): exit() would run
 * that runtime's teardown under them, which can hang.  stdout's lock is taken by the flush, so
 * a JSON line another thread is writing (jsonl.h holds the lock for the line) is finished
 * first and never cut. */
__attribute__((format(printf, 2, 3), noreturn)) static inline void probe_die_now(int code,
                                                                                  const char *fmt,
                                                                                  ...)
{
    va_list ap;
    va_start(ap, fmt);
    probe_vsay_("", fmt, ap);
    va_end(ap);
    fflush(stdout);
    fflush(stderr);
    _Exit(code);
}

/* ---- clock ---------------------------------------------------------------------------- */

/* Seconds on CLOCK_MONOTONIC: never steps back (NTP slews it, never jumps it), so an interval
 * is never negative.  libgomp's omp_get_wtime reads the same clock. */
static inline double probe_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef double (*probe_clock)(void);

/*
 * The clock's granularity, STREAM's checktick(): spin until the clock moves, 20 times, and
 * keep the smallest step.  STREAM spins for at least 1 us a step and returns whole
 * microseconds; here the clock may move by any amount, so a nanosecond clock reports its real
 * granularity.
 */
static inline double probe_timer_resolution(probe_clock clock)
{
    enum { M = 20 };
    double found[M];
    double t1 = clock();
    for (int i = 0; i < M; i++) {
        double t2;
        while ((t2 = clock()) - t1 <= 0.0)
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

/*
 * What one reading of `clock` costs: `calls` back-to-back readings timed by the clock itself,
 * (t_last - t_first) / calls, the smallest of 5 rounds (an interrupt only ever adds).  A
 * sample bracketed by two readings carries about one such cost on top of what it measures.
 */
static inline double probe_timer_overhead(probe_clock clock, int calls)
{
    double best = INFINITY;
    volatile double sink = 0.0;
    for (int round = 0; round < 5; round++) {
        double t0 = clock();
        for (int i = 0; i < calls; i++)
            sink = clock();
        double per = (clock() - t0) / (double)(calls + 1);
        best = per < best ? per : best;
    }
    (void)sink;
    return best;
}

/* ---- options ------------------------------------------------------------------------- */

typedef enum {
    PROBE_FLAG,  /* no value; sets *(int *)value = 1 */
    PROBE_INT,   /* *(long long *)value, an integer in [min, max] */
    PROBE_SIZE,  /* *(long long *)value, bytes in [min, max], suffix K, M or G allowed */
    PROBE_REAL,  /* *(double *)value, a finite number in [rmin, rmax] */
    PROBE_CHOICE, /* *(int *)value = index of the value in choices (NULL-terminated) */
    PROBE_TEXT    /* *(const char **)value = the argument itself, for the probe to read */
} probe_kind;

typedef struct {
    const char *name; /* "--elements"; NULL ends the table */
    probe_kind kind;
    void *value;
    long long min, max;         /* PROBE_INT, PROBE_SIZE */
    double rmin, rmax;          /* PROBE_REAL */
    const char *const *choices; /* PROBE_CHOICE */
    const char *expect;         /* what an error says is expected; NULL: from the range */
} probe_option;

/* The end of an option table (every field given in order: C++17 has no designated
 * initializers). */
#define PROBE_END {NULL, PROBE_FLAG, NULL, 0, 0, 0.0, 0.0, NULL, NULL}

/* One row each, typed: a C++ table is built with these, and the pointer's type is checked
 * (PROBE_INT writes a long long: an int there would be overwritten past its end). */
static inline probe_option probe_opt_flag(const char *name, int *value)
{
    probe_option o = {name, PROBE_FLAG, value, 0, 0, 0.0, 0.0, NULL, NULL};
    return o;
}

static inline probe_option probe_opt_int(const char *name, long long *value, long long min,
                                         long long max)
{
    probe_option o = {name, PROBE_INT, value, min, max, 0.0, 0.0, NULL, NULL};
    return o;
}

static inline probe_option probe_opt_size(const char *name, long long *value, long long min,
                                          long long max)
{
    probe_option o = {name, PROBE_SIZE, value, min, max, 0.0, 0.0, NULL, NULL};
    return o;
}

static inline probe_option probe_opt_real(const char *name, double *value, double rmin,
                                          double rmax)
{
    probe_option o = {name, PROBE_REAL, value, 0, 0, rmin, rmax, NULL, NULL};
    return o;
}

static inline probe_option probe_opt_choice(const char *name, int *value,
                                            const char *const *choices)
{
    probe_option o = {name, PROBE_CHOICE, value, 0, 0, 0.0, 0.0, choices, NULL};
    return o;
}

static inline probe_option probe_opt_text(const char *name, const char **value)
{
    probe_option o = {name, PROBE_TEXT, (void *)value, 0, 0, 0.0, 0.0, NULL, NULL};
    return o;
}

/* A whole-text integer in [lo, hi]; 0, or -1 if it is not one. */
static inline int probe_parse_int(const char *text, long long lo, long long hi, long long *out)
{
    if (!text || !*text)
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* Bytes: digits, then optionally K, M or G (binary: 2^10, 2^20, 2^30); 0 or -1. */
static inline int probe_parse_size(const char *text, long long lo, long long hi, long long *out)
{
    if (!text || !*text)
        return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(text, &end, 10);
    if (errno || end == text || v < 0)
        return -1;
    int shift = 0;
    if (*end) {
        const char *units = "KMG";
        const char *u = strchr(units, *end);
        if (!u || end[1] != '\0')
            return -1;
        shift = 10 * (int)(u - units + 1);
    }
    if (v > (LLONG_MAX >> shift))
        return -1;
    v <<= shift;
    if (v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* A whole-text finite number in [lo, hi]; 0 or -1. */
static inline int probe_parse_real(const char *text, double lo, double hi, double *out)
{
    if (!text || !*text)
        return -1;
    char *end = NULL;
    errno = 0;
    double v = strtod(text, &end);
    if (errno || *end != '\0' || !isfinite(v) || v < lo || v > hi)
        return -1;
    *out = v;
    return 0;
}

/* "an integer from 1 to 10", "a, b or c": what an option takes, for its error message. */
static inline void probe_expected(const probe_option *o, char *buf, size_t size)
{
    if (o->expect) {
        snprintf(buf, size, "%s", o->expect);
        return;
    }
    switch (o->kind) {
    case PROBE_INT:
        if (o->max >= LLONG_MAX / 2)
            snprintf(buf, size, "an integer >= %lld", o->min);
        else
            snprintf(buf, size, "an integer from %lld to %lld", o->min, o->max);
        break;
    case PROBE_SIZE:
        snprintf(buf, size, "bytes from %lld to %lld (suffix K, M or G allowed)", o->min,
                 o->max);
        break;
    case PROBE_REAL:
        snprintf(buf, size, "a number from %g to %g", o->rmin, o->rmax);
        break;
    case PROBE_CHOICE: {
        size_t used = 0;
        buf[0] = '\0';
        for (int k = 0; o->choices[k] && used < size; k++) {
            const char *sep = k == 0 ? "" : o->choices[k + 1] ? ", " : " or ";
            used += (size_t)snprintf(buf + used, size - used, "%s%s", sep, o->choices[k]);
        }
        break;
    }
    case PROBE_TEXT:
        snprintf(buf, size, "a value");
        break;
    case PROBE_FLAG:
        snprintf(buf, size, "no value");
        break;
    }
}

/* Read one option's value into o->value by its row's rules: 0, or -1 (not explained). */
static inline int probe_read_value(const probe_option *o, const char *val)
{
    switch (o->kind) {
    case PROBE_INT:
        return probe_parse_int(val, o->min, o->max, (long long *)o->value);
    case PROBE_SIZE:
        return probe_parse_size(val, o->min, o->max, (long long *)o->value);
    case PROBE_REAL:
        return probe_parse_real(val, o->rmin, o->rmax, (double *)o->value);
    case PROBE_CHOICE: {
        int k = 0;
        while (o->choices[k] && strcmp(o->choices[k], val))
            k++;
        if (!o->choices[k])
            return -1;
        *(int *)o->value = k;
        return 0;
    }
    case PROBE_TEXT:
        *(const char **)o->value = val;
        return 0;
    case PROBE_FLAG:
        break;
    }
    return -1;
}

/*
 * Parse argv against the table.  Returns 0 when every argument was read, 1 when --help or -h
 * came first (print the usage, exit 0), -1 when an argument is wrong (explained on stderr as
 * "name: --opt: expected ..., got 'x'").  Values not given keep what the caller set.
 */
static inline int probe_parse_options(int argc, char **argv, const probe_option *opts)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
            return 1;
        const probe_option *o = opts;
        while (o->name && strcmp(o->name, arg))
            o++;
        if (!o->name)
            return probe_error("unknown option '%s' (see --help)", arg);
        if (o->kind == PROBE_FLAG) {
            *(int *)o->value = 1;
            continue;
        }
        if (i + 1 >= argc)
            return probe_error("%s needs a value (see --help)", arg);
        const char *val = argv[++i];
        if (probe_read_value(o, val)) {
            char expected[256];
            probe_expected(o, expected, sizeof expected);
            return probe_error("%s: expected %s, got '%s'", arg, expected, val);
        }
    }
    return 0;
}

/* For a probe without MPI: parse argv, or end the process - --help prints the usage and
 * exits 0, a bad argument (already explained) exits 2. */
static inline void probe_options_or_exit(int argc, char **argv, const probe_option *opts,
                                         void (*usage)(void))
{
    switch (probe_parse_options(argc, argv, opts)) {
    case 1:
        usage();
        exit(PROBE_OK);
    case -1:
        exit(PROBE_USAGE);
    }
}

/* --help or -h anywhere in argv: MPI probes answer it before MPI_Init, without a launcher. */
static inline int probe_help_requested(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h"))
            return 1;
    return 0;
}

#endif /* ASSAY_PROBE_H */
