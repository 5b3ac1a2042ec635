/*
 * creation.c - random creation ops (fw_rand, fw_randn, ...; fw/random.h):
 * a new contiguous tensor on the default device (fw_device_default()),
 * filled by that device's random family (core/fw_backend_random.h). The
 * generator stays here on the host: each op reserves its counter blocks
 * and hands the kernel (seed, first block).
 */
#include "fw/device.h"
#include "fw/ops.h"
#include "fw/random.h"
#include "../core/fw_backend_random.h"
#include "../core/fw_int.h"
#include "random_int.h"

/* A new tensor on the default device and that device's random family. */
static int new_on_default(fw_tensor **t, const struct fw_random_kernels **k, fw_dtype dt,
                          const int64_t *shape, int ndim, const char *op)
{
    fw_device dev = fw_device_default();
    const fw_backend *b = fw_backend_require(dev, op);

    *t = NULL;
    if (b == NULL || (*k = fw_backend_family(b, b->random, op)) == NULL)
        return FW_EDEVICE;
    return fw_tensor_empty_on(t, dev, dt, shape, ndim);
}

/* Seed and first counter block of an n-element fill. */
static void reserve(fw_generator *g, size_t n, uint64_t *seed, uint64_t *base)
{
    *seed = fw_generator_get_seed(g);
    *base = fw_generator_reserve(g, fw_random_blocks(n, false));
}

typedef enum { C_UNIFORM, C_NORMAL } cdist;

static int float_tensor(fw_tensor **out, const int64_t *shape, int ndim, fw_dtype dt,
                        cdist d, double p0, double p1, fw_generator *g, const char *what)
{
    const struct fw_random_kernels *k = NULL;
    fw_tensor *t = NULL;
    uint64_t seed, base;
    int err;

    *out = NULL;
    if (!fw_dtype_is_float(dt))
        return fw_error_set(FW_EDTYPE, "%s: dtype %s is not a floating-point dtype", what,
                            fw_dtype_name(dt));
    if ((err = d == C_UNIFORM ? fw__random_check_uniform(p0, p1)
                              : fw__random_check_normal(p0, p1)) < 0)
        return err;
    fw_dtype gen = dt == FW_FLOAT64 ? FW_FLOAT64 : FW_FLOAT32;
    if ((err = new_on_default(&t, &k, gen, shape, ndim, what)) < 0)
        return err;
    size_t n = (size_t)t->numel;
    reserve(g, n, &seed, &base);
    if (d == C_UNIFORM)
        err = k->uniform(gen, fw__ptr(t), n, seed, base, p0, p1);
    else
        err = k->normal(gen, fw__ptr(t), n, seed, base, p0, p1);
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
    if ((err = fw__random_check_randint(low, high, dtype == FW_INT32)) < 0)
        return err;
    const struct fw_random_kernels *k = NULL;
    uint64_t seed, base;
    if ((err = new_on_default(&t, &k, dtype, shape, ndim, "randint")) < 0)
        return err;
    size_t n = (size_t)t->numel;
    reserve(g, n, &seed, &base);
    err = k->randint(dtype, fw__ptr(t), n, seed, base, low, (uint64_t)high - (uint64_t)low);
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
    const struct fw_random_kernels *k = NULL;
    uint64_t seed, base;
    if ((err = new_on_default(&t, &k, FW_INT64, &n, 1, "randperm")) < 0)
        return err;
    reserve(g, (size_t)n, &seed, &base);
    err = k->randperm(fw__ptr(t), (size_t)n, seed, base);
    if (err == 0 && dtype == FW_INT32) {
        fw_tensor *t32 = NULL;
        bool prev = fw_set_grad_enabled(false);
        err = fw_cast(&t32, t, FW_INT32);
        fw_set_grad_enabled(prev);
        fw_tensor_unref(t);
        t = t32;
    }
    if (err < 0) {
        fw_tensor_unref(t);
        return err;
    }
    *out = t;
    return 0;
}
