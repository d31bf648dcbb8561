/*
 * osu.h - what assay's OSU-method MPI probes (p2p.c, coll.c) share: the message-size loop of
 * the OSU Micro-Benchmarks 5.x, its options and its size steps.  Needs probe.h first.
 *
 * A probe's options struct has the fields below (same names), and its option table lists
 * OSU_LOOP_OPTIONS(&o) among its own; the defaults differ per benchmark and stay with it.
 */
#ifndef ASSAY_OSU_H
#define ASSAY_OSU_H

#include <limits.h>

/* --min-size ... --large-threshold, read into the fields of the same names; sizes take
 * K/M/G, counts are plain integers, and all stay within INT_MAX because MPI counts are ints. */
#define OSU_LOOP_OPTIONS(o)                                                                     \
    {"--min-size", PROBE_SIZE, &(o)->min_size, .min = 0, .max = INT_MAX},                       \
        {"--max-size", PROBE_SIZE, &(o)->max_size, .min = 0, .max = INT_MAX},                   \
        {"--iterations", PROBE_INT, &(o)->iterations, .min = 1, .max = INT_MAX},                \
        {"--warmup", PROBE_INT, &(o)->warmup, .min = 0, .max = INT_MAX},                        \
        {"--iterations-large", PROBE_INT, &(o)->iterations_large, .min = 1, .max = INT_MAX},    \
        {"--warmup-large", PROBE_INT, &(o)->warmup_large, .min = 0, .max = INT_MAX},            \
        {"--large-threshold", PROBE_SIZE, &(o)->large_threshold, .min = 0, .max = INT_MAX}

/* Next message size after `size`, the OSU way: 0 is followed by 1, anything else by the next
 * power of two above it (which is size * 2 when size is a power of two, as in OSU's loop). */
static inline long long osu_next_size(long long size)
{
    long long p = 1;
    while (p <= size)
        p <<= 1;
    return p;
}

#endif /* ASSAY_OSU_H */
