/*
 * blasinfo.h - which BLAS this process really runs, and which kernels it chose, read at run
 * time: the library a probe was linked with is not always the one the loader gives it
 * (Debian's alternatives, LD_LIBRARY_PATH, a site's module), and OpenBLAS picks its kernels
 * when it loads (its own CPU detection, or OPENBLAS_CORETYPE).
 *
 * Found through the process's global symbol scope (dlopen(NULL) + dlsym), so the probe needs
 * no link against any one library to ask:
 *   - OpenBLAS: openblas_get_config() ("OpenBLAS 0.3.21 DYNAMIC_ARCH ... Cooperlake ...") and
 *     openblas_get_corename() ("SkylakeX"): the kernels it runs;
 *   - Intel MKL: MKL_Get_Version(), whose Processor field names the code path MKL chose;
 *   - BLIS: bli_info_get_version_str() and bli_arch_string(bli_arch_query_id());
 *   - otherwise the library is not identified (a reference BLAS has no such query): only the
 *     file that provides dgemm_ is named.
 * The file that provides dgemm_ (dladdr) is named in every case.
 *
 * Only OpenBLAS and the unidentified case have been run here (Debian 12); the MKL and BLIS
 * branches follow their documented interfaces and are untested.
 *
 * Needs _GNU_SOURCE before the first system header (dladdr) and -ldl on old glibc.
 *
 *   blas_info b;
 *   blas_info_read(&b);
 *   blas_info_params(&b);      (jsonl.h params: blas_lib, blas_version, blas_core, ...)
 */
#ifndef ASSAY_BLASINFO_H
#define ASSAY_BLASINFO_H

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jsonl.h"

typedef struct {
    char lib[32];       /* "OpenBLAS", "MKL", "BLIS" or "unknown" */
    char version[64];   /* "0.3.21" */
    char core[160];     /* the kernels chosen: "SkylakeX"; MKL's processor; BLIS's arch */
    char config[256];   /* OpenBLAS's build line */
    char path[PATH_MAX]; /* the file that provides dgemm_, links resolved */
} blas_info;

/* MKL's version record (mkl_types.h, MKLVersion). */
typedef struct {
    int major, minor, update;
    char *product_status, *build, *processor, *platform;
} blas_mkl_version_;

static inline void blas_copy_(char *dst, size_t size, const char *src)
{
    snprintf(dst, size, "%s", src ? src : "");
}

static inline void blas_info_read(blas_info *b)
{
    memset(b, 0, sizeof *b);
    blas_copy_(b->lib, sizeof b->lib, "unknown");
    void *self = dlopen(NULL, RTLD_LAZY);
    if (!self)
        return;
    void *dgemm = dlsym(self, "dgemm_");
    Dl_info where;
    if (dgemm && dladdr(dgemm, &where) && where.dli_fname) {
        /* the file itself, not the alternatives' link the loader went through */
        char *real = realpath(where.dli_fname, NULL);
        blas_copy_(b->path, sizeof b->path, real ? real : where.dli_fname);
        free(real);
    }

    char *(*ob_config)(void) = (char *(*)(void))dlsym(self, "openblas_get_config");
    char *(*ob_core)(void) = (char *(*)(void))dlsym(self, "openblas_get_corename");
    void (*mkl_version)(blas_mkl_version_ *) =
        (void (*)(blas_mkl_version_ *))dlsym(self, "MKL_Get_Version");
    const char *(*blis_version)(void) = (const char *(*)(void))dlsym(self,
                                                                     "bli_info_get_version_str");
    if (ob_config && ob_core) {
        blas_copy_(b->lib, sizeof b->lib, "OpenBLAS");
        blas_copy_(b->config, sizeof b->config, ob_config());
        blas_copy_(b->core, sizeof b->core, ob_core());
        /* "OpenBLAS 0.3.21 NO_LAPACKE ...": the version is the second word */
        if (sscanf(b->config, "OpenBLAS %63s", b->version) != 1)
            b->version[0] = '\0';
    } else if (mkl_version) {
        blas_mkl_version_ v;
        memset(&v, 0, sizeof v);
        mkl_version(&v);
        blas_copy_(b->lib, sizeof b->lib, "MKL");
        snprintf(b->version, sizeof b->version, "%d.%d.%d", v.major, v.minor, v.update);
        blas_copy_(b->core, sizeof b->core, v.processor);
    } else if (blis_version) {
        int (*arch_id)(void) = (int (*)(void))dlsym(self, "bli_arch_query_id");
        const char *(*arch_name)(int) = (const char *(*)(int))dlsym(self, "bli_arch_string");
        blas_copy_(b->lib, sizeof b->lib, "BLIS");
        blas_copy_(b->version, sizeof b->version, blis_version());
        if (arch_id && arch_name)
            blas_copy_(b->core, sizeof b->core, arch_name(arch_id()));
    }
    dlclose(self);
}

/* The BLAS as params of the current JSON line (empty fields are left out). */
static inline void blas_info_params(const blas_info *b)
{
    jl_param_str("blas_lib", b->lib);
    if (b->version[0])
        jl_param_str("blas_version", b->version);
    if (b->core[0])
        jl_param_str("blas_core", b->core);
    if (b->config[0])
        jl_param_str("blas_config", b->config);
    if (b->path[0])
        jl_param_str("blas_path", b->path);
}

#endif
