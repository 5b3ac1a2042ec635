/*
 * test_index_util.h - small helpers shared by the test_index_*.c suites
 * (fwidx): random shapes, index arithmetic for naive references, tensors
 * from doubles, transposed (non-contiguous) views with a given shape, and
 * error assertions.
 */
#ifndef TEST_INDEX_UTIL_H
#define TEST_INDEX_UTIL_H

#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/index.h"
#include "fw/ops.h"
#include "fw/tensor.h"
#include "gradcheck.h"

/* Finite-difference step and tolerances of the suites' float64 gradient
 * checks (fw_gradcheck). */
#define TU_EPS  1e-6
#define TU_ATOL 1e-6
#define TU_RTOL 1e-5

/* fn's backward (one input, with ctx) matches finite differences at a
 * random float64 x of `shape`, drawn from `seed`. */
static inline void tu_gradcheck1(fw_gradcheck_fn fn, void *ctx, const int64_t *shape, int nd,
                                 uint64_t seed)
{
    fw_tensor *x = fw_test_rand(FW_FLOAT64, shape, nd, seed, true);
    ck_assert_msg(fw_gradcheck(fn, ctx, 1, &x, TU_EPS, TU_ATOL, TU_RTOL) == 0, "%s",
                  fw_error_last());
    fw_tensor_unref(x);
}

#define CK_OK(expr)                                                             \
    do {                                                                        \
        int rc_ = (expr);                                                       \
        ck_assert_msg(rc_ == 0, "%s -> %d: %s", #expr, rc_, fw_error_last());   \
    } while (0)

/* expr fails with `code` and the message contains each of the strings. */
#define CK_ERR(expr, code, ...)                                                 \
    do {                                                                        \
        int rc_ = (expr);                                                       \
        const char *want_[] = {__VA_ARGS__};                                    \
        ck_assert_msg(rc_ == (code), "%s -> %d, expected %d (%s)", #expr, rc_,  \
                      (code), fw_error_last());                                 \
        for (size_t k_ = 0; k_ < sizeof(want_) / sizeof(want_[0]); k_++)        \
            ck_assert_msg(strstr(fw_error_last(), want_[k_]) != NULL,           \
                          "%s: message \"%s\" lacks \"%s\"", #expr,             \
                          fw_error_last(), want_[k_]);                          \
    } while (0)

#define CK_CLOSE(t, ref, n, atol, rtol) \
    ck_assert_msg(fw_expect_close((t), (ref), (n), (atol), (rtol)), "%s", fw_error_last())
#define CK_SHAPE(t, shape, nd) \
    ck_assert_msg(fw_expect_shape((t), (shape), (nd)), "%s", fw_error_last())

static inline int64_t tu_rand_int(uint64_t *st, int64_t lo, int64_t hi) /* [lo, hi] */
{
    return lo + (int64_t)(fw_test_uniform(st) * (double)(hi - lo + 1));
}

static inline void tu_rand_shape(int64_t *shape, int nd, uint64_t *st, int64_t lo, int64_t hi)
{
    for (int d = 0; d < nd; d++)
        shape[d] = tu_rand_int(st, lo, hi);
}

static inline int64_t tu_numel(const int64_t *shape, int nd)
{
    int64_t n = 1;
    for (int d = 0; d < nd; d++)
        n *= shape[d];
    return n;
}

static inline void tu_unravel(int64_t *c, int64_t lin, const int64_t *shape, int nd)
{
    for (int d = nd - 1; d >= 0; d--) {
        c[d] = shape[d] ? lin % shape[d] : 0;
        lin = shape[d] ? lin / shape[d] : 0;
    }
}

static inline int64_t tu_ravel(const int64_t *c, const int64_t *shape, int nd)
{
    int64_t lin = 0;
    for (int d = 0; d < nd; d++)
        lin = lin * shape[d] + c[d];
    return lin;
}

static inline fw_tensor *tu_tensor(const double *v, fw_dtype dt, const int64_t *shape, int nd)
{
    fw_tensor *t = NULL;
    CK_OK(fw_tensor_from_doubles(&t, v, dt, shape, nd));
    return t;
}

/* Random values of `shape` in dtype dt: floats uniform in [-2, 2), ints in
 * [0, 10), bool 0/1. */
static inline fw_tensor *tu_rand(fw_dtype dt, const int64_t *shape, int nd, uint64_t seed)
{
    if (dt == FW_BOOL || !fw_dtype_is_float(dt) || dt == FW_FLOAT16 || dt == FW_BFLOAT16) {
        /* exactly representable values: bool 0/1, ints 0..9, halves k/4 */
        int64_t n = tu_numel(shape, nd);
        uint64_t st = seed * 31 + 7;
        double *v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        for (int64_t i = 0; i < n; i++)
            v[i] = dt == FW_BOOL ? (double)tu_rand_int(&st, 0, 1)
                 : !fw_dtype_is_float(dt) ? (double)tu_rand_int(&st, 0, 9)
                 : (double)tu_rand_int(&st, -16, 16) / 4;
        fw_tensor *t = tu_tensor(v, dt, shape, nd);
        free(v);
        return t;
    }
    return fw_test_rand_range(dt, shape, nd, seed, -2, 2, false);
}

/* A non-contiguous view with logical `shape` (rank >= 2): the base holds
 * the first and last axes swapped and the view swaps them back. Takes base. */
static inline fw_tensor *tu_transposed_view(fw_tensor *base)
{
    fw_tensor *v = NULL;
    int nd = fw_tensor_ndim(base);
    CK_OK(fw_swapaxes(&v, base, 0, nd - 1));
    fw_tensor_unref(base);
    return v;
}

/* Random tensor of `shape` that is a non-contiguous view when rank >= 2. */
static inline fw_tensor *tu_rand_view(fw_dtype dt, const int64_t *shape, int nd,
                                      uint64_t seed)
{
    int64_t bs[FW_MAX_DIMS];
    if (nd < 2)
        return tu_rand(dt, shape, nd, seed);
    memcpy(bs, shape, sizeof(int64_t) * (size_t)nd);
    bs[0] = shape[nd - 1];
    bs[nd - 1] = shape[0];
    return tu_transposed_view(tu_rand(dt, bs, nd, seed));
}

static inline void tu_free(fw_tensor **ts, int n)
{
    for (int i = 0; i < n; i++)
        fw_tensor_unref(ts[i]);
}

static const fw_dtype tu_all_dtypes[] = {FW_FLOAT32, FW_FLOAT64, FW_FLOAT16, FW_BFLOAT16,
                                         FW_INT32,   FW_INT64,   FW_BOOL,    FW_UINT8};
#define TU_N_DTYPES 8

#endif
