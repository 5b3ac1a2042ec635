/*
 * replica_main.c - eddy-serve-replica: one deployment replica, run inside
 * the sandbox by the hub (hub.c).
 *
 *     eddy-serve-replica MODEL_PREFIX FD [THREADS]
 *
 * Loads MODEL_PREFIX.pdmodel / .pdiparams with the C inference runtime
 * (eddy_infer.h), says HELLO on the socket FD (status 0, or 1 and the
 * loader's message, then exits 2), then answers RUN frames with RESULT
 * frames until the socket closes (exit 0). An input the model refuses
 * (unknown or missing name, wrong dtype or shape) is a RESULT with status
 * 1 and the runtime's message: the replica keeps serving. A malformed frame
 * ends it (exit 3): only the hub writes to the socket, so that is a bug,
 * and the hub starts another replica.
 */
#include "eddy_infer.h"
#include "serve_wire.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int reply_error(int fd, const char *msg)
{
    serve_wbuf b = {0};
    int rc;

    serve__wbuf_u32(&b, 1);
    serve__wbuf_put(&b, msg, strlen(msg));
    rc = b.oom ? -1 : serve__frame_write(fd, SERVE_W_RESULT, b.p, b.len);
    free(b.p);
    return rc;
}

/* Run one request: 0 when answered (with a result or an error), -1 when the
 * socket failed. */
static int run_one(int fd, fw_infer_predictor *p, const char *payload, size_t len)
{
    static serve_tensor in[SERVE_MAX_TENSORS], out[SERVE_MAX_TENSORS];
    int n_in = 0, n_out = 0, rc = 0, nin = fw_infer_num_inputs(p), nout = fw_infer_num_outputs(p);
    size_t off = 0;
    char err[4096];
    serve_wbuf b = {0};

    if (serve__decode_tensors(in, &n_in, SERVE_MAX_TENSORS, payload, len, &off, err, sizeof(err)) < 0 ||
        off != len) {
        fprintf(stderr, "replica: %s\n", off != len ? "trailing bytes in a frame" : err);
        exit(3);
    }
    if (n_in != nin) {
        snprintf(err, sizeof(err), "the model takes %d inputs, got %d", nin, n_in);
        goto refuse;
    }
    for (int i = 0; i < n_in; i++) {
        fw_infer_tensor *h = fw_infer_get_input_handle(p, in[i].name);
        if (h == NULL) {
            snprintf(err, sizeof(err), "the model has no input '%s'", in[i].name);
            goto refuse;
        }
        if (fw_infer_tensor_dtype(h) != in[i].dtype) {
            snprintf(err, sizeof(err), "input '%s' must be %s, got %s", in[i].name,
                     fw_dtype_name(fw_infer_tensor_dtype(h)), fw_dtype_name(in[i].dtype));
            goto refuse;
        }
        if (fw_infer_tensor_reshape(h, in[i].ndim, in[i].shape) < 0 ||
            fw_infer_tensor_copy_from_cpu(h, in[i].data, in[i].nbytes) < 0) {
            snprintf(err, sizeof(err), "%.400s", fw_infer_last_error());
            goto refuse;
        }
    }
    if (fw_infer_predictor_run(p) < 0) {
        snprintf(err, sizeof(err), "%.400s", fw_infer_last_error());
        goto refuse;
    }
    for (int i = 0; i < nout && i < SERVE_MAX_TENSORS; i++) {
        fw_infer_tensor *h = fw_infer_get_output_handle(p, fw_infer_output_name(p, i));
        int64_t shape[FW_MAX_DIMS];
        int nd = h ? fw_infer_tensor_shape(h, shape) : -1;
        serve_tensor *o = &out[n_out];
        if (nd < 0 || nd > SERVE_MAX_DIMS) {
            snprintf(err, sizeof(err), "output %d: no result (%.400s)", i, fw_infer_last_error());
            goto refuse;
        }
        memset(o, 0, sizeof(*o));
        snprintf(o->name, sizeof(o->name), "%s", fw_infer_output_name(p, i));
        o->dtype = fw_infer_tensor_dtype(h);
        o->ndim = nd;
        memcpy(o->shape, shape, sizeof(int64_t) * (size_t)nd);
        o->nbytes = fw_infer_tensor_nbytes(h);
        if ((o->data = malloc(o->nbytes ? o->nbytes : 1)) == NULL ||
            fw_infer_tensor_copy_to_cpu(h, o->data, o->nbytes) < 0) {
            snprintf(err, sizeof(err), "output '%s': %.400s", o->name, o->data ? fw_infer_last_error() : "out of memory");
            free(o->data);
            goto refuse;
        }
        n_out++;
    }
    serve__wbuf_u32(&b, 0);
    serve__wbuf_tensors(&b, out, n_out);
    if (b.oom)
        rc = reply_error(fd, "out of memory building the result");
    else
        rc = serve__frame_write(fd, SERVE_W_RESULT, b.p, b.len);
    free(b.p);
    goto done;
refuse:
    rc = reply_error(fd, err);
done:
    for (int i = 0; i < n_in; i++)
        free(in[i].data);
    for (int i = 0; i < n_out; i++)
        free(out[i].data);
    return rc;
}

int main(int argc, char **argv)
{
    fw_infer_config *cfg;
    fw_infer_predictor *p = NULL;
    int fd, threads = argc > 3 ? atoi(argv[3]) : 1;
    serve_wbuf b = {0};

    if (argc < 3) {
        fprintf(stderr, "usage: eddy-serve-replica MODEL_PREFIX FD [THREADS]\n");
        return 64;
    }
    fd = atoi(argv[2]);
    if ((cfg = fw_infer_config_new()) == NULL || fw_infer_config_set_model(cfg, argv[1], NULL) < 0 ||
        fw_infer_config_set_cpu_threads(cfg, threads >= 1 && threads <= 64 ? threads : 1) < 0 ||
        fw_infer_predictor_create(&p, cfg) < 0) {
        const char *msg = fw_infer_last_error();
        serve__wbuf_u32(&b, 1);
        serve__wbuf_put(&b, msg, strlen(msg));
        serve__frame_write(fd, SERVE_W_HELLO, b.p, b.len);
        fprintf(stderr, "replica: cannot load %s: %s\n", argv[1], msg);
        return 2;
    }
    fw_infer_config_free(cfg);
    serve__wbuf_u32(&b, 0);
    if (serve__frame_write(fd, SERVE_W_HELLO, b.p, b.len) < 0)
        return 1;
    free(b.p);
    for (;;) {
        uint32_t type;
        char *payload;
        size_t len;
        if (serve__frame_read(fd, &type, &payload, &len, SERVE_FRAME_MAX, -1) < 0) {
            if (errno == EPIPE)
                break;           /* the hub closed: done */
            fprintf(stderr, "replica: read: %s\n", strerror(errno));
            return 3;
        }
        if (type != SERVE_W_RUN) {
            fprintf(stderr, "replica: unexpected frame %u\n", type);
            return 3;
        }
        if (run_one(fd, p, payload, len) < 0) {
            free(payload);
            return 1;
        }
        free(payload);
    }
    fw_infer_predictor_free(p);
    return 0;
}
