/* autograd.c - autograd nodes (fw_op.h) and the backward engine.
 *
 * The graph is define-by-run: every op that needs grad records a node that
 * holds edges to the nodes (or leaves) its inputs came from. Tensors own a
 * reference to their grad_fn; nodes own references to upstream nodes and to
 * the leaves they feed, so the graph lives exactly as long as some tensor
 * produced in it. backward() sorts the reachable nodes topologically
 * (Kahn's algorithm over dependency counts: iterative, so deep graphs do
 * not overflow the stack) and runs each node once all gradients for its
 * outputs have arrived.
 */
#include "fw_alloc.h"
#include "fw_backend.h"
#include "fw_int.h"
#include "fw_op.h"

#include <stdlib.h>
#include <string.h>

typedef struct edge {
    struct fw_node *fn;     /* producer of the input (owned ref) */
    int out_idx;
    fw_tensor *leaf;        /* leaf that accumulates the grad (owned ref) */
} edge;

typedef struct meta {
    int64_t shape[FW_MAX_DIMS];
    int ndim;
    fw_dtype dtype;
    fw_device device;
} meta;

struct fw_node {
    atomic_int refs;
    const char *name;
    fw_backward_fn backward;
    int n_in, n_out, n_saved;
    bool released;
    size_t block;
    size_t attr_size;
    edge *edges;
    meta *in_meta;
    meta *out_meta;
    fw_tensor **saved;
    fw_tensor **grads;       /* per output, during backward */
    void *attr;
    /* traversal state */
    unsigned epoch;
    int deps;
    struct fw_node *next;    /* free list / ready stack link */
};

static _Thread_local bool grad_off;

bool fw_grad_enabled(void) { return !grad_off; }

bool fw_set_grad_enabled(bool enabled)
{
    bool was = !grad_off;
    grad_off = !enabled;
    return was;
}

bool fw_op_needs_grad(int n, fw_tensor *const *inputs)
{
    if (grad_off)
        return false;
    for (int i = 0; i < n; i++)
        if (inputs[i] && !inputs[i]->stop_gradient)
            return true;
    return false;
}

/* ---- node lifetime --------------------------------------------------------------- */

static _Thread_local fw_node *pending;   /* nodes whose refs hit 0, to destroy */
static _Thread_local bool draining;

static void node_destroy(fw_node *n)
{
    for (int i = 0; i < n->n_in; i++) {
        fw__node_unref(n->edges[i].fn);
        fw_tensor_unref(n->edges[i].leaf);
    }
    for (int i = 0; i < n->n_saved; i++)
        fw_tensor_unref(n->saved[i]);
    for (int i = 0; i < n->n_out; i++)
        fw_tensor_unref(n->grads[i]);
    fw__small_free(n, n->block);
}

void fw__node_ref(fw_node *n)
{
    if (n)
        atomic_fetch_add_explicit(&n->refs, 1, memory_order_relaxed);
}

void fw__node_unref(fw_node *n)
{
    if (n == NULL || atomic_fetch_sub_explicit(&n->refs, 1, memory_order_acq_rel) != 1)
        return;
    /* Destroying a node drops upstream nodes; do it with a work list rather
     * than recursion so a graph of a million ops frees without a deep stack. */
    n->next = pending;
    pending = n;
    if (draining)
        return;
    draining = true;
    while ((n = pending) != NULL) {
        pending = n->next;
        node_destroy(n);
    }
    draining = false;
}

static size_t align16(size_t n) { return (n + 15) & ~(size_t)15; }

static void set_meta(meta *m, const fw_tensor *t)
{
    m->ndim = t->ndim;
    m->dtype = t->dtype;
    m->device = t->device;
    memcpy(m->shape, t->shape, sizeof(int64_t) * (size_t)t->ndim);
}

int fw_node_record(fw_node **out, const char *name, fw_backward_fn backward,
                   int n_in, fw_tensor *const *inputs, int n_out,
                   fw_tensor *const *outputs, int n_saved, size_t attr_size)
{
    fw_node *n;
    size_t sz, off_edges, off_in, off_out, off_saved, off_grads, off_attr, block;
    char *base;

    *out = NULL;
    if (!fw_op_needs_grad(n_in, inputs))
        return 0;
    if (n_in < 0 || n_out < 1 || n_saved < 0)
        return fw_error_set(FW_EINTERNAL, "%s: bad node arity", name);
    sz = align16(sizeof(fw_node));
    off_edges = sz;  sz += align16(sizeof(edge) * (size_t)n_in);
    off_in = sz;     sz += align16(sizeof(meta) * (size_t)n_in);
    off_out = sz;    sz += align16(sizeof(meta) * (size_t)n_out);
    off_saved = sz;  sz += align16(sizeof(fw_tensor *) * (size_t)n_saved);
    off_grads = sz;  sz += align16(sizeof(fw_tensor *) * (size_t)n_out);
    off_attr = sz;   sz += align16(attr_size);
    if ((base = fw__small_alloc(sz, &block)) == NULL)
        return fw_error_set(FW_ENOMEM, "%s: out of memory recording the graph", name);
    n = (fw_node *)base;
    atomic_init(&n->refs, 0);
    n->name = name;
    n->backward = backward;
    n->n_in = n_in;
    n->n_out = n_out;
    n->n_saved = n_saved;
    n->released = false;
    n->block = block;
    n->attr_size = attr_size;
    n->edges = (edge *)(base + off_edges);
    n->in_meta = (meta *)(base + off_in);
    n->out_meta = (meta *)(base + off_out);
    n->saved = (fw_tensor **)(base + off_saved);
    n->grads = (fw_tensor **)(base + off_grads);
    n->attr = attr_size ? base + off_attr : NULL;
    n->epoch = 0;
    n->deps = 0;
    n->next = NULL;
    if (attr_size)
        memset(n->attr, 0, attr_size);
    memset(n->saved, 0, sizeof(fw_tensor *) * (size_t)n_saved);
    memset(n->grads, 0, sizeof(fw_tensor *) * (size_t)n_out);
    for (int i = 0; i < n_in; i++) {
        fw_tensor *x = inputs[i];
        edge *e = &n->edges[i];
        e->fn = NULL;
        e->leaf = NULL;
        e->out_idx = 0;
        if (x == NULL) {
            n->in_meta[i].ndim = 0;
            n->in_meta[i].dtype = FW_FLOAT32;
            n->in_meta[i].device = FW_CPU;
            continue;
        }
        set_meta(&n->in_meta[i], x);
        if (x->stop_gradient)
            continue;
        if (x->grad_fn) {
            e->fn = x->grad_fn;
            e->out_idx = x->out_idx;
            fw__node_ref(e->fn);
        } else {
            e->leaf = fw_tensor_ref(x);
        }
    }
    for (int j = 0; j < n_out; j++) {
        fw_tensor *y = outputs[j];
        set_meta(&n->out_meta[j], y);
        fw__node_unref(y->grad_fn);
        y->grad_fn = n;
        y->out_idx = j;
        y->stop_gradient = false;
        fw__node_ref(n);
    }
    *out = n;
    return 0;
}

int fw_node_save(fw_node *n, int slot, fw_tensor *t)
{
    fw_tensor *keep = NULL;
    int err;

    if (slot < 0 || slot >= n->n_saved)
        return fw_error_set(FW_EINTERNAL, "%s: save slot %d out of range", n->name, slot);
    if (t && t->grad_fn == n) {
        /* An output of this node: keep a detached alias (no cycle). */
        if ((err = fw__tensor_view(&keep, t, t->shape, t->strides, t->ndim, t->offset)) < 0)
            return err;
    } else {
        keep = fw_tensor_ref(t);
    }
    fw_tensor_unref(n->saved[slot]);
    n->saved[slot] = keep;
    return 0;
}

fw_tensor *fw_node_saved(const fw_node *n, int slot)
{
    return slot >= 0 && slot < n->n_saved ? n->saved[slot] : NULL;
}

void *fw_node_attr(fw_node *n) { return n->attr; }

bool fw_node_needs_grad(const fw_node *n, int i)
{
    return i >= 0 && i < n->n_in && (n->edges[i].fn || n->edges[i].leaf);
}

const int64_t *fw_node_input_shape(const fw_node *n, int i, int *ndim)
{
    *ndim = n->in_meta[i].ndim;
    return n->in_meta[i].shape;
}

fw_dtype fw_node_input_dtype(const fw_node *n, int i) { return n->in_meta[i].dtype; }
int fw_node_n_inputs(const fw_node *n) { return n->n_in; }
const char *fw_node_name(const fw_node *n) { return n->name; }
fw_node *fw_tensor_grad_fn(const fw_tensor *t) { return t->grad_fn; }

/* ---- tensor-level autograd state ---------------------------------------------------- */

bool fw_tensor_stop_gradient(const fw_tensor *t) { return t->stop_gradient; }

int fw_tensor_set_stop_gradient(fw_tensor *t, bool stop)
{
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "set_stop_gradient: tensor is NULL");
    if (!stop && !fw_dtype_is_float(t->dtype))
        return fw_error_set(FW_EDTYPE, "set_stop_gradient: only float tensors can require "
                                       "grad, not %s", fw_dtype_name(t->dtype));
    t->stop_gradient = stop;
    return 0;
}

bool fw_tensor_is_leaf(const fw_tensor *t) { return t->grad_fn == NULL; }

fw_tensor *fw_tensor_grad(const fw_tensor *t) { return t->grad; }

int fw_tensor_set_grad(fw_tensor *t, fw_tensor *g)
{
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "set_grad: tensor is NULL");
    if (g) {
        if (!fw_shape_equal(t->shape, t->ndim, g->shape, g->ndim)) {
            char a[128], b[128];
            return fw_error_set(FW_ESHAPE, "set_grad: grad shape %s differs from tensor shape %s",
                                fw_tensor_shape_str(a, sizeof(a), g),
                                fw_tensor_shape_str(b, sizeof(b), t));
        }
        if (g->dtype != t->dtype)
            return fw_error_set(FW_EDTYPE, "set_grad: grad dtype %s differs from %s",
                                fw_dtype_name(g->dtype), fw_dtype_name(t->dtype));
    }
    fw_tensor_ref(g);
    fw_tensor_unref(t->grad);
    t->grad = g;
    return 0;
}

void fw_tensor_clear_grad(fw_tensor *t, bool set_to_zero)
{
    if (t == NULL || t->grad == NULL)
        return;
    if (set_to_zero) {
        fw_tensor_fill(t->grad, 0.0);
    } else {
        fw_tensor_unref(t->grad);
        t->grad = NULL;
    }
}

/* ---- backward ------------------------------------------------------------------------ */

int fw__copy_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt);

/* leaf->grad += g (takes g). */
static int accumulate_leaf(fw_tensor *leaf, fw_tensor *g)
{
    int err = 0;

    if (leaf->grad == NULL) {
        if (g->dtype == leaf->dtype && fw_tensor_is_contiguous(g) &&
            atomic_load(&g->refs) == 1 && atomic_load(&g->storage->refs) == 1 &&
            g->offset == 0) {
            leaf->grad = g;              /* nobody else sees g: keep it */
            return 0;
        }
        err = fw__copy_cast(&leaf->grad, g, leaf->dtype);
        fw_tensor_unref(g);
        return err;
    }
    const fw_backend *b = fw_backend_require(leaf->device, "backward");
    if (b == NULL) {
        fw_tensor_unref(g);
        return FW_EDEVICE;
    }
    fw_tensor *gc = g;
    if (g->dtype != leaf->dtype) {
        err = fw__copy_cast(&gc, g, leaf->dtype);
        fw_tensor_unref(g);
        if (err < 0)
            return err;
    }
    if (!fw_tensor_is_contiguous(leaf->grad)) {   /* user-set view: make it ours */
        fw_tensor *d;
        if ((err = fw_op_dense(&d, leaf->grad)) < 0) {
            fw_tensor_unref(gc);
            return err;
        }
        fw_tensor_unref(leaf->grad);
        leaf->grad = d;
    }
    if (leaf->dtype == FW_FLOAT16 || leaf->dtype == FW_BFLOAT16) {
        /* no half kernels: add in float32, write back in place */
        fw_tensor *sum = NULL;
        if ((err = fw_add(&sum, leaf->grad, gc)) == 0) {
            fw_kview o, a;
            fw__kview(&o, leaf->grad);
            fw__kview(&a, sum);
            if (leaf->grad->numel > 0)
                err = b->copy_strided(&o, &a);
        }
        fw_tensor_unref(sum);
        fw_tensor_unref(gc);
        return err;
    }
    fw_kview o, a;
    fw__kview(&o, leaf->grad);
    fw__kview(&a, gc);
    if (leaf->grad->numel > 0)
        err = b->binary(FW_BIN_ADD, &o, &o, &a);
    fw_tensor_unref(gc);
    return err;
}

/* node->grads[idx] += g (takes g). */
static int accumulate_node(fw_node *n, int idx, fw_tensor *g)
{
    fw_tensor *sum;
    int err;

    if (n->grads[idx] == NULL) {
        n->grads[idx] = g;
        return 0;
    }
    err = fw_add(&sum, n->grads[idx], g);
    fw_tensor_unref(g);
    if (err < 0)
        return err;
    fw_tensor_unref(n->grads[idx]);
    n->grads[idx] = sum;
    return 0;
}

static unsigned next_epoch(void)
{
    static atomic_uint epoch;
    unsigned e = atomic_fetch_add(&epoch, 1) + 1;
    if (e == 0)
        e = atomic_fetch_add(&epoch, 1) + 1;
    return e;
}

typedef struct nodelist { fw_node **v; size_t n, cap; } nodelist;

static int push(nodelist *l, fw_node *x)
{
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 64;
        fw_node **v = realloc(l->v, cap * sizeof(*v));
        if (v == NULL)
            return fw_error_set(FW_ENOMEM, "backward: out of memory");
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

static int run_graph(fw_node *root, int root_idx, fw_tensor *root_grad, bool retain)
{
    nodelist all = {0}, stack = {0};
    unsigned epoch = next_epoch();
    int err = 0;
    fw_tensor *gin_small[16];
    fw_tensor **gin = NULL;

    /* 1. collect reachable nodes; count dependencies */
    root->epoch = epoch;
    root->deps = 0;
    if ((err = push(&all, root)) < 0 || (err = push(&stack, root)) < 0)
        goto out_nograds;
    while (stack.n > 0) {
        fw_node *n = stack.v[--stack.n];
        if (n->released) {
            err = fw_error_set(FW_EGRAD, "backward: the graph through '%s' was already freed "
                                         "by an earlier backward; pass retain_graph=true to "
                                         "the first backward to run it twice", n->name);
            goto out_nograds;
        }
        for (int i = 0; i < n->n_in; i++) {
            fw_node *u = n->edges[i].fn;
            if (u == NULL)
                continue;
            if (u->epoch != epoch) {
                u->epoch = epoch;
                u->deps = 0;
                if ((err = push(&all, u)) < 0 || (err = push(&stack, u)) < 0)
                    goto out_nograds;
            }
            u->deps++;
        }
    }

    /* 2. Kahn: run nodes whose consumers have all delivered */
    root->grads[root_idx] = root_grad;
    root_grad = NULL;
    stack.n = 0;
    push(&stack, root);                     /* capacity exists */
    while (stack.n > 0) {
        fw_node *n = stack.v[--stack.n];
        bool any = false;
        for (int j = 0; j < n->n_out; j++)
            any |= n->grads[j] != NULL;
        gin = n->n_in <= 16 ? gin_small : calloc((size_t)n->n_in, sizeof(*gin));
        if (gin == NULL) {
            err = fw_error_set(FW_ENOMEM, "backward: out of memory");
            goto out;
        }
        memset(gin, 0, sizeof(*gin) * (size_t)n->n_in);
        if (any) {
            for (int j = 0; j < n->n_out && err == 0; j++)
                if (n->grads[j] == NULL)
                    err = fw_op_zeros(&n->grads[j], n->out_meta[j].device, n->out_meta[j].dtype,
                                      n->out_meta[j].shape, n->out_meta[j].ndim);
            if (err == 0)
                err = n->backward(n, gin, n->grads);
        }
        for (int j = 0; j < n->n_out; j++) {
            fw_tensor_unref(n->grads[j]);
            n->grads[j] = NULL;
        }
        for (int i = 0; i < n->n_in; i++) {
            edge *e = &n->edges[i];
            fw_tensor *g = gin[i];
            gin[i] = NULL;
            if (g && err == 0 && !(e->fn || e->leaf)) {
                fw_tensor_unref(g);
                g = NULL;
            }
            if (g && err == 0) {
                meta *m = &n->in_meta[i];
                if (!fw_shape_equal(g->shape, g->ndim, m->shape, m->ndim)) {
                    char a[128], b[128];
                    err = fw_error_set(FW_EINTERNAL, "backward of '%s' gave a gradient of shape "
                                       "%s for input %d of shape %s", n->name,
                                       fw_tensor_shape_str(a, sizeof(a), g), i,
                                       fw_shape_format(b, sizeof(b), m->shape, m->ndim));
                } else if (e->fn) {
                    err = accumulate_node(e->fn, e->out_idx, g);
                    g = NULL;
                } else {
                    err = accumulate_leaf(e->leaf, g);
                    g = NULL;
                }
            }
            fw_tensor_unref(g);
            if (e->fn && --e->fn->deps == 0 && err == 0)
                err = push(&stack, e->fn);
        }
        if (gin != gin_small)
            free(gin);
        gin = NULL;
        if (!retain) {
            /* Only a node that dropped saved tensors cannot run again
             * (like PyTorch): add, views, casts keep working. */
            for (int s = 0; s < n->n_saved; s++) {
                if (n->saved[s])
                    n->released = true;
                fw_tensor_unref(n->saved[s]);
                n->saved[s] = NULL;
            }
        }
        if (err < 0)
            goto out;
    }
out:
    for (size_t k = 0; k < all.n; k++)
        for (int j = 0; j < all.v[k]->n_out; j++) {
            fw_tensor_unref(all.v[k]->grads[j]);
            all.v[k]->grads[j] = NULL;
        }
out_nograds:
    fw_tensor_unref(root_grad);
    free(all.v);
    free(stack.v);
    return err;
}

int fw_tensor_backward(fw_tensor *t, fw_tensor *grad, bool retain_graph)
{
    fw_tensor *g = NULL;
    char a[128], b[128];
    int err;

    if (t == NULL)
        return fw_error_set(FW_EINVAL, "backward: tensor is NULL");
    if (t->stop_gradient)
        return fw_error_set(FW_EGRAD, "backward: tensor has stop_gradient=true and no grad "
                                      "history (did an input need grad? was no-grad mode on?)");
    if (grad == NULL) {
        if (t->numel != 1)
            return fw_error_set(FW_ESHAPE, "backward: grad must be given for a tensor of shape "
                                "%s (only 1-element tensors default to ones)",
                                fw_tensor_shape_str(a, sizeof(a), t));
        if ((err = fw_ones_like(&g, t)) < 0)
            return err;
    } else {
        if (!fw_shape_equal(grad->shape, grad->ndim, t->shape, t->ndim))
            return fw_error_set(FW_ESHAPE, "backward: grad shape %s differs from tensor shape %s",
                                fw_tensor_shape_str(a, sizeof(a), grad),
                                fw_tensor_shape_str(b, sizeof(b), t));
        if (grad->dtype != t->dtype)
            return fw_error_set(FW_EDTYPE, "backward: grad dtype %s differs from tensor dtype %s",
                                fw_dtype_name(grad->dtype), fw_dtype_name(t->dtype));
        if (grad->device != t->device)
            return fw_error_set(FW_EDEVICE, "backward: grad is on another device");
        g = fw_tensor_ref(grad);
    }
    bool was = fw_set_grad_enabled(false);
    if (t->grad_fn == NULL)
        err = accumulate_leaf(t, g);
    else
        err = run_graph(t->grad_fn, t->out_idx, g, retain_graph);
    fw_set_grad_enabled(was);
    return err;
}
