/*
 * creation.c - random creation ops (fw_rand, fw_randn, ...; fw/random.h):
 * a new contiguous tensor filled by the raw Philox fills.
 */
#include "fw/ops.h"
#include "fw/random.h"

typedef enum { C_UNIFORM, C_NORMAL } cdist;

static int float_tensor(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dt,
                        cdist d, double p0, double p1, fw_generator *g, const char *what)
{
    fw_tensor *t = NULL;
    int err;

    *out = NULL;
    if (!fw_dtype_is_float(dt))
        return fw_error_set(FW_EDTYPE, "%s: dtype %s is not a floating-point dtype", what,
                            fw_dtype_name(dt));
    fw_dtype gen = dt == FW_FLOAT64 ? FW_FLOAT64 : FW_FLOAT32;
    if ((err = fw_tensor_empty(&t, gen, shape, ndim)) < 0)
        return err;
    size_t n = (size_t)fw_tensor_numel(t);
    void *p = fw_tensor_data(t);
    if (d == C_UNIFORM)
        err = gen == FW_FLOAT32 ? fw_random_uniform_f32(g, p, n, p0, p1)
                                : fw_random_uniform_f64(g, p, n, p0, p1);
    else
        err = gen == FW_FLOAT32 ? fw_random_normal_f32(g, p, n, p0, p1)
                                : fw_random_normal_f64(g, p, n, p0, p1);
    if (err == 0 && gen != dt) {          /* float16/bfloat16: round the draws */
        fw_tensor *c = NULL;
        bool prev = fw_set_grad_enabled(false);
        err = fw_cast(&c, t, dt);
        fw_set_grad_enabled(prev);
        fw_tensor_unref(t);
        t = c;
    }
    if (err < 0) {
        fw_tensor_unref(t);
        return err;
    }
    *out = t;
    return 0;
}

int fw_rand(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, fw_generator *g)
{
    return float_tensor(out, shape, ndim, dtype, C_UNIFORM, 0.0, 1.0, g, "rand");
}

int fw_randn(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, fw_generator *g)
{
    return float_tensor(out, shape, ndim, dtype, C_NORMAL, 0.0, 1.0, g, "randn");
}

int fw_uniform(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, double min,
               double max, fw_generator *g)
{
    return float_tensor(out, shape, ndim, dtype, C_UNIFORM, min, max, g, "uniform");
}

int fw_normal(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dtype, double mean,
              double std, fw_generator *g)
{
    return float_tensor(out, shape, ndim, dtype, C_NORMAL, mean, std, g, "normal");
}

int fw_randint(fw_tensor **out, int64_t low, int64_t high, const int64_t *shape, int ndim,
               fw_dtype dtype, fw_generator *g)
{
    fw_tensor *t = NULL;
    int err;

    *out = NULL;
    if (dtype != FW_INT32 && dtype != FW_INT64)
        return fw_error_set(FW_EDTYPE, "randint: dtype %s not supported (int32, int64)",
                            fw_dtype_name(dtype));
    if (!(low < high))
        return fw_error_set(FW_EINVAL, "randint: need low < high, got [%lld, %lld)",
                            (long long)low, (long long)high);
    if ((err = fw_tensor_empty(&t, dtype, shape, ndim)) < 0)
        return err;
    size_t n = (size_t)fw_tensor_numel(t);
    err = dtype == FW_INT32 ? fw_random_randint_i32(g, fw_tensor_data(t), n, low, high)
                            : fw_random_randint_i64(g, fw_tensor_data(t), n, low, high);
    if (err < 0) {
        fw_tensor_unref(t);
        return err;
    }
    *out = t;
    return 0;
}

int fw_randperm(fw_tensor **out, int64_t n, fw_dtype dtype, fw_generator *g)
{
    fw_tensor *t = NULL;
    int err;

    *out = NULL;
    if (dtype != FW_INT32 && dtype != FW_INT64)
        return fw_error_set(FW_EDTYPE, "randperm: dtype %s not supported (int32, int64)",
                            fw_dtype_name(dtype));
    if (n < 0 || (dtype == FW_INT32 && n > INT32_MAX))
        return fw_error_set(FW_EINVAL, "randperm: n %lld out of range", (long long)n);
    if ((err = fw_tensor_empty(&t, FW_INT64, &n, 1)) < 0)
        return err;
    fw_random_randperm_i64(g, fw_tensor_data(t), (size_t)n);
    if (dtype == FW_INT32) {
        fw_tensor *t32 = NULL;
        err = fw_tensor_empty(&t32, FW_INT32, &n, 1);
        if (err == 0) {
            const int64_t *src = fw_tensor_data(t);
            int32_t *dst = fw_tensor_data(t32);
            for (int64_t i = 0; i < n; i++)
                dst[i] = (int32_t)src[i];
        }
        fw_tensor_unref(t);
        if (err < 0)
            return err;
        t = t32;
    }
    *out = t;
    return 0;
}
