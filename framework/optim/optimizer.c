/*
 * optimizer.c - SGD, Momentum, Adam, AdamW over parameter tensors, and
 * clip-by-global-norm (see fw/optim.h). The arithmetic is in the fused
 * kernels of cpu/optim.c; this file checks, keeps state and dispatches.
 *
 * State lives in plain malloc'd buffers owned by the optimizer (one block
 * per parameter, created at its first update); the state API copies in and
 * out of tensors.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "fw/ops.h"
#include "fw/optim.h"
#include "../core/fw_backend_optim.h"
#include "../core/fw_int.h"

typedef struct param_state {
    fw_tensor *buf1;     /* velocity or moment1 (param's device); NULL until first update */
    fw_tensor *buf2;     /* moment2 (Adam/AdamW) */
    double beta1_pow;    /* beta1^t of the next step */
    double beta2_pow;
    bool decay;          /* AdamW: apply decoupled decay */
    bool no_clip;        /* excluded from global-norm clipping (need_clip false) */
    double lr_scale;     /* ParamAttr.learning_rate: lr multiplier (1.0) */
} param_state;

struct fw_optim {
    fw_optim_config cfg;
    fw_tensor **params;
    param_state *st;
    size_t n;
};

void fw_optim_config_default(fw_optim_config *c, fw_optim_kind kind)
{
    memset(c, 0, sizeof(*c));
    c->kind = kind;
    c->lr = 0.001;
    c->momentum = 0.9;
    c->beta1 = 0.9;
    c->beta2 = 0.999;
    c->epsilon = 1e-8;
    c->weight_decay = kind == FW_OPTIM_ADAMW ? 0.01 : 0.0;
}

static int check_config(const fw_optim_config *c)
{
    if (c->kind < FW_OPTIM_SGD || c->kind > FW_OPTIM_ADAMW)
        return fw_error_set(FW_EINVAL, "optimizer: unknown kind %d", (int)c->kind);
    if (c->sched == NULL && !(c->lr >= 0 && isfinite(c->lr)))
        return fw_error_set(FW_EINVAL, "optimizer: learning rate %g must be >= 0", c->lr);
    if (!(c->weight_decay >= 0 && isfinite(c->weight_decay)))
        return fw_error_set(FW_EINVAL, "optimizer: weight_decay %g must be >= 0",
                            c->weight_decay);
    if (!(c->clip_norm >= 0 && isfinite(c->clip_norm)))
        return fw_error_set(FW_EINVAL, "optimizer: clip_norm %g must be >= 0", c->clip_norm);
    if (c->kind == FW_OPTIM_MOMENTUM && !(c->momentum >= 0 && isfinite(c->momentum)))
        return fw_error_set(FW_EINVAL, "Momentum: momentum %g must be >= 0", c->momentum);
    if (c->kind == FW_OPTIM_ADAM || c->kind == FW_OPTIM_ADAMW) {
        if (!(c->beta1 >= 0 && c->beta1 < 1))
            return fw_error_set(FW_EINVAL, "Adam: beta1 %g must be in [0, 1)", c->beta1);
        if (!(c->beta2 >= 0 && c->beta2 < 1))
            return fw_error_set(FW_EINVAL, "Adam: beta2 %g must be in [0, 1)", c->beta2);
        if (!(c->epsilon > 0 && isfinite(c->epsilon)))
            return fw_error_set(FW_EINVAL, "Adam: epsilon %g must be positive", c->epsilon);
    }
    return 0;
}

static const char *dev_name(fw_device d)
{
    return d == FW_CPU ? "cpu" : d == FW_CUDA ? "cuda" : "?";
}

/* The optimizer family of dev's backend, or NULL with FW_EDEVICE set. */
static const struct fw_optim_kernels *optim_kernels(fw_device dev, const char *op)
{
    const fw_backend *b = fw_backend_require(dev, op);
    return b ? fw_backend_family(b, b->optim, op) : NULL;
}

static int check_param(fw_tensor *p, size_t i)
{
    if (p == NULL)
        return fw_error_set(FW_EINVAL, "optimizer: param %zu is NULL", i);
    fw_dtype dt = fw_tensor_dtype(p);
    if (dt != FW_FLOAT32 && dt != FW_FLOAT64)
        return fw_error_set(FW_EDTYPE, "optimizer: param %zu is %s; only float32 and "
                            "float64 params are supported", i, fw_dtype_name(dt));
    if (optim_kernels(fw_tensor_device(p), "optimizer") == NULL)
        return FW_EDEVICE;
    if (!fw_tensor_is_contiguous(p))
        return fw_error_set(FW_EINVAL, "optimizer: param %zu is not contiguous", i);
    return 0;
}

int fw_optim_new(fw_optim **out, const fw_optim_config *cfg, fw_tensor *const *params,
                 size_t n)
{
    fw_optim *o = NULL;
    int err;

    *out = NULL;
    if (cfg == NULL || (params == NULL && n > 0))
        return fw_error_set(FW_EINVAL, "optimizer: NULL config or params");
    if ((err = check_config(cfg)) < 0)
        return err;
    for (size_t i = 0; i < n; i++) {
        if ((err = check_param(params[i], i)) < 0)
            return err;
        for (size_t j = 0; j < i; j++)
            if (params[j] == params[i])
                return fw_error_set(FW_EINVAL, "optimizer: param %zu repeats param %zu", i, j);
    }
    if ((o = calloc(1, sizeof(*o))) == NULL ||
        (o->params = calloc(n ? n : 1, sizeof(*o->params))) == NULL ||
        (o->st = calloc(n ? n : 1, sizeof(*o->st))) == NULL) {
        fw_optim_free(o);
        return fw_error_set(FW_ENOMEM, "optimizer");
    }
    o->cfg = *cfg;
    o->n = n;
    for (size_t i = 0; i < n; i++) {
        o->params[i] = fw_tensor_ref(params[i]);
        o->st[i].decay = true;
        o->st[i].lr_scale = 1.0;
    }
    *out = o;
    return 0;
}

void fw_optim_free(fw_optim *o)
{
    if (o == NULL)
        return;
    for (size_t i = 0; o->params != NULL && i < o->n; i++) {
        fw_tensor_unref(o->params[i]);
        fw_tensor_unref(o->st[i].buf1);
        fw_tensor_unref(o->st[i].buf2);
    }
    free(o->params);
    free(o->st);
    free(o);
}

static bool needs_buf1(fw_optim_kind k)
{
    return k != FW_OPTIM_SGD;
}

static bool needs_buf2(fw_optim_kind k)
{
    return k == FW_OPTIM_ADAM || k == FW_OPTIM_ADAMW;
}

/* Zeros like param p, on its device. */
static int state_buf(fw_tensor **out, const fw_tensor *p, size_t i)
{
    int err;
    if ((err = fw_zeros_like(out, p)) < 0)
        return err == FW_ENOMEM ? fw_error_set(FW_ENOMEM, "optimizer state for param %zu", i)
                                : err;
    return 0;
}

/* Create zeroed state for param i if missing. */
static int ensure_state(fw_optim *o, size_t i)
{
    param_state *s = &o->st[i];
    int err;
    if (needs_buf1(o->cfg.kind) && s->buf1 == NULL) {
        if ((err = state_buf(&s->buf1, o->params[i], i)) < 0)
            return err;
        s->beta1_pow = o->cfg.beta1;
        s->beta2_pow = o->cfg.beta2;
    }
    if (needs_buf2(o->cfg.kind) && s->buf2 == NULL &&
        (err = state_buf(&s->buf2, o->params[i], i)) < 0)
        return err;
    return 0;
}

static int check_grad(const fw_tensor *p, const fw_tensor *g, size_t i)
{
    char a[96], b[96];
    if (fw_tensor_dtype(g) != fw_tensor_dtype(p))
        return fw_error_set(FW_EDTYPE, "optimizer: grad of param %zu is %s, param is %s", i,
                            fw_dtype_name(fw_tensor_dtype(g)), fw_dtype_name(fw_tensor_dtype(p)));
    if (fw_tensor_ndim(g) != fw_tensor_ndim(p) ||
        memcmp(fw_tensor_shape(g), fw_tensor_shape(p),
               (size_t)fw_tensor_ndim(p) * sizeof(int64_t)) != 0)
        return fw_error_set(FW_ESHAPE, "optimizer: grad of param %zu has shape %s, param %s",
                            i, fw_tensor_shape_str(a, sizeof(a), g),
                            fw_tensor_shape_str(b, sizeof(b), p));
    if (fw_tensor_device(g) != fw_tensor_device(p))
        return fw_error_set(FW_EDEVICE, "optimizer: grad of param %zu is on %s, param on %s",
                            i, dev_name(fw_tensor_device(g)),
                            dev_name(fw_tensor_device(p)));
    if (!fw_tensor_is_contiguous(g))
        return fw_error_set(FW_EINVAL, "optimizer: grad of param %zu is not contiguous", i);
    return 0;
}

/* Clip the grads of params[i] with skip[i] false (skip may be NULL). */
static int clip_impl(double *global_norm, fw_tensor *const *params, const param_state *st,
                     size_t n, double clip_norm)
{
    const struct fw_optim_kernels *ks[FW_NDEVICES] = {NULL}; /* per device, looked up once */
    double ss = 0;

    if (global_norm)
        *global_norm = 0;
    if (!(clip_norm > 0 && isfinite(clip_norm)))
        return fw_error_set(FW_EINVAL, "ClipGradByGlobalNorm: clip_norm %g must be positive",
                            clip_norm);
    if (params == NULL && n > 0)
        return fw_error_set(FW_EINVAL, "ClipGradByGlobalNorm: NULL params");
#define CLIPPED_GRAD(i) \
    ((params[i] == NULL || (st != NULL && st[i].no_clip)) ? NULL : fw_tensor_grad(params[i]))
    for (size_t i = 0; i < n; i++) {
        fw_tensor *g = CLIPPED_GRAD(i);
        if (g == NULL)
            continue;
        fw_dtype dt = fw_tensor_dtype(g);
        if (dt != FW_FLOAT32 && dt != FW_FLOAT64)
            return fw_error_set(FW_EDTYPE, "ClipGradByGlobalNorm: grad of param %zu is %s; "
                                "need float32 or float64", i, fw_dtype_name(dt));
        if (!fw_tensor_is_contiguous(g))
            return fw_error_set(FW_EINVAL, "ClipGradByGlobalNorm: grad of param %zu is not "
                                "contiguous", i);
        fw_device d = fw_tensor_device(g);
        if (ks[d] == NULL && (ks[d] = optim_kernels(d, "ClipGradByGlobalNorm")) == NULL)
            return FW_EDEVICE;
    }
    for (size_t i = 0; i < n; i++) {
        fw_tensor *g = CLIPPED_GRAD(i);
        if (g == NULL)
            continue;
        double part = 0;
        int err = ks[fw_tensor_device(g)]->sumsq(fw_tensor_dtype(g), fw__ptr(g),
                                                 (size_t)fw_tensor_numel(g), &part);
        if (err < 0)
            return err;
        ss += part;
    }
    double norm = sqrt(ss);
    if (global_norm)
        *global_norm = norm;
    if (norm <= clip_norm)
        return 0;                  /* scale would be 1 */
    double scale = clip_norm / norm;
    for (size_t i = 0; i < n; i++) {
        fw_tensor *g = CLIPPED_GRAD(i);
        if (g == NULL)
            continue;
        int err = ks[fw_tensor_device(g)]->scale(fw_tensor_dtype(g), fw__ptr(g),
                                                 (size_t)fw_tensor_numel(g), scale);
        if (err < 0)
            return err;
    }
#undef CLIPPED_GRAD
    return 0;
}

int fw_clip_grad_by_global_norm(double *global_norm, fw_tensor *const *params, size_t n,
                                double clip_norm)
{
    return clip_impl(global_norm, params, NULL, n, clip_norm);
}

double fw_optim_get_lr(const fw_optim *o)
{
    return o->cfg.sched ? fw_lr_sched_get(o->cfg.sched) : o->cfg.lr;
}

int fw_optim_set_lr(fw_optim *o, double lr)
{
    if (o->cfg.sched != NULL)
        return fw_error_set(FW_EINVAL, "optimizer: set_lr with an LR scheduler attached");
    if (!(lr >= 0 && isfinite(lr)))
        return fw_error_set(FW_EINVAL, "optimizer: learning rate %g must be >= 0", lr);
    o->cfg.lr = lr;
    return 0;
}

int fw_optim_set_decay(fw_optim *o, size_t i, bool apply)
{
    if (i >= o->n)
        return fw_error_set(FW_ERANGE, "optimizer: param index %zu of %zu", i, o->n);
    o->st[i].decay = apply;
    return 0;
}

int fw_optim_set_lr_scale(fw_optim *o, size_t i, double scale)
{
    if (i >= o->n)
        return fw_error_set(FW_ERANGE, "optimizer: param index %zu of %zu", i, o->n);
    if (!(scale >= 0 && isfinite(scale)))
        return fw_error_set(FW_EINVAL, "optimizer: lr scale %g must be >= 0", scale);
    o->st[i].lr_scale = scale;
    return 0;
}

int fw_optim_set_need_clip(fw_optim *o, size_t i, bool need_clip)
{
    if (i >= o->n)
        return fw_error_set(FW_ERANGE, "optimizer: param index %zu of %zu", i, o->n);
    o->st[i].no_clip = !need_clip;
    return 0;
}

size_t fw_optim_nparams(const fw_optim *o)
{
    return o->n;
}

fw_tensor *fw_optim_param(const fw_optim *o, size_t i)
{
    return i < o->n ? o->params[i] : NULL;
}

/* One parameter's fused update through its device's optimizer family. */
static int update_param(const struct fw_optim_kernels *k, const fw_optim_config *c,
                        const param_state *s, fw_tensor *p, fw_tensor *gt, double lr)
{
    fw_dtype dt = fw_tensor_dtype(p);
    size_t n = (size_t)fw_tensor_numel(p);
    void *pp = fw__ptr(p), *b1 = s->buf1 ? fw__ptr(s->buf1) : NULL;
    const void *g = fw__ptr(gt);

    if (k == NULL)
        return FW_EDEVICE;
    switch (c->kind) {
    case FW_OPTIM_SGD:
        return k->sgd(dt, pp, g, n, lr, c->weight_decay);
    case FW_OPTIM_MOMENTUM:
        return k->momentum(dt, pp, g, b1, n, lr, c->momentum, c->weight_decay, c->nesterov);
    case FW_OPTIM_ADAM:
    case FW_OPTIM_ADAMW: {
        bool w = c->kind == FW_OPTIM_ADAMW;
        return k->adam(dt, pp, g, b1, fw__ptr(s->buf2), n, lr, c->beta1, c->beta2, c->epsilon,
                       s->beta1_pow, s->beta2_pow, w ? 0.0 : c->weight_decay,
                       w && s->decay ? c->weight_decay : 0.0);
    }
    }
    return fw_error_set(FW_EINVAL, "optimizer: unknown kind %d", (int)c->kind);
}

int fw_optim_step(fw_optim *o)
{
    int err;

    if (o == NULL)
        return fw_error_set(FW_EINVAL, "optimizer: NULL");
    const fw_optim_config *c = &o->cfg;
    /* validate every grad and create all state first: no partial update */
    for (size_t i = 0; i < o->n; i++) {
        fw_tensor *g = fw_tensor_grad(o->params[i]);
        if (g == NULL)
            continue;
        if ((err = check_grad(o->params[i], g, i)) < 0)
            return err;
        if ((err = ensure_state(o, i)) < 0)
            return err;
    }
    if (c->clip_norm > 0 && (err = clip_impl(NULL, o->params, o->st, o->n, c->clip_norm)) < 0)
        return err;

    double base_lr = fw_optim_get_lr(o);
    const struct fw_optim_kernels *ks[FW_NDEVICES] = {NULL}; /* per device, looked up once */
    for (size_t i = 0; i < o->n; i++) {
        fw_tensor *p = o->params[i], *gt = fw_tensor_grad(p);
        param_state *s = &o->st[i];
        if (gt == NULL)
            continue;
        fw_device d = fw_tensor_device(p);
        if (ks[d] == NULL)
            ks[d] = optim_kernels(d, "optimizer");
        if ((err = update_param(ks[d], c, s, p, gt, base_lr * s->lr_scale)) < 0)
            return err;
        if (c->kind == FW_OPTIM_ADAM || c->kind == FW_OPTIM_ADAMW) {
            s->beta1_pow *= c->beta1;
            s->beta2_pow *= c->beta2;
        }
    }
    return 0;
}

void fw_optim_clear_grad(fw_optim *o, bool set_to_zero)
{
    for (size_t i = 0; i < o->n; i++)
        fw_tensor_clear_grad(o->params[i], set_to_zero);
}

/* ---- state ---- */

static const char *const momentum_names[] = { "velocity" };
static const char *const adam_names[] = { "moment1", "moment2", "beta1_pow_acc",
                                          "beta2_pow_acc" };

const char *const *fw_optim_state_names(const fw_optim *o, size_t *n)
{
    switch (o->cfg.kind) {
    case FW_OPTIM_MOMENTUM:
        *n = 1;
        return momentum_names;
    case FW_OPTIM_ADAM:
    case FW_OPTIM_ADAMW:
        *n = 4;
        return adam_names;
    default:
        *n = 0;
        return adam_names;
    }
}

/* Which slot a name denotes: 1 buf1, 2 buf2, 3 beta1_pow, 4 beta2_pow. */
static int state_slot(const fw_optim *o, const char *name)
{
    size_t n;
    const char *const *names = fw_optim_state_names(o, &n);
    for (size_t k = 0; name != NULL && k < n; k++)
        if (strcmp(names[k], name) == 0)
            return (int)k + 1;
    return fw_error_set(FW_EINVAL, "optimizer: no state named '%s' for this optimizer",
                        name ? name : "(null)");
}

int fw_optim_state_get(fw_tensor **out, const fw_optim *o, size_t i, const char *name)
{
    int slot;

    *out = NULL;
    if (i >= o->n)
        return fw_error_set(FW_ERANGE, "optimizer: param index %zu of %zu", i, o->n);
    if ((slot = state_slot(o, name)) < 0)
        return slot;
    const param_state *s = &o->st[i];
    if (s->buf1 == NULL)
        return fw_error_set(FW_ERANGE, "optimizer: param %zu has no state yet", i);
    fw_tensor *p = o->params[i];
    if (slot <= 2)
        return fw_tensor_clone(out, slot == 1 ? s->buf1 : s->buf2);
    (void)p;
    float v = (float)(slot == 3 ? s->beta1_pow : s->beta2_pow);
    int64_t one = 1;
    return fw_tensor_from_data(out, &v, FW_FLOAT32, &one, 1);
}

int fw_optim_state_set(fw_optim *o, size_t i, const char *name, const fw_tensor *value)
{
    int slot, err;
    char a[96], b[96];

    if (i >= o->n)
        return fw_error_set(FW_ERANGE, "optimizer: param index %zu of %zu", i, o->n);
    if ((slot = state_slot(o, name)) < 0)
        return slot;
    if (value == NULL)
        return fw_error_set(FW_EINVAL, "optimizer: NULL value for state '%s'", name);
    fw_tensor *p = o->params[i];
    if (slot <= 2) {
        if (fw_tensor_numel(value) != fw_tensor_numel(p) ||
            fw_tensor_ndim(value) != fw_tensor_ndim(p) ||
            memcmp(fw_tensor_shape(value), fw_tensor_shape(p),
                   (size_t)fw_tensor_ndim(p) * sizeof(int64_t)) != 0)
            return fw_error_set(FW_ESHAPE, "optimizer: state '%s' of shape %s for param of "
                                "shape %s", name, fw_tensor_shape_str(a, sizeof(a), value),
                                fw_tensor_shape_str(b, sizeof(b), p));
    } else if (fw_tensor_numel(value) != 1) {
        return fw_error_set(FW_ESHAPE, "optimizer: state '%s' needs one value, got shape %s",
                            name, fw_tensor_shape_str(a, sizeof(a), value));
    }
    if (!fw_dtype_is_float(fw_tensor_dtype(value)))
        return fw_error_set(FW_EDTYPE, "optimizer: state '%s' must be floating point, got %s",
                            name, fw_dtype_name(fw_tensor_dtype(value)));
    /* convert first (to the param's device and dtype) so a failure leaves
     * the state untouched */
    fw_tensor *v = NULL, *c = NULL;
    bool was = fw_set_grad_enabled(false);
    double one = 0;
    fw_device dev = slot <= 2 ? fw_tensor_device(p) : FW_CPU;
    err = fw_tensor_to(&v, (fw_tensor *)value, dev);
    if (err == 0)
        err = slot <= 2 ? fw_cast(&c, v, fw_tensor_dtype(p)) : fw_tensor_item(&one, v);
    fw_set_grad_enabled(was);
    if (err == 0)
        err = ensure_state(o, i);
    if (err == 0) {
        param_state *s = &o->st[i];
        if (slot == 3)
            s->beta1_pow = one;
        else if (slot == 4)
            s->beta2_pow = one;
        else
            err = fw_tensor_assign(slot == 1 ? s->buf1 : s->buf2, c);
    }
    fw_tensor_unref(c);
    fw_tensor_unref(v);
    return err;
}
