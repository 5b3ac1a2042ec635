/*
 * nn_backend.c - the CPU instance of the nn kernel table (core/fw_backend_nn.h):
 * each entry picks the _f32 or _f64 kernel of cpu/nn_*.c for dt. One switch
 * per op call; the kernels themselves are unchanged.
 */
#include "core_kernels.h"
#include "nn_kernels.h"

static int bad_dtype(const char *entry, fw_dtype dt)
{
    return fw_error_set(FW_EDTYPE, "%s: %s not supported on cpu (float32 and float64 only)",
                        entry, fw_dtype_name(dt));
}

static int no_scratch(const char *entry)
{
    return fw_error_set(FW_ENOMEM, "%s: out of memory for im2col buffers", entry);
}

/* Run the void kernel fn for dt and return 0 (pointers convert from void *). */
#define NN_VOID(entry, fn, ...)                                   \
    do {                                                          \
        if (dt == FW_FLOAT32)                                     \
            fn##_f32(__VA_ARGS__);                                \
        else if (dt == FW_FLOAT64)                                \
            fn##_f64(__VA_ARGS__);                                \
        else                                                      \
            return bad_dtype(entry, dt);                          \
        return 0;                                                 \
    } while (0)

static int cpu_softmax_fwd(fw_dtype dt, void *y, const void *x, int64_t outer, int64_t C,
                           int64_t inner)
{
    NN_VOID("softmax", fw__nn_softmax_fwd, y, x, outer, C, inner);
}

static int cpu_log_softmax_fwd(fw_dtype dt, void *y, const void *x, int64_t outer, int64_t C,
                               int64_t inner)
{
    NN_VOID("log_softmax", fw__nn_log_softmax_fwd, y, x, outer, C, inner);
}

static int cpu_softmax_bwd(fw_dtype dt, void *dx, const void *y, const void *dy, int64_t outer,
                           int64_t C, int64_t inner)
{
    NN_VOID("softmax backward", fw__nn_softmax_bwd, dx, y, dy, outer, C, inner);
}

static int cpu_log_softmax_bwd(fw_dtype dt, void *dx, const void *y, const void *dy,
                               int64_t outer, int64_t C, int64_t inner)
{
    NN_VOID("log_softmax backward", fw__nn_log_softmax_bwd, dx, y, dy, outer, C, inner);
}

static int cpu_linear_fwd(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                          int64_t M, int64_t K, int64_t N)
{
    NN_VOID("linear", fw__nn_linear_fwd, y, x, w, b, M, K, N);
}

static int cpu_linear_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                          const void *w, const void *dy, int64_t M, int64_t K, int64_t N)
{
    NN_VOID("linear backward", fw__nn_linear_bwd, dx, dw, db, x, w, dy, M, K, N);
}

static int cpu_conv2d_fwd(fw_dtype dt, void *y, const void *x, const void *w, const void *b,
                          const fw_nn_conv_geom *g)
{
    int rc;
    if (dt == FW_FLOAT32)
        rc = fw__nn_conv2d_fwd_f32(y, x, w, b, g);
    else if (dt == FW_FLOAT64)
        rc = fw__nn_conv2d_fwd_f64(y, x, w, b, g);
    else
        return bad_dtype("conv2d", dt);
    return rc < 0 ? no_scratch("conv2d") : 0;
}

static int cpu_conv2d_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                          const void *w, const void *dy, const fw_nn_conv_geom *g)
{
    int rc;
    if (dt == FW_FLOAT32)
        rc = fw__nn_conv2d_bwd_f32(dx, dw, db, x, w, dy, g);
    else if (dt == FW_FLOAT64)
        rc = fw__nn_conv2d_bwd_f64(dx, dw, db, x, w, dy, g);
    else
        return bad_dtype("conv2d backward", dt);
    return rc < 0 ? no_scratch("conv2d backward") : 0;
}

static int cpu_maxpool2d_fwd(fw_dtype dt, void *y, int64_t *idx, const void *x,
                             const fw_nn_pool_geom *g)
{
    NN_VOID("max_pool2d", fw__nn_maxpool2d_fwd, y, idx, x, g);
}

static int cpu_maxpool2d_bwd(fw_dtype dt, void *dx, const int64_t *idx, const void *dy,
                             const fw_nn_pool_geom *g)
{
    NN_VOID("max_pool2d backward", fw__nn_maxpool2d_bwd, dx, idx, dy, g);
}

static int cpu_avgpool2d_fwd(fw_dtype dt, void *y, const void *x, const fw_nn_pool_geom *g)
{
    NN_VOID("avg_pool2d", fw__nn_avgpool2d_fwd, y, x, g);
}

static int cpu_avgpool2d_bwd(fw_dtype dt, void *dx, const void *dy, const fw_nn_pool_geom *g)
{
    NN_VOID("avg_pool2d backward", fw__nn_avgpool2d_bwd, dx, dy, g);
}

static int cpu_adaptive_avgpool2d_fwd(fw_dtype dt, void *y, const void *x, int64_t P,
                                      int64_t H, int64_t W, int64_t OH, int64_t OW)
{
    NN_VOID("adaptive_avg_pool2d", fw__nn_adaptive_avgpool2d_fwd, y, x, P, H, W, OH, OW);
}

static int cpu_adaptive_avgpool2d_bwd(fw_dtype dt, void *dx, const void *dy, int64_t P,
                                      int64_t H, int64_t W, int64_t OH, int64_t OW)
{
    NN_VOID("adaptive_avg_pool2d backward", fw__nn_adaptive_avgpool2d_bwd, dx, dy, P, H, W,
            OH, OW);
}

static int cpu_batch_norm_train_fwd(fw_dtype dt, void *y, void *save_mean, void *save_invstd,
                                    void *run_mean, void *run_var, const void *x,
                                    const void *w, const void *b, int64_t N, int64_t C,
                                    int64_t L, double momentum, double eps)
{
    NN_VOID("batch_norm", fw__nn_batch_norm_train_fwd, y, save_mean, save_invstd, run_mean,
            run_var, x, w, b, N, C, L, momentum, eps);
}

static int cpu_batch_norm_infer_fwd(fw_dtype dt, void *y, void *save_invstd, const void *x,
                                    const void *mean, const void *var, const void *w,
                                    const void *b, int64_t N, int64_t C, int64_t L, double eps)
{
    NN_VOID("batch_norm", fw__nn_batch_norm_infer_fwd, y, save_invstd, x, mean, var, w, b, N,
            C, L, eps);
}

static int cpu_batch_norm_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                              const void *dy, const void *mean, const void *invstd,
                              const void *w, int64_t N, int64_t C, int64_t L, int training)
{
    NN_VOID("batch_norm backward", fw__nn_batch_norm_bwd, dx, dw, db, x, dy, mean, invstd, w,
            N, C, L, training);
}

static int cpu_layer_norm_fwd(fw_dtype dt, void *y, void *mean, void *rstd, const void *x,
                              const void *w, const void *b, int64_t M, int64_t D, double eps)
{
    NN_VOID("layer_norm", fw__nn_layer_norm_fwd, y, mean, rstd, x, w, b, M, D, eps);
}

static int cpu_layer_norm_bwd(fw_dtype dt, void *dx, void *dw, void *db, const void *x,
                              const void *dy, const void *mean, const void *rstd,
                              const void *w, int64_t M, int64_t D)
{
    NN_VOID("layer_norm backward", fw__nn_layer_norm_bwd, dx, dw, db, x, dy, mean, rstd, w, M,
            D);
}

static int cpu_dropout_apply(fw_dtype dt, void *y, const void *x, const uint8_t *mask,
                             int64_t n, double scale)
{
    NN_VOID("dropout", fw__nn_dropout_apply, y, x, mask, n, scale);
}

static int cpu_embedding_fwd(fw_dtype dt, void *y, const void *w, const int64_t *ids,
                             int64_t n, int64_t D, int64_t padding_idx)
{
    NN_VOID("embedding", fw__nn_embedding_fwd, y, w, ids, n, D, padding_idx);
}

static int cpu_embedding_bwd(fw_dtype dt, void *dw, const void *dy, const int64_t *ids,
                             int64_t n, int64_t V, int64_t D, int64_t padding_idx)
{
    NN_VOID("embedding backward", fw__nn_embedding_bwd, dw, dy, ids, n, V, D, padding_idx);
}

static int cpu_ce_hard_fwd(fw_dtype dt, void *loss, void *lsm, const void *x,
                           const int64_t *label, const void *w, int64_t outer, int64_t C,
                           int64_t inner, int64_t ignore_index, int use_softmax)
{
    NN_VOID("cross_entropy", fw__nn_ce_hard_fwd, loss, lsm, x, label, w, outer, C, inner,
            ignore_index, use_softmax);
}

static int cpu_ce_hard_bwd(fw_dtype dt, void *dx, const void *lsm, const void *x,
                           const int64_t *label, const void *w, const void *g, int64_t outer,
                           int64_t C, int64_t inner, int64_t ignore_index, int use_softmax)
{
    NN_VOID("cross_entropy backward", fw__nn_ce_hard_bwd, dx, lsm, x, label, w, g, outer, C,
            inner, ignore_index, use_softmax);
}

static int cpu_ce_soft_fwd(fw_dtype dt, void *loss, void *lsm, const void *x, const void *lab,
                           const void *w, int64_t outer, int64_t C, int64_t inner,
                           int use_softmax)
{
    NN_VOID("cross_entropy", fw__nn_ce_soft_fwd, loss, lsm, x, lab, w, outer, C, inner,
            use_softmax);
}

static int cpu_ce_soft_bwd(fw_dtype dt, void *dx, const void *lsm, const void *x,
                           const void *lab, const void *w, const void *g, int64_t outer,
                           int64_t C, int64_t inner, int use_softmax)
{
    NN_VOID("cross_entropy backward", fw__nn_ce_soft_bwd, dx, lsm, x, lab, w, g, outer, C,
            inner, use_softmax);
}

static int cpu_nll_fwd(fw_dtype dt, void *loss, const void *x, const int64_t *label,
                       const void *w, int64_t outer, int64_t C, int64_t inner,
                       int64_t ignore_index)
{
    NN_VOID("nll_loss", fw__nn_nll_fwd, loss, x, label, w, outer, C, inner, ignore_index);
}

static int cpu_nll_bwd(fw_dtype dt, void *dx, const int64_t *label, const void *w,
                       const void *g, int64_t outer, int64_t C, int64_t inner,
                       int64_t ignore_index)
{
    NN_VOID("nll_loss backward", fw__nn_nll_bwd, dx, label, w, g, outer, C, inner,
            ignore_index);
}

static int cpu_pointwise_loss_fwd(fw_dtype dt, void *loss, fw_nn_loss_kind kind, const void *x,
                                  const void *y, const void *w, const void *pw, int64_t n)
{
    NN_VOID("loss", fw__nn_pointwise_loss_fwd, loss, (int)kind, x, y, w, pw, n);
}

static int cpu_pointwise_loss_bwd(fw_dtype dt, void *dx, void *dy, fw_nn_loss_kind kind,
                                  const void *x, const void *y, const void *w, const void *pw,
                                  const void *g, int64_t g_stride, int64_t n)
{
    NN_VOID("loss backward", fw__nn_pointwise_loss_bwd, dx, dy, (int)kind, x, y, w, pw, g,
            g_stride, n);
}

static int cpu_lstm_gates_fwd(fw_dtype dt, void *h, void *c, void *act, const void *G,
                              const void *c_prev, int64_t B, int64_t H)
{
    NN_VOID("lstm_cell", fw__nn_lstm_gates_fwd, h, c, act, G, c_prev, B, H);
}

static int cpu_lstm_gates_bwd(fw_dtype dt, void *dG, void *dc_prev, const void *act,
                              const void *c, const void *c_prev, const void *dh,
                              const void *dc, int64_t B, int64_t H)
{
    NN_VOID("lstm_cell backward", fw__nn_lstm_gates_bwd, dG, dc_prev, act, c, c_prev, dh, dc,
            B, H);
}

static int cpu_gru_gates_fwd(fw_dtype dt, void *h, void *act, const void *xg, const void *hg,
                             const void *h_prev, int64_t B, int64_t H)
{
    NN_VOID("gru_cell", fw__nn_gru_gates_fwd, h, act, xg, hg, h_prev, B, H);
}

static int cpu_gru_gates_bwd(fw_dtype dt, void *dxg, void *dhg, void *dh_prev, const void *act,
                             const void *hg, const void *h_prev, const void *dh, int64_t B,
                             int64_t H)
{
    NN_VOID("gru_cell backward", fw__nn_gru_gates_bwd, dxg, dhg, dh_prev, act, hg, h_prev, dh,
            B, H);
}

const fw_nn_kernels fw__cpu_nn_kernels = {
    .dtypes = (1u << FW_FLOAT32) | (1u << FW_FLOAT64),
    .softmax_fwd = cpu_softmax_fwd,
    .log_softmax_fwd = cpu_log_softmax_fwd,
    .softmax_bwd = cpu_softmax_bwd,
    .log_softmax_bwd = cpu_log_softmax_bwd,
    .linear_fwd = cpu_linear_fwd,
    .linear_bwd = cpu_linear_bwd,
    .conv2d_fwd = cpu_conv2d_fwd,
    .conv2d_bwd = cpu_conv2d_bwd,
    .maxpool2d_fwd = cpu_maxpool2d_fwd,
    .maxpool2d_bwd = cpu_maxpool2d_bwd,
    .avgpool2d_fwd = cpu_avgpool2d_fwd,
    .avgpool2d_bwd = cpu_avgpool2d_bwd,
    .adaptive_avgpool2d_fwd = cpu_adaptive_avgpool2d_fwd,
    .adaptive_avgpool2d_bwd = cpu_adaptive_avgpool2d_bwd,
    .batch_norm_train_fwd = cpu_batch_norm_train_fwd,
    .batch_norm_infer_fwd = cpu_batch_norm_infer_fwd,
    .batch_norm_bwd = cpu_batch_norm_bwd,
    .layer_norm_fwd = cpu_layer_norm_fwd,
    .layer_norm_bwd = cpu_layer_norm_bwd,
    .dropout_apply = cpu_dropout_apply,
    .embedding_fwd = cpu_embedding_fwd,
    .embedding_bwd = cpu_embedding_bwd,
    .ce_hard_fwd = cpu_ce_hard_fwd,
    .ce_hard_bwd = cpu_ce_hard_bwd,
    .ce_soft_fwd = cpu_ce_soft_fwd,
    .ce_soft_bwd = cpu_ce_soft_bwd,
    .nll_fwd = cpu_nll_fwd,
    .nll_bwd = cpu_nll_bwd,
    .pointwise_loss_fwd = cpu_pointwise_loss_fwd,
    .pointwise_loss_bwd = cpu_pointwise_loss_bwd,
    .lstm_gates_fwd = cpu_lstm_gates_fwd,
    .lstm_gates_bwd = cpu_lstm_gates_bwd,
    .gru_gates_fwd = cpu_gru_gates_fwd,
    .gru_gates_bwd = cpu_gru_gates_bwd,
};
