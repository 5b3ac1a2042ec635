/*
 * fw/ops.h - core ops: elementwise, unary, reductions, matmul, views, cast.
 *
 * API-STABLE
 * (this header only grows from here on; existing declarations keep their meaning)
 *
 * Every op is `int fw_<op>(fw_tensor **out, inputs..., attributes...)`:
 * 0 and a new reference in *out, or a negative FW_E* code with a message
 * (fw_error_last()) and *out NULL. Inputs are borrowed. When grad mode is on
 * and an input has stop_gradient false, the result records a backward.
 *
 * Dtypes (FW_EDTYPE with a message otherwise):
 *  - arithmetic add/sub/mul/maximum/minimum: all but bool; div and pow:
 *    float dtypes (integer inputs compute in float32, like paddle.divide);
 *  - comparisons: all dtypes, result bool; logical ops: any dtype read as
 *    "!= 0", result bool;
 *  - unary math and var/std/mean: float dtypes; abs/neg also int32/int64;
 *  - sum/prod/max/min: all but bool for max/min; sum of bool/ints -> int64;
 *  - argmax/argmin: all numeric dtypes, result int64;
 *  - matmul: float32, float64 (float16/bfloat16 via float32);
 *  - views and cast: every dtype.
 * float16 and bfloat16 are stored as such and computed in float32.
 * Mixed dtypes are promoted with fw_dtype_promote().
 * Axes may be negative (counted from the end).
 */
#ifndef FW_OPS_H
#define FW_OPS_H

#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- elementwise binary, NumPy broadcasting ------------------------------
 * Errors: FW_ESHAPE "add: shapes [2, 3] and [4] cannot broadcast",
 * FW_EDTYPE, FW_EDEVICE (different devices). Backward reduces the gradient
 * over broadcast dimensions. */
int fw_add(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_sub(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_mul(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_div(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_pow(fw_tensor **out, fw_tensor *a, fw_tensor *b);      /* a ** b */
/* NaN propagates; on ties the gradient goes to b (Paddle's rule). */
int fw_maximum(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_minimum(fw_tensor **out, fw_tensor *a, fw_tensor *b);

/* Python's // and % (floor division; the remainder takes the divisor's
 * sign). Integer inputs stay integers and a zero divisor is FW_EINVAL
 * ("floor_divide: integer division by zero"); floats follow IEEE.
 * floor_divide has no gradient; remainder's is (g, -g * floor(a / b)). */
int fw_floor_divide(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_remainder(fw_tensor **out, fw_tensor *a, fw_tensor *b);

/* |a - b| <= atol + rtol * |b| element-wise (broadcasting) -> bool tensor;
 * NaNs compare equal when equal_nan. fw_allclose reduces it to one bool. */
int fw_isclose(fw_tensor **out, fw_tensor *a, fw_tensor *b, double rtol, double atol,
               bool equal_nan);
int fw_allclose(bool *out, fw_tensor *a, fw_tensor *b, double rtol, double atol,
                bool equal_nan);

/* Scalar variants: the scalar takes a's dtype (so float32 stays float32). */
int fw_add_scalar(fw_tensor **out, fw_tensor *a, double s);   /* a + s */
int fw_sub_scalar(fw_tensor **out, fw_tensor *a, double s);   /* a - s */
int fw_rsub_scalar(fw_tensor **out, fw_tensor *a, double s);  /* s - a */
int fw_mul_scalar(fw_tensor **out, fw_tensor *a, double s);   /* a * s */
int fw_div_scalar(fw_tensor **out, fw_tensor *a, double s);   /* a / s */
int fw_rdiv_scalar(fw_tensor **out, fw_tensor *a, double s);  /* s / a */
int fw_pow_scalar(fw_tensor **out, fw_tensor *a, double p);   /* a ** p */
int fw_rpow_scalar(fw_tensor **out, fw_tensor *a, double s);  /* s ** a */

/* Comparisons -> bool, broadcasting, no gradient. */
int fw_eq(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_ne(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_lt(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_le(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_gt(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_ge(fw_tensor **out, fw_tensor *a, fw_tensor *b);
/* Compare with a scalar: op is one of "==", "!=", "<", "<=", ">", ">=". */
int fw_compare_scalar(fw_tensor **out, fw_tensor *a, const char *op, double s);

/* Logical ops -> bool (inputs read as != 0), broadcasting, no gradient. */
int fw_logical_and(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_logical_or(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_logical_xor(fw_tensor **out, fw_tensor *a, fw_tensor *b);
int fw_logical_not(fw_tensor **out, fw_tensor *a);

/* ---- unary ---------------------------------------------------------------- */
int fw_exp(fw_tensor **out, fw_tensor *x);
int fw_log(fw_tensor **out, fw_tensor *x);
int fw_sqrt(fw_tensor **out, fw_tensor *x);
int fw_rsqrt(fw_tensor **out, fw_tensor *x);
int fw_abs(fw_tensor **out, fw_tensor *x);        /* grad 0 at 0 */
int fw_neg(fw_tensor **out, fw_tensor *x);
int fw_square(fw_tensor **out, fw_tensor *x);
int fw_tanh(fw_tensor **out, fw_tensor *x);
int fw_sigmoid(fw_tensor **out, fw_tensor *x);
int fw_relu(fw_tensor **out, fw_tensor *x);       /* grad 0 at 0 */
/* approximate=false: x * Phi(x) with erf; true: the tanh approximation. */
int fw_gelu(fw_tensor **out, fw_tensor *x, bool approximate);
int fw_leaky_relu(fw_tensor **out, fw_tensor *x, double negative_slope); /* Paddle default 0.01 */
int fw_silu(fw_tensor **out, fw_tensor *x);
int fw_sin(fw_tensor **out, fw_tensor *x);
int fw_cos(fw_tensor **out, fw_tensor *x);
/* floor/ceil/round (half away from zero, like paddle.round) and sign have
 * zero gradient; sign also takes int32/int64. */
int fw_floor(fw_tensor **out, fw_tensor *x);
int fw_ceil(fw_tensor **out, fw_tensor *x);
int fw_round(fw_tensor **out, fw_tensor *x);
int fw_sign(fw_tensor **out, fw_tensor *x);
int fw_reciprocal(fw_tensor **out, fw_tensor *x);
int fw_log1p(fw_tensor **out, fw_tensor *x);
int fw_expm1(fw_tensor **out, fw_tensor *x);
int fw_erf(fw_tensor **out, fw_tensor *x);
int fw_log2(fw_tensor **out, fw_tensor *x);
int fw_log10(fw_tensor **out, fw_tensor *x);

/* ---- reductions -----------------------------------------------------------
 * axes: naxes entries (negative ok, no repeats); naxes == 0 (axes may be
 * NULL) reduces every axis. Reducing everything without keepdim gives a
 * 0-D tensor (shape []). Errors: FW_EAXIS "sum: axis 3 out of range for
 * rank 2", "sum: axis 1 repeated"; FW_EDTYPE. */
int fw_sum(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim);
int fw_mean(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim);
/* max/min backward: every element equal to the result gets the whole
 * gradient (paddle.max semantics; amax would split it). */
int fw_max(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim);
int fw_min(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim);
int fw_prod(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool keepdim);
/* unbiased: divide by N-1 (Paddle's default true). */
int fw_var(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool unbiased,
           bool keepdim);
int fw_std(fw_tensor **out, fw_tensor *x, const int *axes, int naxes, bool unbiased,
           bool keepdim);
/* Index of the first max/min along `axis` as int64; axis FW_AXIS_NONE
 * flattens first (result shape [] or [1,...] with keepdim). */
#define FW_AXIS_NONE (-1000000)
int fw_argmax(fw_tensor **out, fw_tensor *x, int axis, bool keepdim);
int fw_argmin(fw_tensor **out, fw_tensor *x, int axis, bool keepdim);

/* ---- matmul ---------------------------------------------------------------
 * Paddle/NumPy rules: 1-D x is [1, K] (dim dropped after), 1-D y is [K, 1]
 * (dim dropped after); batch dims broadcast; transpose_x/transpose_y swap
 * the last two dims of an operand of rank >= 2 before multiplying. Runs on
 * OpenBLAS sgemm/dgemm. Errors: FW_ESHAPE "matmul: shapes [2, 3] and [4, 5]
 * do not match (3 != 4)", FW_EDTYPE. */
int fw_matmul(fw_tensor **out, fw_tensor *x, fw_tensor *y, bool transpose_x,
              bool transpose_y);

/* ---- views and shape ops ----------------------------------------------------
 * Views share storage with x (no copy) where strides allow; results record
 * a backward like any op. */
/* shape may hold one -1 (inferred) and 0 (copy x's dim at that index,
 * Paddle's rule). Copies when x is not viewable with the new shape. */
int fw_reshape(fw_tensor **out, fw_tensor *x, const int64_t *shape, int ndim);
/* Merge axes start..stop (inclusive; Paddle's flatten(start_axis=0,
 * stop_axis=-1)). */
int fw_flatten(fw_tensor **out, fw_tensor *x, int start_axis, int stop_axis);
/* Remove the given size-1 axes (naxes 0: all size-1 axes); axes of size
 * != 1 are left alone, as in Paddle. */
int fw_squeeze(fw_tensor **out, fw_tensor *x, const int *axes, int naxes);
/* Insert size-1 axes at the given positions of the result. */
int fw_unsqueeze(fw_tensor **out, fw_tensor *x, const int *axes, int naxes);
/* Permute axes: result axis i is x's axis perm[i] (paddle.transpose). */
int fw_transpose(fw_tensor **out, fw_tensor *x, const int *perm, int nperm);
/* Swap two axes (torch-style transpose, Tensor.T of the last two). */
int fw_swapaxes(fw_tensor **out, fw_tensor *x, int axis0, int axis1);
/* Strided slice along the given axes (paddle.strided_slice; Python's
 * x[a:b:c]): starts/ends are clamped like Python slices, negative counts
 * from the end; steps may be negative (NULL steps means all 1); step 0 is
 * FW_EINVAL. */
int fw_slice(fw_tensor **out, fw_tensor *x, const int *axes, const int64_t *starts,
             const int64_t *ends, const int64_t *steps, int n);
/* Select index `index` of `axis` and drop that axis (x[..., i, ...]).
 * FW_ERANGE if out of range. */
int fw_select(fw_tensor **out, fw_tensor *x, int axis, int64_t index);
/* Broadcast to shape (a -1 keeps x's dim); a view with stride 0. */
int fw_expand(fw_tensor **out, fw_tensor *x, const int64_t *shape, int ndim);
int fw_broadcast_to(fw_tensor **out, fw_tensor *x, const int64_t *shape, int ndim);
/* x itself (new ref) when already contiguous, else a contiguous copy. */
int fw_contiguous(fw_tensor **out, fw_tensor *x);

/* ---- cast ------------------------------------------------------------------
 * Any dtype to any dtype: float -> int truncates toward zero (C rule),
 * -> bool is != 0, -> float16/bfloat16 rounds to nearest even. Backward
 * casts the gradient back when both dtypes are float. Returns a new ref of
 * x when dt is already x's dtype. */
int fw_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt);

#ifdef __cplusplus
}
#endif
#endif
