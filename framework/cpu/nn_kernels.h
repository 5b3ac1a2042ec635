/*
 * nn_kernels.h - private CPU kernels of the neural-network ops (fwnn).
 *
 * Plain functions over contiguous float / double arrays, llm.c style: sizes
 * spelled out, shapes written on entry. Every kernel exists twice, suffixed
 * _f32 and _f64, generated from one body (the .c files include themselves
 * once per type). They are private to cpu/: the ops reach them only through
 * the CPU backend's nn table (cpu/nn_backend.c, core/fw_backend_nn.h).
 * Kernels never fail on input: the op layer (ops/nn_*.c) validates shapes,
 * labels and ids first and sets the error message. Kernels that need
 * scratch memory return 0 or -1 (out of memory; the table entry sets the
 * FW_ENOMEM message).
 *
 * Outputs named d* in backward kernels are OVERWRITTEN (not accumulated);
 * autograd accumulates. A NULL output pointer means "not needed".
 */
#ifndef NN_KT /* ---------------------------------------------------------- */
#ifndef FW_NN_KERNELS_H
#define FW_NN_KERNELS_H

#include <stddef.h>
#include <stdint.h>

/* fw_nn_conv_geom, fw_nn_pool_geom, fw_nn_loss_kind and the table these
 * kernels are registered in (cpu/nn_backend.c). */
#include "../core/fw_backend_nn.h"

/* Scratch memory reused per thread (grows, never shrinks; freed at thread
 * exit). Returns NULL when out of memory. `slot` picks one of 4 buffers. */
void *fw__nn_scratch(int slot, size_t bytes);

/* Threads the pool runs kernels on (>= 1). */
int fw__nn_num_threads(void);

/* Run fn(ctx, begin, end) over [0, n) on the framework's pool, or inline
 * when n is small. */
void fw__nn_parallel(int64_t n, int64_t grain,
                     void (*fn)(void *ctx, int64_t begin, int64_t end), void *ctx);

/* For a kernel whose copy/zero loops run over short rows: GCC would turn
 * them into memcpy/memset calls that cost more than the work. */
#if defined(__GNUC__) && !defined(__clang__)
#define NN_NO_LIBCALLS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define NN_NO_LIBCALLS
#endif

/* Hot copy/select loops also get an AVX2 clone picked at load time (ifunc);
 * no FMA, so results are the same bits as the default clone. Not under
 * sanitizers: their resolvers would run before the sanitizer runtime. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__) && !defined(__SANITIZE_ADDRESS__)
#define NN_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define NN_CLONES
#endif

#define NN_KT float
#define NN_KS(name) name##_f32
#include "nn_kernels.h"
#undef NN_KT
#undef NN_KS
#define NN_KT double
#define NN_KS(name) name##_f64
#include "nn_kernels.h"
#undef NN_KT
#undef NN_KS

#endif /* FW_NN_KERNELS_H */
#else /* NN_KT: per-type declarations ------------------------------------ */

/* ---- softmax: x viewed as [outer, C, inner], normalised over C ---- */
void NN_KS(fw__nn_softmax_fwd)(NN_KT *y, const NN_KT *x, int64_t outer, int64_t C, int64_t inner);
void NN_KS(fw__nn_log_softmax_fwd)(NN_KT *y, const NN_KT *x, int64_t outer, int64_t C, int64_t inner);
/* dx = y * (dy - sum_c dy*y) */
void NN_KS(fw__nn_softmax_bwd)(NN_KT *dx, const NN_KT *y, const NN_KT *dy,
                               int64_t outer, int64_t C, int64_t inner);
/* dx = dy - exp(y) * sum_c dy */
void NN_KS(fw__nn_log_softmax_bwd)(NN_KT *dx, const NN_KT *y, const NN_KT *dy,
                                   int64_t outer, int64_t C, int64_t inner);

/* ---- linear: x [M, K] @ w [K, N] + b [N] -> y [M, N] ---- */
void NN_KS(fw__nn_linear_fwd)(NN_KT *y, const NN_KT *x, const NN_KT *w, const NN_KT *b,
                              int64_t M, int64_t K, int64_t N);
void NN_KS(fw__nn_linear_bwd)(NN_KT *dx, NN_KT *dw, NN_KT *db, const NN_KT *x, const NN_KT *w,
                              const NN_KT *dy, int64_t M, int64_t K, int64_t N);

/* ---- conv2d (im2col + gemm, batch split across the pool) ---- */
int NN_KS(fw__nn_conv2d_fwd)(NN_KT *y, const NN_KT *x, const NN_KT *w, const NN_KT *b,
                             const fw_nn_conv_geom *g);
int NN_KS(fw__nn_conv2d_bwd)(NN_KT *dx, NN_KT *dw, NN_KT *db, const NN_KT *x, const NN_KT *w,
                             const NN_KT *dy, const fw_nn_conv_geom *g);

/* ---- pooling ---- */
/* idx: flat index h*W+w of the max inside its plane (Paddle's mask). */
void NN_KS(fw__nn_maxpool2d_fwd)(NN_KT *y, int64_t *idx, const NN_KT *x, const fw_nn_pool_geom *g);
void NN_KS(fw__nn_maxpool2d_bwd)(NN_KT *dx, const int64_t *idx, const NN_KT *dy,
                                 const fw_nn_pool_geom *g);
void NN_KS(fw__nn_avgpool2d_fwd)(NN_KT *y, const NN_KT *x, const fw_nn_pool_geom *g);
void NN_KS(fw__nn_avgpool2d_bwd)(NN_KT *dx, const NN_KT *dy, const fw_nn_pool_geom *g);
/* x [P, H, W] -> y [P, OH, OW]; bin i spans [floor(i*H/OH), ceil((i+1)*H/OH)) */
void NN_KS(fw__nn_adaptive_avgpool2d_fwd)(NN_KT *y, const NN_KT *x, int64_t P, int64_t H,
                                          int64_t W, int64_t OH, int64_t OW);
void NN_KS(fw__nn_adaptive_avgpool2d_bwd)(NN_KT *dx, const NN_KT *dy, int64_t P, int64_t H,
                                          int64_t W, int64_t OH, int64_t OW);

/* ---- batch norm: x [N, C, L] (L = H*W, or 1 for [N, C]) ---- */
/* Training: batch statistics; saves mean and 1/sqrt(var+eps) per channel;
 * updates run_mean/run_var in place (NULL to skip) with Paddle's momentum:
 * run = momentum*run + (1-momentum)*batch, run_var from the unbiased var. */
void NN_KS(fw__nn_batch_norm_train_fwd)(NN_KT *y, NN_KT *save_mean, NN_KT *save_invstd,
                                        NN_KT *run_mean, NN_KT *run_var, const NN_KT *x,
                                        const NN_KT *w, const NN_KT *b, int64_t N, int64_t C,
                                        int64_t L, double momentum, double eps);
/* Inference: normalise with the given mean/var. Saves invstd if non-NULL. */
void NN_KS(fw__nn_batch_norm_infer_fwd)(NN_KT *y, NN_KT *save_invstd, const NN_KT *x,
                                        const NN_KT *mean, const NN_KT *var, const NN_KT *w,
                                        const NN_KT *b, int64_t N, int64_t C, int64_t L,
                                        double eps);
/* training=1: the statistics depended on x; 0: they were constants. */
void NN_KS(fw__nn_batch_norm_bwd)(NN_KT *dx, NN_KT *dw, NN_KT *db, const NN_KT *x,
                                  const NN_KT *dy, const NN_KT *mean, const NN_KT *invstd,
                                  const NN_KT *w, int64_t N, int64_t C, int64_t L, int training);

/* ---- layer norm: x [M, D] normalised over D ---- */
void NN_KS(fw__nn_layer_norm_fwd)(NN_KT *y, NN_KT *mean, NN_KT *rstd, const NN_KT *x,
                                  const NN_KT *w, const NN_KT *b, int64_t M, int64_t D,
                                  double eps);
void NN_KS(fw__nn_layer_norm_bwd)(NN_KT *dx, NN_KT *dw, NN_KT *db, const NN_KT *x,
                                  const NN_KT *dy, const NN_KT *mean, const NN_KT *rstd,
                                  const NN_KT *w, int64_t M, int64_t D);

/* ---- dropout: y = x * mask * scale (mask 0/1) ---- */
void NN_KS(fw__nn_dropout_apply)(NN_KT *y, const NN_KT *x, const uint8_t *mask, int64_t n,
                                 double scale);

/* ---- embedding: w [V, D], ids [n] (validated) -> y [n, D] ---- */
void NN_KS(fw__nn_embedding_fwd)(NN_KT *y, const NN_KT *w, const int64_t *ids, int64_t n,
                                 int64_t D, int64_t padding_idx);
/* dw [V, D] is zeroed first, then rows accumulated; padding_idx rows stay 0
 * (padding_idx < 0: none). */
void NN_KS(fw__nn_embedding_bwd)(NN_KT *dw, const NN_KT *dy, const int64_t *ids, int64_t n,
                                 int64_t V, int64_t D, int64_t padding_idx);

/* ---- cross entropy: x [outer, C, inner]; labels [outer, inner] ---- */
/* Hard labels (validated; ignore_index gives loss 0). use_softmax: x are
 * logits and lsm receives log_softmax(x); else x are probabilities (lsm
 * unused). loss[i] = -w[y]*log p[y] (w NULL: 1). */
void NN_KS(fw__nn_ce_hard_fwd)(NN_KT *loss, NN_KT *lsm, const NN_KT *x, const int64_t *label,
                               const NN_KT *w, int64_t outer, int64_t C, int64_t inner,
                               int64_t ignore_index, int use_softmax);
/* g[i]: gradient reaching loss[i] (already scaled by the reduction). */
void NN_KS(fw__nn_ce_hard_bwd)(NN_KT *dx, const NN_KT *lsm, const NN_KT *x, const int64_t *label,
                               const NN_KT *w, const NN_KT *g, int64_t outer, int64_t C,
                               int64_t inner, int64_t ignore_index, int use_softmax);
/* Soft labels lab [outer, C, inner]; loss[i] = -(sum_c lab_c w_c) *
 * sum_c lab_c log p_c, as Paddle weights soft labels (w NULL: factor 1). */
void NN_KS(fw__nn_ce_soft_fwd)(NN_KT *loss, NN_KT *lsm, const NN_KT *x, const NN_KT *lab,
                               const NN_KT *w, int64_t outer, int64_t C, int64_t inner,
                               int use_softmax);
void NN_KS(fw__nn_ce_soft_bwd)(NN_KT *dx, const NN_KT *lsm, const NN_KT *x, const NN_KT *lab,
                               const NN_KT *w, const NN_KT *g, int64_t outer, int64_t C,
                               int64_t inner, int use_softmax);
/* nll: x are log-probabilities; loss[i] = -w[y]*x[y], 0 where ignored. */
void NN_KS(fw__nn_nll_fwd)(NN_KT *loss, const NN_KT *x, const int64_t *label, const NN_KT *w,
                           int64_t outer, int64_t C, int64_t inner, int64_t ignore_index);
void NN_KS(fw__nn_nll_bwd)(NN_KT *dx, const int64_t *label, const NN_KT *w, const NN_KT *g,
                           int64_t outer, int64_t C, int64_t inner, int64_t ignore_index);

/* ---- elementwise losses over n elements ---- */
/* loss[i] for kind; w (per element, NULL = 1); pw: pos_weight per element
 * (bce_logits only; NULL = 1). */
void NN_KS(fw__nn_pointwise_loss_fwd)(NN_KT *loss, int kind, const NN_KT *x, const NN_KT *y,
                                      const NN_KT *w, const NN_KT *pw, int64_t n);
/* dx, dy (either NULL) from g[i] (g_stride 0: one scalar gradient for all). */
void NN_KS(fw__nn_pointwise_loss_bwd)(NN_KT *dx, NN_KT *dy, int kind, const NN_KT *x,
                                      const NN_KT *y, const NN_KT *w, const NN_KT *pw,
                                      const NN_KT *g, int64_t g_stride, int64_t n);

/* ---- recurrent cells (Paddle's formulas) ---- */
/* LSTM: gates G [B, 4H] in order i, f, g(cell candidate), o:
 *   c = sig(f)*c_prev + sig(i)*tanh(g);  h = sig(o)*tanh(c)
 * act [B, 4H] receives the activated gates (saved for backward). */
void NN_KS(fw__nn_lstm_gates_fwd)(NN_KT *h, NN_KT *c, NN_KT *act, const NN_KT *G,
                                  const NN_KT *c_prev, int64_t B, int64_t H);
/* dh, dc may be NULL (no gradient reached them). */
void NN_KS(fw__nn_lstm_gates_bwd)(NN_KT *dG, NN_KT *dc_prev, const NN_KT *act, const NN_KT *c,
                                  const NN_KT *c_prev, const NN_KT *dh, const NN_KT *dc,
                                  int64_t B, int64_t H);
/* GRU: xg = x W_ih^T + b_ih, hg = h W_hh^T + b_hh, both [B, 3H] in order r, z, c:
 *   r = sig(xr+hr); z = sig(xz+hz); c = tanh(xc + r*hc); h = z*h_prev + (1-z)*c
 * act [B, 3H] receives r, z, c. */
void NN_KS(fw__nn_gru_gates_fwd)(NN_KT *h, NN_KT *act, const NN_KT *xg, const NN_KT *hg,
                                 const NN_KT *h_prev, int64_t B, int64_t H);
void NN_KS(fw__nn_gru_gates_bwd)(NN_KT *dxg, NN_KT *dhg, NN_KT *dh_prev, const NN_KT *act,
                                 const NN_KT *hg, const NN_KT *h_prev, const NN_KT *dh,
                                 int64_t B, int64_t H);

#endif /* NN_KT */
