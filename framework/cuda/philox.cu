/*
 * philox.cu - the CUDA backend's random family (core/fw_backend_random.h):
 * Philox4x32-10 fills with the counter layout random/philox.c uses, so a
 * (seed, base) gives the CPU's numbers.
 *
 * One thread per counter block (two elements; one for truncated normal).
 * uniform, bernoulli, randint and randperm are bit-identical to the CPU:
 * the multiply-adds are rounded one operation at a time (__dmul_rn /
 * __dadd_rn: nvcc would fuse them into FMAs the CPU does not use). normal
 * and truncated normal go through CUDA's double log, sqrt, sin and cos,
 * which may differ from glibc's in the last bit of a double: float32
 * results then match all but a rare element by one float ulp, float64 ones
 * to about 1e-15 relative. randperm is sequential: the host computes it
 * and copies it over.
 */
#include "cu_family_kernels.h"
#include "cu_kern.cuh"

#include <math.h>
#include <stdlib.h>

#define PHILOX_M0 0xD2511F53u
#define PHILOX_M1 0xCD9E8D57u
#define PHILOX_W0 0x9E3779B9u
#define PHILOX_W1 0xBB67AE85u

/* fw_philox4x32_10 on block blk (attempt a) with the seed as key. */
FW_CU_HD void philox_block(uint32_t out[4], uint64_t seed, uint64_t blk, uint32_t attempt)
{
    uint32_t c0 = (uint32_t)blk, c1 = (uint32_t)(blk >> 32), c2 = attempt, c3 = 0;
    uint32_t k0 = (uint32_t)seed, k1 = (uint32_t)(seed >> 32);

    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)PHILOX_M0 * c0;
        uint64_t p1 = (uint64_t)PHILOX_M1 * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0;
        uint32_t n1 = (uint32_t)p1;
        uint32_t n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        uint32_t n3 = (uint32_t)p0;
        c0 = n0;
        c1 = n1;
        c2 = n2;
        c3 = n3;
        k0 += PHILOX_W0;
        k1 += PHILOX_W1;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}

FW_CU_HD double u53(uint32_t hi, uint32_t lo)
{
    uint64_t x = (((uint64_t)hi << 32) | lo) >> 11;
    return (double)x * 0x1.0p-53;
}

/* (x * range) >> 64 */
FW_CU_HD uint64_t mulhi64(uint64_t x, uint64_t range)
{
#ifdef __CUDA_ARCH__
    return __umul64hi(x, range);
#else
    return (uint64_t)(((unsigned __int128)x * range) >> 64);
#endif
}

FW_CU_HD uint64_t bits64(const uint32_t r[4], int odd)
{
    return odd ? (((uint64_t)r[2] << 32) | r[3]) : (((uint64_t)r[0] << 32) | r[1]);
}

/* The Box-Muller pair of one block (normal_pair in random/philox.c). */
__device__ __forceinline__ void normal_pair(double z[2], uint64_t seed, uint64_t blk,
                                            uint32_t attempt)
{
    uint32_t r[4];
    philox_block(r, seed, blk, attempt);
    double u1 = 1.0 - u53(r[0], r[1]);
    double u2 = u53(r[2], r[3]);
    double rad = sqrt(-2.0 * log(u1));
    double t = __dmul_rn(2.0 * M_PI, u2);
    z[0] = __dmul_rn(rad, cos(t));
    z[1] = __dmul_rn(rad, sin(t));
}

/* Element j of a pair as T; `uniform` keeps the range half-open. */
template <typename T>
__device__ __forceinline__ T store_uniform(double lo, double hi, double u)
{
    double v = __dadd_rn(lo, __dmul_rn(hi - lo, u));
    if constexpr (sizeof(T) == 4) {
        float f = (float)v;
        return f >= (float)hi ? (float)lo : f;
    } else {
        return v >= hi ? lo : v;
    }
}

#define LAUNCH(n) <<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>

template <typename T>
__global__ void k_uniform(T *out, int64_t n, uint64_t seed, uint64_t base, double lo, double hi)
{
    CU_FOR(b, (n + 1) / 2) {
        uint32_t r[4];
        philox_block(r, seed, base + (uint64_t)b, 0);
        out[2 * b] = store_uniform<T>(lo, hi, u53(r[0], r[1]));
        if (2 * b + 1 < n)
            out[2 * b + 1] = store_uniform<T>(lo, hi, u53(r[2], r[3]));
    }
}

template <typename T>
__global__ void k_normal(T *out, int64_t n, uint64_t seed, uint64_t base, double mean,
                         double std)
{
    CU_FOR(b, (n + 1) / 2) {
        double z[2];
        normal_pair(z, seed, base + (uint64_t)b, 0);
        out[2 * b] = (T)__dadd_rn(mean, __dmul_rn(std, z[0]));
        if (2 * b + 1 < n)
            out[2 * b + 1] = (T)__dadd_rn(mean, __dmul_rn(std, z[1]));
    }
}

template <typename T>
__global__ void k_truncated_normal(T *out, int64_t n, uint64_t seed, uint64_t base, double mean,
                                   double std, double a, double b)
{
    CU_FOR(i, n) {
        double z[2], zv = 0.5 * (a + b);
        for (uint32_t att = 0; att < 100000; att++) {
            normal_pair(z, seed, base + (uint64_t)i, att);
            if (z[0] >= a && z[0] <= b) {
                zv = z[0];
                break;
            }
            if (z[1] >= a && z[1] <= b) {
                zv = z[1];
                break;
            }
        }
        double v = __dadd_rn(mean, __dmul_rn(std, zv));
        double lo = __dadd_rn(__dmul_rn(a, std), mean), hi = __dadd_rn(__dmul_rn(b, std), mean);
        v = v < lo ? lo : v > hi ? hi : v;
        out[i] = (T)v;
    }
}

__global__ void k_bernoulli(uint8_t *out, int64_t n, uint64_t seed, uint64_t base, double p)
{
    CU_FOR(b, (n + 1) / 2) {
        uint32_t r[4];
        philox_block(r, seed, base + (uint64_t)b, 0);
        out[2 * b] = u53(r[0], r[1]) < p;
        if (2 * b + 1 < n)
            out[2 * b + 1] = u53(r[2], r[3]) < p;
    }
}

template <typename T>
__global__ void k_randint(T *out, int64_t n, uint64_t seed, uint64_t base, int64_t low,
                          uint64_t range)
{
    CU_FOR(b, (n + 1) / 2) {
        uint32_t r[4];
        philox_block(r, seed, base + (uint64_t)b, 0);
        out[2 * b] = (T)(int64_t)((uint64_t)low + mulhi64(bits64(r, 0), range));
        if (2 * b + 1 < n)
            out[2 * b + 1] = (T)(int64_t)((uint64_t)low + mulhi64(bits64(r, 1), range));
    }
}

static int no_dtype(const char *op, fw_dtype dt)
{
    return fw__cu_error_set(FW_EDTYPE, "%s: dtype %s not supported by the cuda kernels", op,
                            cu_dtype_name(dt));
}

static int c_uniform(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, double lo,
                     double hi)
{
    int64_t nb = ((int64_t)n + 1) / 2;
    if (n == 0)
        return dt == FW_FLOAT32 || dt == FW_FLOAT64 ? 0 : no_dtype("uniform", dt);
    if (dt == FW_FLOAT32)
        k_uniform<float> LAUNCH(nb)((float *)out, (int64_t)n, seed, base, lo, hi);
    else if (dt == FW_FLOAT64)
        k_uniform<double> LAUNCH(nb)((double *)out, (int64_t)n, seed, base, lo, hi);
    else
        return no_dtype("uniform", dt);
    return cu_launched("uniform");
}

static int c_normal(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, double mean,
                    double std)
{
    int64_t nb = ((int64_t)n + 1) / 2;
    if (n == 0)
        return dt == FW_FLOAT32 || dt == FW_FLOAT64 ? 0 : no_dtype("normal", dt);
    if (dt == FW_FLOAT32)
        k_normal<float> LAUNCH(nb)((float *)out, (int64_t)n, seed, base, mean, std);
    else if (dt == FW_FLOAT64)
        k_normal<double> LAUNCH(nb)((double *)out, (int64_t)n, seed, base, mean, std);
    else
        return no_dtype("normal", dt);
    return cu_launched("normal");
}

static int c_truncated_normal(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base,
                              double mean, double std, double za, double zb)
{
    if (n == 0)
        return dt == FW_FLOAT32 || dt == FW_FLOAT64 ? 0 : no_dtype("truncated_normal", dt);
    if (dt == FW_FLOAT32)
        k_truncated_normal<float> LAUNCH(n)((float *)out, (int64_t)n, seed, base, mean, std, za,
                                            zb);
    else if (dt == FW_FLOAT64)
        k_truncated_normal<double> LAUNCH(n)((double *)out, (int64_t)n, seed, base, mean, std,
                                             za, zb);
    else
        return no_dtype("truncated_normal", dt);
    return cu_launched("truncated_normal");
}

static int c_bernoulli(uint8_t *out, size_t n, uint64_t seed, uint64_t base, double p)
{
    int64_t nb = ((int64_t)n + 1) / 2;
    if (n == 0)
        return 0;
    k_bernoulli LAUNCH(nb)(out, (int64_t)n, seed, base, p);
    return cu_launched("bernoulli");
}

static int c_randint(fw_dtype dt, void *out, size_t n, uint64_t seed, uint64_t base, int64_t low,
                     uint64_t range)
{
    int64_t nb = ((int64_t)n + 1) / 2;
    if (dt != FW_INT32 && dt != FW_INT64)
        return no_dtype("randint", dt);
    if (n == 0)
        return 0;
    if (dt == FW_INT64)
        k_randint<int64_t> LAUNCH(nb)((int64_t *)out, (int64_t)n, seed, base, low, range);
    else
        k_randint<int32_t> LAUNCH(nb)((int32_t *)out, (int64_t)n, seed, base, low, range);
    return cu_launched("randint");
}

/* Fisher-Yates from the top on the host (k_randperm in cpu/random_backend.c),
 * then one copy to the device. */
static int c_randperm(int64_t *out, size_t n, uint64_t seed, uint64_t base)
{
    int64_t *h;
    int err;

    if (n == 0)
        return 0;
    if ((h = (int64_t *)malloc(n * sizeof(*h))) == NULL)
        return fw__cu_error_set(FW_ENOMEM, "randperm: %zu host elements", n);
    for (size_t i = 0; i < n; i++)
        h[i] = (int64_t)i;
    for (size_t i = n; i-- > 1;) {
        uint32_t r[4];
        philox_block(r, seed, base + i / 2, 0);
        size_t j = (size_t)mulhi64(bits64(r, (int)(i & 1)), (uint64_t)(i + 1));
        int64_t t = h[i];
        h[i] = h[j];
        h[j] = t;
    }
    err = fw__cu_error(cudaMemcpyAsync(out, h, n * sizeof(*h), cudaMemcpyHostToDevice,
                                       fw__cu_stream()), "randperm");
    if (err == 0)   /* h is pageable and freed below */
        err = fw__cu_error(cudaStreamSynchronize(fw__cu_stream()), "randperm");
    free(h);
    return err;
}

static_assert(sizeof(struct fw_random_kernels) == 6 * sizeof(void (*)(void)),
              "fw_random_kernels changed: update the table below");

extern "C" const struct fw_random_kernels fw__cu_random_kernels = {
    c_uniform,
    c_normal,
    c_truncated_normal,
    c_bernoulli,
    c_randint,
    c_randperm,
};
