/*
 * p2p.c - assay's MPI point-to-point probe: latency, bandwidth, bi-directional bandwidth.
 *
 * The method is the OSU Micro-Benchmarks 5.x one (osu_latency, osu_bw, osu_bibw), with the
 * same defaults, so that the headline numbers compare with published OSU results:
 *   latency   ping-pong 0 -> 1 -> 0 with blocking MPI_Send/MPI_Recv; half the round trip.
 *   bandwidth rank 0 posts `window` MPI_Isend, waits, then receives a 4-byte ack; rank 1
 *             posts `window` MPI_Irecv, waits, sends the ack.  size*window*iters / time.
 *   bibw      both ranks post `window` MPI_Irecv and `window` MPI_Isend, then wait.
 *             2*size*window*iters / time.
 * The headline figure is OSU's exactly: one MPI_Wtime before the first timed iteration and
 * one after the last, nothing inside the loop.  On top of OSU, a second pass of the same
 * iterations times each one on its own, so each line also carries the distribution
 * (min/median/percentiles) that ib_send_lat-style tools report.  That pass is kept apart
 * because each MPI_Wtime pair adds the timer's own cost to a sample - at 8 bytes in shared
 * memory that cost is 5-12% of a half round trip; its measured value is in the output
 * (`timer_overhead`, seconds per call), so a reader can tell how much of a small sample it is.
 *
 * Output: JSON Lines on stdout from rank 0 only (see jsonl.h); seconds and bytes/second.
 * Exit codes: 0 ok, 1 runtime failure, 2 bad arguments or not exactly 2 ranks.
 *
 * Build: mpicc -O2 p2p.c -o p2p -lm;  run: mpirun -np 2 ./p2p --mode latency
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

enum mode { LATENCY, BANDWIDTH, BIBW };

typedef struct {
    enum mode mode;
    long long min_size, max_size;
    long long iterations, warmup, iterations_large, warmup_large;
    long long large_threshold, window;
} options;

/* OSU 5.x defaults (osu_latency.c, osu_bw.c, osu_bibw.c). */
#define DEFAULT_MAX_SIZE (1LL << 22)   /* MAX_MESSAGE_SIZE */
#define DEFAULT_LARGE_THRESHOLD 8192LL /* LARGE_MESSAGE_SIZE */
#define DEFAULT_WINDOW 64LL            /* WINDOW_SIZE */
#define ACK_BYTES 4                    /* osu_bw's ack message */
#define TAG_DATA 100                   /* osu_bw / osu_bibw tags */
#define TAG_BACK 10
#define TAG_ACK 101

static int rank = 0;

static void usage(void)
{
    printf("usage: mpirun -np 2 p2p [options]\n"
           "\n"
           "MPI point-to-point between exactly 2 ranks, OSU 5.x method (osu_latency, osu_bw,\n"
           "osu_bibw); JSON Lines on stdout from rank 0.\n"
           "\n"
           "options:\n"
           "  --mode M               latency | bandwidth | bibw (default latency)\n"
           "  --min-size B           smallest message, bytes (default 0 for latency,\n"
           "                         1 for bandwidth and bibw)\n"
           "  --max-size B           largest message, bytes (default %lld); sizes are\n"
           "                         min-size, then the powers of two up to max-size\n"
           "  --iterations N         timed iterations per size (default 10000 for latency,\n"
           "                         100 for bandwidth and bibw)\n"
           "  --warmup N             untimed iterations first (default 100 for latency,\n"
           "                         10 for bandwidth and bibw)\n"
           "  --iterations-large N   same, for sizes above --large-threshold (default 1000\n"
           "                         for latency, 20 for bandwidth and bibw)\n"
           "  --warmup-large N       (default 10 for latency, 2 for bandwidth and bibw)\n"
           "  --large-threshold B    sizes > B use the -large counts (default %lld)\n"
           "  --window W             messages in flight per iteration, bandwidth and bibw\n"
           "                         (default %lld)\n"
           "  --help                 this text\n"
           "\n"
           "Exit codes: 0 ok, 1 runtime error, 2 bad arguments or not exactly 2 ranks.\n",
           DEFAULT_MAX_SIZE, DEFAULT_LARGE_THRESHOLD, DEFAULT_WINDOW);
}

/* Every rank parses the same argv; only rank 0 explains what is wrong (probe_set_quiet). */
static int parse(int argc, char **argv, options *o)
{
    static const char *const modes[] = {"latency", "bandwidth", "bibw", NULL};
    int mode = LATENCY;
    /* -1: unset, the default depends on --mode. */
    o->min_size = o->max_size = o->iterations = o->warmup = -1;
    o->iterations_large = o->warmup_large = o->large_threshold = o->window = -1;
    const probe_option opts[] = {
        {"--mode", PROBE_CHOICE, &mode, .choices = modes},
        OSU_LOOP_OPTIONS(o),
        {"--window", PROBE_INT, &o->window, .min = 1, .max = INT_MAX},
        PROBE_END,
    };
    if (probe_parse_options(argc, argv, opts))
        return -1; /* --help was answered before MPI_Init */
    o->mode = (enum mode)mode;

    int lat = o->mode == LATENCY;
    if (o->min_size < 0)
        o->min_size = lat ? 0 : 1;
    if (o->max_size < 0)
        o->max_size = DEFAULT_MAX_SIZE;
    if (o->iterations < 0)
        o->iterations = lat ? 10000 : 100;
    if (o->warmup < 0)
        o->warmup = lat ? 100 : 10;
    if (o->iterations_large < 0)
        o->iterations_large = lat ? 1000 : 20;
    if (o->warmup_large < 0)
        o->warmup_large = lat ? 10 : 2;
    if (o->large_threshold < 0)
        o->large_threshold = DEFAULT_LARGE_THRESHOLD;
    if (o->window < 0)
        o->window = DEFAULT_WINDOW;

    if (o->min_size > o->max_size)
        return probe_error("--min-size is larger than --max-size");
    if (!lat && o->min_size == 0)
        return probe_error("--min-size 0: bandwidth needs messages of at least 1 byte");
    return 0;
}

/* Rank 0's per-iteration samples, turned into one JSON line. */
static int emit(const char *metric, double value, const double *samples, long long n,
                long long size, const options *o, long long iters, long long warm, double wtick,
                double timer_overhead, const char *const hosts[2])
{
    jl_stats st;
    if (jl_compute_stats(samples, (long)n, &st))
        return probe_error("out of memory computing statistics");
    jl_begin(metric, value);
    jl_param_long("size", size);
    jl_param_long("iterations", iters);
    jl_param_long("warmup", warm);
    if (o->mode != LATENCY)
        jl_param_long("window", o->window);
    jl_param_double("wtick", wtick);
    jl_param_double("timer_overhead", timer_overhead);
    jl_param_str_array("hosts", hosts, 2);
    jl_end(&st, JL_ALL);
    return 0;
}

/* What one iteration of each method needs: the buffers, the message and the window. */
typedef struct {
    enum mode mode;
    int rank, peer, count, window;
    char *s_buf, *r_buf;
    MPI_Request *reqs;
    MPI_Status *stats;
} exchange;

/* One iteration of osu_latency (a round trip), osu_bw (a window and its ack) or osu_bibw (a
 * window each way), exactly as OSU 5.x posts them. */
static void iteration(const exchange *x)
{
    int count = x->count, window = x->window;
    if (x->mode == LATENCY) {
        if (x->rank == 0) {
            MPI_Send(x->s_buf, count, MPI_CHAR, 1, 1, MPI_COMM_WORLD);
            MPI_Recv(x->r_buf, count, MPI_CHAR, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else {
            MPI_Recv(x->r_buf, count, MPI_CHAR, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(x->s_buf, count, MPI_CHAR, 0, 1, MPI_COMM_WORLD);
        }
    } else if (x->mode == BANDWIDTH) {
        /* OSU posts all `window` operations on one buffer; content is not checked. */
        if (x->rank == 0) {
            for (int j = 0; j < window; j++)
                MPI_Isend(x->s_buf, count, MPI_CHAR, 1, TAG_DATA, MPI_COMM_WORLD, &x->reqs[j]);
            MPI_Waitall(window, x->reqs, x->stats);
            MPI_Recv(x->r_buf, ACK_BYTES, MPI_CHAR, 1, TAG_ACK, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
        } else {
            for (int j = 0; j < window; j++)
                MPI_Irecv(x->r_buf, count, MPI_CHAR, 0, TAG_DATA, MPI_COMM_WORLD, &x->reqs[j]);
            MPI_Waitall(window, x->reqs, x->stats);
            MPI_Send(x->s_buf, ACK_BYTES, MPI_CHAR, 0, TAG_ACK, MPI_COMM_WORLD);
        }
    } else {
        /* osu_bibw: receives first, then sends, then wait for sends, then receives */
        int send_tag = x->rank == 0 ? TAG_DATA : TAG_BACK;
        int recv_tag = x->rank == 0 ? TAG_BACK : TAG_DATA;
        MPI_Request *recv_reqs = x->reqs, *send_reqs = x->reqs + window;
        for (int j = 0; j < window; j++)
            MPI_Irecv(x->r_buf, count, MPI_CHAR, x->peer, recv_tag, MPI_COMM_WORLD, &recv_reqs[j]);
        for (int j = 0; j < window; j++)
            MPI_Isend(x->s_buf, count, MPI_CHAR, x->peer, send_tag, MPI_COMM_WORLD, &send_reqs[j]);
        MPI_Waitall(window, send_reqs, x->stats);
        MPI_Waitall(window, recv_reqs, x->stats + window);
    }
}

/* The OSU pass: `warm` untimed iterations, then `iters` timed as one block, the clock read
 * only before the first and after the last - the figure osu_latency/osu_bw/osu_bibw print. */
static double timed_loop(const exchange *x, long long warm, long long iters)
{
    double t_start = 0.0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (long long i = 0; i < warm + iters; i++) {
        if (i == warm)
            t_start = MPI_Wtime();
        iteration(x);
    }
    return MPI_Wtime() - t_start;
}

/* The distribution pass: `iters` more iterations, each timed on its own into samples[]. */
static void sampled_loop(const exchange *x, long long iters, double *samples)
{
    MPI_Barrier(MPI_COMM_WORLD);
    for (long long i = 0; i < iters; i++) {
        double t0 = MPI_Wtime();
        iteration(x);
        samples[i] = MPI_Wtime() - t0;
    }
}

int main(int argc, char **argv)
{
    /* --help works without a launcher and before MPI starts. */
    if (probe_help_requested(argc, argv)) {
        usage();
        return PROBE_OK;
    }

    MPI_Init(&argc, &argv);
    int nprocs;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    probe_init("p2p");
    probe_set_quiet(rank != 0);

    options o;
    if (parse(argc, argv, &o)) {
        MPI_Finalize();
        return PROBE_USAGE;
    }
    if (nprocs != 2) {
        probe_error("needs exactly 2 MPI ranks, got %d (e.g. mpirun -np 2)", nprocs);
        MPI_Finalize();
        return PROBE_USAGE;
    }
    int peer = 1 - rank;

    /* Where each rank runs, so that "intra-node" vs "inter-node" is visible in the result. */
    char names[2][MPI_MAX_PROCESSOR_NAME];
    char mine[MPI_MAX_PROCESSOR_NAME];
    int len = 0;
    memset(names, 0, sizeof names);
    memset(mine, 0, sizeof mine);
    MPI_Get_processor_name(mine, &len);
    MPI_Gather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, names, MPI_MAX_PROCESSOR_NAME, MPI_CHAR,
               0, MPI_COMM_WORLD);
    names[0][MPI_MAX_PROCESSOR_NAME - 1] = names[1][MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    const char *const hosts[2] = {names[0], names[1]};

    /* Page-aligned buffers, as OSU allocates them, touched before any timing so that page
     * faults are not measured. */
    long page = sysconf(_SC_PAGESIZE);
    size_t bufsize = (size_t)(o.max_size > ACK_BYTES ? o.max_size : ACK_BYTES);
    char *s_buf = NULL, *r_buf = NULL;
    long long max_iters = o.iterations > o.iterations_large ? o.iterations : o.iterations_large;
    double *samples = malloc((size_t)max_iters * sizeof *samples);
    MPI_Request *reqs = malloc(2 * (size_t)o.window * sizeof *reqs);
    /* A real status array, as OSU's reqstat: MPICH's MPI_STATUSES_IGNORE is the pointer
     * (MPI_Status *)1, which gcc >= 11 flags as -Wstringop-overflow in MPI_Waitall. */
    MPI_Status *stats = malloc(2 * (size_t)o.window * sizeof *stats);
    if (posix_memalign((void **)&s_buf, (size_t)page, bufsize) ||
        posix_memalign((void **)&r_buf, (size_t)page, bufsize) || !samples || !reqs ||
        !stats) {
        fprintf(stderr, "p2p: rank %d: cannot allocate buffers of %zu bytes\n", rank, bufsize);
        MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }
    memset(s_buf, 'a', bufsize);
    memset(r_buf, 'b', bufsize);
    double wtick = MPI_Wtick();
    /* What one MPI_Wtime costs on rank 0: the bias each per-iteration sample carries. */
    double timer_overhead = probe_timer_overhead(MPI_Wtime, 1000);
    int lat = o.mode == LATENCY;

    for (long long size = o.min_size; size <= o.max_size; size = osu_next_size(size)) {
        /* OSU: sizes above LARGE_MESSAGE_SIZE use the smaller iteration counts */
        int large = size > o.large_threshold;
        long long iters = large ? o.iterations_large : o.iterations;
        long long warm = large ? o.warmup_large : o.warmup;
        exchange x = {o.mode, rank, peer, (int)size, (int)o.window, s_buf, r_buf, reqs, stats};

        /* OSU's set_buffer_pt2pt: fill the message again for every size */
        memset(s_buf, 'a', (size_t)size);
        memset(r_buf, 'b', (size_t)size);

        double elapsed = timed_loop(&x, warm, iters);
        sampled_loop(&x, iters, samples);

        if (rank != 0)
            continue;
        if (!(elapsed > 0.0)) {
            fprintf(stderr, "p2p: size %lld: no measurable time elapsed (MPI_Wtick %g)\n", size,
                    wtick);
            MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
        }
        int rc;
        if (lat) {
            /* osu_latency: total time / (2 * iterations), the mean half round trip */
            for (long long i = 0; i < iters; i++)
                samples[i] *= 0.5;
            rc = emit("p2p.latency", elapsed / (2.0 * (double)iters), samples, iters, size, &o,
                      iters, warm, wtick, timer_overhead, hosts);
        } else {
            double per_iter = (o.mode == BIBW ? 2.0 : 1.0) * (double)size * (double)o.window;
            for (long long i = 0; i < iters; i++) {
                if (!(samples[i] > 0.0)) {
                    fprintf(stderr, "p2p: size %lld: an iteration took no measurable time "
                                    "(MPI_Wtick %g); cannot compute its rate\n",
                            size, wtick);
                    MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
                }
                samples[i] = per_iter / samples[i];
            }
            /* osu_bw / osu_bibw: bytes moved over the whole timed loop */
            rc = emit(o.mode == BIBW ? "p2p.bibw" : "p2p.bandwidth",
                      per_iter * (double)iters / elapsed, samples, iters, size, &o, iters, warm,
                      wtick, timer_overhead, hosts);
        }
        if (rc)
            MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }

    free(samples);
    free(reqs);
    free(stats);
    free(s_buf);
    free(r_buf);
    MPI_Finalize();
    return PROBE_OK;
}
