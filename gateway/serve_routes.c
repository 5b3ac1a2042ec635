/*
 * serve_routes.c - POST /serve/{deployment}/predict (scope `serve`): the
 * request's tensors (nested lists, or base64 with shape and dtype) into a
 * serve_call, per-key admission (requests a minute and concurrency: 429
 * with Retry-After; the key's daily budget or the caller's balance: 402),
 * the call through the deployment's replicas (serving/serve.h), the call
 * logged before it is answered, outputs as nested lists. A timeout is 504
 * with the usual error body (code "timeout"); a bad input 400/422 naming
 * the input, while the replicas keep serving.
 */
#include "gw_int.h"

#include "acct.h"
#include "serve.h"

#include "ed_error.h"
#include "ed_time.h"

#include <math.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NEST_MAX (SERVE_MAX_DIMS + 1)

typedef struct flat {
    serve_tensor *t;
    size_t at, cap;      /* elements written / allowed */
    size_t es;
} flat;

static int put_elem(flat *f, const json_t *v)
{
    serve_tensor *t = f->t;
    void *p;

    if (f->at >= f->cap)
        return ed_error_set(ED_EUNPROC, "input '%s': more elements than its shape holds", t->name);
    p = (char *)t->data + f->at * f->es;
    switch (t->dtype) {
    case FW_FLOAT32:
    case FW_FLOAT64: {
        double d;
        if (!json_is_number(v))
            return ed_error_set(ED_EUNPROC, "input '%s': element %zu is not a number", t->name, f->at);
        d = json_number_value(v);
        if (t->dtype == FW_FLOAT32)
            *(float *)p = (float)d;
        else
            *(double *)p = d;
        break;
    }
    case FW_INT32:
    case FW_INT64: {
        json_int_t i;
        if (!json_is_integer(v))
            return ed_error_set(ED_EUNPROC, "input '%s': element %zu is not an integer", t->name, f->at);
        i = json_integer_value(v);
        if (t->dtype == FW_INT32) {
            if (i < INT32_MIN || i > INT32_MAX)
                return ed_error_set(ED_EUNPROC, "input '%s': element %zu is out of int32's range", t->name, f->at);
            *(int32_t *)p = (int32_t)i;
        } else {
            *(int64_t *)p = i;
        }
        break;
    }
    case FW_BOOL:
        if (!json_is_boolean(v))
            return ed_error_set(ED_EUNPROC, "input '%s': element %zu is not true or false", t->name, f->at);
        *(uint8_t *)p = json_is_true(v);
        break;
    case FW_UINT8:
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 255)
            return ed_error_set(ED_EUNPROC, "input '%s': element %zu is not 0..255", t->name, f->at);
        *(uint8_t *)p = (uint8_t)json_integer_value(v);
        break;
    default:
        return ed_error_set(ED_EUNPROC, "input '%s': dtype %s cannot be sent as JSON numbers (use b64)", t->name,
                            fw_dtype_name(t->dtype));
    }
    f->at++;
    return 0;
}

/* Nested lists along the shape (depth `d`), or a flat list of numel. */
static int walk(flat *f, const json_t *v, int d)
{
    serve_tensor *t = f->t;
    size_t i;
    json_t *x;
    int err;

    if (d == t->ndim)
        return put_elem(f, v);
    if (!json_is_array(v))
        return ed_error_set(ED_EUNPROC, "input '%s': expected a list at depth %d (shape has %d dimensions)", t->name,
                            d, t->ndim);
    if ((int64_t)json_array_size(v) != t->shape[d])
        return ed_error_set(ED_EUNPROC, "input '%s': dimension %d has %zu elements, the shape says %lld", t->name, d,
                            json_array_size(v), (long long)t->shape[d]);
    json_array_foreach(v, i, x) if ((err = walk(f, x, d + 1)) < 0) return err;
    return 0;
}

/* Infer a shape from nested lists (first element at each depth). */
static int infer_shape(serve_tensor *t, const json_t *v)
{
    t->ndim = 0;
    while (json_is_array(v)) {
        if (t->ndim >= SERVE_MAX_DIMS)
            return ed_error_set(ED_EUNPROC, "input '%s': more than %d dimensions", t->name, SERVE_MAX_DIMS);
        t->shape[t->ndim++] = (int64_t)json_array_size(v);
        v = json_array_size(v) ? json_array_get(v, 0) : NULL;
    }
    return 0;
}

static int parse_input(serve_tensor *t, const char *name, const json_t *spec, size_t *budget)
{
    const json_t *shape = json_object_get(spec, "shape"), *data = json_object_get(spec, "data"),
                 *b64 = json_object_get(spec, "b64"), *x;
    const char *dt = json_string_value(json_object_get(spec, "dtype"));
    size_t i, nbytes;
    int bad, err;

    memset(t, 0, sizeof(*t));
    if (strlen(name) == 0 || strlen(name) > SERVE_NAME_MAX)
        return ed_error_set(ED_EUNPROC, "an input name must be 1..%d bytes", SERVE_NAME_MAX);
    snprintf(t->name, sizeof(t->name), "%s", name);
    if (!json_is_object(spec))
        return ed_error_set(ED_EINVAL, "input '%s' must be {shape, dtype, data | b64}", name);
    if (fw_dtype_from_name(&t->dtype, dt ? dt : "float32") != 0)
        return ed_error_set(ED_EUNPROC, "input '%s': unknown dtype '%s'", name, dt);
    if ((data == NULL) == (b64 == NULL))
        return ed_error_set(ED_EINVAL, "input '%s' needs exactly one of 'data' (nested lists) and 'b64'", name);
    if (shape) {
        if (!json_is_array(shape) || json_array_size(shape) > SERVE_MAX_DIMS)
            return ed_error_set(ED_EUNPROC, "input '%s': 'shape' must be a list of at most %d sizes", name,
                                SERVE_MAX_DIMS);
        t->ndim = (int)json_array_size(shape);
        json_array_foreach(shape, i, x) {
            if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > (1LL << 31))
                return ed_error_set(ED_EUNPROC, "input '%s': shape[%zu] must be an integer 0..2^31", name, i);
            t->shape[i] = json_integer_value(x);
        }
    } else if (data) {
        if ((err = infer_shape(t, data)) < 0)
            return err;
    } else {
        return ed_error_set(ED_EINVAL, "input '%s': 'b64' needs a 'shape'", name);
    }
    nbytes = serve_tensor_bytes(t->dtype, t->ndim, t->shape, *budget, &bad);
    if (bad)
        return ed_error_set(ED_ETOOBIG, "input '%s': its shape is over this call's %zu bytes", name, *budget);
    *budget -= nbytes;
    if ((t->data = malloc(nbytes ? nbytes : 1)) == NULL)
        return ed_error_set(ED_ENOMEM, "input '%s'", name);
    t->nbytes = nbytes;
    if (b64) {
        const char *s = json_string_value(b64);
        size_t got = 0;
        if (s == NULL ||
            sodium_base642bin(t->data, nbytes, s, strlen(s), " \n\r", &got, NULL, sodium_base64_VARIANT_ORIGINAL) != 0 ||
            got != nbytes)
            return ed_error_set(ED_EUNPROC, "input '%s': 'b64' must be standard base64 of exactly %zu bytes "
                                "(%s, C order)", name, nbytes, fw_dtype_name(t->dtype));
        return 0;
    }
    {
        flat f = {t, 0, nbytes / (fw_dtype_size(t->dtype) ? fw_dtype_size(t->dtype) : 1),
                  fw_dtype_size(t->dtype)};
        if (json_is_array(data) && shape && t->ndim > 1 && json_array_size(data) == f.cap &&
            (json_array_size(data) == 0 || !json_is_array(json_array_get(data, 0)))) {
            /* a flat list of numel elements */
            json_array_foreach(data, i, x) if ((err = put_elem(&f, x)) < 0) return err;
        } else if ((err = walk(&f, data, 0)) < 0) {
            return err;
        }
        if (f.at != f.cap)
            return ed_error_set(ED_EUNPROC, "input '%s': %zu elements for a shape of %zu", name, f.at, f.cap);
    }
    return 0;
}

/* Nested lists of an output along its shape. */
static json_t *out_list(const serve_tensor *t, int d, size_t *at)
{
    json_t *a;

    if (d == t->ndim) {
        const char *p = (const char *)t->data;
        size_t i = (*at)++;
        switch (t->dtype) {
        case FW_FLOAT32: {
            float v = ((const float *)p)[i];
            return isfinite(v) ? json_real(v) : json_null();
        }
        case FW_FLOAT64: {
            double v = ((const double *)p)[i];
            return isfinite(v) ? json_real(v) : json_null();
        }
        case FW_INT32: return json_integer(((const int32_t *)p)[i]);
        case FW_INT64: return json_integer(((const int64_t *)p)[i]);
        case FW_BOOL: return json_boolean(((const uint8_t *)p)[i]);
        case FW_UINT8: return json_integer(((const uint8_t *)p)[i]);
        default: return json_null();
        }
    }
    a = json_array();
    for (int64_t i = 0; i < t->shape[d]; i++)
        json_array_append_new(a, out_list(t, d + 1, at));
    return a;
}

static json_t *outputs_json(const serve_call *c)
{
    json_t *o = json_object();

    for (int i = 0; i < c->n_out; i++) {
        const serve_tensor *t = &c->out[i];
        json_t *shape = json_array();
        size_t at = 0;
        for (int k = 0; k < t->ndim; k++)
            json_array_append_new(shape, json_integer(t->shape[k]));
        json_object_set_new(o, t->name,
                            json_pack("{s:o, s:s, s:o}", "shape", shape, "dtype", fw_dtype_name(t->dtype), "data",
                                      out_list(t, 0, &at)));
    }
    return o;
}

static void log_call(gw_request *req, int64_t dep, int version, int status, int batch, int64_t cost,
                     const char *error)
{
    serve_call_record r = {dep, req->auth.via_key ? req->auth.key_id : 0, req->auth.user_id, version, status, batch,
                           (ed_mono_ns() - req->start_ns) / 1000000, cost, error};
    if (serve_call_log(req->srv->serving, &r) < 0)
        ed_error_clear();     /* refusals only: a success checks its own log write */
}

static int predict(gw_request *req, gw_response *res)
{
    serve_hub *h = req->srv->serving;
    struct { int64_t id, price_mcoins_per_call; int version; } d = {0, 0, 0};
    static __thread serve_call c;
    json_t *body, *inputs, *v;
    const char *name;
    int64_t key = req->auth.via_key ? req->auth.key_id : 0, budget = -1;
    size_t left = SERVE_CALL_BYTES_MAX;
    int err, retry = 0, status;

    if (h == NULL)
        return ed_error_set(ED_EBUSY, "deployments are not available on this server");
    if ((err = serve_deployment_resolve(&d.id, &d.price_mcoins_per_call, h, req->auth.user_id, req->params[0])) < 0)
        return err;
    if (key > 0 && acct_key_budget(&budget, req->srv->store, key) < 0) {
        ed_error_clear();
        budget = -1;
    }
    if ((err = serve_call_admit(h, key, req->auth.user_id, budget, d.price_mcoins_per_call, &retry)) < 0) {
        char msg[300];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        req->retry_after_s = retry;
        log_call(req, d.id, d.version, err == ED_ELIMIT ? 429 : err == ED_EQUOTA ? 402 : 500, 0, 0, msg);
        return ed_error_set(err, "%s", msg);
    }
    serve_call_init(&c);
    c.deployment_id = d.id;
    c.user_id = req->auth.user_id;
    c.key_id = key;
    if ((err = gw_request_json(&body, req)) < 0)
        goto refused;
    inputs = json_object_get(body, "inputs");
    if (!json_is_object(inputs) || json_object_size(inputs) == 0) {
        err = ed_error_set(ED_EINVAL, "the body must be {\"inputs\": {name: {shape, dtype, data | b64}}}");
        goto refused;
    }
    if (json_object_size(inputs) > SERVE_MAX_TENSORS) {
        err = ed_error_set(ED_EUNPROC, "more than %d inputs", SERVE_MAX_TENSORS);
        goto refused;
    }
    json_object_foreach(inputs, name, v) {
        if ((err = parse_input(&c.in[c.n_in], name, v, &left)) < 0) {
            c.n_in++;        /* its data (if any) is freed with the call */
            goto refused;
        }
        c.n_in++;
    }
    err = serve_predict(h, &c);
    if (err == 0) {
        json_t *out = json_pack("{s:o, s:i, s:I, s:i}", "outputs", outputs_json(&c), "model_version", c.version,
                                "latency_ms", (json_int_t)((ed_mono_ns() - req->start_ns) / 1000000), "batch_size",
                                c.batch_size);
        serve_call_record r = {d.id, key, req->auth.user_id, c.version, 200, c.batch_size,
                               (ed_mono_ns() - req->start_ns) / 1000000, d.price_mcoins_per_call, NULL};
        serve_call_done(&c);
        /* logged before answered: an unlogged call is never answered (nor charged);
         * then its reservation goes (the log counts it from now) */
        err = serve_call_log(h, &r);
        serve_call_release(h, key, req->auth.user_id, d.price_mcoins_per_call);
        if (err < 0) {
            json_decref(out);
            return ed_error_set(ED_EBUSY, "the call could not be recorded: %s", ed_error_last());
        }
        return gw_respond_json(res, 200, out);
    }
refused:
    status = err == SERVE_ETIMEOUT ? 504 : gw__status_for(err, NULL);
    {
        char msg[600];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        log_call(req, d.id, c.version ? c.version : d.version, status, c.batch_size, 0, msg);
        serve_call_done(&c);
        serve_call_release(h, key, req->auth.user_id, d.price_mcoins_per_call);
        if (err == SERVE_ETIMEOUT)
            return gw_respond_json(res, 504,
                                   json_pack("{s:{s:s, s:s, s:s}}", "error", "code", "timeout", "message", msg,
                                             "request_id", req->request_id ? req->request_id : ""));
        return ed_error_set(err, "%s", msg);
    }
}

const gw_route gw__routes_serve[] = {
    {"POST", "/serve/{deployment}/predict", predict, GW_AUTH | GW_SCOPE_SERVE,
     "Call a deployed model {inputs: {name: {shape, dtype, data | b64}}} (key scope serve)"},
    {NULL, NULL, NULL, 0, NULL},
};
