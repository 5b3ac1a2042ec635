/* gradcheck.c - finite-difference gradient checks and test helpers. */
#include "gradcheck.h"

#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double fw_test_uniform(uint64_t *state) { return (double)(splitmix(state) >> 11) * 0x1.0p-53; }

fw_tensor *fw_test_rand_range(fw_dtype dt, const int64_t *shape, int ndim, uint64_t seed,
                              double lo, double hi, bool requires_grad)
{
    int64_t n = 1;
    uint64_t st = seed * 7919 + 17;
    double *v;
    fw_tensor *t = NULL;

    for (int i = 0; i < ndim; i++)
        n *= shape[i];
    v = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
    ck_assert_ptr_nonnull(v);
    for (int64_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * fw_test_uniform(&st);
    if (fw_tensor_from_doubles(&t, v, dt, shape, ndim) < 0)
        ck_abort_msg("fw_test_rand: %s", fw_error_last());
    free(v);
    if (requires_grad && fw_tensor_set_stop_gradient(t, false) < 0)
        ck_abort_msg("fw_test_rand: %s", fw_error_last());
    return t;
}

fw_tensor *fw_test_rand(fw_dtype dt, const int64_t *shape, int ndim, uint64_t seed,
                        bool requires_grad)
{
    return fw_test_rand_range(dt, shape, ndim, seed, -1.0, 1.0, requires_grad);
}

double *fw_test_doubles(const fw_tensor *t, int64_t *n)
{
    int64_t k = fw_tensor_numel(t);
    double *v = malloc(sizeof(double) * (size_t)(k > 0 ? k : 1));

    ck_assert_ptr_nonnull(v);
    if (fw_tensor_to_doubles(v, k, t) < 0)
        ck_abort_msg("fw_test_doubles: %s", fw_error_last());
    if (n)
        *n = k;
    return v;
}

bool fw_expect_close(const fw_tensor *t, const double *ref, int64_t n, double atol, double rtol)
{
    int64_t k;
    double *v;

    if (t == NULL) {
        fw_error_set(FW_EINVAL, "expect_close: tensor is NULL");
        return false;
    }
    if (fw_tensor_numel(t) != n) {
        fw_error_set(FW_ESHAPE, "expect_close: %lld elements, expected %lld",
                     (long long)fw_tensor_numel(t), (long long)n);
        return false;
    }
    v = fw_test_doubles(t, &k);
    for (int64_t i = 0; i < n; i++) {
        if (isnan(v[i]) && isnan(ref[i]))
            continue;
        if (isinf(ref[i]) && v[i] == ref[i])
            continue;
        if (!(fabs(v[i] - ref[i]) <= atol + rtol * fabs(ref[i]))) {
            fw_error_set(FW_EINVAL, "expect_close: element %lld is %.10g, expected %.10g",
                         (long long)i, v[i], ref[i]);
            free(v);
            return false;
        }
    }
    free(v);
    return true;
}

bool fw_expect_shape(const fw_tensor *t, const int64_t *shape, int ndim)
{
    bool ok = fw_tensor_ndim(t) == ndim;
    for (int i = 0; ok && i < ndim; i++)
        ok = fw_tensor_shape(t)[i] == shape[i];
    if (!ok) {
        char a[128], b[128];
        size_t u = 0;
        u += (size_t)snprintf(b + u, sizeof(b) - u, "[");
        for (int i = 0; i < ndim && u < sizeof(b); i++)
            u += (size_t)snprintf(b + u, sizeof(b) - u, i ? ", %lld" : "%lld", (long long)shape[i]);
        if (u < sizeof(b))
            snprintf(b + u, sizeof(b) - u, "]");
        fw_error_set(FW_ESHAPE, "expect_shape: got %s, expected %s",
                     fw_tensor_shape_str(a, sizeof(a), t), b);
    }
    return ok;
}

/* L = sum(out * w) with w from a fixed seed; *loss gets its value. */
static int eval_loss(double *loss, fw_tensor **out_keep, fw_gradcheck_fn fn, void *ctx,
                     fw_tensor *const *inputs)
{
    fw_tensor *out = NULL;
    int err;
    int64_t n;
    double *v;
    uint64_t st = 12345;

    if ((err = fn(&out, inputs, ctx)) < 0)
        return err;
    v = fw_test_doubles(out, &n);
    *loss = 0;
    for (int64_t i = 0; i < n; i++)
        *loss += v[i] * (fw_test_uniform(&st) * 2.0 - 1.0);
    free(v);
    if (out_keep)
        *out_keep = out;
    else
        fw_tensor_unref(out);
    return 0;
}

int fw_gradcheck(fw_gradcheck_fn fn, void *ctx, int n_inputs, fw_tensor *const *inputs,
                 double eps, double atol, double rtol)
{
    fw_tensor *out = NULL, *w = NULL;
    double loss;
    int err;

    for (int i = 0; i < n_inputs; i++) {
        if (fw_tensor_dtype(inputs[i]) != FW_FLOAT64 || !fw_tensor_is_contiguous(inputs[i]))
            return fw_error_set(FW_EINVAL, "gradcheck: input %d must be a contiguous float64 "
                                           "tensor", i);
        fw_tensor_clear_grad(inputs[i], false);
    }
    /* analytic: backward of sum(out * w) is w */
    if ((err = eval_loss(&loss, &out, fn, ctx, inputs)) < 0)
        return err;
    {
        int64_t n = fw_tensor_numel(out);
        double *wv = malloc(sizeof(double) * (size_t)(n > 0 ? n : 1));
        uint64_t st = 12345;
        for (int64_t i = 0; i < n; i++)
            wv[i] = fw_test_uniform(&st) * 2.0 - 1.0;
        err = fw_tensor_from_doubles(&w, wv, fw_tensor_dtype(out), fw_tensor_shape(out),
                                     fw_tensor_ndim(out));
        free(wv);
        if (err == 0) {
            if (fw_tensor_stop_gradient(out))
                err = fw_error_set(FW_EINVAL, "gradcheck: output has no grad history");
            else
                err = fw_tensor_backward(out, w, false);
        }
        fw_tensor_unref(w);
        fw_tensor_unref(out);
        if (err < 0)
            return err;
    }
    /* numeric */
    for (int i = 0; i < n_inputs; i++) {
        fw_tensor *x = inputs[i];
        if (fw_tensor_stop_gradient(x))
            continue;
        int64_t n = fw_tensor_numel(x);
        double *xv = fw_tensor_data(x);
        double *ga = NULL;
        fw_tensor *g = fw_tensor_grad(x);
        if (n == 0)
            continue;
        if (g == NULL) {
            ga = calloc((size_t)n, sizeof(double));  /* no grad reached: zeros */
        } else {
            ga = fw_test_doubles(g, NULL);
        }
        bool was = fw_set_grad_enabled(false);
        for (int64_t k = 0; k < n && err == 0; k++) {
            double orig = xv[k], lp, lm;
            xv[k] = orig + eps;
            err = eval_loss(&lp, NULL, fn, ctx, inputs);
            xv[k] = orig - eps;
            if (err == 0)
                err = eval_loss(&lm, NULL, fn, ctx, inputs);
            xv[k] = orig;
            if (err < 0)
                break;
            double num = (lp - lm) / (2 * eps);
            if (!(fabs(num - ga[k]) <= atol + rtol * fabs(num)))
                err = fw_error_set(FW_EINVAL, "gradcheck: input %d element %lld: analytic %.10g, "
                                              "numeric %.10g", i, (long long)k, ga[k], num);
        }
        fw_set_grad_enabled(was);
        free(ga);
        fw_tensor_clear_grad(x, false);
        if (err < 0)
            return err;
    }
    return 0;
}
