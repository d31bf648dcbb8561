/*
 * hpl_lu.c - assay's HPL-class probe: only HPL's LU solve, through ScaLAPACK, nothing else.
 *
 * Why: Debian's hpcc runs RandomAccess, FFT, PTRANS, STREAM and DGEMM around its HPL, which
 * made a 300 s HPL budget bound nothing.  This program does what HPL's HPL_pdtest does and
 * only that:
 *   - an N x N matrix A and a right-hand side b, random uniform in [-0.5, 0.5) (HPL's
 *     HPL_pdmatgen range), generated in place on each rank's blocks of a P x Q BLACS grid,
 *     row-major process mapping (HPL.dat's PMAP 0), block size NB both ways;
 *   - MPI_Barrier, then on each rank MPI_Wtime around pdgetrf (LU with partial pivoting)
 *     plus pdgetrs (the two triangular solves); the time is the largest over ranks, as
 *     HPL_ptimer_combine takes it.  HPL factors [A|b] at once and back-solves; the work is
 *     the same;
 *   - HPL's FLOP count 2/3 N^3 + 3/2 N^2 (HPL_pdtest.c), rate = flops / time;
 *   - HPL's residual check: A and b are generated again (the factorisation overwrote A) and
 *       resid = ||A x - b||_oo / (eps * (||A||_oo * ||x||_oo + ||b||_oo) * N)
 *     with eps = 2^-53 (the relative machine precision, LAPACK's dlamch('E')); the run
 *     passes if resid < 16.0 (HPL.dat's threshold).  A failed check prints no measurement.
 *
 * Where it differs from HPL: ScaLAPACK's right-looking pdgetrf with its own panel
 * factorisation and broadcast instead of HPL's tunable PFACT/BCAST/lookahead; a different
 * (counter-based) random generator.  bench/hpl_vs_hpcc.py measures the difference.
 *
 * Threads: across nodes, one MPI rank per core, the BLAS single-threaded
 * (OPENBLAS_NUM_THREADS=1).  On a 1 x 1 grid (one process, the node's cores as BLAS threads:
 * assay's default for one node) the LU is LAPACK's dgetrf + dgetrs on the whole matrix, as
 * Intel's shared-memory LINPACK benchmark runs it: ScaLAPACK's pdgetrf on one process factors
 * its panels unblocked and has no lookahead (0.81 of hpcc's HPL on 2 cores), where a threaded
 * LAPACK getrf (OpenBLAS's is recursive, its update parallel) reached 1.07 of it.
 *
 * Build: mpicc.openmpi -O2 hpl_lu.c -o hpl_lu -lscalapack-openmpi -llapack -lm -ldl   (Debian)
 *        mpicc.mpich   -O2 hpl_lu.c -o hpl_lu -lscalapack-mpich -llapack -lm -ldl
 * Run:   mpirun -np 4 ./hpl_lu --n 8000 --nb 192 --p 2 --q 2
 *
 * Output: one JSON Line (see jsonl.h) from rank 0: compute.hpl in flop/s, with the BLAS that
 *         ran and the kernels it chose (blasinfo.h: blas_lib, blas_version, blas_core, ...).
 * Exit codes: 0 ok, 1 runtime failure (memory, ScaLAPACK info), 2 bad arguments,
 *             3 residual check failed.
 */
/* _GNU_SOURCE (POSIX 2008 and more): blasinfo.h needs dladdr. */
#define _GNU_SOURCE

#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blasinfo.h"
#include "jsonl.h"
#include "probe.h"

#define THRESHOLD 16.0
#define MAX_N 10000000LL
#define MAX_NB 4096LL
#define DEFAULT_SEED 42LL

/* ScaLAPACK, PBLAS and BLACS as Debian's libscalapack-*.so export them (LP64 ints). */
extern void Cblacs_pinfo(int *me, int *nprocs);
extern void Cblacs_get(int ctxt, int what, int *val);
extern void Cblacs_gridinit(int *ctxt, const char *order, int nprow, int npcol);
extern void Cblacs_gridinfo(int ctxt, int *nprow, int *npcol, int *myrow, int *mycol);
extern void Cblacs_gridexit(int ctxt);
extern int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc,
                   const int *nprocs);
extern void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb,
                      const int *irsrc, const int *icsrc, const int *ictxt, const int *lld,
                      int *info);
extern void pdgetrf_(const int *m, const int *n, double *a, const int *ia, const int *ja,
                     const int *desca, int *ipiv, int *info);
extern void pdgetrs_(const char *trans, const int *n, const int *nrhs, const double *a,
                     const int *ia, const int *ja, const int *desca, const int *ipiv, double *b,
                     const int *ib, const int *jb, const int *descb, int *info);
/* LAPACK, for the 1 x 1 grid (see Threads above). */
extern void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
extern void dgetrs_(const char *trans, const int *n, const int *nrhs, const double *a,
                    const int *lda, const int *ipiv, double *b, const int *ldb, int *info);
extern void pdgemv_(const char *trans, const int *m, const int *n, const double *alpha,
                    const double *a, const int *ia, const int *ja, const int *desca,
                    const double *x, const int *ix, const int *jx, const int *descx,
                    const int *incx, const double *beta, double *y, const int *iy,
                    const int *jy, const int *descy, const int *incy);
extern double pdlange_(const char *norm, const int *m, const int *n, const double *a,
                       const int *ia, const int *ja, const int *desca, double *work);

typedef struct {
    long long n, nb, p, q, seed;
    double budget; /* seconds the solve may take; 0: run N as given */
    int corrupt; /* perturb x after the solve: proves that the residual check can fail */
} options;

static int rank_ = 0;

static void die(int code, const char *msg)
{
    if (rank_ == 0)
        fprintf(stderr, "hpl_lu: %s\n", msg);
    MPI_Abort(MPI_COMM_WORLD, code);
    exit(code); /* not reached */
}

static void usage_die(const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg,
             "%s\nusage: hpl_lu --n N --nb NB --p P --q Q [--budget S] [--seed S] [--corrupt-for-test]",
             what);
    die(2, msg);
}

static options parse_options(int argc, char **argv)
{
    options o = {0, 0, 0, 0, DEFAULT_SEED, 0.0, 0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long long *target = NULL, lo = 1, hi = MAX_N;
        if (!strcmp(a, "--corrupt-for-test")) {
            o.corrupt = 1;
            continue;
        }
        if (!strcmp(a, "--budget")) {
            char *end = NULL;
            o.budget = i + 1 < argc ? strtod(argv[++i], &end) : 0;
            if (!end || *end || !(o.budget > 0) || !isfinite(o.budget))
                usage_die("--budget needs a positive number of seconds");
            continue;
        }
        if (!strcmp(a, "--n"))
            target = &o.n;
        else if (!strcmp(a, "--nb"))
            target = &o.nb, hi = MAX_NB;
        else if (!strcmp(a, "--p"))
            target = &o.p, hi = 1 << 20;
        else if (!strcmp(a, "--q"))
            target = &o.q, hi = 1 << 20;
        else if (!strcmp(a, "--seed"))
            target = &o.seed, lo = 0, hi = INT64_MAX;
        else {
            char msg[160];
            snprintf(msg, sizeof msg, "unknown option %.80s", a);
            usage_die(msg);
        }
        if (i + 1 >= argc || probe_parse_int(argv[++i], lo, hi, target) != 0) {
            char msg[160];
            snprintf(msg, sizeof msg, "%s needs an integer in [%lld, %lld]", a, lo, hi);
            usage_die(msg);
        }
    }
    if (!o.n || !o.nb || !o.p || !o.q)
        usage_die("--n, --nb, --p and --q are required");
    return o;
}

/* splitmix64: a counter-based generator, so any rank computes any element on its own and
 * the residual check can regenerate A and b instead of keeping a copy of them. */
static inline uint64_t mix64(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* Element (i, j) of [A | b], j == n being b: uniform in [-0.5, 0.5). */
static inline double element(uint64_t seed, long long n, long long i, long long j)
{
    uint64_t k = mix64(seed ^ mix64((uint64_t)(i * (n + 1) + j)));
    return (double)(k >> 11) * 0x1.0p-53 - 0.5;
}

/* Global index of local index l in a block-cyclic layout (block nb, source process 0). */
static inline long long global_index(long long l, long long nb, int me, int nprocs)
{
    return ((l / nb) * nprocs + me) * nb + l % nb;
}

/* Fill this rank's blocks of the m_loc x n_loc local array (leading dimension lld) with the
 * columns [col0, col0 + ncols) of [A | b]: col0 = 0 for A, n for b. */
static void generate(double *a, int m_loc, int n_loc, int lld, const options *o, int myrow,
                     int mycol, int nprow, int npcol, long long col0)
{
    for (int lj = 0; lj < n_loc; lj++) {
        long long gj = col0 + global_index(lj, o->nb, mycol, npcol);
        double *col = a + (size_t)lj * (size_t)lld;
        for (int li = 0; li < m_loc; li++)
            col[li] = element((uint64_t)o->seed, o->n, global_index(li, o->nb, myrow, nprow), gj);
    }
}

static void *alloc_or_die(size_t count, size_t size, const char *what)
{
    void *p = calloc(count ? count : 1, size);
    if (!p) {
        fprintf(stderr, "hpl_lu: rank %d: out of memory for %s (%zu bytes)\n", rank_, what,
                count * size);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    return p;
}

typedef struct {
    int ctxt, nprow, npcol, myrow, mycol;
} grid;

typedef struct {
    double time_s, factor_s; /* largest over ranks */
    double resid, norm_a, norm_x, norm_b;
    int checked, passed;
} outcome;

static double hpl_flops(double n)
{
    return 2.0 / 3.0 * n * n * n + 1.5 * n * n;
}

/* Generate [A | b] of order n, time LU + solve, and (when `check`) HPL's residual test. */
static outcome solve(const options *o, int n, const grid *g, int check, int corrupt)
{
    const int nb = (int)o->nb, zero = 0, one = 1;
    int m_loc = numroc_(&n, &nb, &g->myrow, &zero, &g->nprow);
    int n_loc = numroc_(&n, &nb, &g->mycol, &zero, &g->npcol);
    int b_cols = numroc_(&one, &nb, &g->mycol, &zero, &g->npcol); /* 1 on process column 0 */
    int lld = m_loc > 1 ? m_loc : 1, info = 0;
    int desc_a[9], desc_b[9];
    descinit_(desc_a, &n, &n, &nb, &nb, &zero, &zero, &g->ctxt, &lld, &info);
    if (info == 0)
        descinit_(desc_b, &n, &one, &nb, &nb, &zero, &zero, &g->ctxt, &lld, &info);
    if (info != 0)
        die(1, "descinit failed");
    options gen = *o;
    gen.n = n;

    double *a = alloc_or_die((size_t)lld * (size_t)n_loc, sizeof *a, "A");
    double *x = alloc_or_die((size_t)lld * (size_t)b_cols, sizeof *x, "b");
    int *ipiv = alloc_or_die((size_t)m_loc + (size_t)nb, sizeof *ipiv, "ipiv");
    generate(a, m_loc, n_loc, lld, &gen, g->myrow, g->mycol, g->nprow, g->npcol, 0);
    generate(x, m_loc, b_cols, lld, &gen, g->myrow, g->mycol, g->nprow, g->npcol, n);

    /* One process holds the whole matrix (column-major, leading dimension lld = n): LAPACK. */
    const int whole = g->nprow * g->npcol == 1;
    MPI_Barrier(MPI_COMM_WORLD);
    double t0 = MPI_Wtime();
    if (whole)
        dgetrf_(&n, &n, a, &lld, ipiv, &info);
    else
        pdgetrf_(&n, &n, a, &one, &one, desc_a, ipiv, &info);
    double t1 = MPI_Wtime();
    int info_solve = 0;
    if (info == 0 && whole)
        dgetrs_("N", &n, &one, a, &lld, ipiv, x, &lld, &info_solve);
    else if (info == 0)
        pdgetrs_("N", &n, &one, a, &one, &one, desc_a, ipiv, x, &one, &one, desc_b, &info_solve);
    double t2 = MPI_Wtime();
    double local[2] = {t2 - t0, t1 - t0}, times[2];
    MPI_Allreduce(local, times, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (info != 0 || info_solve != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "%s info %d, %s info %d (a singular matrix?)",
                 whole ? "dgetrf" : "pdgetrf", info, whole ? "dgetrs" : "pdgetrs", info_solve);
        die(1, msg);
    }
    outcome out = {times[0], times[1], 0, 0, 0, 0, 0, 0};
    if (check) {
        if (corrupt && b_cols > 0 && m_loc > 0)
            x[0] += 1.0;
        /* The residual, HPL's way: regenerate A and b, r = b - A x. */
        double *r = alloc_or_die((size_t)lld * (size_t)b_cols, sizeof *r, "r");
        double *work = alloc_or_die((size_t)m_loc + (size_t)nb, sizeof *work, "work");
        generate(a, m_loc, n_loc, lld, &gen, g->myrow, g->mycol, g->nprow, g->npcol, 0);
        generate(r, m_loc, b_cols, lld, &gen, g->myrow, g->mycol, g->nprow, g->npcol, n);
        const double minus_one = -1.0, plus_one = 1.0;
        out.norm_b = pdlange_("I", &n, &one, r, &one, &one, desc_b, work);
        pdgemv_("N", &n, &n, &minus_one, a, &one, &one, desc_a, x, &one, &one, desc_b, &one,
                &plus_one, r, &one, &one, desc_b, &one);
        out.norm_a = pdlange_("I", &n, &n, a, &one, &one, desc_a, work);
        out.norm_x = pdlange_("I", &n, &one, x, &one, &one, desc_b, work);
        double norm_r = pdlange_("I", &n, &one, r, &one, &one, desc_b, work);
        const double eps = DBL_EPSILON / 2; /* 2^-53 */
        out.resid = norm_r / (eps * (out.norm_a * out.norm_x + out.norm_b) * (double)n);
        out.checked = 1;
        out.passed = out.resid < THRESHOLD && isfinite(out.resid);
        free(work);
        free(r);
    }
    free(ipiv);
    free(x);
    free(a);
    return out;
}

/* The order the budget allows at the pilot's rate: 2/3 N^3 / rate = budget, rounded down to
 * a multiple of NB, never above the planned N nor below the pilot's own order. */
static int budget_order(const options *o, int n_pilot, double pilot_s)
{
    double rate = hpl_flops(n_pilot) / pilot_s;
    double n_time = cbrt(1.5 * o->budget * rate);
    long long n = (long long)(n_time / (double)o->nb) * o->nb;
    if (n > o->n)
        n = o->n;
    if (n < n_pilot)
        n = n_pilot;
    return (int)n;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int nprocs = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm_size(MPI_COMM_WORLD, &nprocs);
    options o = parse_options(argc, argv);
    if (o.p * o.q != nprocs) {
        char msg[160];
        snprintf(msg, sizeof msg, "the grid %lld x %lld needs %lld ranks, started with %d", o.p,
                 o.q, o.p * o.q, nprocs);
        usage_die(msg);
    }
    if (o.n > INT32_MAX / 2 || o.nb > o.n)
        usage_die("--nb must not exceed --n");

    grid g = {0, 0, 0, 0, 0};
    Cblacs_get(-1, 0, &g.ctxt);
    Cblacs_gridinit(&g.ctxt, "Row", (int)o.p, (int)o.q);
    Cblacs_gridinfo(g.ctxt, &g.nprow, &g.npcol, &g.myrow, &g.mycol);

    /* The pilot: an order-N/4 solve (1/64 of the work) whose rate, lower than the full run's
     * (HPL's efficiency grows with N), bounds N so that the solve fits the budget on this
     * node as loaded now. The planned N already fits memory and the budget at an assumed
     * rate; the pilot only ever lowers it. */
    int n = (int)o.n, n_pilot = 0;
    double pilot_s = 0;
    if (o.budget > 0) {
        n_pilot = (int)((o.n / 4) / o.nb * o.nb);
        if (n_pilot < o.nb)
            n_pilot = (int)o.nb;
        pilot_s = solve(&o, n_pilot, &g, 0, 0).time_s;
        n = budget_order(&o, n_pilot, pilot_s);
    }
    outcome res = solve(&o, n, &g, 1, o.corrupt);

    /* Every rank holds the norms (pdlange broadcasts them); rank 0 speaks. */
    if (rank_ == 0) {
        double flops = hpl_flops(n);
        if (!res.passed) {
            fprintf(stderr,
                    "hpl_lu: residual check FAILED: ||Ax-b||_oo/(eps*(||A||_oo*||x||_oo+"
                    "||b||_oo)*N) = %.6g >= %.1f (N=%d NB=%lld P=%d Q=%d)\n",
                    res.resid, THRESHOLD, n, o.nb, g.nprow, g.npcol);
        } else {
            jl_begin("compute.hpl", flops / res.time_s);
            jl_param_long("N", n);
            jl_param_long("NB", o.nb);
            jl_param_long("P", g.nprow);
            jl_param_long("Q", g.npcol);
            jl_param_str("pmap", "row-major");
            jl_param_double("time_s", res.time_s);
            jl_param_double("factor_s", res.factor_s);
            jl_param_double("flops", flops);
            jl_param_double("residual", res.resid);
            jl_param_double("threshold", THRESHOLD);
            jl_param_long("residual_passed", 1);
            jl_param_double("norm_a", res.norm_a);
            jl_param_double("norm_x", res.norm_x);
            jl_param_double("norm_b", res.norm_b);
            jl_param_long("n_planned", o.n);
            if (o.budget > 0) {
                jl_param_double("budget_s", o.budget);
                jl_param_long("pilot_n", n_pilot);
                jl_param_double("pilot_rate", hpl_flops(n_pilot) / pilot_s);
            }
            blas_info blas;
            blas_info_read(&blas); /* the BLAS under LAPACK/ScaLAPACK, and its kernels */
            blas_info_params(&blas);
            jl_param_str("method", g.nprow * g.npcol == 1
                                       ? "LAPACK dgetrf+dgetrs (one process, threaded BLAS)"
                                       : "ScaLAPACK pdgetrf+pdgetrs");
            jl_end(NULL, 0);
        }
    }
    Cblacs_gridexit(g.ctxt);
    MPI_Finalize();
    return res.passed ? 0 : 3;
}
