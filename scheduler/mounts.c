/*
 * mounts.c - the datasets a job or kernel mounts (sched.h "datasets a job or
 * kernel mounts"): the gateway's resolver asked at submit and at start, the
 * paths inside made and checked, what a job ran with recorded in
 * job_datasets (migration 0015), and the in-use question the datasets'
 * delete asks.
 *
 * The resolver's answer is checked as if it were hostile, because it ends up
 * as bind mounts and an environment variable: at most SCHED_MOUNTS_MAX,
 * names "owner/slug" of [A-Za-z0-9._-] only, trees absolute without "..",
 * and paths inside only SCHED_DATA_DIR/<one component>.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void sched_mounts_fn_set(sched *s, sched_mounts_fn fn, void *arg)
{
    sched__lock(s);
    s->mounts_fn = fn;
    s->mounts_arg = arg;
    sched__unlock(s);
}

static bool name_ok(const char *name)
{
    const char *slash = strchr(name, '/');
    size_t n = strlen(name);

    if (!slash || slash == name || !slash[1] || strchr(slash + 1, '/') || n >= 100)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-' || c == '/'))
            return false;
    }
    return strstr(name, "..") == NULL && name[0] != '.' && slash[1] != '.';
}

static bool tree_ok(const char *tree)
{
    size_t n = strnlen(tree, 700);
    return n > 1 && n < 700 && tree[0] == '/' && strstr(tree, "/../") == NULL && strstr(tree, "/./") == NULL &&
           !(n >= 3 && strcmp(tree + n - 3, "/..") == 0);
}

/* SCHED_DATA_DIR/owner-slug, with -2, -3 ... while an earlier mount has it
 * ("a-b/c" and "a/b-c" make the same name). */
static void make_path(sched_mount *m, size_t i)
{
    char base[100];
    const char *slash = strchr(m[i].name, '/');

    snprintf(base, sizeof(base), "%.*s-%s", (int)(slash - m[i].name), m[i].name, slash + 1);
    snprintf(m[i].path, sizeof(m[i].path), "%s/%s", SCHED_DATA_DIR, base);
    for (int k = 2; k < 100; k++) {
        bool taken = false;
        for (size_t j = 0; j < i && !taken; j++)
            taken = strcmp(m[j].path, m[i].path) == 0;
        if (!taken)
            return;
        snprintf(m[i].path, sizeof(m[i].path), "%s/%s-%d", SCHED_DATA_DIR, base, k);
    }
}

/* Each mount as if hostile (names, trees), then its path inside. */
static int check_all(sched_mount *m, size_t n)
{
    if (n > SCHED_MOUNTS_MAX)
        return ed_error_set(ED_EINVAL, "a job mounts at most %d datasets", SCHED_MOUNTS_MAX);
    for (size_t i = 0; i < n; i++) {
        m[i].name[sizeof(m[i].name) - 1] = '\0';
        m[i].tree[sizeof(m[i].tree) - 1] = '\0';
        m[i].dataset_id[sizeof(m[i].dataset_id) - 1] = '\0';
        if (!name_ok(m[i].name) || !tree_ok(m[i].tree) || m[i].version <= 0 || !m[i].dataset_id[0])
            return ed_error_set(ED_EIO, "dataset mount %zu ('%s' version %lld) is malformed", i, m[i].name,
                                (long long)m[i].version);
        make_path(m, i);
    }
    return 0;
}

int sched__mounts_check(sched_mount **out, const sched_mount *m, size_t n)
{
    sched_mount *c;
    int err;

    *out = NULL;
    if (n == 0)
        return 0;
    if (m == NULL || n > SCHED_MOUNTS_MAX)
        return ed_error_set(ED_EINVAL, "a job mounts 0 to %d datasets", SCHED_MOUNTS_MAX);
    if ((c = calloc(n, sizeof(*c))) == NULL)
        return ed_error_set(ED_ENOMEM, "mounts");
    memcpy(c, m, n * sizeof(*c));
    for (size_t i = 0; i < n; i++)
        c[i].path[0] = '\0';       /* made here, never the caller's */
    if ((err = check_all(c, n)) < 0) {
        free(c);
        return err;
    }
    *out = c;
    return 0;
}

int sched__mounts_resolve(sched_mount **out, size_t *out_n, sched *s, int64_t user_id, const char *project_id)
{
    sched_mounts_fn fn;
    void *arg;
    sched_mount *m = NULL;
    size_t n = 0;
    bool relock = sched__locked(s);
    int err;

    *out = NULL;
    *out_n = 0;
    if (!project_id || !project_id[0])
        return 0;           /* a job without a project mounts nothing */
    if (!relock)
        sched__lock(s);
    fn = s->mounts_fn;
    arg = s->mounts_arg;
    if (!relock)
        sched__unlock(s);
    if (!fn)
        return 0;
    if ((err = fn(&m, &n, user_id, project_id, arg)) < 0) {
        free(m);
        return err;
    }
    if ((err = check_all(m, n)) < 0) {
        free(m);
        return err;
    }
    if (n == 0) {
        free(m);
        m = NULL;
    }
    *out = m;
    *out_n = n;
    return 0;
}

int sched__mounts_record(sched *s, int64_t job_id, const sched_mount *m, size_t n, bool with_tree)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    if ((err = ed_store_begin(s->st)) < 0)
        return err;
    if ((err = ed_store_prepare(&q, s->st, "DELETE FROM job_datasets WHERE job_id = ?1")) < 0)
        goto fail;
    sqlite3_bind_int64(q, 1, job_id);
    rc = sqlite3_step(q);
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        err = ed_store_error(ed_store_db(s->st), rc, "job datasets");
        goto fail;
    }
    for (size_t i = 0; i < n; i++) {
        if ((err = ed_store_prepare(&q, s->st,
                                    "INSERT INTO job_datasets(job_id, pos, dataset_id, name, version, path, tree) "
                                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)")) < 0)
            goto fail;
        sqlite3_bind_int64(q, 1, job_id);
        sqlite3_bind_int(q, 2, (int)i);
        sqlite3_bind_text(q, 3, m[i].dataset_id, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 4, m[i].name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 5, m[i].version);
        sqlite3_bind_text(q, 6, m[i].path, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 7, with_tree ? m[i].tree : "", -1, SQLITE_STATIC);
        rc = sqlite3_step(q);
        sqlite3_finalize(q);
        if (rc != SQLITE_DONE) {
            err = ed_store_error(ed_store_db(s->st), rc, "job datasets");
            goto fail;
        }
    }
    return ed_store_commit(s->st);
fail:
    ed_store_rollback(s->st);
    return err;
}

/* The datasets a job was submitted with, in order: `fixed` reads the host
 * trees a platform run mounts (sched_mount.tree), else the paths the job's
 * datasets are shown at (sched_mount.path). */
static int job_datasets_read(sched_mount **out, size_t *out_n, sched *s, int64_t job_id, bool fixed)
{
    sqlite3_stmt *q = NULL;
    sched_mount *m = NULL;
    size_t n = 0;
    int rc, err;

    *out = NULL;
    *out_n = 0;
    if ((err = ed_store_prepare(&q, s->st,
                                fixed ? "SELECT dataset_id, name, version, tree FROM job_datasets "
                                        "WHERE job_id = ?1 ORDER BY pos LIMIT ?2"
                                      : "SELECT dataset_id, name, version, path FROM job_datasets "
                                        "WHERE job_id = ?1 ORDER BY pos LIMIT ?2")) < 0)
        return err;
    sqlite3_bind_int64(q, 1, job_id);
    sqlite3_bind_int(q, 2, SCHED_MOUNTS_MAX);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if (!m && (m = calloc(SCHED_MOUNTS_MAX, sizeof(*m))) == NULL) {
            sqlite3_finalize(q);
            return ed_error_set(ED_ENOMEM, "job datasets");
        }
        snprintf(m[n].dataset_id, sizeof(m[n].dataset_id), "%s", (const char *)sqlite3_column_text(q, 0));
        snprintf(m[n].name, sizeof(m[n].name), "%s", (const char *)sqlite3_column_text(q, 1));
        m[n].version = sqlite3_column_int64(q, 2);
        if (fixed)
            snprintf(m[n].tree, sizeof(m[n].tree), "%s", (const char *)sqlite3_column_text(q, 3));
        else
            snprintf(m[n].path, sizeof(m[n].path), "%s", (const char *)sqlite3_column_text(q, 3));
        n++;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_DONE) {
        free(m);
        return ed_store_error(ed_store_db(s->st), rc, "job datasets");
    }
    *out = m;
    *out_n = n;
    return 0;
}

int sched__mounts_fixed(sched_mount **out, size_t *out_n, sched *s, int64_t job_id)
{
    int err;

    if ((err = job_datasets_read(out, out_n, s, job_id, true)) < 0)
        return err;
    /* as written at submit, checked again: the paths come out the same */
    if ((err = check_all(*out, *out_n)) < 0) {
        free(*out);
        *out = NULL;
        *out_n = 0;
    }
    return err;
}

int sched_job_datasets(sched_mount **out, size_t *out_n, sched *s, int64_t job_id)
{
    return job_datasets_read(out, out_n, s, job_id, false);
}

int sched_dataset_in_use(int64_t *out_job, bool *out_kernel, sched *s, const char *dataset_id, int64_t version)
{
    sqlite3_stmt *q = NULL;
    int rc, err;

    *out_job = 0;
    *out_kernel = false;
    if ((err = ed_store_prepare(&q, s->st,
                                "SELECT j.id, j.kind FROM job_datasets d JOIN jobs j ON j.id = d.job_id "
                                "WHERE d.dataset_id = ?1 AND (?2 = 0 OR d.version = ?2) "
                                "AND j.status IN ('preparing', 'queued', 'running') ORDER BY j.id LIMIT 1")) < 0)
        return err;
    sqlite3_bind_text(q, 1, dataset_id, -1, SQLITE_STATIC);
    sqlite3_bind_int64(q, 2, version);
    rc = sqlite3_step(q);
    if (rc == SQLITE_ROW) {
        *out_job = sqlite3_column_int64(q, 0);
        *out_kernel = sqlite3_column_text(q, 1) && strcmp((const char *)sqlite3_column_text(q, 1), "kernel") == 0;
    }
    sqlite3_finalize(q);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return ed_store_error(ed_store_db(s->st), rc, "datasets in use");
    return rc == SQLITE_ROW;
}
