/*
 * allpairs.c - assay's all-pairs probe: p2p latency and bandwidth of every node pair, measured
 * by one MPI job (one rank per node) that runs the round-robin tournament itself.
 *
 * Rounds: the circle method (src/assay/launch/tournament.py, the same pairs in the same
 * rounds): node 0 stays, the others turn one place per round; N-1 rounds for N even, N for N
 * odd (each node rests once).  Every pair of a round measures at the same time, or at most
 * --pairs-at-once k of them (the others wait); the phases are separated by barriers:
 *     for each group of k pairs:  latency  | barrier |  bandwidth  | barrier
 * so no latency is taken beside another pair's bandwidth traffic.  --pairs FILE measures just
 * the listed pairs instead (a retest, or what a lost node left), each placed in the earliest
 * round after both its nodes' previous pairs in the list.
 *
 * Per pair, the OSU 5.x methods at one size each (never a sweep of sizes):
 *   latency    osu_latency's ping-pong from the lower rank: (t_end - t_start) / (2 * iters),
 *              the mean half round trip; warm-up iterations first, untimed.
 *   bandwidth  osu_bw's window from the lower rank to the higher: `window` sends, then the
 *              receiver's 4-byte ack; size * window * iters / (t_end - t_start).
 * Where this differs from OSU: OSU's warm-up counts (100/10 round trips, 10/2 windows) are
 * kept, but never more than the timed iterations (at least 10 round trips and 1 window)
 * unless --lat-warmup/--bw-warmup say: on a slow or busy fabric the pilot times a few
 * iterations, and 100 untimed round trips and 2 windows were three times a pair's timed
 * work (64 nodes on 2 cores: 17 round trips and 1 window timed, 0.6 s warm of a 1.1 s
 * round); every wait is MPI_Test polled against a deadline (MPI_Testsome for a window)
 * instead of the blocking MPI_Send/MPI_Recv/MPI_Waitall, so that a partner that stops
 * answering cannot hang the job; no barrier inside a pair (the warm-up absorbs the skew
 * of the pair's start); and the iteration counts come from a time budget (below), not OSU's
 * fixed 10000/100.
 *
 * Iterations: a pilot on the first round's pairs (not recorded) runs each method 1, 2, 4, ...
 * iterations until one step takes a tenth of the method's share of --pair-budget (latency a
 * quarter, bandwidth three quarters); the (lower) median pair's time per iteration then sizes the
 * iterations (at least one each), fixed for the whole job so that every pair is measured the
 * same way.  When one round trip and one window exceed the budget (a slow or busy fabric), the
 * budget grows up to --sweep-target's share of a pair group, and past that the window shrinks;
 * both are said on stderr and recorded (the file's header, the summary's params); refused
 * (exit 2) only when not one message fits.  A slower
 * link takes proportionally longer; the round waits for it.  --lat-iterations and
 * --bw-iterations skip the pilot (a retest gives the sweep's counts, so they compare).
 *
 * Output: rank 0 appends each round to the matrix file (allpairs.bin; format in
 * docs/cluster.md) through a writer thread, so the measuring ranks never wait on the file
 * system and a crash keeps every round written; stdout carries two JSON Lines (jsonl.h): the
 * median link latency and bandwidth of the whole matrix with their spread, n = links measured.
 * Progress goes to stderr.  The coordinator never measures itself: rank 0 gathers, queues and
 * says a round between the rounds (a barrier starts the next when it is done), and its writer
 * thread writes only while rank 0 is not measuring.
 *
 * A partner that completes no message for --stall-factor x pair budget seconds (at least
 * STALL_FLOOR_S) is unresponsive: the rank that waited tells rank 0, which writes the pair as
 * failed (NaN), closes the file with the "a rank timed out" flag, prints what was measured and
 * ends the job with exit code 4.  If rank 0 itself is the one that stopped, the waiting rank
 * ends the job after a second such wait (the file then lacks its end block: cut short).
 *
 * A follow-up in the same launch (--ask-follow-up S): after its rounds the job asks the runner
 * what follows and waits up to S s for the plan; a retest it is given is measured by the same
 * ranks, in the retest's own directory and files, as a launch of its own would (a launch
 * saved: see follow_up_inside).
 *
 * Exit codes: 0 ok, 1 runtime error (MPI, memory, the file), 2 bad arguments, fewer than 2
 * ranks or a pair budget too small for one iteration, 4 a partner stopped answering.
 *
 * Build: mpicc -O2 allpairs.c -o allpairs -lm -lpthread
 * Run:   mpirun -np N ./allpairs   (one rank per node)
 */
#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "jsonl.h"
#include "probe.h"

#include "allpairs_file.h"

enum { EXIT_UNRESPONSIVE = 4 }; /* a partner stopped answering: the runner relaunches without it */
enum kind { SWEEP, RETEST, RESUME };
static const char *const KINDS[] = {"sweep", "retest", "resume", NULL};

#define DEFAULT_LAT_SIZE 8LL           /* one double: the flat part of every latency curve */
#define DEFAULT_BW_SIZE (128LL * 1024) /* past the eager limits: the rendezvous path */
#define DEFAULT_WINDOW 64LL            /* osu_bw's WINDOW_SIZE */
#define DEFAULT_BUDGET 0.1             /* seconds per pair: 10,000 nodes in about 17 minutes */
#define LAT_SHARE 0.25                 /* of the budget; bandwidth gets the rest */
#define DEFAULT_SWEEP_TARGET 300.0     /* seconds a default sweep may grow to on a slow fabric */
#define DEFAULT_STALL_FACTOR 50.0
#define STALL_FLOOR_S 2.0   /* a loaded node may not run a rank for a second: never less */
#define COORDINATOR_GRACE_S 10.0 /* past stall_s, for rank 0 to end a stalled job itself */
#define ABORT_DRAIN_S 1 /* s for the launcher to read rank 0's output before MPI_Abort */
#define PILOT_FRACTION 0.1  /* a pilot step long enough to time: a tenth of the share */
#define LARGE_THRESHOLD 8192 /* OSU's LARGE_MESSAGE_SIZE: above it, the large warm-up counts */
#define LAT_WARMUP_FLOOR 10  /* the fewest untimed round trips (OSU's count above 8 KiB) */
#define BW_WARMUP_FLOOR 1   /* the fewest untimed windows */
#define ACK_BYTES 4          /* osu_bw's ack */
#define MAX_NODES 65535      /* node numbers are u16 in the file */
/* The hand-over of a follow-up run inside this launch (--ask-follow-up; the names are
 * assay.probes.base's, each in the job's directory, the last in the follow-up's). */
#define ASK_FILE "follow-up.ask"
#define PLAN_FILE "follow-up.plan"
#define DONE_FILE "follow-up.done"
#define MAX_PLAN_BYTES 65536
#define MAX_PLAN_ARGS 256

enum { TAG_PING = 1, TAG_DATA = 100, TAG_ACK = 101, TAG_PILOT = 102, TAG_STALL = 103,
       TAG_GATHER = 104 };

typedef struct {
    long long lat_size, bw_size, window, pairs_at_once, first_round;
    long long lat_iters, bw_iters, lat_warmup, bw_warmup;
    int lat_warmup_given, bw_warmup_given; /* the user's counts, not capped (cap_warmup) */
    long long hang_rank, hang_round, die_rank, die_round;
    double budget, stall_factor, sweep_target, coordinator_delay, ask_wait;
    int kind, yield;
    const char *pairs_file, *output;
} options;

/* Which pairs meet in which round: the tournament computed, or a list's rounds (CSR). */
typedef struct {
    int n, rounds, ring; /* ring: nodes + the bye, for the tournament */
    uint32_t *start;     /* list: round r's pairs are pairs[start[r] .. start[r+1]) */
    uint32_t *pairs;     /* list: a << 16 | b, a < b */
} schedule;

/* What a rank sends rank 0 after each round: its pair's figures if it led one. */
typedef struct {
    int32_t partner; /* the higher rank of the pair this rank led, or -1 */
    int32_t failed;
    float latency, bandwidth;
} result;

static int rank = 0, nprocs = 1;
static options opt;
static double stall_s;
static const char *fitted_how = ""; /* rank 0: what the pilot changed, for the summary */
static char (*hosts)[MPI_MAX_PROCESSOR_NAME]; /* rank 0: every rank's host */
static char my_host[MPI_MAX_PROCESSOR_NAME];
/* A real status array, as OSU's reqstat: MPICH's MPI_STATUSES_IGNORE is the pointer
 * (MPI_Status *)1, which gcc >= 11 flags as -Wstringop-overflow. */
static MPI_Status *statuses;

/* ---- a follow-up inside this launch: how it ended ------------------------------------ */

static int inside;          /* a follow-up runs: rank 0 is in its directory */
static double inside_began; /* when its plan was read */

/* Rank 0, as the follow-up ends (its output flushed): DONE_FILE in its directory, "exit S" and
 * "seconds T", which tells the runner the follow-up ended here (without it, the launch's own
 * end is the follow-up's). */
static void write_done(int status)
{
    if (!inside || rank != 0)
        return;
    fflush(stdout);
    fflush(stderr);
    FILE *f = fopen(DONE_FILE ".part", "w");
    if (!f)
        return;
    fprintf(f, "exit %d\nseconds %.3f\n", status, probe_now() - inside_began);
    if (!fclose(f))
        rename(DONE_FILE ".part", DONE_FILE);
}

/* ---- the matrix file (rank 0; allpairs_file.h writes it) ------------------------------ */

/* rank 0's record of what it wrote: the summary's figures and the end block's counts */
static struct {
    float *lat, *bw;
    size_t n, cap;
    unsigned rounds;
} rec;

static void file_error(int err)
{
    fprintf(stderr, "allpairs: cannot write %s: %s\n", opt.output, strerror(err));
    MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
}

static void file_put(const unsigned char *data, size_t len)
{
    int err = apf_put(data, len);
    if (err)
        file_error(err);
}

static int file_opened; /* rank 0: after the pilot, whose choices its header records */

static void file_open(void)
{
    file_opened = 1;
    int err = apf_open(opt.output);
    if (err)
        file_error(err);
    size_t len = apf_header_len(hosts[0], sizeof hosts[0], nprocs);
    unsigned char *h = calloc(1, len);
    if (!h)
        file_error(ENOMEM);
    apf_header(h, len, hosts[0], sizeof hosts[0], nprocs, (uint32_t)opt.lat_size,
               (uint32_t)opt.bw_size, (uint32_t)opt.window, (float)opt.budget);
    file_put(h, len);
    free(h);
}

static void file_close(void)
{
    int err = apf_close();
    if (err)
        file_error(err);
}

static void remember(float lat, float bw)
{
    if (rec.n == rec.cap) {
        size_t cap = rec.cap ? 2 * rec.cap : 4096;
        float *l = realloc(rec.lat, cap * sizeof *l);
        if (l)
            rec.lat = l;
        float *b = l ? realloc(rec.bw, cap * sizeof *b) : NULL;
        if (!l || !b)
            file_error(ENOMEM);
        rec.bw = b;
        rec.cap = cap;
    }
    rec.lat[rec.n] = lat;
    rec.bw[rec.n++] = bw;
}

/* One round block: the pairs led by a rank (results[i].partner > i), in rank order. */
static void file_round(int round_no, const result *results, int n, long long lat_iters,
                       long long bw_iters, double t_start, double wall)
{
    int count = 0;
    for (int i = 0; i < n; i++)
        count += results[i].partner > i;
    size_t len = APF_ROUND_BYTES + APF_PAIR_BYTES * (size_t)count;
    unsigned char *b = malloc(len);
    if (!b)
        file_error(ENOMEM);
    apf_round_head(b, (uint32_t)round_no, (uint32_t)opt.kind, (uint32_t)count,
                   (uint32_t)lat_iters, (uint32_t)bw_iters, t_start, wall);
    unsigned char *p = b + APF_ROUND_BYTES;
    for (int i = 0; i < n; i++) {
        if (results[i].partner <= i)
            continue;
        float lat = results[i].failed ? NAN : results[i].latency;
        float bw = results[i].failed ? NAN : results[i].bandwidth;
        apf_pair(p, (unsigned)i, (unsigned)results[i].partner, lat, bw);
        p += APF_PAIR_BYTES;
        remember(lat, bw);
    }
    file_put(b, len);
    free(b);
    rec.rounds++;
}

static void file_end(unsigned flags)
{
    unsigned char b[APF_END_BYTES];
    apf_end(b, rec.rounds, (uint32_t)rec.n, flags);
    file_put(b, sizeof b);
}

/* ---- the summary on stdout ---------------------------------------------------------- */

static int cmp_float(const void *pa, const void *pb)
{
    float a = *(const float *)pa, b = *(const float *)pb;
    return (a > b) - (a < b);
}

/* jsonl.h's statistics (its conventions) over the finite values, sorted in place: a matrix of
 * 5e7 links stays float, not three double copies. */
static int float_stats(float *v, size_t n, jl_stats *s)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (isfinite(v[i]))
            v[k++] = v[i];
    memset(s, 0, sizeof *s);
    if (k == 0)
        return -1;
    qsort(v, k, sizeof *v, cmp_float);
    double sum = 0.0, ss = 0.0;
    for (size_t i = 0; i < k; i++)
        sum += v[i];
    double mean = sum / (double)k;
    for (size_t i = 0; i < k; i++)
        ss += ((double)v[i] - mean) * ((double)v[i] - mean);
    s->n = (long)k;
    s->min = v[0];
    s->max = v[k - 1];
    s->mean = mean;
    s->median = (k % 2) ? v[k / 2] : 0.5 * ((double)v[k / 2 - 1] + (double)v[k / 2]);
    s->stddev = k > 1 ? sqrt(ss / (double)(k - 1)) : 0.0;
    s->have = JL_N | JL_MIN | JL_MAX | JL_MEAN | JL_MEDIAN | JL_STDDEV;
    if (k >= 100) {
        s->p99 = v[(k * 99 + 99) / 100 - 1];
        s->have |= JL_P99;
    }
    if (k >= 1000) {
        s->p999 = v[(k * 999 + 999) / 1000 - 1];
        s->have |= JL_P999;
    }
    return 0;
}

/* The median link of each metric over every pair written, n = links measured. */
static void summary(const schedule *s, long long planned, long long lat_iters,
                    long long bw_iters, long long concurrent, const int *lost, int n_lost)
{
    const char *metrics[2] = {"p2p.latency", "p2p.bandwidth"};
    float *values[2] = {rec.lat, rec.bw};
    for (int m = 0; m < 2; m++) {
        jl_stats st;
        if (float_stats(values[m], rec.n, &st))
            continue; /* nothing measured */
        jl_begin(metrics[m], st.median);
        jl_param_long("size", m ? opt.bw_size : opt.lat_size);
        jl_param_str("summary", "matrix");
        jl_param_str("kind", KINDS[opt.kind]);
        jl_param_long("node_count", s->n);
        jl_param_long("links_planned", planned);
        jl_param_long("rounds", rec.rounds);
        jl_param_long("timed_iterations", m ? bw_iters : lat_iters);
        jl_param_long("warmup", m ? opt.bw_warmup : opt.lat_warmup);
        if (m)
            jl_param_long("window", opt.window);
        jl_param_double("pair_budget", opt.budget);
        if (*fitted_how)
            jl_param_str("fitted", fitted_how);
        jl_param_long("concurrent_pairs", concurrent);
        jl_param_str("matrix", opt.output);
        jl_param_double("wtick", MPI_Wtick());
        if (n_lost) {
            jl_key_("unresponsive");
            fputc('[', stdout);
            for (int i = 0; i < n_lost; i++)
                printf(i ? ", %d" : "%d", lost[i]);
            fputc(']', stdout);
        }
        jl_end(&st, JL_ALL);
    }
}

/* ---- the schedule ------------------------------------------------------------------- */

static int pairs_in(const schedule *s, int r)
{
    if (s->pairs)
        return (int)(s->start[r + 1] - s->start[r]);
    return s->n / 2;
}

/* My partner in round r (0-based), -1 when I rest; *slot = the pair's place in the round
 * (which --pairs-at-once group it measures in). */
static int partner_in(const schedule *s, int r, int me, int *slot)
{
    if (s->pairs) {
        for (uint32_t i = s->start[r]; i < s->start[r + 1]; i++) {
            int a = (int)(s->pairs[i] >> 16), b = (int)(s->pairs[i] & 0xffff);
            if (a == me || b == me) {
                *slot = (int)(i - s->start[r]);
                return a == me ? b : a;
            }
        }
        return -1;
    }
    /* Circle method after r turns: node x >= 1 sits at 1 + (x - 1 + r) mod (m - 1), node 0 at
     * 0; position j meets position m - 1 - j.  Node n (odd n) is the bye. */
    int m = s->ring;
    int pos = me == 0 ? 0 : 1 + (me - 1 + r) % (m - 1);
    int other = m - 1 - pos;
    int node = other == 0 ? 0 : 1 + ((other - 1 - r) % (m - 1) + (m - 1)) % (m - 1);
    if (node >= s->n)
        return -1;
    *slot = pos < other ? pos : other;
    if (s->n % 2) { /* the bye's pair takes no slot */
        int bye = 1 + (s->n - 1 + r) % (m - 1);
        int bye_slot = bye < m - 1 - bye ? bye : m - 1 - bye;
        if (*slot > bye_slot)
            (*slot)--;
    }
    return node;
}

/* ---- waiting, with a deadline ------------------------------------------------------- */

static struct {
    int round_no; /* what rank 0 is doing, for its report when a rank stops answering */
    const schedule *sched;
    long long planned, lat_iters, bw_iters, concurrent;
    double t0, round_start;
} now_;

static void job_stalled(int waited, int silent);

/* Poll until every request completes; -1 when none completed for stall_s seconds. */
static int spin_wait(int n, MPI_Request *reqs, int *idx)
{
    int left = n, polls = 0;
    double deadline = 0.0;
    while (left > 0) {
        int done = 0;
        if (n == 1) {
            MPI_Test(reqs, &done, MPI_STATUS_IGNORE);
        } else {
            MPI_Testsome(n, reqs, &done, idx, statuses);
            if (done == MPI_UNDEFINED)
                break;
        }
        if (done > 0) {
            left -= done;
            polls = 0;
            continue;
        }
        if (opt.yield)
            sched_yield();
        /* the clock is read every 256 polls, the deadline set on the first */
        if ((++polls & 255) == 0) {
            double t = probe_now();
            if (deadline == 0.0)
                deadline = t + stall_s;
            else if (t > deadline)
                return -1;
        }
    }
    return 0;
}

/* Wait for a barrier or a gather without busy-polling (a waiting rank leaves its core to the
 * ranks still measuring): spin 50 us, then test every ~50 us.  Rank 0 also listens for
 * reports of a partner that stopped answering. */
static void wait_quietly(MPI_Request *req)
{
    int done = 0;
    double spin_until = probe_now() + 50e-6;
    const struct timespec nap = {0, 50000};
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        if (rank == 0) {
            int report = 0;
            MPI_Iprobe(MPI_ANY_SOURCE, TAG_STALL, MPI_COMM_WORLD, &report, MPI_STATUS_IGNORE);
            if (report)
                job_stalled(-1, -1);
        }
        if (probe_now() > spin_until)
            nanosleep(&nap, NULL);
    }
}

static void barrier(void)
{
    MPI_Request req;
    MPI_Ibarrier(MPI_COMM_WORLD, &req);
    wait_quietly(&req);
}

/* Rank 0 gathers `bytes` from every rank into `all` (rank order; only rank 0's is written)
 * along a binomial tree of point-to-point messages, waiting quietly.  Not MPI_(I)gather: Open
 * MPI's is linear, so rank 0 held a connection to every rank from the first round, and over
 * its TCP transport a rank's latency grows with the connections it holds (64 namespace nodes:
 * the other pairs 1.25 ms in rounds 1-10, 4.2 ms in rounds 54-63 as theirs accumulate; rank
 * 0's pairs 2.5 ms from the start), so the first node read 1.3-1.4x the median and was flagged.
 * Through the tree rank 0 talks to log2(N) ranks, as every rank does. */
static void tree_gather(const void *mine, int bytes, void *all)
{
    char *buf = rank == 0 ? all : malloc((size_t)nprocs * (size_t)bytes);
    if (!buf) {
        fprintf(stderr, "allpairs: rank %d: cannot allocate %d x %d bytes\n", rank, nprocs, bytes);
        MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }
    memcpy(buf + (size_t)rank * (size_t)bytes, mine, (size_t)bytes);
    for (int mask = 1; mask < nprocs; mask <<= 1) {
        MPI_Request req;
        if (rank & mask) { /* my subtree, ranks [rank, rank + mask), goes up; done */
            int count = nprocs - rank < mask ? nprocs - rank : mask;
            MPI_Isend(buf + (size_t)rank * (size_t)bytes, count * bytes, MPI_BYTE, rank - mask,
                      TAG_GATHER, MPI_COMM_WORLD, &req);
            wait_quietly(&req);
            break;
        }
        int from = rank + mask;
        if (from < nprocs) {
            int count = nprocs - from < mask ? nprocs - from : mask;
            MPI_Irecv(buf + (size_t)from * (size_t)bytes, count * bytes, MPI_BYTE, from,
                      TAG_GATHER, MPI_COMM_WORLD, &req);
            wait_quietly(&req);
        }
    }
    if (rank != 0)
        free(buf);
}

/* Rank 0: a rank stopped answering (waited: the rank that waited, silent: its partner; -1, -1
 * when the report is still in the queue).  Write the pairs that failed, close the file with
 * the flag, say who, print what was measured, end the job. */
static void job_stalled(int waited, int silent)
{
    enum { MAX_REPORTS = 64 };
    int pairs[MAX_REPORTS][2], n = 0;
    if (waited >= 0) {
        pairs[n][0] = waited;
        pairs[n++][1] = silent;
    }
    /* Both ranks of a pair may report the other (a link down): gather what comes within a
     * short while, so that the end names both sides. */
    double until = probe_now() + 0.2;
    while (probe_now() < until && n < MAX_REPORTS) {
        int have = 0;
        MPI_Status st;
        MPI_Iprobe(MPI_ANY_SOURCE, TAG_STALL, MPI_COMM_WORLD, &have, &st);
        if (!have) {
            const struct timespec nap = {0, 1000000};
            nanosleep(&nap, NULL);
            continue;
        }
        int msg[3];
        MPI_Recv(msg, 3, MPI_INT, st.MPI_SOURCE, TAG_STALL, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        pairs[n][0] = msg[1];
        pairs[n++][1] = msg[2];
    }
    int lost[MAX_REPORTS], n_lost = 0;
    result *failed = calloc((size_t)nprocs, sizeof *failed);
    for (int i = 0; failed && i < nprocs; i++)
        failed[i].partner = -1;
    for (int i = 0; i < n; i++) {
        int w = pairs[i][0], s = pairs[i][1];
        fprintf(stderr,
                "allpairs: unresponsive: rank %d (%s) did not answer rank %d (%s) within %g s "
                "in round %d\n",
                s, hosts[s], w, hosts[w], stall_s, now_.round_no);
        int seen = 0;
        for (int k = 0; k < n_lost; k++)
            seen |= lost[k] == s;
        if (!seen)
            lost[n_lost++] = s;
        int a = w < s ? w : s, b = w < s ? s : w;
        if (failed) {
            failed[a].partner = b;
            failed[a].failed = 1;
        }
    }
    /* the pilot (round 0) is not in the file: only its stderr line tells; the file is opened
     * after the pilot, so one that stalled there opens it to say the job timed out */
    if (!file_opened)
        file_open();
    if (now_.round_no > 0 && failed && n > 0)
        file_round(now_.round_no, failed, nprocs, now_.lat_iters, now_.bw_iters,
                   now_.round_start, MPI_Wtime() - now_.t0 - now_.round_start);
    file_end(APF_FLAG_TIMED_OUT);
    file_close();
    fprintf(stderr,
            "allpairs: %s keeps every round finished before round %d (and its failed pairs); "
            "ending the job (exit %d)\n",
            opt.output, now_.round_no, EXIT_UNRESPONSIVE);
    summary(now_.sched, now_.planned, now_.lat_iters, now_.bw_iters, now_.concurrent, lost,
            n_lost);
    /* MPI_Abort ends every process at once, and MPICH's proxy may not have read yet what this
     * rank wrote to its stdout pipe: on a loaded node the summary came out cut mid-line. The
     * job is ending anyway; a second lets the launcher take every line first. */
    fflush(stdout);
    fflush(stderr);
    write_done(EXIT_UNRESPONSIVE);
    nanosleep(&(struct timespec){ABORT_DRAIN_S, 0}, NULL);
    MPI_Abort(MPI_COMM_WORLD, EXIT_UNRESPONSIVE);
    exit(EXIT_UNRESPONSIVE);
}

/* This rank's partner completed nothing for stall_s: tell rank 0, which ends the job; if rank
 * 0 does not (it may be the one that stopped), end it from here. */
__attribute__((noreturn)) static void partner_silent(int partner, const char *phase)
{
    fprintf(stderr, "allpairs: rank %d (%s): no answer from rank %d within %g s (%s, round %d)\n",
            rank, my_host, partner, stall_s, phase, now_.round_no);
    if (rank == 0)
        job_stalled(0, partner);
    int msg[3] = {now_.round_no, rank, partner};
    MPI_Request req;
    MPI_Isend(msg, 3, MPI_INT, 0, TAG_STALL, MPI_COMM_WORLD, &req);
    /* Rank 0 ends the job itself once told (it writes the file and the summary first); this
     * rank's abort is only for a rank 0 that stopped. Given it too soon, it killed a busy rank
     * 0 mid-line on a loaded node (a summary line cut in two on stdout). */
    double until = probe_now() + stall_s + COORDINATOR_GRACE_S;
    const struct timespec nap = {0, 1000000};
    while (probe_now() < until) {
        int done;
        MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        nanosleep(&nap, NULL);
    }
    fprintf(stderr, "allpairs: rank 0 did not end the job within %g s: ending it from rank %d\n",
            stall_s + COORDINATOR_GRACE_S, rank);
    MPI_Abort(MPI_COMM_WORLD, EXIT_UNRESPONSIVE);
    exit(EXIT_UNRESPONSIVE);
}

/* ---- one pair ----------------------------------------------------------------------- */

typedef struct {
    int peer, lead; /* lead: the lower rank, which sends the pings and the window */
    char *s_buf, *r_buf;
    MPI_Request *reqs;
    int *idx;
} pair;

/* One osu_latency round trip, or -1 if the partner stopped answering. */
static int lat_iteration(const pair *p)
{
    MPI_Request r;
    int count = (int)opt.lat_size;
    if (p->lead) {
        MPI_Isend(p->s_buf, count, MPI_CHAR, p->peer, TAG_PING, MPI_COMM_WORLD, &r);
        if (spin_wait(1, &r, p->idx))
            return -1;
        MPI_Irecv(p->r_buf, count, MPI_CHAR, p->peer, TAG_PING, MPI_COMM_WORLD, &r);
        return spin_wait(1, &r, p->idx);
    }
    MPI_Irecv(p->r_buf, count, MPI_CHAR, p->peer, TAG_PING, MPI_COMM_WORLD, &r);
    if (spin_wait(1, &r, p->idx))
        return -1;
    MPI_Isend(p->s_buf, count, MPI_CHAR, p->peer, TAG_PING, MPI_COMM_WORLD, &r);
    return spin_wait(1, &r, p->idx);
}

/* One osu_bw window and its ack, or -1. */
static int bw_iteration(const pair *p)
{
    int count = (int)opt.bw_size, w = (int)opt.window;
    MPI_Request ack;
    if (p->lead) {
        for (int j = 0; j < w; j++)
            MPI_Isend(p->s_buf, count, MPI_CHAR, p->peer, TAG_DATA, MPI_COMM_WORLD, &p->reqs[j]);
        if (spin_wait(w, p->reqs, p->idx))
            return -1;
        MPI_Irecv(p->r_buf, ACK_BYTES, MPI_CHAR, p->peer, TAG_ACK, MPI_COMM_WORLD, &ack);
        return spin_wait(1, &ack, p->idx);
    }
    for (int j = 0; j < w; j++)
        MPI_Irecv(p->r_buf, count, MPI_CHAR, p->peer, TAG_DATA, MPI_COMM_WORLD, &p->reqs[j]);
    if (spin_wait(w, p->reqs, p->idx))
        return -1;
    MPI_Isend(p->s_buf, ACK_BYTES, MPI_CHAR, p->peer, TAG_ACK, MPI_COMM_WORLD, &ack);
    return spin_wait(1, &ack, p->idx);
}

typedef int (*iteration_fn)(const pair *);

/* `warm` untimed iterations, then `iters` timed as one block (OSU: the clock read before the
 * first timed iteration and after the last); the elapsed seconds. */
static double timed(const pair *p, iteration_fn step, long long warm, long long iters,
                    const char *phase)
{
    double t_start = 0.0;
    for (long long i = 0; i < warm + iters; i++) {
        if (i == warm)
            t_start = MPI_Wtime();
        if (step(p))
            partner_silent(p->peer, phase);
    }
    return MPI_Wtime() - t_start;
}

/* The pilot: `warm` iterations, then 1, 2, 4, ... timed until a step lasts `target` seconds
 * (the leader decides and tells its partner after each step); seconds per iteration. */
static double pilot(const pair *p, iteration_fn step, long long warm, double target,
                    const char *phase)
{
    long long n = 1;
    double t = timed(p, step, warm, n, phase);
    for (;;) {
        int next = 0;
        MPI_Request r;
        if (p->lead) {
            next = (t < target && n < (1LL << 24)) ? (int)(2 * n) : 0;
            MPI_Isend(&next, 1, MPI_INT, p->peer, TAG_PILOT, MPI_COMM_WORLD, &r);
        } else {
            MPI_Irecv(&next, 1, MPI_INT, p->peer, TAG_PILOT, MPI_COMM_WORLD, &r);
        }
        if (spin_wait(1, &r, p->idx))
            partner_silent(p->peer, phase);
        if (next == 0)
            return t / (double)n;
        n = next;
        t = timed(p, step, 0, n, phase);
    }
}

/* Test-only faults: this rank stops answering, or dies, when it reaches its pair. */
static void test_faults(int round_no)
{
    if (rank == opt.hang_rank && round_no >= opt.hang_round) {
        fprintf(stderr, "allpairs: rank %d stops answering in round %d (--test-hang-rank)\n",
                rank, round_no);
        for (;;)
            pause();
    }
    if (rank == opt.die_rank && round_no >= opt.die_round) {
        fprintf(stderr, "allpairs: rank %d kills itself in round %d (--test-die-rank)\n", rank,
                round_no);
        raise(SIGKILL);
    }
}

/* Test-only: rank 0's work between rounds takes --test-coordinator-delay seconds longer (a
 * gather and a write at thousands of nodes, or a slow file system). */
static void coordinator_busy(void)
{
    double s = opt.coordinator_delay;
    if (s <= 0.0)
        return;
    struct timespec t = {(time_t)s, (long)((s - floor(s)) * 1e9)};
    while (nanosleep(&t, &t) && errno == EINTR)
        continue;
}

/* ---- rounds ------------------------------------------------------------------------- */

typedef struct {
    double lat, bw; /* pilot: seconds per iteration; round: the figures */
} measured;

/* One round's pairs, k at a time, each group latency | barrier | bandwidth | barrier.
 * pilot: run the pilot instead of the timed loops. */
static measured run_round(const schedule *s, int r, int round_no, pair *p, int pilot_run)
{
    int slot = 0;
    int peer = partner_in(s, r, rank, &slot);
    int np = pairs_in(s, r);
    int k = opt.pairs_at_once > 0 && opt.pairs_at_once < np ? (int)opt.pairs_at_once : np;
    int groups = k > 0 ? (np + k - 1) / k : 1;
    int mine = peer >= 0 ? slot / (k > 0 ? k : 1) : -1;
    measured out = {NAN, NAN};
    p->peer = peer;
    p->lead = peer > rank;
    double lat_share = LAT_SHARE * opt.budget, bw_share = (1.0 - LAT_SHARE) * opt.budget;
    for (int g = 0; g < groups; g++) {
        if (rank == 0) /* the writer thread waits while rank 0 measures (apf_hold) */
            apf_hold(g == mine);
        if (g == mine) {
            test_faults(round_no);
            if (pilot_run)
                out.lat = pilot(p, lat_iteration, opt.lat_warmup, PILOT_FRACTION * lat_share,
                                "pilot, latency");
            else
                out.lat = timed(p, lat_iteration, opt.lat_warmup, now_.lat_iters, "latency") /
                          (2.0 * (double)now_.lat_iters);
        }
        barrier();
        if (g == mine) {
            if (pilot_run) {
                out.bw = pilot(p, bw_iteration, opt.bw_warmup, PILOT_FRACTION * bw_share,
                               "pilot, bandwidth");
            } else {
                double t = timed(p, bw_iteration, opt.bw_warmup, now_.bw_iters, "bandwidth");
                out.bw = (double)opt.bw_size * (double)opt.window * (double)now_.bw_iters / t;
            }
        }
        barrier();
    }
    if (rank == 0)
        apf_hold(0);
    return out;
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return (a > b) - (a < b);
}

/* The lower median of the finite values among n (sorted in place), NaN if none: the pilot's
 * typical pair. Lower, not the mean of the middle two: at 4 nodes the pilot round has two
 * pairs, and with the slow link among them (100 Mbit/s here: 0.67 s a window against 0.04 s)
 * their mean refused the default budget, though a healthy pair fits it 20 times over. */
static double lower_median(double *v, int n)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(v[i]) && v[i] > 0.0)
            v[k++] = v[i];
    if (!k)
        return NAN;
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    return v[(k - 1) / 2];
}

/* What the pilot's median pair needs, fitted so that a default run finishes: the iterations
 * of each method in its share of the pair budget; when one round trip and one window do not
 * fit, first the budget grown (OSU's window kept) up to the sweep target's share of a pair
 * group, then the window shrunk to what fits that share.  Counts 0: not one message fits. */
typedef struct {
    long long lat, bw, window;
    double budget;
    const char *how; /* "" as asked, or what was changed */
} fitted;

static fitted fit_budget(double t_lat, double t_bw, long long groups)
{
    fitted f = {0, 0, opt.window, opt.budget, ""};
    double cap = opt.sweep_target / (double)(groups > 0 ? groups : 1);
    cap = cap > opt.budget ? cap : opt.budget;
    if (!(t_lat + t_bw <= opt.budget)) {
        double need = fmax(t_lat / LAT_SHARE, t_bw / (1.0 - LAT_SHARE));
        if (need <= cap) {
            f.budget = need;
            f.how = "pair budget grown to fit one window";
        } else {
            double per_message = t_bw / (double)opt.window;
            double room = cap - t_lat, w = floor(room / per_message);
            if (!(w >= 1.0))
                return f;
            f.window = w < (double)opt.window ? (long long)w : opt.window;
            f.budget = cap;
            f.how = "window shrunk to fit the sweep target";
            t_bw = per_message * (double)f.window;
        }
    }
    double n_lat = floor(LAT_SHARE * f.budget / t_lat);
    double n_bw = floor((1.0 - LAT_SHARE) * f.budget / t_bw);
    f.lat = n_lat < 1 ? 1 : n_lat > INT_MAX ? INT_MAX : (long long)n_lat;
    f.bw = n_bw < 1 ? 1 : n_bw > INT_MAX ? INT_MAX : (long long)n_bw;
    return f;
}

static long long pair_groups(const schedule *s)
{
    long long groups = 0;
    for (int r = 0; r < s->rounds; r++) {
        int np = pairs_in(s, r);
        int k = opt.pairs_at_once > 0 && opt.pairs_at_once < np ? (int)opt.pairs_at_once : np;
        groups += k > 0 ? (np + k - 1) / k : 1;
    }
    return groups;
}

/* OSU's warm-up, at most the timed iterations and at least the floor (unless given): the
 * pilot ran with OSU's counts; the sweep and its retests, whose counts are the sweep's, cap
 * them the same way, so their figures compare. */
static void cap_warmup(void)
{
    long long lat = now_.lat_iters > LAT_WARMUP_FLOOR ? now_.lat_iters : LAT_WARMUP_FLOOR;
    long long bw = now_.bw_iters > BW_WARMUP_FLOOR ? now_.bw_iters : BW_WARMUP_FLOOR;
    if (!opt.lat_warmup_given && lat < opt.lat_warmup)
        opt.lat_warmup = lat;
    if (!opt.bw_warmup_given && bw < opt.bw_warmup)
        opt.bw_warmup = bw;
}

/* Size the iterations from the pilot on the first round (fit_budget): every rank gets the
 * same counts, window and budget, or counts 0 when not one message fits (explained by rank
 * 0). */
static void calibrate(const schedule *s, pair *p)
{
    now_.round_no = 0;
    measured m = run_round(s, 0, 0, p, 1);
    double mine[2] = {p->lead ? m.lat : NAN, p->lead ? m.bw : NAN};
    double *all = rank == 0 ? malloc(2 * (size_t)nprocs * sizeof *all) : NULL;
    if (rank == 0 && !all)
        file_error(ENOMEM);
    tree_gather(mine, (int)sizeof mine, all);
    double chosen[4] = {0, 0, (double)opt.window, opt.budget}; /* lat, bw, window, budget */
    if (rank == 0) {
        double *lat = malloc((size_t)nprocs * sizeof *lat);
        double *bw = malloc((size_t)nprocs * sizeof *bw);
        if (!lat || !bw)
            file_error(ENOMEM);
        for (int i = 0; i < nprocs; i++) {
            lat[i] = all[2 * i];
            bw[i] = all[2 * i + 1];
        }
        double t_lat = lower_median(lat, nprocs), t_bw = lower_median(bw, nprocs);
        long long groups = pair_groups(s);
        fitted f = fit_budget(t_lat, t_bw, groups);
        if (f.lat == 0) {
            probe_error("not one message fits: the median pair took %.3g s a round trip of "
                        "%lld B and %.3g s a window of %lld x %lld B, and the sweep target "
                        "(%g s over %lld pair groups) allows %.3g s a pair; raise "
                        "--sweep-target or --pair-budget",
                        t_lat, opt.lat_size, t_bw, opt.window, opt.bw_size, opt.sweep_target,
                        groups, opt.sweep_target / (double)groups);
        } else {
            if (*f.how)
                fprintf(stderr,
                        "allpairs: pilot: one round trip and one window of %lld x %lld B "
                        "(%.3g s) do not fit the pair budget %g s: %s (window %lld, pair "
                        "budget %.3g s; sweep target %g s over %lld pair groups)\n",
                        opt.window, opt.bw_size, t_lat + t_bw, opt.budget, f.how, f.window,
                        f.budget, opt.sweep_target, groups);
            fitted_how = f.how;
            chosen[0] = (double)f.lat;
            chosen[1] = (double)f.bw;
            chosen[2] = (double)f.window;
            chosen[3] = f.budget;
            fprintf(stderr,
                    "allpairs: pilot: %.3g s a round trip of %lld B -> %lld latency "
                    "iterations; %.3g s a window of %lld x %lld B -> %lld bandwidth iterations "
                    "(pair budget %g s)\n",
                    t_lat, opt.lat_size, f.lat, t_bw * (double)f.window / (double)opt.window,
                    f.window, opt.bw_size, f.bw, f.budget);
        }
        free(lat);
        free(bw);
        free(all);
    }
    MPI_Request req;
    MPI_Ibcast(chosen, 4, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req);
    wait_quietly(&req);
    now_.lat_iters = (long long)chosen[0];
    now_.bw_iters = (long long)chosen[1];
    opt.window = (long long)chosen[2];
    opt.budget = chosen[3];
    stall_s = opt.stall_factor * opt.budget;
    stall_s = stall_s > STALL_FLOOR_S ? stall_s : STALL_FLOOR_S;
}

/* ---- the pairs file (rank 0) -------------------------------------------------------- */

/* A node named by its rank (digits) or its host name (which must run one rank only). */
static int node_of(const char *tok, const char *path, int line)
{
    long long v;
    if (!probe_parse_int(tok, 0, LLONG_MAX, &v)) {
        if (v >= nprocs)
            return probe_error("%s:%d: rank %lld is not in this job (%d ranks)", path, line, v,
                               nprocs) - 1;
        return (int)v;
    }
    int found = -1, count = 0;
    for (int i = 0; i < nprocs; i++)
        if (!strcmp(hosts[i], tok)) {
            found = i;
            count++;
        }
    if (count == 0)
        return probe_error("%s:%d: host '%s' is not in this job", path, line, tok) - 1;
    if (count > 1)
        return probe_error("%s:%d: host '%s' runs %d ranks: name the pair by rank", path, line,
                           tok, count) - 1;
    return found;
}

/* Read the list and schedule it: each pair in the earliest round after both its nodes'
 * previous pairs in the list.  0, or -1 (explained). */
static int read_pairs(schedule *s)
{
    FILE *f = fopen(opt.pairs_file, "r");
    if (!f)
        return probe_error("--pairs %s: %s", opt.pairs_file, strerror(errno));
    size_t n = 0, cap = 0;
    uint32_t *list = NULL;
    char line[4096];
    int lineno = 0, bad = 0;
    while (!bad && fgets(line, sizeof line, f)) {
        lineno++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *save = NULL, *t1 = strtok_r(line, " \t\r\n,", &save);
        if (!t1)
            continue;
        char *t2 = strtok_r(NULL, " \t\r\n,", &save), *t3 = strtok_r(NULL, " \t\r\n,", &save);
        if (!t2 || t3) {
            bad = probe_error("%s:%d: expected two nodes (rank numbers or host names)",
                              opt.pairs_file, lineno);
            break;
        }
        int a = node_of(t1, opt.pairs_file, lineno), b = node_of(t2, opt.pairs_file, lineno);
        if (a < 0 || b < 0) {
            bad = -1;
            break;
        }
        if (a == b) {
            bad = probe_error("%s:%d: a node cannot pair with itself", opt.pairs_file, lineno);
            break;
        }
        if (n == cap) {
            cap = cap ? 2 * cap : 1024;
            uint32_t *grown = realloc(list, cap * sizeof *list);
            if (!grown) {
                bad = probe_error("out of memory reading %s", opt.pairs_file);
                break;
            }
            list = grown;
        }
        int lo = a < b ? a : b, hi = a < b ? b : a;
        list[n++] = (uint32_t)lo << 16 | (uint32_t)hi;
    }
    fclose(f);
    if (!bad && n == 0)
        bad = probe_error("%s lists no pair", opt.pairs_file);
    if (bad) {
        free(list);
        return -1;
    }
    /* round of each pair: after both nodes' previous ones */
    int *next_free = calloc((size_t)nprocs, sizeof *next_free);
    uint32_t *round_of = malloc(n * sizeof *round_of);
    if (!next_free || !round_of)
        return probe_error("out of memory scheduling %zu pairs", n);
    int rounds = 0;
    for (size_t i = 0; i < n; i++) {
        int a = (int)(list[i] >> 16), b = (int)(list[i] & 0xffff);
        int r = next_free[a] > next_free[b] ? next_free[a] : next_free[b];
        round_of[i] = (uint32_t)r;
        next_free[a] = next_free[b] = r + 1;
        rounds = r + 1 > rounds ? r + 1 : rounds;
    }
    s->rounds = rounds;
    s->start = calloc((size_t)rounds + 1, sizeof *s->start);
    s->pairs = malloc(n * sizeof *s->pairs);
    if (!s->start || !s->pairs)
        return probe_error("out of memory scheduling %zu pairs", n);
    for (size_t i = 0; i < n; i++)
        s->start[round_of[i] + 1]++;
    for (int r = 0; r < rounds; r++)
        s->start[r + 1] += s->start[r];
    uint32_t *fill = calloc((size_t)rounds, sizeof *fill);
    if (!fill)
        return probe_error("out of memory scheduling %zu pairs", n);
    for (size_t i = 0; i < n; i++)
        s->pairs[s->start[round_of[i]] + fill[round_of[i]]++] = list[i];
    free(fill);
    free(round_of);
    free(next_free);
    free(list);
    return 0;
}

/* Rank 0 reads and schedules the list; every rank gets the schedule.  0, or -1. */
static int share_pairs(schedule *s)
{
    long long head[2] = {0, 0}; /* rounds, pairs; rounds = -1: the file was wrong */
    if (rank == 0) {
        if (read_pairs(s))
            head[0] = -1;
        else
            head[0] = s->rounds, head[1] = s->start[s->rounds];
    }
    MPI_Bcast(head, 2, MPI_LONG_LONG, 0, MPI_COMM_WORLD);
    if (head[0] < 0)
        return -1;
    if (rank != 0) {
        s->rounds = (int)head[0];
        s->start = malloc(((size_t)head[0] + 1) * sizeof *s->start);
        s->pairs = malloc((size_t)head[1] * sizeof *s->pairs);
        if (!s->start || !s->pairs) {
            fprintf(stderr, "allpairs: rank %d: out of memory for %lld pairs\n", rank, head[1]);
            MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
        }
    }
    MPI_Bcast(s->start, (int)head[0] + 1, MPI_UINT32_T, 0, MPI_COMM_WORLD);
    /* a resume at 10,000 nodes lists ~5e7 pairs: in parts below INT_MAX elements */
    for (long long off = 0; off < head[1]; off += 1 << 26) {
        long long len = head[1] - off < (1 << 26) ? head[1] - off : (1 << 26);
        MPI_Bcast(s->pairs + off, (int)len, MPI_UINT32_T, 0, MPI_COMM_WORLD);
    }
    return 0;
}

/* ---- options ------------------------------------------------------------------------ */

static void usage(void)
{
    printf("usage: mpirun -np N allpairs [options]      (one rank per node, N >= 2)\n"
           "\n"
           "p2p latency and bandwidth of every pair of ranks, in the rounds of a round-robin\n"
           "tournament run inside the job (OSU 5.x methods at one size each). Rank 0 appends\n"
           "each round to the matrix file; stdout: the median link of each metric (JSON Lines).\n"
           "\n"
           "options:\n"
           "  --lat-size B           latency message, bytes (default %lld)\n"
           "  --bw-size B            bandwidth message, bytes (default %lld)\n"
           "  --window W             bandwidth messages in flight (default %lld, osu_bw's)\n"
           "  --pair-budget S        seconds per pair, both metrics (default %g): latency gets\n"
           "                         %g of it, bandwidth the rest; a pilot sizes the iterations\n"
           "  --sweep-target S       when one window does not fit the pair budget, the budget\n"
           "                         grows (or else the window shrinks) to fit S seconds for\n"
           "                         the whole sweep (default %g)\n"
           "  --lat-iterations N     timed round trips per pair (default: from the pilot)\n"
           "  --bw-iterations N      timed windows per pair (default: from the pilot)\n"
           "  --lat-warmup N         untimed round trips first (default OSU's 100, 10 above 8 KiB;\n"
           "                         at most the timed ones, at least 10)\n"
           "  --bw-warmup N          untimed windows first (default OSU's 10, 2 above 8 KiB;\n"
           "                         at most the timed ones, at least 1)\n"
           "  --pairs-at-once K      at most K pairs of a round measure at once (default 0:\n"
           "                         the whole round)\n"
           "  --pairs FILE           measure these pairs only: one pair a line, two ranks or\n"
           "                         host names; '#' starts a comment\n"
           "  --kind K               retest or resume, with --pairs (default retest)\n"
           "  --first-round R        number of the first round in the file (default 1)\n"
           "  --output FILE          the matrix file (default allpairs.bin)\n"
           "  --ask-follow-up S      after the rounds, ask the runner what follows (leave\n"
           "                         " ASK_FILE ") and wait up to S s for " PLAN_FILE ": 'none',\n"
           "                         or 'run', a directory and one argument a line; then\n"
           "                         measure that inside this launch, in that directory\n"
           "  --stall-factor F       a partner that completes nothing for F x pair budget\n"
           "                         seconds (at least %g s) stopped answering (default %g)\n"
           "  --yield                sched_yield() while polling (more ranks than cores;\n"
           "                         also when ASSAY_SHARED_KERNEL is set)\n"
           "  --test-hang-rank R --test-hang-round K   (tests) rank R stops answering at\n"
           "                         its pair in round K or later\n"
           "  --test-die-rank R --test-die-round K     (tests) rank R kills itself there\n"
           "  --test-coordinator-delay S  (tests) rank 0's work between rounds takes S s\n"
           "  --help                 this text\n"
           "\n"
           "Exit codes: 0 ok, 1 runtime error, 2 bad arguments (or < 2 ranks, or not one\n"
           "message fits the sweep target), 4 a partner stopped answering (the file keeps every\n"
           "round measured before).\n",
           DEFAULT_LAT_SIZE, DEFAULT_BW_SIZE, DEFAULT_WINDOW, DEFAULT_BUDGET, LAT_SHARE,
           DEFAULT_SWEEP_TARGET, STALL_FLOOR_S, DEFAULT_STALL_FACTOR);
}

/* probe.h has no string options: take `--name value` out of argv before it parses. */
static int take_string(int *argc, char **argv, const char *name, const char **value)
{
    for (int i = 1; i < *argc; i++) {
        if (strcmp(argv[i], name))
            continue;
        if (i + 1 >= *argc || !argv[i + 1][0])
            return probe_error("%s needs a value (see --help)", name);
        *value = argv[i + 1];
        for (int j = i; j + 2 <= *argc; j++)
            argv[j] = argv[j + 2];
        *argc -= 2;
        i--;
    }
    return 0;
}

static int parse(int argc, char **argv)
{
    opt = (options){
        .lat_size = DEFAULT_LAT_SIZE, .bw_size = DEFAULT_BW_SIZE, .window = DEFAULT_WINDOW,
        .first_round = 1, .lat_iters = -1, .bw_iters = -1, .lat_warmup = -1, .bw_warmup = -1,
        .hang_rank = -1, .hang_round = 1, .die_rank = -1, .die_round = 1,
        .budget = DEFAULT_BUDGET, .stall_factor = DEFAULT_STALL_FACTOR, .kind = -1,
        .sweep_target = DEFAULT_SWEEP_TARGET,
        .output = "allpairs.bin",
    };
    char **args = malloc(((size_t)argc + 1) * sizeof *args);
    if (!args)
        return probe_error("out of memory");
    memcpy(args, argv, ((size_t)argc + 1) * sizeof *args);
    if (take_string(&argc, args, "--pairs", &opt.pairs_file) ||
        take_string(&argc, args, "--output", &opt.output))
        return -1;
    const probe_option opts[] = {
        {"--lat-size", PROBE_SIZE, &opt.lat_size, .min = 0, .max = INT_MAX},
        {"--bw-size", PROBE_SIZE, &opt.bw_size, .min = 1, .max = INT_MAX},
        {"--window", PROBE_INT, &opt.window, .min = 1, .max = 1 << 16},
        {"--pair-budget", PROBE_REAL, &opt.budget, .rmin = 1e-6, .rmax = 3600.0},
        {"--sweep-target", PROBE_REAL, &opt.sweep_target, .rmin = 1e-3, .rmax = 1e7},
        {"--lat-iterations", PROBE_INT, &opt.lat_iters, .min = 1, .max = INT_MAX},
        {"--bw-iterations", PROBE_INT, &opt.bw_iters, .min = 1, .max = INT_MAX},
        {"--lat-warmup", PROBE_INT, &opt.lat_warmup, .min = 0, .max = INT_MAX},
        {"--bw-warmup", PROBE_INT, &opt.bw_warmup, .min = 0, .max = INT_MAX},
        {"--pairs-at-once", PROBE_INT, &opt.pairs_at_once, .min = 0, .max = INT_MAX},
        {"--kind", PROBE_CHOICE, &opt.kind, .choices = KINDS},
        {"--first-round", PROBE_INT, &opt.first_round, .min = 1, .max = INT_MAX / 2},
        {"--stall-factor", PROBE_REAL, &opt.stall_factor, .rmin = 1.0, .rmax = 1e6},
        {"--ask-follow-up", PROBE_REAL, &opt.ask_wait, .rmin = 0.001, .rmax = 86400.0},
        {"--yield", PROBE_FLAG, &opt.yield, .min = 0},
        {"--test-hang-rank", PROBE_INT, &opt.hang_rank, .min = 0, .max = INT_MAX},
        {"--test-hang-round", PROBE_INT, &opt.hang_round, .min = 1, .max = INT_MAX},
        {"--test-die-rank", PROBE_INT, &opt.die_rank, .min = 0, .max = INT_MAX},
        {"--test-die-round", PROBE_INT, &opt.die_round, .min = 1, .max = INT_MAX},
        {"--test-coordinator-delay", PROBE_REAL, &opt.coordinator_delay, .rmin = 0.0,
         .rmax = 60.0},
        PROBE_END,
    };
    int rc = probe_parse_options(argc, args, opts);
    free(args);
    if (rc)
        return -1;
    if ((opt.lat_iters < 0) != (opt.bw_iters < 0))
        return probe_error("--lat-iterations and --bw-iterations go together (or neither: the "
                           "pilot sizes both)");
    if (opt.pairs_file && opt.kind == SWEEP)
        return probe_error("--kind sweep: a list of pairs is a retest or a resume");
    if (!opt.pairs_file && opt.kind >= 0 && opt.kind != SWEEP)
        return probe_error("--kind %s needs --pairs FILE", KINDS[opt.kind]);
    if (opt.kind < 0)
        opt.kind = opt.pairs_file ? RETEST : SWEEP;
    /* OSU: 100/10 warm-up iterations for latency, 10/2 for bandwidth, the second above 8 KiB */
    opt.lat_warmup_given = opt.lat_warmup >= 0;
    opt.bw_warmup_given = opt.bw_warmup >= 0;
    if (opt.lat_warmup < 0)
        opt.lat_warmup = opt.lat_size > LARGE_THRESHOLD ? 10 : 100;
    if (opt.bw_warmup < 0)
        opt.bw_warmup = opt.bw_size > LARGE_THRESHOLD ? 2 : 10;
    stall_s = opt.stall_factor * opt.budget;
    if (stall_s < STALL_FLOOR_S)
        stall_s = STALL_FLOOR_S;
    return 0;
}

/* The options, and what the launcher says of the nodes: "nodes" that share one kernel
 * (namespaces, containers: the launcher found it and says so) share its CPUs too, and a
 * busy-polling rank would starve the ranks measuring. */
static int read_options(int argc, char **argv)
{
    if (parse(argc, argv))
        return -1;
    if (getenv("ASSAY_SHARED_KERNEL"))
        opt.yield = 1;
    return 0;
}

/* ---- where the start went ------------------------------------------------------------ */

/* The launch of a big job is a cost of its own (the launcher's spread, MPI_Init's wire-up, the
 * pilot): rank 0 says on stderr where it went, so a slow start is seen and bench/ can take it
 * apart.  Wall-clock time, since ranks on different nodes compare it: off by the nodes' clock
 * offsets (milliseconds where NTP runs), which these figures of seconds can bear. */
typedef struct {
    double began, init_done; /* this rank's entry to main, MPI_Init's return */
} start_times;

static double wall_clock(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double first_began; /* rank 0: the earliest rank's start, the origin of what it says */

/* Rank 0, once the host names are gathered: how far apart the ranks started (the launcher),
 * when the last MPI_Init returned and when the names were in. */
static void say_start(const start_times *all, double gathered)
{
    double last_began = all[0].began, last_init = all[0].init_done;
    first_began = all[0].began;
    for (int i = 1; i < nprocs; i++) {
        first_began = fmin(first_began, all[i].began);
        last_began = fmax(last_began, all[i].began);
        last_init = fmax(last_init, all[i].init_done);
    }
    fprintf(stderr,
            "allpairs: start: %d ranks began within %.3f s; the last MPI_Init returned at "
            "%.3f s, the host names were gathered at %.3f s (after the first rank began)\n",
            nprocs, last_began - first_began, last_init - first_began, gathered - first_began);
}

/* ---- main --------------------------------------------------------------------------- */

/* Everything is measured, written and printed (or the job refused, every rank knowing why):
 * MPI_Finalize has nothing left to lose.  MPICH over UCX's TCP transport hung in it at 8 and 16
 * nodes here, every time (under srun's pmi2 and hydra alike), with the results already out, and
 * after a refused pilot at 64 nodes until the job's 126 s timeout: a rank that does not leave
 * it within FINALIZE_S exits by itself with the status it would have had, rather than hold the
 * allocation to its timeout.  Every exit after MPI_Init goes through here.  2 s: a healthy
 * MPI_Finalize took 0.08 s here (Open MPI, 16 nodes), and leaving a slow one loses nothing;
 * 10 s before cost each MPICH job 10 s (at 64 nodes, 20 of a run's 194 s). */
enum { FINALIZE_S = 2 };
static volatile sig_atomic_t leave_status = PROBE_OK;

static void finalize_stuck(int sig)
{
    (void)sig;
    static const char msg[] = "allpairs: MPI_Finalize did not return within 2 s, everything "
                              "written and said before it: leaving it\n";
    if (rank == 0) {
        ssize_t said = write(2, msg, sizeof msg - 1); /* async-signal-safe, unlike fprintf */
        (void)said;
    }
    _exit(leave_status);
}

static int finalize_or_leave(int status)
{
    fflush(stdout);
    fflush(stderr);
    write_done(status);
    leave_status = status;
    signal(SIGALRM, finalize_stuck);
    alarm(FINALIZE_S);
    MPI_Finalize();
    alarm(0);
    return status;
}

/* ---- measuring a schedule ------------------------------------------------------------ */

static void free_pair(pair *p)
{
    free(p->s_buf);
    free(p->r_buf);
    free(p->reqs);
    free(p->idx);
    free(statuses);
    statuses = NULL;
    *p = (pair){0};
}

/* Page-aligned buffers, as OSU's, touched before any timing (no page fault is timed), sized
 * for the options in force (a follow-up's are its own). */
static void alloc_pair(pair *p)
{
    free_pair(p);
    long page = sysconf(_SC_PAGESIZE);
    long long big = opt.bw_size > opt.lat_size ? opt.bw_size : opt.lat_size;
    size_t bufsize = (size_t)(big > ACK_BYTES ? big : ACK_BYTES);
    p->reqs = malloc((size_t)opt.window * sizeof *p->reqs);
    p->idx = malloc((size_t)opt.window * sizeof *p->idx);
    statuses = malloc((size_t)opt.window * sizeof *statuses);
    if (posix_memalign((void **)&p->s_buf, (size_t)page, bufsize) ||
        posix_memalign((void **)&p->r_buf, (size_t)page, bufsize) || !p->reqs || !p->idx ||
        !statuses) {
        fprintf(stderr, "allpairs: rank %d: cannot allocate buffers of %zu bytes\n", rank,
                bufsize);
        MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }
    memset(p->s_buf, 'a', bufsize);
    memset(p->r_buf, 'b', bufsize);
}

/* Schedule s from the pilot (or the given counts) to the summary: PROBE_OK, or PROBE_USAGE when
 * not one message fits.  results: rank 0's, a slot per rank. */
static int measure(schedule *s, pair *p, result *results)
{
    alloc_pair(p);
    rec.n = rec.rounds = 0;
    fitted_how = "";
    file_opened = 0;
    long long planned = s->pairs ? (long long)s->start[s->rounds]
                                 : (long long)nprocs * (nprocs - 1) / 2;
    now_.sched = s;
    now_.planned = planned;
    int widest = 0; /* the most pairs of a round, measured at once unless --pairs-at-once */
    for (int r = 0; r < s->rounds; r++)
        widest = pairs_in(s, r) > widest ? pairs_in(s, r) : widest;
    now_.concurrent = opt.pairs_at_once > 0 && opt.pairs_at_once < widest ? opt.pairs_at_once
                                                                          : widest;
    if (opt.lat_iters > 0) {
        now_.lat_iters = opt.lat_iters;
        now_.bw_iters = opt.bw_iters;
    } else {
        calibrate(s, p);
        if (rank == 0)
            fprintf(stderr, "allpairs: pilot done at %.3f s\n", wall_clock() - first_began);
    }
    cap_warmup();
    if (rank == 0) /* after the pilot: the header records the window and budget it chose */
        file_open();
    if (now_.lat_iters == 0) {
        if (rank == 0) {
            file_end(0);
            file_close();
        }
        return PROBE_USAGE;
    }
    barrier();
    now_.t0 = MPI_Wtime();
    double last_said = probe_now();
    for (int r = 0; r < s->rounds; r++) {
        int round_no = (int)opt.first_round + r;
        now_.round_no = round_no;
        now_.round_start = r ? MPI_Wtime() - now_.t0 : 0.0; /* the pairs' window begins */
        measured m = run_round(s, r, round_no, p, 0);
        double round_end = MPI_Wtime() - now_.t0;
        result mine = {-1, 0, (float)m.lat, (float)m.bw};
        if (p->peer > rank)
            mine.partner = p->peer;
        tree_gather(&mine, (int)sizeof mine, results);
        if (rank == 0) {
            file_round(round_no, results, nprocs, now_.lat_iters, now_.bw_iters,
                       now_.round_start, round_end - now_.round_start);
            if (r + 1 < s->rounds)
                coordinator_busy();
            if (probe_now() - last_said > 1.0 || r + 1 == s->rounds) {
                fprintf(stderr,
                        "allpairs: round %d (%d of %d, %s): %d pairs, %.3f s; %.1f s so far\n",
                        round_no, r + 1, s->rounds, KINDS[opt.kind], pairs_in(s, r),
                        round_end - now_.round_start, round_end);
                last_said = probe_now();
            }
        }
        /* The coordinator's work (the gather above, the round's block, the progress line) is
         * done before any pair of the next round starts: otherwise rank 0's pairs start late,
         * measured apart from the round's other pairs (on 64 nodes of one machine, against 62
         * ranks waking from their naps: its node read 1.54x slower than the median). */
        if (r + 1 < s->rounds)
            barrier();
    }
    if (rank == 0) {
        file_end(0);
        file_close();
        summary(s, planned, now_.lat_iters, now_.bw_iters, now_.concurrent, NULL, 0);
        fflush(stdout);
        fprintf(stderr, "allpairs: done at %.3f s, %s next\n", wall_clock() - first_began,
                opt.ask_wait > 0.0 ? "asking for a follow-up" : "MPI_Finalize");
    }
    return PROBE_OK;
}

/* ---- a follow-up inside this launch ---------------------------------------------------- */

/* Wait without polling hard: the ranks waiting for the runner's plan leave it the cores. */
static void wait_idle(MPI_Request *req)
{
    const struct timespec nap = {0, 1000000};
    int done = 0;
    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done)
            return;
        nanosleep(&nap, NULL);
    }
}

/* Rank 0: ask (ASK_FILE), wait up to --ask-follow-up s for PLAN_FILE (the runner writes it
 * whole, by a rename). "run": move into the directory its second line names, make stdout and
 * stderr the follow-up's own there, and return its arguments (one a line after that),
 * '\0'-separated, in *len bytes.  NULL (said why) when nothing follows here. */
static char *await_plan(size_t *len)
{
    FILE *f = fopen(ASK_FILE, "w");
    if (!f || fclose(f)) {
        fprintf(stderr, "allpairs: cannot write %s: %s: no follow-up inside this launch\n",
                ASK_FILE, strerror(errno));
        return NULL;
    }
    fprintf(stderr, "allpairs: asked for a follow-up (%s); waiting up to %g s for %s\n",
            ASK_FILE, opt.ask_wait, PLAN_FILE);
    double until = probe_now() + opt.ask_wait;
    const struct timespec nap = {0, 10000000};
    while (!(f = fopen(PLAN_FILE, "r")) && probe_now() < until)
        nanosleep(&nap, NULL);
    if (!f) {
        fprintf(stderr, "allpairs: no plan within %g s: nothing follows inside this launch\n",
                opt.ask_wait);
        return NULL;
    }
    char *text = calloc(1, MAX_PLAN_BYTES + 1);
    size_t got = text ? fread(text, 1, MAX_PLAN_BYTES, f) : 0;
    fclose(f);
    char *save = NULL, *word = text ? strtok_r(text, "\n", &save) : NULL;
    char *dir = word && !strcmp(word, "run") ? strtok_r(NULL, "\n", &save) : NULL;
    if (!dir || got == MAX_PLAN_BYTES) {
        if (!word || strcmp(word, "none"))
            fprintf(stderr, "allpairs: %s is not a plan ('none', or 'run' and a directory)\n",
                    PLAN_FILE);
        free(text);
        return NULL;
    }
    fprintf(stderr, "allpairs: plan read at %.3f s: the follow-up in %s\n",
            wall_clock() - first_began, dir);
    fflush(stderr);
    if (chdir(dir) || !freopen("stdout", "w", stdout) || !freopen("stderr", "w", stderr)) {
        fprintf(stderr, "allpairs: the follow-up's directory %s: %s\n", dir, strerror(errno));
        free(text);
        return NULL;
    }
    *len = 0;
    while ((word = strtok_r(NULL, "\n", &save))) { /* the words, packed '\0'-separated */
        size_t n = strlen(word) + 1;
        memmove(text + *len, word, n);
        *len += n;
    }
    return text;
}

/* After the rounds (--ask-follow-up): the follow-up the runner plans from what they measured
 * (a retest of the links its rule flags), measured in this launch with the arguments its own
 * launch would get, as a job of its own would measure it; its end in DONE_FILE.  A launch
 * fewer: at 64 nodes here MPI_Init alone took 3-3.7 s and the launcher 3-6 s more.  No plan
 * (nothing follows, an older runner, none in time): the job ends as it would have. */
static int follow_up_inside(pair *p, result *results)
{
    size_t len = 0;
    char *blob = rank == 0 ? await_plan(&len) : NULL;
    long long n = rank == 0 && blob ? (long long)len : 0;
    MPI_Request req;
    MPI_Ibcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD, &req);
    wait_idle(&req);
    if (n == 0) {
        free(blob);
        return PROBE_OK;
    }
    if (rank != 0 && !(blob = malloc((size_t)n))) {
        fprintf(stderr, "allpairs: rank %d: out of memory for the follow-up's plan\n", rank);
        MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }
    MPI_Ibcast(blob, (int)n, MPI_CHAR, 0, MPI_COMM_WORLD, &req);
    wait_idle(&req);
    char *args[MAX_PLAN_ARGS + 1] = {"allpairs"};
    int argc = 1;
    for (char *a = blob; a < blob + n && argc < MAX_PLAN_ARGS; a += strlen(a) + 1)
        args[argc++] = a;
    inside = 1;
    inside_began = probe_now();
    int status = PROBE_USAGE;
    schedule s = {.n = nprocs, .ring = nprocs + nprocs % 2, .rounds = nprocs - 1 + nprocs % 2};
    if (!read_options(argc, args) && !(opt.pairs_file && share_pairs(&s)))
        status = measure(&s, p, results);
    free(s.start);
    free(s.pairs);
    free(blob); /* (the options point into it until here) */
    return status;
}

int main(int argc, char **argv)
{
    if (probe_help_requested(argc, argv)) {
        usage();
        return PROBE_OK;
    }
    int provided;
    start_times mine = {wall_clock(), 0.0};
    /* FUNNELED: rank 0's writer thread makes no MPI call, the main thread all of them */
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    mine.init_done = wall_clock();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    probe_init("allpairs");
    probe_set_quiet(rank != 0);
    if (read_options(argc, argv))
        return finalize_or_leave(PROBE_USAGE);
    if (nprocs < 2 || nprocs > MAX_NODES) {
        probe_error("needs 2 to %d MPI ranks (one per node), got %d", MAX_NODES, nprocs);
        return finalize_or_leave(PROBE_USAGE);
    }

    int len = 0;
    MPI_Get_processor_name(my_host, &len);
    if (rank == 0) {
        hosts = calloc((size_t)nprocs, sizeof *hosts);
        if (!hosts) {
            probe_error("out of memory for %d host names", nprocs);
            MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
        }
    }
    tree_gather(my_host, MPI_MAX_PROCESSOR_NAME, hosts);
    for (int i = 0; rank == 0 && i < nprocs; i++)
        hosts[i][MPI_MAX_PROCESSOR_NAME - 1] = '\0';
    double gathered = wall_clock(); /* the names in: before the (small) gather of the times */
    start_times *starts = rank == 0 ? malloc((size_t)nprocs * sizeof *starts) : NULL;
    if (rank == 0 && !starts) {
        probe_error("out of memory for %d start times", nprocs);
        MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }
    tree_gather(&mine, (int)sizeof mine, starts);
    if (rank == 0) {
        say_start(starts, gathered);
        free(starts);
    }

    schedule s = {.n = nprocs, .ring = nprocs + nprocs % 2, .rounds = nprocs - 1 + nprocs % 2};
    if (opt.pairs_file && share_pairs(&s))
        return finalize_or_leave(PROBE_USAGE);
    pair p = {0};
    result *results = rank == 0 ? malloc((size_t)nprocs * sizeof *results) : NULL;
    if (rank == 0 && !results) {
        fprintf(stderr, "allpairs: cannot allocate %d results\n", nprocs);
        MPI_Abort(MPI_COMM_WORLD, PROBE_RUNTIME);
    }
    int status = measure(&s, &p, results);
    if (status == PROBE_OK && opt.ask_wait > 0.0)
        status = follow_up_inside(&p, results);
    free_pair(&p);
    free(results);
    return finalize_or_leave(status);
}
