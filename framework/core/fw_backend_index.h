/*
 * fw_backend_index.h - the index/join kernel family of a backend (private
 * to framework/; see fw_backend.h). The ops in ops/index*.c and ops/join.c
 * check shapes, dtypes and index ranges, make inputs contiguous, and reach
 * these entries only through fw_backend_family(b, b->index, op).
 *
 * Memory: element data, index arrays (int64, already validated:
 * 0 <= idx < axis length) and masks (uint8/bool) are DEVICE memory of the
 * backend. Arrays of sizes, strides and data pointers (shape, len, ds, ins,
 * outs) and `fill`/`val` scalars are HOST memory: a launch's parameters.
 * Every entry returns 0 or a negative FW_E* after fw_error_set();
 * FW_EDTYPE for a dtype the backend lacks. Strides count elements (0 on
 * broadcast dims). ndim <= FW_MAX_DIMS.
 *
 * Data-movement entries copy elements of `esize` bytes (1, 2, 4, 8, 16)
 * and so serve every dtype; numeric entries take the dtype (float32,
 * float64, int32, int64, uint8/bool unless stated).
 */
#ifndef FW_BACKEND_INDEX_H
#define FW_BACKEND_INDEX_H

#include "fw_backend.h"

struct fw_index_kernels {
    /* ---- data movement (any dtype) ---- */

    /* ins[k]: (outer, len[k], inner) -> out: (outer, sum(len), inner). */
    int (*concat)(size_t esize, void *out, const void *const *ins, const int64_t *len, int n,
                  int64_t outer, int64_t inner);
    /* in: (outer, sum(len), inner) -> outs[k]: (outer, len[k], inner). */
    int (*split)(size_t esize, void *const *outs, const void *in, const int64_t *len, int n,
                 int64_t outer, int64_t inner);
    /* in: (outer, axis_len, inner), idx: (nidx) -> out: (outer, nidx, inner),
     * out[o,j,i] = in[o,idx[j],i]. */
    int (*gather)(size_t esize, void *out, const void *in, const int64_t *idx, int64_t nidx,
                  int64_t outer, int64_t axis_len, int64_t inner);
    /* in: (outer, in_len, inner), idx: (outer, idx_len, inner) -> out: idx's
     * shape, out[o,j,i] = in[o,idx[o,j,i],i]. */
    int (*take_along)(size_t esize, void *out, const void *in, const int64_t *idx,
                      int64_t outer, int64_t in_len, int64_t idx_len, int64_t inner);
    /* out: (outer, axis_len, inner), src: (outer, nidx, inner);
     * out[o,idx[j],i] = src[o,j,i] in order of j (the last write wins).
     * src NULL writes *fill (esize bytes, host) instead. */
    int (*index_copy)(size_t esize, void *out, const void *src, const int64_t *idx,
                      int64_t nidx, int64_t outer, int64_t axis_len, int64_t inner,
                      const void *fill);
    /* out: (outer, out_len, inner), src, idx: (outer, idx_len, inner);
     * out[o,idx[o,j,i],i] = src[o,j,i] (last write wins); src NULL: *fill. */
    int (*scatter_along)(size_t esize, void *out, const void *src, const int64_t *idx,
                         int64_t outer, int64_t out_len, int64_t idx_len, int64_t inner,
                         const void *fill);
    /* Separable index-map copy (tile, pad): in: in_shape, out: out_shape, both
     * contiguous. maps (device) holds ndim maps back to back, map d
     * (out_shape[d] entries) at offset out_shape[0] + ... + out_shape[d-1]:
     * the input coordinate along d that output coordinate j reads, or -1 for
     * "fill"; an output element with any -1 coordinate takes *fill. */
    int (*map_copy)(size_t esize, void *out, const void *in, int ndim,
                    const int64_t *out_shape, const int64_t *in_shape, const int64_t *maps,
                    const void *fill);
    /* out (contiguous, shape) = cond ? x : y; cond/x/y read at strides
     * cs/xs/ys. */
    int (*where)(size_t esize, void *out, const uint8_t *cond, const int64_t *cs,
                 const void *x, const int64_t *xs, const void *y, const int64_t *ys, int ndim,
                 const int64_t *shape);
    /* out (contiguous, shape) = in read at strides st. */
    int (*strided_copy)(size_t esize, void *out, const void *in, const int64_t *st, int ndim,
                        const int64_t *shape);
    /* dst at strides ds = src at strides ss, over shape. */
    int (*strided_write)(size_t esize, void *dst, const int64_t *ds, const void *src,
                         const int64_t *ss, int ndim, const int64_t *shape);
    /* dst[e] = *val (host) where mask[e]; dst, mask at strides ds / ms. */
    int (*masked_fill)(size_t esize, void *dst, const int64_t *ds, const uint8_t *mask,
                       const int64_t *ms, int ndim, const int64_t *shape, const void *val);
    /* x, mask: (n) contiguous -> out: the x[e] with mask[e], in order; out has
     * room for n elements. *count (host) = how many were written. */
    int (*masked_select)(size_t esize, void *out, const void *x, const uint8_t *mask,
                         int64_t n, int64_t *count);
    /* Adjoint of masked_select: gx: (n), zeros on entry; gx[e] = g[k++] for
     * each true mask[e] in order. */
    int (*masked_scatter)(size_t esize, void *gx, const void *g, const uint8_t *mask,
                          int64_t n);

    /* ---- numeric (typed by dt) ---- */

    /* out: (outer, axis_len, inner) += src: (outer, nidx, inner) at rows idx
     * (repeated rows accumulate). */
    int (*index_add)(fw_dtype dt, void *out, const void *src, const int64_t *idx, int64_t nidx,
                     int64_t outer, int64_t axis_len, int64_t inner);
    /* out: (outer, out_len, inner); src, idx: (outer, idx_len, inner);
     * out[o,idx[o,j,i],i] += src[o,j,i]. */
    int (*scatter_add_along)(fw_dtype dt, void *out, const void *src, const int64_t *idx,
                             int64_t outer, int64_t out_len, int64_t idx_len, int64_t inner);
    /* Adjoint of map_copy (maps as there): in (in_shape) += out (out_shape);
     * float32/float64. */
    int (*map_add)(fw_dtype dt, void *in, const void *out, int ndim, const int64_t *out_shape,
                   const int64_t *in_shape, const int64_t *maps);
    /* out, x: (n); out = min(max(x, lo), hi), a bound applied only when
     * has_lo / has_hi; lo and hi are converted to dt first: (T)lo for
     * floats, saturating to the type's limits for integers. */
    int (*clip)(fw_dtype dt, void *out, const void *x, int64_t n, int has_lo, double lo,
                int has_hi, double hi);
    /* gx = g where lo <= x <= hi (bounds as in clip), else 0; all (n);
     * float32/float64. */
    int (*clip_grad)(fw_dtype dt, void *gx, const void *g, const void *x, int64_t n,
                     int has_lo, double lo, int has_hi, double hi);
    /* out, x: (outer, len, inner): running sum along len (from the end when
     * reverse). */
    int (*cumsum)(fw_dtype dt, void *out, const void *x, int64_t outer, int64_t len,
                  int64_t inner, int reverse);
    /* Stable sort of every lane of x: (outer, len, inner) (lane l =
     * (l / inner, :, l % inner)); the first k of each sorted lane go to
     * vals/idx: (outer, k, inner), idx int64 positions along len. NaN sorts
     * as the largest; ties keep their order in both directions. vals may be
     * NULL (argsort). The CPU splits the lanes over its pool; FW_ENOMEM when
     * scratch is short. */
    int (*sort)(fw_dtype dt, void *vals, int64_t *idx, const void *x, int64_t outer,
                int64_t len, int64_t inner, int64_t k, int descending);
    /* dst at strides ds += src (contiguous), over shape. */
    int (*strided_add)(fw_dtype dt, void *dst, const int64_t *ds, const void *src, int ndim,
                       const int64_t *shape);
    /* idx: (n) validated in [0, c) -> out: (n, c) of dt (float32 on the CPU):
     * out[r, idx[r]] = 1, else 0. */
    int (*one_hot)(fw_dtype dt, void *out, const int64_t *idx, int64_t n, int64_t c);
};

#endif
