/*
 * index_cpu.h - CPU kernels of the indexing and joining ops (fwidx; private).
 *
 * Plain functions over contiguous buffers, llm.c style: sizes are spelled out
 * and each kernel states the shapes it sees on entry. The op layer
 * (ops/index.c, ops/join.c) checks shapes, dtypes and index ranges, makes
 * inputs contiguous and picks the typed variant; a kernel never fails.
 *
 * Data-movement kernels (concat, split, gather, take_along, map_copy, where)
 * copy elements of `esize` bytes and so serve every dtype. Numeric kernels
 * come in typed variants named by suffix: _f32, _f64, _i32, _i64, _u8.
 *
 * Index arrays are int64 and already validated (0 <= idx < axis length).
 */
#ifndef FW_INDEX_CPU_H
#define FW_INDEX_CPU_H

#include <stddef.h>
#include <stdint.h>

/* ---- data movement (any dtype) ---------------------------------------- */

/* concat along an axis: ins[k]: (outer, len[k], inner) -> out: (outer, sum(len), inner) */
void fw__cpu_concat(void *out, const void *const *ins, const int64_t *len, int n,
                    int64_t outer, int64_t inner, size_t esize);

/* split along an axis: in: (outer, sum(len), inner) -> outs[k]: (outer, len[k], inner) */
void fw__cpu_split(void *const *outs, const void *in, const int64_t *len, int n,
                   int64_t outer, int64_t inner, size_t esize);

/* gather / index_select: in: (outer, axis_len, inner), idx: (nidx)
 * -> out: (outer, nidx, inner), out[o,j,i] = in[o,idx[j],i] */
void fw__cpu_gather(void *out, const void *in, const int64_t *idx, int64_t nidx,
                    int64_t outer, int64_t axis_len, int64_t inner, size_t esize);

/* take_along_axis: in: (outer, in_len, inner), idx: (outer, idx_len, inner)
 * -> out: (outer, idx_len, inner), out[o,j,i] = in[o,idx[o,j,i],i] */
void fw__cpu_take_along(void *out, const void *in, const int64_t *idx, int64_t outer,
                        int64_t in_len, int64_t idx_len, int64_t inner, size_t esize);

/* index_copy (scatter rows): out: (outer, axis_len, inner), src: (outer,
 * nidx, inner); out[o, idx[j], i] = src[o, j, i] in order of j (the last
 * write wins). src NULL writes *fill (esize bytes) instead. */
void fw__cpu_index_copy(void *out, const void *src, const int64_t *idx, int64_t nidx,
                        int64_t outer, int64_t axis_len, int64_t inner, const void *fill,
                        size_t esize);

/* put_along_axis: out: (outer, out_len, inner), src, idx: (outer, idx_len,
 * inner); out[o, idx[o,j,i], i] = src[o,j,i] (last write wins). src NULL
 * writes *fill instead. */
void fw__cpu_scatter_along(void *out, const void *src, const int64_t *idx, int64_t outer,
                           int64_t out_len, int64_t idx_len, int64_t inner, const void *fill,
                           size_t esize);

/* Separable index-map copy (tile, pad, slicing): in: in_shape, out: out_shape,
 * both ndim dims and contiguous; maps[d][j] (j < out_shape[d]) is the input
 * coordinate along d that out coordinate j reads, or -1 for "fill". An output
 * element with any -1 coordinate takes *fill (esize bytes). */
void fw__cpu_map_copy(void *out, const void *in, int ndim, const int64_t *out_shape,
                      const int64_t *in_shape, const int64_t *const *maps,
                      const void *fill, size_t esize);

/* where over strided (broadcast) operands: out: shape (contiguous);
 * cond/x/y are read at element strides cs/xs/ys (0 on broadcast dims). */
void fw__cpu_where(void *out, const uint8_t *cond, const int64_t *cs, const void *x,
                   const int64_t *xs, const void *y, const int64_t *ys, int ndim,
                   const int64_t *shape, size_t esize);

/* Strided copy: out (contiguous, shape) = in read at element strides `st`. */
void fw__cpu_strided_copy(void *out, const void *in, const int64_t *st, int ndim,
                          const int64_t *shape, size_t esize);

/* Strided write: dst read/written at element strides `ds` = src read at
 * element strides `ss` (0 on broadcast dims), over shape. */
void fw__cpu_strided_write(void *dst, const int64_t *ds, const void *src,
                           const int64_t *ss, int ndim, const int64_t *shape,
                           size_t esize);

/* masked fill: dst[e] = *val (esize bytes) where mask[e], over shape; dst and
 * mask at element strides ds / ms (0 on broadcast dims). */
void fw__cpu_masked_fill(void *dst, const int64_t *ds, const uint8_t *mask,
                         const int64_t *ms, int ndim, const int64_t *shape,
                         const void *val, size_t esize);

/* masked_select: x, mask: (n) contiguous -> out: (count of true), in order.
 * Returns the count. */
int64_t fw__cpu_masked_select(void *out, const void *x, const uint8_t *mask, int64_t n,
                              size_t esize);

/* Adjoint of masked_select: gx: (n) zeros on entry; gx[e] = g[k++] for each
 * true mask[e]. */
void fw__cpu_masked_scatter(void *gx, const void *g, const uint8_t *mask, int64_t n,
                            size_t esize);

/* ---- numeric, typed ----------------------------------------------------- */

#define FW__IDX_DECL(S, T)                                                          \
    /* out: (outer, axis_len, inner) += src: (outer, nidx, inner) at rows idx */    \
    void fw__cpu_index_add_##S(T *out, const T *src, const int64_t *idx, int64_t nidx, \
                               int64_t outer, int64_t axis_len, int64_t inner);      \
    /* out: (outer, out_len, inner); src, idx: (outer, idx_len, inner);             \
     * out[o, idx[o,j,i], i] += src[o,j,i] */                                        \
    void fw__cpu_scatter_add_along_##S(T *out, const T *src, const int64_t *idx,     \
                                       int64_t outer, int64_t out_len,               \
                                       int64_t idx_len, int64_t inner);              \
    /* Adjoint of map_copy: in (in_shape) += out (out_shape) through maps. */        \
    void fw__cpu_map_add_##S(T *in, const T *out, int ndim, const int64_t *out_shape, \
                             const int64_t *in_shape, const int64_t *const *maps);   \
    /* x, out: (n); bounds applied when has_lo / has_hi */                           \
    void fw__cpu_clip_##S(T *out, const T *x, int64_t n, int has_lo, T lo, int has_hi, \
                          T hi);                                                      \
    /* gx = g where lo <= x <= hi, else 0; all (n) */                                \
    void fw__cpu_clip_grad_##S(T *gx, const T *g, const T *x, int64_t n, int has_lo,  \
                               T lo, int has_hi, T hi);                               \
    /* x, out: (outer, len, inner); running sum along len (from the end if reverse) */ \
    void fw__cpu_cumsum_##S(T *out, const T *x, int64_t outer, int64_t len,          \
                            int64_t inner, int reverse);                              \
    /* Stable sort of lanes [lane0, lane1) of x: (outer, len, inner), lane l =    \
     * (l / inner, :, l % inner); the first k of each sorted lane go to vals/idx:    \
     * (outer, k, inner). NaN sorts as the largest. tmp: scratch of 2*len int64.     \
     * vals may be NULL (argsort). */                                                \
    void fw__cpu_sort_##S(T *vals, int64_t *idx, const T *x, int64_t len, int64_t inner, \
                          int64_t k, int descending, int64_t lane0, int64_t lane1,   \
                          int64_t *tmp);                                             \
    /* dst (strides ds) += src (contiguous), over shape */                           \
    void fw__cpu_strided_add_##S(T *dst, const int64_t *ds, const T *src, int ndim,   \
                                 const int64_t *shape);

FW__IDX_DECL(f32, float)
FW__IDX_DECL(f64, double)
FW__IDX_DECL(i32, int32_t)
FW__IDX_DECL(i64, int64_t)
FW__IDX_DECL(u8, uint8_t)

/* one_hot: idx: (n) validated in [0, c) -> out: (n, c) float32 */
void fw__cpu_one_hot_f32(float *out, const int64_t *idx, int64_t n, int64_t c);

#endif
