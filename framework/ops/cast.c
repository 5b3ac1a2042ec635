/* cast.c - dtype conversion (any to any), differentiable between floats. */
#include "core/fw_op.h"

int fw__copy_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt);

static int cast_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return fw_cast(&gin[0], gout[0], fw_node_input_dtype(n, 0));
}

int fw_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt)
{
    fw_tensor *y = NULL;
    fw_node *node = NULL;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "cast: input is NULL");
    if (!fw_dtype_is_valid(dt))
        return fw_error_set(FW_EDTYPE, "cast: invalid dtype %d", (int)dt);
    if (dt == x->dtype) {
        *out = fw_tensor_ref(x);
        return 0;
    }
    if ((err = fw__copy_cast(&y, x, dt)) < 0)
        return err;
    if ((fw_dtype_is_float(dt) || fw_dtype_is_complex(dt)) &&
        (err = fw_node_record(&node, "cast", cast_backward, 1, &x, 1, &y, 0, 0)) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}
