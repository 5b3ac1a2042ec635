/*
 * preview.c - previews of version files, computed once per blob by one
 * background worker thread, and a version's stats.
 *
 * ds_preview_get answers from dataset_previews (migration 0016) when the
 * blob's preview is there; otherwise it queues the blob and answers
 * "pending". The worker (started by the first enqueue or get, stopped by
 * ds_free) takes blobs off the queue, computes each preview from the blob
 * file (preview_compute.c: bounded reads, decoders only here, never on a
 * request thread) and stores it. ds_previews_enqueue_version queues a whole
 * version after a publish, so previews are ready before anyone asks.
 *
 * A preview is keyed by content: the same bytes under two names are
 * previewed once, as the first name queued (its extension picks CSV vs TSV).
 */
#include "ds_int.h"
#include "preview_int.h"

#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define QUEUE_MAX 20000         /* blobs waiting; more are dropped (a later get queues them again) */

typedef struct job {
    struct job *next;
    char sha[DS_SHA256_LEN];
    char media_type[64];
    char *path;
} job;

struct ds_previews {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t thread;
    job *head, *tail;
    size_t count;
    bool stop;                  /* read by the worker's long loops with __atomic_load_n */
};

/* ---- the worker ---------------------------------------------------------- */

static bool computed(ds *d, const char *sha)
{
    sqlite3_stmt *q = NULL;
    bool yes = false;

    if (ed_store_prepare(&q, d->st, "SELECT 1 FROM dataset_previews WHERE sha256 = ?") < 0)
        return false;
    sqlite3_bind_text(q, 1, sha, -1, SQLITE_STATIC);
    yes = sqlite3_step(q) == SQLITE_ROW;
    sqlite3_finalize(q);
    return yes;
}

static void store(ds *d, const char *sha, json_t *obj, const char *error)
{
    sqlite3_stmt *q = NULL;
    char *text;
    int rc;

    if (error)
        json_object_set_new(obj, "error", json_string(error));
    if ((text = json_dumps(obj, JSON_COMPACT)) == NULL)
        return;
    if (ed_store_prepare(&q, d->st,
                         "INSERT OR REPLACE INTO dataset_previews (sha256, kind, json, error, computed_at) "
                         "VALUES (?1, ?2, ?3, ?4, ?5)") == 0) {
        sqlite3_bind_text(q, 1, sha, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 2, json_string_value(json_object_get(obj, "kind")), -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 3, text, -1, SQLITE_STATIC);
        sqlite3_bind_text(q, 4, error, -1, SQLITE_STATIC);
        sqlite3_bind_int64(q, 5, ed_now_ms());
        /* a constraint failure: gc deleted the blob meanwhile; nothing to keep */
        if ((rc = ed_store_step(q)) != SQLITE_DONE && (rc & 0xff) != SQLITE_CONSTRAINT)
            ed_log_error("datasets.preview_store", "preview of %s: %s", sha, sqlite3_errmsg(ed_store_db(d->st)));
        sqlite3_finalize(q);
    }
    free(text);
}

static void compute(ds *d, struct ds_previews *p, const job *j)
{
    char rel[4 + DS_SHA256_LEN], *error = NULL;
    json_t *obj;
    off_t size;
    int fd;

    if (computed(d, j->sha))
        return;
    snprintf(rel, sizeof(rel), "%.2s/%s", j->sha, j->sha);
    if ((fd = openat(d->blobs_fd, rel, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return;                 /* collected meanwhile */
    if ((size = lseek(fd, 0, SEEK_END)) < 0) {
        close(fd);
        return;
    }
    obj = ds__preview_compute(&error, fd, (int64_t)size, j->path, j->media_type, &p->stop);
    close(fd);
    if (obj)
        store(d, j->sha, obj, error);
    json_decref(obj);
    free(error);
}

static void *worker(void *arg)
{
    ds *d = arg;
    struct ds_previews *p = d->previews;

    for (;;) {
        job *j;
        pthread_mutex_lock(&p->mu);
        while (!p->head && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->stop) {
            pthread_mutex_unlock(&p->mu);
            return NULL;
        }
        j = p->head;
        if ((p->head = j->next) == NULL)
            p->tail = NULL;
        p->count--;
        pthread_mutex_unlock(&p->mu);
        compute(d, p, j);
        free(j->path);
        free(j);
    }
}

/* The worker, started on first use. */
static int previews(struct ds_previews **out, ds *d)
{
    struct ds_previews *p;
    int err = 0;

    pthread_mutex_lock(&d->mu);
    if ((p = d->previews) == NULL) {
        if ((p = calloc(1, sizeof(*p))) == NULL) {
            err = ed_error_set(ED_ENOMEM, "previews");
        } else {
            pthread_mutex_init(&p->mu, NULL);
            pthread_cond_init(&p->cv, NULL);
            d->previews = p;
            if (pthread_create(&p->thread, NULL, worker, d) != 0) {
                d->previews = NULL;
                pthread_cond_destroy(&p->cv);
                pthread_mutex_destroy(&p->mu);
                free(p);
                p = NULL;
                err = ed_error_set(ED_EIO, "start the preview worker: %s", strerror(errno));
            }
        }
    }
    pthread_mutex_unlock(&d->mu);
    *out = p;
    return err;
}

void ds__previews_stop(ds *d)
{
    struct ds_previews *p = d->previews;

    if (!p)
        return;
    pthread_mutex_lock(&p->mu);
    __atomic_store_n(&p->stop, true, __ATOMIC_RELAXED);
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->thread, NULL);
    while (p->head) {
        job *n = p->head->next;
        free(p->head->path);
        free(p->head);
        p->head = n;
    }
    pthread_cond_destroy(&p->cv);
    pthread_mutex_destroy(&p->mu);
    free(p);
    d->previews = NULL;
}

/* Queue a blob unless it is queued already (when `dedup`) or the queue is
 * full. */
static int enqueue(ds *d, const ds_file *f, bool dedup)
{
    struct ds_previews *p;
    job *j;
    int err;

    if ((err = previews(&p, d)) < 0)
        return err;
    pthread_mutex_lock(&p->mu);
    if (p->count >= QUEUE_MAX)
        goto out;
    if (dedup)
        for (job *k = p->head; k; k = k->next)
            if (strcmp(k->sha, f->sha256) == 0)
                goto out;
    if ((j = calloc(1, sizeof(*j))) == NULL || (j->path = strdup(f->path)) == NULL) {
        free(j);
        err = ed_error_set(ED_ENOMEM, "preview queue");
        goto out;
    }
    snprintf(j->sha, sizeof(j->sha), "%s", f->sha256);
    snprintf(j->media_type, sizeof(j->media_type), "%s", f->media_type);
    if (p->tail)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    p->count++;
    pthread_cond_signal(&p->cv);
out:
    pthread_mutex_unlock(&p->mu);
    return err;
}

/* ---- the API ------------------------------------------------------------- */

int ds_preview_get(char **out, bool *out_pending, ds *d, int64_t user, const char *id, int64_t number,
                   const char *path)
{
    sqlite3_stmt *q = NULL;
    ds_file f = {0};
    int fd = -1, rc, err;

    *out = NULL;
    *out_pending = false;
    if ((err = ds_version_file_open(&fd, &f, d, user, id, number, path)) < 0)
        return err;
    close(fd);
    if ((err = ed_store_prepare(&q, d->st, "SELECT json FROM dataset_previews WHERE sha256 = ?")) < 0)
        goto done;
    sqlite3_bind_text(q, 1, f.sha256, -1, SQLITE_STATIC);
    if ((rc = sqlite3_step(q)) == SQLITE_ROW) {
        if ((*out = strdup((const char *)sqlite3_column_text(q, 0))) == NULL)
            err = ed_error_set(ED_ENOMEM, "preview");
    } else if (rc == SQLITE_DONE) {
        *out_pending = true;
        err = enqueue(d, &f, true);
    } else {
        err = ed_store_error(ed_store_db(d->st), rc, "preview");
    }
done:
    sqlite3_finalize(q);
    free(f.path);
    return err;
}

int ds_previews_enqueue_version(ds *d, const char *id, int64_t number)
{
    ds_file_list *l = NULL;
    int64_t n;
    int err;

    if ((err = ds__version_resolve(&n, d, id, number)) < 0 || (err = ds__files_load(&l, d, id, n)) < 0)
        return err;
    for (size_t i = 0; i < l->count && err == 0; i++)
        if (!computed(d, l->items[i].sha256))
            err = enqueue(d, &l->items[i], false);
    ds_file_list_free(l);
    return err;
}

/* ---- stats --------------------------------------------------------------- */

/* Add a file to the {key, files, bytes} entry of `arr` keyed `key`. */
static void tally(json_t *index, json_t *arr, const char *field, const char *key, int64_t size)
{
    json_t *e = json_object_get(index, key);

    if (!e) {
        if ((e = json_pack("{s:s, s:I, s:I}", field, key, "files", (json_int_t)0, "bytes", (json_int_t)0)) == NULL)
            return;
        json_array_append_new(arr, e);
        json_object_set(index, key, e);
    }
    json_object_set_new(e, "files", json_integer(json_integer_value(json_object_get(e, "files")) + 1));
    json_object_set_new(e, "bytes", json_integer(json_integer_value(json_object_get(e, "bytes")) + size));
}

static int by_bytes(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "bytes"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "bytes"));
    return x < y ? 1 : x > y ? -1 : 0;
}

/* The array sorted by bytes, largest first. */
static json_t *sorted(json_t *arr)
{
    size_t n = json_array_size(arr);
    json_t **v = malloc((n ? n : 1) * sizeof(*v)), *out = json_array();

    if (!v || !out) {
        free(v);
        json_decref(out);
        return NULL;
    }
    for (size_t i = 0; i < n; i++)
        v[i] = json_array_get(arr, i);
    qsort(v, n, sizeof(*v), by_bytes);
    for (size_t i = 0; i < n; i++)
        json_array_append(out, v[i]);
    free(v);
    return out;
}

int ds_version_stats(char **out, ds *d, int64_t user, const char *id, int64_t number)
{
    ds_file_list *l = NULL;
    json_t *types = json_array(), *exts = json_array(), *ti = json_object(), *ei = json_object(), *obj = NULL;
    int64_t n;
    int err;

    *out = NULL;
    if (!types || !exts || !ti || !ei) {
        err = ed_error_set(ED_ENOMEM, "stats");
        goto done;
    }
    if ((err = ds__access(d, user, id, false, NULL)) < 0 || (err = ds__version_resolve(&n, d, id, number)) < 0 ||
        (err = ds__files_load(&l, d, id, n)) < 0)
        goto done;
    for (size_t i = 0; i < l->count; i++) {
        const char *p = l->items[i].path, *slash = strrchr(p, '/');
        const char *dot = strrchr(slash ? slash + 1 : p, '.');
        char ext[32] = "";
        if (dot && dot != (slash ? slash + 1 : p) && dot[1] && strlen(dot + 1) < sizeof(ext)) {
            for (size_t k = 0; dot[1 + k]; k++)
                ext[k] = (char)(dot[1 + k] >= 'A' && dot[1 + k] <= 'Z' ? dot[1 + k] + 32 : dot[1 + k]);
        }
        tally(ti, types, "media_type", l->items[i].media_type, l->items[i].size);
        tally(ei, exts, "extension", ext, l->items[i].size);
    }
    obj = json_pack("{s:I, s:I, s:I, s:o*, s:o*}", "version", (json_int_t)n, "files", (json_int_t)l->count,
                    "size_bytes", (json_int_t)l->size_bytes, "by_type", sorted(types), "by_extension", sorted(exts));
    if (!obj || (*out = json_dumps(obj, JSON_COMPACT)) == NULL)
        err = ed_error_set(ED_ENOMEM, "stats");
done:
    json_decref(obj);
    json_decref(types);
    json_decref(exts);
    json_decref(ti);
    json_decref(ei);
    ds_file_list_free(l);
    return err;
}
