/* graph_util.h - helpers for the graph and inference tests: write a model
 * (JSON text) and its parameters (safetensors) into a temporary directory,
 * deterministic pseudo-random tensors, output comparison. */
#ifndef GRAPH_UTIL_H
#define GRAPH_UTIL_H

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fw/fw.h"
#include "fw/safetensors.h"
#include "graph.h"

static char gu_dir[64];

static inline void gu_setup(void)
{
    strcpy(gu_dir, "/tmp/fw_graph_XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(gu_dir));
}

static inline void gu_teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf %s", gu_dir);
    ck_assert_int_eq(system(cmd), 0);
}

static unsigned gu_seed = 12345;

static inline float gu_rand(void)
{
    gu_seed = gu_seed * 1103515245u + 12345u;
    return ((float)((gu_seed >> 8) & 0xffff) / 65535.0f) * 2.0f - 1.0f;
}

/* A float32 tensor of pseudo-random values in [lo, lo + 2*scale]. */
static inline fw_tensor *gu_tensor(const int64_t *shape, int ndim, float scale, float shift)
{
    fw_tensor *t = NULL;
    ck_assert_int_eq(fw_tensor_empty(&t, FW_FLOAT32, shape, ndim), 0);
    float *p = fw_tensor_data(t);
    for (int64_t i = 0; i < fw_tensor_numel(t); i++)
        p[i] = gu_rand() * scale + shift;
    return t;
}

static inline void gu_path(char *buf, size_t n, const char *name)
{
    snprintf(buf, n, "%s/%s", gu_dir, name);
}

/* Write model JSON and parameters (names[i] -> ts[i]); fills the paths. */
static inline void gu_write(const char *json, const char *const *names, fw_tensor *const *ts,
                            size_t n, char *mpath, char *ppath)
{
    FILE *f;
    gu_path(mpath, 256, "m.pdmodel");
    gu_path(ppath, 256, "m.pdiparams");
    f = fopen(mpath, "w");
    ck_assert_ptr_nonnull(f);
    fputs(json, f);
    fclose(f);
    ck_assert_msg(fw_safetensors_save(ppath, names, ts, n, NULL, NULL, 0) == 0, "%s",
                  fw_error_last());
}

static inline fw_graph *gu_load(const char *mpath, const char *ppath)
{
    fw_graph *g = NULL;
    int err = fw_graph_load(&g, mpath, ppath);
    ck_assert_msg(err == 0, "load: %s", fw_error_last());
    return g;
}

/* max |a - b| / (1 + |b|) over two same-shape float32 tensors. */
static inline double gu_diff(fw_tensor *a, fw_tensor *b)
{
    fw_tensor *ca = NULL, *cb = NULL;
    double m = 0;
    ck_assert_int_eq(fw_tensor_ndim(a), fw_tensor_ndim(b));
    for (int d = 0; d < fw_tensor_ndim(a); d++)
        ck_assert_int_eq(fw_tensor_shape(a)[d], fw_tensor_shape(b)[d]);
    ck_assert_int_eq(fw_contiguous(&ca, a), 0);
    ck_assert_int_eq(fw_contiguous(&cb, b), 0);
    const float *pa = fw_tensor_data(ca), *pb = fw_tensor_data(cb);
    for (int64_t i = 0; i < fw_tensor_numel(a); i++) {
        double d = fabs((double)pa[i] - pb[i]) / (1.0 + fabs((double)pb[i]));
        if (!(d <= m))
            m = d;
    }
    fw_tensor_unref(ca);
    fw_tensor_unref(cb);
    return m;
}

#endif
