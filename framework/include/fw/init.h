/*
 * fw/init.h - parameter initializers (paddle.nn.initializer), in place.
 *
 * Every initializer overwrites a floating-point CPU tensor (float32, float64,
 * float16, bfloat16 - the last two drawn in float32 and rounded; any view;
 * FW_EDTYPE for other dtypes) without recording autograd, drawing from generator
 * g (NULL = the default generator of fw/random.h). fw_init_constant and
 * fw_init_assign accept every dtype.
 *
 * Fans follow Paddle's _compute_fans:
 *   0-D: fan_in = fan_out = 1
 *   1-D [n]: fan_in = fan_out = n
 *   2-D Linear weight [in, out]: fan_in = shape[0], fan_out = shape[1]
 *   N-D conv weight [out, in/groups, k...]: receptive = prod(k...),
 *       fan_in = shape[1]*receptive, fan_out = shape[0]*receptive
 *
 * Errors: 0 or a negative FW_E* after fw_error_set (FW_EINVAL for bad
 * arguments, FW_EDTYPE, FW_EDEVICE).
 */
/* API-STABLE */
#ifndef FW_INIT_H
#define FW_INIT_H

#include <stdbool.h>
#include <stdint.h>

#include "fw/random.h"
#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    FW_NONLIN_LINEAR = 0,    /* also conv*, sigmoid: gain 1 */
    FW_NONLIN_TANH,          /* 5/3 */
    FW_NONLIN_RELU,          /* sqrt(2) */
    FW_NONLIN_LEAKY_RELU,    /* sqrt(2 / (1 + slope^2)) */
    FW_NONLIN_SELU           /* 3/4 */
} fw_nonlinearity;

/* paddle.nn.initializer.calculate_gain. */
double fw_init_gain(fw_nonlinearity nl, double negative_slope);

/* Paddle's fans of t's shape (see above). */
void fw_init_fans(int64_t *fan_in, int64_t *fan_out, const fw_tensor *t);

/* Constant(value). */
int fw_init_constant(fw_tensor *t, double value);
/* Uniform(low, high). low < high. */
int fw_init_uniform(fw_tensor *t, double low, double high, fw_generator *g);
/* Normal(mean, std). std >= 0. */
int fw_init_normal(fw_tensor *t, double mean, double std, fw_generator *g);
/* TruncatedNormal(mean, std, a, b): a, b are absolute cut-offs (Paddle's
 * defaults a = -2, b = 2). */
int fw_init_truncated_normal(fw_tensor *t, double mean, double std, double a, double b,
                             fw_generator *g);
/* XavierUniform: U(-l, l), l = gain*sqrt(6/(fan_in+fan_out)). fan_in /
 * fan_out <= 0 mean "from the shape" (Paddle's fan_in=None). */
int fw_init_xavier_uniform(fw_tensor *t, double gain, int64_t fan_in, int64_t fan_out,
                           fw_generator *g);
/* XavierNormal: N(0, gain*sqrt(2/(fan_in+fan_out))). */
int fw_init_xavier_normal(fw_tensor *t, double gain, int64_t fan_in, int64_t fan_out,
                          fw_generator *g);
/* KaimingNormal: N(0, gain/sqrt(fan)), gain = fw_init_gain(nl, slope);
 * fan = fan_in (Paddle; use_fan_out selects fan_out, PyTorch's mode).
 * fan_override > 0 replaces the computed fan (Paddle's fan_in argument). */
int fw_init_kaiming_normal(fw_tensor *t, fw_nonlinearity nl, double negative_slope,
                           bool use_fan_out, int64_t fan_override, fw_generator *g);
/* KaimingUniform: U(-l, l), l = gain*sqrt(3/fan). */
int fw_init_kaiming_uniform(fw_tensor *t, fw_nonlinearity nl, double negative_slope,
                            bool use_fan_out, int64_t fan_override, fw_generator *g);
/* Assign: t's elements = src's (numel must match; shape may differ; cast
 * to t's dtype). FW_ESHAPE if numel differs. */
int fw_init_assign(fw_tensor *t, const fw_tensor *src);

/* Paddle's nn.Linear defaults: weight [in, out] XavierUniform, bias (may be
 * NULL) zeros. */
int fw_init_linear_default(fw_tensor *weight, fw_tensor *bias, fw_generator *g);
/* Paddle's nn.Conv1D/2D/3D defaults: weight [out, in/groups, k...] ~
 * Normal(0, sqrt(2/(in_channels*prod(k)))) with in_channels = shape[1]*groups
 * (Paddle uses the full in_channels), bias (may be NULL) zeros. groups >= 1. */
int fw_init_conv_default(fw_tensor *weight, fw_tensor *bias, int64_t groups, fw_generator *g);

#ifdef __cplusplus
}
#endif
#endif
