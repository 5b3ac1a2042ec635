/*
 * init.c - parameter initializers (see fw/init.h). Contiguous float32/64
 * tensors are filled directly; other views, and float16/bfloat16 tensors, get
 * a contiguous float32/64 temporary assigned (and cast) in no-grad mode.
 */
#include <math.h>
#include <stdlib.h>

#include "fw/init.h"

double fw_init_gain(fw_nonlinearity nl, double negative_slope)
{
    switch (nl) {
    case FW_NONLIN_TANH:
        return 5.0 / 3.0;
    case FW_NONLIN_RELU:
        return sqrt(2.0);
    case FW_NONLIN_LEAKY_RELU:
        return sqrt(2.0 / (1.0 + negative_slope * negative_slope));
    case FW_NONLIN_SELU:
        return 3.0 / 4.0;
    default:
        return 1.0;
    }
}

void fw_init_fans(int64_t *fan_in, int64_t *fan_out, const fw_tensor *t)
{
    int nd = fw_tensor_ndim(t);
    const int64_t *s = fw_tensor_shape(t);
    if (nd == 0) {
        *fan_in = *fan_out = 1;
    } else if (nd == 1) {
        *fan_in = *fan_out = s[0];
    } else if (nd == 2) {
        *fan_in = s[0];
        *fan_out = s[1];
    } else {
        int64_t rf = 1;
        for (int i = 2; i < nd; i++)
            rf *= s[i];
        *fan_in = s[1] * rf;
        *fan_out = s[0] * rf;
    }
}

static int check_float(const fw_tensor *t, const char *what)
{
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "%s: NULL tensor", what);
    fw_dtype dt = fw_tensor_dtype(t);
    if (!fw_dtype_is_float(dt))
        return fw_error_set(FW_EDTYPE, "%s: tensor is %s; need a floating-point tensor", what,
                            fw_dtype_name(dt));
    return 0;
}

typedef enum { D_UNIFORM, D_NORMAL, D_TRUNC } dist;

/* Draw into t (checked floating point; any device). */
static int fill(fw_tensor *t, dist d, double p0, double p1, double a, double b,
                fw_generator *g)
{
    fw_tensor *tmp = NULL, *dst = t;
    int err;

    fw_dtype dt = fw_tensor_dtype(t);
    if (!fw_tensor_is_contiguous(t) || (dt != FW_FLOAT32 && dt != FW_FLOAT64) ||
        fw_tensor_device(t) != FW_CPU) {
        /* float16/bfloat16 draw in float32 and round on assignment; a device
         * tensor draws on the host (the CPU generator's numbers) and copies */
        if ((err = fw_tensor_empty_on(&tmp, FW_CPU, dt == FW_FLOAT64 ? FW_FLOAT64 : FW_FLOAT32,
                                      fw_tensor_shape(t), fw_tensor_ndim(t))) < 0)
            return err;
        dst = tmp;
    }
    size_t n = (size_t)fw_tensor_numel(dst);
    void *p = fw_tensor_data(dst);
    bool f32 = fw_tensor_dtype(dst) == FW_FLOAT32;
    switch (d) {
    case D_UNIFORM:
        err = f32 ? fw_random_uniform_f32(g, p, n, p0, p1) : fw_random_uniform_f64(g, p, n, p0, p1);
        break;
    case D_NORMAL:
        err = f32 ? fw_random_normal_f32(g, p, n, p0, p1) : fw_random_normal_f64(g, p, n, p0, p1);
        break;
    default:
        err = f32 ? fw_random_truncated_normal_f32(g, p, n, p0, p1, a, b)
                  : fw_random_truncated_normal_f64(g, p, n, p0, p1, a, b);
        break;
    }
    if (err == 0 && tmp != NULL) {
        bool prev = fw_set_grad_enabled(false);
        fw_tensor *src = NULL;
        if ((err = fw_tensor_to(&src, tmp, fw_tensor_device(t))) == 0)
            err = fw_tensor_assign(t, src);
        fw_tensor_unref(src);
        fw_set_grad_enabled(prev);
    }
    fw_tensor_unref(tmp);
    return err;
}

int fw_init_constant(fw_tensor *t, double value)
{
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "Constant: NULL tensor");
    return fw_tensor_fill(t, value);
}

int fw_init_uniform(fw_tensor *t, double low, double high, fw_generator *g)
{
    int err;
    if ((err = check_float(t, "Uniform")) < 0)
        return err;
    return fill(t, D_UNIFORM, low, high, 0, 0, g);
}

int fw_init_normal(fw_tensor *t, double mean, double std, fw_generator *g)
{
    int err;
    if ((err = check_float(t, "Normal")) < 0)
        return err;
    return fill(t, D_NORMAL, mean, std, 0, 0, g);
}

int fw_init_truncated_normal(fw_tensor *t, double mean, double std, double a, double b,
                             fw_generator *g)
{
    int err;
    if ((err = check_float(t, "TruncatedNormal")) < 0)
        return err;
    return fill(t, D_TRUNC, mean, std, a, b, g);
}

static int xavier_fans(int64_t *fi, int64_t *fo, const fw_tensor *t, int64_t fan_in,
                       int64_t fan_out, const char *what)
{
    fw_init_fans(fi, fo, t);
    if (fan_in > 0)
        *fi = fan_in;
    if (fan_out > 0)
        *fo = fan_out;
    if (*fi + *fo <= 0)
        return fw_error_set(FW_EINVAL, "%s: fan_in + fan_out is 0", what);
    return 0;
}

int fw_init_xavier_uniform(fw_tensor *t, double gain, int64_t fan_in, int64_t fan_out,
                           fw_generator *g)
{
    int64_t fi, fo;
    int err;
    if ((err = check_float(t, "XavierUniform")) < 0 ||
        (err = xavier_fans(&fi, &fo, t, fan_in, fan_out, "XavierUniform")) < 0)
        return err;
    double limit = gain * sqrt(6.0 / (double)(fi + fo));
    if (!(limit > 0))
        return fw_error_set(FW_EINVAL, "XavierUniform: gain %g gives limit %g", gain, limit);
    return fill(t, D_UNIFORM, -limit, limit, 0, 0, g);
}

int fw_init_xavier_normal(fw_tensor *t, double gain, int64_t fan_in, int64_t fan_out,
                          fw_generator *g)
{
    int64_t fi, fo;
    int err;
    if ((err = check_float(t, "XavierNormal")) < 0 ||
        (err = xavier_fans(&fi, &fo, t, fan_in, fan_out, "XavierNormal")) < 0)
        return err;
    return fill(t, D_NORMAL, 0.0, gain * sqrt(2.0 / (double)(fi + fo)), 0, 0, g);
}

static int kaiming_fan(int64_t *fan, const fw_tensor *t, bool use_fan_out,
                       int64_t fan_override, const char *what)
{
    int64_t fi, fo;
    fw_init_fans(&fi, &fo, t);
    *fan = fan_override > 0 ? fan_override : use_fan_out ? fo : fi;
    if (*fan <= 0)
        return fw_error_set(FW_EINVAL, "%s: fan is 0 for this shape", what);
    return 0;
}

int fw_init_kaiming_normal(fw_tensor *t, fw_nonlinearity nl, double negative_slope,
                           bool use_fan_out, int64_t fan_override, fw_generator *g)
{
    int64_t fan;
    int err;
    if ((err = check_float(t, "KaimingNormal")) < 0 ||
        (err = kaiming_fan(&fan, t, use_fan_out, fan_override, "KaimingNormal")) < 0)
        return err;
    return fill(t, D_NORMAL, 0.0, fw_init_gain(nl, negative_slope) / sqrt((double)fan), 0, 0, g);
}

int fw_init_kaiming_uniform(fw_tensor *t, fw_nonlinearity nl, double negative_slope,
                            bool use_fan_out, int64_t fan_override, fw_generator *g)
{
    int64_t fan;
    int err;
    if ((err = check_float(t, "KaimingUniform")) < 0 ||
        (err = kaiming_fan(&fan, t, use_fan_out, fan_override, "KaimingUniform")) < 0)
        return err;
    double limit = fw_init_gain(nl, negative_slope) * sqrt(3.0 / (double)fan);
    return fill(t, D_UNIFORM, -limit, limit, 0, 0, g);
}

int fw_init_assign(fw_tensor *t, const fw_tensor *src)
{
    fw_tensor *tmp = NULL;
    int err;

    if (t == NULL || src == NULL)
        return fw_error_set(FW_EINVAL, "Assign: NULL tensor");
    if (fw_tensor_numel(t) != fw_tensor_numel(src)) {
        char a[96], b[96];
        return fw_error_set(FW_ESHAPE, "Assign: value of shape %s for a tensor of shape %s",
                            fw_tensor_shape_str(a, sizeof(a), src),
                            fw_tensor_shape_str(b, sizeof(b), t));
    }
    /* copy src in C order, reshaped to t, then assign with the dtype cast */
    size_t bytes = (size_t)fw_tensor_numel(src) * fw_dtype_size(fw_tensor_dtype(src));
    void *buf = malloc(bytes ? bytes : 1);
    if (buf == NULL)
        return fw_error_set(FW_ENOMEM, "Assign");
    if ((err = fw_tensor_copy_to(buf, bytes, src)) == 0 &&
        (err = fw_tensor_from_data(&tmp, buf, fw_tensor_dtype(src), fw_tensor_shape(t),
                                   fw_tensor_ndim(t))) == 0) {
        bool prev = fw_set_grad_enabled(false);
        fw_tensor *src2 = NULL;   /* from_data made it on the default device */
        if ((err = fw_tensor_to(&src2, tmp, fw_tensor_device(t))) == 0)
            err = fw_tensor_assign(t, src2);
        fw_tensor_unref(src2);
        fw_set_grad_enabled(prev);
    }
    fw_tensor_unref(tmp);
    free(buf);
    return err;
}

int fw_init_linear_default(fw_tensor *weight, fw_tensor *bias, fw_generator *g)
{
    int err;
    if (weight == NULL || fw_tensor_ndim(weight) != 2)
        return fw_error_set(FW_EINVAL, "Linear init: weight must be 2-D [in, out]");
    if ((err = fw_init_xavier_uniform(weight, 1.0, 0, 0, g)) < 0)
        return err;
    return bias ? fw_init_constant(bias, 0.0) : 0;
}

int fw_init_conv_default(fw_tensor *weight, fw_tensor *bias, int64_t groups, fw_generator *g)
{
    int err;
    if (weight == NULL || fw_tensor_ndim(weight) < 3)
        return fw_error_set(FW_EINVAL, "Conv init: weight must be [out, in/groups, k...]");
    if (groups < 1)
        return fw_error_set(FW_EINVAL, "Conv init: groups %lld must be >= 1", (long long)groups);
    int64_t fi, fo;
    fw_init_fans(&fi, &fo, weight);
    int64_t elems = fi * groups;         /* in_channels * prod(kernel) */
    if (elems <= 0)
        return fw_error_set(FW_EINVAL, "Conv init: weight has an empty dimension");
    if ((err = fw_init_normal(weight, 0.0, sqrt(2.0 / (double)elems), g)) < 0)
        return err;
    return bias ? fw_init_constant(bias, 0.0) : 0;
}
