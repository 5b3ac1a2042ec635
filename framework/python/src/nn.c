/*
 * nn.c - paddle._C functions over fw/nn.h (linear, conv, pooling, norms,
 * dropout, embedding, softmax, losses, recurrent cells) and fw/init.h.
 */
#include "pyc.h"

#include <string.h>

/* Fill exactly `n` int64 values from an int (repeated) or a sequence. */
static int ints_n(PyObject *o, int64_t *v, int n, const char *what)
{
    int k;
    int64_t tmp[8];
    if (pyc_int64_list(o, tmp, 8, &k, what) < 0)
        return -1;
    if (k == 1) {
        for (int i = 0; i < n; i++)
            v[i] = tmp[0];
        return 0;
    }
    if (k != n) {
        PyErr_Format(PyExc_ValueError, "%s must have %d values, got %d", what, n, k);
        return -1;
    }
    memcpy(v, tmp, sizeof(int64_t) * (size_t)n);
    return 0;
}

static PyObject *f_linear(PyObject *self, PyObject *args)
{
    PyObject *xo, *wo, *bo = Py_None;
    if (!PyArg_ParseTuple(args, "OO|O:linear", &xo, &wo, &bo))
        return NULL;
    fw_tensor *x, *w, *b, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(wo, &w, "weight") < 0 ||
        pyc_tensor_or_none(bo, &b, "bias") < 0)
        return NULL;
    int rc = fw_linear(&r, x, w, b);
    PYC_RET(rc, r);
}

static PyObject *f_conv2d(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "weight", "bias", "stride", "padding", "dilation", "groups", NULL};
    PyObject *xo, *wo, *bo = Py_None, *so = NULL, *po = NULL, *dio = NULL;
    long long groups = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOOOL:conv2d", kwl, &xo, &wo, &bo, &so, &po,
                                     &dio, &groups))
        return NULL;
    fw_tensor *x, *w, *b, *r;
    int64_t st[2] = {1, 1}, pad[4] = {0, 0, 0, 0}, dil[2] = {1, 1};
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(wo, &w, "weight") < 0 ||
        pyc_tensor_or_none(bo, &b, "bias") < 0 || (so && ints_n(so, st, 2, "stride") < 0) ||
        (po && ints_n(po, pad, 4, "padding") < 0) || (dio && ints_n(dio, dil, 2, "dilation") < 0))
        return NULL;
    int rc;
    /* hold references while the GIL is released: another thread may rebind
     * the Python objects (Tensor._share) meanwhile */
    fw_tensor_ref(x);
    fw_tensor_ref(w);
    fw_tensor_ref(b);
    Py_BEGIN_ALLOW_THREADS
    rc = fw_conv2d(&r, x, w, b, st, pad, dil, groups);
    fw_tensor_unref(x);
    fw_tensor_unref(w);
    fw_tensor_unref(b);
    Py_END_ALLOW_THREADS
    PYC_RET(rc, r);
}

static PyObject *f_conv1d(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "weight", "bias", "stride", "padding", "dilation", "groups", NULL};
    PyObject *xo, *wo, *bo = Py_None, *po = NULL;
    long long stride = 1, dil = 1, groups = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OLOLL:conv1d", kwl, &xo, &wo, &bo, &stride,
                                     &po, &dil, &groups))
        return NULL;
    fw_tensor *x, *w, *b, *r;
    int64_t pad[2] = {0, 0};
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_arg(wo, &w, "weight") < 0 ||
        pyc_tensor_or_none(bo, &b, "bias") < 0 || (po && ints_n(po, pad, 2, "padding") < 0))
        return NULL;
    int rc = fw_conv1d(&r, x, w, b, stride, pad, dil, groups);
    PYC_RET(rc, r);
}

static PyObject *with_mask(int rc, fw_tensor *r, fw_tensor *m, int want)
{
    if (rc < 0)
        return pyc_raise(rc);
    if (!want)
        return pyc_wrap(r);
    PyObject *a = pyc_wrap(r), *b = pyc_wrap(m);
    if (!a || !b) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        return NULL;
    }
    return Py_BuildValue("(NN)", a, b);
}

static PyObject *f_max_pool2d(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "kernel_size", "stride", "padding", "ceil_mode", "return_mask", NULL};
    PyObject *xo, *ko, *so = Py_None, *po = NULL;
    int ceil = 0, rm = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOpp:max_pool2d", kwl, &xo, &ko, &so, &po,
                                     &ceil, &rm))
        return NULL;
    fw_tensor *x, *r = NULL, *m = NULL;
    int64_t k[2], s[2], p[2] = {0, 0};
    if (pyc_tensor_arg(xo, &x, "x") < 0 || ints_n(ko, k, 2, "kernel_size") < 0 ||
        (so != Py_None && ints_n(so, s, 2, "stride") < 0) || (po && ints_n(po, p, 2, "padding") < 0))
        return NULL;
    int rc = fw_max_pool2d(&r, rm ? &m : NULL, x, k, so == Py_None ? NULL : s, p, ceil != 0);
    return with_mask(rc, r, m, rm);
}

static PyObject *f_avg_pool2d(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "kernel_size", "stride", "padding", "ceil_mode", "exclusive", NULL};
    PyObject *xo, *ko, *so = Py_None, *po = NULL;
    int ceil = 0, ex = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOpp:avg_pool2d", kwl, &xo, &ko, &so, &po,
                                     &ceil, &ex))
        return NULL;
    fw_tensor *x, *r;
    int64_t k[2], s[2], p[2] = {0, 0};
    if (pyc_tensor_arg(xo, &x, "x") < 0 || ints_n(ko, k, 2, "kernel_size") < 0 ||
        (so != Py_None && ints_n(so, s, 2, "stride") < 0) || (po && ints_n(po, p, 2, "padding") < 0))
        return NULL;
    int rc = fw_avg_pool2d(&r, x, k, so == Py_None ? NULL : s, p, ceil != 0, ex != 0);
    PYC_RET(rc, r);
}

static PyObject *f_adaptive_avg_pool2d(PyObject *self, PyObject *args)
{
    PyObject *xo, *oo;
    if (!PyArg_ParseTuple(args, "OO:adaptive_avg_pool2d", &xo, &oo))
        return NULL;
    fw_tensor *x, *r;
    int64_t o[2];
    if (pyc_tensor_arg(xo, &x, "x") < 0 || ints_n(oo, o, 2, "output_size") < 0)
        return NULL;
    int rc = fw_adaptive_avg_pool2d(&r, x, o);
    PYC_RET(rc, r);
}

static PyObject *f_max_pool1d(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "kernel_size", "stride", "padding", "ceil_mode", "return_mask", NULL};
    PyObject *xo;
    long long k, s = 0, p = 0;
    int ceil = 0, rm = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OL|LLpp:max_pool1d", kwl, &xo, &k, &s, &p,
                                     &ceil, &rm))
        return NULL;
    fw_tensor *x, *r = NULL, *m = NULL;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_max_pool1d(&r, rm ? &m : NULL, x, k, s, p, ceil != 0);
    return with_mask(rc, r, m, rm);
}

static PyObject *f_avg_pool1d(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "kernel_size", "stride", "padding", "ceil_mode", "exclusive", NULL};
    PyObject *xo;
    long long k, s = 0, p = 0;
    int ceil = 0, ex = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OL|LLpp:avg_pool1d", kwl, &xo, &k, &s, &p,
                                     &ceil, &ex))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_avg_pool1d(&r, x, k, s, p, ceil != 0, ex != 0);
    PYC_RET(rc, r);
}

static PyObject *f_adaptive_avg_pool1d(PyObject *self, PyObject *args)
{
    PyObject *xo;
    long long o;
    if (!PyArg_ParseTuple(args, "OL:adaptive_avg_pool1d", &xo, &o))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = fw_adaptive_avg_pool1d(&r, x, o);
    PYC_RET(rc, r);
}

static PyObject *f_batch_norm(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "running_mean", "running_var", "weight", "bias", "training",
                          "momentum", "epsilon", NULL};
    PyObject *xo, *mo, *vo, *wo = Py_None, *bo = Py_None;
    int training = 0;
    double mom = 0.9, eps = 1e-5;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OOO|OOpdd:batch_norm", kwl, &xo, &mo, &vo, &wo,
                                     &bo, &training, &mom, &eps))
        return NULL;
    fw_tensor *x, *m, *v, *w, *b, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_tensor_or_none(mo, &m, "running_mean") < 0 ||
        pyc_tensor_or_none(vo, &v, "running_var") < 0 || pyc_tensor_or_none(wo, &w, "weight") < 0 ||
        pyc_tensor_or_none(bo, &b, "bias") < 0)
        return NULL;
    int rc = fw_batch_norm(&r, x, m, v, w, b, training != 0, mom, eps);
    PYC_RET(rc, r);
}

static PyObject *f_layer_norm(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "normalized_shape", "weight", "bias", "epsilon", NULL};
    PyObject *xo, *so, *wo = Py_None, *bo = Py_None;
    double eps = 1e-5;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOd:layer_norm", kwl, &xo, &so, &wo, &bo, &eps))
        return NULL;
    fw_tensor *x, *w, *b, *r;
    int64_t shape[FW_MAX_DIMS];
    int n;
    if (pyc_tensor_arg(xo, &x, "x") < 0 || pyc_shape_arg(so, shape, &n) < 0 ||
        pyc_tensor_or_none(wo, &w, "weight") < 0 || pyc_tensor_or_none(bo, &b, "bias") < 0)
        return NULL;
    int rc = fw_layer_norm(&r, x, shape, n, w, b, eps);
    PYC_RET(rc, r);
}

static PyObject *f_dropout(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"x", "p", "training", "mode", NULL};
    PyObject *xo;
    double p = 0.5;
    int training = 1;
    const char *mode = "upscale_in_train";
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|dps:dropout", kwl, &xo, &p, &training, &mode))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    fw_dropout_mode m;
    if (strcmp(mode, "upscale_in_train") == 0)
        m = FW_DROPOUT_UPSCALE_IN_TRAIN;
    else if (strcmp(mode, "downscale_in_infer") == 0)
        m = FW_DROPOUT_DOWNSCALE_IN_INFER;
    else {
        PyErr_Format(PyExc_ValueError, "dropout: mode must be 'upscale_in_train' or "
                     "'downscale_in_infer', got '%s'", mode);
        return NULL;
    }
    int rc = fw_dropout(&r, x, p, training != 0, m, NULL);
    PYC_RET(rc, r);
}

static PyObject *f_embedding(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"ids", "weight", "padding_idx", NULL};
    PyObject *io, *wo, *po = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O:embedding", kwl, &io, &wo, &po))
        return NULL;
    fw_tensor *i, *w, *r;
    if (pyc_tensor_arg(io, &i, "ids") < 0 || pyc_tensor_arg(wo, &w, "weight") < 0)
        return NULL;
    int64_t pad = FW_NO_PADDING;
    if (po != Py_None && (pad = PyLong_AsLongLong(po)) == -1 && PyErr_Occurred())
        return NULL;
    int rc = fw_embedding(&r, i, w, pad);
    PYC_RET(rc, r);
}

static PyObject *softmax_op(PyObject *args, PyObject *kw, int lg)
{
    static char *kwl[] = {"x", "axis", NULL};
    PyObject *xo;
    int axis = -1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|i", kwl, &xo, &axis))
        return NULL;
    fw_tensor *x, *r;
    if (pyc_tensor_arg(xo, &x, "x") < 0)
        return NULL;
    int rc = lg ? fw_log_softmax(&r, x, axis) : fw_softmax(&r, x, axis);
    PYC_RET(rc, r);
}
static PyObject *f_softmax(PyObject *s, PyObject *a, PyObject *k) { return softmax_op(a, k, 0); }
static PyObject *f_log_softmax(PyObject *s, PyObject *a, PyObject *k) { return softmax_op(a, k, 1); }

static PyObject *f_cross_entropy(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"input", "label", "weight", "ignore_index", "reduction", "soft_label",
                          "axis", "use_softmax", "label_smoothing", NULL};
    PyObject *xo, *lo, *wo = Py_None, *ro = Py_None;
    long long ign = -100;
    int soft = 0, axis = -1, use_sm = 1;
    double ls = 0.0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OLOpipd:cross_entropy", kwl, &xo, &lo, &wo,
                                     &ign, &ro, &soft, &axis, &use_sm, &ls))
        return NULL;
    fw_cross_entropy_opts o = FW_CROSS_ENTROPY_DEFAULTS;
    fw_tensor *x, *l, *r;
    if (pyc_tensor_arg(xo, &x, "input") < 0 || pyc_tensor_arg(lo, &l, "label") < 0 ||
        pyc_tensor_or_none(wo, &o.weight, "weight") < 0 || pyc_reduction_arg(ro, &o.reduction) < 0)
        return NULL;
    o.ignore_index = ign;
    o.soft_label = soft != 0;
    o.axis = axis;
    o.use_softmax = use_sm != 0;
    o.label_smoothing = ls;
    int rc = fw_cross_entropy(&r, x, l, &o);
    PYC_RET(rc, r);
}

static PyObject *f_nll_loss(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"input", "label", "weight", "ignore_index", "reduction", NULL};
    PyObject *xo, *lo, *wo = Py_None, *ro = Py_None;
    long long ign = -100;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OLO:nll_loss", kwl, &xo, &lo, &wo, &ign, &ro))
        return NULL;
    fw_tensor *x, *l, *w, *r;
    fw_reduction red;
    if (pyc_tensor_arg(xo, &x, "input") < 0 || pyc_tensor_arg(lo, &l, "label") < 0 ||
        pyc_tensor_or_none(wo, &w, "weight") < 0 || pyc_reduction_arg(ro, &red) < 0)
        return NULL;
    int rc = fw_nll_loss(&r, x, l, w, ign, red);
    PYC_RET(rc, r);
}

static PyObject *pointwise_loss(PyObject *args, PyObject *kw, int l1)
{
    static char *kwl[] = {"input", "label", "reduction", NULL};
    PyObject *xo, *lo, *ro = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|O", kwl, &xo, &lo, &ro))
        return NULL;
    fw_tensor *x, *l, *r;
    fw_reduction red;
    if (pyc_tensor_arg(xo, &x, "input") < 0 || pyc_tensor_arg(lo, &l, "label") < 0 ||
        pyc_reduction_arg(ro, &red) < 0)
        return NULL;
    int rc = l1 ? fw_l1_loss(&r, x, l, red) : fw_mse_loss(&r, x, l, red);
    PYC_RET(rc, r);
}
static PyObject *f_mse_loss(PyObject *s, PyObject *a, PyObject *k) { return pointwise_loss(a, k, 0); }
static PyObject *f_l1_loss(PyObject *s, PyObject *a, PyObject *k) { return pointwise_loss(a, k, 1); }

static PyObject *f_bce(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"input", "label", "weight", "reduction", NULL};
    PyObject *xo, *lo, *wo = Py_None, *ro = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OO:binary_cross_entropy", kwl, &xo, &lo, &wo, &ro))
        return NULL;
    fw_tensor *x, *l, *w, *r;
    fw_reduction red;
    if (pyc_tensor_arg(xo, &x, "input") < 0 || pyc_tensor_arg(lo, &l, "label") < 0 ||
        pyc_tensor_or_none(wo, &w, "weight") < 0 || pyc_reduction_arg(ro, &red) < 0)
        return NULL;
    int rc = fw_binary_cross_entropy(&r, x, l, w, red);
    PYC_RET(rc, r);
}

static PyObject *f_bce_logits(PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwl[] = {"logit", "label", "weight", "pos_weight", "reduction", NULL};
    PyObject *xo, *lo, *wo = Py_None, *po = Py_None, *ro = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "OO|OOO:binary_cross_entropy_with_logits", kwl,
                                     &xo, &lo, &wo, &po, &ro))
        return NULL;
    fw_tensor *x, *l, *w, *p, *r;
    fw_reduction red;
    if (pyc_tensor_arg(xo, &x, "logit") < 0 || pyc_tensor_arg(lo, &l, "label") < 0 ||
        pyc_tensor_or_none(wo, &w, "weight") < 0 || pyc_tensor_or_none(po, &p, "pos_weight") < 0 ||
        pyc_reduction_arg(ro, &red) < 0)
        return NULL;
    int rc = fw_binary_cross_entropy_with_logits(&r, x, l, w, p, red);
    PYC_RET(rc, r);
}

static int tensors_opt(PyObject *const *objs, fw_tensor **ts, int n, int required)
{
    for (int i = 0; i < n; i++) {
        if (i < required) {
            if (pyc_tensor_arg(objs[i], &ts[i], "argument") < 0)
                return -1;
        } else if (pyc_tensor_or_none(objs[i], &ts[i], "argument") < 0)
            return -1;
    }
    return 0;
}

static PyObject *f_lstm_cell(PyObject *self, PyObject *args)
{
    PyObject *o[7];
    if (!PyArg_ParseTuple(args, "OOOOOOO:lstm_cell", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5], &o[6]))
        return NULL;
    fw_tensor *t[7], *h, *c;
    /* x, h, c, w_ih, w_hh, b_ih, b_hh: x, w_ih, w_hh required */
    if (tensors_opt(o, t, 7, 0) < 0)
        return NULL;
    if (!t[0] || !t[3] || !t[4]) {
        PyErr_SetString(PyExc_TypeError, "lstm_cell: x, w_ih and w_hh are required");
        return NULL;
    }
    int rc = fw_lstm_cell(&h, &c, t[0], t[1], t[2], t[3], t[4], t[5], t[6]);
    return with_mask(rc, h, c, 1);
}

static PyObject *f_gru_cell(PyObject *self, PyObject *args)
{
    PyObject *o[6];
    if (!PyArg_ParseTuple(args, "OOOOOO:gru_cell", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5]))
        return NULL;
    fw_tensor *t[6], *h;
    if (tensors_opt(o, t, 6, 0) < 0)
        return NULL;
    if (!t[0] || !t[2] || !t[3]) {
        PyErr_SetString(PyExc_TypeError, "gru_cell: x, w_ih and w_hh are required");
        return NULL;
    }
    int rc = fw_gru_cell(&h, t[0], t[1], t[2], t[3], t[4], t[5]);
    PYC_RET(rc, h);
}

static PyObject *f_lstm_sequence(PyObject *self, PyObject *args)
{
    PyObject *o[7];
    int tm = 0;
    if (!PyArg_ParseTuple(args, "OOOOOOO|p:lstm_sequence", &o[0], &o[1], &o[2], &o[3], &o[4],
                          &o[5], &o[6], &tm))
        return NULL;
    fw_tensor *t[7], *y, *h, *c;
    if (tensors_opt(o, t, 7, 0) < 0)
        return NULL;
    if (!t[0] || !t[3] || !t[4]) {
        PyErr_SetString(PyExc_TypeError, "lstm_sequence: x, w_ih and w_hh are required");
        return NULL;
    }
    int rc = fw_lstm_sequence(&y, &h, &c, t[0], t[1], t[2], t[3], t[4], t[5], t[6], tm != 0);
    if (rc < 0)
        return pyc_raise(rc);
    PyObject *a = pyc_wrap(y), *b = pyc_wrap(h), *d = pyc_wrap(c);
    if (!a || !b || !d) {
        Py_XDECREF(a);
        Py_XDECREF(b);
        Py_XDECREF(d);
        return NULL;
    }
    return Py_BuildValue("(NNN)", a, b, d);
}

static PyObject *f_gru_sequence(PyObject *self, PyObject *args)
{
    PyObject *o[6];
    int tm = 0;
    if (!PyArg_ParseTuple(args, "OOOOOO|p:gru_sequence", &o[0], &o[1], &o[2], &o[3], &o[4], &o[5],
                          &tm))
        return NULL;
    fw_tensor *t[6], *y, *h;
    if (tensors_opt(o, t, 6, 0) < 0)
        return NULL;
    if (!t[0] || !t[2] || !t[3]) {
        PyErr_SetString(PyExc_TypeError, "gru_sequence: x, w_ih and w_hh are required");
        return NULL;
    }
    int rc = fw_gru_sequence(&y, &h, t[0], t[1], t[2], t[3], t[4], t[5], tm != 0);
    return with_mask(rc, y, h, 1);
}

/* ---- initializers ---------------------------------------------------------------- */

static PyObject *done(int rc)
{
    if (rc < 0)
        return pyc_raise(rc);
    Py_RETURN_NONE;
}

static PyObject *f_init_constant(PyObject *self, PyObject *args)
{
    PyObject *to;
    double v;
    fw_tensor *t;
    if (!PyArg_ParseTuple(args, "Od:init_constant", &to, &v) || pyc_tensor_arg(to, &t, "t") < 0)
        return NULL;
    return done(fw_init_constant(t, v));
}

static PyObject *f_init_uniform(PyObject *self, PyObject *args)
{
    PyObject *to;
    double a, b;
    fw_tensor *t;
    if (!PyArg_ParseTuple(args, "Odd:init_uniform", &to, &a, &b) || pyc_tensor_arg(to, &t, "t") < 0)
        return NULL;
    return done(fw_init_uniform(t, a, b, NULL));
}

static PyObject *f_init_normal(PyObject *self, PyObject *args)
{
    PyObject *to;
    double a, b;
    fw_tensor *t;
    if (!PyArg_ParseTuple(args, "Odd:init_normal", &to, &a, &b) || pyc_tensor_arg(to, &t, "t") < 0)
        return NULL;
    return done(fw_init_normal(t, a, b, NULL));
}

static PyObject *f_init_truncated_normal(PyObject *self, PyObject *args)
{
    PyObject *to;
    double m, s, a = -2.0, b = 2.0;
    fw_tensor *t;
    if (!PyArg_ParseTuple(args, "Odd|dd:init_truncated_normal", &to, &m, &s, &a, &b) ||
        pyc_tensor_arg(to, &t, "t") < 0)
        return NULL;
    return done(fw_init_truncated_normal(t, m, s, a, b, NULL));
}

static PyObject *xavier(PyObject *args, PyObject *kw, int normal)
{
    static char *kwl[] = {"t", "gain", "fan_in", "fan_out", NULL};
    PyObject *to;
    double gain = 1.0;
    long long fi = -1, fo = -1;
    fw_tensor *t;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|dLL", kwl, &to, &gain, &fi, &fo) ||
        pyc_tensor_arg(to, &t, "t") < 0)
        return NULL;
    return done(normal ? fw_init_xavier_normal(t, gain, fi, fo, NULL)
                       : fw_init_xavier_uniform(t, gain, fi, fo, NULL));
}
static PyObject *f_init_xavier_uniform(PyObject *s, PyObject *a, PyObject *k) { return xavier(a, k, 0); }
static PyObject *f_init_xavier_normal(PyObject *s, PyObject *a, PyObject *k) { return xavier(a, k, 1); }

static int nonlin_arg(const char *s, fw_nonlinearity *nl)
{
    if (!s || strcmp(s, "linear") == 0 || strcmp(s, "sigmoid") == 0 || strncmp(s, "conv", 4) == 0)
        *nl = FW_NONLIN_LINEAR;
    else if (strcmp(s, "tanh") == 0)
        *nl = FW_NONLIN_TANH;
    else if (strcmp(s, "relu") == 0)
        *nl = FW_NONLIN_RELU;
    else if (strcmp(s, "leaky_relu") == 0)
        *nl = FW_NONLIN_LEAKY_RELU;
    else if (strcmp(s, "selu") == 0)
        *nl = FW_NONLIN_SELU;
    else {
        PyErr_Format(PyExc_ValueError, "unsupported nonlinearity '%s'", s);
        return -1;
    }
    return 0;
}

static PyObject *kaiming(PyObject *args, PyObject *kw, int uni)
{
    static char *kwl[] = {"t", "nonlinearity", "negative_slope", "use_fan_out", "fan", NULL};
    PyObject *to;
    const char *nls = "relu";
    double slope = 0.0;
    int fo = 0;
    long long fan = -1;
    fw_tensor *t;
    fw_nonlinearity nl;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|sdpL", kwl, &to, &nls, &slope, &fo, &fan) ||
        pyc_tensor_arg(to, &t, "t") < 0 || nonlin_arg(nls, &nl) < 0)
        return NULL;
    return done(uni ? fw_init_kaiming_uniform(t, nl, slope, fo != 0, fan, NULL)
                    : fw_init_kaiming_normal(t, nl, slope, fo != 0, fan, NULL));
}
static PyObject *f_init_kaiming_normal(PyObject *s, PyObject *a, PyObject *k) { return kaiming(a, k, 0); }
static PyObject *f_init_kaiming_uniform(PyObject *s, PyObject *a, PyObject *k) { return kaiming(a, k, 1); }

static PyObject *f_init_assign(PyObject *self, PyObject *args)
{
    PyObject *to, *so;
    fw_tensor *t, *s = NULL;
    if (!PyArg_ParseTuple(args, "OO:init_assign", &to, &so) || pyc_tensor_arg(to, &t, "t") < 0 ||
        pyc_tensor_or_scalar(so, &s, fw_tensor_dtype(t)) < 0)
        return NULL;
    int rc = fw_init_assign(t, s);
    fw_tensor_unref(s);
    return done(rc);
}

static PyObject *f_init_linear_default(PyObject *self, PyObject *args)
{
    PyObject *wo, *bo = Py_None;
    fw_tensor *w, *b;
    if (!PyArg_ParseTuple(args, "O|O:init_linear_default", &wo, &bo) ||
        pyc_tensor_arg(wo, &w, "weight") < 0 || pyc_tensor_or_none(bo, &b, "bias") < 0)
        return NULL;
    return done(fw_init_linear_default(w, b, NULL));
}

static PyObject *f_init_conv_default(PyObject *self, PyObject *args)
{
    PyObject *wo, *bo = Py_None;
    long long g = 1;
    fw_tensor *w, *b;
    if (!PyArg_ParseTuple(args, "O|OL:init_conv_default", &wo, &bo, &g) ||
        pyc_tensor_arg(wo, &w, "weight") < 0 || pyc_tensor_or_none(bo, &b, "bias") < 0)
        return NULL;
    return done(fw_init_conv_default(w, b, g, NULL));
}

static PyObject *f_init_gain(PyObject *self, PyObject *args)
{
    const char *s;
    PyObject *po = Py_None;
    fw_nonlinearity nl;
    if (!PyArg_ParseTuple(args, "s|O:init_gain", &s, &po) || nonlin_arg(s, &nl) < 0)
        return NULL;
    double slope = 0.01;
    if (po != Py_None && (slope = PyFloat_AsDouble(po)) == -1.0 && PyErr_Occurred())
        return NULL;
    return PyFloat_FromDouble(fw_init_gain(nl, slope));
}

static PyObject *f_init_fans(PyObject *self, PyObject *arg)
{
    fw_tensor *t;
    if (pyc_tensor_arg(arg, &t, "t") < 0)
        return NULL;
    int64_t fi, fo;
    fw_init_fans(&fi, &fo, t);
    return Py_BuildValue("(LL)", (long long)fi, (long long)fo);
}

PyMethodDef pyc_nn_methods[] = {
    {"linear", f_linear, METH_VARARGS, NULL},
    {"conv2d", PYC_FAST(f_conv2d), PYC_KW, NULL},
    {"conv1d", PYC_FAST(f_conv1d), PYC_KW, NULL},
    {"max_pool2d", PYC_FAST(f_max_pool2d), PYC_KW, NULL},
    {"avg_pool2d", PYC_FAST(f_avg_pool2d), PYC_KW, NULL},
    {"adaptive_avg_pool2d", f_adaptive_avg_pool2d, METH_VARARGS, NULL},
    {"max_pool1d", PYC_FAST(f_max_pool1d), PYC_KW, NULL},
    {"avg_pool1d", PYC_FAST(f_avg_pool1d), PYC_KW, NULL},
    {"adaptive_avg_pool1d", f_adaptive_avg_pool1d, METH_VARARGS, NULL},
    {"batch_norm", PYC_FAST(f_batch_norm), PYC_KW, NULL},
    {"layer_norm", PYC_FAST(f_layer_norm), PYC_KW, NULL},
    {"dropout", PYC_FAST(f_dropout), PYC_KW, NULL},
    {"embedding", PYC_FAST(f_embedding), PYC_KW, NULL},
    {"softmax", PYC_FAST(f_softmax), PYC_KW, NULL},
    {"log_softmax", PYC_FAST(f_log_softmax), PYC_KW, NULL},
    {"cross_entropy", PYC_FAST(f_cross_entropy), PYC_KW, NULL},
    {"nll_loss", PYC_FAST(f_nll_loss), PYC_KW, NULL},
    {"mse_loss", PYC_FAST(f_mse_loss), PYC_KW, NULL},
    {"l1_loss", PYC_FAST(f_l1_loss), PYC_KW, NULL},
    {"binary_cross_entropy", PYC_FAST(f_bce), PYC_KW, NULL},
    {"binary_cross_entropy_with_logits", PYC_FAST(f_bce_logits), PYC_KW, NULL},
    {"lstm_cell", f_lstm_cell, METH_VARARGS, NULL},
    {"gru_cell", f_gru_cell, METH_VARARGS, NULL},
    {"lstm_sequence", f_lstm_sequence, METH_VARARGS, NULL},
    {"gru_sequence", f_gru_sequence, METH_VARARGS, NULL},
    {"init_constant", f_init_constant, METH_VARARGS, NULL},
    {"init_uniform", f_init_uniform, METH_VARARGS, NULL},
    {"init_normal", f_init_normal, METH_VARARGS, NULL},
    {"init_truncated_normal", f_init_truncated_normal, METH_VARARGS, NULL},
    {"init_xavier_uniform", PYC_FAST(f_init_xavier_uniform), PYC_KW, NULL},
    {"init_xavier_normal", PYC_FAST(f_init_xavier_normal), PYC_KW, NULL},
    {"init_kaiming_normal", PYC_FAST(f_init_kaiming_normal), PYC_KW, NULL},
    {"init_kaiming_uniform", PYC_FAST(f_init_kaiming_uniform), PYC_KW, NULL},
    {"init_assign", f_init_assign, METH_VARARGS, NULL},
    {"init_linear_default", f_init_linear_default, METH_VARARGS, NULL},
    {"init_conv_default", f_init_conv_default, METH_VARARGS, NULL},
    {"init_gain", f_init_gain, METH_VARARGS, NULL},
    {"init_fans", f_init_fans, METH_O, NULL},
    {NULL, NULL, 0, NULL}};
