/*
 * cu_kern.cuh - what the kernel files of the CUDA backend share (private to
 * framework/cuda/, C++ only): float16/bfloat16 conversions with the CPU's
 * exact bits (core/dtype.c), element loads/stores with the CPU's casting
 * rules (core/fw_int.h fw__store_double), dimension coalescing (the CPU's
 * fw__coalesce) and the strided offsets of a linear index.
 *
 * Everything here is __host__ __device__ where the host needs it too (fill
 * converts its value on the host), and nothing links eddy_framework: the
 * backend is a plugin that reaches the framework only through its host table.
 */
#ifndef FW_CU_KERN_CUH
#define FW_CU_KERN_CUH

#include "cu_int.h"

#include <stdint.h>
#include <string.h>
#include <type_traits>

#define FW_CU_HD __host__ __device__ __forceinline__

/* ---- float16 / bfloat16 (bit-identical to core/dtype.c) ---------------------------- */

FW_CU_HD uint32_t cu_f2u(float f)
{
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}

FW_CU_HD float cu_u2f(uint32_t u)
{
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}

FW_CU_HD uint16_t cu_float_to_half(float f)
{
    uint32_t x = cu_f2u(f);
    uint32_t sign = (x >> 16) & 0x8000u;
    uint32_t absx = x & 0x7fffffffu;

    if (absx >= 0x7f800000u)
        return (uint16_t)(sign | 0x7c00u |
                          (absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0));
    if (absx >= 0x477ff000u)
        return (uint16_t)(sign | 0x7c00u);
    if (absx < 0x38800000u) {
        float v = cu_u2f(absx) * 16777216.0f;
        uint32_t m = (uint32_t)v;
        float rem = v - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1u)))
            m++;
        return (uint16_t)(sign | m);
    }
    uint32_t mant = absx & 0x7fffffu;
    uint32_t ex = (absx >> 23) - 127 + 15;
    uint32_t h = (ex << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++;
    return (uint16_t)(sign | h);
}

FW_CU_HD float cu_half_to_float(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t ex = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;

    if (ex == 0) {
        float v = (float)mant / 16777216.0f;
        return sign ? -v : v;
    }
    if (ex == 31)
        return cu_u2f(sign | 0x7f800000u | (mant << 13));
    return cu_u2f(sign | ((ex - 15 + 127) << 23) | (mant << 13));
}

FW_CU_HD uint16_t cu_float_to_bf16(float f)
{
    uint32_t x = cu_f2u(f);
    if ((x & 0x7fffffffu) > 0x7f800000u)
        return (uint16_t)((x >> 16) | 0x40u);
    uint32_t lsb = (x >> 16) & 1u;
    x += 0x7fffu + lsb;
    return (uint16_t)(x >> 16);
}

FW_CU_HD float cu_bf16_to_float(uint16_t h) { return cu_u2f((uint32_t)h << 16); }

/* A 16-byte element (complex128) moved as two words (8-byte alignment). */
struct cu_el16 { uint64_t w[2]; };

/* Storage types of the two 16-bit floats: arithmetic goes through float. */
struct cu_half { uint16_t bits; };
struct cu_bf16 { uint16_t bits; };

/* ---- scalar conversions ------------------------------------------------------------ */

/* float -> int64 as fw__sat_i64: NaN 0, saturating. */
FW_CU_HD int64_t cu_sat_i64(double v)
{
    if (v != v)
        return 0;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    return (int64_t)v;
}

FW_CU_HD bool cu_is_int(fw_dtype d)
{
    return d == FW_INT32 || d == FW_INT64 || d == FW_BOOL || d == FW_UINT8;
}

/* One element at p as a double (complex: the real part), as the CPU's load_d. */
FW_CU_HD double cu_load_d(const char *p, fw_dtype dt)
{
    switch (dt) {
    case FW_FLOAT32: return *(const float *)p;
    case FW_FLOAT64: return *(const double *)p;
    case FW_FLOAT16: return cu_half_to_float(*(const uint16_t *)p);
    case FW_BFLOAT16: return cu_bf16_to_float(*(const uint16_t *)p);
    case FW_INT32: return *(const int32_t *)p;
    case FW_INT64: return (double)*(const int64_t *)p;
    case FW_BOOL: case FW_UINT8: return *(const uint8_t *)p;
    case FW_COMPLEX64: return ((const float *)p)[0];
    case FW_COMPLEX128: return ((const double *)p)[0];
    default: return 0;
    }
}

FW_CU_HD int64_t cu_load_i(const char *p, fw_dtype dt)
{
    switch (dt) {
    case FW_INT32: return *(const int32_t *)p;
    case FW_INT64: return *(const int64_t *)p;
    default: return *(const uint8_t *)p;
    }
}

FW_CU_HD void cu_store_i(char *p, fw_dtype dt, int64_t v)
{
    switch (dt) {
    case FW_INT32: *(int32_t *)p = (int32_t)v; break;
    case FW_INT64: *(int64_t *)p = v; break;
    case FW_BOOL: *(uint8_t *)p = v != 0; break;
    default: *(uint8_t *)p = (uint8_t)v; break;
    }
}

/* fw__store_double: float -> int truncates, saturates, NaN -> 0; uint8 wraps. */
FW_CU_HD void cu_store_d(char *p, fw_dtype dt, double v)
{
    switch (dt) {
    case FW_FLOAT32: *(float *)p = (float)v; break;
    case FW_FLOAT64: *(double *)p = v; break;
    case FW_FLOAT16: *(uint16_t *)p = cu_float_to_half((float)v); break;
    case FW_BFLOAT16: *(uint16_t *)p = cu_float_to_bf16((float)v); break;
    case FW_INT32:
        *(int32_t *)p = v != v ? 0 : v >= 2147483647.0 ? INT32_MAX
                      : v <= -2147483648.0 ? INT32_MIN : (int32_t)v;
        break;
    case FW_INT64: *(int64_t *)p = cu_sat_i64(v); break;
    case FW_BOOL: *(uint8_t *)p = v != 0; break;
    case FW_UINT8: *(uint8_t *)p = (uint8_t)cu_sat_i64(v); break;
    case FW_COMPLEX64: ((float *)p)[0] = (float)v; ((float *)p)[1] = 0; break;
    case FW_COMPLEX128: ((double *)p)[0] = v; ((double *)p)[1] = 0; break;
    default: break;
    }
}

/* Typed access for kernels templated on the storage type: load to the
 * compute type (float for the 16-bit floats), store back with rounding. */
template <typename T> struct cu_num {
    typedef T calc;
    static FW_CU_HD calc load(T v) { return v; }
    static FW_CU_HD T store(calc v) { return v; }
};
template <> struct cu_num<cu_half> {
    typedef float calc;
    static FW_CU_HD float load(cu_half v) { return cu_half_to_float(v.bits); }
    static FW_CU_HD cu_half store(float v) { cu_half h; h.bits = cu_float_to_half(v); return h; }
};
template <> struct cu_num<cu_bf16> {
    typedef float calc;
    static FW_CU_HD float load(cu_bf16 v) { return cu_bf16_to_float(v.bits); }
    static FW_CU_HD cu_bf16 store(float v) { cu_bf16 h; h.bits = cu_float_to_bf16(v); return h; }
};

/* Bytes per element, 0 for an invalid dtype (fw_dtype_size without the
 * framework). */
static inline int cu_dtype_size(fw_dtype d)
{
    static const int sz[FW_NDTYPES] = {4, 8, 2, 2, 4, 8, 1, 1, 8, 16};
    return (int)d >= 0 && d < FW_NDTYPES ? sz[d] : 0;
}

/* Paddle's name of d for messages (fw_dtype_name without the framework). */
static inline const char *cu_dtype_name(fw_dtype d)
{
    static const char *const names[FW_NDTYPES] = {
        "float32", "float64", "float16", "bfloat16", "int32",
        "int64", "bool", "uint8", "complex64", "complex128"};
    return (int)d >= 0 && d < FW_NDTYPES ? names[d] : "invalid";
}

/* ---- layouts --------------------------------------------------------------------- */

/* The common shape of up to 3 operands and their strides (elements), passed
 * to kernels by value. */
struct cu_layout {
    int ndim;
    int64_t shape[FW_MAX_DIMS];
    int64_t st[3][FW_MAX_DIMS];
};

/* fw__coalesce (cpu/backend.c) on a layout: drop size-1 dims, merge dims
 * contiguous with each other in every operand; ndim >= 1 after. */
static inline void cu_coalesce(cu_layout *l, int nops)
{
    int out = 0;

    for (int i = 0; i < l->ndim; i++) {
        if (l->shape[i] == 1)
            continue;
        if (out > 0) {
            bool merge = true;
            for (int k = 0; k < nops && merge; k++)
                merge = l->st[k][out - 1] == l->st[k][i] * l->shape[i];
            if (merge) {
                l->shape[out - 1] *= l->shape[i];
                for (int k = 0; k < nops; k++)
                    l->st[k][out - 1] = l->st[k][i];
                continue;
            }
        }
        l->shape[out] = l->shape[i];
        for (int k = 0; k < nops; k++)
            l->st[k][out] = l->st[k][i];
        out++;
    }
    if (out == 0) {
        l->shape[0] = 1;
        for (int k = 0; k < nops; k++)
            l->st[k][0] = 0;
        out = 1;
    }
    l->ndim = out;
}

/* The layout of views v[0..nops) over v[0]'s shape, coalesced; returns the
 * element count. */
static inline int64_t cu_layout_of(cu_layout *l, const fw_kview *const *v, int nops)
{
    int64_t n = 1;

    l->ndim = v[0]->ndim;
    for (int i = 0; i < v[0]->ndim; i++) {
        l->shape[i] = v[0]->shape[i];
        n *= l->shape[i];
        for (int k = 0; k < nops; k++)
            l->st[k][i] = v[k]->strides[i];
    }
    cu_coalesce(l, nops);
    return n;
}

/* Offsets (elements) of linear index i in each of NOPS operands. */
template <int NOPS>
__device__ __forceinline__ void cu_offsets(const cu_layout &l, int64_t i, int64_t *off)
{
    for (int k = 0; k < NOPS; k++)
        off[k] = 0;
    if (l.ndim == 1) {
        for (int k = 0; k < NOPS; k++)
            off[k] = i * l.st[k][0];
        return;
    }
    for (int d = l.ndim - 1; d >= 0; d--) {
        int64_t s = l.shape[d];
        int64_t q = i / s;
        int64_t c = i - q * s;
        i = q;
        for (int k = 0; k < NOPS; k++)
            off[k] += c * l.st[k][d];
    }
}

/* Grid-stride loop over [0, n) with 64-bit indices. */
#define CU_FOR(i, n)                                                                  \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);         \
         i += (int64_t)gridDim.x * blockDim.x)

/* The layout of nops operands over `shape` with host stride arrays
 * st[k] (elements, 0 on broadcast dims), coalesced; returns the count. */
static inline int64_t cu_layout_from(cu_layout *l, int ndim, const int64_t *shape, int nops,
                                     const int64_t *const *st)
{
    int64_t n = 1;

    l->ndim = ndim;
    for (int i = 0; i < ndim; i++) {
        l->shape[i] = shape[i];
        n *= shape[i];
        for (int k = 0; k < nops; k++)
            l->st[k][i] = st[k][i];
    }
    cu_coalesce(l, nops);
    return n;
}

/* After a launch: FW_EDEVICE with CUDA's message, or 0. */
static inline int cu_launched(const char *op) { return fw__cu_error(cudaGetLastError(), op); }

/* Scratch device memory for one call, stream-ordered on the compute stream
 * (CUDA's own pool: work queued before the free finishes first). FW_ENOMEM
 * when the device is out of memory. */
static inline int cu_scratch(void **p, size_t n, const char *op)
{
    cudaError_t e = cudaMallocAsync(p, n ? n : 1, fw__cu_stream());
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        *p = NULL;
        return fw__cu_error_set(e == cudaErrorMemoryAllocation ? FW_ENOMEM : FW_EDEVICE,
                                "%s: %zu bytes of device scratch: %s", op, n,
                                cudaGetErrorString(e));
    }
    return 0;
}

static inline void cu_scratch_free(void *p)
{
    if (p != NULL)
        (void)cudaFreeAsync(p, fw__cu_stream());
}

/* *p += v atomically; uint8 through a compare-and-swap of its aligned word
 * (allocations are 64-byte aligned, so the word is inside them). */
template <typename T> __device__ __forceinline__ void cu_atomic_add(T *p, T v)
{
    if constexpr (std::is_same<T, float>::value || std::is_same<T, double>::value) {
        atomicAdd(p, v);
    } else if constexpr (sizeof(T) == 4) {
        atomicAdd((int *)p, (int)v);
    } else if constexpr (sizeof(T) == 8) {
        atomicAdd((unsigned long long *)p, (unsigned long long)v);
    } else {
        uintptr_t a = (uintptr_t)p;
        unsigned int *w = (unsigned int *)(a & ~(uintptr_t)3);
        unsigned int shift = (unsigned int)(a & 3) * 8;
        unsigned int old = *w, assumed;
        do {
            assumed = old;
            unsigned int b = ((assumed >> shift) + (unsigned int)v) & 0xffu;
            old = atomicCAS(w, assumed, (assumed & ~(0xffu << shift)) | (b << shift));
        } while (assumed != old);
    }
}

#endif
