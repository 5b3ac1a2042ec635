/*
 * optim.c - fused optimizer update kernels (see optim_kernels.h).
 * One pass per parameter; the arithmetic is done in the parameter's own type
 * with the scalar hyper-parameters rounded to it once, like Paddle's kernels.
 */
#include <math.h>

#include "optim_kernels.h"

/* AVX2 clones of the update loops where the CPU has it (ifunc dispatch). */
#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
#define FW_KERNEL_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define FW_KERNEL_CLONES
#endif

#define DEFINE_SGD(NAME, T)                                                                 \
    FW_KERNEL_CLONES void NAME(T *restrict p, const T *restrict g, size_t n, double lr, double l2)           \
    {                                                                                       \
        /* p: (n,), g: (n,) */                                                              \
        const T lr_ = (T)lr, l2_ = (T)l2;                                                   \
        if (l2 == 0) {                                                                      \
            for (size_t i = 0; i < n; i++)                                                  \
                p[i] -= lr_ * g[i];                                                         \
        } else {                                                                            \
            for (size_t i = 0; i < n; i++)                                                  \
                p[i] -= lr_ * (g[i] + l2_ * p[i]);                                          \
        }                                                                                   \
    }
DEFINE_SGD(fw__sgd_f32, float)
DEFINE_SGD(fw__sgd_f64, double)

#define DEFINE_MOMENTUM(NAME, T)                                                            \
    FW_KERNEL_CLONES void NAME(T *restrict p, const T *restrict g, T *restrict vel, size_t n, double lr,     \
              double mu, double l2, int nesterov)                                           \
    {                                                                                       \
        /* p, g, vel: (n,) */                                                               \
        const T lr_ = (T)lr, mu_ = (T)mu, l2_ = (T)l2;                                      \
        if (nesterov) {                                                                     \
            for (size_t i = 0; i < n; i++) {                                                \
                T gi = g[i] + l2_ * p[i];                                                   \
                T vi = mu_ * vel[i] + gi;                                                   \
                vel[i] = vi;                                                                \
                p[i] -= lr_ * (gi + mu_ * vi);                                              \
            }                                                                               \
        } else {                                                                            \
            for (size_t i = 0; i < n; i++) {                                                \
                T vi = mu_ * vel[i] + (g[i] + l2_ * p[i]);                                  \
                vel[i] = vi;                                                                \
                p[i] -= lr_ * vi;                                                           \
            }                                                                               \
        }                                                                                   \
    }
DEFINE_MOMENTUM(fw__momentum_f32, float)
DEFINE_MOMENTUM(fw__momentum_f64, double)

/* Adam. The per-element formula is written once (ADAM_SCALAR); libm's
 * sqrt may set errno, so gcc will not vectorise it without -fno-math-errno:
 * on x86-64 the bulk runs on SSE2 (always present) or AVX2 (chosen at run
 * time) square roots, computing exactly the same float/double operations in
 * the same order (no FMA), so every path gives the same bits. */
#define ADAM_SCALAR(T, SQRT)                                                                \
    do {                                                                                    \
        T pi = p[i] * dk;                                                                   \
        T gi = g[i] + l2_ * pi;                                                             \
        T mi = b1_ * m[i] + ob1 * gi;                                                       \
        T vi = b2_ * v[i] + ob2 * gi * gi;                                                  \
        m[i] = mi;                                                                          \
        v[i] = vi;                                                                          \
        p[i] = pi - lr_t * mi / (SQRT(vi) + eps_t);                                         \
    } while (0)

#define ADAM_CONSTS(T)                                                                      \
    const double c2 = sqrt(1.0 - b2pow);                                                    \
    const T lr_t = (T)(lr * c2 / (1.0 - b1pow));                                            \
    const T eps_t = (T)(eps * c2);                                                          \
    const T b1_ = (T)b1, b2_ = (T)b2, ob1 = (T)(1.0 - b1), ob2 = (T)(1.0 - b2);             \
    const T l2_ = (T)l2, dk = (T)(1.0 - lr * decay)

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

/* W lanes of type VT with intrinsics prefix P (_mm / _mm256) and suffix S
 * (ps / pd). */
#define ADAM_SIMD_BODY(T, VT, W, P, S)                                                      \
    const VT vdk = P##_set1_##S(dk), vl2 = P##_set1_##S(l2_), vb1 = P##_set1_##S(b1_);      \
    const VT vb2 = P##_set1_##S(b2_), vob1 = P##_set1_##S(ob1), vob2 = P##_set1_##S(ob2);   \
    const VT vlr = P##_set1_##S(lr_t), veps = P##_set1_##S(eps_t);                          \
    for (; i + W <= n; i += W) {                                                            \
        VT pi = P##_mul_##S(P##_loadu_##S(p + i), vdk);                                     \
        VT gi = P##_add_##S(P##_loadu_##S(g + i), P##_mul_##S(vl2, pi));                    \
        VT mi = P##_add_##S(P##_mul_##S(vb1, P##_loadu_##S(m + i)), P##_mul_##S(vob1, gi)); \
        VT vi = P##_add_##S(P##_mul_##S(vb2, P##_loadu_##S(v + i)),                         \
                            P##_mul_##S(P##_mul_##S(vob2, gi), gi));                        \
        P##_storeu_##S(m + i, mi);                                                          \
        P##_storeu_##S(v + i, vi);                                                          \
        VT den = P##_add_##S(P##_sqrt_##S(vi), veps);                                       \
        P##_storeu_##S(p + i, P##_sub_##S(pi, P##_div_##S(P##_mul_##S(vlr, mi), den)));     \
    }

#define DEFINE_ADAM_X86(NAME, T, VT128, VT256, S, SQRT, W128, W256)                         \
    __attribute__((target("avx2"))) static size_t NAME##_avx2(                              \
        T *restrict p, const T *restrict g, T *restrict m, T *restrict v, size_t n,         \
        double lr, double b1, double b2, double eps, double b1pow, double b2pow, double l2, \
        double decay)                                                                       \
    {                                                                                       \
        ADAM_CONSTS(T);                                                                     \
        size_t i = 0;                                                                       \
        ADAM_SIMD_BODY(T, VT256, W256, _mm256, S)                                           \
        return i;                                                                           \
    }                                                                                       \
    void NAME(T *restrict p, const T *restrict g, T *restrict m, T *restrict v, size_t n,   \
              double lr, double b1, double b2, double eps, double b1pow, double b2pow,      \
              double l2, double decay)                                                      \
    {                                                                                       \
        /* p, g, m, v: (n,) */                                                              \
        ADAM_CONSTS(T);                                                                     \
        size_t i = 0;                                                                       \
        if (__builtin_cpu_supports("avx2")) {                                               \
            i = NAME##_avx2(p, g, m, v, n, lr, b1, b2, eps, b1pow, b2pow, l2, decay);      \
        } else {                                                                            \
            ADAM_SIMD_BODY(T, VT128, W128, _mm, S)                                          \
        }                                                                                   \
        for (; i < n; i++)                                                                  \
            ADAM_SCALAR(T, SQRT);                                                           \
    }
DEFINE_ADAM_X86(fw__adam_f32, float, __m128, __m256, ps, sqrtf, 4, 8)
DEFINE_ADAM_X86(fw__adam_f64, double, __m128d, __m256d, pd, sqrt, 2, 4)

#else

#define DEFINE_ADAM(NAME, T, SQRT)                                                          \
    void NAME(T *restrict p, const T *restrict g, T *restrict m, T *restrict v, size_t n,   \
              double lr, double b1, double b2, double eps, double b1pow, double b2pow,      \
              double l2, double decay)                                                      \
    {                                                                                       \
        /* p, g, m, v: (n,) */                                                              \
        ADAM_CONSTS(T);                                                                     \
        for (size_t i = 0; i < n; i++)                                                      \
            ADAM_SCALAR(T, SQRT);                                                           \
    }
DEFINE_ADAM(fw__adam_f32, float, sqrtf)
DEFINE_ADAM(fw__adam_f64, double, sqrt)

#endif

double fw__sumsq_f32(const float *x, size_t n)
{
    /* four partial sums so the loop vectorises without -ffast-math */
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (double)x[i] * x[i];
        s1 += (double)x[i + 1] * x[i + 1];
        s2 += (double)x[i + 2] * x[i + 2];
        s3 += (double)x[i + 3] * x[i + 3];
    }
    for (; i < n; i++)
        s0 += (double)x[i] * x[i];
    return (s0 + s1) + (s2 + s3);
}

double fw__sumsq_f64(const double *x, size_t n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += x[i] * x[i];
        s1 += x[i + 1] * x[i + 1];
        s2 += x[i + 2] * x[i + 2];
        s3 += x[i + 3] * x[i + 3];
    }
    for (; i < n; i++)
        s0 += x[i] * x[i];
    return (s0 + s1) + (s2 + s3);
}

void fw__scale_f32(float *x, size_t n, double s)
{
    const float s_ = (float)s;
    for (size_t i = 0; i < n; i++)
        x[i] *= s_;
}

void fw__scale_f64(double *x, size_t n, double s)
{
    for (size_t i = 0; i < n; i++)
        x[i] *= s;
}
