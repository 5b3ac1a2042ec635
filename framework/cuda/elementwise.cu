/*
 * elementwise.cu - binary kernels with broadcasting on the device: out
 * (contiguous) = a op b, a and b strided (0 on broadcast dims). The math is
 * cpu/elementwise.c's: Python floor division and modulo (sign of b), NaN
 * propagating through max/min, ints wrapping, x // -1 negating. float16 and
 * bfloat16 (which the CPU kernels do not take) compute in float and round.
 */
#include "cu_core_kernels.h"
#include "cu_kern.cuh"

#include <type_traits>

/* ---- the ops, over the compute type C (float, double or an int type) ---------------- */

__device__ __forceinline__ float cu_pow(float x, float y) { return powf(x, y); }
__device__ __forceinline__ double cu_pow(double x, double y) { return pow(x, y); }
__device__ __forceinline__ float cu_floor(float x) { return floorf(x); }
__device__ __forceinline__ double cu_floor(double x) { return floor(x); }
__device__ __forceinline__ float cu_fmod(float x, float y) { return fmodf(x, y); }
__device__ __forceinline__ double cu_fmod(double x, double y) { return fmod(x, y); }

#define CU_BINOP(NAME, EXPR)                                                       \
    struct NAME {                                                                  \
        template <typename C> __device__ __forceinline__ C operator()(C x, C y) const \
        {                                                                          \
            return (C)(EXPR);                                                      \
        }                                                                          \
    };

CU_BINOP(b_add, x + y)
CU_BINOP(b_sub, x - y)
CU_BINOP(b_mul, x * y)
CU_BINOP(b_div, x / y)
CU_BINOP(b_max, (x > y || x != x) ? x : y)   /* ints: x != x is false */
CU_BINOP(b_min, (x < y || x != x) ? x : y)
CU_BINOP(b_pow, cu_pow(x, y))
CU_BINOP(b_powga, y * cu_pow(x, y - (C)1))
/* the CPU's float version multiplies by log() of the double */
CU_BINOP(b_powgb, x > 0 ? (double)cu_pow(x, y) * log((double)x) : 0.0)
CU_BINOP(b_gemask, x >= y ? 1 : 0)
CU_BINOP(b_ltmask, x < y ? 1 : 0)

struct b_floordiv {
    template <typename C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (std::is_floating_point<C>::value) {
            return cu_floor(x / y);
        } else if constexpr (std::is_signed<C>::value) {
            typedef typename std::make_unsigned<C>::type U;
            if (y == -1)
                return (C)(0 - (U)x);   /* INT_MIN // -1 wraps instead of trapping */
            C q = (C)(x / y);
            return (C)((x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q);
        } else {
            return (C)(x / y);
        }
    }
};

struct b_mod {
    template <typename C> __device__ __forceinline__ C operator()(C x, C y) const
    {
        if constexpr (std::is_floating_point<C>::value) {
            C r = cu_fmod(x, y);
            return (r != 0 && ((r < 0) != (y < 0))) ? r + y : r;
        } else if constexpr (std::is_signed<C>::value) {
            if (y == -1)
                return 0;
            C r = (C)(x % y);
            return (C)((r != 0 && ((r < 0) != (y < 0))) ? r + y : r);
        } else {
            return (C)(x % y);
        }
    }
};

#define CU_CMPOP(NAME, EXPR)                                                           \
    struct NAME {                                                                      \
        template <typename C> __device__ __forceinline__ bool operator()(C x, C y) const \
        {                                                                              \
            return (EXPR);                                                             \
        }                                                                              \
    };

CU_CMPOP(c_eq, x == y)
CU_CMPOP(c_ne, x != y)
CU_CMPOP(c_lt, x < y)
CU_CMPOP(c_le, x <= y)
CU_CMPOP(c_gt, x > y)
CU_CMPOP(c_ge, x >= y)
CU_CMPOP(c_and, (x != 0) && (y != 0))
CU_CMPOP(c_or, (x != 0) || (y != 0))
CU_CMPOP(c_xor, (x != 0) != (y != 0))

/* ---- kernels ------------------------------------------------------------------------- */

/* l: out, a, b strides over out's (coalesced) shape; n elements. */
template <typename T, typename F>
__global__ void bin_arith(cu_layout l, int64_t n, T *o, const T *a, const T *b, F f)
{
    typedef cu_num<T> N;
    CU_FOR(i, n) {
        int64_t off[3];
        cu_offsets<3>(l, i, off);
        o[off[0]] = N::store(f(N::load(a[off[1]]), N::load(b[off[2]])));
    }
}

template <typename T, typename F>
__global__ void bin_cmp(cu_layout l, int64_t n, uint8_t *o, const T *a, const T *b, F f)
{
    typedef cu_num<T> N;
    CU_FOR(i, n) {
        int64_t off[3];
        cu_offsets<3>(l, i, off);
        o[off[0]] = (uint8_t)f(N::load(a[off[1]]), N::load(b[off[2]]));
    }
}

template <typename T, typename F>
static int arith(const cu_layout &l, int64_t n, void *o, const void *a, const void *b)
{
    bin_arith<T, F><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
        l, n, (T *)o, (const T *)a, (const T *)b, F());
    return 0;
}

template <typename T, typename F>
static int cmp(const cu_layout &l, int64_t n, void *o, const void *a, const void *b)
{
    bin_cmp<T, F><<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>(
        l, n, (uint8_t *)o, (const T *)a, (const T *)b, F());
    return 0;
}

/* 1 when op has no T version (as the CPU: DIV and POW* are float only). */
template <typename T>
static int dispatch(fw_binop op, const cu_layout &l, int64_t n, void *o, const void *a,
                    const void *b)
{
    constexpr bool fl = std::is_floating_point<typename cu_num<T>::calc>::value;

    switch (op) {
    case FW_BIN_ADD: return arith<T, b_add>(l, n, o, a, b);
    case FW_BIN_SUB: return arith<T, b_sub>(l, n, o, a, b);
    case FW_BIN_MUL: return arith<T, b_mul>(l, n, o, a, b);
    case FW_BIN_MAX: return arith<T, b_max>(l, n, o, a, b);
    case FW_BIN_MIN: return arith<T, b_min>(l, n, o, a, b);
    case FW_BIN_GE_MASK: return arith<T, b_gemask>(l, n, o, a, b);
    case FW_BIN_LT_MASK: return arith<T, b_ltmask>(l, n, o, a, b);
    case FW_BIN_FLOORDIV: return arith<T, b_floordiv>(l, n, o, a, b);
    case FW_BIN_MOD: return arith<T, b_mod>(l, n, o, a, b);
    case FW_BIN_EQ: return cmp<T, c_eq>(l, n, o, a, b);
    case FW_BIN_NE: return cmp<T, c_ne>(l, n, o, a, b);
    case FW_BIN_LT: return cmp<T, c_lt>(l, n, o, a, b);
    case FW_BIN_LE: return cmp<T, c_le>(l, n, o, a, b);
    case FW_BIN_GT: return cmp<T, c_gt>(l, n, o, a, b);
    case FW_BIN_GE: return cmp<T, c_ge>(l, n, o, a, b);
    case FW_BIN_AND: return cmp<T, c_and>(l, n, o, a, b);
    case FW_BIN_OR: return cmp<T, c_or>(l, n, o, a, b);
    case FW_BIN_XOR: return cmp<T, c_xor>(l, n, o, a, b);
    default: break;
    }
    if constexpr (fl) {
        switch (op) {
        case FW_BIN_DIV: return arith<T, b_div>(l, n, o, a, b);
        case FW_BIN_POW: return arith<T, b_pow>(l, n, o, a, b);
        case FW_BIN_POW_GRAD_A: return arith<T, b_powga>(l, n, o, a, b);
        case FW_BIN_POW_GRAD_B: return arith<T, b_powgb>(l, n, o, a, b);
        default: break;
        }
    }
    return 1;
}

extern "C" int fw__cu_binary(fw_binop op, const fw_kview *out, const fw_kview *a,
                             const fw_kview *b)
{
    const fw_kview *v[3] = {out, a, b};
    cu_layout l;
    int64_t n = cu_layout_of(&l, v, 3);
    int r;

    if (n == 0)
        return 0;
    switch (a->dtype) {
    case FW_FLOAT32: r = dispatch<float>(op, l, n, out->data, a->data, b->data); break;
    case FW_FLOAT64: r = dispatch<double>(op, l, n, out->data, a->data, b->data); break;
    case FW_FLOAT16: r = dispatch<cu_half>(op, l, n, out->data, a->data, b->data); break;
    case FW_BFLOAT16: r = dispatch<cu_bf16>(op, l, n, out->data, a->data, b->data); break;
    case FW_INT32: r = dispatch<int32_t>(op, l, n, out->data, a->data, b->data); break;
    case FW_INT64: r = dispatch<int64_t>(op, l, n, out->data, a->data, b->data); break;
    case FW_UINT8: case FW_BOOL:
        r = dispatch<uint8_t>(op, l, n, out->data, a->data, b->data);
        break;
    default: r = 1; break;
    }
    if (r != 0)
        return fw__cu_error_set(FW_EDTYPE, "binary kernel %d has no %s version on cuda",
                                (int)op, cu_dtype_name(a->dtype));
    return cu_launched("binary");
}
