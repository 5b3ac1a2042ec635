/*
 * gradcheck.h - shared helpers for framework tests: finite-difference
 * gradient checks, random tensors, comparisons against double references.
 *
 * API-STABLE
 *
 *     static int my_op(fw_tensor **out, fw_tensor *const *in, void *ctx)
 *     {
 *         fw_tensor *t = NULL;      // views inside the callback test
 *         int err = fw_transpose(&t, in[0], perm, 2);   // non-contiguous input
 *         if (err == 0) err = fw_exp(out, t);
 *         fw_tensor_unref(t);
 *         return err;
 *     }
 *     fw_tensor *x = fw_test_rand(FW_FLOAT64, shape, 2, 1, true);
 *     ck_assert_msg(fw_gradcheck(my_op, NULL, 1, &x, 1e-6, 1e-5, 1e-4) == 0,
 *                   "%s", fw_error_last());
 */
#ifndef FW_GRADCHECK_H
#define FW_GRADCHECK_H

#include "fw/ops.h"
#include "fw/tensor.h"

#include <stdbool.h>
#include <stdint.h>

/* Builds the op under test from the inputs into *out (any shape). */
typedef int (*fw_gradcheck_fn)(fw_tensor **out, fw_tensor *const *inputs, void *ctx);

/* Check the analytic gradient of fn against central finite differences.
 * inputs: float64 leaf tensors (contiguous); those with stop_gradient false
 * are checked. The loss is sum(out * w) with fixed pseudo-random weights w,
 * so every output element matters. For each input element,
 * numeric = (L(x+eps) - L(x-eps)) / (2 eps) must match the analytic
 * gradient within atol + rtol*|numeric|. Returns 0, or FW_EINVAL with a
 * message naming the input, element index and both values (fn errors are
 * passed through). Leaves the inputs' values as they were; their .grad is
 * cleared. */
int fw_gradcheck(fw_gradcheck_fn fn, void *ctx, int n_inputs, fw_tensor *const *inputs,
                 double eps, double atol, double rtol);

/* A contiguous tensor of uniform values in [lo, hi) from a fixed seed
 * (deterministic; no dependence on fwtrain's generator). requires_grad sets
 * stop_gradient false. Aborts the test (ck_abort) on failure. */
fw_tensor *fw_test_rand(fw_dtype dt, const int64_t *shape, int ndim, uint64_t seed,
                        bool requires_grad);
fw_tensor *fw_test_rand_range(fw_dtype dt, const int64_t *shape, int ndim, uint64_t seed,
                              double lo, double hi, bool requires_grad);

/* Deterministic uniform double in [0, 1) from a 64-bit state (splitmix64). */
double fw_test_uniform(uint64_t *state);

/* The tensor's elements (C order of its logical shape) as a malloc'd
 * double array; numel in *n if n not NULL. Aborts the test on failure. */
double *fw_test_doubles(const fw_tensor *t, int64_t *n);

/* Compare t (any dtype, any view) element-wise with ref[n] in C order:
 * |t - ref| <= atol + rtol*|ref| (NaN equals NaN). Returns true when all
 * match and the element count is n; otherwise false with a message in
 * fw_error_last() naming the first bad index and both values. */
bool fw_expect_close(const fw_tensor *t, const double *ref, int64_t n, double atol,
                     double rtol);

/* Whether t has exactly this shape (message in fw_error_last() if not). */
bool fw_expect_shape(const fw_tensor *t, const int64_t *shape, int ndim);

#endif
