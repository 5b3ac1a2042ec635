/*
 * unary.cu - unary kernels and their derivatives on the device, over n
 * contiguous elements. The formulas are cpu/unary.c's, in the same order
 * of operations (stable sigmoid, erf and tanh GELU, round half away from
 * zero as C's round(), sign keeping 0 and NaN). float32/float64 as the
 * CPU; float16/bfloat16 compute in float and round (the CPU has none);
 * int32/int64 for abs, neg, square, sign; logical not for every dtype.
 */
#include "cu_core_kernels.h"
#include "cu_kern.cuh"

#define SQRT_2_OVER_PI 0.7978845608028654
#define INV_SQRT2 0.7071067811865476
#define INV_SQRT_2PI 0.3989422804014327

/* float and double versions of the C math functions under one name */
#define CU_MATH1(NAME)                                                                  \
    __device__ __forceinline__ float cu_##NAME(float x) { return NAME##f(x); }         \
    __device__ __forceinline__ double cu_##NAME(double x) { return NAME(x); }
CU_MATH1(exp)
CU_MATH1(log)
CU_MATH1(sqrt)
CU_MATH1(tanh)
CU_MATH1(erf)
CU_MATH1(sin)
CU_MATH1(cos)
CU_MATH1(fabs)
CU_MATH1(floor)
CU_MATH1(ceil)
CU_MATH1(round)
CU_MATH1(log1p)
CU_MATH1(expm1)
CU_MATH1(log2)
CU_MATH1(log10)
__device__ __forceinline__ float cu_upow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double cu_upow(double x, double y) { return pow(x, y); }

/* y = f(x); OP is a constant in every instantiation, so the switch folds. */
template <int OP, typename C>
__device__ __forceinline__ C un_fwd(C x, C al, bool square)
{
    switch (OP) {
    case FW_UN_EXP: return cu_exp(x);
    case FW_UN_LOG: return cu_log(x);
    case FW_UN_SQRT: return cu_sqrt(x);
    case FW_UN_RSQRT: return (C)1 / cu_sqrt(x);
    case FW_UN_ABS: return cu_fabs(x);
    case FW_UN_NEG: return -x;
    case FW_UN_SQUARE: return x * x;
    case FW_UN_TANH: return cu_tanh(x);
    case FW_UN_SIGMOID:
        if (x >= 0)
            return (C)1 / ((C)1 + cu_exp(-x));
        else {
            C e = cu_exp(x);
            return e / ((C)1 + e);
        }
    case FW_UN_RELU: return x > 0 ? x : (C)0;
    case FW_UN_GELU: return (C)0.5 * x * ((C)1 + cu_erf(x * (C)INV_SQRT2));
    case FW_UN_GELU_TANH:
        return (C)0.5 * x * ((C)1 + cu_tanh((C)SQRT_2_OVER_PI * (x + (C)0.044715 * x * x * x)));
    case FW_UN_LEAKY_RELU: return x > 0 ? x : al * x;
    case FW_UN_SILU: return x / ((C)1 + cu_exp(-x));
    case FW_UN_SIN: return cu_sin(x);
    case FW_UN_COS: return cu_cos(x);
    case FW_UN_POW: return square ? x * x : cu_upow(x, al);
    case FW_UN_RPOW: return cu_upow(al, x);
    case FW_UN_FLOOR: return cu_floor(x);
    case FW_UN_CEIL: return cu_ceil(x);
    case FW_UN_ROUND: return cu_round(x);
    case FW_UN_SIGN: return x > 0 ? (C)1 : x < 0 ? (C)-1 : x;
    case FW_UN_RECIPROCAL: return (C)1 / x;
    case FW_UN_LOG1P: return cu_log1p(x);
    case FW_UN_EXPM1: return cu_expm1(x);
    case FW_UN_ERF: return cu_erf(x);
    case FW_UN_LOG2: return cu_log2(x);
    case FW_UN_LOG10: return cu_log10(x);
    default: return x;
    }
}

/* gx = gy * f'(x), y = f(x). */
template <int OP, typename C>
__device__ __forceinline__ C un_bwd(C g, C x, C y, C al, bool square)
{
    switch (OP) {
    case FW_UN_EXP: return g * y;
    case FW_UN_LOG: return g / x;
    case FW_UN_SQRT: return g * (C)0.5 / y;
    case FW_UN_RSQRT: return g * (C)-0.5 * y * y * y;
    case FW_UN_ABS: return x > 0 ? g : x < 0 ? -g : (C)0;
    case FW_UN_NEG: return -g;
    case FW_UN_SQUARE: return g * (C)2 * x;
    case FW_UN_TANH: return g * ((C)1 - y * y);
    case FW_UN_SIGMOID: return g * y * ((C)1 - y);
    case FW_UN_RELU: return x > 0 ? g : (C)0;
    case FW_UN_GELU: {
        C cdf = (C)0.5 * ((C)1 + cu_erf(x * (C)INV_SQRT2));
        C pdf = (C)INV_SQRT_2PI * cu_exp((C)-0.5 * x * x);
        return g * (cdf + x * pdf);
    }
    case FW_UN_GELU_TANH: {
        C u = (C)SQRT_2_OVER_PI * (x + (C)0.044715 * x * x * x);
        C t = cu_tanh(u);
        C du = (C)SQRT_2_OVER_PI * ((C)1 + (C)3 * (C)0.044715 * x * x);
        return g * ((C)0.5 * ((C)1 + t) + (C)0.5 * x * ((C)1 - t * t) * du);
    }
    case FW_UN_LEAKY_RELU: return x > 0 ? g : al * g;
    case FW_UN_SILU: {
        C s = (C)1 / ((C)1 + cu_exp(-x));
        return g * s * ((C)1 + x * ((C)1 - s));
    }
    case FW_UN_SIN: return g * cu_cos(x);
    case FW_UN_COS: return -g * cu_sin(x);
    case FW_UN_POW: return square ? g * (C)2 * x : g * al * cu_upow(x, al - (C)1);
    case FW_UN_RPOW: return g * y * (C)cu_log(al);
    case FW_UN_FLOOR: case FW_UN_CEIL: case FW_UN_ROUND: case FW_UN_SIGN: return (C)0;
    case FW_UN_RECIPROCAL: return -g * y * y;
    case FW_UN_LOG1P: return g / ((C)1 + x);
    case FW_UN_EXPM1: return g * (y + (C)1);
    case FW_UN_ERF: return g * (C)1.1283791670955126 * cu_exp(-x * x);
    case FW_UN_LOG2: return g / (x * (C)0.6931471805599453);
    case FW_UN_LOG10: return g / (x * (C)2.302585092994046);
    default: return g;
    }
}

template <typename T, int OP>
__global__ void un_kernel(T *o, const T *x, int64_t n, typename cu_num<T>::calc al, bool square)
{
    typedef cu_num<T> N;
    CU_FOR(i, n)
        o[i] = N::store(un_fwd<OP>(N::load(x[i]), al, square));
}

/* x or y is NULL when the op's derivative does not read it. */
template <typename T, int OP>
__global__ void un_grad_kernel(T *gx, const T *gy, const T *x, const T *y, int64_t n,
                               typename cu_num<T>::calc al, bool square)
{
    typedef cu_num<T> N;
    typedef typename N::calc C;
    CU_FOR(i, n) {
        C xv = x != nullptr ? N::load(x[i]) : (C)0;
        C yv = y != nullptr ? N::load(y[i]) : (C)0;
        gx[i] = N::store(un_bwd<OP>(N::load(gy[i]), xv, yv, al, square));
    }
}

/* Calls L::template run<OP>() for the runtime op (1 for an unknown one). */
#define UN_CASES(X)                                                                        \
    X(FW_UN_EXP) X(FW_UN_LOG) X(FW_UN_SQRT) X(FW_UN_RSQRT) X(FW_UN_ABS) X(FW_UN_NEG)        \
    X(FW_UN_SQUARE) X(FW_UN_TANH) X(FW_UN_SIGMOID) X(FW_UN_RELU) X(FW_UN_GELU)              \
    X(FW_UN_GELU_TANH) X(FW_UN_LEAKY_RELU) X(FW_UN_SILU) X(FW_UN_SIN) X(FW_UN_COS)          \
    X(FW_UN_POW) X(FW_UN_RPOW) X(FW_UN_FLOOR) X(FW_UN_CEIL) X(FW_UN_ROUND) X(FW_UN_SIGN)    \
    X(FW_UN_RECIPROCAL) X(FW_UN_LOG1P) X(FW_UN_EXPM1) X(FW_UN_ERF) X(FW_UN_LOG2)            \
    X(FW_UN_LOG10)

template <typename T>
struct un_launch {
    void *o;
    const void *x;
    int64_t n;
    double alpha;
    template <int OP> void run() const
    {
        typedef typename cu_num<T>::calc C;
        un_kernel<T, OP><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
            (T *)o, (const T *)x, n, (C)alpha, alpha == 2.0);
    }
};

template <typename T>
struct un_grad_launch {
    void *gx;
    const void *gy, *x, *y;
    int64_t n;
    double alpha;
    template <int OP> void run() const
    {
        typedef typename cu_num<T>::calc C;
        un_grad_kernel<T, OP><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
            (T *)gx, (const T *)gy, (const T *)x, (const T *)y, n, (C)alpha, alpha == 2.0);
    }
};

template <typename L>
static int un_dispatch(fw_unop op, const L &l)
{
    switch (op) {
#define UN_CASE(OP) case OP: l.template run<OP>(); return 0;
        UN_CASES(UN_CASE)
#undef UN_CASE
    default: return 1;
    }
}

/* ---- integers and logical not ----------------------------------------------------- */

/* abs/neg/square/sign in unsigned arithmetic: INT64_MIN wraps as on the CPU. */
template <typename T>
__global__ void un_int_kernel(fw_unop op, T *o, const T *x, int64_t n)
{
    CU_FOR(i, n) {
        int64_t v = x[i];
        uint64_t u = (uint64_t)v;
        int64_t r = op == FW_UN_ABS ? (int64_t)(v < 0 ? 0 - u : u)
                  : op == FW_UN_NEG ? (int64_t)(0 - u)
                  : op == FW_UN_SIGN ? (int64_t)((v > 0) - (v < 0)) : (int64_t)(u * u);
        o[i] = (T)r;
    }
}

__global__ void un_not_kernel(uint8_t *o, const char *p, fw_dtype dt, int64_t n)
{
    CU_FOR(i, n) {
        bool nz;
        switch (dt) {
        case FW_FLOAT32: nz = ((const float *)p)[i] != 0; break;
        case FW_FLOAT64: nz = ((const double *)p)[i] != 0; break;
        case FW_INT32: nz = ((const int32_t *)p)[i] != 0; break;
        case FW_INT64: nz = ((const int64_t *)p)[i] != 0; break;
        case FW_FLOAT16: case FW_BFLOAT16: nz = (((const uint16_t *)p)[i] & 0x7fff) != 0; break;
        default: nz = ((const uint8_t *)p)[i] != 0; break;
        }
        o[i] = !nz;
    }
}

extern "C" int fw__cu_unary(fw_unop op, void *out, const void *x, int64_t n, fw_dtype dt,
                            double alpha)
{
    int r = 1;

    if (n <= 0)
        return 0;
    if (op == FW_UN_NOT) {
        un_not_kernel<<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
            (uint8_t *)out, (const char *)x, dt, n);
        return cu_launched("unary");
    }
    if (dt == FW_INT32 || dt == FW_INT64) {
        if (op != FW_UN_ABS && op != FW_UN_NEG && op != FW_UN_SQUARE && op != FW_UN_SIGN)
            return fw__cu_error_set(FW_EDTYPE, "unary kernel %d has no %s version", (int)op,
                                    cu_dtype_name(dt));
        if (dt == FW_INT32)
            un_int_kernel<int32_t><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                op, (int32_t *)out, (const int32_t *)x, n);
        else
            un_int_kernel<int64_t><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
                op, (int64_t *)out, (const int64_t *)x, n);
        return cu_launched("unary");
    }
    switch (dt) {
    case FW_FLOAT32: r = un_dispatch(op, un_launch<float>{out, x, n, alpha}); break;
    case FW_FLOAT64: r = un_dispatch(op, un_launch<double>{out, x, n, alpha}); break;
    case FW_FLOAT16: r = un_dispatch(op, un_launch<cu_half>{out, x, n, alpha}); break;
    case FW_BFLOAT16: r = un_dispatch(op, un_launch<cu_bf16>{out, x, n, alpha}); break;
    default: break;
    }
    if (r != 0)
        return fw__cu_error_set(FW_EDTYPE, "unary kernel %d has no %s version", (int)op,
                                cu_dtype_name(dt));
    return cu_launched("unary");
}

extern "C" int fw__cu_unary_grad(fw_unop op, void *gx, const void *gy, const void *x,
                                 const void *y, int64_t n, fw_dtype dt, double alpha)
{
    int r = 1;

    if (n <= 0)
        return 0;
    switch (dt) {
    case FW_FLOAT32: r = un_dispatch(op, un_grad_launch<float>{gx, gy, x, y, n, alpha}); break;
    case FW_FLOAT64: r = un_dispatch(op, un_grad_launch<double>{gx, gy, x, y, n, alpha}); break;
    case FW_FLOAT16: r = un_dispatch(op, un_grad_launch<cu_half>{gx, gy, x, y, n, alpha}); break;
    case FW_BFLOAT16: r = un_dispatch(op, un_grad_launch<cu_bf16>{gx, gy, x, y, n, alpha}); break;
    default: break;
    }
    if (r != 0)
        return fw__cu_error_set(FW_EDTYPE, "unary grad kernel has no %s version",
                                cu_dtype_name(dt));
    return cu_launched("unary_grad");
}
