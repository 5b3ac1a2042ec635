/* op.c - helpers of the op-definition API (fw_op.h): checks, broadcasting,
 * float16 upcasting, reduce-to-shape. */
#include "fw_backend.h"
#include "fw_op.h"

#include <string.h>

const struct fw_backend *fw_op_backend(fw_device dev) { return fw_backend_get(dev); }

int fw_op_check_not_null(const char *op, const char *what, const fw_tensor *x)
{
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: %s is NULL", op, what);
    return 0;
}

int fw_op_check_float(const char *op, const fw_tensor *x)
{
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", op);
    if (!fw_dtype_is_float(x->dtype))
        return fw_error_set(FW_EDTYPE, "%s: expected a float tensor, got %s", op,
                            fw_dtype_name(x->dtype));
    return 0;
}

int fw_op_check_dtype(const char *op, const char *what, const fw_tensor *x, fw_dtype dt)
{
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: %s is NULL", op, what);
    if (x->dtype != dt)
        return fw_error_set(FW_EDTYPE, "%s: %s must be %s, got %s", op, what,
                            fw_dtype_name(dt), fw_dtype_name(x->dtype));
    return 0;
}

int fw_op_check_same_device(const char *op, const fw_tensor *a, const fw_tensor *b)
{
    if (a == NULL || b == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", op);
    if (a->device != b->device)
        return fw_error_set(FW_EDEVICE, "%s: inputs are on different devices (%s and %s)", op,
                            a->device == FW_CPU ? "cpu" : "cuda",
                            b->device == FW_CPU ? "cpu" : "cuda");
    return 0;
}

int fw_op_axis(int *out, const char *op, int axis, int ndim)
{
    int n = ndim > 0 ? ndim : 1;
    if (axis < -n || axis >= n)
        return fw_error_set(FW_EAXIS, "%s: axis %d out of range for rank %d", op, axis, ndim);
    *out = axis < 0 ? axis + n : axis;
    return 0;
}

int fw_op_axes_mask(unsigned *mask, const char *op, const int *axes, int naxes, int ndim)
{
    *mask = 0;
    if (naxes == 0 || axes == NULL) {
        *mask = ndim > 0 ? (1u << ndim) - 1 : 0;
        return 0;
    }
    for (int i = 0; i < naxes; i++) {
        int a;
        int err = fw_op_axis(&a, op, axes[i], ndim);
        if (err < 0)
            return err;
        if (ndim == 0)
            continue;
        if (*mask & (1u << a))
            return fw_error_set(FW_EAXIS, "%s: axis %d repeated", op, axes[i]);
        *mask |= 1u << a;
    }
    return 0;
}

bool fw_shape_equal(const int64_t *a, int na, const int64_t *b, int nb)
{
    if (na != nb)
        return false;
    for (int i = 0; i < na; i++)
        if (a[i] != b[i])
            return false;
    return true;
}

int fw_op_broadcast_shapes(int64_t *out, int *out_ndim, const char *op, const int64_t *a,
                           int na, const int64_t *b, int nb)
{
    int n = na > nb ? na : nb;

    for (int i = 0; i < n; i++) {
        int ia = i - (n - na), ib = i - (n - nb);
        int64_t da = ia >= 0 ? a[ia] : 1, db = ib >= 0 ? b[ib] : 1;
        if (da == db || db == 1)
            out[i] = da;
        else if (da == 1)
            out[i] = db;
        else {
            char sa[160], sb[160];
            return fw_error_set(FW_ESHAPE, "%s: shapes %s and %s cannot broadcast", op,
                                fw_shape_format(sa, sizeof(sa), a, na),
                                fw_shape_format(sb, sizeof(sb), b, nb));
        }
    }
    *out_ndim = n;
    return 0;
}

int fw_op_check_same_shape(const char *op, const char *what, const fw_tensor *a,
                           const fw_tensor *b)
{
    if (!fw_shape_equal(a->shape, a->ndim, b->shape, b->ndim)) {
        char sa[160], sb[160];
        return fw_error_set(FW_ESHAPE, "%s: %s shapes %s and %s differ", op, what,
                            fw_tensor_shape_str(sa, sizeof(sa), a),
                            fw_tensor_shape_str(sb, sizeof(sb), b));
    }
    return 0;
}

fw_dtype fw_op_compute_dtype(fw_dtype dt)
{
    return dt == FW_FLOAT16 || dt == FW_BFLOAT16 ? FW_FLOAT32 : dt;
}

int fw_op_upcast(fw_tensor **out, fw_tensor *x)
{
    if (x->dtype == FW_FLOAT16 || x->dtype == FW_BFLOAT16)
        return fw_cast(out, x, FW_FLOAT32);
    *out = fw_tensor_ref(x);
    return 0;
}

int fw_op_reduce_to_shape(fw_tensor **out, fw_tensor *g, const int64_t *shape, int ndim)
{
    int axes[FW_MAX_DIMS], naxes = 0, lead = g->ndim - ndim;
    fw_tensor *s = NULL;
    int err;

    *out = NULL;
    if (fw_shape_equal(g->shape, g->ndim, shape, ndim)) {
        *out = fw_tensor_ref(g);
        return 0;
    }
    if (lead < 0)
        return fw_error_set(FW_EINTERNAL, "reduce_to_shape: rank %d below %d", g->ndim, ndim);
    for (int i = 0; i < g->ndim; i++)
        if (i < lead || (shape[i - lead] == 1 && g->shape[i] != 1))
            axes[naxes++] = i;
    if (fw__autograd_creating_graph()) {
        /* create_graph: the reduction is part of the gradient's history */
        if (naxes == 0)
            err = fw_reshape(out, g, shape, ndim);
        else if ((err = fw_sum(&s, g, axes, naxes, true)) == 0)
            err = fw_reshape(out, s, shape, ndim);
        fw_tensor_unref(s);
        return err;
    }
    bool was = fw_set_grad_enabled(false);
    if (naxes == 0)
        err = fw_op_reshape(out, g, shape, ndim);
    else if ((err = fw_sum(&s, g, axes, naxes, true)) == 0)
        err = fw_op_reshape(out, s, shape, ndim);
    fw_set_grad_enabled(was);
    fw_tensor_unref(s);
    return err;
}
