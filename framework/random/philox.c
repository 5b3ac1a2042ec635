/*
 * philox.c - Philox4x32-10 generators and raw fills (see fw/random.h).
 *
 * Counter layout of one block: ctr = {block lo, block hi, attempt, 0},
 * key = {seed lo, seed hi}. A 53-bit uniform double comes from two lanes, so
 * one block yields two uniforms or (Box-Muller) two normals.
 */
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "fw/random.h"
#include "random_int.h"
#include "../core/fw_backend_random.h"

struct fw_generator {
    _Atomic uint64_t seed;
    _Atomic uint64_t offset;    /* next free counter block */
    int is_default;
};

static fw_generator default_gen = { 0, 0, 1 };

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

void fw_philox4x32_10(uint32_t out[4], const uint32_t ctr[4], const uint32_t key[2])
{
    uint32_t c0 = ctr[0], c1 = ctr[1], c2 = ctr[2], c3 = ctr[3];
    uint32_t k0 = key[0], k1 = key[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0; c1 = n1; c2 = n2; c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0; out[1] = c1; out[2] = c2; out[3] = c3;
}

int fw_generator_new(fw_generator **out, uint64_t seed)
{
    fw_generator *g;

    *out = NULL;
    if ((g = calloc(1, sizeof(*g))) == NULL)
        return fw_error_set(FW_ENOMEM, "generator");
    atomic_init(&g->seed, seed);
    atomic_init(&g->offset, 0);
    *out = g;
    return 0;
}

void fw_generator_free(fw_generator *g)
{
    if (g != NULL && !g->is_default)
        free(g);
}

void fw_generator_seed(fw_generator *g, uint64_t seed)
{
    fw_generator_set_state(g, seed, 0);
}

uint64_t fw_generator_get_seed(const fw_generator *g)
{
    fw_generator *gg = (fw_generator *)(g ? g : &default_gen);
    return atomic_load(&gg->seed);
}

uint64_t fw_generator_get_offset(const fw_generator *g)
{
    fw_generator *gg = (fw_generator *)(g ? g : &default_gen);
    return atomic_load(&gg->offset);
}

void fw_generator_set_state(fw_generator *g, uint64_t seed, uint64_t offset)
{
    if (g == NULL)
        g = &default_gen;
    atomic_store(&g->seed, seed);
    atomic_store(&g->offset, offset);
}

uint64_t fw_generator_reserve(fw_generator *g, uint64_t nblocks)
{
    if (g == NULL)
        g = &default_gen;
    return atomic_fetch_add(&g->offset, nblocks);
}

fw_generator *fw_default_generator(void)
{
    return &default_gen;
}

void fw_seed(uint64_t seed)
{
    fw_generator_seed(&default_gen, seed);
}

/* ---- per-element draws: value of element i of a fill at `base` ---- */

static inline void block(uint32_t out[4], uint64_t seed, uint64_t blk, uint32_t attempt)
{
    uint32_t ctr[4] = { (uint32_t)blk, (uint32_t)(blk >> 32), attempt, 0 };
    uint32_t key[2] = { (uint32_t)seed, (uint32_t)(seed >> 32) };
    fw_philox4x32_10(out, ctr, key);
}

static inline double u53(uint32_t hi, uint32_t lo)
{
    uint64_t x = (((uint64_t)hi << 32) | lo) >> 11;
    return (double)x * 0x1.0p-53;            /* [0, 1) */
}

/* One block gives two values: lanes (0,1) for even i, (2,3) for odd i. */
static void uniform_pair(double u[2], uint64_t seed, uint64_t blk)
{
    uint32_t r[4];
    block(r, seed, blk, 0);
    u[0] = u53(r[0], r[1]);
    u[1] = u53(r[2], r[3]);
}

static void normal_pair(double z[2], uint64_t seed, uint64_t blk, uint32_t attempt)
{
    uint32_t r[4];
    block(r, seed, blk, attempt);
    double u1 = 1.0 - u53(r[0], r[1]);      /* (0, 1]: log is finite */
    double u2 = u53(r[2], r[3]);
    double rad = sqrt(-2.0 * log(u1));
    z[0] = rad * cos(2.0 * M_PI * u2);
    z[1] = rad * sin(2.0 * M_PI * u2);
}

/* Fill elements [start, start+n) of a fill whose first block is `base`. The
 * chunked form is what a parallel loop calls; tests call it with odd split
 * points to show values do not depend on the split. */
void fw__random_uniform_at(double *out, size_t n, uint64_t seed, uint64_t base, uint64_t start)
{
    size_t j = 0;
    double u[2];
    while (j < n) {
        uint64_t i = start + j;
        uniform_pair(u, seed, base + i / 2);
        out[j++] = u[i & 1];
        if ((i & 1) == 0 && j < n)
            out[j++] = u[1];
    }
}

void fw__random_normal_at(double *out, size_t n, uint64_t seed, uint64_t base, uint64_t start)
{
    size_t j = 0;
    double z[2];
    while (j < n) {
        uint64_t i = start + j;
        normal_pair(z, seed, base + i / 2, 0);
        out[j++] = z[i & 1];
        if ((i & 1) == 0 && j < n)
            out[j++] = z[1];
    }
}

/* Truncated standard normal in [a, b]: element i tries attempts 0, 1, ... of
 * block base + i (both Box-Muller values of an attempt, in order). */
void fw__random_truncnorm_at(double *out, size_t n, uint64_t seed, uint64_t base,
                             uint64_t start, double a, double b)
{
    for (size_t j = 0; j < n; j++) {
        double z[2], v = 0.5 * (a + b);
        for (uint32_t att = 0; att < 100000; att++) {
            normal_pair(z, seed, base + start + j, att);
            if (z[0] >= a && z[0] <= b) { v = z[0]; break; }
            if (z[1] >= a && z[1] <= b) { v = z[1]; break; }
        }
        out[j] = v;
    }
}

/* 64 random bits of element i: lanes as in uniform_pair. */
uint64_t fw__random_bits64_at(uint64_t seed, uint64_t base, uint64_t i)
{
    uint32_t r[4];
    block(r, seed, base + i / 2, 0);
    return (i & 1) ? (((uint64_t)r[2] << 32) | r[3]) : (((uint64_t)r[0] << 32) | r[1]);
}

int64_t fw__random_randint_at(uint64_t seed, uint64_t base, uint64_t i, int64_t low,
                              uint64_t range)
{
    uint64_t x = fw__random_bits64_at(seed, base, i);
    uint64_t r = (uint64_t)(((unsigned __int128)x * range) >> 64);
    return (int64_t)((uint64_t)low + r);
}

/* ---- raw fills on host memory ----
 * A fill reserves its counter blocks, then the CPU backend's random family
 * (cpu/random_backend.c, the layout of core/fw_backend_random.h) computes
 * each element from (seed, base, index). */

static const struct fw_random_kernels *cpu_random(void)
{
    return fw_backend_get(FW_CPU)->random;
}

typedef enum { K_UNIFORM, K_NORMAL } fill_kind;

static int run_fill(fw_generator *g, void *out, fw_dtype dt, size_t n, fill_kind kind,
                    double p0, double p1)
{
    uint64_t seed = fw_generator_get_seed(g);
    uint64_t base = fw_generator_reserve(g, fw_random_blocks(n, false));
    return kind == K_UNIFORM ? cpu_random()->uniform(dt, out, n, seed, base, p0, p1)
                             : cpu_random()->normal(dt, out, n, seed, base, p0, p1);
}

int fw__random_check_uniform(double low, double high)
{
    if (!isfinite(low) || !isfinite(high) || !(low < high))
        return fw_error_set(FW_EINVAL, "uniform: need finite low < high, got [%g, %g)", low, high);
    return 0;
}

int fw__random_check_normal(double mean, double std)
{
    if (!isfinite(mean) || !isfinite(std) || std < 0)
        return fw_error_set(FW_EINVAL, "normal: need finite mean and std >= 0, got mean %g "
                            "std %g", mean, std);
    return 0;
}

/* What every two-parameter filler does: refuse a NULL output and bad
 * parameters (`check`), then fill `n` values of `type` (0 f32, 1 f64). */
static int fill_checked(const char *fn, fw_generator *g, void *out, fw_dtype dt, size_t n,
                        fill_kind kind, double p0, double p1, int (*check)(double, double))
{
    int err;

    if (out == NULL && n > 0)
        return fw_error_set(FW_EINVAL, "%s: NULL output for %zu values", fn, n);
    if ((err = check(p0, p1)) < 0)
        return err;
    return run_fill(g, out, dt, n, kind, p0, p1);
}

int fw_random_uniform_f32(fw_generator *g, float *out, size_t n, double low, double high)
{
    return fill_checked(__func__, g, out, FW_FLOAT32, n, K_UNIFORM, low, high, fw__random_check_uniform);
}

int fw_random_uniform_f64(fw_generator *g, double *out, size_t n, double low, double high)
{
    return fill_checked(__func__, g, out, FW_FLOAT64, n, K_UNIFORM, low, high, fw__random_check_uniform);
}

int fw_random_normal_f32(fw_generator *g, float *out, size_t n, double mean, double std)
{
    return fill_checked(__func__, g, out, FW_FLOAT32, n, K_NORMAL, mean, std, fw__random_check_normal);
}

int fw_random_normal_f64(fw_generator *g, double *out, size_t n, double mean, double std)
{
    return fill_checked(__func__, g, out, FW_FLOAT64, n, K_NORMAL, mean, std, fw__random_check_normal);
}

/* Standard normal CDF. */
static double phi(double x)
{
    return 0.5 * erfc(-x / M_SQRT2);
}

/* Standardised bounds of a truncated normal, checked. */
static int check_trunc(double *za, double *zb, double mean, double std, double a, double b)
{
    if (!isfinite(mean) || !isfinite(std) || !(std > 0) || isnan(a) || isnan(b) || !(a < b))
        return fw_error_set(FW_EINVAL, "truncated_normal: need std > 0 and a < b, got mean %g "
                            "std %g a %g b %g", mean, std, a, b);
    *za = (a - mean) / std;
    *zb = (b - mean) / std;
    if (phi(*zb) - phi(*za) < 1e-6)
        return fw_error_set(FW_EINVAL, "truncated_normal: [%g, %g] holds almost none of "
                            "Normal(%g, %g)", a, b, mean, std);
    return 0;
}

static int trunc_fill(fw_generator *g, void *out, fw_dtype dt, size_t n, double mean,
                      double std, double a, double b)
{
    if (out == NULL && n > 0)
        return fw_error_set(FW_EINVAL, "fw_random_truncated_normal_%s: NULL output for %zu "
                            "values", dt == FW_FLOAT32 ? "f32" : "f64", n);
    double za = 0, zb = 0;
    int err;
    if ((err = check_trunc(&za, &zb, mean, std, a, b)) < 0)
        return err;
    uint64_t seed = fw_generator_get_seed(g);
    uint64_t base = fw_generator_reserve(g, fw_random_blocks(n, true));
    return cpu_random()->truncated_normal(dt, out, n, seed, base, mean, std, za, zb);
}

int fw_random_truncated_normal_f32(fw_generator *g, float *out, size_t n, double mean,
                                   double std, double a, double b)
{
    return trunc_fill(g, out, FW_FLOAT32, n, mean, std, a, b);
}

int fw_random_truncated_normal_f64(fw_generator *g, double *out, size_t n, double mean,
                                   double std, double a, double b)
{
    return trunc_fill(g, out, FW_FLOAT64, n, mean, std, a, b);
}

static int randint_fill(fw_generator *g, void *out, fw_dtype dt, size_t n, int64_t low,
                        int64_t high)
{
    uint64_t range = (uint64_t)high - (uint64_t)low;
    uint64_t seed = fw_generator_get_seed(g);
    uint64_t base = fw_generator_reserve(g, fw_random_blocks(n, false));
    return cpu_random()->randint(dt, out, n, seed, base, low, range);
}

int fw__random_check_randint(int64_t low, int64_t high, bool i32)
{
    if (!i32 && !(low < high))
        return fw_error_set(FW_EINVAL, "randint: need low < high, got [%lld, %lld)",
                            (long long)low, (long long)high);
    if (i32 && (!(low < high) || low < INT32_MIN || high - 1 > INT32_MAX))
        return fw_error_set(FW_EINVAL, "randint: need low < high within int32, got "
                            "[%lld, %lld)", (long long)low, (long long)high);
    return 0;
}

int fw_random_randint_i64(fw_generator *g, int64_t *out, size_t n, int64_t low, int64_t high)
{
    int err;
    if (out == NULL && n > 0)
        return fw_error_set(FW_EINVAL, "%s: NULL output for %zu values", __func__, n);
    if ((err = fw__random_check_randint(low, high, false)) < 0)
        return err;
    return randint_fill(g, out, FW_INT64, n, low, high);
}

int fw_random_randint_i32(fw_generator *g, int32_t *out, size_t n, int64_t low, int64_t high)
{
    int err;
    if (out == NULL && n > 0)
        return fw_error_set(FW_EINVAL, "%s: NULL output for %zu values", __func__, n);
    if ((err = fw__random_check_randint(low, high, true)) < 0)
        return err;
    return randint_fill(g, out, FW_INT32, n, low, high);
}

int fw_random_bernoulli_u8(fw_generator *g, uint8_t *out, size_t n, double p)
{
    if (out == NULL && n > 0)
        return fw_error_set(FW_EINVAL, "%s: NULL output for %zu values", __func__, n);
    if (!(p >= 0.0 && p <= 1.0))
        return fw_error_set(FW_EINVAL, "bernoulli: probability %g is not in [0, 1]", p);
    uint64_t seed = fw_generator_get_seed(g);
    uint64_t base = fw_generator_reserve(g, fw_random_blocks(n, false));
    return cpu_random()->bernoulli(out, n, seed, base, p);
}

int fw_random_randperm_i64(fw_generator *g, int64_t *out, size_t n)
{
    if (out == NULL && n > 0)
        return fw_error_set(FW_EINVAL, "%s: NULL output for %zu values", __func__, n);
    uint64_t seed = fw_generator_get_seed(g);
    uint64_t base = fw_generator_reserve(g, fw_random_blocks(n, false));
    return cpu_random()->randperm(out, n, seed, base);
}
