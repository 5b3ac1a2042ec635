/*
 * index.c - CPU kernels of the indexing and joining ops (see index_cpu.h).
 *
 * Every kernel works on contiguous buffers the op layer prepared, with
 * validated indices; none of them allocates or fails.
 */
#include "index_cpu.h"

#include <math.h>
#include <string.h>

/* ---- data movement ----------------------------------------------------- */

void fw__cpu_concat(void *out, const void *const *ins, const int64_t *len, int n,
                    int64_t outer, int64_t inner, size_t esize)
{
    /* ins[k]: (outer, len[k], inner) -> out: (outer, sum(len), inner) */
    char *o = out;
    for (int64_t a = 0; a < outer; a++) {
        for (int k = 0; k < n; k++) {
            size_t chunk = (size_t)(len[k] * inner) * esize;
            memcpy(o, (const char *)ins[k] + (size_t)a * chunk, chunk);
            o += chunk;
        }
    }
}

void fw__cpu_split(void *const *outs, const void *in, const int64_t *len, int n,
                   int64_t outer, int64_t inner, size_t esize)
{
    /* in: (outer, sum(len), inner) -> outs[k]: (outer, len[k], inner) */
    const char *p = in;
    for (int64_t a = 0; a < outer; a++) {
        for (int k = 0; k < n; k++) {
            size_t chunk = (size_t)(len[k] * inner) * esize;
            memcpy((char *)outs[k] + (size_t)a * chunk, p, chunk);
            p += chunk;
        }
    }
}

void fw__cpu_gather(void *out, const void *in, const int64_t *idx, int64_t nidx,
                    int64_t outer, int64_t axis_len, int64_t inner, size_t esize)
{
    /* in: (outer, axis_len, inner), idx: (nidx) -> out: (outer, nidx, inner) */
    size_t row = (size_t)inner * esize;
    char *o = out;
    for (int64_t a = 0; a < outer; a++) {
        const char *base = (const char *)in + (size_t)(a * axis_len) * row;
        for (int64_t j = 0; j < nidx; j++, o += row)
            memcpy(o, base + (size_t)idx[j] * row, row);
    }
}

void fw__cpu_take_along(void *out, const void *in, const int64_t *idx, int64_t outer,
                        int64_t in_len, int64_t idx_len, int64_t inner, size_t esize)
{
    /* in: (outer, in_len, inner), idx/out: (outer, idx_len, inner) */
    char *o = out;
    for (int64_t a = 0; a < outer; a++) {
        const char *base = (const char *)in + (size_t)(a * in_len * inner) * esize;
        for (int64_t j = 0; j < idx_len; j++) {
            const int64_t *ir = idx + (a * idx_len + j) * inner;
            for (int64_t i = 0; i < inner; i++, o += esize)
                memcpy(o, base + (size_t)(ir[i] * inner + i) * esize, esize);
        }
    }
}

void fw__cpu_index_copy(void *out, const void *src, const int64_t *idx, int64_t nidx,
                        int64_t outer, int64_t axis_len, int64_t inner, const void *fill,
                        size_t esize)
{
    /* out: (outer, axis_len, inner) <- src: (outer, nidx, inner) at rows idx */
    size_t row = (size_t)inner * esize;
    for (int64_t a = 0; a < outer; a++) {
        char *base = (char *)out + (size_t)(a * axis_len) * row;
        for (int64_t j = 0; j < nidx; j++) {
            char *dst = base + (size_t)idx[j] * row;
            if (src) {
                memcpy(dst, (const char *)src + (size_t)(a * nidx + j) * row, row);
            } else {
                for (int64_t i = 0; i < inner; i++)
                    memcpy(dst + (size_t)i * esize, fill, esize);
            }
        }
    }
}

void fw__cpu_scatter_along(void *out, const void *src, const int64_t *idx, int64_t outer,
                           int64_t out_len, int64_t idx_len, int64_t inner, const void *fill,
                           size_t esize)
{
    /* out: (outer, out_len, inner); src, idx: (outer, idx_len, inner) */
    for (int64_t a = 0; a < outer; a++) {
        char *base = (char *)out + (size_t)(a * out_len * inner) * esize;
        for (int64_t j = 0; j < idx_len; j++) {
            int64_t row = (a * idx_len + j) * inner;
            for (int64_t i = 0; i < inner; i++)
                memcpy(base + (size_t)(idx[row + i] * inner + i) * esize,
                       src ? (const char *)src + (size_t)(row + i) * esize : (const char *)fill,
                       esize);
        }
    }
}

static void map_copy_rec(char *out, const char *in, int d, int ndim,
                         const int64_t *out_shape, const int64_t *in_stride,
                         const int64_t *out_stride, const int64_t *const *maps,
                         const void *fill, size_t esize, int filled)
{
    int64_t n = out_shape[d];
    const int64_t *m = maps[d];
    if (d == ndim - 1) {
        for (int64_t j = 0; j < n; j++) {
            if (filled || m[j] < 0)
                memcpy(out + (size_t)j * esize, fill, esize);
            else
                memcpy(out + (size_t)j * esize, in + (size_t)m[j] * esize, esize);
        }
        return;
    }
    for (int64_t j = 0; j < n; j++) {
        int f = filled || m[j] < 0;
        map_copy_rec(out + (size_t)(j * out_stride[d]) * esize,
                     f ? in : in + (size_t)(m[j] * in_stride[d]) * esize, d + 1, ndim,
                     out_shape, in_stride, out_stride, maps, fill, esize, f);
    }
}

static void contiguous_strides(int64_t *st, const int64_t *shape, int ndim)
{
    int64_t s = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        st[d] = s;
        s *= shape[d];
    }
}

void fw__cpu_map_copy(void *out, const void *in, int ndim, const int64_t *out_shape,
                      const int64_t *in_shape, const int64_t *const *maps,
                      const void *fill, size_t esize)
{
    /* in: in_shape -> out: out_shape, out[j...] = in[maps[0][j0], maps[1][j1], ...] */
    int64_t ist[16], ost[16];
    if (ndim == 0) {
        memcpy(out, in, esize);
        return;
    }
    for (int d = 0; d < ndim; d++)
        if (out_shape[d] == 0)
            return;
    contiguous_strides(ist, in_shape, ndim);
    contiguous_strides(ost, out_shape, ndim);
    map_copy_rec(out, in, 0, ndim, out_shape, ist, ost, maps, fill, esize, 0);
}

/* Walk an n-d index over `shape`, calling nothing: callers inline the body.
 * Advances coords and reports which offsets to add via the stride arrays. */
#define ND_LOOP_BEGIN(ndim, shape)                                  \
    int64_t total_ = 1, coord_[16];                                 \
    for (int d_ = 0; d_ < (ndim); d_++) {                           \
        total_ *= (shape)[d_];                                      \
        coord_[d_] = 0;                                             \
    }                                                               \
    for (int64_t e_ = 0; e_ < total_; e_++) {
#define ND_LOOP_ADVANCE(ndim, shape, NOFF, ...)                     \
    for (int d_ = (ndim) - 1; d_ >= 0; d_--) {                      \
        if (++coord_[d_] < (shape)[d_]) {                           \
            NOFF(d_, 1, __VA_ARGS__);                               \
            break;                                                  \
        }                                                           \
        coord_[d_] = 0;                                             \
        NOFF(d_, -((shape)[d_] - 1), __VA_ARGS__);                  \
    }                                                               \
    }

#define ADV3(d, k, a, as, b, bs, c, cs) \
    do { a += (k) * as[d]; b += (k) * bs[d]; c += (k) * cs[d]; } while (0)
#define ADV2(d, k, a, as, b, bs) \
    do { a += (k) * as[d]; b += (k) * bs[d]; } while (0)
#define ADV1(d, k, a, as) \
    do { a += (k) * as[d]; } while (0)

void fw__cpu_where(void *out, const uint8_t *cond, const int64_t *cs, const void *x,
                   const int64_t *xs, const void *y, const int64_t *ys, int ndim,
                   const int64_t *shape, size_t esize)
{
    /* out: shape (contiguous); cond/x/y at element strides cs/xs/ys */
    int64_t co = 0, xo = 0, yo = 0;
    char *o = out;
    ND_LOOP_BEGIN(ndim, shape)
        if (cond[co])
            memcpy(o, (const char *)x + xo * (ptrdiff_t)esize, esize);
        else
            memcpy(o, (const char *)y + yo * (ptrdiff_t)esize, esize);
        o += esize;
    ND_LOOP_ADVANCE(ndim, shape, ADV3, co, cs, xo, xs, yo, ys)
}

void fw__cpu_strided_copy(void *out, const void *in, const int64_t *st, int ndim,
                          const int64_t *shape, size_t esize)
{
    /* out: shape (contiguous) <- in at element strides st */
    int64_t io = 0;
    char *o = out;
    ND_LOOP_BEGIN(ndim, shape)
        memcpy(o, (const char *)in + io * (ptrdiff_t)esize, esize);
        o += esize;
    ND_LOOP_ADVANCE(ndim, shape, ADV1, io, st)
}

void fw__cpu_strided_write(void *dst, const int64_t *ds, const void *src,
                           const int64_t *ss, int ndim, const int64_t *shape,
                           size_t esize)
{
    /* dst at strides ds <- src at strides ss, over shape */
    int64_t doff = 0, soff = 0;
    ND_LOOP_BEGIN(ndim, shape)
        memcpy((char *)dst + doff * (ptrdiff_t)esize,
               (const char *)src + soff * (ptrdiff_t)esize, esize);
    ND_LOOP_ADVANCE(ndim, shape, ADV2, doff, ds, soff, ss)
}

void fw__cpu_masked_fill(void *dst, const int64_t *ds, const uint8_t *mask,
                         const int64_t *ms, int ndim, const int64_t *shape,
                         const void *val, size_t esize)
{
    /* dst at strides ds, mask at strides ms, over shape */
    int64_t doff = 0, moff = 0;
    ND_LOOP_BEGIN(ndim, shape)
        if (mask[moff])
            memcpy((char *)dst + doff * (ptrdiff_t)esize, val, esize);
    ND_LOOP_ADVANCE(ndim, shape, ADV2, doff, ds, moff, ms)
}

int64_t fw__cpu_masked_select(void *out, const void *x, const uint8_t *mask, int64_t n,
                              size_t esize)
{
    /* x, mask: (n) -> out: (count) */
    int64_t k = 0;
    for (int64_t e = 0; e < n; e++)
        if (mask[e])
            memcpy((char *)out + (size_t)(k++) * esize, (const char *)x + (size_t)e * esize,
                   esize);
    return k;
}

void fw__cpu_masked_scatter(void *gx, const void *g, const uint8_t *mask, int64_t n,
                            size_t esize)
{
    /* g: (count) -> gx: (n) at the true positions */
    int64_t k = 0;
    for (int64_t e = 0; e < n; e++)
        if (mask[e])
            memcpy((char *)gx + (size_t)e * esize, (const char *)g + (size_t)(k++) * esize,
                   esize);
}

/* ---- numeric, typed ----------------------------------------------------- */

/* less-than with NaN as the largest value (floating types only) */
#define LT_FLT(a, b) ((a) < (b) || (isnan(b) && !isnan(a)))
#define LT_INT(a, b) ((a) < (b))

#define FW__IDX_DEF(S, T, LT)                                                          \
void fw__cpu_index_add_##S(T *out, const T *src, const int64_t *idx, int64_t nidx,      \
                           int64_t outer, int64_t axis_len, int64_t inner)             \
{                                                                                       \
    /* out: (outer, axis_len, inner) += src: (outer, nidx, inner) at rows idx */       \
    for (int64_t a = 0; a < outer; a++) {                                               \
        T *ob = out + a * axis_len * inner;                                             \
        const T *sb = src + a * nidx * inner;                                           \
        for (int64_t j = 0; j < nidx; j++) {                                            \
            T *restrict orow = ob + idx[j] * inner;                                     \
            const T *restrict srow = sb + j * inner;                                    \
            for (int64_t i = 0; i < inner; i++)                                         \
                orow[i] += srow[i];                                                     \
        }                                                                               \
    }                                                                                   \
}                                                                                       \
                                                                                        \
void fw__cpu_scatter_add_along_##S(T *out, const T *src, const int64_t *idx,            \
                                   int64_t outer, int64_t out_len, int64_t idx_len,     \
                                   int64_t inner)                                       \
{                                                                                       \
    /* out: (outer, out_len, inner); src, idx: (outer, idx_len, inner) */              \
    for (int64_t a = 0; a < outer; a++) {                                               \
        T *ob = out + a * out_len * inner;                                              \
        for (int64_t j = 0; j < idx_len; j++) {                                         \
            const T *sr = src + (a * idx_len + j) * inner;                              \
            const int64_t *ir = idx + (a * idx_len + j) * inner;                        \
            for (int64_t i = 0; i < inner; i++)                                         \
                ob[ir[i] * inner + i] += sr[i];                                         \
        }                                                                               \
    }                                                                                   \
}                                                                                       \
                                                                                        \
static void map_add_rec_##S(T *in, const T *out, int d, int ndim,                       \
                            const int64_t *out_shape, const int64_t *in_stride,         \
                            const int64_t *out_stride, const int64_t *const *maps)      \
{                                                                                       \
    int64_t n = out_shape[d];                                                           \
    const int64_t *m = maps[d];                                                         \
    if (d == ndim - 1) {                                                                \
        for (int64_t j = 0; j < n; j++)                                                 \
            if (m[j] >= 0)                                                              \
                in[m[j]] += out[j];                                                     \
        return;                                                                         \
    }                                                                                   \
    for (int64_t j = 0; j < n; j++)                                                     \
        if (m[j] >= 0)                                                                  \
            map_add_rec_##S(in + m[j] * in_stride[d], out + j * out_stride[d], d + 1,   \
                            ndim, out_shape, in_stride, out_stride, maps);              \
}                                                                                       \
                                                                                        \
void fw__cpu_map_add_##S(T *in, const T *out, int ndim, const int64_t *out_shape,       \
                         const int64_t *in_shape, const int64_t *const *maps)           \
{                                                                                       \
    /* in: in_shape += out: out_shape through maps (adjoint of map_copy) */            \
    int64_t ist[16], ost[16];                                                           \
    if (ndim == 0) {                                                                    \
        in[0] += out[0];                                                                \
        return;                                                                         \
    }                                                                                   \
    for (int d = 0; d < ndim; d++)                                                      \
        if (out_shape[d] == 0)                                                          \
            return;                                                                     \
    contiguous_strides(ist, in_shape, ndim);                                            \
    contiguous_strides(ost, out_shape, ndim);                                           \
    map_add_rec_##S(in, out, 0, ndim, out_shape, ist, ost, maps);                       \
}                                                                                       \
                                                                                        \
void fw__cpu_clip_##S(T *out, const T *x, int64_t n, int has_lo, T lo, int has_hi,      \
                      T hi)                                                             \
{                                                                                       \
    /* x, out: (n) */                                                                  \
    for (int64_t i = 0; i < n; i++) {                                                   \
        T v = x[i];                                                                     \
        if (has_lo && v < lo)                                                           \
            v = lo;                                                                     \
        if (has_hi && v > hi)                                                           \
            v = hi;                                                                     \
        out[i] = v;                                                                     \
    }                                                                                   \
}                                                                                       \
                                                                                        \
void fw__cpu_clip_grad_##S(T *gx, const T *g, const T *x, int64_t n, int has_lo, T lo,  \
                           int has_hi, T hi)                                            \
{                                                                                       \
    /* gx, g, x: (n) */                                                                \
    for (int64_t i = 0; i < n; i++) {                                                   \
        int pass = (!has_lo || x[i] >= lo) && (!has_hi || x[i] <= hi);                  \
        gx[i] = pass ? g[i] : (T)0;                                                     \
    }                                                                                   \
}                                                                                       \
                                                                                        \
void fw__cpu_cumsum_##S(T *out, const T *x, int64_t outer, int64_t len, int64_t inner,  \
                        int reverse)                                                    \
{                                                                                       \
    /* x, out: (outer, len, inner) */                                                  \
    for (int64_t a = 0; a < outer; a++) {                                               \
        const T *xb = x + a * len * inner;                                              \
        T *ob = out + a * len * inner;                                                  \
        if (len == 0)                                                                   \
            continue;                                                                   \
        int64_t first = reverse ? len - 1 : 0, step = reverse ? -inner : inner;         \
        const T *xp = xb + first * inner;                                               \
        T *op = ob + first * inner;                                                     \
        for (int64_t i = 0; i < inner; i++)                                             \
            op[i] = xp[i];                                                              \
        for (int64_t j = 1; j < len; j++) {                                             \
            const T *restrict prev = op;                                                \
            xp += step;                                                                 \
            op += step;                                                                 \
            for (int64_t i = 0; i < inner; i++)                                         \
                op[i] = (T)(prev[i] + xp[i]);                                           \
        }                                                                               \
    }                                                                                   \
}                                                                                       \
                                                                                        \
/* Stable merge sort of positions p[0..n) by lane values v[p*inner]. */                 \
static void msort_##S(int64_t *p, int64_t *t, int64_t n, const T *v, int64_t inner,    \
                      int desc)                                                         \
{                                                                                       \
    if (n < 2)                                                                          \
        return;                                                                         \
    if (n <= 16) { /* insertion sort: stable */                                         \
        for (int64_t i = 1; i < n; i++) {                                               \
            int64_t q = p[i], j = i;                                                    \
            T vq = v[q * inner];                                                        \
            while (j > 0) {                                                             \
                T vp = v[p[j - 1] * inner];                                             \
                if (desc ? LT(vp, vq) : LT(vq, vp)) {                                   \
                    p[j] = p[j - 1];                                                    \
                    j--;                                                                \
                } else                                                                  \
                    break;                                                              \
            }                                                                           \
            p[j] = q;                                                                   \
        }                                                                               \
        return;                                                                         \
    }                                                                                   \
    int64_t h = n / 2;                                                                  \
    msort_##S(p, t, h, v, inner, desc);                                                 \
    msort_##S(p + h, t, n - h, v, inner, desc);                                         \
    int64_t i = 0, j = h, k = 0;                                                        \
    while (i < h && j < n) {                                                            \
        T a = v[p[i] * inner], b = v[p[j] * inner];                                     \
        /* take the right one only when strictly before the left: stable */            \
        if (desc ? LT(a, b) : LT(b, a))                                                 \
            t[k++] = p[j++];                                                            \
        else                                                                            \
            t[k++] = p[i++];                                                            \
    }                                                                                   \
    while (i < h)                                                                       \
        t[k++] = p[i++];                                                                \
    while (j < n)                                                                       \
        t[k++] = p[j++];                                                                \
    memcpy(p, t, (size_t)n * sizeof(*p));                                               \
}                                                                                       \
                                                                                        \
void fw__cpu_sort_##S(T *vals, int64_t *idx, const T *x, int64_t len, int64_t inner,    \
                      int64_t k, int descending, int64_t lane0, int64_t lane1,          \
                      int64_t *tmp)                                                     \
{                                                                                       \
    /* x: (outer, len, inner) -> vals, idx: (outer, k, inner), lanes [lane0, lane1) */ \
    int64_t *p = tmp, *t = tmp + len;                                                   \
    for (int64_t l = lane0; l < lane1; l++) {                                           \
        int64_t a = l / inner, i = l % inner;                                           \
        const T *lane = x + a * len * inner + i;                                        \
        for (int64_t j = 0; j < len; j++)                                               \
            p[j] = j;                                                                   \
        msort_##S(p, t, len, lane, inner, descending);                                  \
        for (int64_t j = 0; j < k; j++) {                                               \
            int64_t o = (a * k + j) * inner + i;                                        \
            idx[o] = p[j];                                                              \
            if (vals)                                                                   \
                vals[o] = lane[p[j] * inner];                                           \
        }                                                                               \
    }                                                                                   \
}

#define FW__STRIDED_ADD_DEF(S, T)                                               \
void fw__cpu_strided_add_##S(T *dst, const int64_t *ds, const T *src, int ndim,  \
                             const int64_t *shape)                              \
{                                                                               \
    /* dst at strides ds += src (contiguous), over shape */                    \
    int64_t doff = 0;                                                           \
    ND_LOOP_BEGIN(ndim, shape)                                                  \
        dst[doff] += *src++;                                                    \
    ND_LOOP_ADVANCE(ndim, shape, ADV1, doff, ds)                                \
}
FW__STRIDED_ADD_DEF(f32, float)
FW__STRIDED_ADD_DEF(f64, double)
FW__STRIDED_ADD_DEF(i32, int32_t)
FW__STRIDED_ADD_DEF(i64, int64_t)
FW__STRIDED_ADD_DEF(u8, uint8_t)

FW__IDX_DEF(f32, float, LT_FLT)
FW__IDX_DEF(f64, double, LT_FLT)
FW__IDX_DEF(i32, int32_t, LT_INT)
FW__IDX_DEF(i64, int64_t, LT_INT)
FW__IDX_DEF(u8, uint8_t, LT_INT)

void fw__cpu_one_hot_f32(float *out, const int64_t *idx, int64_t n, int64_t c)
{
    /* idx: (n) -> out: (n, c) */
    memset(out, 0, (size_t)(n * c) * sizeof(*out));
    for (int64_t i = 0; i < n; i++)
        out[i * c + idx[i]] = 1.0f;
}
