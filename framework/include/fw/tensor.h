/*
 * fw/tensor.h - tensors, dtypes, errors and autograd of Eddy's framework.
 *
 * API-STABLE
 * (this header only grows from here on; existing declarations keep their meaning)
 *
 * Conventions (libgit2 style, see framework/README.md):
 *  - A function that can fail returns int: 0, or a negative FW_E* code after
 *    setting a thread-local message (fw_error_last()). Nothing aborts on user
 *    input: bad shapes, dtypes and axes are errors with a message naming them
 *    ("add: shapes [2, 3] and [4] cannot broadcast").
 *  - Out-parameters come first. `fw_tensor **out` gives the caller one
 *    reference; drop it with fw_tensor_unref(). On error *out is NULL.
 *  - Inputs are borrowed: a function that keeps a tensor takes its own ref.
 *  - Tensors are ref-counted handles over ref-counted storage; views
 *    (reshape, transpose, slice, expand) share storage with their base.
 *  - Shapes and strides are int64_t, strides counted in elements.
 *  - Reference counts are atomic, so handles may be passed between threads;
 *    mutating one tensor from two threads at once is the caller's race.
 */
#ifndef FW_TENSOR_H
#define FW_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define FW_MAX_DIMS 8

/* ---- errors ---------------------------------------------------------- */

enum {
    FW_OK         = 0,
    FW_EINVAL     = -1,  /* bad argument (NULL, negative size, bad value) */
    FW_ENOMEM     = -2,  /* allocation failed */
    FW_ESHAPE     = -3,  /* shapes do not fit (broadcast, matmul, reshape) */
    FW_EDTYPE     = -4,  /* dtype not supported by this op or mismatched */
    FW_EAXIS      = -5,  /* axis out of range or repeated */
    FW_EDEVICE    = -6,  /* device unavailable or tensors on different devices */
    FW_EGRAD      = -7,  /* autograd misuse: no graph, graph freed, leaf in-place */
    FW_EIO        = -8,  /* file or mmap failure */
    FW_EFORMAT    = -9,  /* malformed file (safetensors header, ...) */
    FW_ERANGE     = -10, /* index out of range */
    FW_EUNSUPPORTED = -11, /* valid request this build cannot do yet */
    FW_EINTERNAL  = -12  /* a bug: an invariant did not hold */
};

/* Set the thread's last error to `code` and a printf-formatted message;
 * returns `code` so it can be returned directly. */
int fw_error_set(int code, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The thread's last message (borrowed until the next fw_error_set on this
 * thread); "" when none. */
const char *fw_error_last(void);

/* The thread's last code, FW_OK when none. */
int fw_error_code(void);

/* Forget the thread's last error. */
void fw_error_clear(void);

/* A stable lower-case name for a code: "invalid", "shape", "dtype", ... */
const char *fw_error_name(int code);

/* ---- dtypes and devices --------------------------------------------- */

typedef enum {
    FW_FLOAT32 = 0,
    FW_FLOAT64 = 1,
    FW_FLOAT16 = 2,   /* IEEE half, stored as uint16_t; computed in float32 */
    FW_BFLOAT16 = 3,  /* bfloat16, stored as uint16_t; computed in float32 */
    FW_INT32 = 4,
    FW_INT64 = 5,
    FW_BOOL = 6,      /* one byte, 0 or 1 */
    FW_UINT8 = 7,
    FW_COMPLEX64 = 8,   /* two float32 (real, imag), interleaved */
    FW_COMPLEX128 = 9,  /* two float64 (real, imag), interleaved */
    FW_NDTYPES = 10
} fw_dtype;

typedef enum {
    FW_CPU = 0,
    FW_CUDA = 1,
    FW_NDEVICES = 2
} fw_device;

/* Bytes per element (2 for float16), 0 for an invalid dtype. */
size_t fw_dtype_size(fw_dtype dt);
/* Paddle's name: "float32", "float64", "float16", "bfloat16", "int32",
 * "int64", "bool", "uint8", "complex64", "complex128"; "invalid" otherwise. */
const char *fw_dtype_name(fw_dtype dt);
/* Parse a name above into *out; FW_EDTYPE if unknown. */
int fw_dtype_from_name(fw_dtype *out, const char *name);
bool fw_dtype_is_float(fw_dtype dt);   /* float32/64/16, bfloat16 */
bool fw_dtype_is_complex(fw_dtype dt); /* complex64/128 (fw/complex.h) */
/* complex64 -> float32, complex128 -> float64; dt itself otherwise. */
fw_dtype fw_dtype_real_part(fw_dtype dt);
/* The complex dtype holding dt: float64 -> complex128, others -> complex64. */
fw_dtype fw_dtype_to_complex(fw_dtype dt);
bool fw_dtype_is_valid(fw_dtype dt);
/* The dtype two operands of a binary op compute in (NumPy-like promotion:
 * bool < uint8 < int32 < int64 < float16/bfloat16 < float32 < float64
 * < complex64 < complex128; float16 with bfloat16 gives float32, complex64
 * with float64 complex128). */
fw_dtype fw_dtype_promote(fw_dtype a, fw_dtype b);

/* float16 / bfloat16 conversion, round-to-nearest-even, NaN/Inf kept. */
uint16_t fw_float_to_half(float f);
float    fw_half_to_float(uint16_t h);
uint16_t fw_float_to_bf16(float f);
float    fw_bf16_to_float(uint16_t h);

/* Whether a backend for `dev` is registered (FW_CPU always is). */
bool fw_device_available(fw_device dev);

/* ---- tensors ---------------------------------------------------------- */

typedef struct fw_tensor fw_tensor;

/* Reference counting. _ref returns t; both accept NULL. The last unref
 * frees the handle (its storage when no view still holds it). */
fw_tensor *fw_tensor_ref(fw_tensor *t);
void fw_tensor_unref(fw_tensor *t);

/* A new contiguous tensor of `shape` (ndim 0..FW_MAX_DIMS; ndim 0 is a
 * scalar of shape []). _empty leaves the data uninitialised.
 * stop_gradient is true. Errors: FW_EINVAL (ndim, negative dim, NULL shape
 * with ndim > 0), FW_EDTYPE, FW_ENOMEM. */
int fw_tensor_empty(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim);
int fw_tensor_empty_on(fw_tensor **out, fw_device dev, fw_dtype dt,
                       const int64_t *shape, int ndim);

/* A new tensor holding a copy of `data` (numel * dtype size bytes, C
 * order, in dtype `dt`). stop_gradient is true. */
int fw_tensor_from_data(fw_tensor **out, const void *data, fw_dtype dt,
                        const int64_t *shape, int ndim);

/* Like fw_tensor_from_data but from doubles, converted to `dt`. */
int fw_tensor_from_doubles(fw_tensor **out, const double *data, fw_dtype dt,
                           const int64_t *shape, int ndim);

/* A tensor over external memory without copying (numpy buffer, mmap).
 * Takes the memory: `release(data, payload)` runs once when the last view
 * of it goes away (release may be NULL when the caller keeps it alive
 * longer than every tensor). `data` must be aligned for the dtype. */
int fw_tensor_from_blob(fw_tensor **out, void *data, fw_dtype dt,
                        const int64_t *shape, int ndim,
                        void (*release)(void *data, void *payload), void *payload);

/* Creation. `value` is converted to dt (rounded for ints, != 0 for bool). */
int fw_zeros(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim);
int fw_ones(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim);
int fw_full(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim, double value);
int fw_zeros_like(fw_tensor **out, const fw_tensor *t);
int fw_ones_like(fw_tensor **out, const fw_tensor *t);
int fw_full_like(fw_tensor **out, const fw_tensor *t, double value);
int fw_empty_like(fw_tensor **out, const fw_tensor *t);
/* Values start, start+step, ... < end (> end for negative step), 1-D.
 * FW_EINVAL for step 0 or a range over 2^40 elements. */
int fw_arange(fw_tensor **out, double start, double end, double step, fw_dtype dt);
/* num evenly spaced values from start to stop inclusive (num >= 0). */
int fw_linspace(fw_tensor **out, double start, double stop, int64_t num, fw_dtype dt);
/* [n, m] identity (m < 0 means m = n). */
int fw_eye(fw_tensor **out, int64_t n, int64_t m, fw_dtype dt);

/* Properties (borrowed; t must not be NULL). */
int fw_tensor_ndim(const fw_tensor *t);
const int64_t *fw_tensor_shape(const fw_tensor *t);    /* ndim entries */
const int64_t *fw_tensor_strides(const fw_tensor *t);  /* in elements */
int64_t fw_tensor_dim(const fw_tensor *t, int axis);   /* negative axis ok; -1 if bad */
int64_t fw_tensor_numel(const fw_tensor *t);
int64_t fw_tensor_offset(const fw_tensor *t);          /* in elements */
fw_dtype fw_tensor_dtype(const fw_tensor *t);
fw_device fw_tensor_device(const fw_tensor *t);
bool fw_tensor_is_contiguous(const fw_tensor *t);
/* Pointer to the first element (storage + offset); CPU tensors only,
 * NULL otherwise. Borrowed while t lives; writes are seen by every view. */
void *fw_tensor_data(const fw_tensor *t);
/* Format "[2, 3]" into buf (always terminated); returns buf. */
char *fw_tensor_shape_str(char *buf, size_t n, const fw_tensor *t);
/* An opaque slot for a language binding (the Python object); not touched
 * by the framework. */
void *fw_tensor_user(const fw_tensor *t);
void fw_tensor_set_user(fw_tensor *t, void *user);

/* Copy the elements, in C order of t's logical shape, into `dst`
 * (numel * dtype size bytes, t's dtype). Handles non-contiguous views. */
int fw_tensor_copy_to(void *dst, size_t dst_bytes, const fw_tensor *t);
/* Same, converted to doubles (dst has numel entries). */
int fw_tensor_to_doubles(double *dst, int64_t n, const fw_tensor *t);
/* The single value of a 1-element tensor as double. FW_ESHAPE otherwise. */
int fw_tensor_item(double *out, const fw_tensor *t);
/* Overwrite dst's elements with src's (broadcast to dst's shape, cast to
 * dst's dtype), in place, without autograd. FW_EGRAD if dst is a leaf that
 * needs grad while grad mode is on (Paddle's in-place rule); FW_ESHAPE if
 * src does not broadcast to dst. */
int fw_tensor_assign(fw_tensor *dst, const fw_tensor *src);
/* Fill all elements of t (any view) with value, in place, no autograd. */
int fw_tensor_fill(fw_tensor *t, double value);

/* A contiguous copy sharing nothing (grad history kept: clone is
 * differentiable, like paddle.clone). */
int fw_tensor_clone(fw_tensor **out, fw_tensor *t);
/* A view of the same storage with no grad history, stop_gradient true. */
int fw_tensor_detach(fw_tensor **out, fw_tensor *t);

/* t on device dev: a new ref of t when it is already there, else a
 * contiguous copy (differentiable: the gradient is copied back).
 * FW_EDEVICE when dev has no backend. */
int fw_tensor_to(fw_tensor **out, fw_tensor *t, fw_device dev);

/* ---- autograd ---------------------------------------------------------- */

/* stop_gradient: true means no gradient flows to/through t. Tensors made
 * from data (creation functions above) default to true; set false for
 * parameters. Setting it true on a result of an op cuts the graph there for
 * later ops (its grad history is kept for others using it). */
bool fw_tensor_stop_gradient(const fw_tensor *t);
int fw_tensor_set_stop_gradient(fw_tensor *t, bool stop);
/* A leaf has no grad history (created by the user, or by ops whose inputs
 * all had stop_gradient true, or in no-grad mode). */
bool fw_tensor_is_leaf(const fw_tensor *t);
/* The accumulated gradient of a leaf (borrowed, NULL before any
 * backward). Take a ref to keep it past clear_grad or the tensor. */
fw_tensor *fw_tensor_grad(const fw_tensor *t);
/* Replace t's grad (g may be NULL; ref taken). FW_ESHAPE/FW_EDTYPE if g
 * does not match t. */
int fw_tensor_set_grad(fw_tensor *t, fw_tensor *g);
/* Drop t's grad (set_to_zero=false) or zero it in place (true). */
void fw_tensor_clear_grad(fw_tensor *t, bool set_to_zero);

/* Backpropagate from t. grad is dL/dt (same shape and dtype as t), or NULL
 * for ones (Paddle: a non-scalar t starts from a gradient of ones).
 * Gradients accumulate into the .grad of every leaf reached that has
 * stop_gradient false. Unless retain_graph, the graph's saved tensors are
 * freed afterwards and a second backward through a node that had saved
 * tensors (mul, exp, matmul, ...) fails with FW_EGRAD; nodes that save
 * nothing (add, views, casts) can run again. Errors: FW_EGRAD (t has
 * stop_gradient true / no graph; graph already freed), FW_ESHAPE (grad
 * shape differs), FW_EDTYPE. Runs with grad mode off. */
int fw_tensor_backward(fw_tensor *t, fw_tensor *grad, bool retain_graph);
/* Same, and with create_graph the backward runs with grad mode on: the
 * gradients are themselves differentiable (leaves' .grad get a grad
 * history), for second derivatives. create_graph implies retain_graph. */
int fw_tensor_backward_ex(fw_tensor *t, fw_tensor *grad, bool retain_graph,
                          bool create_graph);
/* paddle.grad: grads[k] = d(sum_i outputs[i] * grad_outputs[i]) / inputs[k]
 * (grad_outputs may be NULL or hold NULLs: ones). Inputs may be leaves or
 * results of ops; grads[k] is NULL when inputs[k] is not reached. Nothing
 * accumulates into any tensor's .grad. With create_graph the results are
 * differentiable. Errors as fw_tensor_backward; FW_EINVAL for bad counts. */
int fw_autograd_grad(fw_tensor **grads, int n_out, fw_tensor *const *outputs,
                     fw_tensor *const *grad_outputs, int n_in, fw_tensor *const *inputs,
                     bool retain_graph, bool create_graph);

/* Gradient hooks: fn(ctx, grad, &replacement) runs when t's gradient is
 * computed (a result of an op: once, with its total gradient; a leaf: on
 * each gradient that arrives, before it accumulates). It may set
 * *replacement to a new reference of the same shape and dtype, used in
 * place of grad; it returns 0 or a negative FW_E* (backward stops with it).
 * free_ctx(ctx) runs when the hook is dropped with the graph or tensor. */
typedef int (*fw_grad_hook_fn)(void *ctx, fw_tensor *grad, fw_tensor **replacement);
int fw_tensor_register_hook(fw_tensor *t, fw_grad_hook_fn fn, void *ctx,
                            void (*free_ctx)(void *ctx));

/* A node whose backward is a callback (custom ops written in a language
 * binding: paddle.autograd.PyLayer). outputs must be tensors no other graph
 * produced (fresh or detached); they get this node as grad history when
 * grad mode is on and an input needs grad (otherwise nothing is recorded).
 * The callback receives one gradient per output (zeros for those that got
 * none) and sets gin[i] (new refs, input i's shape and dtype, or NULL). */
typedef int (*fw_custom_backward_fn)(void *ctx, int n_out, fw_tensor *const *gout,
                                     int n_in, fw_tensor **gin);
/* Returns 1 when a node was recorded (it now owns ctx: free_ctx runs with
 * the graph), 0 when not (the caller keeps ctx). */
int fw_custom_node(int n_in, fw_tensor *const *inputs, int n_out, fw_tensor *const *outputs,
                   fw_custom_backward_fn fn, void *ctx, void (*free_ctx)(void *ctx));

/* Grad mode (thread-local, default on). While off, ops record no graph
 * and their results are leaves with stop_gradient true (paddle.no_grad). */
bool fw_grad_enabled(void);
/* Returns the previous value, so a scope can restore it. */
bool fw_set_grad_enabled(bool enabled);

#ifdef __cplusplus
}
#endif
#endif
