/*
 * backend_load.c - loads the CUDA backend plugin on first use of FW_CUDA.
 *
 * Where: $EDDY_FW_CUDA_PLUGIN when set; else libeddy_fw_cuda.so in the
 * directory of the object holding the framework (dladdr: paddle/_C*.so, so
 * the plugin built next to it in paddle/), or the package beside a binary
 * that links the framework (eddy-kernel: <exe>/../framework/python/paddle,
 * <exe>/../python/paddle); else the build tree's copy (unit tests). No plugin, a
 * failed dlopen (libcublas missing), no driver or no device: FW_CUDA stays
 * unregistered and the reason is kept for fw_device_unavailable_reason().
 */
#include "fw_plugin.h"
#include "fw_int.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pthread_once_t cuda_once = PTHREAD_ONCE_INIT;
static char cuda_reason[1024];

static int host_error_vset(int code, const char *fmt, va_list ap)
{
    char buf[512];
    vsnprintf(buf, sizeof(buf), fmt, ap);
    return fw_error_set(code, "%s", buf);
}

static const fw_plugin_host host = {
    .abi = FW_PLUGIN_ABI,
    .error_vset = host_error_vset,
    .float_to_half = fw_float_to_half,
    .half_to_float = fw_half_to_float,
    .float_to_bf16 = fw_float_to_bf16,
    .bf16_to_float = fw_bf16_to_float,
};

/* The plugin's path into out; false when none is to be tried. */
static bool plugin_path(char *out, size_t n)
{
    const char *env = getenv("EDDY_FW_CUDA_PLUGIN");
    Dl_info info;

    if (env && *env) {
        snprintf(out, n, "%s", env);
        return true;
    }
    if (dladdr((void *)&fw_backend_get, &info) && info.dli_fname && info.dli_fname[0] == '/') {
        /* next to paddle/_C*.so; for a binary that links the framework
         * (eddy-kernel), the package beside it as kernel_runner/kr_py.c
         * finds it: <exe>/../framework/python (build tree), <exe>/../python */
        static const char *const rel[] = {"", "/../framework/python/paddle", "/../python/paddle"};
        const char *slash = strrchr(info.dli_fname, '/');
        int len = (int)(slash - info.dli_fname);
        for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
            snprintf(out, n, "%.*s%s/%s", len, info.dli_fname, rel[i], FW_CUDA_PLUGIN_FILE);
            if (access(out, F_OK) == 0)
                return true;
        }
    }
#ifdef EDDY_FW_CUDA_BUILD_PLUGIN
    snprintf(out, n, "%s", EDDY_FW_CUDA_BUILD_PLUGIN);
    return true;
#else
    return false;
#endif
}

#ifndef EDDY_FW_CUDA_BUILT
static void load_cuda(void)
{
    (void)host;
    (void)plugin_path;
    snprintf(cuda_reason, sizeof(cuda_reason), "not compiled with CUDA");
}
#else
static void load_cuda(void)
{
    char path[4096];
    void *h;
    fw_plugin_open_fn open_fn;
    const fw_backend *b = NULL;
    char why[400] = "";
    int rc;

    if (!plugin_path(path, sizeof(path))) {
        snprintf(cuda_reason, sizeof(cuda_reason), "%s: not found next to the framework",
                 FW_CUDA_PLUGIN_FILE);
        return;
    }
    /* RTLD_LOCAL: the plugin's CUDA symbols stay out of the global scope. */
    h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) {
        const char *e = dlerror();
        snprintf(cuda_reason, sizeof(cuda_reason), "%.1000s", e ? e : path);
        return;
    }
    *(void **)&open_fn = dlsym(h, FW_CUDA_PLUGIN_ENTRY);
    if (open_fn == NULL) {
        snprintf(cuda_reason, sizeof(cuda_reason), "%.900s: no %s", path, FW_CUDA_PLUGIN_ENTRY);
        dlclose(h);
        return;
    }
    rc = open_fn(&host, FW_PLUGIN_ABI, &b, why, sizeof(why));
    if (rc < 0 || b == NULL || b->device != FW_CUDA) {
        snprintf(cuda_reason, sizeof(cuda_reason), "%s", why[0] ? why : "the CUDA plugin failed");
        /* kept loaded: the CUDA runtime does not support being unloaded */
        return;
    }
    if (fw_backend_register(b) < 0) {
        snprintf(cuda_reason, sizeof(cuda_reason), "%s", fw_error_last());
        return;
    }
    cuda_reason[0] = '\0';
}
#endif

void fw__backend_load_cuda(void) { pthread_once(&cuda_once, load_cuda); }

const char *fw__backend_load_reason(fw_device dev)
{
    if (dev != FW_CUDA)
        return "";
    fw__backend_load_cuda();
    return cuda_reason;
}
