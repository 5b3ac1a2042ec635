/*
 * nn_int.h - what the nn ops share (ops/nn_common.c), private to ops/.
 *
 * Validation with messages, labels loaded as device tensors, the reduction,
 * and the autograd plumbing around every kernel call. Kernels are reached
 * only through the nn table of the inputs' device (core/fw_backend_nn.h):
 *
 *   const fw_nn_kernels *k = fw__nn_kernels("softmax", x->device);
 *   if (k == NULL) return fw_error_code();      // FW_EDEVICE, message set
 *   err = k->softmax_fwd(x->dtype, fw__ptr(y), fw__ptr(xd), outer, C, inner);
 */
#ifndef FW_NN_INT_H
#define FW_NN_INT_H

#include "../core/fw_backend_nn.h"
#include "../core/fw_op.h"

#include <stddef.h>
#include <stdint.h>

/* The nn kernels of dev (one table lookup), or NULL with FW_EDEVICE
 * "<op>: no backend for cuda: ..." / "<op>: not supported on cuda"
 * (fw_backend_require + fw_backend_family, in fw__nn_kernels_missing). */
const fw_nn_kernels *fw__nn_kernels_missing(const char *op, fw_device dev);
static inline const fw_nn_kernels *fw__nn_kernels(const char *op, fw_device dev)
{
    const fw_backend *b = fw_backend_get(dev);
    return b != NULL && b->nn != NULL ? b->nn : fw__nn_kernels_missing(op, dev);
}

/* Not NULL and float32 or float64 (or a float dtype the device's nn table
 * computes natively, fw_nn_kernels.dtypes): "<op>: <what> must be float32
 * or float64, got int64". */
int fw__nn_check_float(const char *op, const char *what, const fw_tensor *x);
/* x on ref's device: FW_EDEVICE "<op>: <ref_what> is on cuda, <what> on
 * cpu". */
int fw__nn_check_device(const char *op, const char *what, const fw_tensor *x,
                        const char *ref_what, const fw_tensor *ref);
/* Like fw__nn_check_float, of ref's dtype and on ref's device, ref being
 * "the input" (NULL x passes). */
int fw__nn_check_optional_like(const char *op, const char *what, const fw_tensor *x,
                               const fw_tensor *ref);
/* FW_ESHAPE "<op>: <what> must be <rank>-D <layout>, got [..]". */
int fw__nn_check_rank(const char *op, const char *what, const fw_tensor *x, int rank,
                      const char *layout);
/* Labels/ids (int32/int64, any view, on ref's device) as a new dense int64
 * tensor [numel] on that device (*out, what kernels receive), each value
 * in [0, n) or equal to `skip` (INT64_MIN for none): FW_ERANGE "<op>:
 * label 7 out of range [0, 5)". The values are checked on a host copy;
 * when host is not NULL, *host receives that copy (dense int64 [numel] on
 * the CPU) if ref is on another device, else NULL: read *out itself then
 * (see fw__nn_label_values). */
int fw__nn_labels(fw_tensor **out, fw_tensor **host, const char *op, const char *what,
                  const fw_tensor *label, int64_t n, int64_t skip, const char *ref_what,
                  const fw_tensor *ref);
/* The int64 values of fw__nn_labels' result on the host. */
static inline const int64_t *fw__nn_label_values(const fw_tensor *out, const fw_tensor *host)
{
    return fw__ptr(host != NULL ? host : out);
}
/* A dense copy of t that the host can read: a new ref of t when it is
 * already dense and host-accessible, else a contiguous CPU copy. For op
 * code that reads values (labels, class weights); no autograd. */
int fw__nn_host(fw_tensor **out, fw_tensor *t);
/* Replace *t (a new reference the caller owns) by its copy on dev; nothing
 * when it is already there. On failure *t is unchanged. */
int fw__nn_to_device(fw_tensor **t, fw_device dev);
/* nbytes from the data of src to that of dst (both on dst's device). */
int fw__nn_copy(fw_tensor *dst, const fw_tensor *src, size_t nbytes);
/* Apply a reduction to a per-element loss (takes no ref of loss):
 * none: new ref of loss; sum: 0-D sum; mean: 0-D mean. */
int fw__nn_reduce(fw_tensor **out, fw_tensor *loss, int reduction, const char *op);
/* A new uninitialised tensor on dev shaped like input i of node n. */
int fw__nn_grad_like(fw_tensor **out, fw_node *n, int input, fw_device dev);
/* The start of a one-input backward: *g a dense copy of the output's
 * gradient gout and *dx a new buffer shaped like input 0 on gout's device
 * (always needed: a node whose one input needs no gradient is never
 * recorded). On failure neither is left. */
int fw__nn_grad1_begin(fw_tensor **g, fw_tensor **dx, fw_node *n, fw_tensor *gout);
/* For each of node n's first `count` inputs that needs a gradient, a new
 * uninitialised tensor on dev shaped like it in d[i]; the others get NULL.
 * On failure nothing is left allocated (d[] is all NULL) and the error is
 * returned. Shared by the backward functions with several inputs. */
int fw__nn_grads_new(fw_tensor **d, fw_node *n, int count, fw_device dev);
/* fw_node_record() of an op with inputs ins[0..n_in) and the one output y,
 * then, when a node was recorded, attr (attr_size bytes) copied into it and
 * saved[i] kept in slot i for i < n_saved (NULL entries stay empty). The
 * shared tail of the nn ops' forward functions. 0 or FW_ENOMEM. */
int fw__nn_record(const char *op, fw_backward_fn backward, int n_in, fw_tensor *const *ins,
                  fw_tensor *y, const void *attr, size_t attr_size, int n_saved,
                  fw_tensor *const *saved);
/* Unref d[0..count) and set them NULL. */
void fw__nn_grads_drop(fw_tensor **d, int count);
/* fw__ptr(t), or NULL for a NULL tensor. */
void *fw__nn_ptr(const fw_tensor *t);

#endif
