/*
 * fw/nn.h - neural-network ops of Eddy's framework: linear, convolution,
 * pooling, normalisation, dropout, embedding, softmax, losses, recurrent
 * cells.
 *
 * API-STABLE (grows additively)
 *
 * Conventions are those of fw/tensor.h: every function returns 0 and a new
 * reference in each out-parameter, or a negative FW_E* code with a message
 * (fw_error_last()) and every out-parameter NULL. Inputs are borrowed.
 * Optional tensor inputs (bias, weight, ...) may be NULL. When grad mode is
 * on and an input has stop_gradient false, results record a backward.
 *
 * Semantics follow Paddle 3.x (paddle.nn.functional): NCHW / NCL layouts,
 * Linear weight [in, out], Conv weight [out, in/groups, kh, kw], losses
 * with reduction mean/sum return 0-D tensors (shape []).
 *
 * Dtypes: float32 and float64 (FW_EDTYPE otherwise, e.g. "conv2d: x must be
 * float32 or float64, got float16"); all float inputs of one op share one
 * dtype; labels/ids are int32 or int64. Tensors may be non-contiguous views
 * (they are made dense internally). CPU only for now (FW_EDEVICE otherwise).
 *
 * Errors name what is wrong: the expected rank ("conv2d: x must be 4-D
 * [N, C, H, W], got [3, 4]"), both channel counts ("conv2d: x has 3
 * channels but weight expects 4 (groups 1)"), an out-of-range label
 * ("cross_entropy: label 7 out of range [0, 5)").
 */
#ifndef FW_NN_H
#define FW_NN_H

#include <stdbool.h>
#include <stdint.h>

#include "fw/random.h"
#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- linear ------------------------------------------------------------
 * out = x @ w + b: x [..., in], w [in, out], b [out] or NULL -> [..., out].
 * FW_ESHAPE when w is not 2-D or in differs; b must be [out]. */
int fw_linear(fw_tensor **out, fw_tensor *x, fw_tensor *w, fw_tensor *b);

/* ---- convolution ------------------------------------------------------
 * conv2d: x [N, C, H, W], w [OC, C/groups, KH, KW], b [OC] or NULL ->
 * [N, OC, OH, OW] with OH = (H + pad_top + pad_bottom - dh*(KH-1) - 1)/sh + 1.
 * stride, dilation: {h, w}, each >= 1; padding: {top, bottom, left, right},
 * each >= 0 (Paddle's [pad_h, pad_w] is {ph, ph, pw, pw}); groups >= 1
 * dividing C and OC. NULL stride/dilation mean 1, NULL padding 0. */
int fw_conv2d(fw_tensor **out, fw_tensor *x, fw_tensor *w, fw_tensor *b,
              const int64_t stride[2], const int64_t padding[4], const int64_t dilation[2],
              int64_t groups);

/* conv1d: x [N, C, L], w [OC, C/groups, K], b [OC] or NULL -> [N, OC, OL].
 * padding: {left, right}. */
int fw_conv1d(fw_tensor **out, fw_tensor *x, fw_tensor *w, fw_tensor *b, int64_t stride,
              const int64_t padding[2], int64_t dilation, int64_t groups);

/* ---- pooling ----------------------------------------------------------
 * x [N, C, H, W]. kernel {kh, kw} >= 1; stride {sh, sw} >= 1 (NULL: equal
 * to kernel, Paddle's default); padding {ph, pw} >= 0 on both sides and at
 * most half the kernel (NULL: 0). Output OH = (H + 2ph - kh)/sh + 1, rounded
 * up instead of down with ceil_mode. Windows are clipped to the input.
 *
 * max_pool2d: mask (may be NULL) receives int64 [N, C, OH, OW] with the
 * flat index h*W + w of each maximum inside its plane (Paddle's
 * return_mask). Backward routes each gradient to its maximum. */
int fw_max_pool2d(fw_tensor **out, fw_tensor **mask, fw_tensor *x, const int64_t kernel[2],
                  const int64_t stride[2], const int64_t padding[2], bool ceil_mode);

/* avg_pool2d: exclusive (Paddle's default true) divides by the number of
 * in-bounds cells of the window, else by kh*kw. */
int fw_avg_pool2d(fw_tensor **out, fw_tensor *x, const int64_t kernel[2],
                  const int64_t stride[2], const int64_t padding[2], bool ceil_mode,
                  bool exclusive);

/* adaptive_avg_pool2d: output {OH, OW} >= 1; bin i covers
 * [floor(i*H/OH), ceil((i+1)*H/OH)). */
int fw_adaptive_avg_pool2d(fw_tensor **out, fw_tensor *x, const int64_t output_size[2]);

/* 1-D pooling over x [N, C, L] (stride 0 means kernel). */
int fw_max_pool1d(fw_tensor **out, fw_tensor **mask, fw_tensor *x, int64_t kernel,
                  int64_t stride, int64_t padding, bool ceil_mode);
int fw_avg_pool1d(fw_tensor **out, fw_tensor *x, int64_t kernel, int64_t stride,
                  int64_t padding, bool ceil_mode, bool exclusive);
int fw_adaptive_avg_pool1d(fw_tensor **out, fw_tensor *x, int64_t output_size);

/* ---- normalisation ----------------------------------------------------
 * batch_norm: x [N, C] or [N, C, ...] (NCHW), running_mean/var [C], weight
 * and bias [C] or NULL. training: normalise with the batch statistics
 * (biased variance) and update running_mean/var IN PLACE (no autograd):
 * running = momentum*running + (1-momentum)*batch, the variance term being
 * the unbiased batch variance (Paddle: momentum 0.9, epsilon 1e-5). Not
 * training: normalise with the running statistics. running_mean/var may be
 * NULL only when training (nothing is updated then). */
int fw_batch_norm(fw_tensor **out, fw_tensor *x, fw_tensor *running_mean,
                  fw_tensor *running_var, fw_tensor *weight, fw_tensor *bias, bool training,
                  double momentum, double epsilon);

/* layer_norm: normalise over the trailing dims normalized_shape (which must
 * equal x's last n dims); weight, bias of that shape (or its numel as 1-D)
 * or NULL. Paddle epsilon 1e-5. */
int fw_layer_norm(fw_tensor **out, fw_tensor *x, const int64_t *normalized_shape, int n,
                  fw_tensor *weight, fw_tensor *bias, double epsilon);

/* ---- dropout ------------------------------------------------------------ */
typedef enum {
    FW_DROPOUT_UPSCALE_IN_TRAIN = 0,   /* Paddle default: train x*mask/(1-p), infer x */
    FW_DROPOUT_DOWNSCALE_IN_INFER = 1  /* train x*mask, infer x*(1-p) */
} fw_dropout_mode;

/* Drop each element with probability p in [0, 1] when training. The mask
 * comes from generator g (NULL: the default generator, fw_seed()). */
int fw_dropout(fw_tensor **out, fw_tensor *x, double p, bool training, fw_dropout_mode mode,
               fw_generator *g);

/* ---- embedding ----------------------------------------------------------
 * ids int32/int64 of any shape, weight [V, D] -> [ids..., D]. padding_idx:
 * FW_NO_PADDING, or an index in [-V, V) (negative counts from V) whose rows
 * come out as zeros and get no gradient. FW_ERANGE names an id outside
 * [0, V). Backward accumulates rows of a dense [V, D] gradient. */
#define FW_NO_PADDING INT64_MIN
int fw_embedding(fw_tensor **out, fw_tensor *ids, fw_tensor *weight, int64_t padding_idx);

/* ---- softmax -------------------------------------------------------------
 * Over one axis (negative counts from the end), numerically stable. */
int fw_softmax(fw_tensor **out, fw_tensor *x, int axis);
int fw_log_softmax(fw_tensor **out, fw_tensor *x, int axis);

/* ---- losses ---------------------------------------------------------------- */
typedef enum {
    FW_REDUCTION_NONE = 0,
    FW_REDUCTION_MEAN = 1,   /* Paddle's default */
    FW_REDUCTION_SUM = 2
} fw_reduction;

/* Options of fw_cross_entropy; FW_CROSS_ENTROPY_DEFAULTS gives Paddle's
 * CrossEntropyLoss defaults. */
typedef struct fw_cross_entropy_opts {
    fw_tensor *weight;        /* [C] class weights or NULL */
    int64_t ignore_index;     /* -100 */
    fw_reduction reduction;   /* mean */
    bool soft_label;          /* false */
    int axis;                 /* -1: the class axis of input */
    bool use_softmax;         /* true: input are logits; false: probabilities */
    double label_smoothing;   /* 0.0, in [0, 1) */
} fw_cross_entropy_opts;

#define FW_CROSS_ENTROPY_DEFAULTS \
    { NULL, -100, FW_REDUCTION_MEAN, false, -1, true, 0.0 }

/* cross_entropy: input [..., C, ...] with classes on `axis`. Hard labels
 * (int32/int64) have input's shape without the class axis, or with it of
 * size 1 ([N] or [N, 1] for input [N, C]); soft labels have input's shape
 * and dtype. label_smoothing > 0 turns hard labels into
 * (1-eps)*onehot + eps/C soft labels. Per-sample loss -w[y]*log p[y]
 * (soft: -(sum_c l_c w_c) * sum_c l_c log p_c), 0 for ignored samples.
 * reduction none: shape of the labels ([N] for [N] labels, [N, 1] for
 * [N, 1] or soft labels); sum: 0-D; mean: as Paddle computes it - with
 * weight, the sum divided by the sum of the weights of the non-ignored
 * labels; without weight, divided by the number of non-ignored labels when
 * ignore_index >= 0 and by the number of labels otherwise. No gradient
 * flows to labels. FW_ERANGE "cross_entropy: label 7 out of range [0, 5)". */
int fw_cross_entropy(fw_tensor **out, fw_tensor *input, fw_tensor *label,
                     const fw_cross_entropy_opts *opts);

/* nll_loss: input log-probabilities [N, C] or [N, C, d1, ...], label
 * [N] / [N, d1, ...] int32/int64; weight [C] or NULL. mean divides by the
 * sum of the weights of the non-ignored samples (Paddle). */
int fw_nll_loss(fw_tensor **out, fw_tensor *input, fw_tensor *label, fw_tensor *weight,
                int64_t ignore_index, fw_reduction reduction);

/* Pointwise losses; input and label of one shape. Gradients flow to both
 * when they need them. */
int fw_mse_loss(fw_tensor **out, fw_tensor *input, fw_tensor *label, fw_reduction reduction);
int fw_l1_loss(fw_tensor **out, fw_tensor *input, fw_tensor *label, fw_reduction reduction);
/* input probabilities in [0, 1] (logs clamped at -100 like Paddle); weight
 * (NULL or broadcastable to input) scales each element. */
int fw_binary_cross_entropy(fw_tensor **out, fw_tensor *input, fw_tensor *label,
                            fw_tensor *weight, fw_reduction reduction);
/* Stable form max(x,0) - x*y + log(1+exp(-|x|)); pos_weight (NULL or
 * broadcastable to logit, usually [C]) weighs the positive term. */
int fw_binary_cross_entropy_with_logits(fw_tensor **out, fw_tensor *logit, fw_tensor *label,
                                        fw_tensor *weight, fw_tensor *pos_weight,
                                        fw_reduction reduction);

/* ---- recurrent cells (Paddle's formulas and gate order) -------------------
 * lstm_cell: x [B, I], h_prev and c_prev [B, H], w_ih [4H, I], w_hh [4H, H],
 * b_ih, b_hh [4H] or NULL; gates x@w_ih^T + b_ih + h@w_hh^T + b_hh split in
 * order i, f, g, o: c = sig(f)*c_prev + sig(i)*tanh(g), h = sig(o)*tanh(c).
 * h_prev/c_prev NULL mean zeros. */
int fw_lstm_cell(fw_tensor **h, fw_tensor **c, fw_tensor *x, fw_tensor *h_prev,
                 fw_tensor *c_prev, fw_tensor *w_ih, fw_tensor *w_hh, fw_tensor *b_ih,
                 fw_tensor *b_hh);

/* gru_cell: w_ih [3H, I], w_hh [3H, H], b_* [3H]; order r, z, c:
 * r = sig(xr+hr), z = sig(xz+hz), c = tanh(xc + r*hc),
 * h = z*h_prev + (1-z)*c. h_prev NULL means zeros. */
int fw_gru_cell(fw_tensor **h, fw_tensor *x, fw_tensor *h_prev, fw_tensor *w_ih,
                fw_tensor *w_hh, fw_tensor *b_ih, fw_tensor *b_hh);

/* Run a cell over a whole sequence (one layer, one direction). x [B, T, I]
 * (time_major: [T, B, I]); y receives every step's h stacked like x
 * ([B, T, H] or [T, B, H]); h (and c for LSTM) the last state [B, H].
 * Any of y, h, c may be NULL when not wanted. Differentiable end to end. */
int fw_lstm_sequence(fw_tensor **y, fw_tensor **h, fw_tensor **c, fw_tensor *x,
                     fw_tensor *h0, fw_tensor *c0, fw_tensor *w_ih, fw_tensor *w_hh,
                     fw_tensor *b_ih, fw_tensor *b_hh, bool time_major);
int fw_gru_sequence(fw_tensor **y, fw_tensor **h, fw_tensor *x, fw_tensor *h0,
                    fw_tensor *w_ih, fw_tensor *w_hh, fw_tensor *b_ih, fw_tensor *b_hh,
                    bool time_major);

#ifdef __cplusplus
}
#endif
#endif
