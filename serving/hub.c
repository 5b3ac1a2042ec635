/*
 * hub.c - deployments at run time: replicas in sandboxes, the per-deployment
 * queue with dynamic batching, the supervisor (replica counts, rolling
 * swaps, metering replicas' time, posting call charges) and admission.
 *
 * Locking: one mutex (h->mu) guards every sdep, srep, sitem and skey. A
 * replica's thread holds it only to take a batch from its deployment's queue
 * and to hand results back; sending, running and receiving happen unlocked.
 * The store is never touched with h->mu held.
 *
 * Ownership of a call: serve_predict moves the inputs into an sitem and
 * queues it. While queued the caller owns it (a timed-out caller unlinks and
 * frees it); once a replica took it, the replica owns it until it is done,
 * and frees it itself when the caller gave up (abandoned).
 */
#include "serve_int.h"
#include "serve_wire.h"

#include "eddy_infer.h"
#include "quota.h"
#include "sbx.h"
#include "sched.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"
#include "ed_time.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define SUP_TICK_MS 200

static void *logger_main(void *arg);

/* ---- config -------------------------------------------------------------------- */

int serve_config_defaults(serve_config *c, const char *data_dir)
{
    sched_config sc;
    const char *e;
    int err;

    memset(c, 0, sizeof(*c));
    if ((err = sched_config_defaults(&sc, data_dir)) < 0)
        return err;
    snprintf(c->data_dir, sizeof(c->data_dir), "%s", data_dir);
    snprintf(c->slot_dir, sizeof(c->slot_dir), "%s", sc.slot_dir);
    c->slot_base = sc.slot_base;
    c->slot_count = sc.slot_count;
    c->meter_interval_ms = sc.meter_interval_ms;
    c->flush_interval_ms = 1000;
    c->ready_timeout_ms = 60000;
    if ((e = getenv("EDDY_SERVE_FLUSH_MS")) && *e) {
        c->flush_interval_ms = atoll(e);
        if (c->flush_interval_ms < 50 || c->flush_interval_ms > 3600000)
            return ed_error_set(ED_EINVAL, "EDDY_SERVE_FLUSH_MS must be 50..3600000");
    }
    if ((e = getenv("EDDY_SERVE_REPLICA_BIN")) && *e)
        snprintf(c->replica_bin, sizeof(c->replica_bin), "%s", e);
    c->allow_degraded = (e = getenv("EDDY_SANDBOX_DEGRADED")) && strcmp(e, "1") == 0;
    return 0;
}

static void replica_path(char *out, size_t n, const serve_config *c)
{
    char exe[PATH_MAX], dir[PATH_MAX - 64];
    ssize_t len;

    if (c->replica_bin[0]) {
        snprintf(out, n, "%s", c->replica_bin);
        return;
    }
    out[0] = '\0';
    if ((len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
        return;
    exe[len] = '\0';
    snprintf(dir, sizeof(dir), "%s", dirname(exe));
    snprintf(out, n, "%s/eddy-serve-replica", dir);
}

/* ---- items ---------------------------------------------------------------------- */

void serve__item_free(sitem *it)
{
    if (it == NULL)
        return;
    for (int i = 0; i < it->n_in; i++)
        free(it->in[i].data);
    for (int i = 0; i < it->n_out; i++)
        free(it->out[i].data);
    pthread_cond_destroy(&it->cv);
    free(it);
}

void serve_call_init(serve_call *c)
{
    memset(c, 0, sizeof(*c));
}

void serve_call_done(serve_call *c)
{
    for (int i = 0; i < c->n_in; i++)
        free(c->in[i].data);
    for (int i = 0; i < c->n_out; i++)
        free(c->out[i].data);
    c->n_in = c->n_out = 0;
}

/* ---- the model spec -------------------------------------------------------------- */

/* The declared inputs [{name, dtype, shape}] of a version into d->in. */
static int spec_parse(sdep *d, const char *inputs_json)
{
    json_t *a = json_loads(inputs_json, 0, NULL), *v;
    size_t i;

    d->n_in = 0;
    d->batchable = true;
    if (!json_is_array(a)) {
        json_decref(a);
        return ed_error_set(ED_EIO, "deployment %lld: unreadable input spec", (long long)d->id);
    }
    json_array_foreach(a, i, v) {
        sinput *s = &d->in[d->n_in];
        json_t *shape = json_object_get(v, "shape"), *x;
        size_t k;
        if (d->n_in >= SERVE_MAX_TENSORS || !json_is_array(shape) || json_array_size(shape) > SERVE_MAX_DIMS ||
            fw_dtype_from_name(&s->dtype, json_string_value(json_object_get(v, "dtype")) ?: "") != 0)
            break;
        snprintf(s->name, sizeof(s->name), "%s", json_string_value(json_object_get(v, "name")) ?: "");
        s->ndim = (int)json_array_size(shape);
        json_array_foreach(shape, k, x) s->shape[k] = json_is_integer(x) ? json_integer_value(x) : -1;
        if (s->ndim == 0 || s->shape[0] >= 0)
            d->batchable = false;
        d->n_in++;
    }
    json_decref(a);
    return 0;
}

/* Read the model file's inputs and outputs (validated by the loader before). */
static int model_io(char **inputs, char **outputs, const char *model, size_t len)
{
    json_t *m = json_loadb(model, len, 0, NULL), *ins, *outs, *ia, *oa, *v;
    size_t i;

    *inputs = *outputs = NULL;
    ins = json_object_get(m, "inputs");
    outs = json_object_get(m, "outputs");
    if (!json_is_array(ins) || !json_is_array(outs)) {
        json_decref(m);
        return ed_error_set(ED_EUNPROC, "model: no inputs or outputs");
    }
    ia = json_array();
    oa = json_array();
    json_array_foreach(ins, i, v) json_array_append_new(
        ia, json_pack("{s:O, s:O, s:O}", "name", json_object_get(v, "name"), "dtype", json_object_get(v, "dtype"),
                      "shape", json_object_get(v, "shape")));
    json_array_foreach(outs, i, v) json_array_append(oa, json_object_get(v, "name"));
    *inputs = json_dumps(ia, JSON_COMPACT);
    *outputs = json_dumps(oa, JSON_COMPACT);
    json_decref(ia);
    json_decref(oa);
    json_decref(m);
    if (!*inputs || !*outputs) {
        free(*inputs);
        free(*outputs);
        *inputs = *outputs = NULL;
        return ed_error_set(ED_ENOMEM, "model spec");
    }
    return 0;
}

/* ---- model directories --------------------------------------------------------------- */

static int write_file(int dir, const char *name, const char *data, size_t len)
{
    int fd = openat(dir, name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
    size_t off = 0;

    if (fd < 0)
        return ed_error_set(ED_EIO, "create %s: %s", name, strerror(errno));
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            close(fd);
            return ed_error_set(e == ENOSPC || e == EDQUOT ? ED_EQUOTA : ED_EIO, "write %s: %s", name, strerror(e));
        }
        off += (size_t)w;
    }
    if (fsync(fd) < 0 || fchmod(fd, 0644) < 0) {
        close(fd);
        return ed_error_set(ED_EIO, "sync %s: %s", name, strerror(errno));
    }
    close(fd);
    return 0;
}

static void rm_tree(const char *path)
{
    DIR *d = opendir(path);
    struct dirent *e;
    char p[PATH_MAX];

    if (d == NULL) {
        unlink(path);
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
        if (e->d_type == DT_DIR)
            rm_tree(p);
        else
            unlink(p);
    }
    closedir(d);
    rmdir(path);
}

/* Write the two files into a new temporary directory under DATA/models,
 * load them with the runtime (the loader validates every byte), and read
 * the model's inputs and outputs. *tmp gets the directory. */
static int model_stage(char *tmp, size_t tmp_n, char **inputs, char **outputs, char sha[65], serve_hub *h,
                       const char *model, size_t model_len, const char *params, size_t params_len)
{
    char root[600], prefix[PATH_MAX];
    fw_infer_config *cfg = NULL;
    fw_infer_predictor *p = NULL;
    int dfd = -1, err;
    char *both = NULL;

    *inputs = *outputs = NULL;
    tmp[0] = '\0';
    if (model_len == 0 || model_len > SERVE_MODEL_MAX)
        return ed_error_set(ED_EUNPROC, "model: the .pdmodel file must be 1..%u bytes", SERVE_MODEL_MAX);
    if (params_len > SERVE_PARAMS_MAX)
        return ed_error_set(ED_ETOOBIG, "model: the .pdiparams file is over %u bytes", SERVE_PARAMS_MAX);
    snprintf(root, sizeof(root), "%s/models", h->cfg.data_dir);
    if (mkdir(root, 0755) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir %s: %s", root, strerror(errno));
    chmod(root, 0755);
    snprintf(tmp, tmp_n, "%s/tmp-XXXXXX", root);
    if (mkdtemp(tmp) == NULL) {
        tmp[0] = '\0';
        return ed_error_set(ED_EIO, "mkdtemp under %s: %s", root, strerror(errno));
    }
    chmod(tmp, 0755);
    if ((err = ed_fs_open_dir(&dfd, tmp)) < 0 || (err = write_file(dfd, "model.pdmodel", model, model_len)) < 0 ||
        (err = write_file(dfd, "model.pdiparams", params, params_len)) < 0)
        goto fail;
    snprintf(prefix, sizeof(prefix), "%s/model", tmp);
    if ((cfg = fw_infer_config_new()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "model config");
        goto fail;
    }
    if (fw_infer_config_set_model(cfg, prefix, NULL) < 0 || fw_infer_predictor_create(&p, cfg) < 0) {
        err = ed_error_set(ED_EUNPROC, "model: %s", fw_infer_last_error());
        goto fail;
    }
    if (fw_infer_num_inputs(p) > SERVE_MAX_TENSORS || fw_infer_num_outputs(p) > SERVE_MAX_TENSORS) {
        err = ed_error_set(ED_EUNPROC, "model: more than %d inputs or outputs", SERVE_MAX_TENSORS);
        goto fail;
    }
    if ((err = model_io(inputs, outputs, model, model_len)) < 0)
        goto fail;
    if ((both = malloc(model_len + params_len + 1)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "model hash");
        goto fail;
    }
    memcpy(both, model, model_len);
    if (params_len)
        memcpy(both + model_len, params, params_len);
    ed_sha256_hex(sha, both, model_len + params_len);
    free(both);
    fw_infer_predictor_free(p);
    fw_infer_config_free(cfg);
    close(dfd);
    return 0;
fail:
    fw_infer_predictor_free(p);
    fw_infer_config_free(cfg);
    if (dfd >= 0)
        close(dfd);
    free(*inputs);
    free(*outputs);
    *inputs = *outputs = NULL;
    if (tmp[0])
        rm_tree(tmp);
    tmp[0] = '\0';
    return err;
}

/* The Python handler's worker (kind "python"): run in the sandbox as
 * `python3 /opt/eddy/model/_eddy_worker.py FD` next to the user's
 * predict.py. It speaks the replica's frames (serve_wire.h): HELLO after
 * load(), then each RUN as a dict of numpy arrays to predict(inputs), whose
 * dict of array-likes goes back as the RESULT. An exception is a refused
 * call (status 1, its last line), the worker keeps serving. */
static const char PY_WORKER[] =
    "import importlib.util, os, struct, sys, traceback\n"
    "import numpy as np\n"
    "fd = int(sys.argv[1])\n"
    "MAGIC = 0x56534445\n"
    "DT = {0: np.float32, 1: np.float64, 4: np.int32, 5: np.int64, 6: np.bool_, 7: np.uint8}\n"
    "CODE = {np.dtype(v): k for k, v in DT.items()}\n"
    "def send(t, payload):\n"
    "    data = struct.pack('<III', MAGIC, t, len(payload)) + payload\n"
    "    mv = memoryview(data)\n"
    "    while mv:\n"
    "        n = os.write(fd, mv)\n"
    "        mv = mv[n:]\n"
    "def readn(n):\n"
    "    b = bytearray()\n"
    "    while len(b) < n:\n"
    "        c = os.read(fd, n - len(b))\n"
    "        if not c:\n"
    "            sys.exit(0)\n"
    "        b += c\n"
    "    return bytes(b)\n"
    "def fail(t, msg):\n"
    "    send(t, struct.pack('<I', 1) + msg.encode('utf-8', 'replace')[:400])\n"
    "def last(e):\n"
    "    return ''.join(traceback.format_exception_only(type(e), e)).strip().splitlines()[-1]\n"
    "sys.path.insert(0, '/opt/eddy/model')\n"
    "try:\n"
    "    spec = importlib.util.spec_from_file_location('predict', '/opt/eddy/model/predict.py')\n"
    "    mod = importlib.util.module_from_spec(spec)\n"
    "    spec.loader.exec_module(mod)\n"
    "    if hasattr(mod, 'load'):\n"
    "        mod.load()\n"
    "    if not callable(getattr(mod, 'predict', None)):\n"
    "        raise RuntimeError('predict.py defines no predict(inputs)')\n"
    "except BaseException as e:\n"
    "    traceback.print_exc()\n"
    "    fail(1, 'load: ' + last(e))\n"
    "    sys.exit(2)\n"
    "send(1, struct.pack('<I', 0))\n"
    "while True:\n"
    "    magic, t, n = struct.unpack('<III', readn(12))\n"
    "    if magic != MAGIC or t != 2:\n"
    "        sys.exit(3)\n"
    "    p = readn(n)\n"
    "    off = 4\n"
    "    inputs = {}\n"
    "    for _ in range(struct.unpack_from('<I', p, 0)[0]):\n"
    "        nl = struct.unpack_from('<H', p, off)[0]; off += 2\n"
    "        name = p[off:off + nl].decode(); off += nl\n"
    "        dt, nd = p[off], p[off + 1]; off += 2\n"
    "        shape = struct.unpack_from('<%dq' % nd, p, off); off += 8 * nd\n"
    "        nb = struct.unpack_from('<Q', p, off)[0]; off += 8\n"
    "        inputs[name] = np.frombuffer(p[off:off + nb], dtype=DT.get(dt, np.uint8)).reshape(shape).copy(); off += nb\n"
    "    try:\n"
    "        out = mod.predict(inputs)\n"
    "        if not isinstance(out, dict):\n"
    "            out = {'out': out}\n"
    "        body = [struct.pack('<II', 0, len(out))]\n"
    "        for k, v in out.items():\n"
    "            a = np.ascontiguousarray(np.asarray(v))\n"
    "            if a.dtype not in CODE:\n"
    "                a = a.astype(np.float64 if a.dtype.kind == 'f' else np.int64)\n"
    "            if a.ndim > 8:\n"
    "                raise ValueError('output %s has more than 8 dimensions' % k)\n"
    "            kb = str(k).encode()[:64]\n"
    "            body.append(struct.pack('<H', len(kb)) + kb + bytes([CODE[a.dtype], a.ndim]) +\n"
    "                        struct.pack('<%dq' % a.ndim, *a.shape) + struct.pack('<Q', a.nbytes) + a.tobytes())\n"
    "        send(3, b''.join(body))\n"
    "    except Exception as e:\n"
    "        traceback.print_exc()\n"
    "        fail(3, 'predict: ' + last(e))\n";

#define HANDLER_MAX (1u << 20)   /* bytes of a predict.py */

/* kind "python": predict.py and the worker into the temporary directory.
 * Nothing of the user's runs here: a handler that does not load fails its
 * replicas (503, with load()'s error in the replica list). */
static int handler_stage(char *tmp, size_t tmp_n, char **inputs, char **outputs, char sha[65], serve_hub *h,
                         const char *src, size_t len)
{
    char root[600];
    int dfd = -1, err;

    *inputs = *outputs = NULL;
    tmp[0] = '\0';
    if (len == 0 || len > HANDLER_MAX || memchr(src, '\0', len))
        return ed_error_set(ED_EUNPROC, "handler: predict.py must be 1..%u bytes of text", HANDLER_MAX);
    if (memmem(src, len, "def predict", 11) == NULL)
        return ed_error_set(ED_EUNPROC, "handler: predict.py defines no predict(inputs)");
    snprintf(root, sizeof(root), "%s/models", h->cfg.data_dir);
    if (mkdir(root, 0755) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir %s: %s", root, strerror(errno));
    snprintf(tmp, tmp_n, "%s/tmp-XXXXXX", root);
    if (mkdtemp(tmp) == NULL) {
        tmp[0] = '\0';
        return ed_error_set(ED_EIO, "mkdtemp under %s: %s", root, strerror(errno));
    }
    chmod(tmp, 0755);
    if ((err = ed_fs_open_dir(&dfd, tmp)) < 0 || (err = write_file(dfd, "predict.py", src, len)) < 0 ||
        (err = write_file(dfd, "_eddy_worker.py", PY_WORKER, sizeof(PY_WORKER) - 1)) < 0)
        goto fail;
    close(dfd);
    *inputs = strdup("[]");
    *outputs = strdup("[]");
    if (!*inputs || !*outputs) {
        free(*inputs);
        free(*outputs);
        *inputs = *outputs = NULL;
        rm_tree(tmp);
        tmp[0] = '\0';
        return ed_error_set(ED_ENOMEM, "handler");
    }
    ed_sha256_hex(sha, src, len);
    return 0;
fail:
    if (dfd >= 0)
        close(dfd);
    rm_tree(tmp);
    tmp[0] = '\0';
    return err;
}

/* Move a staged model to DATA/models/<id>/v<n>. */
static int model_commit(serve_hub *h, const char *tmp, int64_t id, int version)
{
    char dir[600], dst[700];

    snprintf(dir, sizeof(dir), "%s/models/%lld", h->cfg.data_dir, (long long)id);
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir %s: %s", dir, strerror(errno));
    snprintf(dst, sizeof(dst), "%s/v%d", dir, version);
    rm_tree(dst);    /* a crash between a copy and its record left it */
    if (rename(tmp, dst) < 0)
        return ed_error_set(ED_EIO, "rename %s: %s", tmp, strerror(errno));
    return 0;
}

/* ---- replicas --------------------------------------------------------------------- */

/* The `paddle` package's folder on the host (EDDY_PADDLE_DIR, or the build
 * tree's framework/python next to `eddy`), canonical, or "". */
static void paddle_dir(char *out, size_t n)
{
    const char *env = getenv("EDDY_PADDLE_DIR");
    char exe[PATH_MAX], cand[PATH_MAX], canon[PATH_MAX];
    ssize_t len;

    out[0] = '\0';
    if (env && env[0]) {
        snprintf(cand, sizeof(cand), "%s", env);
    } else {
        if ((len = readlink("/proc/self/exe", exe, sizeof(exe) - 1)) <= 0)
            return;
        exe[len] = '\0';
        snprintf(cand, sizeof(cand), "%.3000s/../framework/python", dirname(exe));
    }
    if (realpath(cand, canon) && strlen(canon) < n)
        snprintf(out, n, "%s", canon);
}

/* Start replica `r` of `d` in its sandbox with `sock_child` as its end of
 * the socketpair: eddy-serve-replica for a model, python3 and the worker
 * for a handler. */
static int rep_launch(srep *r, serve_hub *h, sdep *d, int sock_child)
{
    char bin[PATH_MAX], bindir[PATH_MAX], canon[PATH_MAX], model[700], fdarg[16], threads[16], logp[700];
    char pydir[PATH_MAX];
    sched_resource cls;
    sbx_spec sp;
    sbx_bind ro[2];
    int logfd, err;
    char *argv[6];
    char *env[] = {"PATH=/usr/bin:/bin", "HOME=/tmp", "LANG=C.UTF-8", "OPENBLAS_NUM_THREADS=1",
                   "PYTHONPATH=/opt/eddy/python", "PYTHONDONTWRITEBYTECODE=1", NULL};

    bindir[0] = pydir[0] = '\0';
    if (!d->python) {
        replica_path(bin, sizeof(bin), &h->cfg);
        if (bin[0] == '\0' || access(bin, X_OK) != 0)
            return ed_error_set(ED_EIO, "eddy-serve-replica not found (%s)", bin[0] ? bin : "next to eddy");
        if (realpath(bin, canon) == NULL)
            return ed_error_set(ED_EIO, "%s: %s", bin, strerror(errno));
        {
            char tmp[PATH_MAX];
            snprintf(tmp, sizeof(tmp), "%s", canon);
            snprintf(bindir, sizeof(bindir), "%s", dirname(tmp));
        }
        if (strcmp(strrchr(canon, '/') + 1, "eddy-serve-replica") != 0)
            return ed_error_set(ED_EINVAL, "the replica program must be a file named eddy-serve-replica");
    } else {
        paddle_dir(pydir, sizeof(pydir));     /* `import paddle` in a handler, when there is one */
    }
    snprintf(model, sizeof(model), "%s/models/%lld/v%d", h->cfg.data_dir, (long long)d->id, r->version);
    if (realpath(model, canon) == NULL)
        return ed_error_set(ED_EIO, "model %s: %s", model, strerror(errno));
    snprintf(model, sizeof(model), "%.690s", canon);
    memset(&cls, 0, sizeof(cls));
    if (h->sched && sched_resource_get(&cls, h->sched, d->resource) < 0)
        ed_error_clear();
    if ((err = sbx_slot_claim(&r->slot, h->cfg.slot_dir, h->cfg.slot_base, h->cfg.slot_count)) < 0)
        return err;
    snprintf(fdarg, sizeof(fdarg), "%d", sock_child);
    /* one compute thread per replica: calls are batched, replicas scale out,
     * and idle BLAS threads spinning in sched_yield cost more than they give
     * at these sizes (measured: a third of two cores at batch 1) */
    snprintf(threads, sizeof(threads), "1");
    sbx_spec_init(&sp);
    if (d->python) {
        argv[0] = "/usr/bin/python3";
        argv[1] = "/opt/eddy/model/_eddy_worker.py";
        argv[2] = fdarg;
        argv[3] = NULL;
        ro[0] = (sbx_bind){model, "/opt/eddy/model", 0};
        ro[1] = (sbx_bind){pydir, "/opt/eddy/python", 0};
        sp.n_ro = pydir[0] ? 2 : 1;
        sp.pids = 256;
    } else {
        argv[0] = "/opt/eddy/bin/eddy-serve-replica";
        argv[1] = "/opt/eddy/model/model";
        argv[2] = fdarg;
        argv[3] = threads;
        argv[4] = NULL;
        ro[0] = (sbx_bind){bindir, "/opt/eddy/bin", 0};
        ro[1] = (sbx_bind){model, "/opt/eddy/model", 0};
        sp.n_ro = 2;
        sp.pids = 64;
    }
    snprintf(logp, sizeof(logp), "%s/models/%lld/replicas.log", h->cfg.data_dir, (long long)d->id);
    logfd = open(logp, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
    sp.argv = argv;
    sp.env = env;
    sp.host_uid = sp.host_gid = sbx_slot_uid(r->slot);
    sp.ro = ro;
    sp.cwd = "/tmp";
    sp.tmp_bytes = 16LL << 20;
    sp.mem_bytes = (int64_t)(cls.memory_mb > 0 ? cls.memory_mb : 1024) << 20;
    sp.cpu_millis = (cls.cpus > 0 ? cls.cpus : 1) * 1000;
    sp.net = SBX_NET_NONE;
    sp.stdio[0] = -1;
    sp.stdio[1] = logfd;
    sp.stdio[2] = logfd;
    sp.pass_fds = &sock_child;
    sp.n_pass_fds = 1;
    sp.allow_degraded = h->cfg.allow_degraded;
    err = sbx_launch(&r->job, &sp);
    if (logfd >= 0)
        close(logfd);
    if (err < 0) {
        sbx_slot_free(r->slot);
        r->slot = NULL;
    }
    return err;
}

/* Items of the queue that can run in one batch with the head: same dtypes
 * and trailing dimensions. */
static bool compatible(const sitem *a, const sitem *b)
{
    if (a->n_in != b->n_in)
        return false;
    for (int i = 0; i < a->n_in; i++) {
        if (strcmp(a->in[i].name, b->in[i].name) != 0 || a->in[i].dtype != b->in[i].dtype ||
            a->in[i].ndim != b->in[i].ndim)
            return false;
        for (int k = 1; k < a->in[i].ndim; k++)
            if (a->in[i].shape[k] != b->in[i].shape[k])
                return false;
    }
    return true;
}

static int count_compatible(const sdep *d, int max)
{
    int n = 0;
    for (const sitem *it = d->qhead; it && n < max; it = it->next)
        if (it == d->qhead || (d->batchable && compatible(d->qhead, it)))
            n++;
    return n;
}

static void finish_item(sitem *it, int err, const char *msg)
{
    it->state = 2;
    it->err = err;
    if (msg)
        snprintf(it->msg, sizeof(it->msg), "%s", msg);
    if (it->abandoned)
        serve__item_free(it);
    else
        pthread_cond_signal(&it->cv);
}

/* Run one batch on the replica: 0, or -1 when the replica is gone (the
 * items were answered with ED_EBUSY). Called unlocked; takes h->mu to
 * hand results back. */
static int run_batch(serve_hub *h, srep *r, sitem **items, int n)
{
    serve_wbuf b = {0};
    serve_tensor cat[SERVE_MAX_TENSORS];
    int nin = items[0]->n_in, rc = 0, n_out = 0;
    int64_t rows = 0;
    uint32_t type = 0, status = 0;
    char *resp = NULL, err[512] = "";
    size_t len = 0, off = 0;
    serve_tensor outs[SERVE_MAX_TENSORS];

    memset(cat, 0, sizeof(cat));
    for (int k = 0; k < n; k++)
        rows += items[k]->rows;
    /* concatenate (a batch of one is sent as it is) */
    for (int i = 0; i < nin; i++) {
        cat[i] = items[0]->in[i];
        if (n > 1) {
            size_t total = 0, o = 0;
            for (int k = 0; k < n; k++)
                total += items[k]->in[i].nbytes;
            cat[i].data = malloc(total ? total : 1);
            if (cat[i].data == NULL) {
                snprintf(err, sizeof(err), "out of memory");
                rc = -2;
                break;
            }
            for (int k = 0; k < n; k++) {
                memcpy((char *)cat[i].data + o, items[k]->in[i].data, items[k]->in[i].nbytes);
                o += items[k]->in[i].nbytes;
            }
            cat[i].nbytes = total;
            cat[i].shape[0] = rows;
        }
    }
    if (rc == 0) {
        serve__wbuf_tensors(&b, cat, nin);
        if (b.oom || serve__frame_write(r->fd, SERVE_W_RUN, b.p, b.len) < 0 ||
            serve__frame_read(r->fd, &type, &resp, &len, SERVE_FRAME_MAX,
                              (int)(r->d->timeout_ms + 10000)) < 0 ||
            type != SERVE_W_RESULT || serve__decode_u32(&status, resp, len, &off) < 0) {
            snprintf(err, sizeof(err), "the replica stopped answering");
            rc = -1;
        } else if (status != 0) {
            snprintf(err, sizeof(err), "%.*s", (int)(len - off > 500 ? 500 : len - off), resp + off);
            rc = 1;
        } else if (serve__decode_tensors(outs, &n_out, SERVE_MAX_TENSORS, resp, len, &off, err, sizeof(err)) < 0) {
            rc = -1;
        }
    }
    if (n > 1)
        for (int i = 0; i < nin; i++)
            free(cat[i].data);
    free(b.p);
    free(resp);
    /* split the outputs by each item's rows */
    if (rc == 0 && n > 1) {
        for (int i = 0; i < n_out; i++)
            if (outs[i].ndim < 1 || outs[i].shape[0] != rows) {
                snprintf(err, sizeof(err), "output '%.64s' is not batched along its first dimension", outs[i].name);
                rc = 1;
            }
    }
    pthread_mutex_lock(&h->mu);
    if (rc == 0) {
        int64_t at = 0;
        for (int k = 0; k < n; k++) {
            sitem *it = items[k];
            bool ok = true;
            for (int i = 0; i < n_out; i++) {
                serve_tensor *o = &it->out[i];
                size_t row_bytes = n > 1 ? outs[i].nbytes / (size_t)rows : outs[i].nbytes;
                *o = outs[i];
                o->data = malloc(row_bytes * (size_t)(n > 1 ? it->rows : 1) + 1);
                if (o->data == NULL) {
                    ok = false;
                    break;
                }
                if (n > 1) {
                    o->shape[0] = it->rows;
                    o->nbytes = row_bytes * (size_t)it->rows;
                    memcpy(o->data, (char *)outs[i].data + row_bytes * (size_t)at, o->nbytes);
                } else {
                    memcpy(o->data, outs[i].data, o->nbytes);
                }
                it->n_out = i + 1;
            }
            at += it->rows;
            it->version = r->version;
            it->batch_size = n;
            finish_item(it, ok ? 0 : ED_ENOMEM, ok ? NULL : "out of memory");
        }
    } else {
        for (int k = 0; k < n; k++) {
            items[k]->version = r->version;
            items[k]->batch_size = n;
            finish_item(items[k], rc == 1 ? ED_EUNPROC : ED_EBUSY, err);
        }
    }
    pthread_mutex_unlock(&h->mu);
    for (int i = 0; i < n_out; i++)
        free(outs[i].data);
    return rc < 0 && rc != -2 ? -1 : 0;
}

static void *rep_main(void *arg)
{
    srep *r = arg;
    sdep *d = r->d;
    serve_hub *h = NULL;
    int sv[2] = {-1, -1};
    uint32_t type, status = 1;
    char *hello = NULL;
    size_t len = 0, off = 0;
    char detail[256] = "";
    sitem *batch[SERVE_MAX_BATCH];

    h = r->h;
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        snprintf(detail, sizeof(detail), "socketpair: %s", strerror(errno));
        goto ended;
    }
    /* r->fd is what serve_hub_free shuts down to end a replica still starting */
    pthread_mutex_lock(&h->mu);
    r->fd = sv[0];
    pthread_mutex_unlock(&h->mu);
    if (rep_launch(r, h, d, sv[1]) < 0) {
        snprintf(detail, sizeof(detail), "%s", ed_error_last());
        ed_error_clear();
        goto ended;
    }
    close(sv[1]);
    sv[1] = -1;
    pthread_mutex_lock(&h->mu);
    r->launched = true;
    r->metered_to_ms = ed_mono_ns() / 1000000;   /* the owner pays from the launch */
    pthread_mutex_unlock(&h->mu);
    if (serve__frame_read(r->fd, &type, &hello, &len, 1 << 16, (int)h->cfg.ready_timeout_ms) < 0 ||
        type != SERVE_W_HELLO || serve__decode_u32(&status, hello, len, &off) < 0 || status != 0) {
        if (hello && status != 0)
            snprintf(detail, sizeof(detail), "the model did not load: %.200s", hello + off);
        else
            snprintf(detail, sizeof(detail), "the replica did not start (see the replicas' log)");
        free(hello);
        goto ended;
    }
    free(hello);
    pthread_mutex_lock(&h->mu);
    r->state = r->state == REP_STARTING ? REP_READY : r->state;
    d->failures = 0;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (serve__rep_status(h->st, r->id, "ready", "", 0) < 0)
        ed_error_clear();
    for (;;) {
        int n = 0, want;
        int64_t deadline;
        pthread_mutex_lock(&h->mu);
        while (!h->stop && r->state == REP_READY && d->qhead == NULL)
            pthread_cond_wait(&d->qcv, &h->mu);
        if (h->stop || r->state != REP_READY) {
            pthread_mutex_unlock(&h->mu);
            break;
        }
        /* dynamic batching: wait for more compatible calls up to max_delay_ms */
        want = d->batchable ? d->max_batch : 1;
        deadline = d->qhead->enq_ms + d->max_delay_ms;
        while (!h->stop && r->state == REP_READY && d->qhead && count_compatible(d, want) < want &&
               ed_mono_ns() / 1000000 < deadline) {
            struct timespec ts;
            int64_t wake = ed_now_ms() + (deadline - ed_mono_ns() / 1000000);
            ts.tv_sec = wake / 1000;
            ts.tv_nsec = (wake % 1000) * 1000000;
            pthread_cond_timedwait(&d->qcv, &h->mu, &ts);
        }
        if (d->qhead == NULL || h->stop || r->state != REP_READY) {
            pthread_mutex_unlock(&h->mu);
            if (h->stop || r->state != REP_READY)
                break;
            continue;
        }
        {
            sitem *head = d->qhead, **pp = &d->qhead, *prev = NULL;
            while (*pp && n < want) {
                sitem *it = *pp;
                if (it == head || (d->batchable && compatible(head, it))) {
                    *pp = it->next;
                    if (d->qtail == it)
                        d->qtail = prev;
                    it->next = NULL;
                    it->state = 1;
                    batch[n++] = it;
                } else {
                    prev = it;
                    pp = &it->next;
                }
            }
        }
        pthread_mutex_unlock(&h->mu);
        if (run_batch(h, r, batch, n) < 0) {
            snprintf(detail, sizeof(detail), "the replica stopped answering");
            goto ended;
        }
    }
    snprintf(detail, sizeof(detail), "stopped");
ended:
    if (sv[1] >= 0)
        close(sv[1]);
    {
        int fd;
        pthread_mutex_lock(&h->mu);
        fd = r->fd;
        r->fd = -1;
        pthread_mutex_unlock(&h->mu);
        if (fd >= 0)
            close(fd);       /* EOF: the replica exits on its own */
    }
    if (r->job) {            /* the job handle is this thread's alone */
        sbx_usage u;
        if (sbx_job_wait(r->job, 2000, &u) == ED_EBUSY) {
            ed_error_clear();
            sbx_job_kill(r->job);
        }
        sbx_job_free(r->job);
        r->job = NULL;
    }
    sbx_slot_free(r->slot);
    r->slot = NULL;
    pthread_mutex_lock(&h->mu);
    snprintf(r->detail, sizeof(r->detail), "%s", detail);
    if (r->state == REP_STARTING)
        d->failures++;
    r->state = REP_ENDED;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---- the supervisor ------------------------------------------------------------------- */

static sdep *dep_find_locked(serve_hub *h, int64_t id)
{
    for (sdep *d = h->deps; d; d = d->next)
        if (d->id == id)
            return d;
    return NULL;
}

/* Load (or refresh) a deployment's live state from its row. */
static int dep_sync(serve_hub *h, int64_t id)
{
    serve_deployment row;
    sdep *d, tmp;
    int err;

    if ((err = serve__dep_load(&row, h->st, id)) < 0)
        return err;
    memset(&tmp, 0, sizeof(tmp));
    tmp.id = id;
    if ((err = spec_parse(&tmp, row.inputs_json)) < 0)
        return err;
    pthread_mutex_lock(&h->mu);
    if ((d = dep_find_locked(h, id)) == NULL) {
        if ((d = calloc(1, sizeof(*d))) == NULL) {
            pthread_mutex_unlock(&h->mu);
            return ed_error_set(ED_ENOMEM, "deployment");
        }
        d->id = id;
        pthread_cond_init(&d->qcv, NULL);
        d->next = h->deps;
        h->deps = d;
    }
    d->user_id = row.user_id;
    snprintf(d->name, sizeof(d->name), "%s", row.name);
    d->deleted = strcmp(row.status, "deleted") == 0;
    d->python = strcmp(row.kind, "python") == 0;
    snprintf(d->resource, sizeof(d->resource), "%s", row.resource);
    snprintf(d->tier, sizeof(d->tier), "%s", row.tier);
    d->replicas = row.replicas;
    d->max_batch = row.max_batch;
    d->max_delay_ms = row.max_delay_ms;
    d->timeout_ms = row.timeout_ms;
    d->price = row.price_mcoins_per_call;
    d->allow_nan = row.allow_nan;
    d->running = strcmp(row.status, "running") == 0;
    if (d->version != row.version)
        d->failures = 0;
    d->version = row.version;
    memcpy(d->in, tmp.in, sizeof(d->in));
    d->n_in = tmp.n_in;
    d->batchable = tmp.batchable && strcmp(row.kind, "python") != 0;
    pthread_cond_broadcast(&d->qcv);
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    return 0;
}

typedef struct meter_job {
    int64_t rid, dep, user, seq, ms;
    char resource[32], tier[32];
    bool final;
} meter_job;

static void meter_post(serve_hub *h, const meter_job *m)
{
    sched_resource cls;
    int64_t free_ms = 0;
    quota_meter_result res;
    char ref[64];

    if (m->ms <= 0)
        return;
    memset(&cls, 0, sizeof(cls));
    if (h->sched == NULL || sched_resource_get(&cls, h->sched, m->resource) < 0) {
        ed_error_clear();
        return;
    }
    if (sched_allowance_get(&free_ms, h->sched, m->tier, m->resource) < 0) {
        ed_error_clear();
        free_ms = 0;
    }
    snprintf(ref, sizeof(ref), "deployment:%lld:r%lld", (long long)m->dep, (long long)m->rid);
    if (quota_meter_charge(&res, h->st, m->user, m->resource, free_ms, cls.price_mcoins_per_hour, ref, m->seq, m->ms,
                           ed_now_ms()) < 0 ||
        serve__rep_metered(h->st, m->rid, m->seq, m->ms) < 0) {
        ed_log_warn("serve", "meter %s: %s", ref, ed_error_last());
        ed_error_clear();
    }
}

#define MAX_WORK 64

static void supervise(serve_hub *h, bool meter_now)
{
    meter_job mj[MAX_WORK];
    srep *spawn[MAX_WORK], *reaped[MAX_WORK];
    const char *status_of[MAX_WORK];
    int nm = 0, ns = 0, nr = 0;
    int64_t now = ed_mono_ns() / 1000000, wall = ed_now_ms();

    pthread_mutex_lock(&h->mu);
    for (sdep *d = h->deps; d; d = d->next) {
        int live_target = 0, ready_target = 0;
        for (srep *r = d->reps; r; r = r->next)
            if (r->version == d->version && (r->state == REP_STARTING || r->state == REP_READY)) {
                live_target++;
                ready_target += r->state == REP_READY;
            }
        /* start what is missing */
        while (d->running && live_target < d->replicas && ns < MAX_WORK && now >= d->next_spawn_ms) {
            srep *r = calloc(1, sizeof(*r));
            if (r == NULL)
                break;
            r->version = d->version;
            r->state = REP_STARTING;
            r->fd = -1;
            r->d = d;
            r->h = h;
            r->started_ms = now;
            r->metered_to_ms = now;
            r->next = d->reps;
            d->reps = r;
            spawn[ns++] = r;
            live_target++;
            if (d->failures > 0)   /* back off a model that keeps failing: 2 s, 4 s, ... 60 s */
                d->next_spawn_ms = now + (d->failures > 5 ? 60000 : 2000LL << (d->failures - 1));
        }
        /* drain: old versions once the new ones are ready, extras, everything when stopped */
        {
            int keep = 0;
            for (srep *r = d->reps; r; r = r->next) {
                if (r->state != REP_READY && r->state != REP_STARTING)
                    continue;
                bool old = r->version != d->version;
                if (!d->running || (old && ready_target >= d->replicas) ||
                    (!old && r->state == REP_READY && ++keep > d->replicas)) {
                    if (r->state == REP_READY) {
                        r->state = REP_DRAINING;
                        pthread_cond_broadcast(&d->qcv);
                    }
                }
            }
        }
        /* a stopped deployment answers what is queued */
        if (!d->running)
            while (d->qhead) {
                sitem *it = d->qhead;
                d->qhead = it->next;
                it->next = NULL;
                finish_item(it, ED_EBUSY, "the deployment is stopped");
            }
        if (d->qhead == NULL)
            d->qtail = NULL;
        /* reap ended replicas; meter live ones */
        for (srep **pp = &d->reps; *pp;) {
            srep *r = *pp;
            if (r->state == REP_ENDED && nr < MAX_WORK && nm < MAX_WORK) {
                *pp = r->next;
                mj[nm++] = (meter_job){r->id, d->id, d->user_id, r->meter_seq + 1,
                                       r->launched ? now - r->metered_to_ms : 0, "", "", true};
                snprintf(mj[nm - 1].resource, 32, "%s", d->resource);
                snprintf(mj[nm - 1].tier, 32, "%s", d->tier);
                status_of[nr] = r->detail;
                reaped[nr++] = r;
                continue;
            }
            if (meter_now && r->id > 0 && r->launched && r->state != REP_ENDED && nm < MAX_WORK &&
                now > r->metered_to_ms) {
                r->meter_seq++;
                mj[nm++] = (meter_job){r->id, d->id, d->user_id, r->meter_seq, now - r->metered_to_ms, "", "", false};
                snprintf(mj[nm - 1].resource, 32, "%s", d->resource);
                snprintf(mj[nm - 1].tier, 32, "%s", d->tier);
                r->metered_to_ms = now;
            }
            pp = &r->next;
        }
    }
    pthread_mutex_unlock(&h->mu);
    /* unlocked: the store, threads */
    for (int i = 0; i < ns; i++) {
        srep *r = spawn[i];
        int64_t rid = 0;
        if (serve__rep_insert(&rid, h->st, r->d->id, r->version, wall) < 0) {
            ed_log_warn("serve", "replica row: %s", ed_error_last());
            ed_error_clear();
        }
        pthread_mutex_lock(&h->mu);
        r->id = rid;
        pthread_mutex_unlock(&h->mu);
        if (pthread_create(&r->th, NULL, rep_main, r) != 0) {
            pthread_mutex_lock(&h->mu);
            snprintf(r->detail, sizeof(r->detail), "cannot start a thread");
            r->state = REP_ENDED;
            r->th = 0;
            pthread_mutex_unlock(&h->mu);
        }
    }
    for (int i = 0; i < nm; i++)
        meter_post(h, &mj[i]);
    for (int i = 0; i < nr; i++) {
        srep *r = reaped[i];
        if (r->th)
            pthread_join(r->th, NULL);
        if (r->id > 0 &&
            serve__rep_status(h->st, r->id, strcmp(status_of[i], "stopped") == 0 ? "ended" : "failed", status_of[i],
                              wall) < 0)
            ed_error_clear();
        if (strcmp(status_of[i], "stopped") != 0)
            ed_log_warn("serve", "replica %lld ended: %s", (long long)r->id, status_of[i]);
        free(r);
    }
}

static void *sup_main(void *arg)
{
    serve_hub *h = arg;

    pthread_mutex_lock(&h->mu);
    while (!h->stop) {
        struct timespec ts;
        int64_t wake = ed_now_ms() + SUP_TICK_MS, now;
        bool meter, flush;
        ts.tv_sec = wake / 1000;
        ts.tv_nsec = (wake % 1000) * 1000000;
        pthread_cond_timedwait(&h->cv, &h->mu, &ts);
        if (h->stop)
            break;
        now = ed_mono_ns() / 1000000;
        meter = now - h->last_meter_ms >= h->cfg.meter_interval_ms;
        flush = now - h->last_flush_ms >= h->cfg.flush_interval_ms;
        if (meter)
            h->last_meter_ms = now;
        if (flush)
            h->last_flush_ms = now;
        pthread_mutex_unlock(&h->mu);
        supervise(h, meter);
        if (flush && serve_charges_flush(h, NULL) < 0) {
            ed_log_warn("serve", "charges: %s", ed_error_last());
            ed_error_clear();
        }
        pthread_mutex_lock(&h->mu);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

/* ---- open and free --------------------------------------------------------------------- */

static void clean_tmp(serve_hub *h)
{
    char root[600], p[900];
    DIR *d;
    struct dirent *e;

    snprintf(root, sizeof(root), "%s/models", h->cfg.data_dir);
    if ((d = opendir(root)) == NULL)
        return;
    while ((e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "tmp-", 4) == 0) {
            snprintf(p, sizeof(p), "%s/%s", root, e->d_name);
            rm_tree(p);
        }
    closedir(d);
}

int serve_hub_open(serve_hub **out, ed_store *st, struct sched *sch, const serve_config *cfg)
{
    serve_hub *h;
    int64_t ids[1024];
    size_t n = 0;
    int err;

    *out = NULL;
    if ((h = calloc(1, sizeof(*h))) == NULL)
        return ed_error_set(ED_ENOMEM, "serve hub");
    h->st = st;
    h->sched = sch;
    h->cfg = *cfg;
    if (h->cfg.meter_interval_ms < 1000)
        h->cfg.meter_interval_ms = 60000;
    if (h->cfg.flush_interval_ms < 50)
        h->cfg.flush_interval_ms = 1000;
    if (h->cfg.ready_timeout_ms <= 0)
        h->cfg.ready_timeout_ms = 60000;
    pthread_mutex_init(&h->mu, NULL);
    pthread_mutex_init(&h->flush_mu, NULL);
    pthread_cond_init(&h->cv, NULL);
    pthread_cond_init(&h->log_cv, NULL);
    pthread_cond_init(&h->log_done_cv, NULL);
    clean_tmp(h);
    /* what the last run left: its replicas are gone (they die with it); its
     * charge batches are posted again under their keys (at most once) */
    if ((err = serve__reps_end_all(st, ed_now_ms())) < 0 || (err = serve_charges_flush(h, NULL)) < 0 ||
        (err = serve__dep_running_ids(ids, 1024, &n, st)) < 0)
        goto fail;
    for (size_t i = 0; i < n; i++)
        if (dep_sync(h, ids[i]) < 0) {
            ed_log_warn("serve", "deployment %lld: %s", (long long)ids[i], ed_error_last());
            ed_error_clear();
        }
    h->last_meter_ms = h->last_flush_ms = ed_mono_ns() / 1000000;
    if (pthread_create(&h->sup, NULL, sup_main, h) != 0) {
        err = ed_error_set(ED_EIO, "cannot start the serving supervisor");
        goto fail;
    }
    h->sup_started = true;
    if (pthread_create(&h->logger, NULL, logger_main, h) != 0) {
        err = ed_error_set(ED_EIO, "cannot start the call logger");
        goto fail;
    }
    h->logger_started = true;
    *out = h;
    return 0;
fail:
    serve_hub_free(h);
    return err;
}

void serve_hub_free(serve_hub *h)
{
    if (h == NULL)
        return;
    pthread_mutex_lock(&h->mu);
    h->stop = true;
    for (sdep *d = h->deps; d; d = d->next) {
        d->running = false;
        for (srep *r = d->reps; r; r = r->next)
            if (r->state == REP_READY)
                r->state = REP_DRAINING;
        pthread_cond_broadcast(&d->qcv);
    }
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
    if (h->sup_started)
        pthread_join(h->sup, NULL);
    /* replicas still starting end when their HELLO read fails or returns */
    for (;;) {
        bool live = false;
        pthread_mutex_lock(&h->mu);
        for (sdep *d = h->deps; d; d = d->next)
            for (srep *r = d->reps; r; r = r->next)
                if (r->state != REP_ENDED) {
                    live = true;
                    if (r->state == REP_STARTING && r->fd >= 0)
                        shutdown(r->fd, SHUT_RDWR);   /* its HELLO read ends; it cleans up itself */
                }
        pthread_mutex_unlock(&h->mu);
        if (!live)
            break;
        usleep(20000);
    }
    supervise(h, false);          /* reap, meter to the end */
    if (h->logger_started) {      /* every call logged before the last flush */
        pthread_mutex_lock(&h->mu);
        h->log_stop = true;
        pthread_cond_signal(&h->log_cv);
        pthread_mutex_unlock(&h->mu);
        pthread_join(h->logger, NULL);
        h->logger_started = false;
    }
    serve_charges_flush(h, NULL);
    ed_error_clear();
    for (sdep *d = h->deps, *nx; d; d = nx) {
        nx = d->next;
        while (d->qhead) {
            sitem *it = d->qhead;
            d->qhead = it->next;
            finish_item(it, ED_EBUSY, "the server is stopping");
        }
        pthread_cond_destroy(&d->qcv);
        free(d);
    }
    for (skey *k = h->keys, *nx; k; k = nx) {
        nx = k->next;
        free(k);
    }
    for (suser *u = h->users, *nx; u; u = nx) {
        nx = u->next;
        free(u);
    }
    pthread_cond_destroy(&h->log_cv);
    pthread_cond_destroy(&h->log_done_cv);
    pthread_cond_destroy(&h->cv);
    pthread_mutex_destroy(&h->mu);
    pthread_mutex_destroy(&h->flush_mu);
    free(h);
}

/* ---- deployments ------------------------------------------------------------------------ */

static int name_check(const char *s)
{
    size_t n = s ? strlen(s) : 0;
    if (n == 0 || n > SERVE_NAME_MAX)
        return ed_error_set(ED_EUNPROC, "field 'name' must be 1..%d characters", SERVE_NAME_MAX);
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= '0' && s[i] <= '9') ||
              s[i] == '-' || s[i] == '_' || s[i] == '.'))
            return ed_error_set(ED_EUNPROC, "field 'name' may hold only letters, digits, '.', '-' and '_'");
    if (s[0] >= '0' && s[0] <= '9' && strspn(s, "0123456789") == n)
        return ed_error_set(ED_EUNPROC, "field 'name' cannot be a number (ids are)");
    return 0;
}

static int settings_check(int replicas, int max_batch, int max_delay_ms, int timeout_ms, int64_t price)
{
    if (replicas < 0 || replicas > SERVE_MAX_REPLICAS)
        return ed_error_set(ED_EUNPROC, "field 'replicas' must be 0..%d", SERVE_MAX_REPLICAS);
    if (max_batch < 1 || max_batch > SERVE_MAX_BATCH)
        return ed_error_set(ED_EUNPROC, "field 'max_batch' must be 1..%d", SERVE_MAX_BATCH);
    if (max_delay_ms < 0 || max_delay_ms > 10000)
        return ed_error_set(ED_EUNPROC, "field 'max_delay_ms' must be 0..10000");
    if (timeout_ms < 1 || timeout_ms > 600000)
        return ed_error_set(ED_EUNPROC, "field 'timeout_ms' must be 1..600000");
    if (price < 0 || price > 1000000)
        return ed_error_set(ED_EUNPROC, "field 'price_mcoins_per_call' must be 0..1000000");
    return 0;
}

int serve_deployment_create(serve_deployment *out, serve_hub *h, const serve_spec *s, const char *model,
                            size_t model_len, const char *params, size_t params_len)
{
    char tmp[700], sha[65];
    char *inputs = NULL, *outputs = NULL;
    sched_resource cls;
    int64_t id = 0;
    int err;

    if ((err = name_check(s->name)) < 0 ||
        (err = settings_check(s->replicas, s->max_batch, s->max_delay_ms, s->timeout_ms, s->price_mcoins_per_call)) < 0)
        return err;
    if (s->kind && strcmp(s->kind, "model") != 0 && strcmp(s->kind, "python") != 0)
        return ed_error_set(ED_EUNPROC, "field 'kind' must be \"model\" or \"python\"");
    if (s->resource == NULL || (h->sched && sched_resource_get(&cls, h->sched, s->resource) < 0))
        return ed_error_set(ED_EUNPROC, "field 'resource': no resource class '%s'", s->resource ? s->resource : "");
    if (h->sched && cls.gpu)
        return ed_error_set(ED_EUNPROC, "field 'resource': replicas run on CPU classes only (no CUDA backend yet)");
    if ((err = s->kind && strcmp(s->kind, "python") == 0
                   ? handler_stage(tmp, sizeof(tmp), &inputs, &outputs, sha, h, model, model_len)
                   : model_stage(tmp, sizeof(tmp), &inputs, &outputs, sha, h, model, model_len, params, params_len)) < 0)
        return err;
    if ((err = serve__dep_insert(&id, h->st, s, sha, (int64_t)(model_len + params_len), inputs, outputs,
                                 ed_now_ms())) < 0 ||
        (err = model_commit(h, tmp, id, 1)) < 0 || (err = dep_sync(h, id)) < 0) {
        rm_tree(tmp);
        if (id > 0) {
            serve_deployment row;
            if (serve__dep_load(&row, h->st, id) == 0) {
                snprintf(row.status, sizeof(row.status), "deleted");
                serve__dep_save(h->st, &row, ed_now_ms());
            }
        }
        goto out;
    }
    {
        char ref[24];
        snprintf(ref, sizeof(ref), "%lld", (long long)id);
        err = serve_deployment_get(out, h, s->user_id, ref);
    }
out:
    free(inputs);
    free(outputs);
    return err;
}

int serve_deployment_get(serve_deployment *out, serve_hub *h, int64_t user_id, const char *ref)
{
    int64_t id;
    int err;

    if ((err = serve__dep_find(&id, h->st, user_id, ref)) < 0 || (err = serve__dep_load(out, h->st, id)) < 0)
        return err;
    pthread_mutex_lock(&h->mu);
    {
        sdep *d = dep_find_locked(h, id);
        out->replicas_ready = 0;
        for (srep *r = d ? d->reps : NULL; r; r = r->next)
            out->replicas_ready += r->state == REP_READY;
    }
    pthread_mutex_unlock(&h->mu);
    return 0;
}

int serve_deployment_list(serve_deployment *out, size_t max, size_t *n_out, serve_hub *h, int64_t user_id,
                          int64_t before)
{
    int err = serve__dep_list(out, max, n_out, h->st, user_id, before);
    if (err < 0)
        return err;
    pthread_mutex_lock(&h->mu);
    for (size_t i = 0; i < *n_out; i++) {
        sdep *d = dep_find_locked(h, out[i].id);
        for (srep *r = d ? d->reps : NULL; r; r = r->next)
            out[i].replicas_ready += r->state == REP_READY;
    }
    pthread_mutex_unlock(&h->mu);
    return 0;
}

int serve_deployment_update(serve_deployment *out, serve_hub *h, int64_t user_id, int64_t id, const serve_change *c)
{
    serve_deployment row;
    char ref[24], tmp[700] = "", sha[65];
    char *inputs = NULL, *outputs = NULL;
    int err;

    snprintf(ref, sizeof(ref), "%lld", (long long)id);
    if ((err = serve_deployment_get(&row, h, user_id, ref)) < 0)
        return err;
    if (c->replicas >= 0)
        row.replicas = c->replicas;
    if (c->max_batch >= 0)
        row.max_batch = c->max_batch;
    if (c->max_delay_ms >= 0)
        row.max_delay_ms = c->max_delay_ms;
    if (c->timeout_ms >= 0)
        row.timeout_ms = c->timeout_ms;
    if (c->price_mcoins_per_call >= 0)
        row.price_mcoins_per_call = c->price_mcoins_per_call;
    if (c->allow_nan >= 0)
        row.allow_nan = c->allow_nan != 0;
    if (c->tier)
        snprintf(row.tier, sizeof(row.tier), "%s", c->tier);
    if (c->status) {
        if (strcmp(c->status, "running") != 0 && strcmp(c->status, "stopped") != 0)
            return ed_error_set(ED_EUNPROC, "field 'status' must be \"running\" or \"stopped\"");
        snprintf(row.status, sizeof(row.status), "%s", c->status);
    }
    if ((err = settings_check(row.replicas, row.max_batch, row.max_delay_ms, row.timeout_ms,
                              row.price_mcoins_per_call)) < 0)
        return err;
    if (c->model) {
        if ((err = strcmp(row.kind, "python") == 0
                       ? handler_stage(tmp, sizeof(tmp), &inputs, &outputs, sha, h, c->model, c->model_len)
                       : model_stage(tmp, sizeof(tmp), &inputs, &outputs, sha, h, c->model, c->model_len, c->params,
                                     c->params_len)) < 0)
            return err;
        if ((err = model_commit(h, tmp, id, row.version + 1)) < 0 ||
            (err = serve__version_insert(h->st, id, row.version + 1, c->source_json ? c->source_json : "{}", sha,
                                         (int64_t)(c->model_len + c->params_len), inputs, outputs, ed_now_ms())) < 0) {
            rm_tree(tmp);
            goto out;
        }
        row.version++;
    }
    if ((err = serve__dep_save(h->st, &row, ed_now_ms())) < 0 || (err = dep_sync(h, id)) < 0)
        goto out;
    err = serve_deployment_get(out, h, user_id, ref);
out:
    free(inputs);
    free(outputs);
    return err;
}

int serve_deployment_delete(serve_hub *h, int64_t user_id, int64_t id)
{
    serve_deployment row;
    char ref[24];
    int err;

    snprintf(ref, sizeof(ref), "%lld", (long long)id);
    if ((err = serve_deployment_get(&row, h, user_id, ref)) < 0)
        return err;
    snprintf(row.status, sizeof(row.status), "deleted");
    if ((err = serve__dep_save(h->st, &row, ed_now_ms())) < 0)
        return err;
    return dep_sync(h, id);
}

/* ---- calls ------------------------------------------------------------------------------ */

static int check_inputs(const sdep *d, const serve_call *c, int64_t *rows)
{
    *rows = 1;
    if (d->python) {      /* a handler declares no spec: it checks its own inputs */
        for (int k = 0; k < c->n_in; k++) {
            const serve_tensor *t = &c->in[k];
            if (d->allow_nan || (t->dtype != FW_FLOAT32 && t->dtype != FW_FLOAT64))
                continue;
            for (size_t i = 0; i < t->nbytes / (t->dtype == FW_FLOAT32 ? 4 : 8); i++) {
                double v = t->dtype == FW_FLOAT32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
                if (!isfinite(v))
                    return ed_error_set(ED_EUNPROC, "input '%s' holds %s at element %zu (this deployment refuses it)",
                                        t->name, isnan(v) ? "NaN" : "an infinity", i);
            }
        }
        return 0;
    }
    if (c->n_in != d->n_in)
        for (int i = 0; i < d->n_in; i++) {
            bool have = false;
            for (int k = 0; k < c->n_in; k++)
                have |= strcmp(c->in[k].name, d->in[i].name) == 0;
            if (!have)
                return ed_error_set(ED_EUNPROC, "input '%s' is missing", d->in[i].name);
        }
    for (int k = 0; k < c->n_in; k++) {
        const serve_tensor *t = &c->in[k];
        const sinput *s = NULL;
        for (int i = 0; i < d->n_in; i++)
            if (strcmp(d->in[i].name, t->name) == 0)
                s = &d->in[i];
        if (s == NULL)
            return ed_error_set(ED_EUNPROC, "the model has no input '%s'", t->name);
        if (t->dtype != s->dtype)
            return ed_error_set(ED_EUNPROC, "input '%s' must be %s, got %s", t->name, fw_dtype_name(s->dtype),
                                fw_dtype_name(t->dtype));
        if (t->ndim != s->ndim)
            return ed_error_set(ED_EUNPROC, "input '%s' must have %d dimensions, got %d", t->name, s->ndim, t->ndim);
        for (int i = 0; i < t->ndim; i++)
            if (s->shape[i] >= 0 && t->shape[i] != s->shape[i])
                return ed_error_set(ED_EUNPROC, "input '%s': dimension %d must be %lld, got %lld", t->name, i,
                                    (long long)s->shape[i], (long long)t->shape[i]);
        if (d->batchable) {
            if (k > 0 && t->shape[0] != *rows)
                return ed_error_set(ED_EUNPROC, "inputs disagree on their first dimension (%lld and %lld)",
                                    (long long)*rows, (long long)t->shape[0]);
            *rows = t->shape[0];
        }
        if (!d->allow_nan && (t->dtype == FW_FLOAT32 || t->dtype == FW_FLOAT64)) {
            size_t n = t->nbytes / (t->dtype == FW_FLOAT32 ? 4 : 8);
            for (size_t i = 0; i < n; i++) {
                double v = t->dtype == FW_FLOAT32 ? ((const float *)t->data)[i] : ((const double *)t->data)[i];
                if (!isfinite(v))
                    return ed_error_set(ED_EUNPROC, "input '%s' holds %s at element %zu (this deployment refuses it)",
                                        t->name, isnan(v) ? "NaN" : "an infinity", i);
            }
        }
    }
    if (*rows == 0 && d->batchable)
        return ed_error_set(ED_EUNPROC, "an empty batch (first dimension 0)");
    return 0;
}

int serve_predict(serve_hub *h, serve_call *c)
{
    sdep *d;
    sitem *it;
    int64_t rows, deadline;
    bool any = false;
    int err;

    if ((it = calloc(1, sizeof(*it))) == NULL)
        return ed_error_set(ED_ENOMEM, "call");
    pthread_cond_init(&it->cv, NULL);
    pthread_mutex_lock(&h->mu);
    if ((d = dep_find_locked(h, c->deployment_id)) == NULL || !d->running) {
        pthread_mutex_unlock(&h->mu);
        serve__item_free(it);
        return ed_error_set(ED_EBUSY, "the deployment is not running");
    }
    if ((err = check_inputs(d, c, &rows)) < 0) {
        pthread_mutex_unlock(&h->mu);
        serve__item_free(it);
        return err;
    }
    /* a deployment whose replicas fail to start answers at once rather than
     * holding calls for the next try */
    for (srep *r = d->reps; r; r = r->next)
        any |= r->state == REP_READY || (r->state == REP_STARTING && d->failures == 0);
    if (d->replicas == 0) {
        pthread_mutex_unlock(&h->mu);
        serve__item_free(it);
        return ed_error_set(ED_EBUSY, "the deployment is scaled to zero replicas");
    }
    if (!any && d->failures > 0) {
        pthread_mutex_unlock(&h->mu);
        serve__item_free(it);
        return ed_error_set(ED_EBUSY, "no replica of this deployment is running (the last one failed)");
    }
    /* the inputs move into the item */
    memcpy(it->in, c->in, sizeof(c->in[0]) * (size_t)c->n_in);
    it->n_in = c->n_in;
    c->n_in = 0;
    it->rows = rows;
    it->enq_ms = ed_mono_ns() / 1000000;
    deadline = ed_now_ms() + d->timeout_ms;
    if (d->qtail)
        d->qtail->next = it;
    else
        d->qhead = it;
    d->qtail = it;
    pthread_cond_broadcast(&d->qcv);
    while (it->state != 2) {
        struct timespec ts = {deadline / 1000, (deadline % 1000) * 1000000};
        if (pthread_cond_timedwait(&it->cv, &h->mu, &ts) == ETIMEDOUT && it->state != 2) {
            int tmo = d->timeout_ms;
            if (it->state == 0) {        /* still queued: take it out */
                sitem *prev = NULL;
                for (sitem *x = d->qhead; x; prev = x, x = x->next)
                    if (x == it) {
                        if (prev)
                            prev->next = it->next;
                        else
                            d->qhead = it->next;
                        if (d->qtail == it)
                            d->qtail = prev;
                        break;
                    }
                pthread_mutex_unlock(&h->mu);
                serve__item_free(it);
            } else {
                it->abandoned = true;    /* the replica frees it */
                pthread_mutex_unlock(&h->mu);
            }
            ed_error_set(ED_EBUSY, "the deployment did not answer within its timeout of %d ms", tmo);
            return SERVE_ETIMEOUT;
        }
    }
    pthread_mutex_unlock(&h->mu);
    c->version = it->version;
    c->batch_size = it->batch_size;
    if (it->err < 0) {
        snprintf(c->error, sizeof(c->error), "%s", it->msg);
        err = ed_error_set(it->err, "%s", it->msg);
        serve__item_free(it);
        return err;
    }
    memcpy(c->out, it->out, sizeof(it->out[0]) * (size_t)it->n_out);
    c->n_out = it->n_out;
    it->n_out = 0;
    serve__item_free(it);
    return 0;
}

/* ---- admission ------------------------------------------------------------------------- */

static skey *key_locked(serve_hub *h, int64_t key_id)
{
    skey *k;
    for (k = h->keys; k; k = k->next)
        if (k->key_id == key_id)
            return k;
    if ((k = calloc(1, sizeof(*k))) == NULL)
        return NULL;
    k->key_id = key_id;
    k->day = -1;
    k->limits.daily_budget_mcoins = -1;
    k->next = h->keys;
    h->keys = k;
    return k;
}

static suser *user_locked(serve_hub *h, int64_t user_id)
{
    suser *u;
    for (u = h->users; u; u = u->next)
        if (u->user_id == user_id)
            return u;
    if ((u = calloc(1, sizeof(*u))) == NULL)
        return NULL;
    u->user_id = user_id;
    u->next = h->users;
    h->users = u;
    return u;
}

#define LIMITS_TTL_MS 5000
#define BALANCE_TTL_MS 1000

/* What the store says, read unlocked, for a key's cache: limits and today's
 * spending (the call log is this hub's alone, so counting on from there is
 * exact). */
static int key_refresh(serve_hub *h, int64_t key_id, int64_t now)
{
    serve_key_limits l;
    int64_t spent = 0;
    skey *k;
    int err;

    if ((err = serve_key_limits_get(&l, h, key_id)) < 0)
        return err;
    pthread_mutex_lock(&h->mu);
    k = key_locked(h, key_id);
    if (k && k->day == now / 86400000) {
        pthread_mutex_unlock(&h->mu);
        spent = -1;
    } else {
        pthread_mutex_unlock(&h->mu);
        if ((err = serve__key_spent_today(&spent, h->st, key_id, now)) < 0)
            return err;
    }
    pthread_mutex_lock(&h->mu);
    if ((k = key_locked(h, key_id)) == NULL) {
        pthread_mutex_unlock(&h->mu);
        return ed_error_set(ED_ENOMEM, "key state");
    }
    k->limits = l;
    k->limits_read_ms = now;
    if (spent >= 0 && k->day != now / 86400000) {
        k->day = now / 86400000;
        k->spent = spent;
    }
    pthread_mutex_unlock(&h->mu);
    return 0;
}

static int user_refresh(serve_hub *h, int64_t user_id, int64_t now)
{
    quota_balance bal;
    int64_t pending = 0;
    suser *u;
    int err;

    if ((err = quota_balance_get(&bal, h->st, user_id)) < 0 ||
        (err = serve__user_unposted(&pending, h->st, user_id)) < 0)
        return err;
    pthread_mutex_lock(&h->mu);
    if ((u = user_locked(h, user_id)) == NULL) {
        pthread_mutex_unlock(&h->mu);
        return ed_error_set(ED_ENOMEM, "user state");
    }
    u->avail = bal.coins_mcoins - pending;
    u->read_ms = now;
    u->since = 0;
    pthread_mutex_unlock(&h->mu);
    return 0;
}

int serve_call_admit(serve_hub *h, int64_t key_id, int64_t user_id, int64_t key_budget, int64_t price,
                     int *retry_after_s)
{
    int64_t now = ed_now_ms(), budget = key_budget;
    skey *k = NULL;
    suser *u = NULL;
    bool need_key = false, need_user = false;
    int err;

    *retry_after_s = 0;
    pthread_mutex_lock(&h->mu);
    if (key_id > 0 && ((k = key_locked(h, key_id)) == NULL || k->limits_read_ms == 0 ||
                       now - k->limits_read_ms > LIMITS_TTL_MS || k->day != now / 86400000))
        need_key = true;
    if (price > 0 && ((u = user_locked(h, user_id)) == NULL || u->read_ms == 0 || now - u->read_ms > BALANCE_TTL_MS))
        need_user = true;
    pthread_mutex_unlock(&h->mu);
    if ((need_key && (err = key_refresh(h, key_id, now)) < 0) || (need_user && (err = user_refresh(h, user_id, now)) < 0))
        return err;

    pthread_mutex_lock(&h->mu);
    if (price > 0) {
        if ((u = user_locked(h, user_id)) == NULL)
            goto oom;
        if (u->avail - u->since - u->reserved < price) {
            int64_t have = u->avail - u->since - u->reserved;
            pthread_mutex_unlock(&h->mu);
            return ed_error_set(ED_EQUOTA, "your balance (%lld mcoins after calls not yet charged) cannot pay a call "
                                "of %lld mcoins", (long long)have, (long long)price);
        }
    }
    if (key_id <= 0) {
        if (u)
            u->reserved += price;
        pthread_mutex_unlock(&h->mu);
        return 0;
    }
    if ((k = key_locked(h, key_id)) == NULL)
        goto oom;
    if (k->limits.daily_budget_mcoins >= 0 && (budget < 0 || k->limits.daily_budget_mcoins < budget))
        budget = k->limits.daily_budget_mcoins;
    if (budget >= 0 && (budget == 0 || k->spent + k->reserved + price > budget)) {
        int64_t spent = k->spent;
        pthread_mutex_unlock(&h->mu);
        return ed_error_set(ED_EQUOTA, "this key's daily budget of %lld mcoins is spent (%lld today)",
                            (long long)budget, (long long)spent);
    }
    if (k->minute != now / 60000) {
        k->minute = now / 60000;
        k->count = 0;
    }
    if (k->limits.requests_per_min > 0 && k->count >= k->limits.requests_per_min) {
        int64_t rpm = k->limits.requests_per_min;
        *retry_after_s = (int)(((k->minute + 1) * 60000 - now + 999) / 1000);
        pthread_mutex_unlock(&h->mu);
        return ed_error_set(ED_ELIMIT, "this key's limit of %lld calls a minute is reached", (long long)rpm);
    }
    if (k->inflight >= (k->limits.concurrency > 0 ? k->limits.concurrency : SERVE_DEFAULT_CONCURRENCY)) {
        int n = k->inflight;
        *retry_after_s = 1;
        pthread_mutex_unlock(&h->mu);
        return ed_error_set(ED_ELIMIT, "this key already has %d calls in flight (its limit)", n);
    }
    k->count++;
    k->inflight++;
    k->reserved += price;
    if (u)
        u->reserved += price;
    pthread_mutex_unlock(&h->mu);
    return 0;
oom:
    pthread_mutex_unlock(&h->mu);
    return ed_error_set(ED_ENOMEM, "admission state");
}

void serve_call_release(serve_hub *h, int64_t key_id, int64_t user_id, int64_t price)
{
    pthread_mutex_lock(&h->mu);
    if (key_id > 0)
        for (skey *k = h->keys; k; k = k->next)
            if (k->key_id == key_id) {
                if (k->inflight > 0)
                    k->inflight--;
                k->reserved -= k->reserved >= price ? price : k->reserved;
            }
    if (price > 0)
        for (suser *u = h->users; u; u = u->next)
            if (u->user_id == user_id)
                u->reserved -= u->reserved >= price ? price : u->reserved;
    pthread_mutex_unlock(&h->mu);
}

/* ---- the call log (group commit) ---------------------------------------------------------- */

static void *logger_main(void *arg)
{
    serve_hub *h = arg;

    pthread_mutex_lock(&h->mu);
    for (;;) {
        slog *list;
        int rc;
        while (h->log_head == NULL && !h->log_stop)
            pthread_cond_wait(&h->log_cv, &h->mu);
        if (h->log_head == NULL && h->log_stop)
            break;
        list = h->log_head;
        h->log_head = h->log_tail = NULL;
        pthread_mutex_unlock(&h->mu);
        rc = serve__calls_insert(h->st, list);
        if (rc < 0) {
            ed_log_warn("serve", "call log: %s", ed_error_last());
            ed_error_clear();
        }
        pthread_mutex_lock(&h->mu);
        for (slog *l = list, *nx; l; l = nx) {
            nx = l->next;
            if (rc == 0 && l->r.cost_mcoins > 0) {
                int64_t day = l->at / 86400000;
                for (skey *k = h->keys; k && l->r.key_id > 0; k = k->next)
                    if (k->key_id == l->r.key_id && k->day == day)
                        k->spent += l->r.cost_mcoins;
                for (suser *u = h->users; u; u = u->next)
                    if (u->user_id == l->r.user_id)
                        u->since += l->r.cost_mcoins;
            }
            l->rc = rc;
            l->done = true;
            if (!l->wait)
                free(l);
        }
        pthread_cond_broadcast(&h->log_done_cv);
    }
    pthread_mutex_unlock(&h->mu);
    return NULL;
}

int serve_call_log(serve_hub *h, const serve_call_record *r)
{
    slog *l = calloc(1, sizeof(*l));
    int rc;

    if (l == NULL)
        return ed_error_set(ED_ENOMEM, "call log");
    l->r = *r;
    l->r.error = NULL;
    if (r->error)
        snprintf(l->error, sizeof(l->error), "%s", r->error);
    l->at = ed_now_ms();
    /* a charged or answered call waits for its row (logged before it is
     * answered); a refusal need not */
    l->wait = r->status == 200 || r->cost_mcoins > 0;
    pthread_mutex_lock(&h->mu);
    if (!h->logger_started) {
        pthread_mutex_unlock(&h->mu);
        l->next = NULL;
        rc = serve__calls_insert(h->st, l);
        free(l);
        return rc;
    }
    if (h->log_tail)
        h->log_tail->next = l;
    else
        h->log_head = l;
    h->log_tail = l;
    pthread_cond_signal(&h->log_cv);
    if (!l->wait) {
        pthread_mutex_unlock(&h->mu);
        return 0;
    }
    while (!l->done)
        pthread_cond_wait(&h->log_done_cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
    rc = l->rc;
    free(l);
    return rc < 0 ? ed_error_set(rc, "the call could not be logged") : 0;
}

int serve_deployment_resolve(int64_t *id, int64_t *price, serve_hub *h, int64_t user_id, const char *ref)
{
    char *end;
    long long n = strtoll(ref, &end, 10);
    bool by_id = *ref && *end == '\0' && n > 0;
    serve_deployment d;
    int err;

    pthread_mutex_lock(&h->mu);
    for (sdep *x = h->deps; x; x = x->next)
        if (!x->deleted && x->user_id == user_id && (by_id ? x->id == n : strcmp(x->name, ref) == 0)) {
            *id = x->id;
            *price = x->price;
            pthread_mutex_unlock(&h->mu);
            return 0;
        }
    pthread_mutex_unlock(&h->mu);
    if ((err = serve_deployment_get(&d, h, user_id, ref)) < 0)
        return err;
    *id = d.id;
    *price = d.price_mcoins_per_call;
    return 0;
}
