/*
 * fw_backend_nn.h - the nn kernel family of a backend (private to framework/).
 *
 * ops/nn_*.c and ops/conv_grad.c reach their kernels only through this
 * table, taken from the backend of their inputs' device:
 *
 *   const fw_backend *b = fw_backend_require(x->device, "softmax");
 *   const struct fw_nn_kernels *k = b ? fw_backend_family(b, b->nn, "softmax") : NULL;
 *   if (k == NULL) return fw_error_code();
 *   rc = k->softmax_fwd(x->dtype, y, x, outer, C, inner);
 *
 * cpu/nn_backend.c is the CPU instance (float32/float64); a CUDA backend
 * fills the same table. The op layer has validated everything before a call:
 * shapes, geometry, labels and ids in range, dtypes the table lists. Kernels
 * receive dense, contiguous, row-major arrays whose data pointers are device
 * pointers of the backend's device (int64 labels/ids and uint8 masks too:
 * the op layer builds and range-checks them on the host, then moves them
 * with fw_tensor_to()).
 *
 * dtypes: `dt` is the element type of every float array of a call (int64
 * arrays are int64 whatever dt). `dtypes` says which float dtypes the table
 * computes in natively (a bitmask of 1u << fw_dtype; the CPU's is float32 |
 * float64). The ops pass a tensor's own dtype only when it is in `dtypes`
 * (fw__nn_check_float in ops/nn_common.c); a float16/bfloat16 tensor on a
 * device whose table lacks it is refused with FW_EDTYPE exactly as before
 * the seam, and the caller upcasts: paddle.amp reruns the op in float32 on
 * the rounded inputs (amp/_state.py), C callers fw_op_upcast()/fw_cast()
 * first. So the CPU path is unchanged and a CUDA table that sets the
 * FW_FLOAT16/FW_BFLOAT16 bits gets those dtypes natively. A kernel still
 * answers a dtype it lacks with FW_EDTYPE.
 *
 * Returns: every entry returns 0, or a negative FW_E* after fw_error_set():
 * FW_EDTYPE "<op>: float16 not supported on <backend>" for a dtype it lacks,
 * FW_ENOMEM for scratch it could not get, FW_EDEVICE for a device failure
 * (a CUDA launch error). On failure outputs are unspecified.
 *
 * Outputs: every output array (y, loss, dx, dw, ...) is OVERWRITTEN, never
 * accumulated into; autograd accumulates. An output pointer given as NULL
 * means "not needed" where an entry says so. Inputs are never written,
 * except batch_norm_train_fwd's running statistics (updated in place).
 * Calls are ordered on the device's stream; a kernel may return before the
 * device has finished (the host syncs where it reads values).
 */
#ifndef FW_BACKEND_NN_H
#define FW_BACKEND_NN_H

#include "fw_backend.h"

#include <stdint.h>

/* Geometry of a 2-D convolution (1-D is H = KH = 1). Input x [N, C, H, W],
 * weight [OC, C/groups, KH, KW], output [N, OC, OH, OW]. Padding may be
 * asymmetric: ph0 rows on top, ph1 at the bottom, pw0 left, pw1 right. */
typedef struct fw_nn_conv_geom {
    int64_t N, C, H, W;
    int64_t OC, KH, KW;
    int64_t OH, OW;
    int64_t sh, sw;          /* stride */
    int64_t ph0, ph1, pw0, pw1; /* padding */
    int64_t dh, dw;          /* dilation */
    int64_t groups;
} fw_nn_conv_geom;

/* Geometry of 2-D pooling over planes: x [P = N*C, H, W] -> y [P, OH, OW].
 * Window (oh, ow) starts at row oh*sh - ph, column ow*sw - pw (Paddle's
 * convention; cells outside the plane are skipped). */
typedef struct fw_nn_pool_geom {
    int64_t P, H, W, OH, OW;
    int64_t KH, KW, sh, sw, ph, pw;
    int exclusive;           /* avg: divide by the count of in-bounds cells */
} fw_nn_pool_geom;

/* Pointwise loss kinds (pointwise_loss_fwd/bwd). */
typedef enum fw_nn_loss_kind {
    FW_NN_LOSS_MSE,          /* (x - y)^2 */
    FW_NN_LOSS_L1,           /* |x - y| */
    FW_NN_LOSS_BCE,          /* -(y log x + (1-y) log(1-x)), logs clamped at -100 */
    FW_NN_LOSS_BCE_LOGITS    /* x logits: (1-y) x + (1 + (pw-1) y) softplus(-x) */
} fw_nn_loss_kind;

typedef struct fw_nn_kernels {
    /* Float dtypes computed natively: bit (1u << FW_FLOAT32) etc. */
    unsigned dtypes;

    /* ---- softmax over C: x, y, dx, dy [outer, C, inner] ---- */
    int (*softmax_fwd)(fw_dtype dt, void *y, const void *x,
                       int64_t outer, int64_t C, int64_t inner);
    int (*log_softmax_fwd)(fw_dtype dt, void *y, const void *x,
                           int64_t outer, int64_t C, int64_t inner);
    /* dx = y * (dy - sum_c dy*y); y the forward output. */
    int (*softmax_bwd)(fw_dtype dt, void *dx, const void *y, const void *dy,
                       int64_t outer, int64_t C, int64_t inner);
    /* dx = dy - exp(y) * sum_c dy; y the forward output (log-probabilities). */
    int (*log_softmax_bwd)(fw_dtype dt, void *dx, const void *y, const void *dy,
                           int64_t outer, int64_t C, int64_t inner);

    /* ---- linear: y [M, N] = x [M, K] @ w [K, N] + b [N] (b NULL: none) ---- */
    int (*linear_fwd)(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                      int64_t M, int64_t K, int64_t N);
    /* dx [M, K], dw [K, N], db [N] from dy [M, N]; each output may be NULL. */
    int (*linear_bwd)(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                      const void *w, const void *dy, int64_t M, int64_t K, int64_t N);

    /* ---- conv2d: x [N, C, H, W], w [OC, C/groups, KH, KW], b [OC] (NULL: none)
     * -> y [N, OC, OH, OW]; geometry g (shapes already consistent) ---- */
    int (*conv2d_fwd)(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                      const fw_nn_conv_geom *g);
    /* dx, dw, db shaped like x, w, [OC]; each may be NULL. x is read only
     * for dw and may be NULL when dw is; w is read only for dx but must be
     * a valid array (callers wanting dw alone pass zeros). */
    int (*conv2d_bwd)(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                      const void *w, const void *dy, const fw_nn_conv_geom *g);

    /* ---- pooling: x, dx [P, H, W]; y, dy, idx [P, OH, OW] ---- */
    /* idx (int64): flat index h*W + w of each window's max inside its plane
     * (Paddle's mask; the first max wins). */
    int (*maxpool2d_fwd)(fw_dtype dt, void *y, int64_t *idx, const void *x,
                         const fw_nn_pool_geom *g);
    /* dx zeroed, then dy scattered to idx (accumulating overlaps). */
    int (*maxpool2d_bwd)(fw_dtype dt, void *dx, const int64_t *idx, const void *dy,
                         const fw_nn_pool_geom *g);
    int (*avgpool2d_fwd)(fw_dtype dt, void *y, const void *x, const fw_nn_pool_geom *g);
    int (*avgpool2d_bwd)(fw_dtype dt, void *dx, const void *dy, const fw_nn_pool_geom *g);
    /* Adaptive: bin i spans [floor(i*H/OH), ceil((i+1)*H/OH)) (same for W). */
    int (*adaptive_avgpool2d_fwd)(fw_dtype dt, void *y, const void *x, int64_t P,
                                  int64_t H, int64_t W, int64_t OH, int64_t OW);
    int (*adaptive_avgpool2d_bwd)(fw_dtype dt, void *dx, const void *dy, int64_t P,
                                  int64_t H, int64_t W, int64_t OH, int64_t OW);

    /* ---- batch norm: x, y, dx, dy [N, C, L] (L = H*W, or 1 for [N, C]);
     * per-channel arrays [C]; w, b NULL: scale 1, shift 0 ---- */
    /* Training: batch statistics; writes save_mean and save_invstd =
     * 1/sqrt(var + eps) (biased var); updates run_mean/run_var IN PLACE
     * (NULL: skip) as run = momentum*run + (1-momentum)*batch, run_var from
     * the unbiased batch variance. */
    int (*batch_norm_train_fwd)(fw_dtype dt, void *y, void *save_mean, void *save_invstd,
                                void *run_mean, void *run_var, const void *x, const void *w,
                                const void *b, int64_t N, int64_t C, int64_t L,
                                double momentum, double eps);
    /* Inference: normalise with the given mean/var; writes save_invstd when
     * not NULL. */
    int (*batch_norm_infer_fwd)(fw_dtype dt, void *y, void *save_invstd, const void *x,
                                const void *mean, const void *var, const void *w,
                                const void *b, int64_t N, int64_t C, int64_t L, double eps);
    /* dx, dw [C], db [C] (each may be NULL) from the saved mean/invstd.
     * training 1: the statistics depended on x; 0: they were constants. */
    int (*batch_norm_bwd)(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                          const void *dy, const void *mean, const void *invstd,
                          const void *w, int64_t N, int64_t C, int64_t L, int training);

    /* ---- layer norm: x, y, dx, dy [M, D] normalised over D; w, b, dw, db
     * [D] (w, b NULL: none); mean, rstd [M] ---- */
    int (*layer_norm_fwd)(fw_dtype dt, void *y, void *mean, void *rstd, const void *x,
                          const void *w, const void *b, int64_t M, int64_t D, double eps);
    /* dx, dw, db each may be NULL. */
    int (*layer_norm_bwd)(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                          const void *dy, const void *mean, const void *rstd,
                          const void *w, int64_t M, int64_t D);

    /* ---- dropout: y[i] = x[i] * mask[i] * scale over n elements; mask
     * uint8 0/1 (also the backward: dx = dy * mask * scale) ---- */
    int (*dropout_apply)(fw_dtype dt, void *y, const void *x, const uint8_t *mask,
                         int64_t n, double scale);

    /* ---- embedding: w [V, D], ids [n] int64 in [0, V) -> y [n, D] ----
     * rows whose id == padding_idx are zero (padding_idx < 0: none). */
    int (*embedding_fwd)(fw_dtype dt, void *y, const void *w, const int64_t *ids,
                         int64_t n, int64_t D, int64_t padding_idx);
    /* dw [V, D] zeroed, then dy rows accumulated at ids; padding_idx rows
     * stay 0. */
    int (*embedding_bwd)(fw_dtype dt, void *dw, const void *dy, const int64_t *ids,
                         int64_t n, int64_t V, int64_t D, int64_t padding_idx);

    /* ---- cross entropy / nll: x, dx, lsm [outer, C, inner]; label int64,
     * loss and g [outer, inner]; class weights w [C] (NULL: 1). The ops
     * call these with float32/float64 only (they read weights and soft
     * labels on the host) ---- */
    /* Hard labels in [0, C) or == ignore_index (loss 0 there).
     * use_softmax 1: x are logits, lsm receives log_softmax(x); 0: x are
     * probabilities, lsm unused (may be NULL). loss[i] = -w[y] log p[y]. */
    int (*ce_hard_fwd)(fw_dtype dt, void *loss, void *lsm, const void *x,
                       const int64_t *label, const void *w, int64_t outer, int64_t C,
                       int64_t inner, int64_t ignore_index, int use_softmax);
    /* g[i]: the gradient reaching loss[i] (reduction already applied);
     * lsm: the forward's (use_softmax 1) or NULL. */
    int (*ce_hard_bwd)(fw_dtype dt, void *dx, const void *lsm, const void *x,
                       const int64_t *label, const void *w, const void *g, int64_t outer,
                       int64_t C, int64_t inner, int64_t ignore_index, int use_softmax);
    /* Soft labels lab [outer, C, inner] (dt); loss[i] = -(sum_c lab_c w_c) *
     * sum_c lab_c log p_c (Paddle's weighting; w NULL: factor 1). */
    int (*ce_soft_fwd)(fw_dtype dt, void *loss, void *lsm, const void *x, const void *lab,
                       const void *w, int64_t outer, int64_t C, int64_t inner,
                       int use_softmax);
    int (*ce_soft_bwd)(fw_dtype dt, void *dx, const void *lsm, const void *x,
                       const void *lab, const void *w, const void *g, int64_t outer,
                       int64_t C, int64_t inner, int use_softmax);
    /* nll: x are log-probabilities; loss[i] = -w[y] x[y], 0 where ignored. */
    int (*nll_fwd)(fw_dtype dt, void *loss, const void *x, const int64_t *label,
                   const void *w, int64_t outer, int64_t C, int64_t inner,
                   int64_t ignore_index);
    int (*nll_bwd)(fw_dtype dt, void *dx, const int64_t *label, const void *w, const void *g,
                   int64_t outer, int64_t C, int64_t inner, int64_t ignore_index);

    /* ---- elementwise losses over n elements: x input, y label; w weight
     * per element (NULL: 1); pw pos_weight per element (BCE_LOGITS only,
     * NULL: 1) ---- */
    int (*pointwise_loss_fwd)(fw_dtype dt, void *loss, fw_nn_loss_kind kind, const void *x,
                              const void *y, const void *w, const void *pw, int64_t n);
    /* dx, dy [n] (either NULL) from g: g_stride 1 one gradient per element,
     * 0 one scalar gradient g[0] for all. */
    int (*pointwise_loss_bwd)(fw_dtype dt, void *dx, void *dy, fw_nn_loss_kind kind,
                              const void *x, const void *y, const void *w, const void *pw,
                              const void *g, int64_t g_stride, int64_t n);

    /* ---- recurrent cells (Paddle's formulas); h, c, *_prev [B, H] ---- */
    /* LSTM: gates G [B, 4H] in order i, f, g (cell candidate), o:
     *   c = sig(f)*c_prev + sig(i)*tanh(g);  h = sig(o)*tanh(c)
     * act [B, 4H] receives the activated gates (saved for backward). */
    int (*lstm_gates_fwd)(fw_dtype dt, void *h, void *c, void *act, const void *G,
                          const void *c_prev, int64_t B, int64_t H);
    /* dG [B, 4H], dc_prev [B, H] (either NULL: not needed); dh, dc may be
     * NULL (no gradient reached them: treated as 0). */
    int (*lstm_gates_bwd)(fw_dtype dt, void *dG, void *dc_prev, const void *act,
                          const void *c, const void *c_prev, const void *dh, const void *dc,
                          int64_t B, int64_t H);
    /* GRU: xg = x W_ih^T + b_ih, hg = h W_hh^T + b_hh, both [B, 3H] in order
     * r, z, c: r = sig(xr+hr); z = sig(xz+hz); c = tanh(xc + r*hc);
     * h = z*h_prev + (1-z)*c. act [B, 3H] receives r, z, c. */
    int (*gru_gates_fwd)(fw_dtype dt, void *h, void *act, const void *xg, const void *hg,
                         const void *h_prev, int64_t B, int64_t H);
    /* dxg, dhg [B, 3H], dh_prev [B, H] (each NULL: not needed) from dh
     * [B, H]; hg the forward's. */
    int (*gru_gates_bwd)(fw_dtype dt, void *dxg, void *dhg, void *dh_prev, const void *act,
                         const void *hg, const void *h_prev, const void *dh,
                         int64_t B, int64_t H);
} fw_nn_kernels;

#endif
