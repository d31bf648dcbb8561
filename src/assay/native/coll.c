/*
 * coll.c - assay's MPI collective probe: allreduce, alltoall, allgather, bcast, reduce,
 * barrier, one operation per run.
 *
 * The method is the OSU Micro-Benchmarks 5.x one (osu_allreduce -f, osu_alltoall, ...):
 *   - per size, MPI_Barrier outside the timed region, `warmup` untimed calls, then each rank
 *     sums the time of its own `iterations` calls (MPI_Wtime around each call, with an
 *     MPI_Barrier after every call, outside the timed region, as OSU 5.x does so that one
 *     call's skew does not pile into the next);
 *   - each rank's average latency is reduced across ranks to the min / max / average that
 *     `osu_<op> -f` prints as Min/Max/Avg Latency (IMB's t_min / t_max / t_avg).
 *   - size is the message per rank as OSU uses it: for alltoall the bytes sent to each peer,
 *     for allgather each rank's contribution, for bcast/allreduce/reduce the whole vector.
 * Unlike OSU, every size is checked once for correct results before it is timed.
 *
 * Output: JSON Lines on stdout from rank 0 only (see jsonl.h), latencies in seconds.
 * Exit codes: 0 ok, 1 runtime failure, 2 bad arguments or fewer than 2 ranks,
 * 3 a collective returned wrong data.
 *
 * Build: mpicc -O2 coll.c -o coll -lm;  run: mpirun -np N ./coll --op allreduce
 */
#define _POSIX_C_SOURCE 200809L

#include <limits.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "jsonl.h"
#include "probe.h"
#include "osu.h"

enum op { ALLREDUCE, ALLTOALL, ALLGATHER, BCAST, REDUCE, BARRIER, NOPS };
static const char *const op_names[NOPS] = {"allreduce", "alltoall", "allgather",
                                           "bcast",     "reduce",   "barrier"};
static const char *const op_metrics[NOPS] = {"coll.allreduce", "coll.alltoall", "coll.allgather",
                                             "coll.bcast",     "coll.reduce",   "coll.barrier"};

typedef struct {
    enum op op;
    long long min_size, max_size;
    long long iterations, warmup, iterations_large, warmup_large, large_threshold;
    int corrupt; /* hidden --corrupt-for-test 1: proves the result check can fail */
} options;

/* OSU 5.x collective defaults (osu_util.h / osu_coll.h). */
#define DEFAULT_MIN_SIZE 1LL
#define DEFAULT_MAX_SIZE (1LL << 20)
#define DEFAULT_ITERATIONS 1000LL
#define DEFAULT_WARMUP 200LL
#define DEFAULT_ITERATIONS_LARGE 100LL
#define DEFAULT_WARMUP_LARGE 10LL
#define DEFAULT_LARGE_THRESHOLD 8192LL

static int rank = 0, nprocs = 1;

static void usage(void)
{
    printf("usage: mpirun -np N coll --op OP [options]\n"
           "\n"
           "MPI collective latency, OSU 5.x method (osu_allreduce -f etc.): each rank times\n"
           "its own calls; min/max/avg across ranks.  JSON Lines on stdout from rank 0.\n"
           "\n"
           "options:\n"
           "  --op OP                allreduce | alltoall | allgather | bcast | reduce |\n"
           "                         barrier (default allreduce)\n"
           "  --min-size B           smallest message per rank, bytes (default %lld)\n"
           "  --max-size B           largest message per rank, bytes (default %lld); sizes\n"
           "                         are min-size, then the powers of two up to max-size;\n"
           "                         barrier has no size and reports one line, size 0\n"
           "  --iterations N         timed calls per size (default %lld)\n"
           "  --warmup N             untimed calls first (default %lld)\n"
           "  --iterations-large N   same, for sizes above --large-threshold (default %lld)\n"
           "  --warmup-large N       (default %lld)\n"
           "  --large-threshold B    sizes > B use the -large counts (default %lld)\n"
           "  --help                 this text\n"
           "\n"
           "allreduce and reduce sum MPI_DOUBLEs, size/8 of them (at least 1, so sizes\n"
           "below 8 bytes move 8); the other operations move MPI_CHARs.\n"
           "Exit codes: 0 ok, 1 runtime error, 2 bad arguments or fewer than 2 ranks,\n"
           "3 wrong results.\n",
           DEFAULT_MIN_SIZE, DEFAULT_MAX_SIZE, DEFAULT_ITERATIONS, DEFAULT_WARMUP,
           DEFAULT_ITERATIONS_LARGE, DEFAULT_WARMUP_LARGE, DEFAULT_LARGE_THRESHOLD);
}

/* Every rank parses the same argv; only rank 0 explains what is wrong (probe_set_quiet). */
static int parse(int argc, char **argv, options *o)
{
    int op = ALLREDUCE;
    long long corrupt = 0;
    o->min_size = DEFAULT_MIN_SIZE;
    o->max_size = DEFAULT_MAX_SIZE;
    o->iterations = DEFAULT_ITERATIONS;
    o->warmup = DEFAULT_WARMUP;
    o->iterations_large = DEFAULT_ITERATIONS_LARGE;
    o->warmup_large = DEFAULT_WARMUP_LARGE;
    o->large_threshold = DEFAULT_LARGE_THRESHOLD;
    const char *const ops[NOPS + 1] = {op_names[0], op_names[1], op_names[2], op_names[3],
                                       op_names[4], op_names[5], NULL};
    const probe_option opts[] = {
        {"--op", PROBE_CHOICE, &op, .choices = ops},
        OSU_LOOP_OPTIONS(o),
        {"--corrupt-for-test", PROBE_INT, &corrupt, .min = 0, .max = 1},
        PROBE_END,
    };
    if (probe_parse_options(argc, argv, opts))
        return -1; /* --help was answered before MPI_Init */
    o->op = (enum op)op;
    o->corrupt = corrupt != 0;
    if (o->min_size > o->max_size)
        return probe_error("--min-size is larger than --max-size");
    if (o->corrupt && o->op == BARRIER)
        return probe_error("--corrupt-for-test: barrier moves no data");
    return 0;
}

/* The byte a rank sends at position i of its block for `dest`; differs between senders,
 * receivers and positions so that a misplaced block is caught, not only a missing one. */
static unsigned char pattern(int src, int dest, size_t i)
{
    return (unsigned char)(src * 131u + dest * 29u + i * 7u + 1u);
}

/* OSU's reductions use `size / sizeof(float)` floats; here MPI_DOUBLE, size/8 of them, and at
 * least one, so sizes 1, 2 and 4 all reduce a single double (8 bytes on the wire). */
static int reduce_count(long long size)
{
    long long c = size / (long long)sizeof(double);
    return (int)(c < 1 ? 1 : c);
}

static void run_op(const options *o, long long size, void *sbuf, void *rbuf)
{
    int count = (int)size;
    switch (o->op) {
    case ALLREDUCE:
        MPI_Allreduce(sbuf, rbuf, reduce_count(size), MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        break;
    case REDUCE:
        MPI_Reduce(sbuf, rbuf, reduce_count(size), MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
        break;
    case ALLTOALL:
        MPI_Alltoall(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case ALLGATHER:
        MPI_Allgather(sbuf, count, MPI_CHAR, rbuf, count, MPI_CHAR, MPI_COMM_WORLD);
        break;
    case BCAST:
        MPI_Bcast(sbuf, count, MPI_CHAR, 0, MPI_COMM_WORLD);
        break;
    case BARRIER:
    case NOPS:
        MPI_Barrier(MPI_COMM_WORLD);
        break;
    }
}

/* One untimed call with known inputs; returns the number of wrong elements on this rank. */
static long long check_op(const options *o, long long size, void *sbuf, void *rbuf)
{
    size_t sz = (size_t)size, n = (size_t)nprocs;
    unsigned char *s = sbuf, *r = rbuf;
    double *sd = sbuf, *rd = rbuf;
    int count = reduce_count(size);
    long long wrong = 0;
    /* the rank whose result --corrupt-for-test spoils: one that receives data */
    int victim = (o->op == REDUCE) ? 0 : nprocs - 1;
    int spoil = o->corrupt && rank == victim;

    switch (o->op) {
    case ALLREDUCE:
    case REDUCE: {
        /* each rank contributes rank+1 (+ a per-position offset): the sum is exact in doubles */
        for (int i = 0; i < count; i++) {
            sd[i] = (double)(rank + 1) + (double)(i % 16);
            rd[i] = -1.0;
        }
        run_op(o, size, sbuf, rbuf);
        if (o->op == REDUCE && rank != 0)
            return 0;
        if (spoil)
            rd[0] += 1.0;
        for (int i = 0; i < count; i++) {
            double want = (double)nprocs * (nprocs + 1) / 2.0 + (double)nprocs * (i % 16);
            if (rd[i] != want) {
                if (!wrong)
                    fprintf(stderr, "coll: rank %d: %s size %lld: element %d is %.17g, "
                                    "expected %.17g\n",
                            rank, op_names[o->op], size, i, rd[i], want);
                wrong++;
            }
        }
        return wrong;
    }
    case BCAST:
        for (size_t i = 0; i < sz; i++)
            s[i] = rank == 0 ? pattern(0, 0, i) : (unsigned char)~pattern(0, 0, i);
        run_op(o, size, sbuf, rbuf);
        if (spoil && sz)
            s[0] ^= 0xff;
        for (size_t i = 0; i < sz; i++)
            if (s[i] != pattern(0, 0, i)) {
                if (!wrong)
                    fprintf(stderr, "coll: rank %d: bcast size %lld: byte %zu differs from the "
                                    "root's\n",
                            rank, size, i);
                wrong++;
            }
        return wrong;
    case ALLGATHER:
    case ALLTOALL: {
        int a2a = o->op == ALLTOALL;
        for (size_t d = 0; d < (a2a ? n : 1); d++)
            for (size_t i = 0; i < sz; i++)
                s[d * sz + i] = pattern(rank, a2a ? (int)d : 0, i);
        for (size_t src = 0; src < n; src++)
            for (size_t i = 0; i < sz; i++)
                r[src * sz + i] = (unsigned char)~pattern((int)src, a2a ? rank : 0, i);
        run_op(o, size, sbuf, rbuf);
        if (spoil && sz)
            r[0] ^= 0xff;
        for (size_t src = 0; src < n; src++)
            for (size_t i = 0; i < sz; i++)
                if (r[src * sz + i] != pattern((int)src, a2a ? rank : 0, i)) {
                    if (!wrong)
                        fprintf(stderr, "coll: rank %d: %s size %lld: byte %zu of the block "
                                        "from rank %zu is wrong\n",
                                rank, op_names[o->op], size, i, src);
                    wrong++;
                }
        return wrong;
    }
    case BARRIER:
    case NOPS:
        break;
    }
    return 0;
}

int main(int argc, char **argv)
{
    /* --help works without a launcher and before MPI starts. */
    if (probe_help_requested(argc, argv)) {
        usage();
        return PROBE_OK;
    }

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    probe_init("coll");
    probe_set_quiet(rank != 0);

    options o;
    if (parse(argc, argv, &o)) {
        MPI_Finalize();
        return PROBE_USAGE;
    }
    /* OSU's collectives refuse to run on a single process; so does this probe. */
    if (nprocs < 2) {
        probe_error("needs at least 2 MPI ranks, got %d", nprocs);
        MPI_Finalize();
        return PROBE_USAGE;
    }
    int is_barrier = o.op == BARRIER;
    if (is_barrier)
        o.min_size = o.max_size = 0;

    /* Page-aligned buffers, touched before timing; alltoall and allgather need one block per
     * rank (OSU allocates max_size * numprocs for them too). */
    long long unit = o.max_size < 8 ? 8 : o.max_size;
    size_t blocks = (o.op == ALLTOALL || o.op == ALLGATHER) ? (size_t)nprocs : 1;
    size_t bufsize = (size_t)unit * blocks;
    long page = sysconf(_SC_PAGESIZE);
    void *sbuf = NULL, *rbuf = NULL;
    if (posix_memalign(&sbuf, (size_t)page, bufsize) ||
        posix_memalign(&rbuf, (size_t)page, bufsize)) {
        fprintf(stderr, "coll: rank %d: cannot allocate 2 buffers of %zu bytes\n", rank,
                bufsize);
        MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }
    memset(sbuf, 1, bufsize);
    memset(rbuf, 0, bufsize);

    for (long long size = o.min_size; size <= o.max_size; size = osu_next_size(size)) {
        int large = size > o.large_threshold;
        long long iters = large ? o.iterations_large : o.iterations;
        long long warm = large ? o.warmup_large : o.warmup;

        if (!is_barrier) {
            long long wrong = check_op(&o, size, sbuf, rbuf), any = 0;
            MPI_Allreduce(&wrong, &any, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
            if (any) {
                probe_error("%s size %lld returned wrong data (%lld elements across all ranks); "
                            "no results reported",
                            op_names[o.op], size, any);
                MPI_Finalize();
                return PROBE_INVALID;
            }
        }

        MPI_Barrier(MPI_COMM_WORLD);
        double timer = 0.0;
        for (long long i = 0; i < warm + iters; i++) {
            double t0 = MPI_Wtime();
            run_op(&o, size, sbuf, rbuf);
            double t1 = MPI_Wtime();
            if (i >= warm)
                timer += t1 - t0;
            /* osu_barrier has no barrier between calls; every other OSU collective does */
            if (!is_barrier)
                MPI_Barrier(MPI_COMM_WORLD);
        }
        double latency = timer / (double)iters, tmin = 0.0, tmax = 0.0, tsum = 0.0;
        MPI_Reduce(&latency, &tmin, 1, MPI_DOUBLE, MPI_MIN, 0, MPI_COMM_WORLD);
        MPI_Reduce(&latency, &tmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&latency, &tsum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);

        if (rank == 0) {
            double avg = tsum / (double)nprocs;
            jl_stats st = {.have = JL_N | JL_MIN | JL_MAX | JL_MEAN,
                           .n = nprocs,
                           .min = tmin,
                           .max = tmax,
                           .mean = avg};
            jl_begin(op_metrics[o.op], avg);
            jl_param_long("size", size);
            jl_param_long("iterations", iters);
            jl_param_long("warmup", warm);
            jl_param_long("ranks", nprocs);
            jl_param_str("op", op_names[o.op]);
            if (o.op == ALLREDUCE || o.op == REDUCE) {
                jl_param_str("datatype", "MPI_DOUBLE");
                jl_param_long("count", reduce_count(size));
            } else if (!is_barrier) {
                jl_param_str("datatype", "MPI_CHAR");
                jl_param_long("count", size);
            }
            jl_end(&st, JL_ALL);
        }
        if (is_barrier)
            break; /* osu_next_size(0) is 1: barrier has a single, size-less point */
    }

    free(sbuf);
    free(rbuf);
    MPI_Finalize();
    return PROBE_OK;
}
