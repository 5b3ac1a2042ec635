/*
 * index_int.h - helpers shared by the indexing/joining op files (fwidx;
 * private to ops/index*.c and ops/join*.c). Kernels are reached only
 * through the index family of the tensors' backend
 * (core/fw_backend_index.h): k = fw__idx_kernels(op, x) after the checks.
 */
#ifndef FW_INDEX_INT_H
#define FW_INDEX_INT_H

#include "../core/fw_op.h"
#include "../core/fw_backend_index.h"
#include "fw/index.h"

#include <stdbool.h>
#include <stdint.h>

/* FW_EINVAL when x is NULL; FW_EDEVICE when x's device has no backend or
 * no index family ("<op>: not supported on cuda"). */
int fw__idx_check_input(const char *op, const char *what, const fw_tensor *x);

/* FW_EDEVICE "<op>: <what> is on cuda, x on cpu" when t (may be NULL) is
 * not on x's device. */
int fw__idx_same_device(const char *op, const char *what, const fw_tensor *t,
                        const fw_tensor *x);

/* The index family of x's backend (x passed fw__idx_check_input, so never
 * NULL then). */
const struct fw_index_kernels *fw__idx_kernels(const char *op, const fw_tensor *x);

/* idx[0..n) (host) as device data of dev for a kernel: on a host-accessible
 * backend the array itself (*keep NULL), else a new int64 tensor on dev
 * holding a copy (*keep: unref it after the kernel). */
int fw__idx_on_device(const int64_t **dptr, fw_tensor **keep, fw_device dev,
                      const int64_t *idx, int64_t n);

/* Paddle's in-place rule: FW_EGRAD when grad mode is on and x needs grad
 * (a leaf parameter, or a tensor with grad history). */
int fw__idx_check_inplace(const char *op, const fw_tensor *x);

/* Product of shape[a..b). */
int64_t fw__idx_prod(const int64_t *shape, int a, int b);

/* Read an int32/int64 index tensor (any view) into a new malloc'ed int64
 * array of its numel (*n), checking every entry against [0, axis_len) (or
 * [-axis_len, axis_len) when allow_negative, negatives wrapped). axis < 0:
 * the message names the range only. Errors:
 * FW_EDTYPE "<op>: index must be int32 or int64, got float32", FW_ERANGE
 * "<op>: index 7 out of range for axis 0 of size 5". Caller frees *out. */
int fw__idx_load_index(int64_t **out, int64_t *n, const char *op, fw_tensor *index,
                       int64_t axis_len, int axis, bool allow_negative);

/* Advanced indexing on the first n axes of x: checks the n index tensors
 * (int32/int64, CPU), broadcasts them to bshape (*nb dims) and loads each
 * into idx[i] (malloc'ed, *count entries, negatives wrapped, checked
 * against x.shape[i]). On error every idx[i] is NULL. Caller frees idx[i]. */
int fw__idx_load_multi(int64_t *idx[FW_MAX_DIMS], int64_t *count, int64_t *bshape, int *nb,
                       const char *op, const fw_tensor *x, fw_tensor *const *indices, int n);

/* *t is about to be read while x is written in place: when they share
 * storage, replace *t by a private contiguous copy (so x[i] = x[j] style
 * writes read the old values). */
int fw__idx_unalias(fw_tensor **t, const fw_tensor *x);

/* Write `v` converted to dt into buf (fw_dtype_size(dt) bytes). */
void fw__idx_scalar_bytes(void *buf, fw_dtype dt, double v);

/* A contiguous int64 tensor on dev holding idx[0..n) (host) with the
 * given shape. */
int fw__idx_index_tensor(fw_tensor **out, fw_device dev, const int64_t *idx,
                         const int64_t *shape, int ndim);

/* The attr of the ops whose backward needs only their axis. */
typedef struct fw__idx_axis_attr {
    int axis;
} fw__idx_axis_attr;

/* Backward of the ops that pick elements of input 0 along an axis
 * (take_along_axis, sort, topk): gx = zeros(x), then g scattered-added at
 * the int64 indices in saved slot 0, which have g's shape. */
int fw__idx_along_backward(fw_node *node, fw_tensor **gin, fw_tensor *const *gout);

/* fw__idx_index_tensor(dev, idx, shape, ndim) kept in the node's saved
 * slot: how gather-like ops hand their resolved indices to backward. */
int fw__idx_save_index(fw_node *node, int slot, fw_device dev, const int64_t *idx,
                       const int64_t *shape, int ndim);

/* In backward: g in float32/float64 (a dense copy, upcast from
 * float16/bfloat16 when needed). */
int fw__idx_grad_dense(fw_tensor **out, fw_tensor *g);

/* In backward: cast t (float32/64) to dt when they differ; takes t. */
int fw__idx_grad_finish(fw_tensor **out, fw_tensor *t, fw_dtype dt);

/* map_add on a float32/float64 tensor pair (in: zeros of in_shape); maps
 * flat on the host as fw_backend_index.h lays them out. */
int fw__idx_map_add(fw_tensor *in, const fw_tensor *out, int ndim,
                    const int64_t *out_shape, const int64_t *in_shape, const int64_t *maps);

#endif
