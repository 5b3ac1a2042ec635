/* unary.c - CPU unary kernels and their derivatives (contiguous arrays). */
#include "core_kernels.h"
#include "core/fw_int.h"
#include "core/fw_parallel.h"

#include <math.h>

#define SQRT_2_OVER_PI 0.7978845608028654
#define INV_SQRT2 0.7071067811865476
#define INV_SQRT_2PI 0.3989422804014327

/* An AVX2 clone picked at load time (ifunc) for the cheap loops (relu and
 * friends); no FMA and no fast-math, so both clones give the same bits. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define UN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define UN_CLONES
#endif

/* y = f(x), templated over T (float/double) with math functions F##suffix. */
#define UNARY_FWD(T, SFX, EXP, LOG, SQRT, TANH, ERF, POW, SIN, COS, FABS, FLOOR, CEIL, ROUND, LOG1P, EXPM1, LOG2, LOG10)                 \
    UN_CLONES static void unary_##SFX(fw_unop op, T *restrict y, const T *restrict x, int64_t n,  \
                            double alpha)                                               \
    {                                                                                   \
        T al = (T)alpha;                                                                \
        switch (op) {                                                                   \
        case FW_UN_EXP: for (int64_t i = 0; i < n; i++) y[i] = EXP(x[i]); break;        \
        case FW_UN_LOG: for (int64_t i = 0; i < n; i++) y[i] = LOG(x[i]); break;        \
        case FW_UN_SQRT: for (int64_t i = 0; i < n; i++) y[i] = SQRT(x[i]); break;      \
        case FW_UN_RSQRT: for (int64_t i = 0; i < n; i++) y[i] = (T)1 / SQRT(x[i]); break; \
        case FW_UN_ABS: for (int64_t i = 0; i < n; i++) y[i] = FABS(x[i]); break;       \
        case FW_UN_NEG: for (int64_t i = 0; i < n; i++) y[i] = -x[i]; break;            \
        case FW_UN_SQUARE: for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i]; break;   \
        case FW_UN_TANH: for (int64_t i = 0; i < n; i++) y[i] = TANH(x[i]); break;      \
        case FW_UN_SIGMOID:                                                             \
            for (int64_t i = 0; i < n; i++) {                                           \
                T v = x[i];                                                             \
                /* stable on both tails */                                              \
                if (v >= 0) y[i] = (T)1 / ((T)1 + EXP(-v));                             \
                else { T e = EXP(v); y[i] = e / ((T)1 + e); }                           \
            }                                                                           \
            break;                                                                      \
        case FW_UN_RELU: for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : (T)0; break; \
        case FW_UN_GELU:                                                                \
            for (int64_t i = 0; i < n; i++)                                             \
                y[i] = (T)0.5 * x[i] * ((T)1 + ERF(x[i] * (T)INV_SQRT2));               \
            break;                                                                      \
        case FW_UN_GELU_TANH:                                                           \
            for (int64_t i = 0; i < n; i++) {                                           \
                T v = x[i];                                                             \
                y[i] = (T)0.5 * v *                                                     \
                       ((T)1 + TANH((T)SQRT_2_OVER_PI * (v + (T)0.044715 * v * v * v))); \
            }                                                                           \
            break;                                                                      \
        case FW_UN_LEAKY_RELU:                                                          \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : al * x[i];         \
            break;                                                                      \
        case FW_UN_SILU:                                                                \
            for (int64_t i = 0; i < n; i++) y[i] = x[i] / ((T)1 + EXP(-x[i]));          \
            break;                                                                      \
        case FW_UN_SIN: for (int64_t i = 0; i < n; i++) y[i] = SIN(x[i]); break;        \
        case FW_UN_COS: for (int64_t i = 0; i < n; i++) y[i] = COS(x[i]); break;        \
        case FW_UN_POW:                                                                 \
            if (alpha == 2.0) for (int64_t i = 0; i < n; i++) y[i] = x[i] * x[i];       \
            else for (int64_t i = 0; i < n; i++) y[i] = POW(x[i], al);                  \
            break;                                                                      \
        case FW_UN_RPOW: for (int64_t i = 0; i < n; i++) y[i] = POW(al, x[i]); break;   \
        case FW_UN_FLOOR: for (int64_t i = 0; i < n; i++) y[i] = FLOOR(x[i]); break;    \
        case FW_UN_CEIL: for (int64_t i = 0; i < n; i++) y[i] = CEIL(x[i]); break;      \
        case FW_UN_ROUND: for (int64_t i = 0; i < n; i++) y[i] = ROUND(x[i]); break;    \
        case FW_UN_SIGN:                                                                \
            for (int64_t i = 0; i < n; i++)                                             \
                y[i] = x[i] > 0 ? (T)1 : x[i] < 0 ? (T)-1 : x[i]; /* keeps 0 and NaN */ \
            break;                                                                      \
        case FW_UN_RECIPROCAL: for (int64_t i = 0; i < n; i++) y[i] = (T)1 / x[i]; break; \
        case FW_UN_LOG1P: for (int64_t i = 0; i < n; i++) y[i] = LOG1P(x[i]); break;    \
        case FW_UN_EXPM1: for (int64_t i = 0; i < n; i++) y[i] = EXPM1(x[i]); break;    \
        case FW_UN_ERF: for (int64_t i = 0; i < n; i++) y[i] = ERF(x[i]); break;        \
        case FW_UN_LOG2: for (int64_t i = 0; i < n; i++) y[i] = LOG2(x[i]); break;      \
        case FW_UN_LOG10: for (int64_t i = 0; i < n; i++) y[i] = LOG10(x[i]); break;    \
        default: break;                                                                 \
        }                                                                               \
    }

/* gx = gy * f'(x) (y = f(x) available). */
#define UNARY_BWD(T, SFX, EXP, LOG, SQRT, TANH, ERF, POW, SIN, COS)                         \
    UN_CLONES static void unary_grad_##SFX(fw_unop op, T *restrict gx, const T *restrict gy,        \
                                 const T *restrict x, const T *restrict y, int64_t n,     \
                                 double alpha)                                            \
    {                                                                                     \
        T al = (T)alpha;                                                                  \
        switch (op) {                                                                     \
        case FW_UN_EXP: for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * y[i]; break;      \
        case FW_UN_LOG: for (int64_t i = 0; i < n; i++) gx[i] = gy[i] / x[i]; break;      \
        case FW_UN_SQRT: for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * (T)0.5 / y[i]; break; \
        case FW_UN_RSQRT:                                                                 \
            for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * (T)-0.5 * y[i] * y[i] * y[i]; \
            break;                                                                        \
        case FW_UN_ABS:                                                                   \
            for (int64_t i = 0; i < n; i++)                                               \
                gx[i] = x[i] > 0 ? gy[i] : x[i] < 0 ? -gy[i] : (T)0;                      \
            break;                                                                        \
        case FW_UN_NEG: for (int64_t i = 0; i < n; i++) gx[i] = -gy[i]; break;            \
        case FW_UN_SQUARE: for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * (T)2 * x[i]; break; \
        case FW_UN_TANH:                                                                  \
            for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * ((T)1 - y[i] * y[i]);         \
            break;                                                                        \
        case FW_UN_SIGMOID:                                                               \
            for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * y[i] * ((T)1 - y[i]);         \
            break;                                                                        \
        /* Load gy unconditionally: a conditional load compiles to a branch    \
         * that mispredicts on random signs (a quarter of a LeNet step). */     \
        case FW_UN_RELU:                                                          \
            for (int64_t i = 0; i < n; i++) {                                     \
                T g = gy[i];                                                      \
                gx[i] = x[i] > 0 ? g : (T)0;                                      \
            }                                                                     \
            break;                                                                \
        case FW_UN_GELU:                                                                  \
            for (int64_t i = 0; i < n; i++) {                                             \
                T v = x[i];                                                               \
                T cdf = (T)0.5 * ((T)1 + ERF(v * (T)INV_SQRT2));                          \
                T pdf = (T)INV_SQRT_2PI * EXP((T)-0.5 * v * v);                           \
                gx[i] = gy[i] * (cdf + v * pdf);                                          \
            }                                                                             \
            break;                                                                        \
        case FW_UN_GELU_TANH:                                                             \
            for (int64_t i = 0; i < n; i++) {                                             \
                T v = x[i];                                                               \
                T u = (T)SQRT_2_OVER_PI * (v + (T)0.044715 * v * v * v);                  \
                T t = TANH(u);                                                            \
                T du = (T)SQRT_2_OVER_PI * ((T)1 + (T)3 * (T)0.044715 * v * v);           \
                gx[i] = gy[i] * ((T)0.5 * ((T)1 + t) + (T)0.5 * v * ((T)1 - t * t) * du); \
            }                                                                             \
            break;                                                                        \
        case FW_UN_LEAKY_RELU:                                                            \
            for (int64_t i = 0; i < n; i++) gx[i] = x[i] > 0 ? gy[i] : al * gy[i];        \
            break;                                                                        \
        case FW_UN_SILU:                                                                  \
            for (int64_t i = 0; i < n; i++) {                                             \
                T s = (T)1 / ((T)1 + EXP(-x[i]));                                         \
                gx[i] = gy[i] * s * ((T)1 + x[i] * ((T)1 - s));                           \
            }                                                                             \
            break;                                                                        \
        case FW_UN_SIN: for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * COS(x[i]); break; \
        case FW_UN_COS: for (int64_t i = 0; i < n; i++) gx[i] = -gy[i] * SIN(x[i]); break; \
        case FW_UN_POW:                                                                   \
            if (alpha == 2.0) for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * (T)2 * x[i]; \
            else for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * al * POW(x[i], al - (T)1); \
            break;                                                                        \
        case FW_UN_RPOW:                                                                  \
            for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * y[i] * (T)LOG(al);            \
            break;                                                                        \
        case FW_UN_FLOOR: case FW_UN_CEIL: case FW_UN_ROUND: case FW_UN_SIGN:             \
            for (int64_t i = 0; i < n; i++) gx[i] = (T)0;                                 \
            break;                                                                        \
        case FW_UN_RECIPROCAL:                                                            \
            for (int64_t i = 0; i < n; i++) gx[i] = -gy[i] * y[i] * y[i];                 \
            break;                                                                        \
        case FW_UN_LOG1P: for (int64_t i = 0; i < n; i++) gx[i] = gy[i] / ((T)1 + x[i]); break; \
        case FW_UN_EXPM1: for (int64_t i = 0; i < n; i++) gx[i] = gy[i] * (y[i] + (T)1); break; \
        case FW_UN_ERF:                                                                   \
            for (int64_t i = 0; i < n; i++)                                               \
                gx[i] = gy[i] * (T)1.1283791670955126 * EXP(-x[i] * x[i]);                \
            break;                                                                        \
        case FW_UN_LOG2:                                                                  \
            for (int64_t i = 0; i < n; i++) gx[i] = gy[i] / (x[i] * (T)0.6931471805599453); \
            break;                                                                        \
        case FW_UN_LOG10:                                                                 \
            for (int64_t i = 0; i < n; i++) gx[i] = gy[i] / (x[i] * (T)2.302585092994046); \
            break;                                                                        \
        default: break;                                                                   \
        }                                                                                 \
    }

UNARY_FWD(float, f32, expf, logf, sqrtf, tanhf, erff, powf, sinf, cosf, fabsf, floorf, ceilf,
          roundf, log1pf, expm1f, log2f, log10f)
UNARY_FWD(double, f64, exp, log, sqrt, tanh, erf, pow, sin, cos, fabs, floor, ceil, round,
          log1p, expm1, log2, log10)
UNARY_BWD(float, f32, expf, logf, sqrtf, tanhf, erff, powf, sinf, cosf)
UNARY_BWD(double, f64, exp, log, sqrt, tanh, erf, pow, sin, cos)

typedef struct un_job {
    fw_unop op;
    fw_dtype dt;
    double alpha;
    void *o;
    const void *x, *gy, *y;
    bool grad;
} un_job;

static void un_chunk(void *ctx, int64_t b, int64_t e)
{
    const un_job *j = ctx;
    int64_t n = e - b;

    if (j->dt == FW_FLOAT32) {
        if (j->grad)
            unary_grad_f32(j->op, (float *)j->o + b, (const float *)j->gy + b,
                           j->x ? (const float *)j->x + b : NULL,
                           j->y ? (const float *)j->y + b : NULL, n, j->alpha);
        else
            unary_f32(j->op, (float *)j->o + b, (const float *)j->x + b, n, j->alpha);
    } else {
        if (j->grad)
            unary_grad_f64(j->op, (double *)j->o + b, (const double *)j->gy + b,
                           j->x ? (const double *)j->x + b : NULL,
                           j->y ? (const double *)j->y + b : NULL, n, j->alpha);
        else
            unary_f64(j->op, (double *)j->o + b, (const double *)j->x + b, n, j->alpha);
    }
}

/* Cheap ops get a larger grain: threads only pay off for big arrays. */
static int64_t grain_for(fw_unop op)
{
    switch (op) {
    case FW_UN_ABS: case FW_UN_NEG: case FW_UN_SQUARE: case FW_UN_RELU: case FW_UN_LEAKY_RELU:
        return FW_GRAIN_ELEMENTWISE;
    default:
        return FW_GRAIN_ELEMENTWISE / 8;
    }
}

int fw__cpu_unary(fw_unop op, void *out, const void *x, int64_t n, fw_dtype dt, double alpha)
{
    un_job j = {op, dt, alpha, out, x, NULL, NULL, false};

    if (op == FW_UN_NOT) {
        size_t sz = fw_dtype_size(dt);
        uint8_t *o = out;
        const char *p = x;
        for (int64_t i = 0; i < n; i++) {
            bool nz = false;
            switch (dt) {
            case FW_FLOAT32: nz = ((const float *)p)[i] != 0; break;
            case FW_FLOAT64: nz = ((const double *)p)[i] != 0; break;
            case FW_INT32: nz = ((const int32_t *)p)[i] != 0; break;
            case FW_INT64: nz = ((const int64_t *)p)[i] != 0; break;
            case FW_FLOAT16: case FW_BFLOAT16: nz = (((const uint16_t *)p)[i] & 0x7fff) != 0; break;
            default: nz = ((const uint8_t *)p)[i] != 0; break;
            }
            (void)sz;
            o[i] = !nz;
        }
        return 0;
    }
    if (dt == FW_INT32 || dt == FW_INT64) {
        if (op != FW_UN_ABS && op != FW_UN_NEG && op != FW_UN_SQUARE && op != FW_UN_SIGN)
            return fw_error_set(FW_EDTYPE, "unary kernel %d has no %s version", (int)op,
                                fw_dtype_name(dt));
        for (int64_t i = 0; i < n; i++) {
            int64_t v = dt == FW_INT32 ? ((const int32_t *)x)[i] : ((const int64_t *)x)[i];
            /* unsigned arithmetic: INT64_MIN wraps instead of being undefined */
            uint64_t u = (uint64_t)v;
            int64_t r = op == FW_UN_ABS ? (int64_t)(v < 0 ? 0 - u : u)
                      : op == FW_UN_NEG ? (int64_t)(0 - u)
                      : op == FW_UN_SIGN ? (v > 0) - (v < 0) : (int64_t)(u * u);
            if (dt == FW_INT32)
                ((int32_t *)out)[i] = (int32_t)r;
            else
                ((int64_t *)out)[i] = r;
        }
        return 0;
    }
    if (dt != FW_FLOAT32 && dt != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "unary kernel %d has no %s version", (int)op,
                            fw_dtype_name(dt));
    fw_parallel_for(n, grain_for(op), un_chunk, &j);
    return 0;
}

int fw__cpu_unary_grad(fw_unop op, void *gx, const void *gy, const void *x, const void *y,
                       int64_t n, fw_dtype dt, double alpha)
{
    un_job j = {op, dt, alpha, gx, x, gy, y, true};

    if (dt != FW_FLOAT32 && dt != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "unary grad kernel has no %s version", fw_dtype_name(dt));
    fw_parallel_for(n, grain_for(op), un_chunk, &j);
    return 0;
}
