/*
 * index.cu - the CUDA backend's index/join family (core/fw_backend_index.h):
 * the data movement of cpu/index.c on the device, and its numeric kernels.
 *
 * Results match the CPU's: "last write wins" copies (index_copy,
 * scatter_along) keep the CPU's order (the last j of a row wins), and the
 * accumulating kernels (index_add, scatter_add, cumsum) run each lane's
 * additions in the CPU's order, one thread per lane, so they give its bits,
 * when there are lanes enough to fill the GPU; with few lanes index_add and
 * scatter_add use atomics (float sums then differ from the CPU by rounding
 * only, and from run to run), as do map_add and strided_add onto broadcast
 * destinations, and cumsum over few long lanes scans chunks in parallel.
 * sort is in sort.cu.
 */
#include "cu_core_kernels.h"
#include "cu_family_kernels.h"
#include "cu_kern.cuh"

#include <cub/device/device_scan.cuh>

static int no_dtype(const char *op, fw_dtype dt)
{
    return fw__cu_error_set(FW_EDTYPE, "%s: dtype %s not supported by the cuda kernels", op,
                            cu_dtype_name(dt));
}

static int no_esize(const char *op, size_t es)
{
    return fw__cu_error_set(FW_EINVAL, "%s: element size %zu", op, es);
}

/* Call F<E>(args) for the element type of esize bytes. */
#define BY_ESIZE(op, es, F, ...)                              \
    switch (es) {                                             \
    case 1: F<uint8_t>(__VA_ARGS__); break;                   \
    case 2: F<uint16_t>(__VA_ARGS__); break;                  \
    case 4: F<uint32_t>(__VA_ARGS__); break;                  \
    case 8: F<uint64_t>(__VA_ARGS__); break;                  \
    case 16: F<cu_el16>(__VA_ARGS__); break;                  \
    default: return no_esize(op, es);                         \
    }

/* Call F<T>(args) for a numeric dtype (float32/64, int32/64, uint8/bool). */
#define BY_DTYPE(op, dt, F, ...)                              \
    switch (dt) {                                             \
    case FW_FLOAT32: F<float>(__VA_ARGS__); break;            \
    case FW_FLOAT64: F<double>(__VA_ARGS__); break;           \
    case FW_INT32: F<int32_t>(__VA_ARGS__); break;            \
    case FW_INT64: F<int64_t>(__VA_ARGS__); break;            \
    case FW_UINT8: case FW_BOOL: F<uint8_t>(__VA_ARGS__); break; \
    default: return no_dtype(op, dt);                         \
    }

#define BY_FLOAT(op, dt, F, ...)                              \
    switch (dt) {                                             \
    case FW_FLOAT32: F<float>(__VA_ARGS__); break;            \
    case FW_FLOAT64: F<double>(__VA_ARGS__); break;           \
    default: return no_dtype(op, dt);                         \
    }

#define LAUNCH(n) <<<fw__cu_blocks(n), FW_CU_THREADS, 0, fw__cu_stream()>>>

template <typename E> static E host_elem(const void *p)
{
    E v;
    memcpy(&v, p, sizeof(E));
    return v;
}

/* ---- concat / split: rows of width elements between pitched buffers ------------ */

template <typename E>
__global__ void k_rows(E *dst, int64_t dpitch, const E *src, int64_t spitch, int64_t width,
                       int64_t height)
{
    CU_FOR(e, width * height) {
        int64_t r = e / width, c = e - r * width;
        dst[r * dpitch + c] = src[r * spitch + c];
    }
}

template <typename E>
static void rows(void *dst, int64_t dpitch, const void *src, int64_t spitch, int64_t width,
                 int64_t height)
{
    if (width * height > 0)
        k_rows<E> LAUNCH(width * height)((E *)dst, dpitch, (const E *)src, spitch, width, height);
}

static int c_concat(size_t es, void *out, const void *const *ins, const int64_t *len, int n,
                    int64_t outer, int64_t inner)
{
    /* ins[k]: (outer, len[k], inner) -> out: (outer, sum(len), inner) */
    int64_t total = 0, off = 0;
    for (int k = 0; k < n; k++)
        total += len[k];
    for (int k = 0; k < n; k++) {
        char *dst = (char *)out + (size_t)(off * inner) * es;
        BY_ESIZE("concat", es, rows, dst, total * inner, ins[k], len[k] * inner, len[k] * inner,
                 outer)
        off += len[k];
    }
    return cu_launched("concat");
}

static int c_split(size_t es, void *const *outs, const void *in, const int64_t *len, int n,
                   int64_t outer, int64_t inner)
{
    /* in: (outer, sum(len), inner) -> outs[k]: (outer, len[k], inner) */
    int64_t total = 0, off = 0;
    for (int k = 0; k < n; k++)
        total += len[k];
    for (int k = 0; k < n; k++) {
        const char *src = (const char *)in + (size_t)(off * inner) * es;
        BY_ESIZE("split", es, rows, outs[k], len[k] * inner, src, total * inner, len[k] * inner,
                 outer)
        off += len[k];
    }
    return cu_launched("split");
}

/* ---- gather / take_along ------------------------------------------------------------ */

template <typename E>
__global__ void k_gather(E *out, const E *in, const int64_t *idx, int64_t nidx, int64_t outer,
                         int64_t axis_len, int64_t inner)
{
    /* in: (outer, axis_len, inner), idx: (nidx) -> out: (outer, nidx, inner) */
    CU_FOR(e, outer * nidx * inner) {
        int64_t t = e / inner, i = e - t * inner;
        int64_t o = t / nidx, j = t - o * nidx;
        out[e] = in[(o * axis_len + idx[j]) * inner + i];
    }
}

template <typename E>
static void gather(void *out, const void *in, const int64_t *idx, int64_t nidx, int64_t outer,
                   int64_t axis_len, int64_t inner)
{
    k_gather<E> LAUNCH(outer * nidx * inner)((E *)out, (const E *)in, idx, nidx, outer, axis_len,
                                             inner);
}

static int c_gather(size_t es, void *out, const void *in, const int64_t *idx, int64_t nidx,
                    int64_t outer, int64_t axis_len, int64_t inner)
{
    if (outer * nidx * inner == 0)
        return 0;
    BY_ESIZE("gather", es, gather, out, in, idx, nidx, outer, axis_len, inner)
    return cu_launched("gather");
}

template <typename E>
__global__ void k_take_along(E *out, const E *in, const int64_t *idx, int64_t outer,
                             int64_t in_len, int64_t idx_len, int64_t inner)
{
    /* in: (outer, in_len, inner), idx/out: (outer, idx_len, inner) */
    CU_FOR(e, outer * idx_len * inner) {
        int64_t o = e / (idx_len * inner), i = e % inner;
        out[e] = in[(o * in_len + idx[e]) * inner + i];
    }
}

template <typename E>
static void take_along(void *out, const void *in, const int64_t *idx, int64_t outer,
                       int64_t in_len, int64_t idx_len, int64_t inner)
{
    k_take_along<E> LAUNCH(outer * idx_len * inner)((E *)out, (const E *)in, idx, outer, in_len,
                                                    idx_len, inner);
}

static int c_take_along(size_t es, void *out, const void *in, const int64_t *idx,
                        int64_t outer, int64_t in_len, int64_t idx_len, int64_t inner)
{
    if (outer * idx_len * inner == 0)
        return 0;
    BY_ESIZE("take_along", es, take_along, out, in, idx, outer, in_len, idx_len, inner)
    return cu_launched("take_along");
}

/* ---- index_copy: the last j naming a row wins ---------------------------------------- */

__global__ void k_last_writer(long long *win, const int64_t *idx, int64_t nidx)
{
    CU_FOR(j, nidx)
        atomicMax(&win[idx[j]], (long long)j);
}

template <typename E>
__global__ void k_index_copy(E *out, const E *src, const int64_t *idx, const long long *win,
                             int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner,
                             E fill)
{
    /* out: (outer, axis_len, inner) <- src: (outer, nidx, inner) at rows idx */
    CU_FOR(e, outer * nidx * inner) {
        int64_t t = e / inner, i = e - t * inner;
        int64_t o = t / nidx, j = t - o * nidx;
        int64_t r = idx[j];
        if (win[r] == j)
            out[(o * axis_len + r) * inner + i] = src != nullptr ? src[e] : fill;
    }
}

template <typename E>
static void index_copy(void *out, const void *src, const int64_t *idx, const long long *win,
                       int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner,
                       const void *fill)
{
    E f = fill != NULL ? host_elem<E>(fill) : E();
    k_index_copy<E> LAUNCH(outer * nidx * inner)((E *)out, (const E *)src, idx, win, nidx, outer,
                                                 axis_len, inner, f);
}

static int c_index_copy(size_t es, void *out, const void *src, const int64_t *idx,
                        int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner,
                        const void *fill)
{
    long long *win = NULL;
    int err;

    if (outer * nidx * inner == 0)
        return 0;
    if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
        return no_esize("index_copy", es);
    if ((err = cu_scratch((void **)&win, (size_t)axis_len * sizeof(*win), "index_copy")) < 0)
        return err;
    if ((err = fw__cu_error(cudaMemsetAsync(win, 0xff, (size_t)axis_len * sizeof(*win),
                                            fw__cu_stream()), "index_copy")) < 0)
        goto out;
    k_last_writer LAUNCH(nidx)(win, idx, nidx);
    BY_ESIZE("index_copy", es, index_copy, out, src, idx, win, nidx, outer, axis_len, inner, fill)
    err = cu_launched("index_copy");
out:
    cu_scratch_free(win);
    return err;
}

/* ---- scatter_along: a thread per lane (o, i), rows in the CPU's order ---------------- */

template <typename E>
__global__ void k_scatter_along(E *out, const E *src, const int64_t *idx, int64_t outer,
                                int64_t out_len, int64_t idx_len, int64_t inner, E fill)
{
    /* out: (outer, out_len, inner); src, idx: (outer, idx_len, inner) */
    CU_FOR(l, outer * inner) {
        int64_t o = l / inner, i = l - o * inner;
        for (int64_t j = 0; j < idx_len; j++) {
            int64_t s = (o * idx_len + j) * inner + i;
            out[(o * out_len + idx[s]) * inner + i] = src != nullptr ? src[s] : fill;
        }
    }
}

template <typename E>
static void scatter_along(void *out, const void *src, const int64_t *idx, int64_t outer,
                          int64_t out_len, int64_t idx_len, int64_t inner, const void *fill)
{
    E f = fill != NULL ? host_elem<E>(fill) : E();
    k_scatter_along<E> LAUNCH(outer * inner)((E *)out, (const E *)src, idx, outer, out_len,
                                             idx_len, inner, f);
}

static int c_scatter_along(size_t es, void *out, const void *src, const int64_t *idx,
                           int64_t outer, int64_t out_len, int64_t idx_len, int64_t inner,
                           const void *fill)
{
    if (outer * inner * idx_len == 0)
        return 0;
    BY_ESIZE("scatter_along", es, scatter_along, out, src, idx, outer, out_len, idx_len, inner,
             fill)
    return cu_launched("scatter_along");
}

/* ---- map_copy / map_add -------------------------------------------------------------- */

/* Output shape, input strides (contiguous) and where each dim's map starts. */
struct map_layout {
    int ndim;
    int64_t oshape[FW_MAX_DIMS], ist[FW_MAX_DIMS], moff[FW_MAX_DIMS];
};

static int64_t map_layout_of(map_layout *m, int ndim, const int64_t *out_shape,
                             const int64_t *in_shape)
{
    int64_t n = 1, s = 1, off = 0;

    m->ndim = ndim;
    for (int d = ndim - 1; d >= 0; d--) {
        m->ist[d] = s;
        s *= in_shape[d];
    }
    for (int d = 0; d < ndim; d++) {
        m->oshape[d] = out_shape[d];
        m->moff[d] = off;
        off += out_shape[d];
        n *= out_shape[d];
    }
    return n;
}

/* Input offset of output element e, or -1 when a coordinate maps to -1. */
__device__ __forceinline__ int64_t map_source(const map_layout &m, const int64_t *maps, int64_t e)
{
    int64_t off = 0;
    bool fill = false;
    for (int d = m.ndim - 1; d >= 0; d--) {
        int64_t q = e / m.oshape[d], j = e - q * m.oshape[d];
        e = q;
        int64_t v = maps[m.moff[d] + j];
        if (v < 0)
            fill = true;
        else
            off += v * m.ist[d];
    }
    return fill ? -1 : off;
}

template <typename E>
__global__ void k_map_copy(E *out, const E *in, map_layout m, const int64_t *maps, int64_t n,
                           E fill)
{
    CU_FOR(e, n) {
        int64_t s = map_source(m, maps, e);
        out[e] = s < 0 ? fill : in[s];
    }
}

template <typename E>
static void map_copy(void *out, const void *in, const map_layout &m, const int64_t *maps,
                     int64_t n, const void *fill)
{
    E f = fill != NULL ? host_elem<E>(fill) : E();
    k_map_copy<E> LAUNCH(n)((E *)out, (const E *)in, m, maps, n, f);
}

static int c_map_copy(size_t es, void *out, const void *in, int ndim, const int64_t *out_shape,
                      const int64_t *in_shape, const int64_t *maps, const void *fill)
{
    map_layout m;

    if (ndim == 0)
        return fw__cu_error(cudaMemcpyAsync(out, in, es, cudaMemcpyDeviceToDevice,
                                            fw__cu_stream()), "map_copy");
    int64_t n = map_layout_of(&m, ndim, out_shape, in_shape);
    if (n == 0)
        return 0;
    BY_ESIZE("map_copy", es, map_copy, out, in, m, maps, n, fill)
    return cu_launched("map_copy");
}

template <typename T>
__global__ void k_map_add(T *in, const T *out, map_layout m, const int64_t *maps, int64_t n)
{
    CU_FOR(e, n) {
        int64_t s = map_source(m, maps, e);
        if (s >= 0)
            cu_atomic_add(in + s, out[e]);
    }
}

template <typename T>
static void map_add(void *in, const void *out, const map_layout &m, const int64_t *maps,
                    int64_t n)
{
    k_map_add<T> LAUNCH(n)((T *)in, (const T *)out, m, maps, n);
}

template <typename T> __global__ void k_add_one(T *in, const T *out) { in[0] += out[0]; }

static int c_map_add(fw_dtype dt, void *in, const void *out, int ndim, const int64_t *out_shape,
                     const int64_t *in_shape, const int64_t *maps)
{
    map_layout m;

    if (ndim == 0) {
        if (dt == FW_FLOAT32)
            k_add_one<float><<<1, 1, 0, fw__cu_stream()>>>((float *)in, (const float *)out);
        else if (dt == FW_FLOAT64)
            k_add_one<double><<<1, 1, 0, fw__cu_stream()>>>((double *)in, (const double *)out);
        else
            return no_dtype("map_add", dt);
        return cu_launched("map_add");
    }
    int64_t n = map_layout_of(&m, ndim, out_shape, in_shape);
    if (n == 0)
        return 0;
    BY_FLOAT("map_add", dt, map_add, in, out, m, maps, n)
    return cu_launched("map_add");
}

/* ---- strided element-wise moves ------------------------------------------------------- */

template <typename E>
__global__ void k_where(E *out, cu_layout l, int64_t n, const uint8_t *cond, const E *x,
                        const E *y)
{
    /* out contiguous in l's (row-major) order; cond, x, y at l.st[0..2] */
    CU_FOR(e, n) {
        int64_t off[3];
        cu_offsets<3>(l, e, off);
        out[e] = cond[off[0]] ? x[off[1]] : y[off[2]];
    }
}

template <typename E>
static void where(void *out, const cu_layout &l, int64_t n, const uint8_t *cond, const void *x,
                  const void *y)
{
    k_where<E> LAUNCH(n)((E *)out, l, n, cond, (const E *)x, (const E *)y);
}

static int c_where(size_t es, void *out, const uint8_t *cond, const int64_t *cs, const void *x,
                   const int64_t *xs, const void *y, const int64_t *ys, int ndim,
                   const int64_t *shape)
{
    const int64_t *st[3] = {cs, xs, ys};
    cu_layout l;
    int64_t n = cu_layout_from(&l, ndim, shape, 3, st);

    if (n == 0)
        return 0;
    BY_ESIZE("where", es, where, out, l, n, cond, x, y)
    return cu_launched("where");
}

template <typename E>
__global__ void k_strided_copy(E *out, cu_layout l, int64_t n, const E *in)
{
    CU_FOR(e, n) {
        int64_t off[1];
        cu_offsets<1>(l, e, off);
        out[e] = in[off[0]];
    }
}

template <typename E>
static void strided_copy(void *out, const cu_layout &l, int64_t n, const void *in)
{
    k_strided_copy<E> LAUNCH(n)((E *)out, l, n, (const E *)in);
}

static int c_strided_copy(size_t es, void *out, const void *in, const int64_t *st, int ndim,
                          const int64_t *shape)
{
    const int64_t *sts[1] = {st};
    cu_layout l;
    int64_t n = cu_layout_from(&l, ndim, shape, 1, sts);

    if (n == 0)
        return 0;
    BY_ESIZE("strided_copy", es, strided_copy, out, l, n, in)
    return cu_launched("strided_copy");
}

template <typename E>
__global__ void k_strided_write(E *dst, cu_layout l, int64_t n, const E *src)
{
    CU_FOR(e, n) {
        int64_t off[2];
        cu_offsets<2>(l, e, off);
        dst[off[0]] = src[off[1]];
    }
}

template <typename E>
static void strided_write(void *dst, const cu_layout &l, int64_t n, const void *src)
{
    k_strided_write<E> LAUNCH(n)((E *)dst, l, n, (const E *)src);
}

static int c_strided_write(size_t es, void *dst, const int64_t *ds, const void *src,
                           const int64_t *ss, int ndim, const int64_t *shape)
{
    const int64_t *st[2] = {ds, ss};
    cu_layout l;
    int64_t n = cu_layout_from(&l, ndim, shape, 2, st);

    if (n == 0)
        return 0;
    BY_ESIZE("strided_write", es, strided_write, dst, l, n, src)
    return cu_launched("strided_write");
}

template <typename E>
__global__ void k_masked_fill(E *dst, cu_layout l, int64_t n, const uint8_t *mask, E val)
{
    CU_FOR(e, n) {
        int64_t off[2];
        cu_offsets<2>(l, e, off);
        if (mask[off[1]])
            dst[off[0]] = val;
    }
}

template <typename E>
static void masked_fill(void *dst, const cu_layout &l, int64_t n, const uint8_t *mask,
                        const void *val)
{
    k_masked_fill<E> LAUNCH(n)((E *)dst, l, n, mask, host_elem<E>(val));
}

static int c_masked_fill(size_t es, void *dst, const int64_t *ds, const uint8_t *mask,
                         const int64_t *ms, int ndim, const int64_t *shape, const void *val)
{
    const int64_t *st[2] = {ds, ms};
    cu_layout l;
    int64_t n = cu_layout_from(&l, ndim, shape, 2, st);

    if (n == 0)
        return 0;
    BY_ESIZE("masked_fill", es, masked_fill, dst, l, n, mask, val)
    return cu_launched("masked_fill");
}

/* ---- masked_select / masked_scatter: positions from a prefix sum of the mask ----------- */

__global__ void k_mask_to_pos(int64_t *pos, const uint8_t *mask, int64_t n)
{
    CU_FOR(e, n)
        pos[e] = mask[e] != 0;
}

/* pos[e] = the number of true mask entries before e, pos[n] = the total;
 * pos: n + 1 entries of scratch the caller frees (also on error). */
static int mask_positions(int64_t **pos, const uint8_t *mask, int64_t n, const char *op)
{
    void *tmp = NULL;
    size_t bytes = 0;
    int err;

    if ((err = cu_scratch((void **)pos, (size_t)(n + 1) * sizeof(int64_t), op)) < 0)
        return err;
    /* pos[n] = 0 so the exclusive sum over n + 1 entries ends with the total */
    if ((err = fw__cu_error(cudaMemsetAsync(*pos + n, 0, sizeof(int64_t), fw__cu_stream()), op)) <
        0)
        return err;
    k_mask_to_pos LAUNCH(n)(*pos, mask, n);
    if ((err = cu_launched(op)) < 0)
        return err;
    if ((err = fw__cu_error(cub::DeviceScan::ExclusiveSum(NULL, bytes, *pos, *pos, n + 1,
                                                          fw__cu_stream()), op)) < 0)
        return err;
    if ((err = cu_scratch(&tmp, bytes, op)) < 0)
        return err;
    err = fw__cu_error(cub::DeviceScan::ExclusiveSum(tmp, bytes, *pos, *pos, n + 1,
                                                     fw__cu_stream()), op);
    cu_scratch_free(tmp);
    return err;
}

template <typename E>
__global__ void k_masked_select(E *out, const E *x, const uint8_t *mask, const int64_t *pos,
                                int64_t n)
{
    CU_FOR(e, n)
        if (mask[e])
            out[pos[e]] = x[e];
}

template <typename E>
static void masked_select(void *out, const void *x, const uint8_t *mask, const int64_t *pos,
                          int64_t n)
{
    k_masked_select<E> LAUNCH(n)((E *)out, (const E *)x, mask, pos, n);
}

static int c_masked_select(size_t es, void *out, const void *x, const uint8_t *mask, int64_t n,
                           int64_t *count)
{
    int64_t *pos = NULL;
    int err;

    *count = 0;
    if (n <= 0)
        return 0;
    if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
        return no_esize("masked_select", es);
    if ((err = mask_positions(&pos, mask, n, "masked_select")) < 0)
        goto out;
    BY_ESIZE("masked_select", es, masked_select, out, x, mask, pos, n)
    if ((err = cu_launched("masked_select")) < 0)
        goto out;
    /* the count is a value the host needs: wait for it */
    if ((err = fw__cu_error(cudaMemcpyAsync(count, pos + n, sizeof(*count),
                                            cudaMemcpyDeviceToHost, fw__cu_stream()),
                            "masked_select")) < 0)
        goto out;
    err = fw__cu_error(cudaStreamSynchronize(fw__cu_stream()), "masked_select");
out:
    cu_scratch_free(pos);
    return err;
}

template <typename E>
__global__ void k_masked_scatter(E *gx, const E *g, const uint8_t *mask, const int64_t *pos,
                                 int64_t n)
{
    CU_FOR(e, n)
        if (mask[e])
            gx[e] = g[pos[e]];
}

template <typename E>
static void masked_scatter(void *gx, const void *g, const uint8_t *mask, const int64_t *pos,
                           int64_t n)
{
    k_masked_scatter<E> LAUNCH(n)((E *)gx, (const E *)g, mask, pos, n);
}

static int c_masked_scatter(size_t es, void *gx, const void *g, const uint8_t *mask, int64_t n)
{
    int64_t *pos = NULL;
    int err;

    if (n <= 0)
        return 0;
    if (es != 1 && es != 2 && es != 4 && es != 8 && es != 16)
        return no_esize("masked_scatter", es);
    if ((err = mask_positions(&pos, mask, n, "masked_scatter")) < 0)
        goto out;
    BY_ESIZE("masked_scatter", es, masked_scatter, gx, g, mask, pos, n)
    err = cu_launched("masked_scatter");
out:
    cu_scratch_free(pos);
    return err;
}

/* ---- index_add / scatter_add_along ------------------------------------------------------ */

/* Lanes (o, i) at or above this many: a thread per lane, in the CPU's order. */
#define LANES_ENOUGH 8192

template <typename T>
__global__ void k_index_add_lanes(T *out, const T *src, const int64_t *idx, int64_t nidx,
                                  int64_t outer, int64_t axis_len, int64_t inner)
{
    CU_FOR(l, outer * inner) {
        int64_t o = l / inner, i = l - o * inner;
        for (int64_t j = 0; j < nidx; j++) {
            T *p = out + (o * axis_len + idx[j]) * inner + i;
            *p = (T)(*p + src[(o * nidx + j) * inner + i]);
        }
    }
}

template <typename T>
__global__ void k_index_add_atomic(T *out, const T *src, const int64_t *idx, int64_t nidx,
                                   int64_t outer, int64_t axis_len, int64_t inner)
{
    CU_FOR(e, outer * nidx * inner) {
        int64_t t = e / inner, i = e - t * inner;
        int64_t o = t / nidx, j = t - o * nidx;
        cu_atomic_add(out + (o * axis_len + idx[j]) * inner + i, src[e]);
    }
}

template <typename T>
static void index_add(void *out, const void *src, const int64_t *idx, int64_t nidx,
                      int64_t outer, int64_t axis_len, int64_t inner)
{
    if (outer * inner >= LANES_ENOUGH || nidx == 1)
        k_index_add_lanes<T> LAUNCH(outer * inner)((T *)out, (const T *)src, idx, nidx, outer,
                                                   axis_len, inner);
    else
        k_index_add_atomic<T> LAUNCH(outer * nidx * inner)((T *)out, (const T *)src, idx, nidx,
                                                           outer, axis_len, inner);
}

static int c_index_add(fw_dtype dt, void *out, const void *src, const int64_t *idx,
                       int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner)
{
    if (outer * nidx * inner == 0)
        return 0;
    BY_DTYPE("index_add", dt, index_add, out, src, idx, nidx, outer, axis_len, inner)
    return cu_launched("index_add");
}

template <typename T>
__global__ void k_scatter_add_lanes(T *out, const T *src, const int64_t *idx, int64_t outer,
                                    int64_t out_len, int64_t idx_len, int64_t inner)
{
    CU_FOR(l, outer * inner) {
        int64_t o = l / inner, i = l - o * inner;
        for (int64_t j = 0; j < idx_len; j++) {
            int64_t s = (o * idx_len + j) * inner + i;
            T *p = out + (o * out_len + idx[s]) * inner + i;
            *p = (T)(*p + src[s]);
        }
    }
}

template <typename T>
__global__ void k_scatter_add_atomic(T *out, const T *src, const int64_t *idx, int64_t outer,
                                     int64_t out_len, int64_t idx_len, int64_t inner)
{
    CU_FOR(e, outer * idx_len * inner) {
        int64_t o = e / (idx_len * inner), i = e % inner;
        cu_atomic_add(out + (o * out_len + idx[e]) * inner + i, src[e]);
    }
}

template <typename T>
static void scatter_add(void *out, const void *src, const int64_t *idx, int64_t outer,
                        int64_t out_len, int64_t idx_len, int64_t inner)
{
    if (outer * inner >= LANES_ENOUGH || idx_len == 1)
        k_scatter_add_lanes<T> LAUNCH(outer * inner)((T *)out, (const T *)src, idx, outer,
                                                     out_len, idx_len, inner);
    else
        k_scatter_add_atomic<T> LAUNCH(outer * idx_len * inner)((T *)out, (const T *)src, idx,
                                                                outer, out_len, idx_len, inner);
}

static int c_scatter_add_along(fw_dtype dt, void *out, const void *src, const int64_t *idx,
                               int64_t outer, int64_t out_len, int64_t idx_len, int64_t inner)
{
    if (outer * idx_len * inner == 0)
        return 0;
    BY_DTYPE("scatter_add", dt, scatter_add, out, src, idx, outer, out_len, idx_len, inner)
    return cu_launched("scatter_add");
}

/* ---- clip / clip_grad / cumsum / strided_add / one_hot ---------------------------------- */

template <typename T>
__global__ void k_clip(T *out, const T *x, int64_t n, int has_lo, T lo, int has_hi, T hi)
{
    CU_FOR(i, n) {
        T v = x[i];
        if (has_lo && v < lo)
            v = lo;
        if (has_hi && v > hi)
            v = hi;
        out[i] = v;
    }
}

template <typename T>
static void clip(void *out, const void *x, int64_t n, int has_lo, double lo, int has_hi,
                 double hi)
{
    k_clip<T> LAUNCH(n)((T *)out, (const T *)x, n, has_lo, (T)lo, has_hi, (T)hi);
}

static int c_clip(fw_dtype dt, void *out, const void *x, int64_t n, int has_lo, double lo,
                  int has_hi, double hi)
{
    if (n <= 0)
        return 0;
    BY_DTYPE("clip", dt, clip, out, x, n, has_lo, lo, has_hi, hi)
    return cu_launched("clip");
}

template <typename T>
__global__ void k_clip_grad(T *gx, const T *g, const T *x, int64_t n, int has_lo, T lo,
                            int has_hi, T hi)
{
    CU_FOR(i, n) {
        bool pass = (!has_lo || x[i] >= lo) && (!has_hi || x[i] <= hi);
        gx[i] = pass ? g[i] : (T)0;
    }
}

template <typename T>
static void clip_grad(void *gx, const void *g, const void *x, int64_t n, int has_lo, double lo,
                      int has_hi, double hi)
{
    k_clip_grad<T> LAUNCH(n)((T *)gx, (const T *)g, (const T *)x, n, has_lo, (T)lo, has_hi,
                             (T)hi);
}

static int c_clip_grad(fw_dtype dt, void *gx, const void *g, const void *x, int64_t n,
                       int has_lo, double lo, int has_hi, double hi)
{
    if (n <= 0)
        return 0;
    BY_FLOAT("clip backward", dt, clip_grad, gx, g, x, n, has_lo, lo, has_hi, hi)
    return cu_launched("clip backward");
}

/* A thread per lane (o, i), summing along len in T as the CPU does. */
template <typename T>
__global__ void k_cumsum(T *out, const T *x, int64_t outer, int64_t len, int64_t inner,
                         int reverse)
{
    CU_FOR(l, outer * inner) {
        int64_t o = l / inner, i = l - o * inner;
        int64_t first = reverse ? len - 1 : 0, step = reverse ? -inner : inner;
        const T *xp = x + (o * len + first) * inner + i;
        T *op = out + (o * len + first) * inner + i;
        T acc = *xp;
        *op = acc;
        for (int64_t j = 1; j < len; j++) {
            xp += step;
            op += step;
            acc = (T)(acc + *xp);
            *op = acc;
        }
    }
}

/* Few long lanes: chunks of CUMSUM_CHUNK elements along each lane are
 * summed in parallel (k_chunk_sums), each lane's chunk sums are turned
 * into exclusive prefixes (k_chunk_prefix), and every chunk is scanned
 * from its prefix (k_chunk_scan). Ints give the CPU's values; floats add
 * in another order (its rounding differs by a few ulps of the running sum). */
#define CUMSUM_CHUNK 256
#define CUMSUM_FEW_LANES 1024
#define CUMSUM_LONG 8192

/* Address of element j (in scan order) of lane l. */
#define CUMSUM_AT(base, l, j)                                                              \
    ((base) + ((l) / inner * len + (reverse ? len - 1 - (j) : (j))) * inner + (l) % inner)

template <typename T>
__global__ void k_chunk_sums(T *part, const T *x, int64_t lanes, int64_t len, int64_t inner,
                             int64_t nch, int reverse)
{
    CU_FOR(e, lanes * nch) {
        int64_t l = e / nch, c = e - l * nch;
        int64_t j1 = (c + 1) * CUMSUM_CHUNK < len ? (c + 1) * CUMSUM_CHUNK : len;
        T acc = 0;
        for (int64_t j = c * CUMSUM_CHUNK; j < j1; j++)
            acc = (T)(acc + *CUMSUM_AT(x, l, j));
        part[e] = acc;
    }
}

template <typename T>
__global__ void k_chunk_prefix(T *part, int64_t lanes, int64_t nch)
{
    CU_FOR(l, lanes) {
        T acc = 0;
        for (int64_t c = 0; c < nch; c++) {
            T v = part[l * nch + c];
            part[l * nch + c] = acc;
            acc = (T)(acc + v);
        }
    }
}

template <typename T>
__global__ void k_chunk_scan(T *out, const T *x, const T *part, int64_t lanes, int64_t len,
                             int64_t inner, int64_t nch, int reverse)
{
    CU_FOR(e, lanes * nch) {
        int64_t l = e / nch, c = e - l * nch;
        int64_t j1 = (c + 1) * CUMSUM_CHUNK < len ? (c + 1) * CUMSUM_CHUNK : len;
        T acc = part[e];
        for (int64_t j = c * CUMSUM_CHUNK; j < j1; j++) {
            acc = (T)(acc + *CUMSUM_AT(x, l, j));
            *CUMSUM_AT(out, l, j) = acc;
        }
    }
}

template <typename T>
static int cumsum(void *out, const void *x, int64_t outer, int64_t len, int64_t inner,
                  int reverse)
{
    int64_t lanes = outer * inner;
    if (lanes >= CUMSUM_FEW_LANES || len < CUMSUM_LONG) {
        k_cumsum<T> LAUNCH(lanes)((T *)out, (const T *)x, outer, len, inner, reverse);
        return cu_launched("cumsum");
    }
    int64_t nch = (len + CUMSUM_CHUNK - 1) / CUMSUM_CHUNK;
    T *part = NULL;
    int err;
    if ((err = cu_scratch((void **)&part, (size_t)(lanes * nch) * sizeof(T), "cumsum")) < 0)
        return err;
    k_chunk_sums<T> LAUNCH(lanes * nch)(part, (const T *)x, lanes, len, inner, nch, reverse);
    k_chunk_prefix<T> LAUNCH(lanes)(part, lanes, nch);
    k_chunk_scan<T> LAUNCH(lanes * nch)((T *)out, (const T *)x, part, lanes, len, inner, nch,
                                        reverse);
    err = cu_launched("cumsum");
    cu_scratch_free(part);
    return err;
}

static int c_cumsum(fw_dtype dt, void *out, const void *x, int64_t outer, int64_t len,
                    int64_t inner, int reverse)
{
    if (outer * inner * len == 0)
        return 0;
    switch (dt) {
    case FW_FLOAT32: return cumsum<float>(out, x, outer, len, inner, reverse);
    case FW_FLOAT64: return cumsum<double>(out, x, outer, len, inner, reverse);
    case FW_INT32: return cumsum<int32_t>(out, x, outer, len, inner, reverse);
    case FW_INT64: return cumsum<int64_t>(out, x, outer, len, inner, reverse);
    case FW_UINT8: case FW_BOOL: return cumsum<uint8_t>(out, x, outer, len, inner, reverse);
    default: return no_dtype("cumsum", dt);
    }
}

/* dst[ds] += src; dst dims with stride 0 (several src elements onto one)
 * go through atomics. */
template <typename T>
__global__ void k_strided_add(T *dst, cu_layout l, int64_t n, const T *src, bool atomic)
{
    CU_FOR(e, n) {
        int64_t off[1];
        cu_offsets<1>(l, e, off);
        if (atomic)
            cu_atomic_add(dst + off[0], src[e]);
        else
            dst[off[0]] = (T)(dst[off[0]] + src[e]);
    }
}

template <typename T>
static void strided_add(void *dst, const cu_layout &l, int64_t n, const void *src, bool atomic)
{
    k_strided_add<T> LAUNCH(n)((T *)dst, l, n, (const T *)src, atomic);
}

static int c_strided_add(fw_dtype dt, void *dst, const int64_t *ds, const void *src, int ndim,
                         const int64_t *shape)
{
    const int64_t *st[1] = {ds};
    cu_layout l;
    bool atomic = false;
    int64_t n = cu_layout_from(&l, ndim, shape, 1, st);

    if (n == 0)
        return 0;
    for (int d = 0; d < l.ndim; d++)
        atomic = atomic || (l.st[0][d] == 0 && l.shape[d] > 1);
    BY_DTYPE("strided_add", dt, strided_add, dst, l, n, src, atomic)
    return cu_launched("strided_add");
}

template <typename T>
__global__ void k_one_hot(T *out, const int64_t *idx, int64_t n, int64_t c)
{
    CU_FOR(r, n)
        out[r * c + idx[r]] = (T)1;
}

template <typename T>
static void one_hot(void *out, const int64_t *idx, int64_t n, int64_t c)
{
    k_one_hot<T> LAUNCH(n)((T *)out, idx, n, c);
}

static int c_one_hot(fw_dtype dt, void *out, const int64_t *idx, int64_t n, int64_t c)
{
    int sz = cu_dtype_size(dt);
    int err;

    if (n * c == 0)
        return 0;
    if (dt != FW_FLOAT32 && dt != FW_FLOAT64 && dt != FW_INT32 && dt != FW_INT64)
        return no_dtype("one_hot", dt);
    if ((err = fw__cu_error(cudaMemsetAsync(out, 0, (size_t)(n * c) * sz, fw__cu_stream()),
                            "one_hot")) < 0)
        return err;
    BY_DTYPE("one_hot", dt, one_hot, out, idx, n, c)
    return cu_launched("one_hot");
}

static_assert(sizeof(struct fw_index_kernels) == 22 * sizeof(void (*)(void)),
              "fw_index_kernels changed: update the table below");

extern "C" const struct fw_index_kernels fw__cu_index_kernels = {
    c_concat,
    c_split,
    c_gather,
    c_take_along,
    c_index_copy,
    c_scatter_along,
    c_map_copy,
    c_where,
    c_strided_copy,
    c_strided_write,
    c_masked_fill,
    c_masked_select,
    c_masked_scatter,
    c_index_add,
    c_scatter_add_along,
    c_map_add,
    c_clip,
    c_clip_grad,
    c_cumsum,
    fw__cu_sort,
    c_strided_add,
    c_one_hot,
};
