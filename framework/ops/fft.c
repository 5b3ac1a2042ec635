/*
 * fft.c - DFT ops along the last axis (fw/complex.h): c2c, r2c, c2r and
 * their adjoints, over the fft family of the input's backend
 * (core/fw_backend_fft.h; the CPU's runs double-precision plans).
 */
#include <stdlib.h>
#include <string.h>

#include "core/fw_op.h"
#include "core/fw_backend_fft.h"
#include "fw/complex.h"

/* Run one kind over x's rows (x contiguous) into a new y of shape
 * x's with the last dimension out_len, dtype odt. */
static int run(fw_tensor **out, const char *name, fw_fft_kind kind, fw_tensor *x, int64_t n,
               int64_t out_len, fw_dtype odt, bool inverse, double scale)
{
    int64_t shape[FW_MAX_DIMS];
    fw_tensor *xd = NULL, *y = NULL;
    int err;

    *out = NULL;
    const fw_backend *b = fw_backend_require(x->device, name);
    if (b == NULL)
        return FW_EDEVICE;
    const struct fw_fft_kernels *k = fw_backend_family(b, b->fft, name);
    if (k == NULL)
        return FW_EDEVICE;
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = out_len;
    bool was = fw_set_grad_enabled(false);
    err = fw_contiguous(&xd, x);
    fw_set_grad_enabled(was);
    if (err < 0)
        return err;
    if ((err = fw_op_output(&y, x->device, odt, shape, x->ndim)) < 0)
        goto done;
    if (y->numel > 0)
        err = k->lines(kind, n, inverse, scale, x->dtype, fw__ptr(xd), x->shape[x->ndim - 1],
                       odt, fw__ptr(y), out_len, y->numel / out_len);
done:
    fw_tensor_unref(xd);
    if (err < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

typedef struct fft_attr {
    bool inverse;
    double scale;
    int64_t n;
} fft_attr;

/* Record y = op(x) on the tape with `at` as the node's attributes; *out
 * gets y (dropped on failure). The three transforms' common end. */
static int record(fw_tensor **out, const char *name, fw_backward_fn backward, fw_tensor *x,
                  fw_tensor *y, fft_attr at)
{
    fw_node *node;
    int err;

    if ((err = fw_node_record(&node, name, backward, 1, &x, 1, &y, 0, sizeof(fft_attr))) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    if (node)
        *(fft_attr *)fw_node_attr(node) = at;
    *out = y;
    return 0;
}

static int check(const char *name, fw_tensor *x, bool want_complex)
{
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "%s: input is NULL", name);
    if (want_complex ? !fw_dtype_is_complex(x->dtype)
                     : (x->dtype != FW_FLOAT32 && x->dtype != FW_FLOAT64))
        return fw_error_set(FW_EDTYPE, "%s: expected a %s tensor, got %s", name,
                            want_complex ? "complex" : "float32 or float64",
                            fw_dtype_name(x->dtype));
    if (x->ndim < 1)
        return fw_error_set(FW_ESHAPE, "%s: expected at least 1 dimension", name);
    return 0;
}

static int c2c_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fft_attr *a = fw_node_attr(n);
    return fw_node_needs_grad(n, 0) ? fw_fft_c2c(&gin[0], gout[0], !a->inverse, a->scale) : 0;
}

int fw_fft_c2c(fw_tensor **out, fw_tensor *x, bool inverse, double scale)
{
    fw_tensor *y = NULL;
    int err;

    *out = NULL;
    if ((err = check("fft_c2c", x, true)) < 0)
        return err;
    int64_t n = x->shape[x->ndim - 1];
    if (n < 1)
        return fw_error_set(FW_ESHAPE, "fft_c2c: invalid number of data points (0)");
    if ((err = run(&y, "fft_c2c", FW_FFT_C2C, x, n, n, x->dtype, inverse, scale)) < 0)
        return err;
    return record(out, "fft_c2c", c2c_backward, x, y, (fft_attr){.inverse = inverse, .scale = scale});
}

/* r2c's adjoint: Re(scale * inverse DFT of the bins zero-padded to n). */
static int r2c_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fft_attr *a = fw_node_attr(n);
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return run(&gin[0], "fft_r2c backward", FW_FFT_R2C_GRAD, gout[0], a->n, a->n,
               fw_node_input_dtype(n, 0), true, a->scale);
}

int fw_fft_r2c(fw_tensor **out, fw_tensor *x, double scale)
{
    fw_tensor *y = NULL;
    int err;

    *out = NULL;
    if ((err = check("fft_r2c", x, false)) < 0)
        return err;
    int64_t n = x->shape[x->ndim - 1];
    if (n < 1)
        return fw_error_set(FW_ESHAPE, "fft_r2c: invalid number of data points (0)");
    if ((err = run(&y, "fft_r2c", FW_FFT_R2C, x, n, n / 2 + 1, fw_dtype_to_complex(x->dtype), false,
                   scale)) < 0)
        return err;
    return record(out, "fft_r2c", r2c_backward, x, y, (fft_attr){.scale = scale, .n = n});
}

/* c2r's adjoint: scale * c_k * DFT(g)_k for k = 0..n/2, c_k = 2 except for
 * the bins that are their own mirror image (0, and n/2 for even n). */
static int c2r_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fft_attr *a = fw_node_attr(n);
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return run(&gin[0], "fft_c2r backward", FW_FFT_C2R_GRAD, gout[0], a->n, a->n / 2 + 1,
               fw_node_input_dtype(n, 0), false, a->scale);
}

int fw_fft_c2r(fw_tensor **out, fw_tensor *x, int64_t n, double scale)
{
    fw_tensor *y = NULL;
    int err;

    *out = NULL;
    if ((err = check("fft_c2r", x, true)) < 0)
        return err;
    if (n < 1)
        return fw_error_set(FW_ESHAPE, "fft_c2r: invalid number of data points (%lld)",
                            (long long)n);
    if (x->shape[x->ndim - 1] != n / 2 + 1)
        return fw_error_set(FW_ESHAPE, "fft_c2r: %lld bins for a length-%lld signal (%lld "
                            "expected)", (long long)x->shape[x->ndim - 1], (long long)n,
                            (long long)(n / 2 + 1));
    if ((err = run(&y, "fft_c2r", FW_FFT_C2R, x, n, n, fw_dtype_real_part(x->dtype), true,
                   scale)) < 0)
        return err;
    return record(out, "fft_c2r", c2r_backward, x, y, (fft_attr){.scale = scale, .n = n});
}
