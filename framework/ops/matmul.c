/* matmul.c - batched, broadcasting matmul on OpenBLAS (Paddle/NumPy rules). */
#include "core/fw_backend.h"
#include "core/fw_op.h"
#include "ops_complex.h"

#include <stdlib.h>

typedef struct mm_attr { bool tx, ty; } mm_attr;

static int mm2(fw_tensor **out, fw_tensor *x, fw_tensor *y, bool tx, bool ty);

static int mm_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const mm_attr *a = fw_node_attr(n);
    fw_tensor *x = fw_node_saved(n, 0), *y = fw_node_saved(n, 1), *g = gout[0], *t = NULL;
    int nd, err = 0;
    const int64_t *shape;

    if (fw_node_needs_grad(n, 0)) {
        err = a->tx ? mm2(&t, y, g, a->ty, true) : mm2(&t, g, y, false, !a->ty);
        if (err == 0) {
            shape = fw_node_input_shape(n, 0, &nd);
            err = fw_op_reduce_to_shape(&gin[0], t, shape, nd);
        }
        fw_tensor_unref(t);
        t = NULL;
    }
    if (err == 0 && fw_node_needs_grad(n, 1)) {
        err = a->ty ? mm2(&t, g, x, true, a->tx) : mm2(&t, x, g, !a->tx, false);
        if (err == 0) {
            shape = fw_node_input_shape(n, 1, &nd);
            err = fw_op_reduce_to_shape(&gin[1], t, shape, nd);
        }
        fw_tensor_unref(t);
    }
    return err;
}

/* Whether the last two dims of t can be handed to BLAS as they are; sets
 * the transpose flag and leading dimension. */
static bool blas_ok(const fw_tensor *t, bool *trans, int64_t *ld)
{
    int nd = t->ndim;
    int64_t r = t->shape[nd - 2], c = t->shape[nd - 1];
    int64_t sr = t->strides[nd - 2], sc = t->strides[nd - 1];

    if ((sc == 1 || c == 1) && sr >= (c > 1 ? c : 1)) {
        *ld = sr > 0 ? sr : 1;
        if (r == 1)
            *ld = c > 1 ? c : 1;
        return true;
    }
    if ((sr == 1 || r == 1) && sc >= (r > 1 ? r : 1)) {
        *trans = !*trans;
        *ld = sc > 0 ? sc : 1;
        if (c == 1)
            *ld = r > 1 ? r : 1;
        return true;
    }
    return false;
}

/* Core: x, y of rank >= 2, same float dtype (float32/float64). */
static int mm2(fw_tensor **out, fw_tensor *x, fw_tensor *y, bool tx, bool ty)
{
    int64_t bshape[FW_MAX_DIMS], oshape[FW_MAX_DIMS];
    int64_t m, k, k2, nn, batch = 1, ldx, ldy;
    fw_tensor *xd = NULL, *yd = NULL, *z = NULL;
    int64_t *offs = NULL, offs_small[64];
    const fw_backend *be;
    fw_node *node;
    int bnd, err;
    bool ta = tx, tb = ty;

    *out = NULL;
    m = tx ? x->shape[x->ndim - 1] : x->shape[x->ndim - 2];
    k = tx ? x->shape[x->ndim - 2] : x->shape[x->ndim - 1];
    k2 = ty ? y->shape[y->ndim - 1] : y->shape[y->ndim - 2];
    nn = ty ? y->shape[y->ndim - 2] : y->shape[y->ndim - 1];
    if (k != k2) {
        char a[160], b[160];
        return fw_error_set(FW_ESHAPE, "matmul: shapes %s and %s do not match (%lld != %lld)%s",
                            fw_tensor_shape_str(a, sizeof(a), x),
                            fw_tensor_shape_str(b, sizeof(b), y), (long long)k, (long long)k2,
                            tx || ty ? " after transpose" : "");
    }
    if ((err = fw_op_broadcast_shapes(bshape, &bnd, "matmul", x->shape, x->ndim - 2, y->shape,
                                      y->ndim - 2)) < 0) {
        char a[160], b[160];
        return fw_error_set(FW_ESHAPE, "matmul: batch dims of %s and %s cannot broadcast",
                            fw_tensor_shape_str(a, sizeof(a), x),
                            fw_tensor_shape_str(b, sizeof(b), y));
    }
    if ((be = fw_backend_require(x->device, "matmul")) == NULL)
        return FW_EDEVICE;
    for (int i = 0; i < bnd; i++) {
        oshape[i] = bshape[i];
        batch *= bshape[i];
    }
    oshape[bnd] = m;
    oshape[bnd + 1] = nn;
    if (blas_ok(x, &ta, &ldx))
        xd = fw_tensor_ref(x);
    else if ((err = fw_op_dense(&xd, x)) < 0)
        return err;
    else {
        ta = tx;
        ldx = xd->shape[xd->ndim - 1];
    }
    if (blas_ok(y, &tb, &ldy))
        yd = fw_tensor_ref(y);
    else if ((err = fw_op_dense(&yd, y)) < 0)
        goto fail;
    else {
        tb = ty;
        ldy = yd->shape[yd->ndim - 1];
    }
    if (ldx < 1) ldx = 1;
    if (ldy < 1) ldy = 1;
    if ((err = fw_op_output(&z, x->device, x->dtype, oshape, bnd + 2)) < 0)
        goto fail;
    if (z->numel > 0) {
        offs = batch * 2 <= 64 ? offs_small : malloc(sizeof(int64_t) * (size_t)batch * 2);
        if (offs == NULL) {
            err = fw_error_set(FW_ENOMEM, "matmul: out of memory");
            goto fail;
        }
        /* element offsets of each batch's matrix in x and y (broadcast dims: 0) */
        for (int64_t b = 0; b < batch; b++) {
            int64_t rem = b, ox = 0, oy = 0;
            for (int d = bnd - 1; d >= 0; d--) {
                int64_t i = rem % bshape[d];
                rem /= bshape[d];
                int dx = d - (bnd - (xd->ndim - 2)), dy = d - (bnd - (yd->ndim - 2));
                if (dx >= 0 && xd->shape[dx] != 1)
                    ox += i * xd->strides[dx];
                if (dy >= 0 && yd->shape[dy] != 1)
                    oy += i * yd->strides[dy];
            }
            offs[b] = ox;
            offs[batch + b] = oy;
        }
        err = be->gemm_batched(x->dtype, ta, tb, m, nn, k, fw__ptr(xd), ldx, offs, fw__ptr(yd),
                               ldy, offs + batch, fw__ptr(z), nn, m * nn, batch);
        if (offs != offs_small)
            free(offs);
        if (err < 0)
            goto fail;
    }
    fw_tensor *ins[2] = {x, y};
    if ((err = fw_node_record(&node, "matmul", mm_backward, 2, ins, 1, &z, 2,
                              sizeof(mm_attr))) < 0)
        goto fail;
    if (node) {
        mm_attr *a = fw_node_attr(node);
        a->tx = tx;
        a->ty = ty;
        fw_node_save(node, 0, x);
        fw_node_save(node, 1, y);
    }
    fw_tensor_unref(xd);
    fw_tensor_unref(yd);
    *out = z;
    return 0;
fail:
    fw_tensor_unref(xd);
    fw_tensor_unref(yd);
    fw_tensor_unref(z);
    return err;
}

int fw_matmul(fw_tensor **out, fw_tensor *x, fw_tensor *y, bool transpose_x, bool transpose_y)
{
    fw_tensor *x2 = NULL, *y2 = NULL, *z = NULL, *xc = NULL, *yc = NULL;
    fw_dtype dt;
    int err;

    *out = NULL;
    if (x == NULL || y == NULL)
        return fw_error_set(FW_EINVAL, "matmul: input is NULL");
    if ((err = fw_op_check_same_device("matmul", x, y)) < 0)
        return err;
    if (x->ndim == 0 || y->ndim == 0)
        return fw_error_set(FW_ESHAPE, "matmul: inputs must have at least 1 dim, got %d and %d",
                            x->ndim, y->ndim);
    dt = fw_dtype_promote(x->dtype, y->dtype);
    if (!fw_dtype_is_float(dt) && fw_dtype_is_complex(dt))
        return fw__complex_matmul(out, x, y, transpose_x, transpose_y);
    if (!fw_dtype_is_float(dt))
        return fw_error_set(FW_EDTYPE, "matmul: expected float tensors, got %s and %s",
                            fw_dtype_name(x->dtype), fw_dtype_name(y->dtype));
    fw_dtype cdt = fw_op_compute_dtype(dt);
    if ((err = fw_cast(&xc, x, cdt)) < 0 || (err = fw_cast(&yc, y, cdt)) < 0)
        goto done;
    /* 1-D operands: x [K] -> [1, K], y [K] -> [K, 1]; the dim is dropped after */
    if (xc->ndim == 1) {
        int64_t s[2] = {1, xc->shape[0]};
        if ((err = fw_op_reshape(&x2, xc, s, 2)) < 0)
            goto done;
        transpose_x = false;
    } else {
        x2 = fw_tensor_ref(xc);
    }
    if (yc->ndim == 1) {
        int64_t s[2] = {yc->shape[0], 1};
        if ((err = fw_op_reshape(&y2, yc, s, 2)) < 0)
            goto done;
        transpose_y = false;
    } else {
        y2 = fw_tensor_ref(yc);
    }
    if ((err = mm2(&z, x2, y2, transpose_x, transpose_y)) < 0)
        goto done;
    if (x->ndim == 1 || y->ndim == 1) {
        int64_t s[FW_MAX_DIMS];
        int nd = 0;
        for (int i = 0; i < z->ndim - 2; i++)
            s[nd++] = z->shape[i];
        if (x->ndim != 1)
            s[nd++] = z->shape[z->ndim - 2];
        if (y->ndim != 1)
            s[nd++] = z->shape[z->ndim - 1];
        fw_tensor *r = NULL;
        if ((err = fw_op_reshape(&r, z, s, nd)) < 0)
            goto done;
        fw_tensor_unref(z);
        z = r;
    }
    if (cdt != dt) {
        err = fw_cast(out, z, dt);
        goto done;
    }
    *out = z;
    z = NULL;
done:
    fw_tensor_unref(xc);
    fw_tensor_unref(yc);
    fw_tensor_unref(x2);
    fw_tensor_unref(y2);
    fw_tensor_unref(z);
    return err;
}
