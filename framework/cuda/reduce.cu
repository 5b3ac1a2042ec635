/*
 * reduce.cu - reductions over an axis mask, and argmax/argmin, on the
 * device. Semantics of cpu/reduce.c: float32 sums and products accumulate
 * in double, int sums/products in int64 (out int64), NaN propagates through
 * max/min, an empty reduction gives the identity (-inf/+inf, the int type's
 * min/max, 0 and 255 for uint8), arg max/min return the first index (the
 * first NaN when there is one). float16/bfloat16 (not on the CPU) sum in
 * double and compare in float.
 *
 * Work split: x's dims (after coalescing) are either kept (one output each
 * combination) or reduced. A group of G threads (1, 32 or 256) reduces one
 * output's elements, or one chunk of them when there are few outputs: the
 * chunks' partials then go through a second, per-output pass. Every order
 * is fixed, so results do not change between runs.
 */
#include "cu_core_kernels.h"
#include "cu_kern.cuh"

#include <float.h>
#include <math.h>
#include <type_traits>

/* Kept and reduced dims of x, each with x's strides (elements). */
struct red_layout {
    int kn, rn;
    int64_t ks[FW_MAX_DIMS], kst[FW_MAX_DIMS];
    int64_t rs[FW_MAX_DIMS], rst[FW_MAX_DIMS];
};

__device__ __forceinline__ int64_t dims_offset(int n, const int64_t *shape, const int64_t *st,
                                               int64_t i)
{
    if (n == 1)
        return i * st[0];
    int64_t off = 0;
    for (int d = n - 1; d >= 0; d--) {
        int64_t q = i / shape[d];
        off += (i - q * shape[d]) * st[d];
        i = q;
    }
    return off;
}

/* Combine an element (or a partial) v into acc. */
template <int OP> struct red_op;
template <> struct red_op<FW_RED_SUM> {
    template <typename A> static __device__ __forceinline__ A comb(A acc, A v) { return acc + v; }
};
template <> struct red_op<FW_RED_PROD> {
    template <typename A> static __device__ __forceinline__ A comb(A acc, A v) { return acc * v; }
};
template <> struct red_op<FW_RED_MAX> {
    template <typename A> static __device__ __forceinline__ A comb(A acc, A v)
    {
        return (v > acc || v != v) ? v : acc;
    }
};
template <> struct red_op<FW_RED_MIN> {
    template <typename A> static __device__ __forceinline__ A comb(A acc, A v)
    {
        return (v < acc || v != v) ? v : acc;
    }
};

template <int OP, typename A> __device__ __forceinline__ A red_identity()
{
    if (OP == FW_RED_SUM)
        return (A)0;
    if (OP == FW_RED_PROD)
        return (A)1;
    if constexpr (std::is_floating_point<A>::value)
        return OP == FW_RED_MAX ? (A)-INFINITY : (A)INFINITY;
    else if constexpr (std::is_same<A, int32_t>::value)
        return OP == FW_RED_MAX ? (A)INT32_MIN : (A)INT32_MAX;
    else if constexpr (std::is_same<A, int64_t>::value)
        return OP == FW_RED_MAX ? (A)INT64_MIN : (A)INT64_MAX;
    else
        return OP == FW_RED_MAX ? (A)0 : (A)255;
}

template <typename T> __device__ __forceinline__ T shfl_down(T v, int d)
{
    if constexpr (sizeof(T) < 4)
        return (T)__shfl_down_sync(0xffffffffu, (int)v, d);
    else
        return __shfl_down_sync(0xffffffffu, v, d);
}

/* The group's accumulators combined; valid in thread 0 of the group. */
template <int OP, int G, typename A>
__device__ __forceinline__ A group_reduce(A acc)
{
    if constexpr (G >= 32) {
        for (int d = 16; d > 0; d >>= 1)
            acc = red_op<OP>::comb(acc, shfl_down(acc, d));
    }
    if constexpr (G > 32) {
        __shared__ A part[G / 32];
        int lane = threadIdx.x & 31, warp = threadIdx.x / 32;
        if (lane == 0)
            part[warp] = acc;
        __syncthreads();
        if (warp == 0) {
            acc = lane < G / 32 ? part[lane] : red_identity<OP, A>();
            for (int d = 16; d > 0; d >>= 1)
                acc = red_op<OP>::comb(acc, shfl_down(acc, d));
        }
        __syncthreads();
    }
    return acc;
}

template <typename TO, typename A> __device__ __forceinline__ TO red_out(A v)
{
    return cu_num<TO>::store((typename cu_num<TO>::calc)v);
}

/*
 * x: strided per l; K outputs, each reducing R elements split into `chunks`
 * chunks of clen. chunks == 1: out[o] (TO) is written; else part[o * chunks
 * + c] (A). Groups of G consecutive threads (G divides blockDim.x).
 */
template <typename TX, typename TO, typename A, int OP, int G>
__global__ void red_kernel(red_layout l, int64_t K, int64_t R, int64_t chunks, int64_t clen,
                           const TX *x, TO *out, A *part)
{
    int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t ngroups = (int64_t)gridDim.x * blockDim.x / G;
    int lane = (int)(tid % G);

    for (int64_t g = tid / G; g < K * chunks; g += ngroups) {
        int64_t o = g / chunks, c = g - o * chunks;
        int64_t r0 = c * clen, r1 = r0 + clen < R ? r0 + clen : R;
        const TX *xp = x + dims_offset(l.kn, l.ks, l.kst, o);
        A acc = red_identity<OP, A>();
        for (int64_t r = r0 + lane; r < r1; r += G)
            acc = red_op<OP>::comb(acc, (A)cu_num<TX>::load(xp[dims_offset(l.rn, l.rs, l.rst, r)]));
        acc = group_reduce<OP, G>(acc);
        if (lane == 0) {
            if (chunks == 1)
                out[o] = red_out<TO>(acc);
            else
                part[g] = acc;
        }
    }
}

/* out[o] = the chunks' partials of output o combined in order. */
template <typename TO, typename A, int OP>
__global__ void red_finish(int64_t K, int64_t chunks, const A *part, TO *out)
{
    CU_FOR(o, K) {
        A acc = red_identity<OP, A>();
        for (int64_t c = 0; c < chunks; c++)
            acc = red_op<OP>::comb(acc, part[o * chunks + c]);
        out[o] = red_out<TO>(acc);
    }
}

/* Enough threads in flight for a large GPU (132 SMs x 2048). */
#define RED_TARGET_THREADS (1LL << 18)

template <typename TX, typename TO, typename A, int OP, int G>
static int red_run(const red_layout &l, int64_t K, int64_t R, const void *x, void *out)
{
    cudaStream_t s = fw__cu_stream();
    int64_t chunks = 1;
    /* split R when the outputs alone leave the GPU idle, keeping >= 64
     * elements per thread */
    if (K * G < RED_TARGET_THREADS && R > 64LL * G) {
        chunks = RED_TARGET_THREADS / (K * G);
        int64_t most = R / (64LL * G);
        chunks = chunks < most ? chunks : most;
        chunks = chunks < 1 ? 1 : chunks;
    }
    int64_t clen = (R + chunks - 1) / chunks;
    int64_t groups = K * chunks;
    long long threads = groups * G;
    A *part = NULL;

    int err;

    if (chunks > 1 && (err = cu_scratch((void **)&part, (size_t)groups * sizeof(A), "reduce")) < 0)
        return err;
    red_kernel<TX, TO, A, OP, G><<<fw__cu_blocks(threads), FW_CU_THREADS, 0, s>>>(
        l, K, R, chunks, clen, (const TX *)x, (TO *)out, part);
    if (chunks > 1) {
        red_finish<TO, A, OP><<<fw__cu_blocks(K), FW_CU_THREADS, 0, s>>>(K, chunks, part,
                                                                         (TO *)out);
        err = cu_launched("reduce");
        cu_scratch_free(part);
        return err;
    }
    return cu_launched("reduce");
}

template <typename TX, typename TO, typename A, int OP>
static int red_group(const red_layout &l, int64_t K, int64_t R, const void *x, void *out)
{
    /* rows contiguous along the reduced dims: threads of a warp read
     * neighbours; otherwise a thread per output reads neighbours when the
     * kept dims are the inner ones */
    bool rows = l.rn > 0 && l.rst[l.rn - 1] == 1;
    if (R >= 32 && (rows || K < 1024)) {
        if (R >= 2048 && K < 4096)
            return red_run<TX, TO, A, OP, 256>(l, K, R, x, out);
        return red_run<TX, TO, A, OP, 32>(l, K, R, x, out);
    }
    return red_run<TX, TO, A, OP, 1>(l, K, R, x, out);
}

/* TX the input, TO the output, AS the accumulator of sums/products, AM of
 * max/min. */
template <typename TX, typename TO, typename AS, typename AM>
static int red_dtype(fw_redop op, const red_layout &l, int64_t K, int64_t R, const void *x,
                     void *out, fw_dtype odt, fw_dtype want_sum)
{
    switch (op) {
    case FW_RED_SUM: case FW_RED_PROD:
        if (odt != want_sum)
            return 1;
        return op == FW_RED_SUM ? red_group<TX, TO, AS, FW_RED_SUM>(l, K, R, x, out)
                                : red_group<TX, TO, AS, FW_RED_PROD>(l, K, R, x, out);
    case FW_RED_MAX: return red_group<TX, TX, AM, FW_RED_MAX>(l, K, R, x, out);
    case FW_RED_MIN: return red_group<TX, TX, AM, FW_RED_MIN>(l, K, R, x, out);
    default: return 1;
    }
}

extern "C" int fw__cu_reduce(fw_redop op, const fw_kview *out, const fw_kview *x, unsigned mask)
{
    cu_layout c;
    int64_t ocont[FW_MAX_DIMS], acc = 1;
    int nd = x->ndim, k = 0;

    for (int i = out->ndim - 1; i >= 0; i--) {
        ocont[i] = acc;
        acc *= out->shape[i];
    }
    /* as the CPU: out keeps the reduced dims (size 1) when its ndim is x's */
    c.ndim = nd;
    for (int i = 0; i < nd; i++) {
        c.shape[i] = x->shape[i];
        c.st[0][i] = x->strides[i];
        if (mask & (1u << i)) {
            c.st[1][i] = 0;
            if (out->ndim == nd)
                k++;
        } else {
            c.st[1][i] = ocont[k++];
        }
    }
    if (acc == 0)
        return 0;
    bool empty = false;
    for (int i = 0; i < nd; i++)
        empty = empty || c.shape[i] == 0;
    red_layout l;
    int64_t K = 1, R = 1;
    l.kn = l.rn = 0;
    if (empty) {
        R = 0;    /* every output gets the identity */
    } else {
        cu_coalesce(&c, 2);
        for (int i = 0; i < c.ndim; i++) {
            if (c.st[1][i] != 0 || c.shape[i] == 1) {
                l.ks[l.kn] = c.shape[i];
                l.kst[l.kn++] = c.st[0][i];
                K *= c.shape[i];
            } else {
                l.rs[l.rn] = c.shape[i];
                l.rst[l.rn++] = c.st[0][i];
                R *= c.shape[i];
            }
        }
    }
    if (l.kn == 0) {
        l.ks[0] = 1;
        l.kst[0] = 0;
        l.kn = 1;
    }
    if (l.rn == 0) {
        l.rs[0] = 1;
        l.rst[0] = 0;
        l.rn = 1;
    }
    K = acc;
    int r;
    fw_dtype odt = out->dtype;
    switch (x->dtype) {
    case FW_FLOAT32:
        r = red_dtype<float, float, double, float>(op, l, K, R, x->data, out->data, odt, FW_FLOAT32);
        break;
    case FW_FLOAT64:
        r = red_dtype<double, double, double, double>(op, l, K, R, x->data, out->data, odt,
                                                      FW_FLOAT64);
        break;
    case FW_FLOAT16:
        r = red_dtype<cu_half, cu_half, double, float>(op, l, K, R, x->data, out->data, odt,
                                                       FW_FLOAT16);
        break;
    case FW_BFLOAT16:
        r = red_dtype<cu_bf16, cu_bf16, double, float>(op, l, K, R, x->data, out->data, odt,
                                                       FW_BFLOAT16);
        break;
    case FW_INT32:
        r = red_dtype<int32_t, int64_t, int64_t, int32_t>(op, l, K, R, x->data, out->data, odt,
                                                          FW_INT64);
        break;
    case FW_INT64:
        r = red_dtype<int64_t, int64_t, int64_t, int64_t>(op, l, K, R, x->data, out->data, odt,
                                                          FW_INT64);
        break;
    case FW_UINT8: case FW_BOOL:
        r = red_dtype<uint8_t, int64_t, int64_t, uint8_t>(op, l, K, R, x->data, out->data, odt,
                                                          FW_INT64);
        break;
    default: r = 1; break;
    }
    if (r > 0)
        return fw__cu_error_set(FW_EDTYPE, "reduce kernel has no %s -> %s version on cuda",
                                cu_dtype_name(x->dtype), cu_dtype_name(odt));
    return r;
}

/* ---- argmax / argmin ------------------------------------------------------------------ */

/* Whether (v, vi) beats (b, bi): the first NaN, else the larger (smaller)
 * value, ties to the lower index: the CPU's sequential scan's answer. */
template <typename C>
__device__ __forceinline__ bool arg_better(bool is_max, C v, int64_t vi, C b, int64_t bi)
{
    if (b != b)
        return v != v && vi < bi;
    if (v != v)
        return true;
    if (is_max ? v > b : v < b)
        return true;
    return v == b && vi < bi;
}

/* x: [outer, n, inner] contiguous; out[o * inner + in]. One thread per
 * output (G == 1, the CPU's scan) or a warp per output (G == 32). */
template <typename T, int G>
__global__ void arg_kernel(bool is_max, int64_t *out, const T *x, int64_t outer, int64_t n,
                           int64_t inner)
{
    typedef cu_num<T> N;
    typedef typename N::calc C;
    int64_t tid = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t ngroups = (int64_t)gridDim.x * blockDim.x / G;
    int lane = (int)(tid % G);

    for (int64_t g = tid / G; g < outer * inner; g += ngroups) {
        int64_t o = g / inner, in = g - o * inner;
        const T *p = x + o * n * inner + in;
        C best = 0;
        int64_t bi = INT64_MAX;
        for (int64_t i = lane; i < n; i += G) {
            C v = N::load(p[i * inner]);
            if (bi == INT64_MAX || arg_better(is_max, v, i, best, bi)) {
                best = v;
                bi = i;
            }
        }
        if constexpr (G > 1) {
            for (int d = 16; d > 0; d >>= 1) {
                C ov = shfl_down(best, d);
                int64_t oi = shfl_down(bi, d);
                if (oi != INT64_MAX && (bi == INT64_MAX || arg_better(is_max, ov, oi, best, bi))) {
                    best = ov;
                    bi = oi;
                }
            }
        }
        if (lane == 0)
            out[g] = bi == INT64_MAX ? 0 : bi;
    }
}

template <typename T>
static void arg_launch(bool is_max, int64_t *out, const void *x, int64_t outer, int64_t n,
                       int64_t inner)
{
    cudaStream_t s = fw__cu_stream();
    if (inner >= 32 || n < 64)
        arg_kernel<T, 1><<<fw__cu_blocks(outer * inner), FW_CU_THREADS, 0, s>>>(
            is_max, out, (const T *)x, outer, n, inner);
    else
        arg_kernel<T, 32><<<fw__cu_blocks(outer * inner * 32), FW_CU_THREADS, 0, s>>>(
            is_max, out, (const T *)x, outer, n, inner);
}

extern "C" int fw__cu_arg_reduce(bool is_max, int64_t *out, const void *x, fw_dtype dt,
                                 int64_t outer, int64_t n, int64_t inner)
{
    if (outer * inner == 0)
        return 0;
    switch (dt) {
    case FW_FLOAT32: arg_launch<float>(is_max, out, x, outer, n, inner); break;
    case FW_FLOAT64: arg_launch<double>(is_max, out, x, outer, n, inner); break;
    case FW_FLOAT16: arg_launch<cu_half>(is_max, out, x, outer, n, inner); break;
    case FW_BFLOAT16: arg_launch<cu_bf16>(is_max, out, x, outer, n, inner); break;
    case FW_INT32: arg_launch<int32_t>(is_max, out, x, outer, n, inner); break;
    case FW_INT64: arg_launch<int64_t>(is_max, out, x, outer, n, inner); break;
    case FW_UINT8: case FW_BOOL: arg_launch<uint8_t>(is_max, out, x, outer, n, inner); break;
    default:
        return fw__cu_error_set(FW_EDTYPE, "arg reduce kernel has no %s version",
                                cu_dtype_name(dt));
    }
    return cu_launched("arg_reduce");
}
