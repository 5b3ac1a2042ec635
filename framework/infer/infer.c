/* infer.c - the inference runtime over the graph IR (eddy_infer.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy_infer.h"
#include "fw/fw.h"
#include "fw_parallel.h"
#include "graph.h"

#define MAX_PATH_LEN 4096
#define MAX_ELEMS ((int64_t)1 << 31)

struct fw_infer_config {
    char model[MAX_PATH_LEN + 16];
    char params[MAX_PATH_LEN + 16];
    int threads;
    int gpu, gpu_device, gpu_mb;
    int ir_optim;
};

struct fw_infer_tensor {
    fw_infer_predictor *owner;
    const char *name;      /* borrowed from the graph */
    fw_dtype dtype;
    bool is_input;
    int ndim;              /* shape set by reshape (inputs) */
    int64_t shape[FW_MAX_DIMS];
    fw_tensor *data;       /* inputs: copied in; outputs: the last run's */
};

struct fw_infer_predictor {
    fw_graph *g;           /* shared between clones */
    int nin, nout;
    fw_infer_tensor *in, *out;
};

const char *fw_infer_last_error(void)
{
    return fw_error_code() == FW_OK ? "" : fw_error_last();
}

fw_infer_config *fw_infer_config_new(void)
{
    fw_infer_config *c = calloc(1, sizeof(*c));
    if (c)
        c->ir_optim = 1;
    return c;
}

void fw_infer_config_free(fw_infer_config *c) { free(c); }

int fw_infer_config_set_model(fw_infer_config *c, const char *model_file, const char *params_file)
{
    if (c == NULL || model_file == NULL || !*model_file)
        return fw_error_set(FW_EINVAL, "config: model file must be a non-empty path");
    if (strlen(model_file) > MAX_PATH_LEN || (params_file && strlen(params_file) > MAX_PATH_LEN))
        return fw_error_set(FW_EINVAL, "config: path over %d bytes", MAX_PATH_LEN);
    if (params_file == NULL || !*params_file) {
        snprintf(c->model, sizeof(c->model), "%s.pdmodel", model_file);
        snprintf(c->params, sizeof(c->params), "%s.pdiparams", model_file);
    } else {
        snprintf(c->model, sizeof(c->model), "%s", model_file);
        snprintf(c->params, sizeof(c->params), "%s", params_file);
    }
    return 0;
}

int fw_infer_config_set_cpu_threads(fw_infer_config *c, int n)
{
    if (c == NULL || n < 1 || n > 1024)
        return fw_error_set(FW_EINVAL, "config: threads must be 1..1024, got %d", n);
    c->threads = n;
    return 0;
}

int fw_infer_config_enable_gpu(fw_infer_config *c, int memory_mb, int device_id)
{
    if (c == NULL || memory_mb < 0 || device_id < 0)
        return fw_error_set(FW_EINVAL, "config: bad GPU memory or device id");
    c->gpu = 1;
    c->gpu_mb = memory_mb;
    c->gpu_device = device_id;
    return 0;
}

void fw_infer_config_disable_gpu(fw_infer_config *c)
{
    if (c)
        c->gpu = 0;
}

void fw_infer_config_switch_ir_optim(fw_infer_config *c, int on)
{
    if (c)
        c->ir_optim = on != 0;
}

static int make_handles(fw_infer_predictor *p)
{
    p->nin = fw_graph_num_inputs(p->g);
    p->nout = fw_graph_num_outputs(p->g);
    p->in = calloc((size_t)p->nin, sizeof(*p->in));
    p->out = calloc((size_t)p->nout, sizeof(*p->out));
    if (p->in == NULL || p->out == NULL)
        return fw_error_set(FW_ENOMEM, "predictor handles");
    for (int i = 0; i < p->nin; i++) {
        fw_infer_tensor *t = &p->in[i];
        t->owner = p;
        t->name = fw_graph_input_name(p->g, i);
        t->dtype = fw_graph_input_dtype(p->g, i);
        t->is_input = true;
        t->ndim = fw_graph_input_shape(p->g, i, t->shape);
    }
    for (int i = 0; i < p->nout; i++) {
        p->out[i].owner = p;
        p->out[i].name = fw_graph_output_name(p->g, i);
        p->out[i].dtype = FW_FLOAT32;
    }
    return 0;
}

int fw_infer_predictor_create(fw_infer_predictor **out, const fw_infer_config *c)
{
    fw_infer_predictor *p;
    int err;

    if (out == NULL)
        return fw_error_set(FW_EINVAL, "predictor: NULL out");
    *out = NULL;
    if (c == NULL || !c->model[0])
        return fw_error_set(FW_EINVAL, "predictor: the config has no model "
                            "(fw_infer_config_set_model)");
    if (c->gpu && !fw_device_available(FW_CUDA))
        return fw_error_set(FW_EUNSUPPORTED, "predictor: GPU %d requested, but this build has "
                            "no CUDA backend; use the CPU (disable_gpu)", c->gpu_device);
    if ((p = calloc(1, sizeof(*p))) == NULL)
        return fw_error_set(FW_ENOMEM, "predictor");
    if ((err = fw_graph_load(&p->g, c->model, c->params)) < 0)
        goto fail;
    if (c->ir_optim && (err = fw_graph_optimize(p->g, FW_GRAPH_PASS_ALL, NULL)) < 0)
        goto fail;
    if ((err = make_handles(p)) < 0)
        goto fail;
    if (c->threads > 0 && !fw_parallel_in_region())
        fw_parallel_set_num_threads(c->threads);
    *out = p;
    return 0;
fail:
    fw_infer_predictor_free(p);
    return err;
}

int fw_infer_predictor_clone(fw_infer_predictor **out, fw_infer_predictor *p)
{
    fw_infer_predictor *q;
    int err;

    if (out == NULL || p == NULL)
        return fw_error_set(FW_EINVAL, "clone: NULL argument");
    *out = NULL;
    if ((q = calloc(1, sizeof(*q))) == NULL)
        return fw_error_set(FW_ENOMEM, "clone");
    q->g = fw_graph_ref(p->g);
    if ((err = make_handles(q)) < 0) {
        fw_infer_predictor_free(q);
        return err;
    }
    *out = q;
    return 0;
}

void fw_infer_predictor_free(fw_infer_predictor *p)
{
    if (p == NULL)
        return;
    for (int i = 0; p->in && i < p->nin; i++)
        fw_tensor_unref(p->in[i].data);
    for (int i = 0; p->out && i < p->nout; i++)
        fw_tensor_unref(p->out[i].data);
    free(p->in);
    free(p->out);
    fw_graph_free(p->g);
    free(p);
}

int fw_infer_num_inputs(const fw_infer_predictor *p) { return p ? p->nin : 0; }
int fw_infer_num_outputs(const fw_infer_predictor *p) { return p ? p->nout : 0; }

const char *fw_infer_input_name(const fw_infer_predictor *p, int i)
{
    return p && i >= 0 && i < p->nin ? p->in[i].name : NULL;
}

const char *fw_infer_output_name(const fw_infer_predictor *p, int i)
{
    return p && i >= 0 && i < p->nout ? p->out[i].name : NULL;
}

static fw_infer_tensor *find(fw_infer_tensor *ts, int n, const char *name, const char *what)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(ts[i].name, name) == 0)
            return &ts[i];
    fw_error_set(FW_EINVAL, "predictor: no %s named '%.200s'", what, name ? name : "(null)");
    return NULL;
}

fw_infer_tensor *fw_infer_get_input_handle(fw_infer_predictor *p, const char *name)
{
    return p ? find(p->in, p->nin, name, "input") : NULL;
}

fw_infer_tensor *fw_infer_get_output_handle(fw_infer_predictor *p, const char *name)
{
    return p ? find(p->out, p->nout, name, "output") : NULL;
}

int fw_infer_tensor_reshape(fw_infer_tensor *t, int ndim, const int64_t *shape)
{
    int64_t want[FW_MAX_DIMS], numel = 1;
    int wnd;

    if (t == NULL || !t->is_input)
        return fw_error_set(FW_EINVAL, "reshape: only inputs can be reshaped");
    if (ndim < 0 || ndim > FW_MAX_DIMS || (ndim > 0 && shape == NULL))
        return fw_error_set(FW_EINVAL, "reshape '%s': ndim must be 0..%d", t->name, FW_MAX_DIMS);
    wnd = fw_graph_input_shape(t->owner->g, (int)(t - t->owner->in), want);
    if (wnd != ndim)
        return fw_error_set(FW_ESHAPE, "reshape '%s': the model takes %d dimensions, got %d",
                            t->name, wnd, ndim);
    for (int d = 0; d < ndim; d++) {
        if (shape[d] < 0 || (want[d] >= 0 && shape[d] != want[d]))
            return fw_error_set(FW_ESHAPE, "reshape '%s': dimension %d must be %lld, got %lld",
                                t->name, d, (long long)want[d], (long long)shape[d]);
        if (shape[d] > 0 && numel > MAX_ELEMS / shape[d])
            return fw_error_set(FW_ESHAPE, "reshape '%s': over 2^31 elements", t->name);
        numel *= shape[d];
    }
    memcpy(t->shape, shape, (size_t)ndim * sizeof(int64_t));
    t->ndim = ndim;
    fw_tensor_unref(t->data);
    t->data = NULL;
    return 0;
}

int fw_infer_tensor_copy_from_cpu(fw_infer_tensor *t, const void *data, size_t nbytes)
{
    int64_t numel = 1;
    size_t want;

    if (t == NULL || !t->is_input || data == NULL)
        return fw_error_set(FW_EINVAL, "copy_from_cpu: needs an input handle and data");
    for (int d = 0; d < t->ndim; d++) {
        if (t->shape[d] < 0)
            return fw_error_set(FW_ESHAPE, "copy_from_cpu '%s': call reshape first (dimension "
                                "%d is dynamic)", t->name, d);
        numel *= t->shape[d];
    }
    want = (size_t)numel * fw_dtype_size(t->dtype);
    if (nbytes != want)
        return fw_error_set(FW_ESHAPE, "copy_from_cpu '%s': %zu bytes for %lld %s elements "
                            "(%zu bytes expected)", t->name, nbytes, (long long)numel,
                            fw_dtype_name(t->dtype), want);
    fw_tensor_unref(t->data);
    t->data = NULL;
    return fw_tensor_from_data(&t->data, data, t->dtype, t->shape, t->ndim);
}

int fw_infer_tensor_copy_to_cpu(fw_infer_tensor *t, void *data, size_t nbytes)
{
    fw_tensor *c = NULL;
    size_t have;
    int err;

    if (t == NULL || data == NULL)
        return fw_error_set(FW_EINVAL, "copy_to_cpu: NULL argument");
    if (t->data == NULL)
        return fw_error_set(FW_EINVAL, "copy_to_cpu '%s': no data (run the predictor first)",
                            t->name);
    have = fw_infer_tensor_nbytes(t);
    if (nbytes < have)
        return fw_error_set(FW_ERANGE, "copy_to_cpu '%s': buffer of %zu bytes, %zu needed",
                            t->name, nbytes, have);
    if ((err = fw_contiguous(&c, t->data)) < 0)
        return err;
    memcpy(data, fw_tensor_data(c), have);
    fw_tensor_unref(c);
    return 0;
}

int fw_infer_tensor_shape(const fw_infer_tensor *t, int64_t *shape)
{
    if (t == NULL || shape == NULL)
        return fw_error_set(FW_EINVAL, "shape: NULL argument");
    if (t->data) {
        int nd = fw_tensor_ndim(t->data);
        memcpy(shape, fw_tensor_shape(t->data), (size_t)nd * sizeof(int64_t));
        return nd;
    }
    if (!t->is_input)
        return fw_error_set(FW_EINVAL, "shape '%s': no data (run the predictor first)", t->name);
    memcpy(shape, t->shape, (size_t)t->ndim * sizeof(int64_t));
    return t->ndim;
}

fw_dtype fw_infer_tensor_dtype(const fw_infer_tensor *t)
{
    return t->data ? fw_tensor_dtype(t->data) : t->dtype;
}

const char *fw_infer_tensor_name(const fw_infer_tensor *t) { return t ? t->name : NULL; }

size_t fw_infer_tensor_nbytes(const fw_infer_tensor *t)
{
    if (t == NULL || t->data == NULL)
        return 0;
    return (size_t)fw_tensor_numel(t->data) * fw_dtype_size(fw_tensor_dtype(t->data));
}

static int gather_inputs(fw_infer_predictor *p, fw_tensor **ins)
{
    for (int i = 0; i < p->nin; i++) {
        if (p->in[i].data == NULL)
            return fw_error_set(FW_EINVAL, "run: input '%s' has no data (copy_from_cpu)",
                                p->in[i].name);
        ins[i] = p->in[i].data;
    }
    return 0;
}

int fw_infer_predictor_run(fw_infer_predictor *p)
{
    fw_tensor *ins[FW_GRAPH_MAX_IO], *outs[FW_GRAPH_MAX_IO];
    int err;

    if (p == NULL)
        return fw_error_set(FW_EINVAL, "run: NULL predictor");
    if ((err = gather_inputs(p, ins)) < 0)
        return err;
    if ((err = fw_graph_run(p->g, ins, outs)) < 0)
        return err;
    for (int o = 0; o < p->nout; o++) {
        fw_tensor_unref(p->out[o].data);
        p->out[o].data = outs[o];
        p->out[o].dtype = fw_tensor_dtype(outs[o]);
    }
    fw_error_clear();
    return 0;
}

int fw_infer_predictor_memory_plan(fw_infer_predictor *p, int64_t *arena_bytes,
                                   int64_t *total_bytes)
{
    fw_tensor *ins[FW_GRAPH_MAX_IO];
    fw_graph_plan plan;
    int err;

    if (p == NULL || arena_bytes == NULL || total_bytes == NULL)
        return fw_error_set(FW_EINVAL, "memory_plan: NULL argument");
    if ((err = gather_inputs(p, ins)) < 0 || (err = fw_graph_plan_memory(&plan, p->g, ins)) < 0)
        return err;
    *arena_bytes = plan.arena_bytes;
    *total_bytes = plan.total_bytes;
    return 0;
}
