/*
 * memlat.c - assay's memory load-latency probe: pointer chasing, one thread.
 *
 * The method of Intel MLC's idle latency (and of lmbench's lat_mem_rd with a random
 * stride): for each working set, from an L1-sized one to several times the last-level
 * cache, the elements - one per cache line (--stride, 64 B) - are linked into ONE random
 * cycle, built with Sattolo's algorithm so that the chain visits every line exactly once
 * per lap and the hardware prefetchers cannot guess the next address.  Each load's address
 * is the value of the previous load (p = *p), so no two loads overlap: the time per load is
 * the full load-to-use latency of the level the working set lives in.
 *
 * What the figure includes, on purpose, as MLC's does with 4 KiB pages: at working sets
 * larger than the TLB's reach every load also misses the TLB and pays (part of) a page
 * walk, so the "DRAM" latency here is DRAM + page walk.  --hugepages asks for 2 MiB
 * transparent huge pages (madvise(MADV_HUGEPAGE)), which removes most of that cost; without
 * it the buffer is marked MADV_NOHUGEPAGE so that a kernel with THP "always" does not
 * silently turn a 4 KiB-page measurement into a huge-page one.
 *
 * The whole buffer is touched before any timing (no page faults are timed); each chain is
 * walked once untimed (warm-up, so a cache-sized set is measured from the cache); then the
 * number of loads is calibrated so that one timed pass lasts at least --min-time, and
 * --repeats passes are timed.  The reported value is the median time per load over the
 * passes (the typical figure; an interrupt inflates a pass, never shortens it), in
 * seconds, with min/max/mean/stddev of the passes as stats.
 *
 * Pinning is the caller's job (assay runs it under numactl or taskset); a warning goes to
 * stderr when the process may run on more than one CPU.
 *
 * Output: JSON Lines on stdout (see jsonl.h), one line per working set.
 * Exit codes: 0 ok, 1 runtime failure (memory), 2 bad arguments.
 *
 * Build: cc -O2 memlat.c -o memlat -lm
 */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT, MADV_HUGEPAGE */

#include <errno.h>
#include <math.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "jsonl.h"
#include "probe.h"

#define DEFAULT_MIN_BYTES 4096LL
#define DEFAULT_MAX_BYTES (64LL * 1024 * 1024)
#define DEFAULT_STEPS 2
#define DEFAULT_STRIDE 64LL
#define DEFAULT_MIN_TIME 0.1
#define DEFAULT_REPEATS 5
#define MAX_REPEATS 1000
#define MIN_MIN_TIME 1e-6 /* a pass shorter than a microsecond is mostly clock */
#define HUGE_PAGE (2u * 1024u * 1024u)

/* The last pointer of every chase ends up here, so the compiler must perform the loads. */
static void *volatile sink;

/* splitmix64: a small, good, seedable generator; the chain only needs to defeat prefetch. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/*
 * Link the first n elements (each `stride` bytes, the pointer in its first 8 bytes) into
 * one random cycle.  Sattolo's algorithm on the pointers themselves: starting from the
 * identity (each element points to itself), swapping slot i with a slot j < i, for i from
 * n-1 down to 1, leaves a cyclic permutation - a single cycle through all n elements - so
 * no line is skipped and none is visited twice per lap.  In place: no index array, so the
 * largest set needs no memory beyond itself.  The modulo's bias (n / 2^64) is negligible.
 */
static void build_chain(char *base, long long n, long long stride)
{
    for (long long i = 0; i < n; i++)
        *(char **)(base + i * stride) = base + i * stride;
    for (long long i = n - 1; i > 0; i--) {
        long long j = (long long)(rng_next() % (uint64_t)i);
        char **pi = (char **)(base + i * stride), **pj = (char **)(base + j * stride);
        char *t = *pi;
        *pi = *pj;
        *pj = t;
    }
}

/* `loads` dependent loads from p.  noinline keeps the loop a real loop that the timing
 * brackets; unrolled by 8 so the loop counter costs nothing next to a load. */
__attribute__((noinline)) static void *chase(void *p, long long loads)
{
    while (loads >= 8) {
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        p = *(void **)p;
        loads -= 8;
    }
    while (loads-- > 0)
        p = *(void **)p;
    return p;
}

/* Loads for one pass of at least min_time: double until a pass takes a tenth of it, then
 * scale from the fastest of three passes of that length.  A multiple of 8.  The walk goes on from where it stopped (*pos), never restarting
 * from the head: a pass shorter than a lap must not re-read lines the last pass cached. */
static long long calibrate(void **pos, double min_time)
{
    long long loads = 4096;
    for (;;) {
        double t = probe_now();
        *pos = chase(*pos, loads);
        t = probe_now() - t;
        if (t >= min_time / 10.0 || loads > (1LL << 56)) {
            /* Two more timings of the same length, keeping the fastest: a pass the scheduler
             * interrupted would otherwise shrink every timed pass of this working set. */
            for (int k = 0; k < 2; k++) {
                double t2 = probe_now();
                *pos = chase(*pos, loads);
                t2 = probe_now() - t2;
                t = t2 < t ? t2 : t;
            }
            double want = t > 0.0 ? (double)loads * min_time / t * 1.05 : (double)loads * 2.0;
            long long out = (long long)ceil(want);
            out = out < loads ? loads : out;
            return (out + 7) / 8 * 8;
        }
        loads *= 2;
    }
}

/* Working sets from min to max, steps_per_doubling per factor of two, each a whole number
 * of elements (rounded down to the stride), at least 2 elements, no duplicates; max itself
 * always ends the ladder, so "4x the LLC" is measured even when it is off the grid. */
static long long *working_sets(long long min, long long max, long long steps, long long stride,
                               long long *count)
{
    long long cap = 64 * steps + 2, k = 0;
    long long *out = malloc((size_t)cap * sizeof *out);
    if (!out)
        return NULL;
    for (long long i = 0; k < cap; i++) {
        double ideal = (double)min * exp2((double)i / (double)steps);
        if (ideal > (double)max * (1.0 + 1e-9))
            break;
        long long size = (long long)llround(ideal) / stride * stride;
        if (size < 2 * stride)
            size = 2 * stride;
        if (k == 0 || size > out[k - 1])
            out[k++] = size;
    }
    long long last = max / stride * stride;
    if (k < cap && last > out[k - 1])
        out[k++] = last;
    *count = k;
    return out;
}

static void usage(void)
{
    printf(
            "usage: memlat [--min-bytes N] [--max-bytes N] [--steps-per-doubling K]\n"
            "              [--stride B] [--min-time S] [--repeats R] [--hugepages] [--seed X]\n"
            "\n"
            "Load-to-use latency by pointer chasing over a random cyclic permutation\n"
            "(Sattolo), one line per element, dependent loads, one thread (pin it yourself:\n"
            "numactl --physcpubind=C --localalloc memlat ...).  JSON Lines on stdout, one\n"
            "line per working set, value in seconds per load.\n"
            "\n"
            "options:\n"
            "  --min-bytes N            smallest working set (default %lld, an L1)\n"
            "  --max-bytes N            largest working set (default %lld); use >= 4x the LLC\n"
            "  --steps-per-doubling K   working sets per factor of two (default %d)\n"
            "  --stride B               bytes per element, >= 8 and a multiple of 8\n"
            "                           (default %lld, a cache line)\n"
            "  --min-time S             seconds per timed pass, >= 1e-6 (default %g)\n"
            "  --repeats R              timed passes per working set (default %d)\n"
            "  --hugepages              back the buffer with 2 MiB transparent huge pages\n"
            "                           (default: 4 KiB pages, TLB misses included)\n"
            "  --seed X                 random seed of the permutation (default fixed)\n"
            "  --help                   this text\n"
            "\n"
            "Sizes in bytes take K, M or G (2^10, 2^20, 2^30): --max-bytes 256M.\n"
            "Exit codes: 0 ok, 1 runtime error, 2 bad arguments.\n",
            DEFAULT_MIN_BYTES, DEFAULT_MAX_BYTES, DEFAULT_STEPS, DEFAULT_STRIDE,
            DEFAULT_MIN_TIME, DEFAULT_REPEATS);
}

/* AnonHugePages of this process in bytes, or -1 when /proc cannot tell. */
static long long anon_huge_bytes(void)
{
    FILE *f = fopen("/proc/self/smaps_rollup", "r");
    if (!f)
        return -1;
    char line[256];
    long long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "AnonHugePages: %lld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb * 1024;
}

int main(int argc, char **argv)
{
    long long min_bytes = DEFAULT_MIN_BYTES, max_bytes = DEFAULT_MAX_BYTES;
    long long steps = DEFAULT_STEPS, stride = DEFAULT_STRIDE, repeats = DEFAULT_REPEATS;
    long long seed = -1;
    double min_time = DEFAULT_MIN_TIME;
    int hugepages = 0;

    const probe_option opts[] = {
        {"--min-bytes", PROBE_SIZE, &min_bytes, .min = 16, .max = 1LL << 46},
        {"--max-bytes", PROBE_SIZE, &max_bytes, .min = 16, .max = 1LL << 46},
        {"--steps-per-doubling", PROBE_INT, &steps, .min = 1, .max = 16},
        {"--stride", PROBE_SIZE, &stride, .min = 8, .max = 1LL << 20},
        {"--min-time", PROBE_REAL, &min_time, .rmin = MIN_MIN_TIME, .rmax = 3600.0},
        {"--repeats", PROBE_INT, &repeats, .min = 1, .max = MAX_REPEATS},
        {"--seed", PROBE_INT, &seed, .min = 0, .max = INT64_MAX},
        {.name = "--hugepages", .kind = PROBE_FLAG, .value = &hugepages},
        PROBE_END,
    };
    probe_init("memlat");
    probe_options_or_exit(argc, argv, opts, usage);
    if (stride % 8 != 0) {
        probe_error("--stride %lld is not a multiple of 8 (a pointer)", stride);
        return PROBE_USAGE;
    }
    if (min_bytes > max_bytes) {
        probe_error("--min-bytes %lld is larger than --max-bytes %lld", min_bytes, max_bytes);
        return PROBE_USAGE;
    }
    if (max_bytes < 2 * stride) {
        probe_error("--max-bytes %lld holds fewer than 2 elements of %lld bytes", max_bytes,
                    stride);
        return PROBE_USAGE;
    }
    if (seed >= 0)
        rng_state = (uint64_t)seed;

    cpu_set_t mask;
    if (sched_getaffinity(0, sizeof mask, &mask) == 0 && CPU_COUNT(&mask) > 1)
        probe_warn("not pinned (may run on %d CPUs); a migration mid-pass costs cache warmth - "
                   "run under numactl --physcpubind or taskset -c",
                   CPU_COUNT(&mask));

    long long count = 0;
    long long *sets = working_sets(min_bytes, max_bytes, steps, stride, &count);
    if (!sets) {
        probe_error("out of memory");
        return PROBE_RUNTIME;
    }
    long long buf_bytes = sets[count - 1];
    size_t alloc = ((size_t)buf_bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
    char *buf = NULL;
    int rc = posix_memalign((void **)&buf, HUGE_PAGE, alloc);
    if (rc) {
        probe_error("cannot allocate %zu bytes: %s", alloc, strerror(rc));
        return PROBE_RUNTIME;
    }
    /* Decide the page size before the first touch: THP applies when the pages fault in. */
    /* A kernel without THP refuses both advices (EINVAL); it then uses 4 KiB pages anyway,
     * so only a refused MADV_HUGEPAGE is worth a word. */
    if (madvise(buf, alloc, hugepages ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0 && hugepages)
        probe_warn("madvise(MADV_HUGEPAGE) failed: %s", strerror(errno));
    memset(buf, 1, alloc); /* every page faulted in now, never during a timed pass */
    if (hugepages) {
        long long huge = anon_huge_bytes();
        if (huge >= 0 && (size_t)huge < alloc / 2)
            probe_warn("--hugepages: only %lld of %zu bytes are on huge pages (is "
                       "/sys/kernel/mm/transparent_hugepage/enabled 'never'?)",
                       huge, alloc);
    }

    double *per_load = malloc((size_t)repeats * sizeof *per_load);
    if (!per_load) {
        probe_error("out of memory");
        return PROBE_RUNTIME;
    }
    for (long long s = 0; s < count; s++) {
        long long n = sets[s] / stride;
        build_chain(buf, n, stride);
        void *p = buf;
        long long loads = calibrate(&p, min_time);
        /* Warm-up, untimed: a full lap, so that a set that fits a cache is timed from it.
         * A set much larger than a pass is DRAM-bound whatever the warm-up, so its warm-up
         * is capped rather than costing a lap of a multi-GiB chain. */
        p = chase(p, n < 4 * loads ? n : 4 * loads);
        for (long long r = 0; r < repeats; r++) {
            double t = probe_now();
            p = chase(p, loads);
            per_load[r] = (probe_now() - t) / (double)loads;
        }
        sink = p;
        jl_stats st;
        if (jl_compute_stats(per_load, (long)repeats, &st)) {
            probe_error("out of memory computing statistics");
            return PROBE_RUNTIME;
        }
        if (!(st.median > 0.0)) {
            probe_error("%lld bytes: a pass took no measurable time", sets[s]);
            return PROBE_RUNTIME;
        }
        jl_begin("memory.latency", st.median);
        jl_param_long("working_set_bytes", sets[s]);
        jl_param_long("stride", stride);
        jl_param_long("loads", loads);
        jl_param_long("repeats", repeats);
        jl_param_bool("huge_pages", hugepages);
        jl_end(&st, JL_N | JL_MIN | JL_MAX | JL_MEAN | JL_MEDIAN | JL_STDDEV);
    }
    free(per_load);
    free(sets);
    free(buf);
    return PROBE_OK;
}
