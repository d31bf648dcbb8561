/*
 * cuda_probe.h - what assay's CUDA probes (gpuburn.cu, gpumem.cu, ncclbench.cu) share: error
 * checks, the JSON Lines writer, summary statistics, strict option parsing (the options loop,
 * comma lists, numbers, devices).
 *
 * The output contract is jsonl.h's (one object per measured point on stdout, diagnostics on
 * stderr, the same statistics conventions), written again here in C++ because nvcc compiles
 * host code as C++ and jsonl.h is C (implicit void* conversions that C++ rejects).
 *
 * Exit codes: 0 ok, 1 runtime failure (CUDA, cuBLAS, out of memory), 2 bad arguments,
 * 3 validation failed (a wrong or non-reproducible result).
 */
#ifndef ASSAY_CUDA_PROBE_H
#define ASSAY_CUDA_PROBE_H

#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

enum { EXIT_RUNTIME = 1, EXIT_USAGE = 2, EXIT_INVALID = 3 };

/* Set by each probe's main: the prefix of every diagnostic line ("gpuburn", "gpumem"). */
static const char *cp_name = "cuda_probe";

static void cp_vnote(const char *fmt, va_list ap)
{
    fprintf(stderr, "%s: ", cp_name);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

static void cp_die(int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cp_vnote(fmt, ap);
    va_end(ap);
    /* _Exit, not exit: another host thread may be inside CUDA, and running CUDA's teardown
     * under it can hang; what was printed is flushed first. */
    fflush(stdout);
    fflush(stderr);
    _Exit(code);
}

static void cp_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    cp_vnote(fmt, ap);
    va_end(ap);
}

/* Out of memory gets its own words: it is the one runtime failure a user fixes with a flag. */
#define CUDA_CHECK(call)                                                                      \
    do {                                                                                      \
        cudaError_t err_ = (call);                                                            \
        if (err_ != cudaSuccess)                                                              \
            cp_die(EXIT_RUNTIME, "%s failed at %s:%d: %s (%s)%s", #call, __FILE__, __LINE__,  \
                   cudaGetErrorName(err_), cudaGetErrorString(err_),                          \
                   err_ == cudaErrorMemoryAllocation ? "; use a smaller --mem-fraction" : ""); \
    } while (0)

/* ---- summary statistics, jsonl.h's conventions (sample stddev, mean of middle two) ---- */

struct CpStats {
    long n = 0;
    double min = 0, max = 0, mean = 0, median = 0, stddev = 0;
};

static CpStats cp_stats(std::vector<double> v)
{
    CpStats s;
    if (v.empty())
        return s;
    std::sort(v.begin(), v.end());
    double sum = 0;
    for (double x : v)
        sum += x;
    s.n = (long)v.size();
    s.mean = sum / (double)s.n;
    double ss = 0;
    for (double x : v)
        ss += (x - s.mean) * (x - s.mean);
    s.min = v.front();
    s.max = v.back();
    s.median = (s.n % 2) ? v[s.n / 2] : 0.5 * (v[s.n / 2 - 1] + v[s.n / 2]);
    s.stddev = s.n > 1 ? std::sqrt(ss / (double)(s.n - 1)) : 0.0;
    return s;
}

/* ---- JSON Lines writer: one line is built in a string, then written at once ---- */

static std::string cp_json_str(const char *str)
{
    std::string out = "\"";
    for (const unsigned char *p = (const unsigned char *)str; *p; p++) {
        char buf[8];
        if (*p == '"' || *p == '\\') {
            out += '\\';
            out += (char)*p;
        } else if (*p < 0x20) {
            snprintf(buf, sizeof buf, "\\u%04x", *p);
            out += buf;
        } else {
            out += (char)*p;
        }
    }
    return out + "\"";
}

/* %.17g round-trips every double; JSON has no inf/nan, so null keeps the line readable. */
static std::string cp_json_num(double v)
{
    if (!std::isfinite(v))
        return "null";
    char buf[40];
    snprintf(buf, sizeof buf, "%.17g", v);
    std::string out = buf;
    if (!strpbrk(buf, ".e"))
        out += ".0";
    return out;
}

class CpLine {
  public:
    CpLine(const char *metric, double value)
    {
        text_ = "{\"metric\": " + cp_json_str(metric) + ", \"value\": " + cp_json_num(value) +
                ", \"params\": {";
    }
    CpLine &str(const char *key, const char *v) { return put(key, cp_json_str(v)); }
    CpLine &num(const char *key, double v) { return put(key, cp_json_num(v)); }
    CpLine &integer(const char *key, long long v) { return put(key, std::to_string(v)); }
    /* Close params, add the stats (if any), print the line and flush it: a probe killed
     * part-way leaves only complete lines behind. */
    void end(const CpStats *s = nullptr)
    {
        text_ += "}";
        if (s && s->n > 0) {
            text_ += ", \"stats\": {\"n\": " + std::to_string(s->n) +
                     ", \"min\": " + cp_json_num(s->min) + ", \"max\": " + cp_json_num(s->max) +
                     ", \"mean\": " + cp_json_num(s->mean) +
                     ", \"median\": " + cp_json_num(s->median) +
                     ", \"stddev\": " + cp_json_num(s->stddev) + "}";
        }
        text_ += "}\n";
        fputs(text_.c_str(), stdout);
        fflush(stdout);
    }

  private:
    CpLine &put(const char *key, const std::string &value)
    {
        if (fields_++)
            text_ += ", ";
        text_ += cp_json_str(key) + ": " + value;
        return *this;
    }
    std::string text_;
    int fields_ = 0;
};

/* ---- strict option parsing: "10k", "" or "1.5x" is an error, never 10, 0 or 1.5 ---- */

static double cp_parse_double(const char *opt, const char *text, double lo, double hi)
{
    char *end = nullptr;
    double v = text ? strtod(text, &end) : NAN;
    if (!text || !*text || *end != '\0' || !(v >= lo && v <= hi))
        cp_die(EXIT_USAGE, "%s wants a number in [%g, %g], got '%s'", opt, lo, hi,
               text ? text : "");
    return v;
}

static long long cp_parse_long(const char *opt, const char *text, long long lo, long long hi)
{
    char *end = nullptr;
    long long v = text ? strtoll(text, &end, 10) : 0;
    if (!text || !*text || *end != '\0' || v < lo || v > hi)
        cp_die(EXIT_USAGE, "%s wants an integer in [%lld, %lld], got '%s'", opt, lo, hi,
               text ? text : "");
    return v;
}

/* "a,b,c" -> {"a", "b", "c"}; an empty item stays (as "") for its parser to refuse. */
static std::vector<std::string> cp_split_list(const char *text)
{
    std::vector<std::string> out;
    std::string s = text ? text : "";
    size_t start = 0;
    while (true) {
        size_t comma = s.find(',', start);
        out.push_back(
            s.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos)
            return out;
        start = comma + 1;
    }
}

/* "0,2,3" -> {0, 2, 3}; every index must name a visible device. */
static std::vector<int> cp_parse_devices(const char *text, int count)
{
    std::vector<int> out;
    for (const std::string &part : cp_split_list(text)) {
        int dev = (int)cp_parse_long("--gpus", part.c_str(), 0, 1023);
        if (dev >= count)
            cp_die(EXIT_USAGE, "--gpus: device %d does not exist (%d visible)", dev, count);
        if (std::find(out.begin(), out.end(), dev) == out.end())
            out.push_back(dev);
    }
    return out;
}

/* Every visible device, or exit 1 naming why there is none (no driver, no GPU). */
static int cp_device_count()
{
    int count = 0;
    cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess)
        cp_die(EXIT_RUNTIME, "no usable GPU: cudaGetDeviceCount: %s (%s)", cudaGetErrorName(err),
               cudaGetErrorString(err));
    if (count == 0)
        cp_die(EXIT_RUNTIME, "no GPU visible (CUDA_VISIBLE_DEVICES?)");
    return count;
}

/* The devices of --gpus (nullptr: not given), else every visible one. */
static std::vector<int> cp_select_devices(const char *gpus)
{
    int count = cp_device_count();
    if (gpus)
        return cp_parse_devices(gpus, count);
    std::vector<int> all;
    for (int d = 0; d < count; d++)
        all.push_back(d);
    return all;
}

/* The options loop every probe shares. "--help" prints the usage and exits 0; each option in
 * ``flags`` stands alone, every other takes the next argument as its value (none: exit 2);
 * "--gpus L" is every probe's; ``set(o, option, value)`` sets one of the probe's own and returns
 * false for one it does not know (exit 2). ``check`` (optional) refuses a combination of
 * options (exit 2) before the devices are looked at, so a bad command line is exit 2 even on a
 * machine without a GPU. */
template <class Options, class Set>
static Options cp_parse_options(int argc, char **argv, void (*usage)(FILE *),
                                std::initializer_list<std::string> flags, Set set,
                                void (*check)(const Options &) = nullptr)
{
    Options o;
    const char *gpus = nullptr;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        if (a == "--help" || a == "-h") {
            usage(stdout);
            exit(0);
        }
        const char *v = nullptr;
        if (std::find(flags.begin(), flags.end(), a) == flags.end()) {
            if (i + 1 >= argc)
                cp_die(EXIT_USAGE, "%s needs a value (--help)", a.c_str());
            v = argv[++i];
        }
        if (a == "--gpus")
            gpus = v;
        else if (!set(o, a, v))
            cp_die(EXIT_USAGE, "unknown option %s (--help)", a.c_str());
    }
    if (check)
        check(o);
    o.devices = cp_select_devices(gpus);
    return o;
}

#endif /* ASSAY_CUDA_PROBE_H */
