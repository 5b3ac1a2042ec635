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
    unsigned char *saved_out; /* per slot: 1 + index of this node's output saved there, or 0 */
    fw_tensor **grads;       /* per output, during backward */
    void *attr;
    void (*attr_free)(void *attr);   /* custom nodes: drops the callback's context */
    fw_hook *hooks;                  /* gradient hooks on outputs */
    /* traversal state */
    unsigned epoch;
    int deps;
    struct fw_node *next;    /* free list / ready stack link */
};

static _Thread_local bool grad_off;

static inline bool is_float(fw_dtype dt)
{
    return dt == FW_FLOAT32 || dt == FW_FLOAT64 || dt == FW_FLOAT16 || dt == FW_BFLOAT16 ||
           dt == FW_COMPLEX64 || dt == FW_COMPLEX128;   /* "carries gradients" */
}

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
    /* (integer and bool tensors keep stop_gradient true internally: see
     * fw_tensor_set_stop_gradient) */
    for (int i = 0; i < n; i++)
        if (inputs[i] && !inputs[i]->stop_gradient)
            return true;
    return false;
}

/* Set while a backward with create_graph runs on this thread: backward
 * functions then build their gradients from recorded (differentiable) ops. */
static _Thread_local bool creating_graph;

bool fw__autograd_creating_graph(void) { return creating_graph; }

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
    if (n->attr_free)
        n->attr_free(n->attr);
    fw__hooks_free(n->hooks);
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
    size_t sz, off_edges, off_in, off_out, off_saved, off_sout, off_grads, off_attr, block;
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
    off_sout = sz;   sz += align16((size_t)n_saved);
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
    n->saved_out = (unsigned char *)(base + off_sout);
    n->grads = (fw_tensor **)(base + off_grads);
    n->attr = attr_size ? base + off_attr : NULL;
    n->attr_free = NULL;
    n->hooks = NULL;
    n->epoch = 0;
    n->deps = 0;
    n->next = NULL;
    if (attr_size)
        memset(n->attr, 0, attr_size);
    /* saved, saved_out (0: none) and grads lie one after another */
    memset(base + off_saved, 0, off_attr - off_saved);
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
    n->saved_out[slot] = 0;
    if (t && t->grad_fn == n) {
        /* An output of this node: keep a detached alias (no cycle). A
         * backward with create_graph reattaches it while the node runs. */
        if ((err = fw__tensor_view(&keep, t, t->shape, t->strides, t->ndim, t->offset)) < 0)
            return err;
        if (t->out_idx < 255)        /* (nodes with more outputs stay detached) */
            n->saved_out[slot] = (unsigned char)(t->out_idx + 1);
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

bool fw_tensor_stop_gradient(const fw_tensor *t)
{
    return t->stop_gradient && !t->int_grad_flag;
}

int fw_tensor_set_stop_gradient(fw_tensor *t, bool stop)
{
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "set_stop_gradient: tensor is NULL");
    /* Paddle accepts stop_gradient=false on integer tensors, and no
     * gradient flows through them: the flag is only reported back, while
     * the field ops test stays true (so fw_op_needs_grad needs no dtype
     * test on its hot path). */
    if (!is_float(t->dtype)) {
        t->int_grad_flag = !stop;
        return 0;
    }
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

/* ---- hooks and custom nodes ---------------------------------------------------------- */

void fw__hooks_free(fw_hook *h)
{
    while (h) {
        fw_hook *next = h->next;
        if (h->free_ctx)
            h->free_ctx(h->ctx);
        free(h);
        h = next;
    }
}

int fw_tensor_register_hook(fw_tensor *t, fw_grad_hook_fn fn, void *ctx,
                            void (*free_ctx)(void *ctx))
{
    fw_hook *h, **tail;

    if (t == NULL || fn == NULL)
        return fw_error_set(FW_EINVAL, "register_hook: tensor or hook is NULL");
    if (t->stop_gradient)
        return fw_error_set(FW_EGRAD, "register_hook: cannot register a hook on a tensor "
                                      "with stop_gradient=True");
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return fw_error_set(FW_ENOMEM, "register_hook: out of memory");
    h->fn = fn;
    h->ctx = ctx;
    h->free_ctx = free_ctx;
    h->out_idx = t->out_idx;
    /* run in registration order */
    tail = t->grad_fn ? &t->grad_fn->hooks : &t->hooks;
    while (*tail)
        tail = &(*tail)->next;
    *tail = h;
    return 0;
}

/* Runs the hooks of list h that watch output idx on *g (replaced in place). */
static int run_hooks(fw_hook *h, int idx, fw_tensor **g)
{
    for (; h; h = h->next) {
        fw_tensor *r = NULL;
        int err;
        if (h->out_idx != idx || *g == NULL)
            continue;
        if ((err = h->fn(h->ctx, *g, &r)) < 0) {
            fw_tensor_unref(r);
            return err;
        }
        if (r) {
            if (!fw_shape_equal(r->shape, r->ndim, (*g)->shape, (*g)->ndim) ||
                r->dtype != (*g)->dtype) {
                char a[128], b[128];
                fw_error_set(FW_ESHAPE, "hook: returned a gradient of shape %s %s for one of "
                             "shape %s %s", fw_tensor_shape_str(a, sizeof(a), r),
                             fw_dtype_name(r->dtype), fw_tensor_shape_str(b, sizeof(b), *g),
                             fw_dtype_name((*g)->dtype));
                fw_tensor_unref(r);
                return FW_ESHAPE;
            }
            fw_tensor_unref(*g);
            *g = r;
        }
    }
    return 0;
}

typedef struct custom_attr {
    fw_custom_backward_fn fn;
    void *ctx;
    void (*free_ctx)(void *ctx);
} custom_attr;

static int custom_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    custom_attr *a = fw_node_attr(n);
    int err = a->fn(a->ctx, n->n_out, gout, n->n_in, gin);
    if (err < 0)
        return err;
    for (int i = 0; i < n->n_in; i++) {
        if (gin[i] && (gin[i]->dtype != n->in_meta[i].dtype) && is_float(gin[i]->dtype)) {
            fw_tensor *c = NULL;
            if ((err = fw_cast(&c, gin[i], n->in_meta[i].dtype)) < 0)
                return err;
            fw_tensor_unref(gin[i]);
            gin[i] = c;
        }
    }
    return 0;
}

static void custom_free(void *attr)
{
    custom_attr *a = attr;
    if (a->free_ctx)
        a->free_ctx(a->ctx);
}

int fw_custom_node(int n_in, fw_tensor *const *inputs, int n_out, fw_tensor *const *outputs,
                   fw_custom_backward_fn fn, void *ctx, void (*free_ctx)(void *ctx))
{
    fw_node *n = NULL;
    int err;

    if (n_in < 0 || n_out < 1 || fn == NULL || (n_in > 0 && inputs == NULL) || outputs == NULL)
        return fw_error_set(FW_EINVAL, "custom op: bad arguments");
    for (int j = 0; j < n_out; j++) {
        if (outputs[j] == NULL)
            return fw_error_set(FW_EINVAL, "custom op: output %d is NULL", j);
        if (!is_float(outputs[j]->dtype))
            return fw_error_set(FW_EDTYPE, "custom op: output %d is %s; only float outputs "
                                "carry gradients", j, fw_dtype_name(outputs[j]->dtype));
        for (int k = 0; k < j; k++)
            if (outputs[k] == outputs[j])
                return fw_error_set(FW_EINVAL, "custom op: output %d is output %d again", j, k);
    }
    if ((err = fw_node_record(&n, "PyLayer", custom_backward, n_in, inputs, n_out, outputs, 0,
                              sizeof(custom_attr))) < 0)
        return err;
    if (n == NULL) {      /* nothing to record: the caller keeps its context */
        return 0;
    }
    custom_attr *a = fw_node_attr(n);
    a->fn = fn;
    a->ctx = ctx;
    a->free_ctx = free_ctx;
    n->attr_free = custom_free;
    return 1;
}

/* ---- backward ------------------------------------------------------------------------ */

int fw__copy_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt);

/* What one run of the engine does with the gradients that reach leaves:
 * accumulate into their .grad (backward), or capture the gradients of the
 * given inputs only (paddle.grad). */
typedef struct capture {
    int n;
    fw_tensor *const *inputs;
    fw_tensor **grads;        /* per input, owned */
} capture;

/* *dst += g (takes g), out of place: for graphs being built and captures */
static int add_into(fw_tensor **dst, fw_tensor *g)
{
    fw_tensor *sum = NULL;
    int err;

    if (*dst == NULL) {
        *dst = g;
        return 0;
    }
    err = fw_add(&sum, *dst, g);
    fw_tensor_unref(g);
    if (err < 0)
        return err;
    fw_tensor_unref(*dst);
    *dst = sum;
    return 0;
}

/* leaf->grad += g (takes g). */
static int accumulate_leaf(fw_tensor *leaf, fw_tensor *g, capture *cap)
{
    int err = 0;

    if (leaf->hooks && (err = run_hooks(leaf->hooks, 0, &g)) < 0) {
        fw_tensor_unref(g);
        return err;
    }
    if (cap) {
        for (int k = 0; k < cap->n; k++)
            if (cap->inputs[k] == leaf)
                return add_into(&cap->grads[k], g);
        fw_tensor_unref(g);         /* paddle.grad touches no other leaf */
        return 0;
    }
    if (creating_graph) {
        /* keep the gradient's history: out-of-place, cast with a node */
        if (g->dtype != leaf->dtype) {
            fw_tensor *c = NULL;
            err = fw_cast(&c, g, leaf->dtype);
            fw_tensor_unref(g);
            if (err < 0)
                return err;
            g = c;
        }
        return add_into(&leaf->grad, g);
    }
    if (leaf->grad == NULL) {
        if (g->dtype == leaf->dtype && fw_tensor_is_contiguous(g) &&
            atomic_load(&g->refs) == 1 && atomic_load(&g->storage->refs) == 1 &&
            g->offset == 0 && g->grad_fn == NULL) {
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
    if (!fw_tensor_is_contiguous(leaf->grad) || leaf->grad->grad_fn ||
        atomic_load(&leaf->grad->storage->refs) != 1) {
        /* a user-set view, a gradient with history (from create_graph) or one
         * shared with another tensor (paddle.grad's result): make it ours */
        fw_tensor *d;
        bool was = fw_set_grad_enabled(false);
        err = fw_tensor_clone(&d, leaf->grad);
        fw_set_grad_enabled(was);
        if (err < 0) {
            fw_tensor_unref(gc);
            return err;
        }
        fw_tensor_unref(leaf->grad);
        leaf->grad = d;
    }
    if (leaf->dtype == FW_FLOAT16 || leaf->dtype == FW_BFLOAT16 ||
        leaf->dtype == FW_COMPLEX64 || leaf->dtype == FW_COMPLEX128) {
        /* no half or complex kernels: add with the op, write back in place */
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

/* With create_graph, a saved output of n is a detached alias; while n's
 * backward runs, swap in an alias whose history is n itself, so the
 * gradient the backward builds from it differentiates through n too. */
static int attach_saved_outputs(fw_node *n, fw_tensor **orig)
{
    for (int s = 0; s < n->n_saved; s++) {
        fw_tensor *t = n->saved[s], *v = NULL;
        int err;
        orig[s] = NULL;
        if (t == NULL || n->saved_out[s] == 0)
            continue;
        if ((err = fw__tensor_view(&v, t, t->shape, t->strides, t->ndim, t->offset)) < 0)
            return err;
        v->grad_fn = n;
        v->out_idx = n->saved_out[s] - 1;
        v->stop_gradient = false;
        fw__node_ref(n);
        orig[s] = t;
        n->saved[s] = v;
    }
    return 0;
}

static void detach_saved_outputs(fw_node *n, fw_tensor **orig)
{
    for (int s = 0; s < n->n_saved; s++)
        if (orig[s]) {
            fw_tensor *v = n->saved[s];
            n->saved[s] = orig[s];
            orig[s] = NULL;
            fw_tensor_unref(v);      /* drops its ref on n; n is alive (in the graph) */
        }
}

/* With create_graph: a gradient is linear in the incoming one, so when an
 * incoming gradient has a history and an outgoing one has none, the node's
 * backward dropped it (a fused kernel without a graph-building path): fail
 * rather than give second derivatives with terms missing. */
static int check_kept_history(fw_node *n, fw_tensor **gin)
{
    bool in_hist = false;

    for (int j = 0; j < n->n_out; j++)
        in_hist |= n->grads[j] != NULL && n->grads[j]->grad_fn != NULL;
    if (!in_hist)
        return 0;
    for (int i = 0; i < n->n_in; i++)
        if (gin[i] && gin[i]->grad_fn == NULL && (n->edges[i].fn || n->edges[i].leaf) &&
            is_float(gin[i]->dtype))
            return fw_error_set(FW_EUNSUPPORTED, "backward: second derivatives through '%s' "
                                "are not supported (create_graph)", n->name);
    return 0;
}

/* Runs the graph upstream of roots[i] (node, output index) with gradients
 * rgrads[i] (taken). */
static int run_graph(int nr, fw_node *const *roots, const int *ridx, fw_tensor **rgrads,
                     bool retain, capture *cap)
{
    nodelist all = {0}, stack = {0};
    unsigned epoch = next_epoch();
    int err = 0;
    fw_tensor *gin_small[16], *orig_small[16];
    fw_tensor **gin = NULL, **orig = NULL;

    /* 1. collect reachable nodes; count dependencies */
    for (int r = 0; r < nr; r++) {
        fw_node *root = roots[r];
        if (root->epoch == epoch)
            continue;
        root->epoch = epoch;
        root->deps = 0;
        if ((err = push(&all, root)) < 0 || (err = push(&stack, root)) < 0)
            goto out_nograds;
        while (stack.n > 0) {
            fw_node *n = stack.v[--stack.n];
            if (n->released) {
                err = fw_error_set(FW_EGRAD, "backward: the graph through '%s' was already "
                                   "freed by an earlier backward; pass retain_graph=true "
                                   "to the first backward to run it twice", n->name);
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
    }

    /* 2. Kahn: run nodes whose consumers have all delivered */
    for (int r = 0; r < nr; r++) {
        fw_tensor *g = rgrads[r];
        rgrads[r] = NULL;
        if ((err = add_into(&roots[r]->grads[ridx[r]], g)) < 0)
            goto out;
    }
    stack.n = 0;
    for (size_t k = 0; k < all.n; k++)
        if (all.v[k]->deps == 0)
            push(&stack, all.v[k]);         /* capacity exists */
    while (stack.n > 0) {
        fw_node *n = stack.v[--stack.n];
        bool any = false;
        if (n->hooks)
            for (int j = 0; j < n->n_out && err == 0; j++)
                err = run_hooks(n->hooks, j, &n->grads[j]);
        if (cap && err == 0)          /* paddle.grad of a result of an op */
            for (int k = 0; k < cap->n; k++)
                if (cap->inputs[k]->grad_fn == n && n->grads[cap->inputs[k]->out_idx])
                    err = add_into(&cap->grads[k],
                                   fw_tensor_ref(n->grads[cap->inputs[k]->out_idx]));
        for (int j = 0; j < n->n_out; j++)
            any |= n->grads[j] != NULL;
        gin = n->n_in <= 16 ? gin_small : calloc((size_t)n->n_in, sizeof(*gin));
        if (gin == NULL) {
            err = fw_error_set(FW_ENOMEM, "backward: out of memory");
            goto out;
        }
        memset(gin, 0, sizeof(*gin) * (size_t)n->n_in);
        if (any && err == 0) {
            for (int j = 0; j < n->n_out && err == 0; j++)
                if (n->grads[j] == NULL)
                    err = fw_op_zeros(&n->grads[j], n->out_meta[j].device, n->out_meta[j].dtype,
                                      n->out_meta[j].shape, n->out_meta[j].ndim);
            if (err == 0 && creating_graph && n->n_saved > 0) {
                orig = n->n_saved <= 16 ? orig_small
                                        : calloc((size_t)n->n_saved, sizeof(*orig));
                if (orig == NULL) {
                    err = fw_error_set(FW_ENOMEM, "backward: out of memory");
                } else {
                    memset(orig, 0, sizeof(*orig) * (size_t)n->n_saved);
                    err = attach_saved_outputs(n, orig);
                }
            }
            if (err == 0)
                err = n->backward(n, gin, n->grads);
            if (orig)
                detach_saved_outputs(n, orig);
            if (err == 0 && creating_graph)
                err = check_kept_history(n, gin);
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
                    err = add_into(&e->fn->grads[e->out_idx], g);
                    g = NULL;
                } else {
                    err = accumulate_leaf(e->leaf, g, cap);
                    g = NULL;
                }
            }
            fw_tensor_unref(g);
            if (e->fn && --e->fn->deps == 0 && err == 0)
                err = push(&stack, e->fn);
        }
        if (gin != gin_small)
            free(gin);
        if (orig && orig != orig_small)
            free(orig);
        gin = orig = NULL;
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
    if (gin && gin != gin_small)
        free(gin);
    if (orig && orig != orig_small)
        free(orig);
    for (size_t k = 0; k < all.n; k++)
        for (int j = 0; j < all.v[k]->n_out; j++) {
            fw_tensor_unref(all.v[k]->grads[j]);
            all.v[k]->grads[j] = NULL;
        }
out_nograds:
    for (int r = 0; r < nr; r++) {
        fw_tensor_unref(rgrads[r]);
        rgrads[r] = NULL;
    }
    free(all.v);
    free(stack.v);
    return err;
}

/* The starting gradient for t: grad checked against t, or ones. */
static int root_grad(fw_tensor **g, fw_tensor *t, fw_tensor *grad, const char *what)
{
    char a[128], b[128];

    *g = NULL;
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "%s: tensor is NULL", what);
    if (t->stop_gradient || !is_float(t->dtype))
        return fw_error_set(FW_EGRAD, "%s: tensor has stop_gradient=true and no grad "
                            "history (did an input need grad? was no-grad mode on?)", what);
    if (grad == NULL)
        return fw_ones_like(g, t);     /* Paddle: ones, whatever the shape */
    if (!fw_shape_equal(grad->shape, grad->ndim, t->shape, t->ndim))
        return fw_error_set(FW_ESHAPE, "%s: grad shape %s differs from tensor shape %s", what,
                            fw_tensor_shape_str(a, sizeof(a), grad),
                            fw_tensor_shape_str(b, sizeof(b), t));
    if (grad->dtype != t->dtype)
        return fw_error_set(FW_EDTYPE, "%s: grad dtype %s differs from tensor dtype %s", what,
                            fw_dtype_name(grad->dtype), fw_dtype_name(t->dtype));
    if (grad->device != t->device)
        return fw_error_set(FW_EDEVICE, "%s: grad is on another device", what);
    *g = fw_tensor_ref(grad);
    return 0;
}

/* Runs the engine over roots outs[] with grad mode and creating_graph set
 * for the duration. */
static int engine(int n, fw_tensor *const *outs, fw_tensor **gs, bool retain, bool create,
                  capture *cap)
{
    fw_node *small_n[8], **nodes = small_n;
    int small_i[8], *idx = small_i, nr = 0, err = 0;
    bool was, was_creating = creating_graph;

    if (n > 8) {
        nodes = malloc(sizeof(*nodes) * (size_t)n);
        idx = malloc(sizeof(*idx) * (size_t)n);
        if (nodes == NULL || idx == NULL) {
            err = fw_error_set(FW_ENOMEM, "backward: out of memory");
            goto out;
        }
    }
    was = fw_set_grad_enabled(create);
    creating_graph = create;
    for (int i = 0; i < n && err == 0; i++) {
        if (outs[i]->grad_fn == NULL) {     /* a leaf root: its gradient is gs[i] */
            fw_tensor *g = gs[i];
            gs[i] = NULL;
            err = accumulate_leaf(outs[i], g, cap);
            continue;
        }
        nodes[nr] = outs[i]->grad_fn;
        idx[nr] = outs[i]->out_idx;
        gs[nr] = gs[i];
        if (nr != i)
            gs[i] = NULL;
        nr++;
    }
    if (err == 0 && nr > 0)
        err = run_graph(nr, nodes, idx, gs, retain || create, cap);
    creating_graph = was_creating;
    fw_set_grad_enabled(was);
out:
    for (int i = 0; i < n; i++) {
        fw_tensor_unref(gs[i]);
        gs[i] = NULL;
    }
    if (nodes != small_n)
        free(nodes);
    if (idx != small_i)
        free(idx);
    return err;
}

int fw_tensor_backward_ex(fw_tensor *t, fw_tensor *grad, bool retain_graph, bool create_graph)
{
    fw_tensor *g = NULL;
    int err;

    if ((err = root_grad(&g, t, grad, "backward")) < 0)
        return err;
    return engine(1, &t, &g, retain_graph, create_graph, NULL);
}

int fw_tensor_backward(fw_tensor *t, fw_tensor *grad, bool retain_graph)
{
    return fw_tensor_backward_ex(t, grad, retain_graph, false);
}

int fw_autograd_grad(fw_tensor **grads, int n_out, fw_tensor *const *outputs,
                     fw_tensor *const *grad_outputs, int n_in, fw_tensor *const *inputs,
                     bool retain_graph, bool create_graph)
{
    fw_tensor **gs;
    capture cap;
    int err = 0;

    if (grads == NULL || n_out < 1 || n_in < 1 || outputs == NULL || inputs == NULL)
        return fw_error_set(FW_EINVAL, "grad: need at least one output and one input");
    for (int k = 0; k < n_in; k++) {
        grads[k] = NULL;
        if (inputs[k] == NULL)
            return fw_error_set(FW_EINVAL, "grad: input %d is NULL", k);
    }
    if ((gs = calloc((size_t)n_out, sizeof(*gs))) == NULL)
        return fw_error_set(FW_ENOMEM, "grad: out of memory");
    for (int i = 0; i < n_out && err == 0; i++)
        err = root_grad(&gs[i], outputs[i], grad_outputs ? grad_outputs[i] : NULL, "grad");
    if (err == 0) {
        cap.n = n_in;
        cap.inputs = inputs;
        cap.grads = grads;
        err = engine(n_out, outputs, gs, retain_graph, create_graph, &cap);
    }
    for (int i = 0; i < n_out; i++)
        fw_tensor_unref(gs[i]);
    free(gs);
    if (err < 0)
        for (int k = 0; k < n_in; k++) {
            fw_tensor_unref(grads[k]);
            grads[k] = NULL;
        }
    return err;
}
