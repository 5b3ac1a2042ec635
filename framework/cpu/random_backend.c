/*
 * random_backend.c - the CPU backend's random family
 * (core/fw_backend_random.h): Philox fills over the per-element draws of
 * random/philox.c, split over the pool. Each chunk computes its elements
 * from (seed, base, index), so the numbers do not depend on the split.
 */
#include "core/fw_backend_random.h"
#include "core/fw_parallel.h"
#include "core_kernels.h"
#include "random/random_int.h"

#define CHUNK 256
#define GRAIN 16384

typedef enum { K_UNIFORM, K_NORMAL, K_TRUNC, K_BERNOULLI } fill_kind;

typedef struct fill_ctx {
    void *out;
    int type;                /* 0 float, 1 double, 2 uint8 */
    fill_kind kind;
    double p0, p1, a, b;     /* low/high or mean/std; truncation bounds */
    uint64_t seed, base;
} fill_ctx;

static void fill_chunk(void *vctx, int64_t begin, int64_t end)
{
    const fill_ctx *c = vctx;
    double buf[CHUNK];
    for (int64_t s = begin; s < end; s += CHUNK) {
        size_t m = (size_t)(end - s < CHUNK ? end - s : CHUNK);
        switch (c->kind) {
        case K_UNIFORM:
        case K_BERNOULLI:
            fw__random_uniform_at(buf, m, c->seed, c->base, (uint64_t)s);
            break;
        case K_NORMAL:
            fw__random_normal_at(buf, m, c->seed, c->base, (uint64_t)s);
            break;
        case K_TRUNC:
            fw__random_truncnorm_at(buf, m, c->seed, c->base, (uint64_t)s, c->a, c->b);
            break;
        }
        for (size_t j = 0; j < m; j++) {
            double v;
            if (c->kind == K_BERNOULLI) {
                ((uint8_t *)c->out)[s + (int64_t)j] = buf[j] < c->p0;
                continue;
            }
            if (c->kind == K_UNIFORM) {
                v = c->p0 + (c->p1 - c->p0) * buf[j];
            } else {
                v = c->p0 + c->p1 * buf[j];
                if (c->kind == K_TRUNC)   /* rounding of mean + std*z */
                    v = v < c->a * c->p1 + c->p0 ? c->a * c->p1 + c->p0
                      : v > c->b * c->p1 + c->p0 ? c->b * c->p1 + c->p0 : v;
            }
            if (c->type == 0) {
                float f = (float)v;
                if (c->kind == K_UNIFORM && f >= (float)c->p1) /* stay half-open */
                    f = (float)c->p0;
                ((float *)c->out)[s + (int64_t)j] = f;
            } else {
                if (c->kind == K_UNIFORM && v >= c->p1)
                    v = c->p0;
                ((double *)c->out)[s + (int64_t)j] = v;
            }
        }
    }
}

static int float_type(const char *op, fw_dtype dt)
{
    if (dt == FW_FLOAT32)
        return 0;
    if (dt == FW_FLOAT64)
        return 1;
    return fw_error_set(FW_EDTYPE, "%s: dtype %s not supported by the cpu kernels", op,
                        fw_dtype_name(dt));
}

static int run_fill(const char *op, fw_dtype dt, void *out, size_t n, fill_kind kind,
                    uint64_t seed, uint64_t base, double p0, double p1, double a, double b)
{
    int type = kind == K_BERNOULLI ? 2 : float_type(op, dt);
    if (type < 0)
        return type;
    fill_ctx c = {out, type, kind, p0, p1, a, b, seed, base};
    fw_parallel_for((int64_t)n, GRAIN, fill_chunk, &c);
    return 0;
}

static int k_uniform(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, double lo,
                     double hi)
{
    return run_fill("uniform", dt, out, n, K_UNIFORM, seed, base, lo, hi, 0, 0);
}

static int k_normal(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base,
                    double mean, double std)
{
    return run_fill("normal", dt, out, n, K_NORMAL, seed, base, mean, std, 0, 0);
}

static int k_truncated_normal(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base,
                              double mean, double std, double za, double zb)
{
    return run_fill("truncated_normal", dt, out, n, K_TRUNC, seed, base, mean, std, za, zb);
}

static int k_bernoulli(uint8_t *out, size_t n, uint64_t seed, uint64_t base, double p)
{
    return run_fill("bernoulli", FW_UINT8, out, n, K_BERNOULLI, seed, base, p, 0, 0, 0);
}

static int k_randint(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base,
                     int64_t low, uint64_t range)
{
    if (dt == FW_INT64) {
        for (size_t i = 0; i < n; i++)
            ((int64_t *)out)[i] = fw__random_randint_at(seed, base, i, low, range);
    } else if (dt == FW_INT32) {
        for (size_t i = 0; i < n; i++)
            ((int32_t *)out)[i] = (int32_t)fw__random_randint_at(seed, base, i, low, range);
    } else {
        return fw_error_set(FW_EDTYPE, "randint: dtype %s not supported by the cpu kernels",
                            fw_dtype_name(dt));
    }
    return 0;
}

static int k_randperm(int64_t *out, size_t n, uint64_t seed, uint64_t base)
{
    for (size_t i = 0; i < n; i++)
        out[i] = (int64_t)i;
    /* Fisher-Yates from the top: swap i with a uniform j in [0, i]. */
    for (size_t i = n; i-- > 1;) {
        uint64_t x = fw__random_bits64_at(seed, base, i);
        size_t j = (size_t)(((unsigned __int128)x * (i + 1)) >> 64);
        int64_t t = out[i];
        out[i] = out[j];
        out[j] = t;
    }
    return 0;
}

const struct fw_random_kernels fw__cpu_random = {
    .uniform = k_uniform,
    .normal = k_normal,
    .truncated_normal = k_truncated_normal,
    .bernoulli = k_bernoulli,
    .randint = k_randint,
    .randperm = k_randperm,
};
