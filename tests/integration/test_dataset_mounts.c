/* Datasets in kernels and jobs (issue 15, items 6 and 9) against the real
 * server, scheduler, sandbox and eddy-kernel: a project's datasets are
 * mounted read-only at /home/aistudio/data/<owner>-<slug>/ (writes fail
 * with EROFS; the mount is "ro" in mountinfo), EDDY_DATASETS and
 * EDDY_DATA_DIR name them; "latest" is resolved when a kernel starts (a
 * new kernel sees a version published since, a running one keeps its own,
 * a project pinned to v1 sees v1); GET /api/v1/kernels/{id} and
 * /api/v1/jobs/{id} show the versions; a job records what it ran with;
 * deleting a version or dataset a running job or kernel mounts is 409
 * naming it; another user's private dataset cannot be attached (404) and
 * one that became invisible fails the start (422 naming it, for kernels and
 * jobs); paddle.vision.datasets.MNIST reads gzipped IDX files from a mount
 * and LeNet trains on them through paddle.io.DataLoader (loss decreases).
 *
 * Datasets are made through the REST API (API.md "Datasets"). */
#include "harness.h"

#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static it_server srv;
static char dir[256], admin_cookie[600], admin_csrf[300];

static const char *const base_env[] = {"EDDY_STOP_GRACE_MS=1000", NULL};

static void boot(void)
{
    ck_assert_int_eq(it_admin_server_start(&srv, dir, sizeof(dir), "dsm", base_env, admin_cookie,
                                           sizeof(admin_cookie), admin_csrf, sizeof(admin_csrf)),
                     0);
}

static void shutdown_all(void)
{
    ck_assert_int_eq(it_server_stop(&srv), 0);
    ck_assert_int_eq(it_dir_remove(dir), 0);
}

/* ---- datasets through the API ------------------------------------------------ */

/* POST /api/v1/datasets: its id into `id` (40 bytes). */
static void ds_create(char *id, it_user *u, const char *slug, const char *visibility)
{
    char body[256];
    it_resp r;

    snprintf(body, sizeof(body), "{\"name\":\"%s\",\"slug\":\"%s\",\"visibility\":\"%s\"}", slug, slug, visibility);
    it_request(&r, &srv, "POST", "/api/v1/datasets", body, u->hdrs);
    ck_assert_msg(r.status == 201, "create dataset %s: %ld %s", slug, r.status, r.body);
    snprintf(id, 40, "%s", it_json_str(r.json, "id"));
    ck_assert_msg(id[0], "no id: %s", r.body);
    it_resp_free(&r);
}

/* PUT one file into the draft. */
static void ds_put(it_user *u, const char *id, const char *path, const char *bytes, long len)
{
    char url[600];
    it_resp r;

    snprintf(url, sizeof(url), "/api/v1/datasets/%s/draft/files/%s", id, path);
    it_request_n(&r, &srv, "PUT", url, bytes, len, u->hdrs);
    ck_assert_msg(r.status == 200 || r.status == 201, "put %s: %ld %s", path, r.status, r.body);
    it_resp_free(&r);
}

/* Publish the draft: the new version's number. */
static long long ds_publish(it_user *u, const char *id)
{
    char url[200];
    long long n;
    it_resp r;

    snprintf(url, sizeof(url), "/api/v1/datasets/%s/versions", id);
    it_request(&r, &srv, "POST", url, "{\"message\":\"test\"}", u->hdrs);
    ck_assert_msg(r.status == 201, "publish: %ld %s", r.status, r.body);
    n = json_integer_value(json_object_get(r.json, "number"));
    it_resp_free(&r);
    ck_assert_int_gt(n, 0);
    return n;
}

/* PUT /api/v1/projects/{pid}/datasets with one item (version 0: "latest"):
 * the status. */
static long ds_attach(it_user *u, const char *pid, const char *id, long long version)
{
    char url[200], body[300];

    snprintf(url, sizeof(url), "/api/v1/projects/%s/datasets", pid);
    if (version > 0)
        snprintf(body, sizeof(body), "{\"items\":[{\"dataset_id\":\"%s\",\"version\":%lld}]}", id, version);
    else
        snprintf(body, sizeof(body), "{\"items\":[{\"dataset_id\":\"%s\",\"version\":\"latest\"}]}", id);
    return it_request_status(&srv, "PUT", url, body, u->hdrs);
}

static void ds_visibility(it_user *u, const char *id, const char *visibility)
{
    char url[200], body[100];

    snprintf(url, sizeof(url), "/api/v1/datasets/%s", id);
    snprintf(body, sizeof(body), "{\"visibility\":\"%s\"}", visibility);
    ck_assert_int_eq(it_request_status(&srv, "PATCH", url, body, u->hdrs), 200);
}

/* DELETE a version (n > 0) or the dataset (n 0): status and body. */
static long ds_delete(char *body, size_t body_len, it_user *u, const char *id, long long n)
{
    char url[200];
    long st;
    it_resp r;

    if (n > 0)
        snprintf(url, sizeof(url), "/api/v1/datasets/%s/versions/%lld", id, n);
    else
        snprintf(url, sizeof(url), "/api/v1/datasets/%s", id);
    it_request(&r, &srv, "DELETE", url, NULL, u->hdrs);
    st = r.status;
    snprintf(body, body_len, "%s", r.body ? r.body : "");
    it_resp_free(&r);
    return st;
}

/* The "datasets" member of GET `path` as compact JSON (malloc'd). */
static char *datasets_of(it_user *u, const char *path)
{
    json_t *o = it_get_json(&srv, u->hdrs, path);
    char *s;

    ck_assert_msg(o != NULL, "GET %s", path);
    ck_assert_msg(json_is_array(json_object_get(o, "datasets")), "no datasets in %s", path);
    s = json_dumps(json_object_get(o, "datasets"), JSON_COMPACT | JSON_SORT_KEYS);
    json_decref(o);
    return s;
}

/* ---- what a kernel sees --------------------------------------------------------- */

/* The cell: what the mount holds and what writing into it does. */
static const char PROBE[] =
    "import os, json, errno\n"
    "p = '/home/aistudio/data/alice-digits'\n"
    "def err(f):\n"
    "    try:\n"
    "        f()\n"
    "        return 'ok'\n"
    "    except OSError as e:\n"
    "        return errno.errorcode[e.errno]\n"
    "ro = [l.split()[5].split(',')[0] for l in open('/proc/self/mountinfo') if l.split()[4] == p]\n"
    "res = {'env': json.loads(os.environ['EDDY_DATASETS']), 'dir': os.environ['EDDY_DATA_DIR'],\n"
    "       'ls': sorted(os.listdir(p)), 'data': sorted(os.listdir('/home/aistudio/data')),\n"
    "       'a': open(p + '/a.csv').read(), 'b': open(p + '/sub/b.txt').read(), 'mount': ro,\n"
    "       'creat': err(lambda: os.open(p + '/new.txt', os.O_WRONLY | os.O_CREAT, 0o644)),\n"
    "       'creat_sub': err(lambda: os.open(p + '/sub/new.txt', os.O_WRONLY | os.O_CREAT, 0o644)),\n"
    "       'chmod': err(lambda: os.chmod(p + '/a.csv', 0o666)),\n"
    "       'unlink': err(lambda: os.unlink(p + '/a.csv')),\n"
    "       'rename': err(lambda: os.rename(p + '/a.csv', p + '/c.csv')),\n"
    "       'mkdir': err(lambda: os.mkdir(p + '/d')),\n"
    "       'rmdir': err(lambda: os.rmdir(p + '/sub')),\n"
    "       'write': err(lambda: os.open(p + '/a.csv', os.O_WRONLY))}\n"
    "out = json.dumps(res, sort_keys=True)\n";

static json_t *probe(it_user *u, const char *kid, const char *pid)
{
    char *out = it_ck_kernel_run(&srv, u->hdrs, kid, pid, PROBE);
    json_error_t e;
    json_t *o = json_loads(out, 0, &e);

    ck_assert_msg(o != NULL, "probe said: %s", out);
    free(out);
    return o;
}

static const char *jstr(json_t *o, const char *k)
{
    return it_json_str(o, k);
}

START_TEST(a_kernel_sees_its_projects_datasets_read_only)
{
    it_user a;
    char pid[64], pid2[64], kid1[64], kid2[64], kid3[64], id[40], path[200], body[1000], *s;
    json_t *o, *env;

    boot();
    {   /* three kernels at once */
        const char *ah[] = {admin_cookie, admin_csrf, NULL};
        ck_assert_int_eq(it_tier_set(&srv, ah, "free", "max_kernels", "3"), 200);
    }
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, a.hdrs, "dsm", NULL, NULL), 0);
    ck_assert_int_eq(it_project_make(pid2, sizeof(pid2), &srv, a.hdrs, "pinned", NULL, NULL), 0);
    ds_create(id, &a, "digits", "private");
    ds_put(&a, id, "a.csv", "x,y\n1,2\n", -1);
    ds_put(&a, id, "sub/b.txt", "hello", -1);
    ck_assert_int_eq(ds_publish(&a, id), 1);
    ck_assert_int_eq(ds_attach(&a, pid, id, 0), 200);
    ck_assert_int_eq(ds_attach(&a, pid2, id, 1), 200);

    it_ck_kernel_start(kid1, sizeof(kid1), &srv, a.hdrs, pid);
    o = probe(&a, kid1, pid);
    ck_assert_str_eq(jstr(o, "dir"), "/home/aistudio/data");
    ck_assert_str_eq(jstr(o, "a"), "x,y\n1,2\n");
    ck_assert_str_eq(jstr(o, "b"), "hello");
    s = json_dumps(json_object_get(o, "ls"), JSON_COMPACT);
    ck_assert_str_eq(s, "[\"a.csv\",\"sub\"]");
    free(s);
    s = json_dumps(json_object_get(o, "data"), JSON_COMPACT);
    ck_assert_str_eq(s, "[\"alice-digits\"]");
    free(s);
    s = json_dumps(json_object_get(o, "mount"), JSON_COMPACT);
    ck_assert_msg(strcmp(s, "[\"ro\"]") == 0, "mount options %s", s);
    free(s);
    /* every change fails with EROFS: the bind is read-only; opening an
     * existing file for writing is refused too (its 0444 mode answers first) */
    const char *ro_ops[] = {"creat", "creat_sub", "chmod", "unlink", "rename", "mkdir", "rmdir"};
    for (size_t i = 0; i < sizeof(ro_ops) / sizeof(*ro_ops); i++)
        ck_assert_msg(strcmp(jstr(o, ro_ops[i]), "EROFS") == 0, "%s: %s", ro_ops[i], jstr(o, ro_ops[i]));
    ck_assert_msg(strcmp(jstr(o, "write"), "EROFS") == 0 || strcmp(jstr(o, "write"), "EACCES") == 0, "write: %s",
                  jstr(o, "write"));
    env = json_object_get(o, "env");
    ck_assert_int_eq(json_array_size(env), 1);
    ck_assert_str_eq(jstr(json_array_get(env, 0), "name"), "alice/digits");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(env, 0), "version")), 1);
    ck_assert_str_eq(jstr(json_array_get(env, 0), "path"), "/home/aistudio/data/alice-digits");
    json_decref(o);
    /* the kernel's record */
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid1);
    s = datasets_of(&a, path);
    snprintf(body, sizeof(body),
             "[{\"dataset_id\":\"%s\",\"name\":\"alice/digits\",\"path\":\"/home/aistudio/data/alice-digits\","
             "\"version\":1}]",
             id);
    ck_assert_str_eq(s, body);
    free(s);
    /* in use: the version and the dataset cannot go while the kernel runs */
    ck_assert_int_eq(ds_delete(body, sizeof(body), &a, id, 1), 409);
    ck_assert_msg(strstr(body, kid1) != NULL, "409 does not name kernel %s: %s", kid1, body);
    ck_assert_int_eq(ds_delete(body, sizeof(body), &a, id, 0), 409);
    ck_assert_msg(strstr(body, "kernel") != NULL, "409 does not name a kernel: %s", body);

    /* version 2: a new kernel sees it, the running one keeps version 1,
     * the project pinned to version 1 sees version 1 */
    ds_put(&a, id, "a.csv", "x,y\n3,4\n", -1);
    ck_assert_int_eq(ds_publish(&a, id), 2);
    it_ck_kernel_start(kid2, sizeof(kid2), &srv, a.hdrs, pid);
    o = probe(&a, kid2, pid);
    ck_assert_str_eq(jstr(o, "a"), "x,y\n3,4\n");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(json_object_get(o, "env"), 0), "version")), 2);
    json_decref(o);
    o = probe(&a, kid1, pid);
    ck_assert_str_eq(jstr(o, "a"), "x,y\n1,2\n");
    json_decref(o);
    it_ck_kernel_start(kid3, sizeof(kid3), &srv, a.hdrs, pid2);
    o = probe(&a, kid3, pid2);
    ck_assert_str_eq(jstr(o, "a"), "x,y\n1,2\n");
    ck_assert_int_eq(json_integer_value(json_object_get(json_array_get(json_object_get(o, "env"), 0), "version")), 1);
    json_decref(o);
    snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid2);
    s = datasets_of(&a, path);
    ck_assert_msg(strstr(s, "\"version\":2") != NULL, "%s", s);
    free(s);
    shutdown_all();
}
END_TEST

START_TEST(a_job_records_its_versions_and_keeps_them_from_deletion)
{
    it_user a;
    char pid[64], id[40], body[1000], want[600], *s;
    int64_t job = 0;
    json_t *j;

    boot();
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, a.hdrs, "jobs", "train.py",
                                     "import os, json, time\n"
                                     "d = json.loads(os.environ['EDDY_DATASETS'])\n"
                                     "print('mounts', d, flush=True)\n"
                                     "print('data', open(d[0]['path'] + '/t.txt').read(), flush=True)\n"
                                     "time.sleep(120)\n"),
                     0);
    ds_create(id, &a, "tab", "private");
    ds_put(&a, id, "t.txt", "v1", -1);
    ck_assert_int_eq(ds_publish(&a, id), 1);
    ck_assert_int_eq(ds_attach(&a, pid, id, 0), 200);
    ck_assert_int_eq(it_job_submit(&job, NULL, 0, &srv, a.hdrs, pid, NULL, "train.py", 300, NULL), 201);
    j = it_job_wait(&srv, a.hdrs, job, "running", 60);
    ck_assert_msg(j != NULL, "job %lld never ran", (long long)job);
    json_decref(j);
    snprintf(want, sizeof(want),
             "[{\"dataset_id\":\"%s\",\"name\":\"alice/tab\",\"path\":\"/home/aistudio/data/alice-tab\","
             "\"version\":1}]",
             id);
    snprintf(body, sizeof(body), "/api/v1/jobs/%lld", (long long)job);
    s = datasets_of(&a, body);
    ck_assert_str_eq(s, want);
    free(s);
    /* a newer version does not change what it runs with */
    ds_put(&a, id, "t.txt", "v2", -1);
    ck_assert_int_eq(ds_publish(&a, id), 2);
    ck_assert_int_eq(ds_delete(body, sizeof(body), &a, id, 1), 409);
    snprintf(want, sizeof(want), "job %lld", (long long)job);
    ck_assert_msg(strstr(body, want) != NULL, "409 does not name %s: %s", want, body);
    ck_assert_int_eq(ds_delete(body, sizeof(body), &a, id, 0), 409);
    ck_assert_msg(strstr(body, want) != NULL, "409 does not name %s: %s", want, body);
    /* version 2 is not in use: it can go */
    ck_assert_int_eq(ds_delete(body, sizeof(body), &a, id, 2) / 100, 2);
    /* its log shows it read version 1 from the mount */
    {
        bool seen = false;
        snprintf(body, sizeof(body), "/api/v1/jobs/%lld/logs", (long long)job);
        for (int i = 0; i < 600 && !seen; i++) {
            it_resp r;
            it_request(&r, &srv, "GET", body, NULL, a.hdrs);
            seen = r.status == 200 && r.body && strstr(r.body, "data v1");
            it_resp_free(&r);
            if (!seen)
                usleep(100 * 1000);
        }
        ck_assert_msg(seen, "the job's log never showed 'data v1'");
    }
    snprintf(body, sizeof(body), "/api/v1/jobs/%lld", (long long)job);
    ck_assert_int_eq(it_request_status(&srv, "DELETE", body, NULL, a.hdrs), 200);
    j = it_job_wait(&srv, a.hdrs, job, NULL, 60);
    ck_assert(j != NULL);
    json_decref(j);
    /* ended: version 1 may go, and the record keeps it */
    ck_assert_int_eq(ds_delete(body, sizeof(body), &a, id, 1) / 100, 2);
    snprintf(body, sizeof(body), "/api/v1/jobs/%lld", (long long)job);
    s = datasets_of(&a, body);
    ck_assert_msg(strstr(s, "\"version\":1") && strstr(s, "alice/tab"), "%s", s);
    free(s);
    shutdown_all();
}
END_TEST

START_TEST(others_private_datasets_are_refused_and_an_invisible_one_fails_the_start)
{
    it_user a, b;
    char pid[64], idp[40], idq[40], code[64] = "", body[400];
    int64_t job = 0;
    it_resp r;

    boot();
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_user_make(&b, &srv, admin_cookie, admin_csrf, "bob", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, a.hdrs, "p", "train.py", "print(1)\n"), 0);
    ds_create(idp, &b, "secret", "private");
    ds_put(&b, idp, "s.txt", "s", -1);
    ds_publish(&b, idp);
    ck_assert_int_eq(ds_attach(&a, pid, idp, 0), 404);
    ds_create(idq, &b, "open", "public");
    ds_put(&b, idq, "o.txt", "o", -1);
    ds_publish(&b, idq);
    ck_assert_int_eq(ds_attach(&a, pid, idq, 0), 200);
    ds_visibility(&b, idq, "private");
    /* a kernel: refused at once, naming the dataset */
    snprintf(body, sizeof(body), "{\"project_id\":\"%s\",\"resource\":\"cpu-basic\"}", pid);
    it_request(&r, &srv, "POST", "/api/v1/kernels", body, a.hdrs);
    ck_assert_msg(r.status == 422 && r.body && strstr(r.body, idq), "kernel start: %ld %s", r.status, r.body);
    it_resp_free(&r);
    /* through the Jupyter Server API too */
    ck_assert_int_eq(it_kernel_post(NULL, 0, code, sizeof(code), &srv, a.hdrs, "/api/kernels", pid), 422);
    /* a job too */
    ck_assert_int_eq(it_job_submit(&job, code, sizeof(code), &srv, a.hdrs, pid, NULL, "train.py", 60, NULL), 422);
    shutdown_all();
}
END_TEST

/* ---- MNIST from a mount (item 9) ------------------------------------------------- */

/* sklearn's 8x8 digits, 512 of them upscaled to 28x28, written as MNIST
 * ships its files (gzipped IDX) into `out_dir`. 0, or -1 (no sklearn). */
static int mnist_files(const char *out_dir)
{
    char cmd[2400];

    snprintf(cmd, sizeof(cmd),
             "/usr/bin/python3 - <<'EOF'\n"
             "import gzip, struct, numpy as np\n"
             "from sklearn.datasets import load_digits\n"
             "d = load_digits()\n"
             "x = d.images[:512] / 16.0 * 255.0\n"
             "big = np.zeros((512, 28, 28), dtype=np.uint8)\n"
             "big[:, 2:26, 2:26] = np.kron(x, np.ones((3, 3))).clip(0, 255).astype(np.uint8)\n"
             "y = d.target[:512].astype(np.uint8)\n"
             "with gzip.open('%s/train-images-idx3-ubyte.gz', 'wb') as f:\n"
             "    f.write(struct.pack('>IIII', 2051, 512, 28, 28) + big.tobytes())\n"
             "with gzip.open('%s/train-labels-idx1-ubyte.gz', 'wb') as f:\n"
             "    f.write(struct.pack('>II', 2049, 512) + y.tobytes())\n"
             "EOF\n",
             out_dir, out_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static char *slurp_file(const char *path, long *len)
{
    FILE *f = fopen(path, "rb");
    char *buf;

    ck_assert_msg(f != NULL, "%s", path);
    fseek(f, 0, SEEK_END);
    *len = ftell(f);
    fseek(f, 0, SEEK_SET);
    buf = malloc((size_t)*len + 1);
    ck_assert(buf && fread(buf, 1, (size_t)*len, f) == (size_t)*len);
    fclose(f);
    return buf;
}

/* The code docs/datasets.md shows. */
static const char MNIST_CELL[] =
    "import json, os\n"
    "import numpy as np\n"
    "import paddle\n"
    "from paddle.vision.datasets import MNIST\n"
    "from paddle.vision.models import LeNet\n"
    "root = '/home/aistudio/data/alice-mnist'\n"
    "def norm(img):\n"
    "    return (np.asarray(img, dtype='float32') / 255.0).reshape(1, 28, 28)\n"
    "train = MNIST(image_path=root + '/train-images-idx3-ubyte.gz',\n"
    "              label_path=root + '/train-labels-idx1-ubyte.gz',\n"
    "              mode='train', transform=norm, backend='cv2')\n"
    "loader = paddle.io.DataLoader(train, batch_size=64, shuffle=True, drop_last=True)\n"
    "paddle.seed(1)\n"
    "model = LeNet(num_classes=10)\n"
    "opt = paddle.optimizer.Adam(learning_rate=0.002, parameters=model.parameters())\n"
    "loss_fn = paddle.nn.CrossEntropyLoss()\n"
    "losses = []\n"
    "for epoch in range(3):\n"
    "    for x, y in loader:\n"
    "        loss = loss_fn(model(x), y)\n"
    "        loss.backward()\n"
    "        opt.step()\n"
    "        opt.clear_grad()\n"
    "        losses.append(float(loss))\n"
    "out = json.dumps({'n': len(train), 'first': losses[:3], 'last': losses[-3:], 'steps': len(losses)})\n";

START_TEST(mnist_from_a_mount_trains_lenet)
{
    it_user a;
    char pid[64], kid[64], id[40], tmp[] = "/tmp/eddy-it-mnist-XXXXXX", path[300], *out, *bytes;
    long len;
    json_t *o;
    json_error_t e;

    ck_assert(mkdtemp(tmp) != NULL);
    if (mnist_files(tmp) < 0) {
        it_dir_remove(tmp);
        ck_abort_msg("cannot write the IDX files (numpy and scikit-learn for /usr/bin/python3)");
    }
    boot();
    ck_assert_int_eq(it_user_make(&a, &srv, admin_cookie, admin_csrf, "alice", 0), 0);
    ck_assert_int_eq(it_project_make(pid, sizeof(pid), &srv, a.hdrs, "mnist", NULL, NULL), 0);
    ds_create(id, &a, "mnist", "public");
    const char *names[] = {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"};
    for (int i = 0; i < 2; i++) {
        snprintf(path, sizeof(path), "%s/%s", tmp, names[i]);
        bytes = slurp_file(path, &len);
        ds_put(&a, id, names[i], bytes, len);
        free(bytes);
    }
    it_dir_remove(tmp);     /* uploaded: nothing is left behind when a check below fails */
    ck_assert_int_eq(ds_publish(&a, id), 1);
    ck_assert_int_eq(ds_attach(&a, pid, id, 0), 200);
    it_ck_kernel_start(kid, sizeof(kid), &srv, a.hdrs, pid);
    out = it_kernel_run(&srv, a.hdrs, kid, pid, MNIST_CELL, 180);
    ck_assert_msg(out != NULL, "the MNIST cell failed (stderr says why)");
    o = json_loads(out, 0, &e);
    ck_assert_msg(o != NULL, "%s", out);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "n")), 512);
    ck_assert_int_eq(json_integer_value(json_object_get(o, "steps")), 24);
    double first = 0, last = 0;
    for (int i = 0; i < 3; i++) {
        first += json_real_value(json_array_get(json_object_get(o, "first"), i)) / 3;
        last += json_real_value(json_array_get(json_object_get(o, "last"), i)) / 3;
    }
    printf("mnist: loss %.3f -> %.3f over 24 steps\n", first, last);
    ck_assert_msg(last < first * 0.8, "loss did not decrease: %s", out);
    json_decref(o);
    free(out);
    shutdown_all();
}
END_TEST

int main(void)
{
    const TTest *tests[] = {a_kernel_sees_its_projects_datasets_read_only,
                            a_job_records_its_versions_and_keeps_them_from_deletion,
                            others_private_datasets_are_refused_and_an_invisible_one_fails_the_start,
                            mnist_from_a_mount_trains_lenet,
                            NULL};
    char why[600];

    if (!it_host_idmap(why, sizeof(why))) {
        printf("test_dataset_mounts: %s; skipped\n", why);
        return 77;
    }
    return it_tests_run("dataset_mounts", 240, NULL, NULL, tests);
}
