/*
 * fft.c - DFT ops along the last axis (fw/complex.h): c2c, r2c, c2r and
 * their adjoints, over the double-precision plans of cpu/fft.c. Rows are
 * split across the pool; each chunk converts its rows to double, runs the
 * plan in a scratch buffer of its own and writes the output dtype back.
 */
#include <stdlib.h>
#include <string.h>

#include "core/fw_op.h"
#include "cpu/fft_kernels.h"
#include "fw/complex.h"

enum { K_C2C, K_R2C, K_C2R, K_R2C_GRAD, K_C2R_GRAD };

typedef struct fft_job {
    int kind;
    const fw_fft_plan *plan;
    int64_t n;              /* transform length */
    int64_t in_len, out_len; /* elements per row (complex or real) */
    fw_dtype idt, odt;
    const void *x;
    void *y;
    double scale;
    bool inverse;
    int failed;
} fft_job;

/* Row r's input into buf as n interleaved complex doubles. */
static void load_row(const fft_job *j, int64_t r, double *buf)
{
    const int64_t n = j->n, len = j->in_len;
    const bool f32 = j->idt == FW_FLOAT32 || j->idt == FW_COMPLEX64;
    const bool cx = fw_dtype_is_complex(j->idt);

    memset(buf, 0, sizeof(double) * 2 * (size_t)n);
    if (cx) {
        const int64_t cnt = len < n ? len : n;
        if (f32) {
            const float *s = (const float *)j->x + 2 * r * len;
            for (int64_t k = 0; k < 2 * cnt; k++)
                buf[k] = s[k];
        } else {
            memcpy(buf, (const double *)j->x + 2 * r * len, sizeof(double) * 2 * (size_t)cnt);
        }
    } else if (f32) {
        const float *s = (const float *)j->x + r * len;
        for (int64_t k = 0; k < len; k++)
            buf[2 * k] = s[k];
    } else {
        const double *s = (const double *)j->x + r * len;
        for (int64_t k = 0; k < len; k++)
            buf[2 * k] = s[k];
    }
    if (j->kind == K_C2R) {
        /* the Hermitian extension of bins 0..n/2; imaginary parts of the
         * bins that must be real (0, and n/2 for even n) are dropped */
        buf[1] = 0;
        if (n % 2 == 0)
            buf[n + 1] = 0;
        for (int64_t k = n / 2 + 1; k < n; k++) {
            buf[2 * k] = buf[2 * (n - k)];
            buf[2 * k + 1] = -buf[2 * (n - k) + 1];
        }
    }
}

static void store_row(const fft_job *j, int64_t r, const double *buf)
{
    const int64_t n = j->n, len = j->out_len;
    const double s = j->scale;
    const bool f32 = j->odt == FW_FLOAT32 || j->odt == FW_COMPLEX64;

    if (fw_dtype_is_complex(j->odt)) {
        /* C2C: n values; R2C and C2R_GRAD: bins 0..n/2 */
        double w[2] = {s, s};
        for (int64_t k = 0; k < len; k++) {
            double f = s;
            if (j->kind == K_C2R_GRAD && k != 0 && !(n % 2 == 0 && k == n / 2))
                f = 2 * s;
            w[0] = buf[2 * k] * f;
            w[1] = buf[2 * k + 1] * f;
            if (f32) {
                ((float *)j->y)[2 * (r * len + k)] = (float)w[0];
                ((float *)j->y)[2 * (r * len + k) + 1] = (float)w[1];
            } else {
                ((double *)j->y)[2 * (r * len + k)] = w[0];
                ((double *)j->y)[2 * (r * len + k) + 1] = w[1];
            }
        }
    } else if (f32) {
        float *d = (float *)j->y + r * len;
        for (int64_t k = 0; k < len; k++)
            d[k] = (float)(buf[2 * k] * s);
    } else {
        double *d = (double *)j->y + r * len;
        for (int64_t k = 0; k < len; k++)
            d[k] = buf[2 * k] * s;
    }
}

static void fft_rows(void *ctx, int64_t r0, int64_t r1)
{
    fft_job *j = ctx;
    const int64_t n = j->n;
    double *buf = malloc(sizeof(double) * (size_t)(2 * n + fw__fft_scratch_len(j->plan)));

    if (buf == NULL) {
        __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    bool inv = j->kind == K_C2C ? j->inverse : j->kind == K_C2R || j->kind == K_R2C_GRAD;
    for (int64_t r = r0; r < r1; r++) {
        load_row(j, r, buf);
        fw__fft_exec(j->plan, buf, inv, buf + 2 * n);
        store_row(j, r, buf);
    }
    free(buf);
}

/* Run one kind over x's rows (x contiguous) into a new y of shape
 * x's with the last dimension out_len, dtype odt. */
static int run(fw_tensor **out, const char *name, int kind, fw_tensor *x, int64_t n,
               int64_t out_len, fw_dtype odt, bool inverse, double scale)
{
    int64_t shape[FW_MAX_DIMS];
    fw_tensor *xd = NULL, *y = NULL;
    fw_fft_plan *plan = NULL;
    int err;

    *out = NULL;
    memcpy(shape, x->shape, sizeof(int64_t) * (size_t)x->ndim);
    shape[x->ndim - 1] = out_len;
    bool was = fw_set_grad_enabled(false);
    err = fw_contiguous(&xd, x);
    fw_set_grad_enabled(was);
    if (err < 0)
        return err;
    if ((err = fw_op_output(&y, FW_CPU, odt, shape, x->ndim)) < 0)
        goto done;
    if (y->numel > 0) {
        if (fw__fft_plan_new(&plan, n) < 0) {
            err = fw_error_set(FW_ENOMEM, "%s: out of memory planning a length-%lld transform",
                               name, (long long)n);
            goto done;
        }
        int64_t in_len = x->shape[x->ndim - 1];
        fft_job j = {kind, plan, n, in_len, out_len, x->dtype, odt, fw__ptr(xd), fw__ptr(y),
                     scale, inverse, 0};
        int64_t rows = y->numel / out_len;
        int64_t grain = 16384 / n;
        fw_parallel_for(rows, grain > 0 ? grain : 1, fft_rows, &j);
        if (j.failed)
            err = fw_error_set(FW_ENOMEM, "%s: out of memory", name);
    }
done:
    fw__fft_plan_free(plan);
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
    if (x->device != FW_CPU)
        return fw_error_set(FW_EDEVICE, "%s: CPU tensors only", name);
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
    if ((err = run(&y, "fft_c2c", K_C2C, x, n, n, x->dtype, inverse, scale)) < 0)
        return err;
    return record(out, "fft_c2c", c2c_backward, x, y, (fft_attr){.inverse = inverse, .scale = scale});
}

/* r2c's adjoint: Re(scale * inverse DFT of the bins zero-padded to n). */
static int r2c_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fft_attr *a = fw_node_attr(n);
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return run(&gin[0], "fft_r2c backward", K_R2C_GRAD, gout[0], a->n, a->n,
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
    if ((err = run(&y, "fft_r2c", K_R2C, x, n, n / 2 + 1, fw_dtype_to_complex(x->dtype), false,
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
    return run(&gin[0], "fft_c2r backward", K_C2R_GRAD, gout[0], a->n, a->n / 2 + 1,
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
    if ((err = run(&y, "fft_c2r", K_C2R, x, n, n, fw_dtype_real_part(x->dtype), true,
                   scale)) < 0)
        return err;
    return record(out, "fft_c2r", c2r_backward, x, y, (fft_attr){.scale = scale, .n = n});
}
