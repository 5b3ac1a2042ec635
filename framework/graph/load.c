/*
 * load.c - parse and validate a model file into the graph IR (graph.h).
 *
 * Everything read from the file is checked before use: JSON shape of each
 * field, integer ranges, op names and arity, attribute types, value names
 * (defined once, before use), parameters present in the safetensors file.
 * A failure names the node ("graph: node 4 (conv2d): stride must be ...").
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fw/safetensors.h"
#include "gjson.h"
#include "graph_int.h"

/* A dtype of the graph format: the framework's real dtypes (no complex:
 * the runtime's kernels and fusions are real-valued). */
static int graph_dtype(fw_dtype *out, const char *name)
{
    if (fw_dtype_from_name(out, name) < 0)
        return -1;
    return fw_dtype_is_complex(*out) ? -1 : 0;
}

static const struct {
    const char *name;
    int op, min_in, max_in;
} op_table[] = {
    { "identity", G_IDENTITY, 1, 1 },
    { "add", G_ADD, 2, 2 }, { "sub", G_SUB, 2, 2 }, { "mul", G_MUL, 2, 2 },
    { "div", G_DIV, 2, 2 }, { "pow", G_POW, 2, 2 }, { "maximum", G_MAXIMUM, 2, 2 },
    { "minimum", G_MINIMUM, 2, 2 },
    { "add_scalar", G_ADD_S, 1, 1 }, { "sub_scalar", G_SUB_S, 1, 1 },
    { "rsub_scalar", G_RSUB_S, 1, 1 }, { "mul_scalar", G_MUL_S, 1, 1 },
    { "div_scalar", G_DIV_S, 1, 1 }, { "rdiv_scalar", G_RDIV_S, 1, 1 },
    { "pow_scalar", G_POW_S, 1, 1 }, { "rpow_scalar", G_RPOW_S, 1, 1 },
    { "relu", G_RELU, 1, 1 }, { "sigmoid", G_SIGMOID, 1, 1 }, { "tanh", G_TANH, 1, 1 },
    { "exp", G_EXP, 1, 1 }, { "log", G_LOG, 1, 1 }, { "sqrt", G_SQRT, 1, 1 },
    { "rsqrt", G_RSQRT, 1, 1 }, { "abs", G_ABS, 1, 1 }, { "neg", G_NEG, 1, 1 },
    { "square", G_SQUARE, 1, 1 }, { "silu", G_SILU, 1, 1 }, { "sin", G_SIN, 1, 1 },
    { "cos", G_COS, 1, 1 }, { "gelu", G_GELU, 1, 1 }, { "leaky_relu", G_LEAKY_RELU, 1, 1 },
    { "clip", G_CLIP, 1, 1 },
    { "linear", G_LINEAR, 2, 3 }, { "conv2d", G_CONV2D, 2, 3 },
    { "max_pool2d", G_MAX_POOL2D, 1, 1 }, { "avg_pool2d", G_AVG_POOL2D, 1, 1 },
    { "adaptive_avg_pool2d", G_ADAPTIVE_AVG_POOL2D, 1, 1 },
    { "batch_norm", G_BATCH_NORM, 3, 5 }, { "layer_norm", G_LAYER_NORM, 1, 3 },
    { "softmax", G_SOFTMAX, 1, 1 }, { "log_softmax", G_LOG_SOFTMAX, 1, 1 },
    { "matmul", G_MATMUL, 2, 2 }, { "reshape", G_RESHAPE, 1, 1 },
    { "flatten", G_FLATTEN, 1, 1 }, { "squeeze", G_SQUEEZE, 1, 1 },
    { "unsqueeze", G_UNSQUEEZE, 1, 1 }, { "transpose", G_TRANSPOSE, 1, 1 },
    { "sum", G_SUM, 1, 1 }, { "mean", G_MEAN, 1, 1 }, { "max", G_MAX, 1, 1 },
    { "min", G_MIN, 1, 1 }, { "concat", G_CONCAT, 1, FW_GRAPH_MAX_NODE_INPUTS },
    { "cast", G_CAST, 1, 1 },
    { "ew_chain", G_EW_CHAIN, 1, 1 },
};

const char *fw__graph_op_name(int op)
{
    for (size_t i = 0; i < sizeof(op_table) / sizeof(op_table[0]); i++)
        if (op_table[i].op == op)
            return op_table[i].name;
    return "?";
}

/* ---- values ------------------------------------------------------------ */

int fw__graph_add_value(fw_graph *g, const char *name, g_vkind kind)
{
    g_value *v;

    if (g->nvalues >= FW_GRAPH_MAX_VALUES)
        return fw_error_set(FW_EFORMAT, "graph: more than %d values", FW_GRAPH_MAX_VALUES);
    if (g->nvalues == g->capvalues) {
        int cap = g->capvalues ? g->capvalues * 2 : 64;
        g_value *nv = realloc(g->values, (size_t)cap * sizeof(*nv));
        if (nv == NULL)
            return fw_error_set(FW_ENOMEM, "graph: values");
        g->values = nv;
        g->capvalues = cap;
    }
    v = &g->values[g->nvalues];
    memset(v, 0, sizeof(*v));
    if ((v->name = strdup(name)) == NULL)
        return fw_error_set(FW_ENOMEM, "graph: value name");
    v->kind = kind;
    return g->nvalues++;
}

/* Values by name: a small open-addressing table used while loading. */
typedef struct {
    int *slots;
    size_t cap;
    const fw_graph *g;
} vmap;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    while (*s)
        h = (h ^ (unsigned char)*s++) * 1099511628211ull;
    return h;
}

static int vmap_find(const vmap *m, const char *name)
{
    for (size_t i = hash_str(name) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
        int s = m->slots[i];
        if (s < 0)
            return -1;
        if (strcmp(m->g->values[s].name, name) == 0)
            return s;
    }
}

static void vmap_put(vmap *m, int idx)
{
    size_t i = hash_str(m->g->values[idx].name) & (m->cap - 1);
    while (m->slots[i] >= 0)
        i = (i + 1) & (m->cap - 1);
    m->slots[i] = idx;
}

/* ---- JSON field helpers -------------------------------------------------- */

static int bad_node(int i, int op, const char *fmt, const char *a)
{
    return fw_error_set(FW_EFORMAT, "graph: node %d (%s): %s%s", i, fw__graph_op_name(op), fmt,
                        a ? a : "");
}

static bool as_int(const fw_gj *v, int64_t *out, int64_t lo, int64_t hi)
{
    if (v == NULL || v->kind != FW_GJ_NUM || !isfinite(v->num) || v->num != floor(v->num) ||
        v->num < (double)lo || v->num > (double)hi)
        return false;
    *out = (int64_t)v->num;
    return true;
}

static bool valid_name(const fw_gj *v)
{
    return v && v->kind == FW_GJ_STR && v->str[0] && strlen(v->str) < FW_GRAPH_MAX_NAME;
}

/* An int attribute (default used when absent and has_def). */
static int attr_int(const fw_gj *attrs, const char *key, int64_t *out, int64_t lo, int64_t hi,
                    bool has_def, int64_t def, int ni, int op)
{
    const fw_gj *v = fw__gj_get(attrs, key);
    if (v == NULL && has_def) {
        *out = def;
        return 0;
    }
    if (!as_int(v, out, lo, hi))
        return bad_node(ni, op, "missing or out-of-range integer attribute ", key);
    return 0;
}

static int attr_bool(const fw_gj *attrs, const char *key, bool *out, bool def, int ni, int op)
{
    const fw_gj *v = fw__gj_get(attrs, key);
    if (v == NULL) {
        *out = def;
        return 0;
    }
    if (v->kind != FW_GJ_BOOL)
        return bad_node(ni, op, "attribute must be true or false: ", key);
    *out = v->b;
    return 0;
}

static int attr_num(const fw_gj *attrs, const char *key, double *out, bool required,
                    double def, int ni, int op)
{
    const fw_gj *v = fw__gj_get(attrs, key);
    if (v == NULL && !required) {
        *out = def;
        return 0;
    }
    if (v == NULL || v->kind != FW_GJ_NUM)
        return bad_node(ni, op, "missing or non-numeric attribute ", key);
    *out = v->num;
    return 0;
}

/* A fixed-length int array attribute. */
static int attr_ints(const fw_gj *attrs, const char *key, int64_t *out, int n, int64_t lo,
                     int64_t hi, int ni, int op)
{
    const fw_gj *v = fw__gj_get(attrs, key);
    if (v == NULL || v->kind != FW_GJ_ARR || v->n != (size_t)n)
        return bad_node(ni, op, "attribute must be an integer list of the right length: ", key);
    for (int i = 0; i < n; i++)
        if (!as_int(v->items[i], &out[i], lo, hi))
            return bad_node(ni, op, "integer out of range in attribute ", key);
    return 0;
}

/* The variable-length list attribute (shape, perm, axes, normalized_shape);
 * entries may be symbols "$k" when allow_sym. */
static int attr_list(g_node *n, const fw_gj *attrs, const char *key, int64_t lo, int64_t hi,
                     bool allow_sym, int nsyms, int ni)
{
    const fw_gj *v = fw__gj_get(attrs, key);
    if (v == NULL || v->kind != FW_GJ_ARR || v->n > FW_MAX_DIMS)
        return bad_node(ni, n->op, "attribute must be a list of at most 8 integers: ", key);
    n->nlist = (int)v->n;
    for (size_t i = 0; i < v->n; i++) {
        const fw_gj *e = v->items[i];
        n->sym[i] = -1;
        if (allow_sym && e->kind == FW_GJ_STR && e->str[0] == '$') {
            char *end;
            long k;
            errno = 0;
            k = strtol(e->str + 1, &end, 10);
            if (errno || *end || end == e->str + 1 || k < 0 || k >= nsyms)
                return bad_node(ni, n->op, "unknown symbol in attribute ", key);
            n->sym[i] = (int32_t)k;
            n->list[i] = -1;
            n->has_sym = true;
        } else if (!as_int(e, &n->list[i], lo, hi)) {
            return bad_node(ni, n->op, "integer out of range in attribute ", key);
        }
    }
    return 0;
}

static int parse_attrs(g_node *n, const fw_gj *a, int nsyms, int ni)
{
    int op = n->op, err = 0;
    int64_t v = 0;

    if (a != NULL && a->kind != FW_GJ_OBJ)
        return bad_node(ni, op, "attrs must be an object", NULL);
    switch (op) {
    case G_ADD_S: case G_SUB_S: case G_RSUB_S: case G_MUL_S: case G_DIV_S: case G_RDIV_S:
    case G_POW_S: case G_RPOW_S:
        return attr_num(a, "s", &n->s, true, 0, ni, op);
    case G_LEAKY_RELU:
        return attr_num(a, "negative_slope", &n->s, false, 0.01, ni, op);
    case G_GELU:
        return attr_bool(a, "approximate", &n->approximate, false, ni, op);
    case G_CLIP:
        n->has_min = fw__gj_get(a, "min") != NULL;
        n->has_max = fw__gj_get(a, "max") != NULL;
        if ((err = attr_num(a, "min", &n->s, false, 0, ni, op)) < 0)
            return err;
        return attr_num(a, "max", &n->s2, false, 0, ni, op);
    case G_CONV2D:
        if ((err = attr_ints(a, "stride", n->stride, 2, 1, 1 << 12, ni, op)) < 0 ||
            (err = attr_ints(a, "padding", n->pad, 4, 0, 1 << 12, ni, op)) < 0 ||
            (err = attr_ints(a, "dilation", n->dil, 2, 1, 1 << 12, ni, op)) < 0 ||
            (err = attr_int(a, "groups", &n->groups, 1, 1 << 20, true, 1, ni, op)) < 0)
            return err;
        break;
    case G_MAX_POOL2D: case G_AVG_POOL2D:
        if ((err = attr_ints(a, "kernel", n->kernel, 2, 1, 1 << 12, ni, op)) < 0 ||
            (err = attr_ints(a, "stride", n->stride, 2, 1, 1 << 12, ni, op)) < 0 ||
            (err = attr_ints(a, "padding", n->pad, 2, 0, 1 << 12, ni, op)) < 0 ||
            (err = attr_bool(a, "ceil_mode", &n->ceil_mode, false, ni, op)) < 0 ||
            (err = attr_bool(a, "exclusive", &n->exclusive, true, ni, op)) < 0)
            return err;
        break;
    case G_ADAPTIVE_AVG_POOL2D:
        return attr_ints(a, "output_size", n->osize, 2, 1, 1 << 12, ni, op);
    case G_BATCH_NORM:
        if ((err = attr_num(a, "epsilon", &n->eps, false, 1e-5, ni, op)) < 0)
            return err;
        if (!(n->eps >= 0))
            return bad_node(ni, op, "epsilon must be >= 0", NULL);
        break;
    case G_LAYER_NORM:
        if ((err = attr_num(a, "epsilon", &n->eps, false, 1e-5, ni, op)) < 0 ||
            (err = attr_list(n, a, "normalized_shape", 1, (int64_t)1 << 40, false, 0, ni)) < 0)
            return err;
        if (n->nlist < 1 || !(n->eps >= 0))
            return bad_node(ni, op, "bad normalized_shape or epsilon", NULL);
        break;
    case G_SOFTMAX: case G_LOG_SOFTMAX: case G_CONCAT:
        if ((err = attr_int(a, "axis", &v, -FW_MAX_DIMS, FW_MAX_DIMS - 1, op != G_CONCAT, -1,
                            ni, op)) < 0)
            return err;
        n->axis = (int)v;
        break;
    case G_MATMUL:
        if ((err = attr_bool(a, "transpose_x", &n->tx, false, ni, op)) < 0 ||
            (err = attr_bool(a, "transpose_y", &n->ty, false, ni, op)) < 0)
            return err;
        break;
    case G_RESHAPE:
        return attr_list(n, a, "shape", -1, (int64_t)1 << 40, true, nsyms, ni);
    case G_FLATTEN:
        if ((err = attr_int(a, "start_axis", &v, -FW_MAX_DIMS, FW_MAX_DIMS - 1, true, 0, ni,
                            op)) < 0)
            return err;
        n->start = (int)v;
        if ((err = attr_int(a, "stop_axis", &v, -FW_MAX_DIMS, FW_MAX_DIMS - 1, true, -1, ni,
                            op)) < 0)
            return err;
        n->stop = (int)v;
        break;
    case G_SQUEEZE: case G_UNSQUEEZE:
        return attr_list(n, a, "axes", -FW_MAX_DIMS, FW_MAX_DIMS, false, 0, ni);
    case G_TRANSPOSE:
        return attr_list(n, a, "perm", -FW_MAX_DIMS, FW_MAX_DIMS - 1, false, 0, ni);
    case G_SUM: case G_MEAN: case G_MAX: case G_MIN:
        if ((err = attr_list(n, a, "axes", -FW_MAX_DIMS, FW_MAX_DIMS - 1, false, 0, ni)) < 0)
            return err;
        return attr_bool(a, "keepdim", &n->keepdim, false, ni, op);
    case G_CAST: {
        const fw_gj *d = fw__gj_get(a, "dtype");
        if (d == NULL || d->kind != FW_GJ_STR || graph_dtype(&n->dtype, d->str) < 0)
            return bad_node(ni, op, "unknown dtype", NULL);
        fw_error_clear();
        break;
    }
    case G_EW_CHAIN:
        return bad_node(ni, op, "ew_chain is internal to the runtime", NULL);
    default:
        break;
    }
    return 0;
}

/* ---- the model ----------------------------------------------------------- */

static int parse_shape(const fw_gj *s, int64_t *shape, int *ndim, bool dyn_ok)
{
    if (s == NULL || s->kind != FW_GJ_ARR || s->n > FW_MAX_DIMS)
        return -1;
    for (size_t i = 0; i < s->n; i++)
        if (!as_int(s->items[i], &shape[i], dyn_ok ? -1 : 0, (int64_t)1 << 40))
            return -1;
    *ndim = (int)s->n;
    return 0;
}

static int parse_inputs(fw_graph *g, const fw_gj *ins, vmap *m)
{
    if (ins == NULL || ins->kind != FW_GJ_ARR || ins->n < 1 || ins->n > FW_GRAPH_MAX_IO)
        return fw_error_set(FW_EFORMAT, "graph: \"inputs\" must list 1 to %d inputs",
                            FW_GRAPH_MAX_IO);
    for (size_t i = 0; i < ins->n; i++) {
        const fw_gj *e = ins->items[i], *name = fw__gj_get(e, "name");
        const fw_gj *dt = fw__gj_get(e, "dtype");
        g_value *v;
        int idx;

        if (!valid_name(name) || dt == NULL || dt->kind != FW_GJ_STR)
            return fw_error_set(FW_EFORMAT, "graph: input %zu needs a name and a dtype", i);
        if (vmap_find(m, name->str) >= 0)
            return fw_error_set(FW_EFORMAT, "graph: input name '%s' repeated", name->str);
        if ((idx = fw__graph_add_value(g, name->str, GV_INPUT)) < 0)
            return idx;
        v = &g->values[idx];
        if (graph_dtype(&v->dtype, dt->str) < 0)
            return fw_error_set(FW_EFORMAT, "graph: input '%s': unknown dtype", name->str);
        if (parse_shape(fw__gj_get(e, "shape"), v->shape, &v->ndim, true) < 0)
            return fw_error_set(FW_EFORMAT, "graph: input '%s': bad shape", name->str);
        for (int d = 0; d < v->ndim; d++)
            if (v->shape[d] < 0) {
                g->sym_input[g->nsyms] = (int)i;
                g->sym_axis[g->nsyms++] = d;
            }
        g->in[g->nin++] = idx;
        vmap_put(m, idx);
    }
    return 0;
}

/* The value an input name refers to: defined earlier, or a parameter. */
static int resolve(fw_graph *g, vmap *m, fw_safetensors *st, const char *name, int ni, int op)
{
    int idx = vmap_find(m, name), err;
    fw_tensor *t = NULL;
    g_value *v;

    if (idx >= 0)
        return idx;
    if (fw_safetensors_find(st, name) < 0)
        return fw_error_set(FW_EFORMAT, "graph: node %d (%s): input '%s' is neither defined "
                            "earlier nor a parameter", ni, fw__graph_op_name(op), name);
    if ((err = fw_safetensors_get(&t, st, name)) < 0)
        return err;
    if ((idx = fw__graph_add_value(g, name, GV_CONST)) < 0) {
        fw_tensor_unref(t);
        return idx;
    }
    v = &g->values[idx];
    v->konst = t;
    v->dtype = fw_tensor_dtype(t);
    v->ndim = fw_tensor_ndim(t);
    memcpy(v->shape, fw_tensor_shape(t), (size_t)v->ndim * sizeof(int64_t));
    vmap_put(m, idx);
    return idx;
}

static int parse_nodes(fw_graph *g, const fw_gj *nodes, vmap *m, fw_safetensors *st)
{
    if (nodes == NULL || nodes->kind != FW_GJ_ARR || nodes->n > FW_GRAPH_MAX_NODES)
        return fw_error_set(FW_EFORMAT, "graph: \"nodes\" must be a list of at most %d nodes",
                            FW_GRAPH_MAX_NODES);
    if ((g->nodes = calloc(nodes->n ? nodes->n : 1, sizeof(g_node))) == NULL)
        return fw_error_set(FW_ENOMEM, "graph: nodes");
    g->capnodes = (int)(nodes->n ? nodes->n : 1);
    for (size_t i = 0; i < nodes->n; i++) {
        const fw_gj *e = nodes->items[i], *opn = fw__gj_get(e, "op");
        const fw_gj *ins = fw__gj_get(e, "inputs"), *outs = fw__gj_get(e, "outputs");
        g_node *n = &g->nodes[g->nnodes];
        int op = -1, min_in = 0, max_in = 0, err, idx;

        if (opn == NULL || opn->kind != FW_GJ_STR)
            return fw_error_set(FW_EFORMAT, "graph: node %zu has no op", i);
        for (size_t k = 0; k < sizeof(op_table) / sizeof(op_table[0]); k++)
            if (strcmp(op_table[k].name, opn->str) == 0) {
                op = op_table[k].op;
                min_in = op_table[k].min_in;
                max_in = op_table[k].max_in;
            }
        if (op < 0)
            return fw_error_set(FW_EUNSUPPORTED, "graph: node %zu: unknown op '%.64s'", i,
                                opn->str);
        n->op = op;
        g->nnodes++;
        if (ins == NULL || ins->kind != FW_GJ_ARR || ins->n < (size_t)min_in ||
            ins->n > (size_t)max_in)
            return bad_node((int)i, op, "wrong number of inputs", NULL);
        if ((n->in = malloc(ins->n * sizeof(int))) == NULL)
            return fw_error_set(FW_ENOMEM, "graph: node inputs");
        n->nin = (int)ins->n;
        for (size_t k = 0; k < ins->n; k++) {
            const fw_gj *s = ins->items[k];
            if (s->kind != FW_GJ_STR || strlen(s->str) >= FW_GRAPH_MAX_NAME)
                return bad_node((int)i, op, "inputs must be value names", NULL);
            /* "" marks an absent optional input (bias, weight); never the first */
            if (s->str[0] == '\0') {
                if (k == 0 || (int)k < min_in)
                    return bad_node((int)i, op, "a required input is missing", NULL);
                n->in[k] = -1;
                continue;
            }
            if ((idx = resolve(g, m, st, s->str, (int)i, op)) < 0)
                return idx;
            n->in[k] = idx;
        }
        if (op == G_BATCH_NORM && (n->in[1] < 0 || n->in[2] < 0))
            return bad_node((int)i, op, "running mean and variance are required", NULL);
        if ((err = parse_attrs(n, fw__gj_get(e, "attrs"), g->nsyms, (int)i)) < 0)
            return err;
        if (outs == NULL || outs->kind != FW_GJ_ARR || outs->n != 1 || !valid_name(outs->items[0]))
            return bad_node((int)i, op, "needs exactly one named output", NULL);
        if (vmap_find(m, outs->items[0]->str) >= 0 ||
            fw_safetensors_find(st, outs->items[0]->str) >= 0)
            return bad_node((int)i, op, "output name already defined: ", outs->items[0]->str);
        if ((idx = fw__graph_add_value(g, outs->items[0]->str, GV_INTER)) < 0)
            return idx;
        n->out = idx;
        vmap_put(m, idx);
    }
    return 0;
}

static int parse_outputs(fw_graph *g, const fw_gj *outs, vmap *m)
{
    if (outs == NULL || outs->kind != FW_GJ_ARR || outs->n < 1 || outs->n > FW_GRAPH_MAX_IO)
        return fw_error_set(FW_EFORMAT, "graph: \"outputs\" must list 1 to %d outputs",
                            FW_GRAPH_MAX_IO);
    for (size_t i = 0; i < outs->n; i++) {
        const fw_gj *name = fw__gj_get(outs->items[i], "name");
        const fw_gj *val = fw__gj_get(outs->items[i], "value");
        int idx;
        if (!valid_name(name) || !valid_name(val) || (idx = vmap_find(m, val->str)) < 0)
            return fw_error_set(FW_EFORMAT, "graph: output %zu must name a defined value", i);
        for (size_t k = 0; k < i; k++)
            if (strcmp(g->out_names[k], name->str) == 0)
                return fw_error_set(FW_EFORMAT, "graph: output name '%s' repeated", name->str);
        g->out[i] = idx;
        if ((g->out_names[i] = strdup(name->str)) == NULL)
            return fw_error_set(FW_ENOMEM, "graph: output name");
        g->nout = (int)i + 1;
    }
    return 0;
}

int fw_graph_load_memory(fw_graph **out, const void *model, size_t model_len,
                         const void *params, size_t params_len)
{
    fw_gj_doc *doc = NULL;
    fw_safetensors *st = NULL;
    fw_graph *g = NULL;
    vmap m = { 0 };
    const fw_gj *root, *fmt, *ver;
    int64_t version;
    int err;

    *out = NULL;
    if (model == NULL || params == NULL)
        return fw_error_set(FW_EINVAL, "graph: NULL model or parameters");
    if (model_len > FW_GRAPH_MAX_MODEL_BYTES)
        return fw_error_set(FW_EFORMAT, "graph: model file over %u bytes",
                            FW_GRAPH_MAX_MODEL_BYTES);
    if ((err = fw_safetensors_open_memory(&st, params, params_len)) < 0)
        return fw_error_set(err, "graph: parameters: %s", fw_error_last());
    if ((err = fw__gj_parse(&doc, model, model_len)) < 0)
        goto done;
    root = fw__gj_root(doc);
    fmt = fw__gj_get(root, "format");
    ver = fw__gj_get(root, "version");
    if (fmt == NULL || fmt->kind != FW_GJ_STR || strcmp(fmt->str, "eddy-graph") != 0) {
        err = fw_error_set(FW_EFORMAT, "graph: not an Eddy graph (\"format\" must be "
                           "\"eddy-graph\")");
        goto done;
    }
    if (!as_int(ver, &version, 1, 1)) {
        err = fw_error_set(FW_EUNSUPPORTED, "graph: unsupported format version");
        goto done;
    }
    if ((g = calloc(1, sizeof(*g))) == NULL) {
        err = fw_error_set(FW_ENOMEM, "graph");
        goto done;
    }
    atomic_init(&g->refs, 1);
    {
        const fw_gj *nodes = fw__gj_get(root, "nodes");
        size_t want = 2 * (fw_safetensors_count(st) + FW_GRAPH_MAX_IO +
                           (nodes && nodes->kind == FW_GJ_ARR ? nodes->n : 0)) + 16;
        m.cap = 64;
        while (m.cap < want)
            m.cap *= 2;
        m.g = g;
        if ((m.slots = malloc(m.cap * sizeof(int))) == NULL) {
            err = fw_error_set(FW_ENOMEM, "graph: name table");
            goto done;
        }
        memset(m.slots, 0xff, m.cap * sizeof(int));
    }
    if ((err = parse_inputs(g, fw__gj_get(root, "inputs"), &m)) < 0 ||
        (err = parse_nodes(g, fw__gj_get(root, "nodes"), &m, st)) < 0 ||
        (err = parse_outputs(g, fw__gj_get(root, "outputs"), &m)) < 0 ||
        (err = fw__graph_finalize(g)) < 0)
        goto done;
    *out = g;
    g = NULL;
done:
    free(m.slots);
    fw_graph_free(g);
    fw__gj_free(doc);
    fw_safetensors_close(st);
    return err;
}

static int read_file(char **buf, size_t *len, const char *path, size_t max)
{
    struct stat sb;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    size_t got = 0;

    *buf = NULL;
    if (fd < 0)
        return fw_error_set(FW_EIO, "graph: cannot open %s: %s", path, strerror(errno));
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return fw_error_set(FW_EIO, "graph: %s is not a regular file", path);
    }
    if ((uint64_t)sb.st_size > max) {
        close(fd);
        return fw_error_set(FW_EFORMAT, "graph: %s is over %zu bytes", path, max);
    }
    if ((*buf = malloc((size_t)sb.st_size + 1)) == NULL) {
        close(fd);
        return fw_error_set(FW_ENOMEM, "graph: reading %s", path);
    }
    while (got < (size_t)sb.st_size) {
        ssize_t r = read(fd, *buf + got, (size_t)sb.st_size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *len = got;
    return 0;
}

int fw_graph_load(fw_graph **out, const char *model_path, const char *params_path)
{
    char *model = NULL, *params = NULL;
    size_t mlen = 0, plen = 0;
    int err;

    *out = NULL;
    if (model_path == NULL || params_path == NULL)
        return fw_error_set(FW_EINVAL, "graph: NULL path");
    if ((err = read_file(&model, &mlen, model_path, FW_GRAPH_MAX_MODEL_BYTES)) < 0 ||
        (err = read_file(&params, &plen, params_path, (size_t)1 << 40)) < 0)
        goto done;
    err = fw_graph_load_memory(out, model, mlen, params, plen);
done:
    free(model);
    free(params);
    return err;
}

fw_graph *fw_graph_ref(fw_graph *g)
{
    if (g)
        atomic_fetch_add(&g->refs, 1);
    return g;
}

void fw_graph_free(fw_graph *g)
{
    if (g == NULL || atomic_fetch_sub(&g->refs, 1) != 1)
        return;
    for (int i = 0; i < g->nnodes; i++) {
        free(g->nodes[i].in);
        free(g->nodes[i].frees);
    }
    free(g->nodes);
    for (int i = 0; i < g->nvalues; i++) {
        free(g->values[i].name);
        fw_tensor_unref(g->values[i].konst);
    }
    free(g->values);
    for (int i = 0; i < g->nout; i++)
        free(g->out_names[i]);
    free(g);
}

int fw_graph_num_nodes(const fw_graph *g)
{
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
        n += !g->nodes[i].dead;
    return n;
}

const char *fw_graph_node_op(const fw_graph *g, int i)
{
    for (int k = 0; k < g->nnodes; k++)
        if (!g->nodes[k].dead && i-- == 0)
            return fw__graph_op_name(g->nodes[k].op);
    return NULL;
}

int fw_graph_num_inputs(const fw_graph *g) { return g->nin; }
int fw_graph_num_outputs(const fw_graph *g) { return g->nout; }

const char *fw_graph_input_name(const fw_graph *g, int i)
{
    return i >= 0 && i < g->nin ? g->values[g->in[i]].name : NULL;
}

const char *fw_graph_output_name(const fw_graph *g, int i)
{
    return i >= 0 && i < g->nout ? g->out_names[i] : NULL;
}

fw_dtype fw_graph_input_dtype(const fw_graph *g, int i)
{
    return g->values[g->in[i]].dtype;
}

int fw_graph_input_shape(const fw_graph *g, int i, int64_t shape[FW_MAX_DIMS])
{
    const g_value *v = &g->values[g->in[i]];
    memcpy(shape, v->shape, (size_t)v->ndim * sizeof(int64_t));
    return v->ndim;
}
