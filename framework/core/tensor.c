/* tensor.c - tensor handles, storage, creation, properties, copies. */
#include "fw_alloc.h"
#include "fw_backend.h"
#include "fw_int.h"
#include "fw_op.h"

#include "fw/device.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STORAGE_HDR 64   /* header bytes in front of inline host data */

/* ---- storage ----------------------------------------------------------------- */

int fw__storage_new(fw_storage **out, fw_device dev, size_t nbytes)
{
    const fw_backend *b = fw_backend_require(dev, "alloc");
    fw_storage *s;
    size_t block;

    *out = NULL;
    if (b == NULL)
        return FW_EDEVICE;
    if (b->host_accessible) {
        s = fw_mem_alloc(dev, STORAGE_HDR + nbytes, &block);
        if (s == NULL)
            return fw_error_set(FW_ENOMEM, "out of memory allocating %zu bytes", nbytes);
        s->data = (char *)s + STORAGE_HDR;
    } else {
        size_t hb;
        s = fw__small_alloc(sizeof(*s), &hb);
        if (s == NULL)
            return fw_error_set(FW_ENOMEM, "out of memory");
        s->data = fw_mem_alloc(dev, nbytes, &block);
        if (s->data == NULL) {
            fw__small_free(s, hb);
            return fw_error_set(FW_ENOMEM, "out of %s memory allocating %zu bytes",
                                b->name, nbytes);
        }
    }
    atomic_init(&s->refs, 1);
    s->device = dev;
    s->nbytes = nbytes;
    s->block = block;
    s->release = NULL;
    s->payload = NULL;
    *out = s;
    return 0;
}

void fw__storage_unref(fw_storage *s)
{
    if (s == NULL || atomic_fetch_sub_explicit(&s->refs, 1, memory_order_acq_rel) != 1)
        return;
    if (s->block == 0) {                    /* external memory */
        if (s->release)
            s->release(s->data, s->payload);
        free(s);
    } else if (s->data == (char *)s + STORAGE_HDR) {
        fw_mem_free(s->device, s, s->block);
    } else {
        fw_mem_free(s->device, s->data, s->block);
        fw__small_free(s, (sizeof(*s) + 63) / 64 * 64);
    }
}

/* ---- handles ------------------------------------------------------------------ */

#define HANDLE_BLOCK ((sizeof(fw_tensor) + 63) / 64 * 64)

static fw_tensor *handle_new(void)
{
    size_t block;
    fw_tensor *t = fw__small_alloc(sizeof(fw_tensor), &block);
    if (t == NULL)
        return NULL;
    atomic_init(&t->refs, 1);
    t->stop_gradient = true;
    t->int_grad_flag = false;
    t->out_idx = 0;
    t->offset = 0;
    t->grad = NULL;
    t->grad_fn = NULL;
    t->hooks = NULL;
    t->user = NULL;
    t->storage = NULL;
    return t;
}

fw_tensor *fw_tensor_ref(fw_tensor *t)
{
    if (t)
        atomic_fetch_add_explicit(&t->refs, 1, memory_order_relaxed);
    return t;
}

void fw_tensor_unref(fw_tensor *t)
{
    if (t == NULL || atomic_fetch_sub_explicit(&t->refs, 1, memory_order_acq_rel) != 1)
        return;
    fw__storage_unref(t->storage);
    fw_tensor_unref(t->grad);
    fw__node_unref(t->grad_fn);
    fw__hooks_free(t->hooks);
    fw__small_free(t, HANDLE_BLOCK);
}

int64_t fw__contiguous_strides(int64_t *strides, const int64_t *shape, int ndim)
{
    int64_t n = 1;
    for (int i = ndim - 1; i >= 0; i--) {
        strides[i] = n;
        n *= shape[i];
    }
    return n;
}

static int check_shape(const char *op, const int64_t *shape, int ndim, int64_t *numel)
{
    int64_t n = 1;

    if (ndim < 0 || ndim > FW_MAX_DIMS)
        return fw_error_set(FW_EINVAL, "%s: rank %d is outside 0..%d", op, ndim, FW_MAX_DIMS);
    if (ndim > 0 && shape == NULL)
        return fw_error_set(FW_EINVAL, "%s: shape is NULL", op);
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0)
            return fw_error_set(FW_EINVAL, "%s: negative dimension %lld at axis %d", op,
                                (long long)shape[i], i);
        if (shape[i] > 0 && n > (INT64_C(1) << 48) / shape[i])
            return fw_error_set(FW_EINVAL, "%s: shape has too many elements", op);
        n *= shape[i];
    }
    *numel = n;
    return 0;
}

int fw_tensor_empty_on(fw_tensor **out, fw_device dev, fw_dtype dt, const int64_t *shape,
                       int ndim)
{
    fw_tensor *t;
    int64_t numel;
    int err;

    *out = NULL;
    if (!fw_dtype_is_valid(dt))
        return fw_error_set(FW_EDTYPE, "empty: invalid dtype %d", (int)dt);
    if ((err = check_shape("empty", shape, ndim, &numel)) < 0)
        return err;
    if ((t = handle_new()) == NULL)
        return fw_error_set(FW_ENOMEM, "out of memory");
    if ((err = fw__storage_new(&t->storage, dev, (size_t)numel * fw_dtype_size(dt))) < 0) {
        fw__small_free(t, HANDLE_BLOCK);
        return err;
    }
    t->dtype = dt;
    t->device = dev;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->numel = fw__contiguous_strides(t->strides, shape, ndim);
    *out = t;
    return 0;
}

/* Creation functions without a device argument use the default device
 * (fw_device_set_default: paddle.set_device). Those that compute their
 * values on the host (from data, arange, linspace, eye) fill a CPU tensor
 * and move it there. */
int fw_tensor_empty(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim)
{
    return fw_tensor_empty_on(out, fw_device_default(), dt, shape, ndim);
}

/* Move the host-filled CPU tensor *t to the default device (no-op there). */
static int to_default(fw_tensor **t)
{
    fw_device dev = fw_device_default();
    fw_tensor *y = NULL;
    int err;

    if (dev == FW_CPU || *t == NULL)
        return 0;
    err = fw_tensor_to(&y, *t, dev);
    fw_tensor_unref(*t);
    *t = y;
    return err;
}

int fw_op_output(fw_tensor **out, fw_device dev, fw_dtype dt, const int64_t *shape, int ndim)
{
    return fw_tensor_empty_on(out, dev, dt, shape, ndim);
}

int fw__tensor_view(fw_tensor **out, fw_tensor *base, const int64_t *shape,
                    const int64_t *strides, int ndim, int64_t offset)
{
    fw_tensor *t;

    *out = NULL;
    if ((t = handle_new()) == NULL)
        return fw_error_set(FW_ENOMEM, "out of memory");
    t->dtype = base->dtype;
    t->device = base->device;
    t->ndim = ndim;
    t->numel = 1;
    for (int i = 0; i < ndim; i++) {
        t->shape[i] = shape[i];
        t->strides[i] = strides[i];
        t->numel *= shape[i];
    }
    t->offset = offset;
    t->storage = base->storage;
    atomic_fetch_add_explicit(&t->storage->refs, 1, memory_order_relaxed);
    *out = t;
    return 0;
}

int fw_tensor_from_blob(fw_tensor **out, void *data, fw_dtype dt, const int64_t *shape,
                        int ndim, void (*release)(void *data, void *payload), void *payload)
{
    fw_tensor *t;
    fw_storage *s;
    int64_t numel;
    int err;

    *out = NULL;
    if (!fw_dtype_is_valid(dt))
        return fw_error_set(FW_EDTYPE, "from_blob: invalid dtype %d", (int)dt);
    if ((err = check_shape("from_blob", shape, ndim, &numel)) < 0)
        return err;
    if (data == NULL && numel > 0)
        return fw_error_set(FW_EINVAL, "from_blob: data is NULL");
    if (((uintptr_t)data % fw_dtype_size(dt)) != 0)
        return fw_error_set(FW_EINVAL, "from_blob: data is not aligned for %s",
                            fw_dtype_name(dt));
    if ((s = calloc(1, sizeof(*s))) == NULL)
        return fw_error_set(FW_ENOMEM, "out of memory");
    if ((t = handle_new()) == NULL) {
        free(s);
        return fw_error_set(FW_ENOMEM, "out of memory");
    }
    atomic_init(&s->refs, 1);
    s->device = FW_CPU;
    s->data = data;
    s->nbytes = (size_t)numel * fw_dtype_size(dt);
    s->block = 0;
    s->release = release;
    s->payload = payload;
    t->storage = s;
    t->dtype = dt;
    t->device = FW_CPU;
    t->ndim = ndim;
    for (int i = 0; i < ndim; i++)
        t->shape[i] = shape[i];
    t->numel = fw__contiguous_strides(t->strides, shape, ndim);
    *out = t;
    return 0;
}

int fw_tensor_from_data(fw_tensor **out, const void *data, fw_dtype dt,
                        const int64_t *shape, int ndim)
{
    fw_tensor *t;
    int err;

    *out = NULL;
    if ((err = fw_tensor_empty(&t, dt, shape, ndim)) < 0)
        return err;
    if (t->numel > 0) {
        const fw_backend *b = fw_backend_get(t->device);
        size_t nbytes = (size_t)t->numel * fw_dtype_size(dt);
        if (data == NULL) {
            fw_tensor_unref(t);
            return fw_error_set(FW_EINVAL, "from_data: data is NULL");
        }
        if (b->host_accessible)
            memcpy(fw__ptr(t), data, nbytes);
        else if ((err = b->copy(fw__ptr(t), t->device, data, FW_CPU, nbytes)) < 0) {
            fw_tensor_unref(t);
            return err;
        }
    }
    *out = t;
    return 0;
}

/* Store one double into element i of a contiguous buffer of dtype dt. */
int fw_tensor_from_doubles(fw_tensor **out, const double *data, fw_dtype dt,
                           const int64_t *shape, int ndim)
{
    fw_tensor *t;
    int err;

    *out = NULL;
    if ((err = fw_tensor_empty_on(&t, FW_CPU, dt, shape, ndim)) < 0)
        return err;
    if (t->numel > 0 && data == NULL) {
        fw_tensor_unref(t);
        return fw_error_set(FW_EINVAL, "from_doubles: data is NULL");
    }
    char *p = fw__ptr(t);
    int64_t esz = (int64_t)fw_dtype_size(dt);
    for (int64_t i = 0; i < t->numel; i++)
        fw__store_double(p + i * esz, dt, data[i]);
    if ((err = to_default(&t)) < 0)
        return err;
    *out = t;
    return 0;
}

/* ---- fill / creation ------------------------------------------------------------ */

int fw_tensor_fill(fw_tensor *t, double value)
{
    const fw_backend *b;
    fw_kview v;

    if (t == NULL)
        return fw_error_set(FW_EINVAL, "fill: tensor is NULL");
    if ((b = fw_backend_require(t->device, "fill")) == NULL)
        return FW_EDEVICE;
    if (t->numel == 0)
        return 0;
    fw__kview(&v, t);
    return b->fill(&v, value);
}

int fw_full(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim, double value)
{
    int err;

    if ((err = fw_tensor_empty(out, dt, shape, ndim)) < 0)
        return err;
    if ((err = fw_tensor_fill(*out, value)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

int fw_zeros(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim)
{
    return fw_full(out, dt, shape, ndim, 0.0);
}

int fw_ones(fw_tensor **out, fw_dtype dt, const int64_t *shape, int ndim)
{
    return fw_full(out, dt, shape, ndim, 1.0);
}

int fw_op_zeros(fw_tensor **out, fw_device dev, fw_dtype dt, const int64_t *shape, int ndim)
{
    int err;

    if ((err = fw_tensor_empty_on(out, dev, dt, shape, ndim)) < 0)
        return err;
    if ((err = fw_tensor_fill(*out, 0.0)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

int fw_op_scalar(fw_tensor **out, fw_device dev, fw_dtype dt, double value)
{
    int err;

    if ((err = fw_tensor_empty_on(out, dev, dt, NULL, 0)) < 0)
        return err;
    if (dev == FW_CPU) {                    /* the hot path of scalar ops */
        fw__store_double(fw__ptr(*out), dt, value);
        return 0;
    }
    if ((err = fw_tensor_fill(*out, value)) < 0) {   /* a kernel: no host copy */
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

static int like(fw_tensor **out, const fw_tensor *t, bool fill, double value)
{
    int err;

    *out = NULL;
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "like: tensor is NULL");
    if ((err = fw_tensor_empty_on(out, t->device, t->dtype, t->shape, t->ndim)) < 0)
        return err;
    if (fill && (err = fw_tensor_fill(*out, value)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

int fw_zeros_like(fw_tensor **out, const fw_tensor *t) { return like(out, t, true, 0.0); }
int fw_ones_like(fw_tensor **out, const fw_tensor *t) { return like(out, t, true, 1.0); }
int fw_full_like(fw_tensor **out, const fw_tensor *t, double v) { return like(out, t, true, v); }
int fw_empty_like(fw_tensor **out, const fw_tensor *t) { return like(out, t, false, 0.0); }

int fw_arange(fw_tensor **out, double start, double end, double step, fw_dtype dt)
{
    fw_tensor *t;
    double count;
    int64_t n;
    int err;

    *out = NULL;
    if (step == 0 || !isfinite(step) || !isfinite(start) || !isfinite(end))
        return fw_error_set(FW_EINVAL, "arange: step must be finite and non-zero (start %g, end %g, step %g)",
                            start, end, step);
    count = ceil((end - start) / step);
    if (count > (double)(INT64_C(1) << 40))
        return fw_error_set(FW_EINVAL, "arange: %g elements is too many", count);
    n = count > 0 ? (int64_t)count : 0;
    if ((err = fw_tensor_empty_on(&t, FW_CPU, dt, &n, 1)) < 0)
        return err;
    char *p = fw__ptr(t);
    int64_t esz = (int64_t)fw_dtype_size(dt);
    for (int64_t i = 0; i < n; i++)
        fw__store_double(p + i * esz, dt, start + (double)i * step);
    if ((err = to_default(&t)) < 0)
        return err;
    *out = t;
    return 0;
}

int fw_linspace(fw_tensor **out, double start, double stop, int64_t num, fw_dtype dt)
{
    fw_tensor *t;
    int err;

    *out = NULL;
    if (num < 0)
        return fw_error_set(FW_EINVAL, "linspace: num %lld is negative", (long long)num);
    if ((err = fw_tensor_empty_on(&t, FW_CPU, dt, &num, 1)) < 0)
        return err;
    char *p = fw__ptr(t);
    int64_t esz = (int64_t)fw_dtype_size(dt);
    double step = num > 1 ? (stop - start) / (double)(num - 1) : 0.0;
    for (int64_t i = 0; i < num; i++)
        fw__store_double(p + i * esz, dt,
                         i == num - 1 && num > 1 ? stop : start + (double)i * step);
    if ((err = to_default(&t)) < 0)
        return err;
    *out = t;
    return 0;
}

int fw_eye(fw_tensor **out, int64_t n, int64_t m, fw_dtype dt)
{
    int64_t shape[2];
    int err;

    *out = NULL;
    if (m < 0)
        m = n;
    if (n < 0)
        return fw_error_set(FW_EINVAL, "eye: num_rows %lld is negative", (long long)n);
    shape[0] = n;
    shape[1] = m;
    if ((err = fw_op_zeros(out, FW_CPU, dt, shape, 2)) < 0)
        return err;
    char *p = fw__ptr(*out);
    int64_t esz = (int64_t)fw_dtype_size(dt);
    for (int64_t i = 0; i < n && i < m; i++)
        fw__store_double(p + (i * m + i) * esz, dt, 1.0);
    return to_default(out);
}

/* ---- properties ----------------------------------------------------------------- */

int fw_tensor_ndim(const fw_tensor *t) { return t->ndim; }
const int64_t *fw_tensor_shape(const fw_tensor *t) { return t->shape; }
const int64_t *fw_tensor_strides(const fw_tensor *t) { return t->strides; }
int64_t fw_tensor_numel(const fw_tensor *t) { return t->numel; }
int64_t fw_tensor_offset(const fw_tensor *t) { return t->offset; }
fw_dtype fw_tensor_dtype(const fw_tensor *t) { return t->dtype; }
fw_device fw_tensor_device(const fw_tensor *t) { return t->device; }
void *fw_tensor_user(const fw_tensor *t) { return t->user; }
void fw_tensor_set_user(fw_tensor *t, void *user) { t->user = user; }

int64_t fw_tensor_dim(const fw_tensor *t, int axis)
{
    if (axis < 0)
        axis += t->ndim;
    if (axis < 0 || axis >= t->ndim)
        return -1;
    return t->shape[axis];
}

bool fw_tensor_is_contiguous(const fw_tensor *t)
{
    int64_t n = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != n)
            return false;
        n *= t->shape[i];
    }
    return true;
}

void *fw_tensor_data(const fw_tensor *t)
{
    const fw_backend *b = fw_backend_get(t->device);
    return b && b->host_accessible ? fw__ptr(t) : NULL;
}

char *fw_shape_format(char *buf, size_t n, const int64_t *shape, int ndim)
{
    size_t used = 0;

    if (n == 0)
        return buf;
    buf[0] = '\0';
    used += (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < ndim && used < n; i++)
        used += (size_t)snprintf(buf + used, n - used, i ? ", %lld" : "%lld",
                                 (long long)shape[i]);
    if (used < n)
        snprintf(buf + used, n - used, "]");
    return buf;
}

char *fw_tensor_shape_str(char *buf, size_t n, const fw_tensor *t)
{
    return fw_shape_format(buf, n, t->shape, t->ndim);
}

/* ---- copies --------------------------------------------------------------------- */

/* Copy src (any view) into dst (any view of the same shape), casting. */
static int copy_view(fw_tensor *dst, const fw_tensor *src)
{
    const fw_backend *b = fw_backend_require(dst->device, "copy");
    fw_kview d, s;

    if (b == NULL)
        return FW_EDEVICE;
    if (dst->numel == 0)
        return 0;
    fw__kview(&d, dst);
    fw__kview(&s, src);
    return b->copy_strided(&d, &s);
}

int fw__copy_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt);

/* The elements of device tensor t in C order as dtype dt into host dst: a
 * contiguous (cast) copy on the device, then one transfer, which waits for
 * the device's queued work (where Python needs values). */
static int device_to_host(void *dst, const fw_tensor *t, fw_dtype dt, const char *op)
{
    const fw_backend *b = fw_backend_require(t->device, op);
    fw_tensor *d = NULL;
    int err;

    if (b == NULL)
        return FW_EDEVICE;
    if (t->dtype == dt && fw_tensor_is_contiguous(t))
        d = fw_tensor_ref((fw_tensor *)t);
    else if ((err = fw__copy_cast(&d, (fw_tensor *)t, dt)) < 0)
        return err;
    err = b->copy(dst, FW_CPU, fw__ptr(d), t->device, (size_t)t->numel * fw_dtype_size(dt));
    fw_tensor_unref(d);
    return err;
}

int fw_tensor_copy_to(void *dst, size_t dst_bytes, const fw_tensor *t)
{
    fw_tensor *view;
    int err;

    if (t == NULL)
        return fw_error_set(FW_EINVAL, "copy_to: tensor is NULL");
    size_t need = (size_t)t->numel * fw_dtype_size(t->dtype);
    if (dst_bytes < need)
        return fw_error_set(FW_EINVAL, "copy_to: buffer of %zu bytes is smaller than %zu",
                            dst_bytes, need);
    if (need == 0)
        return 0;
    if (t->device != FW_CPU)
        return device_to_host(dst, t, t->dtype, "copy_to");
    if ((err = fw_tensor_from_blob(&view, dst, t->dtype, t->shape, t->ndim, NULL, NULL)) < 0)
        return err;
    err = copy_view(view, t);
    fw_tensor_unref(view);
    return err;
}

int fw_tensor_to_doubles(double *dst, int64_t n, const fw_tensor *t)
{
    fw_tensor *view;
    int err;

    if (t == NULL)
        return fw_error_set(FW_EINVAL, "to_doubles: tensor is NULL");
    if (n < t->numel)
        return fw_error_set(FW_EINVAL, "to_doubles: buffer of %lld is smaller than %lld",
                            (long long)n, (long long)t->numel);
    if (t->numel == 0)
        return 0;
    if (t->device != FW_CPU)
        return device_to_host(dst, t, FW_FLOAT64, "to_doubles");
    if ((err = fw_tensor_from_blob(&view, dst, FW_FLOAT64, t->shape, t->ndim, NULL, NULL)) < 0)
        return err;
    err = copy_view(view, t);
    fw_tensor_unref(view);
    return err;
}

int fw_tensor_item(double *out, const fw_tensor *t)
{
    char buf[64];

    if (t == NULL)
        return fw_error_set(FW_EINVAL, "item: tensor is NULL");
    if (t->numel != 1)
        return fw_error_set(FW_ESHAPE, "item: tensor of shape %s has %lld elements, not 1",
                            fw_tensor_shape_str(buf, sizeof(buf), t), (long long)t->numel);
    return fw_tensor_to_doubles(out, 1, t);
}

int fw_tensor_assign(fw_tensor *dst, const fw_tensor *src)
{
    fw_tensor *ex = NULL;
    int err;

    if (dst == NULL || src == NULL)
        return fw_error_set(FW_EINVAL, "assign: tensor is NULL");
    if (dst->grad_fn == NULL && !dst->stop_gradient && fw_grad_enabled())
        return fw_error_set(FW_EGRAD, "assign: in-place write to a leaf that requires grad "
                                      "(use no-grad mode)");
    if (dst->device != src->device)
        return fw_error_set(FW_EDEVICE, "assign: tensors are on different devices (%s and %s)",
                            dst->device == FW_CPU ? "cpu" : "cuda",
                            src->device == FW_CPU ? "cpu" : "cuda");
    /* broadcast src to dst's shape as a view (no autograd) */
    bool was = fw_set_grad_enabled(false);
    err = fw_expand(&ex, (fw_tensor *)src, dst->shape, dst->ndim);
    fw_set_grad_enabled(was);
    if (err < 0) {
        char a[128], b[128];
        return fw_error_set(FW_ESHAPE, "assign: shape %s does not broadcast to %s",
                            fw_tensor_shape_str(a, sizeof(a), src),
                            fw_tensor_shape_str(b, sizeof(b), dst));
    }
    err = copy_view(dst, ex);
    fw_tensor_unref(ex);
    return err;
}

int fw_op_dense(fw_tensor **out, fw_tensor *x)
{
    int err;

    *out = NULL;
    if (fw_tensor_is_contiguous(x)) {
        *out = fw_tensor_ref(x);
        return 0;
    }
    if ((err = fw_tensor_empty_on(out, x->device, x->dtype, x->shape, x->ndim)) < 0)
        return err;
    if ((err = copy_view(*out, x)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

/* Contiguous copy into a new tensor of dtype dt (no autograd). */
int fw__copy_cast(fw_tensor **out, fw_tensor *x, fw_dtype dt)
{
    int err;

    if ((err = fw_tensor_empty_on(out, x->device, dt, x->shape, x->ndim)) < 0)
        return err;
    if ((err = copy_view(*out, x)) < 0) {
        fw_tensor_unref(*out);
        *out = NULL;
    }
    return err;
}

int fw_tensor_detach(fw_tensor **out, fw_tensor *t)
{
    *out = NULL;
    if (t == NULL)
        return fw_error_set(FW_EINVAL, "detach: tensor is NULL");
    return fw__tensor_view(out, t, t->shape, t->strides, t->ndim, t->offset);
}
