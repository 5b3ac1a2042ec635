/*
 * fw/index.h - indexing and joining ops: concat, stack, split, gather,
 * take_along_axis, index_select, index_add, scatter, put_along_axis, where,
 * clip, one_hot, topk, sort, argsort, cumsum, tile, pad; the reads behind
 * Python's x[idx] / x[mask] (index_get, masked_select) and the writes
 * behind x[...] = v (set_value, set_value_, index_put_, masked_fill_).
 *
 * API-STABLE
 *
 * Semantics follow Paddle 3.x (paddle.concat, paddle.split, ...); the
 * argument names below are Paddle's. Conventions as in fw/tensor.h: each op
 * returns 0 or a negative FW_E* code after fw_error_set(); out-parameters
 * come first and give the caller one reference each (drop with
 * fw_tensor_unref()); on error every out-parameter is NULL and nothing else
 * changed. Inputs are borrowed and may be any view (transposed, sliced,
 * expanded). Axes may be negative (counted from the end); an axis out of
 * range is FW_EAXIS naming the axis and the rank; shapes that do not fit are
 * FW_ESHAPE naming both shapes; an index out of range is FW_ERANGE naming
 * the index, the axis and its size.
 *
 * Autograd: every op whose output is float records a backward when grad mode
 * is on and an input has stop_gradient false (concat, stack, split, gather,
 * take_along_axis, index_select, index_add, scatter, put_along_axis, where,
 * clip, topk, sort, cumsum, tile, pad, set_value, index_get, masked_select).
 * Integer outputs (argsort, the indices of topk/sort, one_hot) carry no
 * gradient.
 *
 * Dtypes: data-movement ops (concat, stack, split, gather, take_along_axis,
 * index_select, where, tile, pad, index_get, masked_select, scatter and
 * put_along_axis in assign mode) take every dtype; topk/sort/argsort take
 * every dtype but float16/bfloat16 are compared in float32; cumsum, clip,
 * index_add and the accumulating scatter/put_along_axis take float32/64,
 * float16/bfloat16 (computed in float32), int32, int64 and uint8. Index
 * tensors are int32 or int64. Only CPU tensors so far (FW_EUNSUPPORTED).
 */
#ifndef FW_INDEX_H
#define FW_INDEX_H

#include <stdbool.h>
#include <stdint.h>

#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* paddle.concat(x, axis=0): join n >= 1 tensors of one dtype whose shapes
 * agree except along `axis`. FW_EINVAL (n < 1, NULL), FW_EDTYPE (mixed
 * dtypes), FW_ESHAPE (ranks or other dims differ), FW_EAXIS. */
int fw_concat(fw_tensor **out, fw_tensor *const *x, int n, int axis);

/* paddle.stack(x, axis=0): join n >= 1 tensors of one shape along a new
 * axis (axis in [-(ndim+1), ndim]). */
int fw_stack(fw_tensor **out, fw_tensor *const *x, int n, int axis);

/* paddle.split(x, num_or_sections, axis=0). Fills outs[0..num).
 * With sections == NULL: num equal parts (FW_ESHAPE if the axis is not
 * divisible by num). Otherwise sections[0..num) are the part sizes; at most
 * one may be -1, meaning "the rest"; sizes must add up to the axis length.
 * Outputs are new tensors (not views). */
int fw_split(fw_tensor **outs, fw_tensor *x, int num, const int64_t *sections, int axis);

/* paddle.gather(x, index, axis=0): index is 1-D (or 0-D, which drops the
 * axis); out has x's shape with shape[axis] = len(index). Indices must lie
 * in [0, x.shape[axis]). */
int fw_gather(fw_tensor **out, fw_tensor *x, fw_tensor *index, int axis);

/* paddle.index_select(x, index, axis=0): like gather with a 1-D index. */
int fw_index_select(fw_tensor **out, fw_tensor *x, fw_tensor *index, int axis);

/* paddle.take_along_axis(arr, indices, axis): indices has arr's rank; on
 * every axis but `axis` its size must equal arr's or be 1 (then it is
 * broadcast); out has indices' (broadcast) shape. */
int fw_take_along_axis(fw_tensor **out, fw_tensor *arr, fw_tensor *indices, int axis);

/* paddle.index_add(x, index, axis, value): out = x with value's slices added
 * at rows `index` (1-D) along axis; repeated indices add up. value has x's
 * shape except shape[axis] = len(index); same dtype as x. */
int fw_index_add(fw_tensor **out, fw_tensor *x, fw_tensor *index, int axis,
                 fw_tensor *value);

/* The same, in place into x (any contiguous or strided view), without
 * autograd: the primitive for backward passes (embedding, gather). FW_EGRAD
 * if x is a leaf that needs grad while grad mode is on. */
int fw_index_add_(fw_tensor *x, fw_tensor *index, int axis, fw_tensor *value);

/* paddle.scatter(x, index, updates, overwrite=True): out = x with rows
 * index[j] (1-D index along axis 0) replaced by updates[j] (overwrite; with
 * repeated indices the last one wins) or, with overwrite false, set to the
 * sum of the updates aimed at them. updates has x's shape except
 * shape[0] = len(index); same dtype. Gradients: x gets the output gradient
 * with the scattered rows zeroed; updates get its rows at index. */
int fw_scatter(fw_tensor **out, fw_tensor *x, fw_tensor *index, fw_tensor *updates,
               bool overwrite);

typedef enum {
    FW_PUT_ASSIGN = 0, /* out[idx] = value (last write wins) */
    FW_PUT_ADD = 1     /* out[idx] += value */
} fw_put_mode;

/* paddle.put_along_axis(arr, indices, values, axis, reduce='assign'):
 * indices has arr's rank, sizes equal to arr's or 1 (broadcast) outside
 * `axis`; values broadcast to the indices' (broadcast) shape and are cast
 * to arr's dtype. out has arr's shape. Gradients: arr gets the output
 * gradient (zeroed at the written positions for assign); values get it
 * taken along the indices, summed over broadcast dims. */
int fw_put_along_axis(fw_tensor **out, fw_tensor *arr, fw_tensor *indices, fw_tensor *values,
                      int axis, fw_put_mode reduce);

/* paddle.where(condition, x, y): condition is bool; the three broadcast
 * together (NumPy rules); x and y share one dtype. */
int fw_where(fw_tensor **out, fw_tensor *condition, fw_tensor *x, fw_tensor *y);

/* paddle.clip(x, min=None, max=None): min/max NULL means unbounded. The
 * gradient passes where min <= x <= max. For integer x the bounds are cast
 * to x's dtype first (truncated, as Paddle does). FW_EINVAL if min > max or
 * either is NaN; FW_EDTYPE for bool. */
int fw_clip(fw_tensor **out, fw_tensor *x, const double *min, const double *max);

/* paddle.nn.functional.one_hot(x, num_classes): x int32/int64 of any shape,
 * out float32 of shape x.shape + [num_classes]. FW_ERANGE names the first
 * index outside [0, num_classes). */
int fw_one_hot(fw_tensor **out, fw_tensor *x, int64_t num_classes);

/* paddle.topk(x, k, axis=-1, largest=True, sorted=True): values (x's
 * dtype) and indices (int64), both x's shape with shape[axis] = k.
 * Either out may be NULL if not wanted. Ties keep the lower index first;
 * NaN counts as the largest value. Results are always sorted (sorted=false
 * is accepted). FW_EINVAL if k < 0 or k > x.shape[axis]. */
int fw_topk(fw_tensor **values, fw_tensor **indices, fw_tensor *x, int64_t k, int axis,
            bool largest, bool sorted);

/* paddle.sort(x, axis=-1, descending=False, stable=False) with the indices
 * too (either out may be NULL). The sort is always stable. */
int fw_sort(fw_tensor **values, fw_tensor **indices, fw_tensor *x, int axis,
            bool descending, bool stable);

/* paddle.argsort(x, axis=-1, descending=False, stable=False): int64
 * indices; always stable; no gradient. */
int fw_argsort(fw_tensor **out, fw_tensor *x, int axis, bool descending, bool stable);

/* paddle.cumsum(x, axis=None, dtype=None): axis NULL flattens x first;
 * dtype NULL keeps x's dtype (bool input gives int64), else x is cast to
 * *dtype first. Backward is the reverse cumulative sum. */
int fw_cumsum(fw_tensor **out, fw_tensor *x, const int *axis, const fw_dtype *dtype);

/* paddle.tile(x, repeat_times): n repeat counts (each >= 0); if n > ndim, x
 * is treated as having leading 1s; if n < ndim, repeat_times gets leading
 * 1s. Backward sums the copies. */
int fw_tile(fw_tensor **out, fw_tensor *x, const int64_t *repeat_times, int n);

typedef enum {
    FW_PAD_CONSTANT = 0,
    FW_PAD_REFLECT = 1,   /* mirror without repeating the edge: pad < size */
    FW_PAD_REPLICATE = 2, /* repeat the edge value */
    FW_PAD_CIRCULAR = 3   /* wrap around: pad <= size */
} fw_pad_mode;

/* paddle.nn.functional.pad(x, pad, mode='constant', value=0.0).
 * pad has npad = 2*k entries. In constant mode with k == ndim, the pairs
 * run from the first axis to the last: [before_0, after_0, before_1, ...].
 * Otherwise the pairs pad the last k axes starting from the LAST one:
 * [left, right, top, bottom, front, back] (Paddle's order). Negative pads
 * crop (constant mode). FW_EINVAL on an odd npad, k > ndim, an unknown mode
 * or a reflect/circular pad too large for the axis. */
int fw_pad(fw_tensor **out, fw_tensor *x, const int64_t *pad, int npad, fw_pad_mode mode,
           double value);

/* ---- reads for Python's x[...] ------------------------------------------- */

/* x[indices[0], ..., indices[n-1]] (NumPy advanced indexing on the first n
 * axes, the read side of fw_index_put_): the n int32/int64 index tensors
 * broadcast together to a shape B; out has shape B + x.shape[n:].
 * Negative indices count from the end. Backward accumulates into the
 * indexed positions. */
int fw_index_get(fw_tensor **out, fw_tensor *x, fw_tensor *const *indices, int n);

/* paddle.masked_select(x, mask): the elements of x where the bool mask is
 * true (x and mask broadcast together), in C order, as a 1-D tensor.
 * Backward puts the gradient back at those positions. */
int fw_masked_select(fw_tensor **out, fw_tensor *x, fw_tensor *mask);

/* ---- in-place writes (Python's x[...] = v) ------------------------------
 * These write into x's storage (so every view of it sees the change) and
 * record no autograd. Paddle's rule: FW_EGRAD if x (or the tensor it is a
 * view of) needs grad while grad mode is on; run them under no-grad mode to
 * set a parameter's value. value is broadcast to the target region and
 * cast to x's dtype. */

/* x[starts[i]:ends[i]:steps[i] on axes[i], i < n] = value. Python slice
 * rules: negative starts/ends count from the end and are clamped; steps
 * may be negative but not 0. */
int fw_set_value_(fw_tensor *x, const int *axes, const int64_t *starts,
                  const int64_t *ends, const int64_t *steps, int n, fw_tensor *value);

/* The differentiable, out-of-place form of set_value_ (Paddle records
 * set_value in the graph for a non-leaf): out is a copy of x with the slice
 * replaced by value (broadcast, cast to x's dtype). Gradients: x gets the
 * output gradient with the slice zeroed; value gets the slice of it, summed
 * over broadcast dims. A language binding can implement `x[a:b] = v` on a
 * tensor with grad history by rebinding x's handle to out. */
int fw_set_value(fw_tensor **out, fw_tensor *x, const int *axes, const int64_t *starts,
                 const int64_t *ends, const int64_t *steps, int n, fw_tensor *value);

/* x[indices[0], ..., indices[n-1]] = value (NumPy advanced indexing on the
 * first n axes): the n int32/int64 index tensors broadcast together to a
 * shape B and value broadcasts to B + x.shape[n:]. Negative indices count
 * from the end. With accumulate, repeated positions add up (index_put
 * with accumulate=True); otherwise the last write wins. */
int fw_index_put_(fw_tensor *x, fw_tensor *const *indices, int n, fw_tensor *value,
                  bool accumulate);

/* x[mask] = value where mask is bool and broadcasts to x's shape; value is
 * a 1-element tensor. */
int fw_masked_fill_(fw_tensor *x, fw_tensor *mask, fw_tensor *value);

#ifdef __cplusplus
}
#endif
#endif
