/*
 * fw_op.h - how to write an op (private to framework/; every ops/ file uses it).
 *
 * API-STABLE
 * (only grows from here on)
 *
 * An op is `int fw_<op>(fw_tensor **out, inputs..., attrs...)`:
 *   1. validate (dtype, device, axes, shapes) with the fw_op_check_* helpers,
 *      which set a message naming the op;
 *   2. create outputs with fw_op_output() (contiguous) or views with
 *      fw__tensor_view() (fw_int.h);
 *   3. run the kernel (for CPU: plain functions in cpu/<area>.c over
 *      fw__ptr(t), float and double versions);
 *   4. record the backward with fw_node_record(); it returns a NULL node,
 *      and costs nothing, when grad mode is off or no input needs grad.
 *
 *     static int exp_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
 *     {
 *         // d/dx exp(x) = exp(x) = the saved output
 *         return fw_mul(&gin[0], gout[0], fw_node_saved(n, 0));
 *     }
 *
 *     int fw_exp(fw_tensor **out, fw_tensor *x)
 *     {
 *         fw_tensor *y = NULL;
 *         fw_node *node;
 *         int err;
 *
 *         *out = NULL;
 *         if ((err = fw_op_check_float("exp", x)) < 0)
 *             return err;
 *         if ((err = fw_op_output(&y, x->device, x->dtype, x->shape, x->ndim)) < 0)
 *             return err;
 *         ...kernel into y...
 *         if ((err = fw_node_record(&node, "exp", exp_backward, 1, &x, 1, &y, 1, 0)) < 0)
 *             goto fail;
 *         if (node)
 *             fw_node_save(node, 0, y);
 *         *out = y;
 *         return 0;
 *     fail:
 *         fw_tensor_unref(y);
 *         return err;
 *     }
 *
 * Backward callbacks run with grad mode off (so the public ops they call
 * record nothing). They receive one gradient per output, of the output's
 * shape and dtype (never NULL: the engine passes zeros for an output that
 * got no gradient; possibly a non-contiguous view, e.g. an expanded one),
 * and set grad_inputs[i] to a new reference of exactly input i's shape and
 * dtype for each i with fw_node_needs_grad(node, i), leaving the others
 * NULL. They return 0 or a negative FW_E* code with a message. The engine
 * sums gradients that reach one tensor along several paths and accumulates
 * into leaves' .grad; after backward (unless retain_graph) it drops every
 * saved tensor and the attribute blob is no longer valid.
 */
#ifndef FW_OP_H
#define FW_OP_H

#include "fw/ops.h"
#include "fw/tensor.h"
#include "fw_int.h"
#include "fw_parallel.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- outputs and dispatch -------------------------------------------------- */

/* A new contiguous tensor (uninitialised; stop_gradient true until
 * fw_node_record connects it). Same as fw_tensor_empty_on. */
int fw_op_output(fw_tensor **out, fw_device dev, fw_dtype dt, const int64_t *shape,
                 int ndim);

/* A new contiguous tensor filled with zeros. */
int fw_op_zeros(fw_tensor **out, fw_device dev, fw_dtype dt, const int64_t *shape,
                int ndim);

/* A new 0-D tensor holding value on dev (ops' scalar operands: on their
 * inputs' device, whatever fw_device_default() says; no host copy). */
int fw_op_scalar(fw_tensor **out, fw_device dev, fw_dtype dt, double value);

/* *out = x when x is contiguous (new ref) or a contiguous copy, without
 * recording autograd: for kernels that want dense input. */
int fw_op_dense(fw_tensor **out, fw_tensor *x);

/* The backend of a device, or NULL (core/fw_backend.h has the table). */
struct fw_backend;
const struct fw_backend *fw_op_backend(fw_device dev);

/* ---- validation (each sets a message that starts with the op name) -------- */

/* FW_EDTYPE "<op>: expected a float tensor, got int64" unless float32/64/16/bf16. */
int fw_op_check_float(const char *op, const fw_tensor *x);
/* FW_EDTYPE "<op>: <what> must be <dt>, got <dt>". */
int fw_op_check_dtype(const char *op, const char *what, const fw_tensor *x, fw_dtype dt);
/* FW_EINVAL for a NULL tensor; FW_EDEVICE when devices differ. */
int fw_op_check_same_device(const char *op, const fw_tensor *a, const fw_tensor *b);
/* FW_EINVAL "<op>: <what> is NULL". */
int fw_op_check_not_null(const char *op, const char *what, const fw_tensor *x);
/* Normalise a possibly negative axis into [0, ndim): FW_EAXIS "<op>: axis
 * 3 out of range for rank 2". For ndim 0, axis 0 and -1 are accepted. */
int fw_op_axis(int *out, const char *op, int axis, int ndim);
/* Normalise a list of axes into a bitmask (bit k set: reduce axis k);
 * naxes 0 means all. FW_EAXIS for out-of-range or repeated axes. */
int fw_op_axes_mask(unsigned *mask, const char *op, const int *axes, int naxes, int ndim);
/* NumPy broadcast of two shapes into out (FW_MAX_DIMS entries):
 * FW_ESHAPE "<op>: shapes [2, 3] and [4] cannot broadcast". */
int fw_op_broadcast_shapes(int64_t *out, int *out_ndim, const char *op,
                           const int64_t *a, int na, const int64_t *b, int nb);
/* FW_ESHAPE "<op>: <what> shapes [..] and [..] differ" unless equal. */
int fw_op_check_same_shape(const char *op, const char *what, const fw_tensor *a,
                           const fw_tensor *b);
bool fw_shape_equal(const int64_t *a, int na, const int64_t *b, int nb);
/* "[2, 3]" into buf; returns buf. */
char *fw_shape_format(char *buf, size_t n, const int64_t *shape, int ndim);

/* ---- float16 / bfloat16 ------------------------------------------------------ */

/* Compute dtype: float16/bfloat16 -> float32, others unchanged. */
fw_dtype fw_op_compute_dtype(fw_dtype dt);
/* Differentiable cast of x to its compute dtype (new ref of x when it is
 * already float32/float64/int). Use on entry of ops that only have float
 * and double kernels, then fw_cast the result back to x's dtype. */
int fw_op_upcast(fw_tensor **out, fw_tensor *x);

/* Differentiable reshape to exactly `shape` (no -1 / 0 rules; numel must
 * match, FW_ESHAPE otherwise): a view when strides allow, else a copy. */
int fw_op_reshape(fw_tensor **out, fw_tensor *x, const int64_t *shape, int ndim);

/* ---- gradient helpers --------------------------------------------------------- */

/* Sum g over the dimensions that were broadcast to reach g's shape from
 * `shape` (the backward of broadcasting): result has exactly `shape`.
 * New ref of g when shapes are already equal. No autograd recorded. */
int fw_op_reduce_to_shape(fw_tensor **out, fw_tensor *g, const int64_t *shape, int ndim);

/* ---- autograd nodes ------------------------------------------------------------ */

typedef struct fw_node fw_node;

/* See the contract at the top of this file. */
typedef int (*fw_backward_fn)(fw_node *node, fw_tensor **grad_inputs,
                              fw_tensor *const *grad_outputs);

/* True when grad mode is on and some input has stop_gradient false. */
bool fw_op_needs_grad(int n_inputs, fw_tensor *const *inputs);

/* Record a backward for an op that read `inputs` and produced `outputs`.
 * When fw_op_needs_grad() is false: *out = NULL and 0, nothing allocated.
 * Otherwise a node with n_saved empty saved slots and attr_size bytes of
 * zeroed attributes (16-byte aligned) is created; each output gets it as
 * grad_fn and stop_gradient false. `name` must be a static string (error
 * messages use it). NULL entries in inputs are allowed (optional inputs
 * such as a missing bias) and never get a gradient. The node lives as long
 * as some output (or a later node) references it. FW_ENOMEM on failure. */
int fw_node_record(fw_node **out, const char *name, fw_backward_fn backward,
                   int n_inputs, fw_tensor *const *inputs, int n_outputs,
                   fw_tensor *const *outputs, int n_saved, size_t attr_size);

/* Keep t for backward in slot (takes its own ref; replaces the slot). Saving
 * an output of the node itself is fine (stored as a detached alias so no
 * reference cycle forms). FW_ENOMEM is impossible for inputs; for outputs
 * the alias allocation may fail: returns 0 or FW_ENOMEM. */
int fw_node_save(fw_node *node, int slot, fw_tensor *t);
/* The saved tensor in slot (borrowed), NULL when none. */
fw_tensor *fw_node_saved(const fw_node *node, int slot);
/* The attribute blob (attr_size bytes), valid until the graph is freed. */
void *fw_node_attr(fw_node *node);
/* Whether backward must produce grad_inputs[i]. */
bool fw_node_needs_grad(const fw_node *node, int input);
/* Geometry of input i as it was when recorded. */
const int64_t *fw_node_input_shape(const fw_node *node, int input, int *ndim);
fw_dtype fw_node_input_dtype(const fw_node *node, int input);
int fw_node_n_inputs(const fw_node *node);
const char *fw_node_name(const fw_node *node);

/* The node that produced t (borrowed) or NULL for a leaf. */
fw_node *fw_tensor_grad_fn(const fw_tensor *t);

/* ---- higher-order gradients ------------------------------------------------ */

/* True while a backward with create_graph runs on this thread (grad mode
 * is then on inside backward callbacks, and an output saved with
 * fw_node_save has this node as history while the node runs). A backward
 * that uses a fused kernel computes its result with recorded ops instead
 * when this is set, so the gradient is differentiable. */
bool fw__autograd_creating_graph(void);
/* Unary ops' derivative with recorded ops (ops/unary_grad.c): g * f'(x). */
int fw__unary_grad_graph(fw_tensor **out, int op_code, double alpha, fw_tensor *g,
                         fw_tensor *x, fw_tensor *y);
/* conv1d/conv2d's dx, dw, db with recorded ops (ops/conv_grad.c). */
struct fw_nn_conv_geom;
int fw__conv_grad_graph(fw_node *n, const struct fw_nn_conv_geom *geo, fw_tensor **gin,
                        fw_tensor *x, fw_tensor *w, fw_tensor *gout);

#endif
