/*
 * ncclbench.cu - NCCL collectives over the local GPUs, measured as nccl-tests does.
 *
 * One process, one communicator per selected GPU (ncclCommInitAll), each collective issued
 * for all GPUs inside ncclGroupStart/ncclGroupEnd (nccl-tests' -g mode with one thread).
 * Per operation and size (float, sum, root 0, out-of-place):
 *   - --warmup untimed iterations, then --iters timed ones: the host clock runs from before
 *     the first launch to after every stream has finished; time = elapsed / iters (nccl-tests'
 *     default, not CUDA events);
 *   - size is nccl-tests' "size" column: the bytes of the largest buffer of one rank (the
 *     whole gathered output for all_gather, the whole input for reduce_scatter);
 *   - algbw = size / time; busbw = algbw x factor, the factors of nccl-tests
 *     doc/PERFORMANCE.md: all_reduce 2(n-1)/n, all_gather and reduce_scatter (n-1)/n,
 *     broadcast 1;
 *   - check: rank r sends the value r + 1 everywhere, so every output element is exactly
 *     known (sum n(n+1)/2, gathered chunk r = r + 1, broadcast 1); the elements that differ
 *     after the timed iterations are counted, and any makes the probe exit 3.
 * Output: gpu.nccl.<op>.algbw, .busbw (B/s) and .time (s), the names the nccl-tests parser
 * gives, so assay's figures and imported nccl-tests output land in the same tables.
 */
#include "cuda_probe.h"

#include <nccl.h>

#include <chrono>

#define NCCL_CHECK(call)                                                                      \
    do {                                                                                      \
        ncclResult_t r_ = (call);                                                             \
        if (r_ != ncclSuccess)                                                                \
            probe_die_now(PROBE_RUNTIME, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                          ncclGetErrorString(r_));                                            \
    } while (0)

static const char *const OPS[] = {"all_reduce", "all_gather", "reduce_scatter", "broadcast",
                                  nullptr};

struct Options {
    long long min_bytes = 8, max_bytes = 1LL << 30;
    long long iters = 20, warmup = 5;
    std::vector<std::string> ops{OPS, OPS + 4};
    std::vector<int> devices;
};

static void usage(void)
{
    fputs("usage: ncclbench [options]\n"
          "  --min-bytes N   smallest size (default 8; suffix K, M or G allowed)\n"
          "  --max-bytes N   largest size, doubling from the smallest (default 1G)\n"
          "  --iters N       timed iterations per size (default 20)\n"
          "  --warmup N      untimed iterations per size (default 5)\n"
          "  --ops L         comma list of all_reduce,all_gather,reduce_scatter,broadcast\n"
          "  --gpus L        comma list of device indices (default every visible GPU)\n"
          "Prints JSON Lines: gpu.nccl.<op>.algbw, .busbw (B/s), .time (s) per size.\n"
          "Exit: 0 ok, 1 runtime failure, 2 bad arguments, 3 wrong results.\n",
          stdout);
}

/* probe.h's table; the lists and the range are checked after it, all before a GPU is looked
 * for. */
static Options parse_options(int argc, char **argv)
{
    Options o;
    const char *ops = nullptr, *gpus = nullptr;
    const probe_option opts[] = {
        probe_opt_size("--min-bytes", &o.min_bytes, 4, 1LL << 36),
        probe_opt_size("--max-bytes", &o.max_bytes, 4, 1LL << 36),
        probe_opt_int("--iters", &o.iters, 1, 1000000),
        probe_opt_int("--warmup", &o.warmup, 0, 1000000),
        probe_opt_text("--ops", &ops),
        probe_opt_text("--gpus", &gpus),
        PROBE_END,
    };
    probe_options_or_exit(argc, argv, opts, usage);
    if (ops) {
        o.ops.clear();
        for (long long k : cp_list(probe_opt_choice("--ops", nullptr, OPS), ops))
            o.ops.push_back(OPS[k]);
    }
    if (o.min_bytes > o.max_bytes)
        probe_die(PROBE_USAGE, "--min-bytes %lld is above --max-bytes %lld", o.min_bytes,
                  o.max_bytes);
    o.devices = cp_select_devices(gpus);
    return o;
}

__global__ void set_k(float *x, float v, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = v;
}

/* Elements of x[0..n) not equal to the expected value; for all_gather chunk c holds c + 1. */
__global__ void wrong_k(const float *x, size_t n, size_t chunk, float fixed,
                        unsigned long long *bad)
{
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        float expect = chunk ? (float)(i / chunk + 1) : fixed;
        if (x[i] != expect)
            mine++;
    }
    if (mine)
        atomicAdd(bad, mine);
}

struct Rank {
    int device;
    ncclComm_t comm;
    cudaStream_t stream;
    float *send, *recv;
    unsigned long long *bad;
};

/* Elements per rank in the send and receive buffers for nccl-tests' "size" of one op. */
static void counts(const std::string &op, size_t size_elems, int n, size_t *send, size_t *recv)
{
    if (op == "all_gather") {
        *send = size_elems / n;
        *recv = *send * n;
    } else if (op == "reduce_scatter") {
        *recv = size_elems / n;
        *send = *recv * n;
    } else {
        *send = *recv = size_elems;
    }
}

static double bus_factor(const std::string &op, int n)
{
    if (op == "all_reduce")
        return 2.0 * (n - 1) / n;
    if (op == "broadcast")
        return 1.0;
    return (double)(n - 1) / n;
}

static void launch(const std::string &op, std::vector<Rank> &ranks, size_t send, size_t recv)
{
    NCCL_CHECK(ncclGroupStart());
    for (Rank &r : ranks) {
        if (op == "all_reduce")
            NCCL_CHECK(ncclAllReduce(r.send, r.recv, send, ncclFloat, ncclSum, r.comm, r.stream));
        else if (op == "all_gather")
            NCCL_CHECK(ncclAllGather(r.send, r.recv, send, ncclFloat, r.comm, r.stream));
        else if (op == "reduce_scatter")
            NCCL_CHECK(
                ncclReduceScatter(r.send, r.recv, recv, ncclFloat, ncclSum, r.comm, r.stream));
        else
            NCCL_CHECK(ncclBroadcast(r.send, r.recv, send, ncclFloat, 0, r.comm, r.stream));
    }
    NCCL_CHECK(ncclGroupEnd());
}

static void sync_all(std::vector<Rank> &ranks)
{
    for (Rank &r : ranks) {
        CUDA_CHECK(cudaSetDevice(r.device));
        CUDA_CHECK(cudaStreamSynchronize(r.stream));
    }
}

int main(int argc, char **argv)
{
    probe_init("ncclbench");
    Options o = parse_options(argc, argv);
    const int n = (int)o.devices.size();
    std::vector<ncclComm_t> comms(n);
    NCCL_CHECK(ncclCommInitAll(comms.data(), n, o.devices.data()));
    const size_t max_elems = (size_t)o.max_bytes / sizeof(float);
    std::vector<Rank> ranks(n);
    for (int i = 0; i < n; i++) {
        Rank &r = ranks[i];
        r.device = o.devices[i];
        r.comm = comms[i];
        CUDA_CHECK(cudaSetDevice(r.device));
        CUDA_CHECK(cudaStreamCreateWithFlags(&r.stream, cudaStreamNonBlocking));
        CUDA_CHECK(cudaMalloc(&r.send, max_elems * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&r.recv, max_elems * sizeof(float)));
        CUDA_CHECK(cudaMalloc(&r.bad, sizeof *r.bad));
    }
    int version = 0;
    NCCL_CHECK(ncclGetVersion(&version));
    unsigned long long total_bad = 0;
    for (const std::string &op : o.ops) {
        for (long long bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
            size_t send = 0, recv = 0;
            counts(op, (size_t)bytes / sizeof(float), n, &send, &recv);
            if (send == 0 || recv == 0)
                continue; /* smaller than one element per rank: nccl-tests skips it too */
            const size_t size_elems = std::max(send, recv);
            for (int i = 0; i < n; i++) {
                CUDA_CHECK(cudaSetDevice(ranks[i].device));
                set_k<<<256, 256, 0, ranks[i].stream>>>(ranks[i].send, (float)(i + 1), send);
                CUDA_CHECK(cudaMemsetAsync(ranks[i].bad, 0, sizeof(unsigned long long),
                                           ranks[i].stream));
            }
            for (long long w = 0; w < o.warmup; w++)
                launch(op, ranks, send, recv);
            sync_all(ranks);
            auto t0 = std::chrono::steady_clock::now();
            for (long long it = 0; it < o.iters; it++)
                launch(op, ranks, send, recv);
            sync_all(ranks);
            double seconds =
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() /
                o.iters;
            unsigned long long bad = 0;
            const float sum = (float)n * (n + 1) / 2;
            for (Rank &r : ranks) {
                CUDA_CHECK(cudaSetDevice(r.device));
                size_t chunk = op == "all_gather" ? send : 0;
                float fixed = op == "broadcast" ? 1.0f : sum;
                wrong_k<<<256, 256, 0, r.stream>>>(r.recv, recv, chunk, fixed, r.bad);
                unsigned long long b = 0;
                CUDA_CHECK(cudaMemcpyAsync(&b, r.bad, sizeof b, cudaMemcpyDeviceToHost, r.stream));
                CUDA_CHECK(cudaStreamSynchronize(r.stream));
                bad += b;
            }
            total_bad += bad;
            const double size = (double)size_elems * sizeof(float);
            const double algbw = size / seconds;
            const std::string prefix = "gpu.nccl." + op;
            struct {
                std::string metric;
                double value;
            } points[] = {{prefix + ".algbw", algbw},
                          {prefix + ".busbw", algbw * bus_factor(op, n)},
                          {prefix + ".time", seconds}};
            for (auto &p : points) {
                if (bad)
                    break; /* the timing of a wrong result is not a result */
                jl_begin(p.metric.c_str(), p.value);
                jl_param_str("tool", "assay");
                jl_param_long("size", (long long)size);
                jl_param_long("count", (long long)size_elems);
                jl_param_str("type", "float");
                jl_param_str("redop",
                             op == "all_reduce" || op == "reduce_scatter" ? "sum" : "none");
                jl_param_long("root", op == "broadcast" ? 0 : -1);
                jl_param_str("buffers", "out-of-place");
                jl_param_long("ranks", n);
                jl_param_long("iters", o.iters);
                jl_param_long("nccl_version", version);
                jl_end(nullptr, 0);
            }
            if (bad)
                probe_error("%s at %.0f bytes: %llu wrong elements", op.c_str(), size, bad);
        }
    }
    for (Rank &r : ranks) {
        CUDA_CHECK(cudaSetDevice(r.device));
        CUDA_CHECK(cudaFree(r.send));
        CUDA_CHECK(cudaFree(r.recv));
        CUDA_CHECK(cudaFree(r.bad));
        CUDA_CHECK(cudaStreamDestroy(r.stream));
        ncclCommDestroy(r.comm);
    }
    return total_bad ? PROBE_INVALID : PROBE_OK;
}
