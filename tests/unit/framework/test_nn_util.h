/*
 * test_nn_util.h - helpers shared by the nn op tests (test_nn_*.c).
 */
#ifndef TEST_NN_UTIL_H
#define TEST_NN_UTIL_H

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/nn.h"
#include "fw/ops.h"
#include "gradcheck.h"

#define NN_DTYPES 2
static const fw_dtype nn_dtypes[NN_DTYPES] = {FW_FLOAT64, FW_FLOAT32};

/* Integer uniform in [lo, hi] from the test's state. */
static inline int64_t nn_randint(uint64_t *st, int64_t lo, int64_t hi)
{
    return lo + (int64_t)(fw_test_uniform(st) * (double)(hi - lo + 1));
}

/* A random tensor in [-1, 1). */
static inline fw_tensor *nn_rand(fw_dtype dt, const int64_t *shape, int ndim, uint64_t seed,
                                 bool grad)
{
    return fw_test_rand_range(dt, shape, ndim, seed, -1.0, 1.0, grad);
}

/* The same values as t, in another dtype (a leaf). */
static inline fw_tensor *nn_as(const fw_tensor *t, fw_dtype dt, bool grad)
{
    int64_t n = 0;
    double *v = fw_test_doubles(t, &n);
    fw_tensor *r = NULL;
    ck_assert_int_eq(fw_tensor_from_doubles(&r, v, dt, fw_tensor_shape(t), fw_tensor_ndim(t)),
                     0);
    free(v);
    if (grad)
        fw_tensor_set_stop_gradient(r, false);
    return r;
}

static inline fw_tensor *nn_labels(const int64_t *v, const int64_t *shape, int ndim,
                                   fw_dtype dt)
{
    fw_tensor *r = NULL;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    if (dt == FW_INT64) {
        ck_assert_int_eq(fw_tensor_from_data(&r, v, FW_INT64, shape, ndim), 0);
    } else {
        int32_t *w = malloc(sizeof(int32_t) * (size_t)(n > 0 ? n : 1));
        for (int64_t i = 0; i < n; i++)
            w[i] = (int32_t)v[i];
        ck_assert_int_eq(fw_tensor_from_data(&r, w, FW_INT32, shape, ndim), 0);
        free(w);
    }
    return r;
}

/* Tolerances for comparing a dtype's result with a float64 reference. */
static inline double nn_tol(fw_dtype dt)
{
    return dt == FW_FLOAT32 ? 2e-4 : 1e-10;
}

#define NN_EXPECT_CLOSE(t, ref, n, dt)                                                        \
    ck_assert_msg(fw_expect_close((t), (ref), (n), nn_tol(dt), nn_tol(dt)), "%s (%s)",       \
                  fw_error_last(), fw_dtype_name(dt))

#define NN_GRADCHECK(fn, ctx, n, ins)                                                         \
    ck_assert_msg(fw_gradcheck((fn), (ctx), (n), (ins), 1e-6, 1e-6, 1e-4) == 0, "%s",         \
                  fw_error_last())

/* Expect an error code and a message containing `needle`. */
#define NN_EXPECT_ERR(call, code, needle)                                                     \
    do {                                                                                      \
        int rc_ = (call);                                                                     \
        ck_assert_msg(rc_ == (code), "expected %d, got %d (%s)", (code), rc_,                 \
                      fw_error_last());                                                       \
        ck_assert_msg(strstr(fw_error_last(), (needle)) != NULL,                              \
                      "message '%s' lacks '%s'", fw_error_last(), (needle));                  \
    } while (0)

static inline void nn_unref_all(fw_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        fw_tensor_unref(ts[i]);
}

#endif
