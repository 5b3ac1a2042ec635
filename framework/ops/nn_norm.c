/*
 * nn_norm.c - batch_norm, layer_norm, dropout and embedding ops
 * (kernels in cpu/nn_norm.c).
 */
#include <stdlib.h>
#include <string.h>

#include "../core/fw_backend_random.h"
#include "fw/nn.h"
#include "fw/random.h"
#include "nn_int.h"

/* ---- batch_norm ------------------------------------------------------------- */

typedef struct bn_attr {
    int64_t N, C, L;
    int training;
} bn_attr;

static int bn_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const bn_attr *a = fw_node_attr(n);
    fw_tensor *x = fw_node_saved(n, 0), *mean = fw_node_saved(n, 1);
    fw_tensor *invstd = fw_node_saved(n, 2), *w = fw_node_saved(n, 3);
    fw_tensor *g = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels("batch_norm", x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    /* gin: dx, dw, db */
    if ((err = fw__nn_grads_new(gin, n, 3, x->device)) == 0 &&
        (err = k->batch_norm_bwd(g->dtype, fw__nn_ptr(gin[0]), fw__nn_ptr(gin[1]),
                                 fw__nn_ptr(gin[2]), fw__ptr(x), fw__ptr(g), fw__ptr(mean),
                                 fw__ptr(invstd), fw__nn_ptr(w), a->N, a->C, a->L,
                                 a->training)) < 0)
        fw__nn_grads_drop(gin, 3);
    fw_tensor_unref(g);
    return err;
}

static int bn_check_vec(const char *what, const fw_tensor *v, const fw_tensor *x, int64_t C,
                        bool need_contiguous)
{
    char buf[128];
    int err;
    if (v == NULL)
        return 0;
    if ((err = fw__nn_check_optional_like("batch_norm", what, v, x)) < 0)
        return err;
    if (v->ndim != 1 || v->shape[0] != C)
        return fw_error_set(FW_ESHAPE, "batch_norm: %s must be [%lld] (x has %lld channels), got %s",
                            what, (long long)C, (long long)C,
                            fw_shape_format(buf, sizeof(buf), v->shape, v->ndim));
    if (need_contiguous && !fw_tensor_is_contiguous(v))
        return fw_error_set(FW_EINVAL, "batch_norm: %s must be contiguous (updated in place)",
                            what);
    return 0;
}

int fw_batch_norm(fw_tensor **out, fw_tensor *x, fw_tensor *running_mean,
                  fw_tensor *running_var, fw_tensor *weight, fw_tensor *bias, bool training,
                  double momentum, double epsilon)
{
    fw_tensor *xd = NULL, *wd = NULL, *bd = NULL, *y = NULL, *mean = NULL, *invstd = NULL;
    fw_tensor *rmd = NULL, *rvd = NULL;
    fw_tensor *ins[3] = {x, weight, bias};
    const fw_nn_kernels *k;
    bn_attr a = {0};
    char buf[128];
    int64_t cshape[1];
    int err;

    *out = NULL;
    if ((err = fw__nn_check_float("batch_norm", "x", x)) < 0)
        return err;
    if ((k = fw__nn_kernels("batch_norm", x->device)) == NULL)
        return fw_error_code();
    if (x->ndim < 2)
        return fw_error_set(FW_ESHAPE, "batch_norm: x must be 2-D [N, C] or more [N, C, ...], got %s",
                            fw_shape_format(buf, sizeof(buf), x->shape, x->ndim));
    a.N = x->shape[0];
    a.C = x->shape[1];
    a.L = 1;
    for (int d = 2; d < x->ndim; d++)
        a.L *= x->shape[d];
    a.training = training;
    if ((err = bn_check_vec("running_mean", running_mean, x, a.C, training)) < 0 ||
        (err = bn_check_vec("running_var", running_var, x, a.C, training)) < 0 ||
        (err = bn_check_vec("weight", weight, x, a.C, false)) < 0 ||
        (err = bn_check_vec("bias", bias, x, a.C, false)) < 0)
        return err;
    if (!training && (running_mean == NULL || running_var == NULL))
        return fw_error_set(FW_EINVAL,
                            "batch_norm: running_mean and running_var are needed when not training");
    if (training && (running_mean == NULL) != (running_var == NULL))
        return fw_error_set(FW_EINVAL, "batch_norm: give both running_mean and running_var or neither");
    if (!(momentum >= 0 && momentum <= 1) || !(epsilon >= 0))
        return fw_error_set(FW_EINVAL, "batch_norm: momentum %g must be in [0, 1] and epsilon %g >= 0",
                            momentum, epsilon);
    cshape[0] = a.C;
    if ((err = fw_op_dense(&xd, x)) < 0 ||
        (weight != NULL && (err = fw_op_dense(&wd, weight)) < 0) ||
        (bias != NULL && (err = fw_op_dense(&bd, bias)) < 0) ||
        (err = fw_op_output(&y, x->device, x->dtype, x->shape, x->ndim)) < 0 ||
        (err = fw_op_output(&mean, x->device, x->dtype, cshape, 1)) < 0 ||
        (err = fw_op_output(&invstd, x->device, x->dtype, cshape, 1)) < 0)
        goto fail;
    if (training) {
        err = k->batch_norm_train_fwd(x->dtype, fw__ptr(y), fw__ptr(mean), fw__ptr(invstd),
                                      fw__nn_ptr(running_mean), fw__nn_ptr(running_var),
                                      fw__ptr(xd), fw__nn_ptr(wd), fw__nn_ptr(bd), a.N, a.C,
                                      a.L, momentum, epsilon);
    } else {
        /* copies: the running statistics may change before backward runs */
        if ((err = fw_op_dense(&rmd, running_mean)) < 0 ||
            (err = fw_op_dense(&rvd, running_var)) < 0 ||
            (err = fw__nn_copy(mean, rmd, (size_t)a.C * fw_dtype_size(x->dtype))) < 0)
            goto fail;
        err = k->batch_norm_infer_fwd(x->dtype, fw__ptr(y), fw__ptr(invstd), fw__ptr(xd),
                                      fw__ptr(rmd), fw__ptr(rvd), fw__nn_ptr(wd),
                                      fw__nn_ptr(bd), a.N, a.C, a.L, epsilon);
    }
    if (err < 0)
        goto fail;
    if ((err = fw__nn_record("batch_norm", bn_backward, 3, ins, y, &a, sizeof(a), 4,
                             (fw_tensor *[]){xd, mean, invstd, wd})) < 0)
        goto fail;
    *out = y;
    y = NULL;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(wd);
    fw_tensor_unref(bd);
    fw_tensor_unref(y);
    fw_tensor_unref(mean);
    fw_tensor_unref(invstd);
    fw_tensor_unref(rmd);
    fw_tensor_unref(rvd);
    return err;
}

/* ---- layer_norm --------------------------------------------------------------- */

typedef struct ln_attr {
    int64_t M, D;
} ln_attr;

static int ln_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const ln_attr *a = fw_node_attr(n);
    fw_tensor *x = fw_node_saved(n, 0), *mean = fw_node_saved(n, 1);
    fw_tensor *rstd = fw_node_saved(n, 2), *w = fw_node_saved(n, 3);
    fw_tensor *g = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels("layer_norm", x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    /* gin: dx, dw, db */
    if ((err = fw__nn_grads_new(gin, n, 3, x->device)) == 0 &&
        (err = k->layer_norm_bwd(g->dtype, fw__nn_ptr(gin[0]), fw__nn_ptr(gin[1]),
                                 fw__nn_ptr(gin[2]), fw__ptr(x), fw__ptr(g), fw__ptr(mean),
                                 fw__ptr(rstd), fw__nn_ptr(w), a->M, a->D)) < 0)
        fw__nn_grads_drop(gin, 3);
    fw_tensor_unref(g);
    return err;
}

int fw_layer_norm(fw_tensor **out, fw_tensor *x, const int64_t *normalized_shape, int n,
                  fw_tensor *weight, fw_tensor *bias, double epsilon)
{
    fw_tensor *xd = NULL, *wd = NULL, *bd = NULL, *y = NULL, *mean = NULL, *rstd = NULL;
    fw_tensor *ins[3] = {x, weight, bias};
    ln_attr a = {1, 1};
    const fw_nn_kernels *k;
    char s1[128], s2[128];
    int64_t mshape[1];
    int err;

    *out = NULL;
    if ((err = fw__nn_check_float("layer_norm", "x", x)) < 0 ||
        (err = fw__nn_check_optional_like("layer_norm", "weight", weight, x)) < 0 ||
        (err = fw__nn_check_optional_like("layer_norm", "bias", bias, x)) < 0)
        return err;
    if ((k = fw__nn_kernels("layer_norm", x->device)) == NULL)
        return fw_error_code();
    if (n < 1 || n > x->ndim || normalized_shape == NULL ||
        !fw_shape_equal(normalized_shape, n, x->shape + x->ndim - n, n))
        return fw_error_set(FW_ESHAPE,
                            "layer_norm: normalized_shape %s must match the trailing dims of x %s",
                            normalized_shape != NULL && n >= 0 && n <= FW_MAX_DIMS
                                ? fw_shape_format(s1, sizeof(s1), normalized_shape, n)
                                : "(none)",
                            fw_shape_format(s2, sizeof(s2), x->shape, x->ndim));
    for (int d = 0; d < x->ndim; d++) {
        if (d < x->ndim - n)
            a.M *= x->shape[d];
        else
            a.D *= x->shape[d];
    }
    if ((weight != NULL && weight->numel != a.D) || (bias != NULL && bias->numel != a.D))
        return fw_error_set(FW_ESHAPE, "layer_norm: weight and bias must have %lld elements (normalized_shape %s)",
                            (long long)a.D, fw_shape_format(s1, sizeof(s1), normalized_shape, n));
    if (!(epsilon >= 0))
        return fw_error_set(FW_EINVAL, "layer_norm: epsilon %g must be >= 0", epsilon);
    mshape[0] = a.M;
    if ((err = fw_op_dense(&xd, x)) < 0 ||
        (weight != NULL && (err = fw_op_dense(&wd, weight)) < 0) ||
        (bias != NULL && (err = fw_op_dense(&bd, bias)) < 0) ||
        (err = fw_op_output(&y, x->device, x->dtype, x->shape, x->ndim)) < 0 ||
        (err = fw_op_output(&mean, x->device, x->dtype, mshape, 1)) < 0 ||
        (err = fw_op_output(&rstd, x->device, x->dtype, mshape, 1)) < 0 ||
        (err = k->layer_norm_fwd(x->dtype, fw__ptr(y), fw__ptr(mean), fw__ptr(rstd),
                                 fw__ptr(xd), fw__nn_ptr(wd), fw__nn_ptr(bd), a.M, a.D,
                                 epsilon)) < 0)
        goto fail;
    if ((err = fw__nn_record("layer_norm", ln_backward, 3, ins, y, &a, sizeof(a), 4,
                             (fw_tensor *[]){xd, mean, rstd, wd})) < 0)
        goto fail;
    *out = y;
    y = NULL;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(wd);
    fw_tensor_unref(bd);
    fw_tensor_unref(y);
    fw_tensor_unref(mean);
    fw_tensor_unref(rstd);
    return err;
}

/* ---- dropout ----------------------------------------------------------------- */

typedef struct dropout_attr {
    double scale;
} dropout_attr;

static int dropout_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const dropout_attr *a = fw_node_attr(n);
    fw_tensor *mask = fw_node_saved(n, 0), *g = NULL, *dx = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels("dropout", mask->device)) == NULL)
        return fw_error_code();
    if ((err = fw__nn_grad1_begin(&g, &dx, n, gout[0])) < 0)
        return err;
    err = k->dropout_apply(g->dtype, fw__ptr(dx), fw__ptr(g), fw__ptr(mask), g->numel,
                           a->scale);
    fw_tensor_unref(g);
    if (err < 0) {
        fw_tensor_unref(dx);
        return err;
    }
    gin[0] = dx;
    return 0;
}

/* A uint8 0/1 mask shaped like x on x's device, 1 with probability keep:
 * the same bits on every device for a generator state (Philox counters).
 * Drawn by the device's random family where it has one, else on the host
 * and copied over. */
static int draw_mask(fw_tensor **out, fw_generator *g, const fw_tensor *x, double keep)
{
    const fw_backend *b = fw_backend_get(x->device);
    fw_tensor *m = NULL;
    int err;

    *out = NULL;
    if (x->device != FW_CPU && b != NULL && b->random != NULL) {
        size_t n = (size_t)x->numel;
        uint64_t seed, base;
        if ((err = fw_op_output(&m, x->device, FW_UINT8, x->shape, x->ndim)) < 0)
            return err;
        seed = fw_generator_get_seed(g);
        base = fw_generator_reserve(g, fw_random_blocks(n, false));
        if ((err = b->random->bernoulli(fw__ptr(m), n, seed, base, keep)) < 0) {
            fw_tensor_unref(m);
            return err;
        }
        *out = m;
        return 0;
    }
    if ((err = fw_op_output(&m, FW_CPU, FW_UINT8, x->shape, x->ndim)) < 0)
        return err;
    if ((err = fw_random_bernoulli_u8(g, fw__ptr(m), (size_t)x->numel, keep)) < 0 ||
        (err = fw__nn_to_device(&m, x->device)) < 0) {
        fw_tensor_unref(m);
        return err;
    }
    *out = m;
    return 0;
}

int fw_dropout(fw_tensor **out, fw_tensor *x, double p, bool training, fw_dropout_mode mode,
               fw_generator *g)
{
    fw_tensor *xd = NULL, *y = NULL, *mask = NULL;
    const fw_nn_kernels *k;
    dropout_attr a;
    int err;

    *out = NULL;
    if ((err = fw__nn_check_float("dropout", "x", x)) < 0)
        return err;
    if (!(p >= 0 && p <= 1))
        return fw_error_set(FW_EINVAL, "dropout: p must be in [0, 1], got %g", p);
    if (mode != FW_DROPOUT_UPSCALE_IN_TRAIN && mode != FW_DROPOUT_DOWNSCALE_IN_INFER)
        return fw_error_set(FW_EINVAL,
                            "dropout: mode %d is not upscale_in_train or downscale_in_infer",
                            (int)mode);
    if (!training) {
        if (mode == FW_DROPOUT_DOWNSCALE_IN_INFER)
            return fw_mul_scalar(out, x, 1 - p);
        *out = fw_tensor_ref(x);
        return 0;
    }
    if (p == 0 && mode == FW_DROPOUT_UPSCALE_IN_TRAIN) {
        *out = fw_tensor_ref(x);
        return 0;
    }
    a.scale = mode == FW_DROPOUT_UPSCALE_IN_TRAIN ? (p < 1 ? 1 / (1 - p) : 0) : 1;
    if ((k = fw__nn_kernels("dropout", x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&xd, x)) < 0 ||
        (err = fw_op_output(&y, x->device, x->dtype, x->shape, x->ndim)) < 0 ||
        (err = draw_mask(&mask, g, x, 1 - p)) < 0 ||
        (err = k->dropout_apply(x->dtype, fw__ptr(y), fw__ptr(xd), fw__ptr(mask), x->numel,
                                a.scale)) < 0)
        goto fail;
    if ((err = fw__nn_record("dropout", dropout_backward, 1, &x, y, &a, sizeof(a), 1,
                             (fw_tensor *[]){mask})) < 0)
        goto fail;
    *out = y;
    y = NULL;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    fw_tensor_unref(mask);
    return err;
}

/* ---- embedding ----------------------------------------------------------------- */

typedef struct emb_attr {
    int64_t n, V, D, padding_idx;
} emb_attr;

static int embedding_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const emb_attr *a = fw_node_attr(n);
    fw_tensor *ids = fw_node_saved(n, 0), *g = NULL, *dw = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels("embedding", ids->device)) == NULL)
        return fw_error_code();
    if ((err = fw__nn_grad1_begin(&g, &dw, n, gout[0])) < 0)
        return err;
    err = k->embedding_bwd(g->dtype, fw__ptr(dw), fw__ptr(g), fw__ptr(ids), a->n, a->V, a->D,
                           a->padding_idx);
    fw_tensor_unref(g);
    if (err < 0) {
        fw_tensor_unref(dw);
        return err;
    }
    gin[0] = dw;
    return 0;
}

int fw_embedding(fw_tensor **out, fw_tensor *ids, fw_tensor *weight, int64_t padding_idx)
{
    fw_tensor *wd = NULL, *y = NULL, *idt = NULL;
    const fw_nn_kernels *k;
    int64_t shape[FW_MAX_DIMS];
    emb_attr a;
    fw_node *node;
    char buf[128];
    int err;

    *out = NULL;
    if ((err = fw__nn_check_float("embedding", "weight", weight)) < 0 ||
        (err = fw__nn_check_rank("embedding", "weight", weight, 2, "[num_embeddings, dim]")) <
            0)
        return err;
    if ((k = fw__nn_kernels("embedding", weight->device)) == NULL)
        return fw_error_code();
    if (ids == NULL)
        return fw_error_set(FW_EINVAL, "embedding: ids is NULL");
    if (ids->ndim + 1 > FW_MAX_DIMS)
        return fw_error_set(FW_ESHAPE, "embedding: ids %s has too many dims",
                            fw_shape_format(buf, sizeof(buf), ids->shape, ids->ndim));
    a.V = weight->shape[0];
    a.D = weight->shape[1];
    a.n = ids->numel;
    if (padding_idx == FW_NO_PADDING) {
        a.padding_idx = -1;
    } else {
        if (padding_idx < -a.V || padding_idx >= a.V)
            return fw_error_set(FW_ERANGE, "embedding: padding_idx %lld out of range [%lld, %lld)",
                                (long long)padding_idx, (long long)-a.V, (long long)a.V);
        a.padding_idx = padding_idx < 0 ? padding_idx + a.V : padding_idx;
    }
    /* ids as a dense int64 tensor on the weight's device */
    if ((err = fw__nn_labels(&idt, NULL, "embedding", "id", ids, a.V, INT64_MIN, "weight",
                             weight)) < 0)
        return err;
    for (int d = 0; d < ids->ndim; d++)
        shape[d] = ids->shape[d];
    shape[ids->ndim] = a.D;
    if ((err = fw_op_dense(&wd, weight)) < 0 ||
        (err = fw_op_output(&y, weight->device, weight->dtype, shape, ids->ndim + 1)) < 0 ||
        (err = k->embedding_fwd(weight->dtype, fw__ptr(y), fw__ptr(wd), fw__ptr(idt), a.n, a.D,
                                a.padding_idx)) < 0)
        goto fail;
    if ((err = fw_node_record(&node, "embedding", embedding_backward, 1, &weight, 1, &y, 1,
                              sizeof(a))) < 0)
        goto fail;
    if (node != NULL) {
        *(emb_attr *)fw_node_attr(node) = a;
        fw_node_save(node, 0, idt);
    }
    *out = y;
    y = NULL;
fail:
    fw_tensor_unref(idt);
    fw_tensor_unref(wd);
    fw_tensor_unref(y);
    return err;
}
