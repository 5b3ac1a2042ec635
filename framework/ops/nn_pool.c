/*
 * nn_pool.c - max, average and adaptive-average pooling ops, 2-D and 1-D
 * (1-D runs the 2-D kernels with H = 1). Kernels in cpu/nn_pool.c.
 */
#include "fw/nn.h"
#include "nn_int.h"

enum { POOL_MAX, POOL_AVG, POOL_ADAPTIVE };

typedef struct pool_attr {
    fw_nn_pool_geom g;
    int kind;
} pool_attr;

static int pool_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const pool_attr *a = fw_node_attr(n);
    fw_tensor *g = NULL, *dx = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels(fw_node_name(n), gout[0]->device)) == NULL)
        return fw_error_code();
    if ((err = fw__nn_grad1_begin(&g, &dx, n, gout[0])) < 0)
        return err;
    if (a->kind == POOL_MAX)
        err = k->maxpool2d_bwd(g->dtype, fw__ptr(dx), fw__ptr(fw_node_saved(n, 0)), fw__ptr(g),
                               &a->g);
    else if (a->kind == POOL_AVG)
        err = k->avgpool2d_bwd(g->dtype, fw__ptr(dx), fw__ptr(g), &a->g);
    else
        err = k->adaptive_avgpool2d_bwd(g->dtype, fw__ptr(dx), fw__ptr(g), a->g.P, a->g.H,
                                        a->g.W, a->g.OH, a->g.OW);
    fw_tensor_unref(g);
    if (err < 0) {
        fw_tensor_unref(dx);
        return err;
    }
    gin[0] = dx;
    return 0;
}

/* Paddle's output size: (in + 2p - k)/s + 1, rounded up with ceil_mode. */
static int pool_out_dim(int64_t *out, const char *op, const char *axis, int64_t in, int64_t k,
                        int64_t s, int64_t p, bool ceil_mode)
{
    int64_t num;
    if (k < 1 || s < 1)
        return fw_error_set(FW_EINVAL, "%s: kernel and stride must be >= 1, got %lld and %lld",
                            op, (long long)k, (long long)s);
    if (p < 0)
        return fw_error_set(FW_EINVAL, "%s: padding must be >= 0, got %lld", op, (long long)p);
    num = in + 2 * p - k;
    if (num < 0)
        return fw_error_set(FW_ESHAPE, "%s: kernel %lld is larger than the padded %s %lld", op,
                            (long long)k, axis, (long long)(in + 2 * p));
    *out = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    return 0;
}

/* x checked: [N, C, H, W] (or [N, C, L] with H = 1). out_shape is x's
 * shape with the spatial dims replaced. */
static int pool_run(fw_tensor **out, fw_tensor **mask, const char *op, fw_tensor *x,
                    pool_attr *a, const int64_t *out_shape, int ndim)
{
    fw_tensor *xd = NULL, *y = NULL, *idx = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels(op, x->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    if ((err = fw_op_output(&y, x->device, x->dtype, out_shape, ndim)) < 0)
        goto fail;
    if (a->kind == POOL_MAX) {
        if ((err = fw_op_output(&idx, x->device, FW_INT64, out_shape, ndim)) < 0)
            goto fail;
        err = k->maxpool2d_fwd(x->dtype, fw__ptr(y), fw__ptr(idx), fw__ptr(xd), &a->g);
    } else if (a->kind == POOL_AVG) {
        err = k->avgpool2d_fwd(x->dtype, fw__ptr(y), fw__ptr(xd), &a->g);
    } else {
        err = k->adaptive_avgpool2d_fwd(x->dtype, fw__ptr(y), fw__ptr(xd), a->g.P, a->g.H,
                                        a->g.W, a->g.OH, a->g.OW);
    }
    if (err < 0)
        goto fail;
    if ((err = fw__nn_record(op, pool_backward, 1, &x, y, a, sizeof(*a), 1,
                             (fw_tensor *[]){idx})) < 0)
        goto fail;
    fw_tensor_unref(xd);
    if (mask != NULL)
        *mask = idx;
    else
        fw_tensor_unref(idx);
    *out = y;
    return 0;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(y);
    fw_tensor_unref(idx);
    return err;
}

static int pool2d(fw_tensor **out, fw_tensor **mask, const char *op, int kind, fw_tensor *x,
                  const int64_t kernel[2], const int64_t stride[2], const int64_t padding[2],
                  bool ceil_mode, bool exclusive)
{
    pool_attr a = {{0}, kind};
    int64_t shape[4];
    int err;

    *out = NULL;
    if (mask != NULL)
        *mask = NULL;
    if ((err = fw__nn_check_float(op, "x", x)) < 0 ||
        (err = fw__nn_check_rank(op, "x", x, 4, "[N, C, H, W]")) < 0)
        return err;
    if (kernel == NULL)
        return fw_error_set(FW_EINVAL, "%s: kernel_size is NULL", op);
    a.g.P = x->shape[0] * x->shape[1];
    a.g.H = x->shape[2];
    a.g.W = x->shape[3];
    a.g.KH = kernel[0];
    a.g.KW = kernel[1];
    a.g.sh = stride ? stride[0] : kernel[0];
    a.g.sw = stride ? stride[1] : kernel[1];
    a.g.ph = padding ? padding[0] : 0;
    a.g.pw = padding ? padding[1] : 0;
    a.g.exclusive = exclusive;
    if ((err = pool_out_dim(&a.g.OH, op, "height", a.g.H, a.g.KH, a.g.sh, a.g.ph, ceil_mode)) <
            0 ||
        (err = pool_out_dim(&a.g.OW, op, "width", a.g.W, a.g.KW, a.g.sw, a.g.pw, ceil_mode)) <
            0)
        return err;
    shape[0] = x->shape[0];
    shape[1] = x->shape[1];
    shape[2] = a.g.OH;
    shape[3] = a.g.OW;
    return pool_run(out, mask, op, x, &a, shape, 4);
}

int fw_max_pool2d(fw_tensor **out, fw_tensor **mask, fw_tensor *x, const int64_t kernel[2],
                  const int64_t stride[2], const int64_t padding[2], bool ceil_mode)
{
    return pool2d(out, mask, "max_pool2d", POOL_MAX, x, kernel, stride, padding, ceil_mode,
                  false);
}

int fw_avg_pool2d(fw_tensor **out, fw_tensor *x, const int64_t kernel[2],
                  const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                  bool exclusive)
{
    return pool2d(out, NULL, "avg_pool2d", POOL_AVG, x, kernel, stride, padding, ceil_mode,
                  exclusive);
}

int fw_adaptive_avg_pool2d(fw_tensor **out, fw_tensor *x, const int64_t output_size[2])
{
    pool_attr a = {{0}, POOL_ADAPTIVE};
    int64_t shape[4];
    int err;

    *out = NULL;
    if ((err = fw__nn_check_float("adaptive_avg_pool2d", "x", x)) < 0 ||
        (err = fw__nn_check_rank("adaptive_avg_pool2d", "x", x, 4, "[N, C, H, W]")) < 0)
        return err;
    if (output_size == NULL || output_size[0] < 1 || output_size[1] < 1)
        return fw_error_set(FW_EINVAL, "adaptive_avg_pool2d: output_size must be >= 1");
    a.g.P = x->shape[0] * x->shape[1];
    a.g.H = x->shape[2];
    a.g.W = x->shape[3];
    a.g.OH = output_size[0];
    a.g.OW = output_size[1];
    shape[0] = x->shape[0];
    shape[1] = x->shape[1];
    shape[2] = a.g.OH;
    shape[3] = a.g.OW;
    return pool_run(out, NULL, "adaptive_avg_pool2d", x, &a, shape, 4);
}

static int pool1d(fw_tensor **out, fw_tensor **mask, const char *op, int kind, fw_tensor *x,
                  int64_t kernel, int64_t stride, int64_t padding, bool ceil_mode,
                  bool exclusive, int64_t adaptive_out)
{
    pool_attr a = {{0}, kind};
    int64_t shape[3];
    int err;

    *out = NULL;
    if (mask != NULL)
        *mask = NULL;
    if ((err = fw__nn_check_float(op, "x", x)) < 0 ||
        (err = fw__nn_check_rank(op, "x", x, 3, "[N, C, L]")) < 0)
        return err;
    a.g.P = x->shape[0] * x->shape[1];
    a.g.H = 1;
    a.g.W = x->shape[2];
    a.g.OH = 1;
    if (kind == POOL_ADAPTIVE) {
        if (adaptive_out < 1)
            return fw_error_set(FW_EINVAL, "%s: output_size must be >= 1, got %lld", op,
                                (long long)adaptive_out);
        a.g.OW = adaptive_out;
    } else {
        a.g.KH = 1;
        a.g.sh = 1;
        a.g.KW = kernel;
        a.g.sw = stride > 0 ? stride : kernel;
        a.g.pw = padding;
        a.g.exclusive = exclusive;
        if ((err = pool_out_dim(&a.g.OW, op, "length", a.g.W, a.g.KW, a.g.sw, a.g.pw,
                                ceil_mode)) < 0)
            return err;
    }
    shape[0] = x->shape[0];
    shape[1] = x->shape[1];
    shape[2] = a.g.OW;
    return pool_run(out, mask, op, x, &a, shape, 3);
}

int fw_max_pool1d(fw_tensor **out, fw_tensor **mask, fw_tensor *x, int64_t kernel,
                  int64_t stride, int64_t padding, bool ceil_mode)
{
    return pool1d(out, mask, "max_pool1d", POOL_MAX, x, kernel, stride, padding, ceil_mode,
                  false, 0);
}

int fw_avg_pool1d(fw_tensor **out, fw_tensor *x, int64_t kernel, int64_t stride,
                  int64_t padding, bool ceil_mode, bool exclusive)
{
    return pool1d(out, NULL, "avg_pool1d", POOL_AVG, x, kernel, stride, padding, ceil_mode,
                  exclusive, 0);
}

int fw_adaptive_avg_pool1d(fw_tensor **out, fw_tensor *x, int64_t output_size)
{
    return pool1d(out, NULL, "adaptive_avg_pool1d", POOL_ADAPTIVE, x, 0, 0, 0, false, false,
                  output_size);
}
