/*
 * exec.c - running a graph with the framework's CPU kernels (fw_* ops).
 *
 * A run keeps one tensor per value; each intermediate is dropped after its
 * last reader (the node's frees list, computed by fw__graph_finalize), so
 * the caching allocator hands its block to a later op. Grad mode is off for
 * the run (fw_set_grad_enabled is thread-local), so no op records a tape.
 * Fused activations and elementwise chains run in one pass over the data.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw/fw.h"
#include "fw_parallel.h"
#include "graph_int.h"

int fw__graph_finalize(fw_graph *g)
{
    int *last = malloc((size_t)(g->nvalues ? g->nvalues : 1) * sizeof(int));
    int *cnt = calloc((size_t)(g->nnodes ? g->nnodes : 1), sizeof(int));
    int err = 0;

    if (last == NULL || cnt == NULL) {
        err = fw_error_set(FW_ENOMEM, "graph: liveness");
        goto done;
    }
    for (int v = 0; v < g->nvalues; v++)
        last[v] = -1;
    for (int i = 0; i < g->nnodes; i++) {
        const g_node *n = &g->nodes[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                last[n->in[k]] = i;
        /* a value nobody reads is freed right after it is made */
        if (last[n->out] < i)
            last[n->out] = i;
    }
    for (int o = 0; o < g->nout; o++)
        last[g->out[o]] = -2;     /* outputs outlive the run */
    for (int v = 0; v < g->nvalues; v++)
        if (g->values[v].kind == GV_INTER && last[v] >= 0)
            cnt[last[v]]++;
    for (int i = 0; i < g->nnodes; i++) {
        g_node *n = &g->nodes[i];
        free(n->frees);
        n->frees = NULL;
        n->nfrees = 0;
        if (cnt[i] == 0)
            continue;
        if ((n->frees = malloc((size_t)cnt[i] * sizeof(int))) == NULL) {
            err = fw_error_set(FW_ENOMEM, "graph: liveness");
            goto done;
        }
    }
    for (int v = 0; v < g->nvalues; v++)
        if (g->values[v].kind == GV_INTER && last[v] >= 0) {
            g_node *n = &g->nodes[last[v]];
            n->frees[n->nfrees++] = v;
        }
done:
    free(last);
    free(cnt);
    return err;
}

/* ---- elementwise steps ----------------------------------------------------- */

static inline float step1(const g_step *s, float x)
{
    switch (s->op) {
    case G_ADD_S: return x + (float)s->s;
    case G_SUB_S: return x - (float)s->s;
    case G_RSUB_S: return (float)s->s - x;
    case G_MUL_S: return x * (float)s->s;
    case G_DIV_S: return x / (float)s->s;
    case G_RDIV_S: return (float)s->s / x;
    case G_POW_S: return powf(x, (float)s->s);
    case G_RPOW_S: return powf((float)s->s, x);
    case G_RELU: return x > 0.0f ? x : 0.0f;
    case G_SIGMOID: return 1.0f / (1.0f + expf(-x));
    case G_TANH: return tanhf(x);
    case G_EXP: return expf(x);
    case G_LOG: return logf(x);
    case G_SQRT: return sqrtf(x);
    case G_RSQRT: return 1.0f / sqrtf(x);
    case G_ABS: return fabsf(x);
    case G_NEG: return -x;
    case G_SQUARE: return x * x;
    case G_SILU: return x / (1.0f + expf(-x));
    case G_SIN: return sinf(x);
    case G_COS: return cosf(x);
    case G_GELU:
        if (s->flag)
            return 0.5f * x * (1.0f + tanhf(0.7978845608028654f * (x + 0.044715f * x * x * x)));
        return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
    case G_LEAKY_RELU: return x > 0.0f ? x : x * (float)s->s;
    case G_CLIP:
        if (s->flag && x < (float)s->s)
            x = (float)s->s;
        if (s->flag2 && x > (float)s->s2)
            x = (float)s->s2;
        return x;
    default: return x;
    }
}

typedef struct {
    const float *src;
    float *dst;
    const g_step *steps;
    int nsteps;
} chain_ctx;

/* One step over a block: the cheap ones as plain loops the compiler
 * vectorises (a switch per element kept relu after a conv at ~1 ns per
 * element, half of LeNet's run), the rest through step1. */
static void step_block(const g_step *s, float *restrict x, int64_t n)
{
    const float a = (float)s->s;

    switch (s->op) {
    case G_ADD_S: for (int64_t i = 0; i < n; i++) x[i] += a; return;
    case G_SUB_S: for (int64_t i = 0; i < n; i++) x[i] -= a; return;
    case G_RSUB_S: for (int64_t i = 0; i < n; i++) x[i] = a - x[i]; return;
    case G_MUL_S: for (int64_t i = 0; i < n; i++) x[i] *= a; return;
    case G_DIV_S: for (int64_t i = 0; i < n; i++) x[i] /= a; return;
    case G_RELU: for (int64_t i = 0; i < n; i++) x[i] = x[i] > 0.0f ? x[i] : 0.0f; return;
    case G_NEG: for (int64_t i = 0; i < n; i++) x[i] = -x[i]; return;
    case G_SQUARE: for (int64_t i = 0; i < n; i++) x[i] *= x[i]; return;
    case G_ABS: for (int64_t i = 0; i < n; i++) x[i] = fabsf(x[i]); return;
    default: for (int64_t i = 0; i < n; i++) x[i] = step1(s, x[i]); return;
    }
}

#define CHAIN_BLOCK 1024

static void chain_body(void *ctx, int64_t b, int64_t e)
{
    const chain_ctx *c = ctx;
    for (int64_t i = b; i < e; i += CHAIN_BLOCK) {
        int64_t n = e - i < CHAIN_BLOCK ? e - i : CHAIN_BLOCK;
        float *x = c->dst + i;
        if (x != c->src + i)
            memcpy(x, c->src + i, (size_t)n * sizeof(float));
        for (int k = 0; k < c->nsteps; k++)
            step_block(&c->steps[k], x, n);
    }
}

g_step fw__graph_node_step(const g_node *n)
{
    g_step s = { .op = (uint8_t)n->op, .s = n->s, .s2 = n->s2 };
    if (n->op == G_GELU)
        s.flag = n->approximate;
    if (n->op == G_CLIP) {
        s.flag = n->has_min;
        s.flag2 = n->has_max;
    }
    return s;
}

/* One step through the framework's op (the float16/float64/int path). */
static int step_op(const g_step *s, fw_tensor *x, fw_tensor **out)
{
    switch (s->op) {
    case G_ADD_S: return fw_add_scalar(out, x, s->s);
    case G_SUB_S: return fw_sub_scalar(out, x, s->s);
    case G_RSUB_S: return fw_rsub_scalar(out, x, s->s);
    case G_MUL_S: return fw_mul_scalar(out, x, s->s);
    case G_DIV_S: return fw_div_scalar(out, x, s->s);
    case G_RDIV_S: return fw_rdiv_scalar(out, x, s->s);
    case G_POW_S: return fw_pow_scalar(out, x, s->s);
    case G_RPOW_S: return fw_rpow_scalar(out, x, s->s);
    case G_RELU: return fw_relu(out, x);
    case G_SIGMOID: return fw_sigmoid(out, x);
    case G_TANH: return fw_tanh(out, x);
    case G_EXP: return fw_exp(out, x);
    case G_LOG: return fw_log(out, x);
    case G_SQRT: return fw_sqrt(out, x);
    case G_RSQRT: return fw_rsqrt(out, x);
    case G_ABS: return fw_abs(out, x);
    case G_NEG: return fw_neg(out, x);
    case G_SQUARE: return fw_square(out, x);
    case G_SILU: return fw_silu(out, x);
    case G_SIN: return fw_sin(out, x);
    case G_COS: return fw_cos(out, x);
    case G_GELU: return fw_gelu(out, x, s->flag);
    case G_LEAKY_RELU: return fw_leaky_relu(out, x, s->s);
    case G_CLIP: return fw_clip(out, x, s->flag ? &s->s : NULL, s->flag2 ? &s->s2 : NULL);
    default: return fw_error_set(FW_EINTERNAL, "graph: step %d", s->op);
    }
}

/* Apply steps to x: float32 in one parallel pass, else op by op. When
 * inplace, x is a fresh contiguous tensor this run owns and is overwritten. */
static int run_steps(const g_step *steps, int nsteps, fw_tensor *x, bool inplace,
                     fw_tensor **out)
{
    int err;

    *out = NULL;
    if (fw_tensor_dtype(x) == FW_FLOAT32 && fw_tensor_device(x) == FW_CPU) {
        fw_tensor *src = NULL, *dst = NULL;
        chain_ctx c;
        if ((err = fw_contiguous(&src, x)) < 0)
            return err;
        if (inplace && src == x) {
            dst = fw_tensor_ref(x);
        } else if ((err = fw_empty_like(&dst, src)) < 0) {
            fw_tensor_unref(src);
            return err;
        }
        c = (chain_ctx){ fw_tensor_data(src), fw_tensor_data(dst), steps, nsteps };
        fw_parallel_for(fw_tensor_numel(src), 16384, chain_body, &c);
        fw_tensor_unref(src);
        *out = dst;
        return 0;
    }
    fw_tensor *cur = fw_tensor_ref(x);
    for (int k = 0; k < nsteps; k++) {
        fw_tensor *nx = NULL;
        err = step_op(&steps[k], cur, &nx);
        fw_tensor_unref(cur);
        if (err < 0)
            return err;
        cur = nx;
    }
    *out = cur;
    return 0;
}

/* ---- one node ----------------------------------------------------------------- */

static void resolve_list(const g_node *n, const int64_t *syms, int64_t *out)
{
    for (int i = 0; i < n->nlist; i++)
        out[i] = n->sym[i] >= 0 && syms ? syms[n->sym[i]] : n->list[i];
}

static void ints_of(const g_node *n, int *out)
{
    for (int i = 0; i < n->nlist; i++)
        out[i] = (int)n->list[i];
}

int fw__graph_run_node(const g_node *n, fw_tensor *const *in, const int64_t *syms,
                       fw_tensor **out)
{
    int64_t l64[FW_MAX_DIMS];
    int li[FW_MAX_DIMS];
    fw_tensor *t = NULL;
    int err;

    *out = NULL;
    if (g_chainable(n->op)) {
        /* a lone elementwise node runs the framework's kernel */
        g_step s = fw__graph_node_step(n);
        return step_op(&s, in[0], out);
    }
    switch (n->op) {
    case G_IDENTITY: *out = fw_tensor_ref(in[0]); return 0;
    case G_ADD: return fw_add(out, in[0], in[1]);
    case G_SUB: return fw_sub(out, in[0], in[1]);
    case G_MUL: return fw_mul(out, in[0], in[1]);
    case G_DIV: return fw_div(out, in[0], in[1]);
    case G_POW: return fw_pow(out, in[0], in[1]);
    case G_MAXIMUM: return fw_maximum(out, in[0], in[1]);
    case G_MINIMUM: return fw_minimum(out, in[0], in[1]);
    case G_LINEAR:
    case G_CONV2D:
        if (n->op == G_LINEAR)
            err = fw_linear(&t, in[0], in[1], n->nin > 2 ? in[2] : NULL);
        else
            err = fw_conv2d(&t, in[0], in[1], n->nin > 2 ? in[2] : NULL, n->stride, n->pad,
                            n->dil, n->groups);
        if (err < 0)
            return err;
        if (n->act) {
            g_step s = { .op = (uint8_t)n->act };
            err = run_steps(&s, 1, t, true, out);
            fw_tensor_unref(t);
            return err;
        }
        *out = t;
        return 0;
    case G_MAX_POOL2D:
        return fw_max_pool2d(out, NULL, in[0], n->kernel, n->stride, n->pad, n->ceil_mode);
    case G_AVG_POOL2D:
        return fw_avg_pool2d(out, in[0], n->kernel, n->stride, n->pad, n->ceil_mode,
                             n->exclusive);
    case G_ADAPTIVE_AVG_POOL2D: return fw_adaptive_avg_pool2d(out, in[0], n->osize);
    case G_BATCH_NORM:
        return fw_batch_norm(out, in[0], in[1], in[2], n->nin > 3 ? in[3] : NULL,
                             n->nin > 4 ? in[4] : NULL, false, 0.9, n->eps);
    case G_LAYER_NORM:
        return fw_layer_norm(out, in[0], n->list, n->nlist, n->nin > 1 ? in[1] : NULL,
                             n->nin > 2 ? in[2] : NULL, n->eps);
    case G_SOFTMAX: return fw_softmax(out, in[0], n->axis);
    case G_LOG_SOFTMAX: return fw_log_softmax(out, in[0], n->axis);
    case G_MATMUL: return fw_matmul(out, in[0], in[1], n->tx, n->ty);
    case G_RESHAPE:
        resolve_list(n, syms, l64);
        return fw_reshape(out, in[0], l64, n->nlist);
    case G_FLATTEN: return fw_flatten(out, in[0], n->start, n->stop);
    case G_SQUEEZE: ints_of(n, li); return fw_squeeze(out, in[0], li, n->nlist);
    case G_UNSQUEEZE: ints_of(n, li); return fw_unsqueeze(out, in[0], li, n->nlist);
    case G_TRANSPOSE: ints_of(n, li); return fw_transpose(out, in[0], li, n->nlist);
    case G_SUM: ints_of(n, li); return fw_sum(out, in[0], li, n->nlist, n->keepdim);
    case G_MEAN: ints_of(n, li); return fw_mean(out, in[0], li, n->nlist, n->keepdim);
    case G_MAX: ints_of(n, li); return fw_max(out, in[0], li, n->nlist, n->keepdim);
    case G_MIN: ints_of(n, li); return fw_min(out, in[0], li, n->nlist, n->keepdim);
    case G_CONCAT: return fw_concat(out, in, n->nin, n->axis);
    case G_CAST: return fw_cast(out, in[0], n->dtype);
    case G_EW_CHAIN: return run_steps(n->steps, n->nsteps, in[0], false, out);
    default:
        return fw_error_set(FW_EINTERNAL, "graph: op %d has no kernel", n->op);
    }
}

/* ---- a run ------------------------------------------------------------------- */

static int check_inputs(const fw_graph *g, fw_tensor *const *inputs, int64_t *syms)
{
    int k = 0;

    for (int i = 0; i < g->nin; i++) {
        const g_value *v = &g->values[g->in[i]];
        fw_tensor *x = inputs[i];
        char buf[128];
        if (x == NULL)
            return fw_error_set(FW_EINVAL, "input '%s' is missing", v->name);
        if (fw_tensor_dtype(x) != v->dtype)
            return fw_error_set(FW_EDTYPE, "input '%s': expected %s, got %s", v->name,
                                fw_dtype_name(v->dtype), fw_dtype_name(fw_tensor_dtype(x)));
        if (fw_tensor_device(x) != FW_CPU)
            return fw_error_set(FW_EDEVICE, "input '%s' is not on the CPU", v->name);
        bool ok = fw_tensor_ndim(x) == v->ndim;
        for (int d = 0; ok && d < v->ndim; d++)
            if (v->shape[d] >= 0 && v->shape[d] != fw_tensor_shape(x)[d])
                ok = false;
        if (!ok) {
            char want[128];
            size_t p = 0;
            want[p++] = '[';
            for (int d = 0; d < v->ndim && p < sizeof(want) - 24; d++)
                p += (size_t)snprintf(want + p, sizeof(want) - p, "%s%lld", d ? ", " : "",
                                      (long long)v->shape[d]);
            snprintf(want + p, sizeof(want) - p, "]");
            return fw_error_set(FW_ESHAPE, "input '%s': expected shape %s (-1 = any), got %s",
                                v->name, want, fw_tensor_shape_str(buf, sizeof(buf), x));
        }
        for (int d = 0; d < v->ndim; d++)
            if (v->shape[d] < 0)
                syms[k++] = fw_tensor_shape(x)[d];
    }
    return 0;
}

/* Run the graph; when sizes is not NULL, record each node output's bytes. */
int fw__graph_run_sized(const fw_graph *g, fw_tensor *const *inputs, fw_tensor **outputs,
                        int64_t *sizes)
{
    int64_t syms[FW_GRAPH_MAX_IO * FW_MAX_DIMS];
    fw_tensor **env = NULL;
    fw_tensor *ins[FW_GRAPH_MAX_NODE_INPUTS];
    bool grad;
    int err = 0;

    if (g == NULL || inputs == NULL || outputs == NULL)
        return fw_error_set(FW_EINVAL, "graph run: NULL argument");
    for (int o = 0; o < g->nout; o++)
        outputs[o] = NULL;
    if ((err = check_inputs(g, inputs, syms)) < 0)
        return err;
    if ((env = calloc((size_t)g->nvalues, sizeof(*env))) == NULL)
        return fw_error_set(FW_ENOMEM, "graph run");
    for (int i = 0; i < g->nin; i++)
        env[g->in[i]] = fw_tensor_ref(inputs[i]);
    for (int v = 0; v < g->nvalues; v++)
        if (g->values[v].kind == GV_CONST)
            env[v] = fw_tensor_ref(g->values[v].konst);
    grad = fw_set_grad_enabled(false);
    for (int i = 0; i < g->nnodes; i++) {
        const g_node *n = &g->nodes[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->nin; k++)
            ins[k] = n->in[k] >= 0 ? env[n->in[k]] : NULL;
        if ((err = fw__graph_run_node(n, ins, syms, &env[n->out])) < 0) {
            char msg[512];
            snprintf(msg, sizeof(msg), "%s", fw_error_last());
            fw_error_set(err, "node %d (%s): %s", i, fw__graph_op_name(n->op), msg);
            break;
        }
        if (sizes)
            sizes[n->out] = fw_tensor_numel(env[n->out]) *
                            (int64_t)fw_dtype_size(fw_tensor_dtype(env[n->out]));
        for (int k = 0; k < n->nfrees; k++) {
            fw_tensor_unref(env[n->frees[k]]);
            env[n->frees[k]] = NULL;
        }
    }
    fw_set_grad_enabled(grad);
    if (err == 0)
        for (int o = 0; o < g->nout; o++)
            outputs[o] = fw_tensor_ref(env[g->out[o]]);
    for (int v = 0; v < g->nvalues; v++)
        fw_tensor_unref(env[v]);
    free(env);
    return err;
}

int fw_graph_run(const fw_graph *g, fw_tensor *const *inputs, fw_tensor **outputs)
{
    return fw__graph_run_sized(g, inputs, outputs, NULL);
}
