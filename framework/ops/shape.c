/* shape.c - views and shape ops: reshape, flatten, squeeze, unsqueeze,
 * transpose, slice, select, expand, contiguous, clone. Views share storage;
 * each records a backward that maps the gradient back to the input shape. */
#include "core/fw_backend.h"
#include "core/fw_op.h"

#include <string.h>

int fw__copy_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt);

/* ---- backward helpers ------------------------------------------------------------ */

/* The gradient of an order-preserving view (reshape, squeeze, unsqueeze,
 * flatten): reshape it back. */
static int reshape_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    int nd;
    const int64_t *shape = fw_node_input_shape(n, 0, &nd);
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return fw_op_reshape(&gin[0], gout[0], shape, nd);
}

static int identity_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    if (fw_node_needs_grad(n, 0))
        gin[0] = fw_tensor_ref(gout[0]);
    return 0;
}

/* A view of x with the given geometry, recording `backward`. */
static int make_view(fw_tensor **out, const char *name, fw_tensor *x, const int64_t *shape,
                     const int64_t *strides, int nd, int64_t offset, fw_backward_fn backward,
                     fw_node **node_out, size_t attr_size)
{
    fw_tensor *y = NULL;
    fw_node *node = NULL;
    int err;

    *out = NULL;
    if ((err = fw__tensor_view(&y, x, shape, strides, nd, offset)) < 0)
        return err;
    if ((err = fw_node_record(&node, name, backward, 1, &x, 1, &y, 0, attr_size)) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    if (node_out)
        *node_out = node;
    *out = y;
    return 0;
}

/* Strides for viewing x (possibly non-contiguous) with a new shape without
 * copying, or false (the algorithm of NumPy's _attempt_nocopy_reshape). */
static bool view_strides(int64_t *nst, const fw_tensor *x, const int64_t *shape, int nd)
{
    int64_t ost[FW_MAX_DIMS], osh[FW_MAX_DIMS];
    int on = 0;

    for (int i = 0; i < x->ndim; i++)
        if (x->shape[i] != 1) {
            osh[on] = x->shape[i];
            ost[on++] = x->strides[i];
        }
    int oi = 0, oj = 1, ni = 0, nj = 1;
    while (ni < nd && oi < on) {
        int64_t np = shape[ni], op = osh[oi];
        while (np != op) {
            if (np < op) {
                if (nj >= nd)
                    return false;
                np *= shape[nj++];
            } else {
                if (oj >= on)
                    return false;
                op *= osh[oj++];
            }
        }
        for (int ok = oi; ok < oj - 1; ok++)
            if (ost[ok] != osh[ok + 1] * ost[ok + 1])
                return false;
        nst[nj - 1] = ost[oj - 1];
        for (int nk = nj - 1; nk > ni; nk--)
            nst[nk - 1] = nst[nk] * shape[nk];
        ni = nj++;
        oi = oj++;
    }
    /* trailing size-1 dims */
    for (int k = ni; k < nd; k++)
        nst[k] = (k + 1 < nd ? nst[k + 1] * shape[k + 1] : 1);
    return true;
}

int fw_op_reshape(fw_tensor **out, fw_tensor *x, const int64_t *shape, int nd)
{
    int64_t st[FW_MAX_DIMS], numel = 1;
    fw_tensor *d = NULL;
    int err;

    *out = NULL;
    for (int i = 0; i < nd; i++)
        numel *= shape[i];
    if (numel != x->numel) {
        char a[160], b[160];
        return fw_error_set(FW_ESHAPE, "reshape: cannot reshape %s (%lld elements) into %s",
                            fw_tensor_shape_str(a, sizeof(a), x), (long long)x->numel,
                            fw_shape_format(b, sizeof(b), shape, nd));
    }
    if (fw_tensor_is_contiguous(x) || numel == 0) {
        fw__contiguous_strides(st, shape, nd);
        return make_view(out, "reshape", x, shape, st, nd, x->offset, reshape_backward, NULL, 0);
    }
    if (view_strides(st, x, shape, nd))
        return make_view(out, "reshape", x, shape, st, nd, x->offset, reshape_backward, NULL, 0);
    /* not viewable: copy (the copy's node passes the gradient through) */
    if ((err = fw_contiguous(&d, x)) < 0)
        return err;
    fw__contiguous_strides(st, shape, nd);
    err = make_view(out, "reshape", d, shape, st, nd, d->offset, reshape_backward, NULL, 0);
    fw_tensor_unref(d);
    return err;
}

int fw_reshape(fw_tensor **out, fw_tensor *x, const int64_t *shape, int nd)
{
    int64_t s[FW_MAX_DIMS], known = 1;
    int infer = -1;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "reshape: input is NULL");
    if (nd < 0 || nd > FW_MAX_DIMS || (nd > 0 && shape == NULL))
        return fw_error_set(FW_EINVAL, "reshape: rank %d is outside 0..%d", nd, FW_MAX_DIMS);
    for (int i = 0; i < nd; i++) {
        s[i] = shape[i];
        if (s[i] == 0) {
            if (i >= x->ndim)
                return fw_error_set(FW_ESHAPE, "reshape: 0 at axis %d copies a dim the input "
                                               "(rank %d) does not have", i, x->ndim);
            s[i] = x->shape[i];
        }
        if (s[i] == -1) {
            if (infer >= 0)
                return fw_error_set(FW_ESHAPE, "reshape: more than one -1 in the shape");
            infer = i;
            continue;
        }
        if (s[i] < 0)
            return fw_error_set(FW_ESHAPE, "reshape: negative dimension %lld",
                                (long long)shape[i]);
        known *= s[i];
    }
    if (infer >= 0) {
        if (known == 0 || x->numel % known != 0) {
            char a[160], b[160];
            return fw_error_set(FW_ESHAPE, "reshape: cannot reshape %s (%lld elements) into %s",
                                fw_tensor_shape_str(a, sizeof(a), x), (long long)x->numel,
                                fw_shape_format(b, sizeof(b), shape, nd));
        }
        s[infer] = x->numel / known;
    }
    return fw_op_reshape(out, x, s, nd);
}

int fw_flatten(fw_tensor **out, fw_tensor *x, int start_axis, int stop_axis)
{
    int64_t s[FW_MAX_DIMS];
    int a, b, err, nd = 0;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "flatten: input is NULL");
    if (x->ndim == 0) {
        int64_t one = 1;
        return fw_op_reshape(out, x, &one, 1);
    }
    if ((err = fw_op_axis(&a, "flatten", start_axis, x->ndim)) < 0 ||
        (err = fw_op_axis(&b, "flatten", stop_axis, x->ndim)) < 0)
        return err;
    if (a > b)
        return fw_error_set(FW_EAXIS, "flatten: start_axis %d is after stop_axis %d",
                            start_axis, stop_axis);
    for (int i = 0; i < a; i++)
        s[nd++] = x->shape[i];
    s[nd] = 1;
    for (int i = a; i <= b; i++)
        s[nd] *= x->shape[i];
    nd++;
    for (int i = b + 1; i < x->ndim; i++)
        s[nd++] = x->shape[i];
    return fw_op_reshape(out, x, s, nd);
}

int fw_squeeze(fw_tensor **out, fw_tensor *x, const int *axes, int naxes)
{
    int64_t s[FW_MAX_DIMS], st[FW_MAX_DIMS];
    unsigned mask;
    int nd = 0, err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "squeeze: input is NULL");
    if ((err = fw_op_axes_mask(&mask, "squeeze", axes, naxes, x->ndim)) < 0)
        return err;
    for (int i = 0; i < x->ndim; i++) {
        if ((mask & (1u << i)) && x->shape[i] == 1)
            continue;
        s[nd] = x->shape[i];
        st[nd++] = x->strides[i];
    }
    return make_view(out, "squeeze", x, s, st, nd, x->offset, reshape_backward, NULL, 0);
}

int fw_unsqueeze(fw_tensor **out, fw_tensor *x, const int *axes, int naxes)
{
    int64_t s[FW_MAX_DIMS], st[FW_MAX_DIMS];
    unsigned mask = 0;
    int nd, k = 0;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "unsqueeze: input is NULL");
    nd = x->ndim + naxes;
    if (naxes < 0 || nd > FW_MAX_DIMS)
        return fw_error_set(FW_EINVAL, "unsqueeze: result rank %d exceeds %d", nd, FW_MAX_DIMS);
    for (int i = 0; i < naxes; i++) {
        int a = axes[i];
        if (a < -nd || a >= nd)
            return fw_error_set(FW_EAXIS, "unsqueeze: axis %d out of range for rank %d", a, nd);
        if (a < 0)
            a += nd;
        if (mask & (1u << a))
            return fw_error_set(FW_EAXIS, "unsqueeze: axis %d repeated", axes[i]);
        mask |= 1u << a;
    }
    for (int i = 0; i < nd; i++) {
        if (mask & (1u << i)) {
            s[i] = 1;
            st[i] = 0;       /* filled below */
        } else {
            s[i] = x->shape[k];
            st[i] = x->strides[k++];
        }
    }
    for (int i = nd - 1; i >= 0; i--)
        if (mask & (1u << i))
            st[i] = i + 1 < nd ? st[i + 1] * s[i + 1] : 1;
    return make_view(out, "unsqueeze", x, s, st, nd, x->offset, reshape_backward, NULL, 0);
}

/* ---- transpose ---------------------------------------------------------------------- */

typedef struct perm_attr { int inv[FW_MAX_DIMS]; int n; } perm_attr;

static int transpose_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const perm_attr *a = fw_node_attr(n);
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return fw_transpose(&gin[0], gout[0], a->inv, a->n);
}

int fw_transpose(fw_tensor **out, fw_tensor *x, const int *perm, int nperm)
{
    int64_t s[FW_MAX_DIMS], st[FW_MAX_DIMS];
    int p[FW_MAX_DIMS], err;
    unsigned seen = 0;
    fw_node *node = NULL;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "transpose: input is NULL");
    if (nperm != x->ndim || (nperm > 0 && perm == NULL))
        return fw_error_set(FW_EAXIS, "transpose: perm has %d axes for rank %d", nperm, x->ndim);
    for (int i = 0; i < nperm; i++) {
        if ((err = fw_op_axis(&p[i], "transpose", perm[i], x->ndim)) < 0)
            return err;
        if (seen & (1u << p[i]))
            return fw_error_set(FW_EAXIS, "transpose: axis %d repeated", perm[i]);
        seen |= 1u << p[i];
        s[i] = x->shape[p[i]];
        st[i] = x->strides[p[i]];
    }
    if ((err = make_view(out, "transpose", x, s, st, nperm, x->offset, transpose_backward, &node,
                         sizeof(perm_attr))) < 0)
        return err;
    if (node) {
        perm_attr *a = fw_node_attr(node);
        a->n = nperm;
        for (int i = 0; i < nperm; i++)
            a->inv[p[i]] = i;
    }
    return 0;
}

int fw_swapaxes(fw_tensor **out, fw_tensor *x, int axis0, int axis1)
{
    int p[FW_MAX_DIMS], a, b, err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "swapaxes: input is NULL");
    if ((err = fw_op_axis(&a, "swapaxes", axis0, x->ndim)) < 0 ||
        (err = fw_op_axis(&b, "swapaxes", axis1, x->ndim)) < 0)
        return err;
    for (int i = 0; i < x->ndim; i++)
        p[i] = i;
    if (x->ndim > 0) {
        p[a] = b;
        p[b] = a;
    }
    return fw_transpose(out, x, p, x->ndim);
}

/* ---- slice -------------------------------------------------------------------------- */

typedef struct slice_attr {
    int64_t start[FW_MAX_DIMS], step[FW_MAX_DIMS];
} slice_attr;

/* The gradient of a slice as an op of its own (create_graph): zeros of the
 * input's shape with g written into the sliced places. Its backward is the
 * same slice of the incoming gradient. */
static int slice_grad_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const slice_attr *a = fw_node_attr(n);
    int nd, axes[FW_MAX_DIMS];
    const int64_t *gshape = fw_node_input_shape(n, 0, &nd);
    int64_t starts[FW_MAX_DIMS], ends[FW_MAX_DIMS];

    if (!fw_node_needs_grad(n, 0))
        return 0;
    for (int i = 0; i < nd; i++) {
        axes[i] = i;
        starts[i] = a->start[i];
        ends[i] = a->start[i] + (gshape[i] - 1) * a->step[i] + (a->step[i] > 0 ? 1 : -1);
        if (gshape[i] == 0)
            ends[i] = a->start[i];
        if (a->step[i] < 0 && ends[i] < 0)
            ends[i] = INT64_MIN / 4;        /* before index 0 (Python clamping) */
    }
    return fw_slice(&gin[0], gout[0], axes, starts, ends, a->step, nd);
}

static int slice_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const slice_attr *a = fw_node_attr(n);
    int nd;
    const int64_t *shape = fw_node_input_shape(n, 0, &nd);
    fw_tensor *z = NULL, *v = NULL;
    int64_t st[FW_MAX_DIMS], off = 0;
    int err;

    if (!fw_node_needs_grad(n, 0))
        return 0;
    if ((err = fw_op_zeros(&z, gout[0]->device, gout[0]->dtype, shape, nd)) < 0)
        return err;
    for (int i = 0; i < nd; i++) {
        off += a->start[i] * z->strides[i];
        st[i] = z->strides[i] * a->step[i];
    }
    bool was = fw_set_grad_enabled(false);     /* filling z is not part of the graph */
    if ((err = fw__tensor_view(&v, z, gout[0]->shape, st, nd, off)) == 0)
        err = fw_tensor_assign(v, gout[0]);
    fw_set_grad_enabled(was);
    fw_tensor_unref(v);
    if (err == 0 && fw__autograd_creating_graph()) {
        fw_node *node = NULL;
        fw_tensor *in = gout[0];
        if ((err = fw_node_record(&node, "slice_grad", slice_grad_backward, 1, &in, 1, &z, 0,
                                  sizeof(slice_attr))) == 0 && node)
            memcpy(fw_node_attr(node), a, sizeof(*a));
    }
    if (err < 0) {
        fw_tensor_unref(z);
        return err;
    }
    gin[0] = z;
    return 0;
}

int fw_slice(fw_tensor **out, fw_tensor *x, const int *axes, const int64_t *starts,
             const int64_t *ends, const int64_t *steps, int n)
{
    int64_t s[FW_MAX_DIMS], st[FW_MAX_DIMS], start[FW_MAX_DIMS], step[FW_MAX_DIMS], off;
    unsigned seen = 0;
    fw_node *node = NULL;
    int err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "slice: input is NULL");
    if (n < 0 || (n > 0 && (axes == NULL || starts == NULL || ends == NULL)))
        return fw_error_set(FW_EINVAL, "slice: axes, starts and ends are required");
    for (int i = 0; i < x->ndim; i++) {
        s[i] = x->shape[i];
        start[i] = 0;
        step[i] = 1;
    }
    for (int k = 0; k < n; k++) {
        int a;
        if ((err = fw_op_axis(&a, "slice", axes[k], x->ndim)) < 0)
            return err;
        if (x->ndim == 0)
            return fw_error_set(FW_EAXIS, "slice: cannot slice a 0-D tensor");
        if (seen & (1u << a))
            return fw_error_set(FW_EAXIS, "slice: axis %d repeated", axes[k]);
        seen |= 1u << a;
        int64_t d = x->shape[a], stp = steps ? steps[k] : 1, b = starts[k], e = ends[k], len;
        if (stp == 0)
            return fw_error_set(FW_EINVAL, "slice: step is 0 on axis %d", axes[k]);
        /* Python slice clamping */
        if (b < 0) b += d;
        if (e < 0) e += d;
        if (stp > 0) {
            b = b < 0 ? 0 : b > d ? d : b;
            e = e < 0 ? 0 : e > d ? d : e;
            len = e > b ? (e - b + stp - 1) / stp : 0;
        } else {
            b = b < 0 ? -1 : b >= d ? d - 1 : b;
            e = e < -1 ? -1 : e >= d ? d - 1 : e;
            len = b > e ? (b - e + (-stp) - 1) / (-stp) : 0;
        }
        s[a] = len;
        start[a] = len > 0 ? b : 0;
        step[a] = stp;
    }
    off = x->offset;
    for (int i = 0; i < x->ndim; i++) {
        off += start[i] * x->strides[i];
        st[i] = x->strides[i] * step[i];
    }
    if ((err = make_view(out, "slice", x, s, st, x->ndim, off, slice_backward, &node,
                         sizeof(slice_attr))) < 0)
        return err;
    if (node) {
        slice_attr *a = fw_node_attr(node);
        memcpy(a->start, start, sizeof(start));
        memcpy(a->step, step, sizeof(step));
    }
    return 0;
}

int fw_select(fw_tensor **out, fw_tensor *x, int axis, int64_t index)
{
    fw_tensor *t = NULL;
    int a, err;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "select: input is NULL");
    if (x->ndim == 0)
        return fw_error_set(FW_EAXIS, "select: cannot index a 0-D tensor");
    if ((err = fw_op_axis(&a, "select", axis, x->ndim)) < 0)
        return err;
    int64_t d = x->shape[a], i = index < 0 ? index + d : index, e = i + 1;
    if (i < 0 || i >= d)
        return fw_error_set(FW_ERANGE, "select: index %lld out of range for axis %d of size %lld",
                            (long long)index, axis, (long long)d);
    if ((err = fw_slice(&t, x, &a, &i, &e, NULL, 1)) < 0)
        return err;
    err = fw_squeeze(out, t, &a, 1);
    fw_tensor_unref(t);
    return err;
}

/* ---- expand ------------------------------------------------------------------------- */

static int expand_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    int nd;
    const int64_t *shape = fw_node_input_shape(n, 0, &nd);
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return fw_op_reduce_to_shape(&gin[0], gout[0], shape, nd);
}

int fw_expand(fw_tensor **out, fw_tensor *x, const int64_t *shape, int nd)
{
    int64_t s[FW_MAX_DIMS], st[FW_MAX_DIMS];
    int lead;

    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "expand: input is NULL");
    if (nd < x->ndim || nd > FW_MAX_DIMS || (nd > 0 && shape == NULL))
        goto bad;
    lead = nd - x->ndim;
    for (int i = 0; i < nd; i++) {
        int64_t want = shape[i];
        if (i < lead) {
            if (want < 0)
                goto bad;
            s[i] = want;
            st[i] = 0;
            continue;
        }
        int64_t have = x->shape[i - lead];
        if (want == -1 || want == have) {
            s[i] = have;
            st[i] = x->strides[i - lead];
        } else if (have == 1 && want >= 0) {
            s[i] = want;
            st[i] = 0;
        } else {
            goto bad;
        }
    }
    return make_view(out, "expand", x, s, st, nd, x->offset, expand_backward, NULL, 0);
bad:;
    char a[160], b[160];
    return fw_error_set(FW_ESHAPE, "expand: cannot expand %s to %s",
                        fw_tensor_shape_str(a, sizeof(a), x),
                        fw_shape_format(b, sizeof(b), shape, nd > 0 && shape ? nd : 0));
}

int fw_broadcast_to(fw_tensor **out, fw_tensor *x, const int64_t *shape, int nd)
{
    return fw_expand(out, x, shape, nd);
}

/* ---- contiguous / clone ---------------------------------------------------------------- */

static int copy_op(fw_tensor **out, const char *name, fw_tensor *x)
{
    fw_tensor *y = NULL;
    fw_node *node;
    int err;

    if ((err = fw__copy_cast(&y, x, x->dtype)) < 0)
        return err;
    if ((err = fw_node_record(&node, name, identity_backward, 1, &x, 1, &y, 0, 0)) < 0) {
        fw_tensor_unref(y);
        return err;
    }
    *out = y;
    return 0;
}

int fw_contiguous(fw_tensor **out, fw_tensor *x)
{
    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "contiguous: input is NULL");
    if (fw_tensor_is_contiguous(x)) {
        *out = fw_tensor_ref(x);
        return 0;
    }
    return copy_op(out, "contiguous", x);
}

int fw_tensor_clone(fw_tensor **out, fw_tensor *x)
{
    *out = NULL;
    if (x == NULL)
        return fw_error_set(FW_EINVAL, "clone: input is NULL");
    return copy_op(out, "clone", x);
}

/* ---- device transfer ----------------------------------------------------------------- */

static int to_backward(fw_node *n, fw_tensor **gin, fw_tensor *const *gout)
{
    const fw_device *dev = fw_node_attr(n);
    if (!fw_node_needs_grad(n, 0))
        return 0;
    return fw_tensor_to(&gin[0], gout[0], *dev);
}

int fw_tensor_to(fw_tensor **out, fw_tensor *t, fw_device dev)
{
    const fw_backend *src, *dst;
    fw_tensor *d = NULL, *y = NULL;
    fw_node *node;
    int err;

    *out = NULL;
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "to: tensor is NULL");
    if (t->device == dev) {
        *out = fw_tensor_ref(t);
        return 0;
    }
    if ((dst = fw_backend_require(dev, "to")) == NULL ||
        (src = fw_backend_require(t->device, "to")) == NULL)
        return FW_EDEVICE;
    if ((err = fw_op_dense(&d, t)) < 0)
        return err;
    if ((err = fw_op_output(&y, dev, t->dtype, t->shape, t->ndim)) < 0)
        goto fail;
    size_t nbytes = (size_t)t->numel * fw_dtype_size(t->dtype);
    /* the backend that is not the CPU does the transfer */
    const fw_backend *via = dst->host_accessible ? src : dst;
    if (nbytes > 0 && (err = via->copy(fw__ptr(y), dev, fw__ptr(d), t->device, nbytes)) < 0)
        goto fail;
    if ((err = fw_node_record(&node, "to", to_backward, 1, &t, 1, &y, 0, sizeof(fw_device))) < 0)
        goto fail;
    if (node)
        *(fw_device *)fw_node_attr(node) = t->device;
    fw_tensor_unref(d);
    *out = y;
    return 0;
fail:
    fw_tensor_unref(d);
    fw_tensor_unref(y);
    return err;
}
