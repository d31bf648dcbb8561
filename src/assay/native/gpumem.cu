/*
 * gpumem.cu - GPU memory bandwidth (STREAM kernels on device memory) and transfers.
 *
 * Device memory, per selected GPU, by STREAM's rules (McCalpin's stream.c):
 *   - three double arrays a, b, c of --elements each; a = 1, b = 2, c = 0, then a = 2a;
 *   - --ntimes passes of Copy (c = a), Scale (b = q c), Add (c = a + b), Triad (a = b + q c),
 *     q = 3, each kernel timed alone with CUDA events;
 *   - bytes counted as STREAM does: Copy and Scale 2 arrays, Add and Triad 3 (8 bytes each);
 *   - the first pass is dropped, the rate reported is the best (minimum time), the stats are
 *     over the rates of the other passes;
 *   - validation: after the passes, every element of a, b, c is compared on the device with
 *     the value the same sequence gives on the host (relative 1e-13, as stream.c for double);
 *     any mismatch exits 3;
 *   - the theoretical bandwidth, where the driver reports memory clock and bus width, is
 *     2 x clock x width / 8 (double data rate) and each rate's fraction of it is given.
 * Transfers (cudaMemcpy, timed with CUDA events, --reps copies after one untimed):
 *   - host->device and device->host, from pinned (cudaMallocHost) and pageable (malloc) host
 *     memory, at each --sizes; the value is the median rate (a pageable copy is sometimes much
 *     slower once; the median is the typical copy), stats over all reps;
 *   - device->device between every ordered pair of selected GPUs (an nvbandwidth-style
 *     matrix), with peer access enabled where the pair supports it.
 */
#include "cuda_probe.h"

#include <chrono>

struct Options {
    long long elements = 0; /* 0: auto */
    long long ntimes = 20;
    double mem_fraction = 0.6;
    std::vector<long long> sizes{1LL << 20, 1LL << 26, 1LL << 30};
    long long reps = 10;
    std::vector<int> devices;
    bool stream = true, transfers = true, peers = true;
};

static void usage(void)
{
    fputs("usage: gpumem [options]\n"
          "  --elements N      doubles per array (default: 3 arrays in 60% of free memory,\n"
          "                    at most 2^28 = 2 GiB each)\n"
          "  --ntimes N        STREAM passes, the first not counted (default 20)\n"
          "  --sizes L         transfer sizes in bytes (suffix K, M or G allowed), comma list\n"
          "                    (default 1M,64M,1G)\n"
          "  --reps N          timed copies per transfer size (default 10)\n"
          "  --gpus L          comma list of device indices (default every visible GPU)\n"
          "  --only WHAT       stream, transfers or peers (default all three)\n"
          "Prints JSON Lines: gpu.bandwidth (kernel copy/scale/add/triad), gpu.h2d, gpu.d2h\n"
          "(memory pinned/pageable, size), gpu.d2d (src, dst), all in B/s.\n"
          "Exit: 0 ok, 1 runtime failure, 2 bad arguments, 3 validation failed.\n",
          stdout);
}

/* probe.h's table; the lists are read after it, all before a GPU is looked for. */
static Options parse_options(int argc, char **argv)
{
    Options o;
    static const char *const parts[] = {"stream", "transfers", "peers", nullptr};
    const char *sizes = nullptr, *gpus = nullptr;
    int only = -1;
    const probe_option opts[] = {
        probe_opt_int("--elements", &o.elements, 1024, 1LL << 34),
        probe_opt_int("--ntimes", &o.ntimes, 2, 100000),
        probe_opt_text("--sizes", &sizes),
        probe_opt_int("--reps", &o.reps, 1, 100000),
        probe_opt_text("--gpus", &gpus),
        probe_opt_choice("--only", &only, parts),
        PROBE_END,
    };
    probe_options_or_exit(argc, argv, opts, usage);
    if (sizes)
        o.sizes = cp_list(probe_opt_size("--sizes", nullptr, 1, 1LL << 36), sizes);
    if (only >= 0) {
        o.stream = only == 0;
        o.transfers = only == 1;
        o.peers = only == 2;
    }
    o.devices = cp_select_devices(gpus);
    return o;
}

/* ---------------- STREAM on the device ---------------- */

__global__ void copy_k(double *c, const double *a, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c[i] = a[i];
}
__global__ void scale_k(double *b, const double *c, double q, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        b[i] = q * c[i];
}
__global__ void add_k(double *c, const double *a, const double *b, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        c[i] = a[i] + b[i];
}
__global__ void triad_k(double *a, const double *b, const double *c, double q, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        a[i] = b[i] + q * c[i];
}
__global__ void set_k(double *x, double v, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        x[i] = v;
}
__global__ void check_k(const double *x, double expect, size_t n, unsigned long long *bad)
{
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        if (!(fabs(x[i] - expect) <= 1e-13 * fabs(expect)))
            mine++;
    if (mine)
        atomicAdd(bad, mine);
}

static double theoretical_bandwidth(int device)
{
    int khz = 0, bits = 0;
    if (cudaDeviceGetAttribute(&khz, cudaDevAttrMemoryClockRate, device) != cudaSuccess ||
        cudaDeviceGetAttribute(&bits, cudaDevAttrGlobalMemoryBusWidth, device) != cudaSuccess ||
        khz <= 0 || bits <= 0) {
        cudaGetLastError();
        return 0;
    }
    return 2.0 * khz * 1e3 * bits / 8.0;
}

static bool stream(const Options &o, int device, const char *name)
{
    CUDA_CHECK(cudaSetDevice(device));
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t n = (size_t)o.elements;
    if (!n)
        n = std::min<size_t>(1ull << 28, (size_t)(o.mem_fraction * free_b) / (3 * sizeof(double)));
    if (3 * n * sizeof(double) > free_b)
        probe_die_now(PROBE_RUNTIME, "GPU %d: 3 arrays of %zu doubles need %.2f GiB, %.2f GiB free",
                      device, n, 3.0 * n * 8 / 1073741824.0, free_b / 1073741824.0);
    double *a, *b, *c;
    unsigned long long *bad;
    CUDA_CHECK(cudaMalloc(&a, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&b, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&c, n * sizeof(double)));
    CUDA_CHECK(cudaMalloc(&bad, sizeof *bad));
    CUDA_CHECK(cudaMemset(bad, 0, sizeof *bad));
    int sms = 0;
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    const int threads = 256, blocks = sms * 8; /* grid-stride: enough blocks to fill every SM */
    set_k<<<blocks, threads>>>(a, 1.0, n);
    set_k<<<blocks, threads>>>(b, 2.0, n);
    set_k<<<blocks, threads>>>(c, 0.0, n);
    scale_k<<<blocks, threads>>>(a, a, 2.0, n); /* stream.c: a = 2a before the timed passes */
    CUDA_CHECK(cudaGetLastError());
    CUDA_CHECK(cudaDeviceSynchronize());

    const double q = 3.0;
    const char *names[4] = {"copy", "scale", "add", "triad"};
    const double arrays[4] = {2, 2, 3, 3};
    std::vector<double> seconds[4];
    cudaEvent_t ev[5];
    for (auto &e : ev)
        CUDA_CHECK(cudaEventCreate(&e));
    for (int k = 0; k < o.ntimes; k++) {
        CUDA_CHECK(cudaEventRecord(ev[0]));
        copy_k<<<blocks, threads>>>(c, a, n);
        CUDA_CHECK(cudaEventRecord(ev[1]));
        scale_k<<<blocks, threads>>>(b, c, q, n);
        CUDA_CHECK(cudaEventRecord(ev[2]));
        add_k<<<blocks, threads>>>(c, a, b, n);
        CUDA_CHECK(cudaEventRecord(ev[3]));
        triad_k<<<blocks, threads>>>(a, b, c, q, n);
        CUDA_CHECK(cudaEventRecord(ev[4]));
        CUDA_CHECK(cudaEventSynchronize(ev[4]));
        CUDA_CHECK(cudaGetLastError());
        for (int j = 0; j < 4; j++) {
            float ms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&ms, ev[j], ev[j + 1]));
            if (k > 0) /* STREAM drops the first pass */
                seconds[j].push_back(ms / 1e3);
        }
    }
    /* The values stream.c's checkSTREAMresults expects after ntimes passes. */
    double ea = 2.0, eb = 2.0, ec = 0.0;
    for (int k = 0; k < o.ntimes; k++) {
        ec = ea;
        eb = q * ec;
        ec = ea + eb;
        ea = eb + q * ec;
    }
    check_k<<<blocks, threads>>>(a, ea, n, bad);
    check_k<<<blocks, threads>>>(b, eb, n, bad);
    check_k<<<blocks, threads>>>(c, ec, n, bad);
    unsigned long long nbad = 0;
    CUDA_CHECK(cudaMemcpy(&nbad, bad, sizeof nbad, cudaMemcpyDeviceToHost));
    const double peak = theoretical_bandwidth(device);
    for (int j = 0; j < 4; j++) {
        const double bytes = arrays[j] * sizeof(double) * (double)n;
        std::vector<double> rates;
        for (double s : seconds[j])
            rates.push_back(bytes / s);
        jl_stats s = cp_stats(rates);
        jl_begin("gpu.bandwidth", s.max);
        jl_param_str("kernel", names[j]);
        jl_param_long("gpu", device);
        jl_param_str("name", name);
        jl_param_long("elements", (long long)n);
        jl_param_long("bytes_per_pass", (long long)bytes);
        jl_param_long("ntimes", o.ntimes);
        if (peak > 0) {
            jl_param_double("peak_bytes_per_s", peak);
            jl_param_double("peak_fraction", s.max / peak);
        }
        jl_param_str("validated", nbad ? "no" : "yes");
        jl_end(&s, JL_SUMMARY);
    }
    for (auto &e : ev)
        CUDA_CHECK(cudaEventDestroy(e));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    CUDA_CHECK(cudaFree(bad));
    if (nbad)
        probe_error("GPU %d: STREAM validation failed: %llu elements differ from the expected "
                    "values",
                    device, nbad);
    return nbad == 0;
}

/* ---------------- transfers ---------------- */

/* Median and stats of bytes / time over reps copies, after one untimed copy. */
template <typename F> static jl_stats timed_copies(long long reps, double bytes, F copy)
{
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    copy();
    CUDA_CHECK(cudaDeviceSynchronize());
    std::vector<double> rates;
    for (long long r = 0; r < reps; r++) {
        CUDA_CHECK(cudaEventRecord(e0));
        copy();
        CUDA_CHECK(cudaEventRecord(e1));
        CUDA_CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
        rates.push_back(bytes / (ms / 1e3));
    }
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    return cp_stats(rates);
}

static void transfers(const Options &o, int device, const char *name)
{
    CUDA_CHECK(cudaSetDevice(device));
    for (long long size : o.sizes) {
        void *dev = nullptr, *pinned = nullptr;
        CUDA_CHECK(cudaMalloc(&dev, (size_t)size));
        CUDA_CHECK(cudaMallocHost(&pinned, (size_t)size));
        void *pageable = malloc((size_t)size);
        if (!pageable)
            probe_die_now(PROBE_RUNTIME, "out of host memory for a %lld-byte pageable buffer",
                          size);
        memset(pageable, 1, (size_t)size); /* touch every page: no first-touch in the timing */
        memset(pinned, 1, (size_t)size);
        struct {
            const char *memory;
            void *host;
        } kinds[] = {{"pinned", pinned}, {"pageable", pageable}};
        for (auto &k : kinds) {
            struct {
                const char *metric;
                void *to;
                const void *from;
                cudaMemcpyKind kind;
            } ways[] = {{"gpu.h2d", dev, k.host, cudaMemcpyHostToDevice},
                        {"gpu.d2h", k.host, dev, cudaMemcpyDeviceToHost}};
            for (auto &w : ways) {
                jl_stats st = timed_copies(o.reps, (double)size, [&] {
                    CUDA_CHECK(cudaMemcpy(w.to, w.from, (size_t)size, w.kind));
                });
                jl_begin(w.metric, st.median);
                jl_param_long("gpu", device);
                jl_param_str("name", name);
                jl_param_str("memory", k.memory);
                jl_param_long("size", size);
                jl_end(&st, JL_SUMMARY);
            }
        }
        free(pageable);
        CUDA_CHECK(cudaFreeHost(pinned));
        CUDA_CHECK(cudaFree(dev));
    }
}

static void peers(const Options &o)
{
    long long size = *std::max_element(o.sizes.begin(), o.sizes.end());
    for (int src : o.devices) {
        for (int dst : o.devices) {
            if (src == dst)
                continue;
            int can = 0;
            CUDA_CHECK(cudaDeviceCanAccessPeer(&can, src, dst));
            void *s = nullptr, *d = nullptr;
            CUDA_CHECK(cudaSetDevice(dst));
            CUDA_CHECK(cudaMalloc(&d, (size_t)size));
            CUDA_CHECK(cudaSetDevice(src));
            CUDA_CHECK(cudaMalloc(&s, (size_t)size));
            if (can) {
                cudaError_t err = cudaDeviceEnablePeerAccess(dst, 0);
                if (err != cudaSuccess && err != cudaErrorPeerAccessAlreadyEnabled)
                    CUDA_CHECK(err);
                cudaGetLastError();
            }
            jl_stats st = timed_copies(o.reps, (double)size, [&] {
                CUDA_CHECK(cudaMemcpyPeer(d, dst, s, src, (size_t)size));
            });
            jl_begin("gpu.d2d", st.median);
            jl_param_long("src", src);
            jl_param_long("dst", dst);
            jl_param_str("peer_access", can ? "yes" : "no");
            jl_param_long("size", size);
            jl_end(&st, JL_SUMMARY);
            CUDA_CHECK(cudaFree(s));
            CUDA_CHECK(cudaSetDevice(dst));
            CUDA_CHECK(cudaFree(d));
        }
    }
}

int main(int argc, char **argv)
{
    probe_init("gpumem");
    Options o = parse_options(argc, argv);
    bool valid = true;
    for (int device : o.devices) {
        cudaDeviceProp prop;
        CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
        if (o.stream)
            valid = stream(o, device, prop.name) && valid;
        if (o.transfers)
            transfers(o, device, prop.name);
    }
    if (o.peers && o.devices.size() > 1)
        peers(o);
    return valid ? PROBE_OK : PROBE_INVALID;
}
