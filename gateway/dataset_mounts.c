/*
 * dataset_mounts.c - datasets in kernels and jobs (README.md "Datasets in
 * kernels and jobs"). The scheduler knows nothing of datasets/ and
 * datasets/ nothing of jobs, so the gateway joins them:
 *   - the scheduler's mounts resolver: ds_project_mounts for the starting
 *     user and project ("latest" resolved, trees built), each owner's
 *     username from accounts/ for /home/aistudio/data/<owner>-<slug>;
 *   - the datasets' in-use hook: a queued or running job or kernel that
 *     mounts the version (scheduler job_datasets), then whatever else was
 *     added (competitions), so deleting it is 409 with the reason.
 */
#include "dataset_mounts.h"

#include "acct.h"
#include "kh.h"
#include "sched.h"

#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IN_USE_MAX 4

static struct {
    ds_in_use_fn fn;
    void *payload;
} in_use_more[IN_USE_MAX];
static size_t n_in_use_more;

/* One scheduler mount from a dataset's id, version, owner and tree: the
 * name "<owner's username>/<slug>". */
static int mount_of(sched_mount *v, gw_server *srv, const char *dataset_id, int64_t version, int64_t owner_id,
                    const char *slug, const char *tree)
{
    acct_user owner;
    int err;

    memset(v, 0, sizeof(*v));
    if ((err = acct_user_get(&owner, srv->store, owner_id)) < 0)
        return ed_error_set(err == ED_ENOTFOUND ? ED_EUNPROC : err, "cannot start: the owner of dataset %s is gone",
                            dataset_id);
    snprintf(v->dataset_id, sizeof(v->dataset_id), "%s", dataset_id);
    v->version = version;
    if ((size_t)snprintf(v->name, sizeof(v->name), "%s/%s", owner.username, slug) >= sizeof(v->name) ||
        (size_t)snprintf(v->tree, sizeof(v->tree), "%s", tree) >= sizeof(v->tree))
        return ed_error_set(ED_EIO, "dataset %s: a name or path is too long to mount", dataset_id);
    return 0;
}

static int resolve(sched_mount **out, size_t *out_n, int64_t user_id, const char *project_id, void *arg)
{
    gw_server *srv = arg;
    ds_mount *m = NULL;
    sched_mount *v = NULL;
    size_t n = 0;
    int err;

    *out = NULL;
    *out_n = 0;
    if (srv->datasets == NULL)
        return 0;
    if ((err = ds_project_mounts(&m, &n, srv->datasets, user_id, project_id)) < 0) {
        /* the project is fine; one of its datasets is not: say so (422),
         * not "not found" as if the project were missing */
        if (err == ED_ENOTFOUND) {
            char why[400];
            snprintf(why, sizeof(why), "%s", ed_error_last());   /* the message is rewritten below */
            return ed_error_set(ED_EUNPROC, "cannot start: %s; detach it from the project (or ask its owner "
                                "to share it again)", why);
        }
        return err;
    }
    if (n == 0)
        return 0;
    if ((v = calloc(n, sizeof(*v))) == NULL) {
        ds_mounts_free(m, n);
        return ed_error_set(ED_ENOMEM, "mounts");
    }
    for (size_t i = 0; i < n; i++)
        if ((err = mount_of(&v[i], srv, m[i].dataset_id, m[i].version, m[i].owner_id, m[i].slug, m[i].tree)) < 0)
            goto fail;
    ds_mounts_free(m, n);
    *out = v;
    *out_n = n;
    return 0;
fail:
    ds_mounts_free(m, n);
    free(v);
    return err;
}

int gw__dataset_version_mount(sched_mount *out, gw_server *srv, int64_t user, const char *dataset_id,
                              int64_t version)
{
    ds_dataset *d = NULL;
    char *tree = NULL;
    int err;

    memset(out, 0, sizeof(*out));
    if (srv->datasets == NULL)
        return ed_error_set(ED_EUNPROC, "datasets are not available on this server");
    if (version <= 0)
        return ed_error_set(ED_EINVAL, "a dataset version is a number from 1");
    if ((err = ds_dataset_get(&d, srv->datasets, user, dataset_id)) < 0 ||
        (err = ds_version_tree(&tree, srv->datasets, user, dataset_id, version)) < 0) {
        ds_dataset_free(d);
        return err;
    }
    err = mount_of(out, srv, d->id, version, d->owner_id, d->slug, tree);
    ds_dataset_free(d);
    free(tree);
    return err;
}

static int in_use(char *why, size_t why_len, const char *id, int64_t number, void *payload)
{
    gw_server *srv = payload;
    int64_t job = 0;
    bool kernel = false;
    int err;

    if (srv->sched && (err = sched_dataset_in_use(&job, &kernel, srv->sched, id, number)) != 0) {
        char kid[KH_ID_LEN];
        if (err < 0)
            return err;
        if (kernel && kh_kernel_of_job(kid, srv->kernels, job) == 0)
            snprintf(why, why_len, "running kernel %s", kid);
        else
            snprintf(why, why_len, "%s %lld", kernel ? "a running kernel's job" : "running job", (long long)job);
        return 1;
    }
    for (size_t i = 0; i < n_in_use_more; i++)
        if ((err = in_use_more[i].fn(why, why_len, id, number, in_use_more[i].payload)) != 0)
            return err;
    return 0;
}

int gw__dataset_in_use_add(ds_in_use_fn fn, void *payload)
{
    if (n_in_use_more == IN_USE_MAX)
        return ed_error_set(ED_EINVAL, "at most %d dataset in-use hooks", IN_USE_MAX);
    in_use_more[n_in_use_more].fn = fn;
    in_use_more[n_in_use_more++].payload = payload;
    return 0;
}

void gw__dataset_mounts_install(gw_server *srv)
{
    if (srv->sched)
        sched_mounts_fn_set(srv->sched, resolve, srv);
    if (srv->datasets)
        ds_in_use_fn_set(srv->datasets, in_use, srv);
}

json_t *gw__job_datasets_json(gw_server *srv, int64_t job_id)
{
    sched_mount *m = NULL;
    size_t n = 0;
    json_t *a = json_array();

    if (!a || !srv->sched || job_id <= 0 || sched_job_datasets(&m, &n, srv->sched, job_id) < 0)
        return a;
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:s}", "dataset_id", m[i].dataset_id, "name",
                                           m[i].name, "version", (json_int_t)m[i].version, "path", m[i].path));
    free(m);
    return a;
}
