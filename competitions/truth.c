/*
 * truth.c - the hidden ground truth: stored atomically beneath the
 * competition's directory fd, checked by score.h's loader, opened only for
 * the scorer, and cached loaded and split for scoring (see comp.h).
 */
#include "comp_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_fs.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct comp__truth_entry {
    struct comp__truth_entry *next;
    char id[COMP_ID_LEN];
    char token[COMP_ID_LEN];
    comp_truth *truth;
    bool current;
};

int comp__comp_dir(int *out_fd, comp *c, const char *id, bool create)
{
    int fd;

    *out_fd = -1;
    /* ids are uuids the store gave; never a user's path */
    if (id == NULL || strlen(id) + 1 != COMP_ID_LEN || strchr(id, '/') != NULL || id[0] == '.')
        return ed_error_set(ED_ENOTFOUND, "competition not found");
    if (create && mkdirat(c->dir_fd, id, 0700) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir competitions/%s: %s", id, strerror(errno));
    if ((fd = openat(c->dir_fd, id, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return errno == ENOENT ? ed_error_set(ED_ENOTFOUND, "competition %s has no files", id)
                               : ed_error_set(ED_EIO, "open competitions/%s: %s", id, strerror(errno));
    *out_fd = fd;
    return 0;
}

/* Copy fd (from its offset) into `out` (at most COMP_TRUTH_MAX bytes). */
static int copy_bounded(int out, int in, int64_t max)
{
    char *buf;
    int64_t total = 0;
    ssize_t n;
    int err = 0;

    if ((buf = malloc(1 << 20)) == NULL)
        return ed_error_set(ED_ENOMEM, "copy buffer");
    while ((n = read(in, buf, 1 << 20)) != 0) {
        if (n < 0) {
            if (errno == EINTR)
                continue;
            err = ed_error_set(ED_EIO, "read: %s", strerror(errno));
            break;
        }
        if ((total += n) > max) {
            err = ed_error_set(ED_ETOOBIG, "the file is over %lld bytes", (long long)max);
            break;
        }
        for (ssize_t off = 0; off < n;) {
            ssize_t w = write(out, buf + off, (size_t)(n - off));
            if (w < 0 && errno == EINTR)
                continue;
            if (w < 0) {
                err = ed_error_set(ED_EIO, "write: %s", strerror(errno));
                goto done;
            }
            off += w;
        }
    }
done:
    free(buf);
    return err;
}

static int load_check(comp_truth **out, comp *c, int fd, const char *id, const comp__info *k)
{
    comp_score_spec spec = {0};
    comp_competition *full = NULL;
    char metric[48];
    comp_truth *t = NULL;
    int err;

    *out = NULL;
    if ((err = comp_competition_get(&full, c, 0, id)) < 0)
        return err;
    comp_metric_full_name(metric, sizeof(metric), full->metric, full->k);
    spec.metric = metric;
    spec.id_column = full->id_column;
    spec.target_column = full->target_columns[0];
    spec.sub_max_bytes = COMP_SUBMISSION_MAX;
    spec.truth_max_bytes = COMP_TRUTH_MAX;
    if (lseek(fd, 0, SEEK_SET) < 0)
        err = ed_error_set(ED_EIO, "seek truth: %s", strerror(errno));
    else if ((err = comp_truth_load(&t, fd, &spec)) >= 0)
        err = comp_truth_split(t, k->split_seed, k->public_fraction);
    comp_competition_free(full);
    if (err < 0) {
        comp_truth_free(t);
        return err;
    }
    *out = t;
    return 0;
}

int comp_truth_put_fd(comp *c, int64_t user, const char *id, int fd)
{
    comp__info k;
    comp_truth *t = NULL;
    sqlite3_stmt *s = NULL;
    char tmp[64], token[COMP_ID_LEN];
    int dir = -1, out = -1, err;
    size_t rows;

    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if (!comp__can_edit(c, &k, user))
        return ed_error_set(ED_EPERM, "only the competition's host or an admin puts the truth");
    if (comp__now(c) >= k.start_at)
        return ed_error_set(ED_ECONFLICT, "the truth cannot change once the competition has started");
    if ((err = comp__comp_dir(&dir, c, id, true)) < 0)
        return err;
    ed_uuid4(token);
    snprintf(tmp, sizeof(tmp), ".truth-%s", token);
    if ((out = openat(dir, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
        err = ed_error_set(ED_EIO, "create the truth file: %s", strerror(errno));
        goto fail;
    }
    if ((err = copy_bounded(out, fd, COMP_TRUTH_MAX)) < 0)
        goto fail;
    /* The loader checks columns, ids and targets; its message may quote the
     * truth, which is fine: it goes back to the host who sent it. */
    if ((err = load_check(&t, c, out, id, &k)) < 0)
        goto fail;
    rows = comp_truth_rows(t);
    comp_truth_free(t);
    if (fsync(out) < 0 || fchmod(out, 0400) < 0) {
        err = ed_error_set(ED_EIO, "sync the truth file: %s", strerror(errno));
        goto fail;
    }
    if (renameat(dir, tmp, dir, "truth.csv") < 0) {
        err = ed_error_set(ED_EIO, "place the truth file: %s", strerror(errno));
        goto fail;
    }
    fsync(dir);
    close(out);
    out = -1;
    if ((err = ed_store_prepare(&s, c->st,
            "UPDATE competitions SET truth_rows = ?2, truth_token = ?3, updated_at = ?4 WHERE id = ?1")) < 0)
        goto done;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 2, (int64_t)rows);
    sqlite3_bind_text(s, 3, token, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(s, 4, comp__now(c));
    err = comp__step_done(c, s, "record the truth");
    goto done;
fail:
    if (out >= 0) {
        close(out);
        out = -1;
    }
    unlinkat(dir, tmp, 0);
done:
    if (dir >= 0)
        close(dir);
    return err;
}

int comp_truth_open(int *out_fd, comp *c, const char *id)
{
    int dir = -1, err;

    *out_fd = -1;
    if ((err = comp__comp_dir(&dir, c, id, false)) < 0)
        return ed_error_set(ED_ENOTFOUND, "competition %.40s has no truth", id != NULL ? id : "");
    err = ed_fs_open_beneath(out_fd, dir, "truth.csv", O_RDONLY, 0);
    close(dir);
    if (err == ED_ENOTFOUND)
        return ed_error_set(ED_ENOTFOUND, "competition %s has no truth", id);
    return err;
}

int comp__truth_get(const comp_truth **out, comp *c, const char *id)
{
    struct comp__truth_entry *e;
    char token[COMP_ID_LEN] = "";
    sqlite3_stmt *s = NULL;
    comp__info k;
    comp_truth *t = NULL;
    int fd = -1, rc, err;

    *out = NULL;
    if ((err = comp__info_get(&k, c, id)) < 0)
        return err;
    if ((err = ed_store_prepare(&s, c->st, "SELECT truth_token FROM competitions WHERE id = ?1")) < 0)
        return err;
    sqlite3_bind_text(s, 1, id, -1, SQLITE_TRANSIENT);
    if ((rc = ed_store_step(s)) == SQLITE_ROW && sqlite3_column_text(s, 0) != NULL)
        snprintf(token, sizeof(token), "%s", (const char *)sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    if (token[0] == '\0')
        return ed_error_set(ED_ENOTFOUND, "competition %s has no truth", id);
    pthread_mutex_lock(&c->mu);
    for (e = c->truths; e != NULL; e = e->next)
        if (e->current && strcmp(e->id, id) == 0 && strcmp(e->token, token) == 0) {
            *out = e->truth;
            pthread_mutex_unlock(&c->mu);
            return 0;
        }
    pthread_mutex_unlock(&c->mu);
    /* Load outside the lock (seconds for a large truth); two threads may
     * both load it once, the second entry is simply not used. */
    if ((err = comp_truth_open(&fd, c, id)) < 0)
        return err;
    err = load_check(&t, c, fd, id, &k);
    close(fd);
    if (err < 0)
        return err;
    if ((e = calloc(1, sizeof(*e))) == NULL) {
        comp_truth_free(t);
        return ed_error_set(ED_ENOMEM, "truth cache");
    }
    snprintf(e->id, sizeof(e->id), "%s", id);
    snprintf(e->token, sizeof(e->token), "%s", token);
    e->truth = t;
    e->current = true;
    pthread_mutex_lock(&c->mu);
    for (struct comp__truth_entry *o = c->truths; o != NULL; o = o->next)
        if (strcmp(o->id, id) == 0)
            o->current = false;     /* kept: a scorer may still hold it */
    e->next = c->truths;
    c->truths = e;
    pthread_mutex_unlock(&c->mu);
    *out = t;
    return 0;
}

void comp__truths_free(comp *c)
{
    struct comp__truth_entry *e = c->truths, *n;

    for (; e != NULL; e = n) {
        n = e->next;
        comp_truth_free(e->truth);
        free(e);
    }
    c->truths = NULL;
}
