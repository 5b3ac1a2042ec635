/*
 * passes.c - graph rewrites (fw_graph_optimize): constant folding,
 * dead-code elimination, batch-norm folding, bias/activation fusion,
 * elementwise-chain fusion. Each pass keeps the graph's outputs identical
 * up to float rounding; tests/unit/framework/test_graph_passes.c runs every
 * pass's before and after graphs and compares.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fw/fw.h"
#include "graph_int.h"

static bool is_output(const fw_graph *g, int v)
{
    for (int o = 0; o < g->nout; o++)
        if (g->out[o] == v)
            return true;
    return false;
}

static bool is_const(const fw_graph *g, int v)
{
    return v >= 0 && g->values[v].kind == GV_CONST;
}

/* The live node whose output is v (after `before`), or NULL. */
static g_node *producer(fw_graph *g, int v)
{
    for (int i = 0; i < g->nnodes; i++)
        if (!g->nodes[i].dead && g->nodes[i].out == v)
            return &g->nodes[i];
    return NULL;
}

/* The only live reader of v, or NULL. */
static g_node *sole_reader(fw_graph *g, int v)
{
    g_node *r = NULL;
    for (int i = 0; i < g->nnodes; i++) {
        g_node *n = &g->nodes[i];
        if (n->dead)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == v) {
                if (r != NULL && r != n)
                    return NULL;
                r = n;
            }
    }
    return is_output(g, v) ? NULL : r;
}

static int set_const(fw_graph *g, int v, fw_tensor *t)
{
    fw_tensor *c = NULL;
    int err;
    g_value *val;

    if ((err = fw_contiguous(&c, t)) < 0)
        return err;
    val = &g->values[v];
    fw_tensor_unref(val->konst);
    val->konst = c;
    val->kind = GV_CONST;
    val->dtype = fw_tensor_dtype(c);
    val->ndim = fw_tensor_ndim(c);
    memcpy(val->shape, fw_tensor_shape(c), (size_t)val->ndim * sizeof(int64_t));
    return 0;
}

/* A new constant value named after base. */
static int new_const(fw_graph *g, const char *base, const char *suffix, fw_tensor *t)
{
    char name[FW_GRAPH_MAX_NAME + 32];
    int idx, err;

    snprintf(name, sizeof(name), "%.*s%s", FW_GRAPH_MAX_NAME - 1, base, suffix);
    if ((idx = fw__graph_add_value(g, name, GV_CONST)) < 0)
        return idx;
    if ((err = set_const(g, idx, t)) < 0)
        return err;
    return idx;
}

/* ---- constant folding ----------------------------------------------------- */

static int const_fold(fw_graph *g, int *count)
{
    fw_tensor *ins[FW_GRAPH_MAX_NODE_INPUTS];
    bool grad = fw_set_grad_enabled(false);
    int err = 0;

    for (int i = 0; i < g->nnodes && err == 0; i++) {
        g_node *n = &g->nodes[i];
        fw_tensor *t = NULL;
        bool all = true;
        if (n->dead || n->has_sym || is_output(g, n->out))
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0 && !is_const(g, n->in[k]))
                all = false;
        if (!all)
            continue;
        for (int k = 0; k < n->nin; k++)
            ins[k] = n->in[k] >= 0 ? g->values[n->in[k]].konst : NULL;
        if ((err = fw__graph_run_node(n, ins, NULL, &t)) < 0) {
            char msg[400];
            snprintf(msg, sizeof(msg), "%s", fw_error_last());
            err = fw_error_set(FW_EFORMAT, "graph: node %d (%s) fails on its constant inputs: "
                               "%s", i, fw__graph_op_name(n->op), msg);
            break;
        }
        err = set_const(g, n->out, t);
        fw_tensor_unref(t);
        n->dead = true;
        (*count)++;
    }
    fw_set_grad_enabled(grad);
    return err;
}

/* ---- dead code and identities -------------------------------------------- */

static void replace_uses(fw_graph *g, int from, int to)
{
    for (int i = 0; i < g->nnodes; i++)
        for (int k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] == from)
                g->nodes[i].in[k] = to;
    for (int o = 0; o < g->nout; o++)
        if (g->out[o] == from)
            g->out[o] = to;
}

static int dce(fw_graph *g, int *count)
{
    bool *need = calloc((size_t)(g->nvalues ? g->nvalues : 1), sizeof(bool));

    if (need == NULL)
        return fw_error_set(FW_ENOMEM, "graph: dce");
    for (int i = 0; i < g->nnodes; i++) {
        g_node *n = &g->nodes[i];
        if (!n->dead && n->op == G_IDENTITY) {
            replace_uses(g, n->out, n->in[0]);
            n->dead = true;
            (*count)++;
        }
    }
    for (int o = 0; o < g->nout; o++)
        need[g->out[o]] = true;
    for (int i = g->nnodes - 1; i >= 0; i--) {
        g_node *n = &g->nodes[i];
        if (n->dead)
            continue;
        if (!need[n->out]) {
            n->dead = true;
            (*count)++;
            continue;
        }
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                need[n->in[k]] = true;
    }
    /* constants nothing reads any more: drop their memory */
    for (int v = 0; v < g->nvalues; v++)
        if (g->values[v].kind == GV_CONST && !need[v] && g->values[v].konst) {
            fw_tensor_unref(g->values[v].konst);
            g->values[v].konst = NULL;
            g->values[v].kind = GV_INTER;   /* never read: nothing refers to it */
        }
    free(need);
    return 0;
}

/* ---- batch norm into the preceding conv ---------------------------------- */

static bool f32_const(const fw_graph *g, int v, int ndim)
{
    return is_const(g, v) && g->values[v].dtype == FW_FLOAT32 && g->values[v].ndim == ndim;
}

static int fold_bn(fw_graph *g, int *count)
{
    for (int i = 0; i < g->nnodes; i++) {
        g_node *bn = &g->nodes[i], *c;
        const float *w, *b = NULL, *mean, *var, *gamma = NULL, *beta = NULL;
        fw_tensor *nw = NULL, *nb = NULL;
        int64_t oc, per, shp[1];
        int err, iw, ib;

        if (bn->dead || bn->op != G_BATCH_NORM || (c = producer(g, bn->in[0])) == NULL ||
            c->op != G_CONV2D || c->act || sole_reader(g, c->out) != bn)
            continue;
        if (!f32_const(g, c->in[1], 4))
            continue;
        oc = g->values[c->in[1]].shape[0];
        if ((c->nin > 2 && c->in[2] >= 0 && !f32_const(g, c->in[2], 1)) ||
            !f32_const(g, bn->in[1], 1) || !f32_const(g, bn->in[2], 1) ||
            (bn->nin > 3 && bn->in[3] >= 0 && !f32_const(g, bn->in[3], 1)) ||
            (bn->nin > 4 && bn->in[4] >= 0 && !f32_const(g, bn->in[4], 1)))
            continue;
        bool sizes_ok = g->values[bn->in[1]].shape[0] == oc &&
                        g->values[bn->in[2]].shape[0] == oc;
        for (int k = 3; k < bn->nin; k++)
            if (bn->in[k] >= 0 && g->values[bn->in[k]].shape[0] != oc)
                sizes_ok = false;
        if (c->nin > 2 && c->in[2] >= 0 && g->values[c->in[2]].shape[0] != oc)
            sizes_ok = false;
        if (!sizes_ok)
            continue;
        w = fw_tensor_data(g->values[c->in[1]].konst);
        if (c->nin > 2 && c->in[2] >= 0)
            b = fw_tensor_data(g->values[c->in[2]].konst);
        mean = fw_tensor_data(g->values[bn->in[1]].konst);
        var = fw_tensor_data(g->values[bn->in[2]].konst);
        if (bn->nin > 3 && bn->in[3] >= 0)
            gamma = fw_tensor_data(g->values[bn->in[3]].konst);
        if (bn->nin > 4 && bn->in[4] >= 0)
            beta = fw_tensor_data(g->values[bn->in[4]].konst);
        if ((err = fw_empty_like(&nw, g->values[c->in[1]].konst)) < 0)
            return err;
        shp[0] = oc;
        if ((err = fw_tensor_empty_on(&nb, FW_CPU, FW_FLOAT32, shp, 1)) < 0) {
            fw_tensor_unref(nw);
            return err;
        }
        per = fw_tensor_numel(nw) / (oc ? oc : 1);
        {
            float *pw = fw_tensor_data(nw), *pb = fw_tensor_data(nb);
            for (int64_t o = 0; o < oc; o++) {
                double s = (gamma ? gamma[o] : 1.0) / sqrt((double)var[o] + bn->eps);
                for (int64_t k = 0; k < per; k++)
                    pw[o * per + k] = (float)(w[o * per + k] * s);
                pb[o] = (float)(((b ? b[o] : 0.0) - mean[o]) * s + (beta ? beta[o] : 0.0));
            }
        }
        iw = new_const(g, g->values[c->in[1]].name, ".bnfold", nw);
        ib = iw < 0 ? iw : new_const(g, g->values[c->in[1]].name, ".bnfold_bias", nb);
        fw_tensor_unref(nw);
        fw_tensor_unref(nb);
        if (iw < 0)
            return iw;
        if (ib < 0)
            return ib;
        if (c->nin < 3) {
            int *ni = realloc(c->in, 3 * sizeof(int));
            if (ni == NULL)
                return fw_error_set(FW_ENOMEM, "graph: fold_bn");
            c->in = ni;
            c->nin = 3;
        }
        c->in[1] = iw;
        c->in[2] = ib;
        c->out = bn->out;
        bn->dead = true;
        (*count)++;
    }
    return 0;
}

/* ---- matmul + bias -> linear; linear/conv + activation --------------------- */

static int fuse_bias_act(fw_graph *g, int *count)
{
    for (int i = 0; i < g->nnodes; i++) {
        g_node *n = &g->nodes[i], *r;
        if (n->dead)
            continue;
        /* matmul(x, W) + b, or linear(x, W) + b without a bias */
        if (((n->op == G_MATMUL && !n->tx && !n->ty) ||
             (n->op == G_LINEAR && (n->nin < 3 || n->in[2] < 0) && n->act == 0)) &&
            f32_const(g, n->in[1], 2)) {
            r = sole_reader(g, n->out);
            if (r && r->op == G_ADD) {
                int b = r->in[0] == n->out ? r->in[1] : r->in[0];
                int64_t cols = g->values[n->in[1]].shape[1];
                if (r->in[0] != r->in[1] && f32_const(g, b, 1) && g->values[b].shape[0] == cols) {
                    if (n->nin < 3) {
                        int *ni = realloc(n->in, 3 * sizeof(int));
                        if (ni == NULL)
                            return fw_error_set(FW_ENOMEM, "graph: fuse");
                        n->in = ni;
                        n->nin = 3;
                    }
                    n->op = G_LINEAR;
                    n->in[2] = b;
                    n->out = r->out;
                    r->dead = true;
                    (*count)++;
                }
            }
        }
        if ((n->op == G_LINEAR || n->op == G_CONV2D) && n->act == 0) {
            r = sole_reader(g, n->out);
            if (r && (r->op == G_RELU || r->op == G_SIGMOID || r->op == G_TANH)) {
                n->act = r->op;
                n->out = r->out;
                r->dead = true;
                (*count)++;
            }
        }
    }
    return 0;
}

/* ---- elementwise chains ------------------------------------------------------ */

static int fuse_elementwise(fw_graph *g, int *count)
{
    for (int i = 0; i < g->nnodes; i++) {
        g_node *u = &g->nodes[i], *p;
        int add;
        if (u->dead || !(g_chainable(u->op) || u->op == G_EW_CHAIN))
            continue;
        p = producer(g, u->in[0]);
        if (p == NULL || !(g_chainable(p->op) || p->op == G_EW_CHAIN) ||
            sole_reader(g, u->in[0]) != u)
            continue;
        add = u->op == G_EW_CHAIN ? u->nsteps : 1;
        if ((p->op == G_EW_CHAIN ? p->nsteps : 1) + add > FW_GRAPH_MAX_CHAIN)
            continue;
        if (p->op != G_EW_CHAIN) {
            p->steps[0] = fw__graph_node_step(p);
            p->nsteps = 1;
            p->op = G_EW_CHAIN;
        }
        if (u->op == G_EW_CHAIN) {
            memcpy(&p->steps[p->nsteps], u->steps, (size_t)u->nsteps * sizeof(g_step));
            p->nsteps += u->nsteps;
        } else {
            p->steps[p->nsteps++] = fw__graph_node_step(u);
        }
        p->out = u->out;
        u->dead = true;
        (*count)++;
    }
    return 0;
}

int fw_graph_optimize(fw_graph *g, unsigned mask, fw_graph_stats *stats)
{
    fw_graph_stats st = { 0 };
    int err = 0;

    if (g == NULL)
        return fw_error_set(FW_EINVAL, "graph optimize: NULL graph");
    for (int round = 0; round < 4; round++) {
        fw_graph_stats before = st;
        if ((mask & FW_GRAPH_PASS_DCE) && (err = dce(g, &st.removed)) < 0)
            break;
        if ((mask & FW_GRAPH_PASS_CONST_FOLD) && (err = const_fold(g, &st.folded)) < 0)
            break;
        if ((mask & FW_GRAPH_PASS_FOLD_BN) && (err = fold_bn(g, &st.bn_folded)) < 0)
            break;
        if ((mask & FW_GRAPH_PASS_FUSE_BIAS_ACT) &&
            (err = fuse_bias_act(g, &st.bias_act_fused)) < 0)
            break;
        if ((mask & FW_GRAPH_PASS_FUSE_ELEMENTWISE) &&
            (err = fuse_elementwise(g, &st.ew_fused)) < 0)
            break;
        if ((mask & FW_GRAPH_PASS_DCE) && (err = dce(g, &st.removed)) < 0)
            break;
        if (memcmp(&before, &st, sizeof(st)) == 0)
            break;
    }
    if (err == 0)
        err = fw__graph_finalize(g);
    if (stats)
        *stats = st;
    return err;
}

