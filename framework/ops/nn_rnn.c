/*
 * nn_rnn.c - LSTM and GRU cells (Paddle's formulas) and whole-sequence
 * helpers. A cell is matmul + add ops for the gate pre-activations (their
 * backward comes from the core ops) followed by one fused gate op with its
 * own backward (kernels in cpu/nn_rnn.c).
 */
#include <stdlib.h>
#include <string.h>

#include "fw/nn.h"
#include "nn_int.h"

typedef struct rnn_attr {
    int64_t B, H;
} rnn_attr;

/* ---- fused gate ops --------------------------------------------------------- */

/* LSTM gates: inputs G [B, 4H], c_prev [B, H]; outputs h, c.
 * saved: 0 act, 1 c, 2 c_prev (dense) */
static int lstm_gates_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const rnn_attr *a = fw_node_attr(n);
    fw_tensor *dh = NULL, *dc = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels("lstm_cell", gout[0]->device)) == NULL)
        return fw_error_code();
    /* gin: dG, dc_prev */
    if ((err = fw_op_dense(&dh, gout[0])) == 0 && (err = fw_op_dense(&dc, gout[1])) == 0 &&
        (err = fw__nn_grads_new(gin, n, 2, dh->device)) == 0 &&
        (err = k->lstm_gates_bwd(dh->dtype, fw__nn_ptr(gin[0]), fw__nn_ptr(gin[1]),
                                 fw__ptr(fw_node_saved(n, 0)), fw__ptr(fw_node_saved(n, 1)),
                                 fw__ptr(fw_node_saved(n, 2)), fw__ptr(dh), fw__ptr(dc), a->B,
                                 a->H)) < 0)
        fw__nn_grads_drop(gin, 2);
    fw_tensor_unref(dh);
    fw_tensor_unref(dc);
    return err;
}

static int lstm_gates(fw_tensor **h_out, fw_tensor **c_out, fw_tensor *G, fw_tensor *c_prev,
                      int64_t B, int64_t H)
{
    fw_tensor *Gd = NULL, *cpd = NULL, *h = NULL, *c = NULL, *act = NULL;
    fw_tensor *ins[2] = {G, c_prev}, *outs[2];
    int64_t shape[2] = {B, H}, ashape[2] = {B, 4 * H};
    rnn_attr a = {B, H};
    const fw_nn_kernels *k;
    fw_node *node;
    int err;

    if ((k = fw__nn_kernels("lstm_cell", G->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&Gd, G)) < 0 || (err = fw_op_dense(&cpd, c_prev)) < 0 ||
        (err = fw_op_output(&h, G->device, G->dtype, shape, 2)) < 0 ||
        (err = fw_op_output(&c, G->device, G->dtype, shape, 2)) < 0 ||
        (err = fw_op_output(&act, G->device, G->dtype, ashape, 2)) < 0 ||
        (err = k->lstm_gates_fwd(G->dtype, fw__ptr(h), fw__ptr(c), fw__ptr(act), fw__ptr(Gd),
                                 fw__ptr(cpd), B, H)) < 0)
        goto fail;
    outs[0] = h;
    outs[1] = c;
    if ((err = fw_node_record(&node, "lstm_cell", lstm_gates_backward, 2, ins, 2, outs, 3,
                              sizeof(a))) < 0)
        goto fail;
    if (node != NULL) {
        *(rnn_attr *)fw_node_attr(node) = a;
        fw_node_save(node, 0, act);
        if ((err = fw_node_save(node, 1, c)) < 0)
            goto fail;
        fw_node_save(node, 2, cpd);
    }
    *h_out = h;
    *c_out = c;
    h = c = NULL;
fail:
    fw_tensor_unref(Gd);
    fw_tensor_unref(cpd);
    fw_tensor_unref(h);
    fw_tensor_unref(c);
    fw_tensor_unref(act);
    return err;
}

/* GRU gates: inputs xg, hg [B, 3H], h_prev [B, H]; output h.
 * saved: 0 act, 1 hg (dense), 2 h_prev (dense) */
static int gru_gates_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const rnn_attr *a = fw_node_attr(n);
    fw_tensor *dh = NULL;
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels("gru_cell", gout[0]->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&dh, gout[0])) < 0)
        return err;
    /* gin: dxg, dhg, dh_prev */
    if ((err = fw__nn_grads_new(gin, n, 3, dh->device)) == 0 &&
        (err = k->gru_gates_bwd(dh->dtype, fw__nn_ptr(gin[0]), fw__nn_ptr(gin[1]),
                                fw__nn_ptr(gin[2]), fw__ptr(fw_node_saved(n, 0)),
                                fw__ptr(fw_node_saved(n, 1)), fw__ptr(fw_node_saved(n, 2)),
                                fw__ptr(dh), a->B, a->H)) < 0)
        fw__nn_grads_drop(gin, 3);
    fw_tensor_unref(dh);
    return err;
}

static int gru_gates(fw_tensor **h_out, fw_tensor *xg, fw_tensor *hg, fw_tensor *h_prev,
                     int64_t B, int64_t H)
{
    fw_tensor *xgd = NULL, *hgd = NULL, *hpd = NULL, *h = NULL, *act = NULL;
    fw_tensor *ins[3] = {xg, hg, h_prev};
    int64_t shape[2] = {B, H}, ashape[2] = {B, 3 * H};
    rnn_attr a = {B, H};
    const fw_nn_kernels *k;
    int err;

    if ((k = fw__nn_kernels("gru_cell", xg->device)) == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&xgd, xg)) < 0 || (err = fw_op_dense(&hgd, hg)) < 0 ||
        (err = fw_op_dense(&hpd, h_prev)) < 0 ||
        (err = fw_op_output(&h, xg->device, xg->dtype, shape, 2)) < 0 ||
        (err = fw_op_output(&act, xg->device, xg->dtype, ashape, 2)) < 0 ||
        (err = k->gru_gates_fwd(xg->dtype, fw__ptr(h), fw__ptr(act), fw__ptr(xgd),
                                fw__ptr(hgd), fw__ptr(hpd), B, H)) < 0)
        goto fail;
    if ((err = fw__nn_record("gru_cell", gru_gates_backward, 3, ins, h, &a, sizeof(a), 3,
                             (fw_tensor *[]){act, hgd, hpd})) < 0)
        goto fail;
    *h_out = h;
    h = NULL;
fail:
    fw_tensor_unref(xgd);
    fw_tensor_unref(hgd);
    fw_tensor_unref(hpd);
    fw_tensor_unref(h);
    fw_tensor_unref(act);
    return err;
}

/* ---- cells ------------------------------------------------------------------- */

/* x @ w^T + b (b may be NULL), through the core ops so autograd covers it */
static int affine_t(fw_tensor **out, fw_tensor *x, fw_tensor *w, fw_tensor *b)
{
    fw_tensor *m = NULL;
    int err;
    *out = NULL;
    if ((err = fw_matmul(&m, x, w, false, true)) < 0)
        return err;
    if (b == NULL) {
        *out = m;
        return 0;
    }
    err = fw_add(out, m, b);
    fw_tensor_unref(m);
    return err;
}

static int check_state(const char *op, const char *what, fw_tensor *t, fw_tensor *x,
                       int64_t B, int64_t H)
{
    char buf[128];
    int err;
    if (t == NULL)
        return 0;
    if ((err = fw__nn_check_optional_like(op, what, t, x)) < 0)
        return err;
    if (t->ndim != 2 || t->shape[0] != B || t->shape[1] != H)
        return fw_error_set(FW_ESHAPE, "%s: %s must be [%lld, %lld], got %s", op, what,
                            (long long)B, (long long)H,
                            fw_shape_format(buf, sizeof(buf), t->shape, t->ndim));
    return 0;
}

/* Shapes of x [B, I], w_ih [gates*H, I], w_hh [gates*H, H], biases
 * [gates*H]; sets *H. */
static int check_cell(const char *op, int gates, fw_tensor *x, fw_tensor *w_ih,
                      fw_tensor *w_hh, fw_tensor *b_ih, fw_tensor *b_hh, int64_t *Hout)
{
    char s1[128], s2[128];
    int64_t H;
    int err;

    if ((err = fw__nn_check_float(op, "x", x)) < 0 ||
        (err = fw__nn_check_rank(op, "x", x, 2, "[batch, input_size]")) < 0)
        return err;
    if (w_ih == NULL || w_hh == NULL)
        return fw_error_set(FW_EINVAL, "%s: weight_ih and weight_hh are required", op);
    if ((err = fw__nn_check_optional_like(op, "weight_ih", w_ih, x)) < 0 ||
        (err = fw__nn_check_optional_like(op, "weight_hh", w_hh, x)) < 0 ||
        (err = fw__nn_check_optional_like(op, "bias_ih", b_ih, x)) < 0 ||
        (err = fw__nn_check_optional_like(op, "bias_hh", b_hh, x)) < 0)
        return err;
    if (w_hh->ndim != 2 || w_hh->shape[0] != gates * w_hh->shape[1])
        return fw_error_set(FW_ESHAPE, "%s: weight_hh must be [%d*hidden, hidden], got %s", op,
                            gates, fw_shape_format(s1, sizeof(s1), w_hh->shape, w_hh->ndim));
    H = w_hh->shape[1];
    if (w_ih->ndim != 2 || w_ih->shape[0] != gates * H || w_ih->shape[1] != x->shape[1])
        return fw_error_set(FW_ESHAPE,
                            "%s: weight_ih must be [%lld, %lld] (%d*hidden, input_size), got %s "
                            "for x %s",
                            op, (long long)(gates * H), (long long)x->shape[1], gates,
                            fw_shape_format(s1, sizeof(s1), w_ih->shape, w_ih->ndim),
                            fw_shape_format(s2, sizeof(s2), x->shape, x->ndim));
    if ((b_ih != NULL && (b_ih->ndim != 1 || b_ih->shape[0] != gates * H)) ||
        (b_hh != NULL && (b_hh->ndim != 1 || b_hh->shape[0] != gates * H)))
        return fw_error_set(FW_ESHAPE, "%s: biases must be [%lld]", op, (long long)(gates * H));
    *Hout = H;
    return 0;
}

static int zeros_state(fw_tensor **out, fw_tensor *given, fw_tensor *x, int64_t B, int64_t H)
{
    int64_t shape[2] = {B, H};
    if (given != NULL) {
        *out = fw_tensor_ref(given);
        return 0;
    }
    return fw_op_zeros(out, x->device, x->dtype, shape, 2);
}

int fw_lstm_cell(fw_tensor **h, fw_tensor **c, fw_tensor *x, fw_tensor *h_prev,
                 fw_tensor *c_prev, fw_tensor *w_ih, fw_tensor *w_hh, fw_tensor *b_ih,
                 fw_tensor *b_hh)
{
    fw_tensor *hp = NULL, *cp = NULL, *gx = NULL, *gh = NULL, *G = NULL;
    int64_t B, H = 0;
    int err;

    *h = NULL;
    *c = NULL;
    if ((err = check_cell("lstm_cell", 4, x, w_ih, w_hh, b_ih, b_hh, &H)) < 0)
        return err;
    B = x->shape[0];
    if ((err = check_state("lstm_cell", "h_prev", h_prev, x, B, H)) < 0 ||
        (err = check_state("lstm_cell", "c_prev", c_prev, x, B, H)) < 0)
        return err;
    if ((err = zeros_state(&hp, h_prev, x, B, H)) < 0 ||
        (err = zeros_state(&cp, c_prev, x, B, H)) < 0 ||
        (err = affine_t(&gx, x, w_ih, b_ih)) < 0 || (err = affine_t(&gh, hp, w_hh, b_hh)) < 0 ||
        (err = fw_add(&G, gx, gh)) < 0)
        goto done;
    err = lstm_gates(h, c, G, cp, B, H);
done:
    fw_tensor_unref(hp);
    fw_tensor_unref(cp);
    fw_tensor_unref(gx);
    fw_tensor_unref(gh);
    fw_tensor_unref(G);
    return err;
}

int fw_gru_cell(fw_tensor **h, fw_tensor *x, fw_tensor *h_prev, fw_tensor *w_ih,
                fw_tensor *w_hh, fw_tensor *b_ih, fw_tensor *b_hh)
{
    fw_tensor *hp = NULL, *xg = NULL, *hg = NULL;
    int64_t B, H = 0;
    int err;

    *h = NULL;
    if ((err = check_cell("gru_cell", 3, x, w_ih, w_hh, b_ih, b_hh, &H)) < 0)
        return err;
    B = x->shape[0];
    if ((err = check_state("gru_cell", "h_prev", h_prev, x, B, H)) < 0)
        return err;
    if ((err = zeros_state(&hp, h_prev, x, B, H)) < 0 ||
        (err = affine_t(&xg, x, w_ih, b_ih)) < 0 || (err = affine_t(&hg, hp, w_hh, b_hh)) < 0)
        goto done;
    err = gru_gates(h, xg, hg, hp, B, H);
done:
    fw_tensor_unref(hp);
    fw_tensor_unref(xg);
    fw_tensor_unref(hg);
    return err;
}

/* ---- sequences ---------------------------------------------------------------- */

/* Stack T tensors [B, H] into [B, T, H] (time_major: [T, B, H]); backward
 * hands each step its slice. */
typedef struct seq_attr {
    int64_t T, B, H;
    int time_major;
} seq_attr;

/* Step t of the dense stacked tensor s as a [B, H] view. */
static void step_view(fw_kview *v, const fw_tensor *s, int64_t t, const seq_attr *a)
{
    size_t es = fw_dtype_size(s->dtype);
    v->data = (char *)fw__ptr(s) + (size_t)((a->time_major ? t * a->B : t) * a->H) * es;
    v->dtype = s->dtype;
    v->ndim = 2;
    v->shape[0] = a->B;
    v->shape[1] = a->H;
    v->strides[0] = (a->time_major ? 1 : a->T) * a->H;
    v->strides[1] = 1;
}

static int seq_stack_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const seq_attr *a = fw_node_attr(n);
    const fw_backend *be = fw_backend_require(gout[0]->device, "rnn_sequence");
    fw_tensor *g = NULL;
    int err;

    if (be == NULL)
        return fw_error_code();
    if ((err = fw_op_dense(&g, gout[0])) < 0)
        return err;
    for (int64_t t = 0; t < a->T && err == 0; t++) {
        fw_kview src, dst;
        if (!fw_node_needs_grad(n, (int)t))
            continue;
        if ((err = fw__nn_grad_like(&gin[t], n, (int)t, g->device)) < 0)
            break;
        fw__kview(&dst, gin[t]);
        step_view(&src, g, t, a);
        err = be->copy_strided(&dst, &src);
    }
    fw_tensor_unref(g);
    return err;
}

static int seq_stack(fw_tensor **out, fw_tensor **hs, int64_t T, int64_t B, int64_t H,
                     bool time_major)
{
    seq_attr a = {T, B, H, time_major};
    int64_t shape[3] = {time_major ? T : B, time_major ? B : T, H};
    const fw_backend *be = fw_backend_require(hs[0]->device, "rnn_sequence");
    fw_tensor *y = NULL;
    fw_node *node;
    int err;

    if (be == NULL)
        return fw_error_code();
    if (T > INT32_MAX)
        return fw_error_set(FW_EINVAL, "rnn: sequence of %lld steps is too long", (long long)T);
    if ((err = fw_op_output(&y, hs[0]->device, hs[0]->dtype, shape, 3)) < 0)
        return err;
    for (int64_t t = 0; t < T; t++) {
        fw_kview src, dst;
        fw__kview(&src, hs[t]); /* cell outputs are dense [B, H] */
        step_view(&dst, y, t, &a);
        if ((err = be->copy_strided(&dst, &src)) < 0) {
            fw_tensor_unref(y);
            return err;
        }
    }
    if ((err = fw_node_record(&node, "rnn_sequence", seq_stack_backward, (int)T, hs, 1, &y, 0,
                              sizeof(a))) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    if (node != NULL)
        *(seq_attr *)fw_node_attr(node) = a;
    *out = y;
    return 0;
}

static int run_sequence(fw_tensor **y, fw_tensor **h, fw_tensor **c, int lstm, fw_tensor *x,
                        fw_tensor *h0, fw_tensor *c0, fw_tensor *w_ih, fw_tensor *w_hh,
                        fw_tensor *b_ih, fw_tensor *b_hh, bool time_major)
{
    const char *op = lstm ? "lstm" : "gru";
    fw_tensor **hs = NULL, *hc = NULL, *cc = NULL;
    int64_t T;
    char buf[128];
    int err = 0;

    if (y != NULL)
        *y = NULL;
    if (h != NULL)
        *h = NULL;
    if (c != NULL)
        *c = NULL;
    if ((err = fw__nn_check_float(op, "x", x)) < 0)
        return err;
    if (x->ndim != 3)
        return fw_error_set(FW_ESHAPE, "%s: x must be 3-D %s, got %s", op,
                            time_major ? "[T, B, input_size]" : "[B, T, input_size]",
                            fw_shape_format(buf, sizeof(buf), x->shape, x->ndim));
    T = x->shape[time_major ? 0 : 1];
    if (T < 1)
        return fw_error_set(FW_ESHAPE, "%s: the sequence has no steps", op);
    if ((hs = calloc((size_t)T, sizeof(*hs))) == NULL)
        return fw_error_set(FW_ENOMEM, "%s: %lld steps", op, (long long)T);
    hc = fw_tensor_ref(h0);
    cc = fw_tensor_ref(c0);
    for (int64_t t = 0; t < T; t++) {
        fw_tensor *xt = NULL, *hn = NULL, *cn = NULL;
        if ((err = fw_select(&xt, x, time_major ? 0 : 1, t)) < 0)
            goto done;
        if (lstm)
            err = fw_lstm_cell(&hn, &cn, xt, hc, cc, w_ih, w_hh, b_ih, b_hh);
        else
            err = fw_gru_cell(&hn, xt, hc, w_ih, w_hh, b_ih, b_hh);
        fw_tensor_unref(xt);
        if (err < 0)
            goto done;
        fw_tensor_unref(hc);
        fw_tensor_unref(cc);
        hc = hn;
        cc = cn;
        hs[t] = fw_tensor_ref(hn);
    }
    if (y != NULL && (err = seq_stack(y, hs, T, hs[0]->shape[0], hs[0]->shape[1],
                                      time_major)) < 0)
        goto done;
    if (h != NULL)
        *h = fw_tensor_ref(hc);
    if (c != NULL)
        *c = fw_tensor_ref(cc);
done:
    for (int64_t t = 0; t < T; t++)
        fw_tensor_unref(hs[t]);
    free(hs);
    fw_tensor_unref(hc);
    fw_tensor_unref(cc);
    if (err < 0 && y != NULL) {
        fw_tensor_unref(*y);
        *y = NULL;
    }
    return err;
}

int fw_lstm_sequence(fw_tensor **y, fw_tensor **h, fw_tensor **c, fw_tensor *x,
                     fw_tensor *h0, fw_tensor *c0, fw_tensor *w_ih, fw_tensor *w_hh,
                     fw_tensor *b_ih, fw_tensor *b_hh, bool time_major)
{
    return run_sequence(y, h, c, 1, x, h0, c0, w_ih, w_hh, b_ih, b_hh, time_major);
}

int fw_gru_sequence(fw_tensor **y, fw_tensor **h, fw_tensor *x, fw_tensor *h0,
                    fw_tensor *w_ih, fw_tensor *w_hh, fw_tensor *b_ih, fw_tensor *b_hh,
                    bool time_major)
{
    return run_sequence(y, h, NULL, 0, x, h0, NULL, w_ih, w_hh, b_ih, b_hh, time_major);
}
