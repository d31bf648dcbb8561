/*
 * cuda_probe.h - what only assay's CUDA probes (gpuburn.cu, gpumem.cu, ncclbench.cu) need on
 * top of the C harness: the CUDA error check, comma lists, and the choice of devices (--gpus).
 *
 * Messages, exit codes, options (the table), statistics and the JSON Lines on stdout are
 * probe.h's and jsonl.h's, the same as every C probe's: C that nvcc compiles as C++.
 *
 * Every failure once CUDA is in use ends with probe_die_now (_Exit), never exit(): gpuburn
 * has one host thread per GPU, and CUDA's teardown run by exit() under a thread still inside
 * CUDA can hang.
 */
#ifndef ASSAY_CUDA_PROBE_H
#define ASSAY_CUDA_PROBE_H

#include "jsonl.h"
#include "probe.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <string>
#include <vector>

/* Out of memory gets its own words: it is the one runtime failure a user fixes with a flag. */
#define CUDA_CHECK(call)                                                                      \
    do {                                                                                      \
        cudaError_t err_ = (call);                                                            \
        if (err_ != cudaSuccess)                                                              \
            probe_die_now(PROBE_RUNTIME, "%s failed at %s:%d: %s (%s)%s", #call, __FILE__,    \
                          __LINE__, cudaGetErrorName(err_), cudaGetErrorString(err_),         \
                          err_ == cudaErrorMemoryAllocation ? "; use a smaller --mem-fraction" \
                                                            : "");                            \
    } while (0)

/* jsonl.h's statistics of samples the probe has (never none); only memory can fail them. */
static inline jl_stats cp_stats(const std::vector<double> &samples)
{
    jl_stats s;
    if (jl_compute_stats(samples.data(), (long)samples.size(), &s))
        probe_die_now(PROBE_RUNTIME, "statistics of %zu samples: none, or out of host memory",
                      samples.size());
    return s;
}

/* "a,b,c" -> {"a", "b", "c"}; an empty item stays (as "") for its reader to refuse. */
static inline std::vector<std::string> cp_split_list(const char *text)
{
    std::vector<std::string> out;
    std::string s = text;
    for (size_t start = 0;;) {
        size_t comma = s.find(',', start);
        out.push_back(s.substr(start, comma == std::string::npos ? comma : comma - start));
        if (comma == std::string::npos)
            return out;
        start = comma + 1;
    }
}

/* The items of a comma list option, each read by its row's rules (probe.h's PROBE_INT,
 * PROBE_SIZE or PROBE_CHOICE: the number, or the choice's index; `row.value` is not used).
 * A bad item is exit 2 in probe.h's words, before any device is looked at: a bad command
 * line is exit 2 on a machine without a GPU too. */
static inline std::vector<long long> cp_list(const probe_option &row, const char *text)
{
    std::vector<long long> out;
    for (const std::string &item : cp_split_list(text)) {
        long long number = 0;
        int choice = 0;
        probe_option one = row;
        one.value = row.kind == PROBE_CHOICE ? (void *)&choice : (void *)&number;
        if (probe_read_value(&one, item.c_str())) {
            char expected[256];
            probe_expected(&row, expected, sizeof expected);
            probe_die(PROBE_USAGE,
                      "%s: expected each item of the comma list to be %s, got '%s' in '%s'",
                      row.name, expected, item.c_str(), text);
        }
        out.push_back(row.kind == PROBE_CHOICE ? choice : number);
    }
    return out;
}

/* The devices to use: those of --gpus (nullptr: not given, every visible one).  A malformed
 * list is exit 2 before CUDA is asked; no usable GPU is exit 1 naming why; an index past the
 * devices there are is exit 2. */
static inline std::vector<int> cp_select_devices(const char *gpus)
{
    std::vector<long long> wanted;
    if (gpus)
        wanted = cp_list(probe_opt_int("--gpus", nullptr, 0, 1023), gpus);
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
        probe_die_now(PROBE_RUNTIME, "no usable GPU: cudaGetDeviceCount: %s (%s)",
                      cudaGetErrorName(err), cudaGetErrorString(err));
    if (count == 0)
        probe_die_now(PROBE_RUNTIME, "no GPU visible (CUDA_VISIBLE_DEVICES?)");
    std::vector<int> out;
    if (!gpus)
        for (int d = 0; d < count; d++)
            out.push_back(d);
    for (long long dev : wanted) {
        if (dev >= count)
            probe_die_now(PROBE_USAGE, "--gpus: device %lld does not exist (%d visible)", dev,
                          count);
        if (std::find(out.begin(), out.end(), (int)dev) == out.end())
            out.push_back((int)dev);
    }
    return out;
}

#endif /* ASSAY_CUDA_PROBE_H */
