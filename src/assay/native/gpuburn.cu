/*
 * gpuburn.cu - sustained GEMM throughput per precision, with gpu_burn's error check.
 *
 * Method (after wilicc/gpu-burn):
 *   - On every selected GPU at once (one host thread each), per precision in turn: A and B
 *     (n x n, uniform [0,1) generated on the device in the input type) and as many result
 *     matrices ("slots") as fit in --mem-fraction of the free memory.
 *   - Slot 0 holds the reference product A.B, made first. A few of its elements are checked
 *     against dot products computed in double on the device (tolerance by precision), so a
 *     wrong GEMM (not just a non-reproducible one) is caught.
 *   - Then for --duration seconds: GEMMs into slots 1..k, timed with CUDA events, one
 *     interval being about --interval seconds of GEMMs; after each round every slot written is
 *     compared with slot 0 and the elements beyond the tolerance are counted (gpu_burn
 *     compares every product with the first). cuBLAS gives bit-identical results for the same
 *     inputs on the same GPU, so a healthy card counts 0; the tolerance (4 units in the last
 *     place of the output type, relative) only keeps an algorithm that is not bit-exact from
 *     being called faulty. NaN or Inf is always an error.
 *   - FLOPs: 2 n^3 per GEMM. Rate per interval = GEMMs x 2n^3 / GEMM time of the interval
 *     (the comparison is not timed). The first --warmup intervals are dropped (clocks and
 *     power settle); min/mean/max/median/stddev are over the rest.
 *   - NVML (libnvidia-ml.so.1, opened at run time) is sampled every 100 ms: SM clock, memory
 *     clock, power, temperature, and the clock-event (throttle) reasons seen. The summary
 *     figures hold the readings of the measured intervals; the series (gpu.trace, one line
 *     per interval, warm-up ones too) holds each interval's rate and the means of the
 *     readings taken in it, on one time axis from the probe's start.
 *
 * Precisions: fp64 (cublasDgemm), fp32 (cublasSgemm, pedantic math: no tensor cores),
 * tf32 (cublasGemmEx, float in/out, CUBLAS_COMPUTE_32F_FAST_TF32), fp16 and bf16
 * (cublasGemmEx, 16-bit in/out, CUBLAS_COMPUTE_32F accumulation as frameworks use it).
 */
#include "cuda_probe.h"

#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

/* ---------------- options ---------------- */

static const char *const PRECISION_NAMES[] = {"fp64", "fp32", "tf32", "fp16", "bf16", nullptr};

struct Options {
    double duration = 30.0;    /* seconds per precision */
    double interval = 1.0;     /* seconds of GEMMs per interval */
    long long warmup = 2;      /* intervals dropped */
    double mem_fraction = 0.9; /* of free memory */
    long long n = 8192;
    std::vector<std::string> precisions{PRECISION_NAMES, PRECISION_NAMES + 5};
    std::vector<int> devices;
    int corrupt_for_test = 0;
};

static void usage(void)
{
    fputs("usage: gpuburn [options]\n"
          "  --duration S      seconds of GEMMs per precision (default 30)\n"
          "  --interval S      seconds of GEMMs per reported interval (default 1)\n"
          "  --warmup N        first intervals not counted (default 2)\n"
          "  --precisions L    comma list of fp64,fp32,tf32,fp16,bf16 (default all)\n"
          "  --mem-fraction F  share of free GPU memory used for matrices (default 0.9)\n"
          "  --n N             matrix order (default 8192)\n"
          "  --gpus L          comma list of device indices (default every visible GPU)\n"
          "  --corrupt-for-test  flip one bit of one product: proves the check catches it\n"
          "Prints JSON Lines: gpu.flops (flop/s), gpu.errors, gpu.sm_clock, gpu.mem_clock (Hz),\n"
          "gpu.power (W), gpu.temperature (C) per GPU and precision, and gpu.trace (flop/s\n"
          "per interval, with t_s and the telemetry's means over the interval).\n"
          "Exit: 0 ok, 1 runtime failure, 2 bad arguments, 3 errors found (FAULTY).\n",
          stdout);
}

/* probe.h's table; the lists are read after it, all before a GPU is looked for. */
static Options parse_options(int argc, char **argv)
{
    Options o;
    const char *precisions = nullptr, *gpus = nullptr;
    const probe_option opts[] = {
        probe_opt_real("--duration", &o.duration, 0.01, 86400),
        probe_opt_real("--interval", &o.interval, 0.001, 3600),
        probe_opt_int("--warmup", &o.warmup, 0, 1000),
        probe_opt_real("--mem-fraction", &o.mem_fraction, 0.01, 0.99),
        probe_opt_int("--n", &o.n, 64, 65536),
        probe_opt_text("--precisions", &precisions),
        probe_opt_text("--gpus", &gpus),
        probe_opt_flag("--corrupt-for-test", &o.corrupt_for_test),
        PROBE_END,
    };
    probe_options_or_exit(argc, argv, opts, usage);
    if (precisions) {
        o.precisions.clear();
        for (long long k : cp_list(probe_opt_choice("--precisions", nullptr, PRECISION_NAMES),
                                   precisions))
            o.precisions.push_back(PRECISION_NAMES[k]);
    }
    o.devices = cp_select_devices(gpus);
    return o;
}

/* ---------------- NVML, opened at run time ---------------- */

typedef void *nvmlDevice_t;
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2, NVML_TEMPERATURE_GPU = 0 };

struct Nvml {
    void *lib = nullptr;
    int (*init)() = nullptr;
    int (*by_pci)(const char *, nvmlDevice_t *) = nullptr;
    int (*clock)(nvmlDevice_t, int, unsigned *) = nullptr;
    int (*power)(nvmlDevice_t, unsigned *) = nullptr;
    int (*temperature)(nvmlDevice_t, int, unsigned *) = nullptr;
    int (*reasons)(nvmlDevice_t, unsigned long long *) = nullptr;

    bool open()
    {
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (!lib) {
            probe_warn("NVML not available (%s): no clocks, power or temperature", dlerror());
            return false;
        }
        init = (int (*)())dlsym(lib, "nvmlInit_v2");
        by_pci = (int (*)(const char *, nvmlDevice_t *))dlsym(lib,
                                                              "nvmlDeviceGetHandleByPciBusId_v2");
        clock = (int (*)(nvmlDevice_t, int, unsigned *))dlsym(lib, "nvmlDeviceGetClockInfo");
        power = (int (*)(nvmlDevice_t, unsigned *))dlsym(lib, "nvmlDeviceGetPowerUsage");
        temperature =
            (int (*)(nvmlDevice_t, int, unsigned *))dlsym(lib, "nvmlDeviceGetTemperature");
        /* Renamed in recent drivers; the old name stays as an alias in older ones. */
        reasons = (int (*)(nvmlDevice_t, unsigned long long *))dlsym(
            lib, "nvmlDeviceGetCurrentClocksEventReasons");
        if (!reasons)
            reasons = (int (*)(nvmlDevice_t, unsigned long long *))dlsym(
                lib, "nvmlDeviceGetCurrentClocksThrottleReasons");
        if (!init || !by_pci || init() != 0) {
            probe_warn("NVML could not start: no clocks, power or temperature");
            lib = nullptr;
            return false;
        }
        return true;
    }
    nvmlDevice_t handle(int device) const
    {
        char bus[32];
        nvmlDevice_t h = nullptr;
        if (!lib || cudaDeviceGetPCIBusId(bus, sizeof bus, device) != cudaSuccess)
            return nullptr;
        return by_pci(bus, &h) == 0 ? h : nullptr;
    }
};

static Nvml nvml;

/* Seconds since the probe started: one time axis for every GPU and precision. */
static const auto PROBE_T0 = std::chrono::steady_clock::now();

static double since_start(void)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - PROBE_T0).count();
}

/* One NVML reading; NaN where the driver did not answer. */
struct Reading {
    double t = 0, sm_hz = NAN, mem_hz = NAN, watts = NAN, celsius = NAN;
    bool measured = false; /* after the warm-up: in the summary figures */
};

struct Telemetry {
    std::vector<Reading> readings;
    unsigned long long reasons = 0; /* OR of every clock-event reason seen while measured */

    /* The finite values of one quantity, read after the warm-up. */
    std::vector<double> measured(double Reading::*q) const
    {
        std::vector<double> v;
        for (const Reading &r : readings)
            if (r.measured && isfinite(r.*q))
                v.push_back(r.*q);
        return v;
    }

    /* The mean of one quantity over the readings taken in [t0, t1), NaN if none. */
    double mean(double Reading::*q, double t0, double t1) const
    {
        double sum = 0;
        int k = 0;
        for (const Reading &r : readings)
            if (r.t >= t0 && r.t < t1 && isfinite(r.*q)) {
                sum += r.*q;
                k++;
            }
        return k ? sum / k : NAN;
    }
};

static void sample_once(nvmlDevice_t h, Telemetry &t, bool measured)
{
    unsigned v = 0;
    unsigned long long r = 0;
    Reading x;
    x.t = since_start();
    x.measured = measured;
    if (nvml.clock && nvml.clock(h, NVML_CLOCK_SM, &v) == 0)
        x.sm_hz = v * 1e6;
    if (nvml.clock && nvml.clock(h, NVML_CLOCK_MEM, &v) == 0)
        x.mem_hz = v * 1e6;
    if (nvml.power && nvml.power(h, &v) == 0)
        x.watts = v / 1000.0;
    if (nvml.temperature && nvml.temperature(h, NVML_TEMPERATURE_GPU, &v) == 0)
        x.celsius = v;
    if (measured && nvml.reasons && nvml.reasons(h, &r) == 0)
        t.reasons |= r;
    t.readings.push_back(x);
}

/* ---------------- kernels ---------------- */

template <typename T> __device__ T from_double(double v);
template <> __device__ double from_double<double>(double v) { return v; }
template <> __device__ float from_double<float>(double v) { return (float)v; }
template <> __device__ __half from_double<__half>(double v) { return __double2half(v); }
template <> __device__ __nv_bfloat16 from_double<__nv_bfloat16>(double v)
{
    return __float2bfloat16((float)v);
}

template <typename T> __device__ double to_double(T v);
template <> __device__ double to_double<double>(double v) { return v; }
template <> __device__ double to_double<float>(float v) { return v; }
template <> __device__ double to_double<__half>(__half v) { return __half2float(v); }
template <> __device__ double to_double<__nv_bfloat16>(__nv_bfloat16 v)
{
    return __bfloat162float(v);
}

/* Uniform [0,1) from a counter hash (splitmix64): deterministic, no cuRAND needed. */
template <typename T> __global__ void fill_kernel(T *x, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned long long z = seed + i * 0x9E3779B97F4A7C15ull;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        x[i] = from_double<T>((double)(z >> 11) * 0x1.0p-53);
    }
}

/* Elements of c that differ from ref by more than tol relative (or are NaN/Inf). */
template <typename T>
__global__ void compare_kernel(const T *ref, const T *c, size_t n, double tol,
                               unsigned long long *errors)
{
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        double r = to_double(ref[i]), v = to_double(c[i]);
        if (!isfinite(v) || fabs(v - r) > tol * fabs(r))
            mine++;
    }
    if (mine)
        atomicAdd(errors, mine);
}

/* C[i,j] recomputed in double for a few (i, j); column-major, C = A.B. */
template <typename T, typename TC>
__global__ void spot_kernel(const T *a, const T *b, const TC *c, long long n, int count,
                            double tol, unsigned long long *errors)
{
    int k = blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= count)
        return;
    long long i = (k * 7919LL) % n, j = (k * 104729LL + 13) % n;
    double sum = 0;
    for (long long p = 0; p < n; p++)
        sum += to_double(a[i + p * n]) * to_double(b[p + j * n]);
    double v = to_double(c[i + j * n]);
    if (!isfinite(v) || fabs(v - sum) > tol * fabs(sum))
        atomicAdd(errors, 1ull);
}

/* ---------------- one precision ---------------- */

struct Precision {
    const char *name;
    size_t in_bytes, out_bytes;
    double repro_tol; /* relative, product vs reference: 4 ulps of the output type */
    double spot_tol;  /* relative, product vs double dot product: rounding of the method */
};

/* Spot tolerances: fp64/fp32 accumulate n products in the format (error ~ sqrt(n) ulp);
 * tf32 rounds inputs to 10 mantissa bits (2^-11 relative); fp16/bf16 round the result to 11/8
 * bits. Positive inputs mean no cancellation, so relative error is well defined. */
static const Precision PRECISIONS[] = {
    {"fp64", 8, 8, 4 * 0x1.0p-52, 1e-10},
    {"fp32", 4, 4, 4 * 0x1.0p-23, 1e-4},
    {"tf32", 4, 4, 4 * 0x1.0p-23, 5e-3},
    {"fp16", 2, 2, 4 * 0x1.0p-10, 1e-2},
    {"bf16", 2, 2, 4 * 0x1.0p-7, 3e-2},
};

static const Precision &precision_of(const std::string &name)
{
    for (const Precision &p : PRECISIONS)
        if (name == p.name)
            return p;
    probe_die_now(PROBE_USAGE, "unknown precision %s", name.c_str());
}

#define CUBLAS_CHECK(call)                                                                    \
    do {                                                                                      \
        cublasStatus_t st_ = (call);                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS)                                                     \
            probe_die_now(PROBE_RUNTIME, "%s failed at %s:%d: %s", #call, __FILE__, __LINE__, \
                          cublasGetStatusString(st_));                                        \
    } while (0)

static void gemm(cublasHandle_t h, const std::string &p, int n, const void *a, const void *b,
                 void *c)
{
    const double one_d = 1.0, zero_d = 0.0;
    const float one = 1.0f, zero = 0.0f;
    if (p == "fp64")
        CUBLAS_CHECK(cublasDgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one_d, (const double *)a,
                                 n, (const double *)b, n, &zero_d, (double *)c, n));
    else if (p == "fp32")
        CUBLAS_CHECK(cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, (const float *)a, n,
                                 (const float *)b, n, &zero, (float *)c, n));
    else if (p == "tf32")
        CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, CUDA_R_32F, n, b,
                                  CUDA_R_32F, n, &zero, c, CUDA_R_32F, n,
                                  CUBLAS_COMPUTE_32F_FAST_TF32, CUBLAS_GEMM_DEFAULT));
    else {
        cudaDataType t = p == "fp16" ? CUDA_R_16F : CUDA_R_16BF;
        CUBLAS_CHECK(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &one, a, t, n, b, t, n,
                                  &zero, c, t, n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
}

static void fill(const std::string &p, void *x, size_t n, unsigned long long seed)
{
    if (p == "fp64")
        fill_kernel<<<1024, 256>>>((double *)x, n, seed);
    else if (p == "fp32" || p == "tf32")
        fill_kernel<<<1024, 256>>>((float *)x, n, seed);
    else if (p == "fp16")
        fill_kernel<<<1024, 256>>>((__half *)x, n, seed);
    else
        fill_kernel<<<1024, 256>>>((__nv_bfloat16 *)x, n, seed);
    CUDA_CHECK(cudaGetLastError());
}

static void compare(const std::string &p, const void *ref, const void *c, size_t n, double tol,
                    unsigned long long *errors)
{
    if (p == "fp64")
        compare_kernel<<<1024, 256>>>((const double *)ref, (const double *)c, n, tol, errors);
    else if (p == "fp32" || p == "tf32")
        compare_kernel<<<1024, 256>>>((const float *)ref, (const float *)c, n, tol, errors);
    else if (p == "fp16")
        compare_kernel<<<1024, 256>>>((const __half *)ref, (const __half *)c, n, tol, errors);
    else
        compare_kernel<<<1024, 256>>>((const __nv_bfloat16 *)ref, (const __nv_bfloat16 *)c, n,
                                      tol, errors);
    CUDA_CHECK(cudaGetLastError());
}

static void spot(const std::string &p, const void *a, const void *b, const void *c, int n,
                 int count, double tol, unsigned long long *errors)
{
    if (p == "fp64")
        spot_kernel<<<1, count>>>((const double *)a, (const double *)b, (const double *)c, n,
                                  count, tol, errors);
    else if (p == "fp32" || p == "tf32")
        spot_kernel<<<1, count>>>((const float *)a, (const float *)b, (const float *)c, n, count,
                                  tol, errors);
    else if (p == "fp16")
        spot_kernel<<<1, count>>>((const __half *)a, (const __half *)b, (const __half *)c, n,
                                  count, tol, errors);
    else
        spot_kernel<<<1, count>>>((const __nv_bfloat16 *)a, (const __nv_bfloat16 *)b,
                                  (const __nv_bfloat16 *)c, n, count, tol, errors);
    CUDA_CHECK(cudaGetLastError());
}

/* One interval of GEMMs, warm-up ones too: the rate over time beside the telemetry. */
struct Interval {
    double t0, t1, rate; /* seconds since the probe started; flop/s */
    bool measured;
};

/* A planted fault: one bit of one product element flipped, mantissa bit 4 of the element's
 * lowest byte (little-endian) in every precision, 16 units in the last place, 2 to 4 times
 * the comparison's 4-ulp tolerance (relative to a value in [2^e, 2^(e+1))). A flip of bits 0-2
 * (at most 4 ulps) is within the tolerance and not caught, as gpu_burn's absolute tolerance
 * lets the lowest bits pass too. */
static void flip_bit(char *element)
{
    unsigned char byte = 0;
    CUDA_CHECK(cudaMemcpy(&byte, element, 1, cudaMemcpyDeviceToHost));
    byte ^= 0x10;
    CUDA_CHECK(cudaMemcpy(element, &byte, 1, cudaMemcpyHostToDevice));
}

struct Result {
    std::string precision;
    std::vector<double> rates; /* flop/s per measured interval */
    std::vector<Interval> intervals;
    unsigned long long errors = 0, compared = 0, spot_errors = 0;
    long long slots = 0, gemms = 0;
    size_t bytes = 0;
    Telemetry telemetry;
};

static Result burn(const Options &o, int device, const std::string &pname, cublasHandle_t h)
{
    const Precision &prec = precision_of(pname);
    Result r;
    r.precision = pname;
    const size_t n = (size_t)o.n, elems = n * n;
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    const size_t budget = (size_t)(o.mem_fraction * (double)free_b);
    const size_t inputs = 2 * elems * prec.in_bytes, slot = elems * prec.out_bytes;
    if (budget < inputs + 2 * slot)
        probe_die_now(PROBE_RUNTIME,
                      "GPU %d: %s needs %.2f GiB for n=%zu (A, B and two products) but %.0f%% of "
                      "the free %.2f GiB is %.2f GiB: use a smaller --n or a larger --mem-fraction",
                      device, pname.c_str(), (inputs + 2 * slot) / 1073741824.0, n,
                      o.mem_fraction * 100, free_b / 1073741824.0, budget / 1073741824.0);
    r.slots = (long long)((budget - inputs) / slot);
    r.bytes = inputs + (size_t)r.slots * slot;
    char *a = nullptr, *b = nullptr, *c = nullptr;
    unsigned long long *d_err = nullptr;
    CUDA_CHECK(cudaMalloc(&a, elems * prec.in_bytes));
    CUDA_CHECK(cudaMalloc(&b, elems * prec.in_bytes));
    CUDA_CHECK(cudaMalloc(&c, (size_t)r.slots * slot));
    CUDA_CHECK(cudaMalloc(&d_err, 2 * sizeof *d_err));
    CUDA_CHECK(cudaMemset(d_err, 0, 2 * sizeof *d_err));
    fill(pname, a, elems, 0x5eed0001ull + device);
    fill(pname, b, elems, 0x5eed0002ull + device);

    /* Reference product, checked against double dot products. */
    gemm(h, pname, (int)n, a, b, c);
    spot(pname, a, b, c, (int)n, 64, prec.spot_tol, d_err + 1);
    CUDA_CHECK(cudaDeviceSynchronize());

    /* Calibrate: GEMMs per interval from the time of one (the second: the first loads code). */
    cudaEvent_t e0, e1;
    CUDA_CHECK(cudaEventCreate(&e0));
    CUDA_CHECK(cudaEventCreate(&e1));
    CUDA_CHECK(cudaEventRecord(e0));
    gemm(h, pname, (int)n, a, b, c + slot);
    CUDA_CHECK(cudaEventRecord(e1));
    CUDA_CHECK(cudaEventSynchronize(e1));
    float one_ms = 0;
    CUDA_CHECK(cudaEventElapsedTime(&one_ms, e0, e1));
    long long per_interval = std::max(1LL, (long long)(o.interval * 1e3 / std::max(one_ms, 1e-3f)));
    const double flop = 2.0 * (double)n * (double)n * (double)n;

    nvmlDevice_t nh = nvml.handle(device);
    std::atomic<bool> measuring{false}, stop{false};
    std::thread sampler([&] {
        while (!stop.load()) {
            if (nh)
                sample_once(nh, r.telemetry, measuring.load());
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
    });

    long long next = 0; /* slots 1..slots-1 in turn */
    int interval = 0;
    measuring = o.warmup == 0;
    auto t_start = std::chrono::steady_clock::now();
    while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count() <
           o.duration) {
        double gemm_ms = 0, t0 = since_start();
        long long done = 0;
        while (done < per_interval) {
            long long round = std::min(per_interval - done, r.slots - 1);
            long long first = next;
            CUDA_CHECK(cudaEventRecord(e0));
            for (long long k = 0; k < round; k++)
                gemm(h, pname, (int)n, a, b, c + (size_t)(1 + (next++ % (r.slots - 1))) * slot);
            CUDA_CHECK(cudaEventRecord(e1));
            CUDA_CHECK(cudaEventSynchronize(e1));
            float ms = 0;
            CUDA_CHECK(cudaEventElapsedTime(&ms, e0, e1));
            gemm_ms += ms;
            if (o.corrupt_for_test && interval == 0 && done == 0)
                flip_bit(c + (size_t)(1 + first % (r.slots - 1)) * slot);
            for (long long k = 0; k < round; k++)
                compare(pname, c, c + (size_t)(1 + ((first + k) % (r.slots - 1))) * slot, elems,
                        prec.repro_tol, d_err);
            r.compared += (unsigned long long)round * elems;
            done += round;
        }
        CUDA_CHECK(cudaDeviceSynchronize());
        r.gemms += done;
        const double rate = (double)done * flop / (gemm_ms / 1e3);
        r.intervals.push_back({t0, since_start(), rate, interval >= o.warmup});
        if (interval >= o.warmup)
            r.rates.push_back(rate);
        interval++;
        if (interval == o.warmup)
            measuring = true;
    }
    stop = true;
    sampler.join();
    if (nh && r.telemetry.measured(&Reading::sm_hz).empty()) /* all warm-up: one reading */
        sample_once(nh, r.telemetry, true);
    if (r.rates.empty())
        probe_warn("GPU %d %s: %d intervals, all warm-up: give a longer --duration", device,
                   pname.c_str(), interval);
    unsigned long long host_err[2];
    CUDA_CHECK(cudaMemcpy(host_err, d_err, sizeof host_err, cudaMemcpyDeviceToHost));
    r.errors = host_err[0];
    r.spot_errors = host_err[1];
    CUDA_CHECK(cudaEventDestroy(e0));
    CUDA_CHECK(cudaEventDestroy(e1));
    CUDA_CHECK(cudaFree(a));
    CUDA_CHECK(cudaFree(b));
    CUDA_CHECK(cudaFree(c));
    CUDA_CHECK(cudaFree(d_err));
    return r;
}

/* ---------------- all GPUs at once, precision by precision ---------------- */

/* Every GPU starts a precision together, so "all GPUs burn at once" holds for each. */
class Barrier {
  public:
    explicit Barrier(int n) : n_(n) {}
    void wait()
    {
        std::unique_lock<std::mutex> lock(m_);
        int gen = gen_;
        if (++count_ == n_) {
            count_ = 0;
            gen_++;
            cv_.notify_all();
        } else {
            cv_.wait(lock, [&] { return gen != gen_; });
        }
    }

  private:
    std::mutex m_;
    std::condition_variable cv_;
    int n_, count_ = 0, gen_ = 0;
};

static std::mutex out_mutex;

/* Figures that change from one repetition to the next (GEMM and element counts, the throttle
 * mask) are written as floats: assay groups a measurement's repetitions by its integer and
 * string params, and these must not split them. */
static void report(const Options &o, int device, const char *name, const Result &r)
{
    std::lock_guard<std::mutex> lock(out_mutex);
    const Precision &prec = precision_of(r.precision);
    bool faulty = r.errors > 0 || r.spot_errors > 0;
    if (!r.rates.empty()) {
        jl_stats s = cp_stats(r.rates);
        jl_begin("gpu.flops", s.mean);
        jl_param_long("gpu", device);
        jl_param_str("name", name);
        jl_param_str("precision", r.precision.c_str());
        jl_param_long("n", o.n);
        jl_param_double("duration_s", o.duration);
        jl_param_double("interval_s", o.interval);
        jl_param_long("warmup_intervals", o.warmup);
        jl_param_long("slots", r.slots);
        jl_param_long("memory_bytes", (long long)r.bytes);
        jl_param_double("gemms", (double)r.gemms);
        jl_end(&s, JL_SUMMARY);
    }
    jl_begin("gpu.errors", (double)(r.errors + r.spot_errors));
    jl_param_long("gpu", device);
    jl_param_str("name", name);
    jl_param_str("precision", r.precision.c_str());
    jl_param_str("verdict", faulty ? "FAULTY" : "OK");
    jl_param_double("compared_elements", (double)r.compared);
    jl_param_double("mismatches", (double)r.errors);
    jl_param_double("spot_check_failures", (double)r.spot_errors);
    jl_param_double("tolerance", prec.repro_tol);
    jl_end(nullptr, 0);
    const struct {
        const char *metric, *trace_key;
        double Reading::*q;
    } tele[] = {{"gpu.sm_clock", "sm_clock_hz", &Reading::sm_hz},
                {"gpu.mem_clock", "mem_clock_hz", &Reading::mem_hz},
                {"gpu.power", "power_w", &Reading::watts},
                {"gpu.temperature", "temperature_c", &Reading::celsius}};
    for (auto &t : tele) {
        std::vector<double> values = r.telemetry.measured(t.q);
        if (values.empty())
            continue;
        jl_stats s = cp_stats(values);
        jl_begin(t.metric, s.mean);
        jl_param_long("gpu", device);
        jl_param_str("name", name);
        jl_param_str("precision", r.precision.c_str());
        if (t.q == &Reading::sm_hz)
            jl_param_double("clock_event_reasons", (double)r.telemetry.reasons);
        jl_end(&s, JL_SUMMARY);
    }
    /* The series: each interval's rate with the telemetry's means over it. */
    for (size_t k = 0; k < r.intervals.size(); k++) {
        const Interval &iv = r.intervals[k];
        jl_begin("gpu.trace", iv.rate);
        jl_param_long("gpu", device);
        jl_param_str("name", name);
        jl_param_str("precision", r.precision.c_str());
        jl_param_long("interval", (long long)k); /* an integer: repetitions fold by it */
        jl_param_str("phase", iv.measured ? "measured" : "warm-up");
        jl_param_double("t_s", iv.t1);
        jl_param_double("interval_s", iv.t1 - iv.t0);
        for (auto &t : tele) {
            double m = r.telemetry.mean(t.q, iv.t0, iv.t1);
            if (isfinite(m))
                jl_param_double(t.trace_key, m);
        }
        jl_end(nullptr, 0);
    }
    if (faulty)
        probe_error("GPU %d (%s) %s: FAULTY: %llu of %llu compared elements differ from the "
                    "reference, %llu spot checks failed",
                    device, name, r.precision.c_str(), r.errors, r.compared, r.spot_errors);
}

int main(int argc, char **argv)
{
    probe_init("gpuburn");
    Options o = parse_options(argc, argv);
    nvml.open();
    Barrier barrier((int)o.devices.size());
    std::atomic<bool> any_faulty{false};
    std::vector<std::thread> threads;
    for (int device : o.devices) {
        threads.emplace_back([&, device] {
            CUDA_CHECK(cudaSetDevice(device));
            cudaDeviceProp prop;
            CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
            cublasHandle_t h;
            CUBLAS_CHECK(cublasCreate(&h));
            for (const std::string &p : o.precisions) {
                /* fp32 means the FP32 units: no silent tensor-core shortcut. */
                CUBLAS_CHECK(cublasSetMathMode(h, p == "fp32" ? CUBLAS_PEDANTIC_MATH
                                                              : CUBLAS_DEFAULT_MATH));
                barrier.wait();
                Result r = burn(o, device, p, h);
                report(o, device, prop.name, r);
                if (r.errors || r.spot_errors)
                    any_faulty = true;
            }
            CUBLAS_CHECK(cublasDestroy(h));
        });
    }
    for (auto &t : threads)
        t.join();
    return any_faulty ? PROBE_INVALID : PROBE_OK;
}
