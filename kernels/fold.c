/*
 * fold.c - folding a cell's outputs into the project's working-tree
 * notebook (kh_execute with notebook_path and cell_id; README.md "Notebook
 * folding"). Folds live on their kernel (k->folds, under h->mu); they are
 * written by the kernel's reader thread, outside the lock.
 */
#include "kh_int.h"

#include "kr.h"
#include "proj.h"

#include "ed_error.h"
#include "ed_json.h"
#include "ed_log.h"
#include "ed_time.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define FOLD_MAX  (8u << 20)     /* output bytes folded into the notebook per cell */
#define FOLD_WRITE_MS 1000       /* a folded notebook is written at most this often while a cell runs */
#define FOLD_RETRY_MAX_MS 8000   /* a failed fold write is tried again after 1, 2, 4, 8, 8... s */
#define FOLD_GIVE_UP 5           /* a finished cell's fold is dropped after this many failed writes in a row */

void kh__fold_free(kh__fold *f)
{
    if (f == NULL)
        return;
    free(f->path);
    free(f->cell_id);
    json_decref(f->outputs);
    free(f->stext);
    free(f);
}

static json_t *nb_output(const char *type, const json_t *content)
{
    if (strcmp(type, "stream") == 0)
        return json_pack("{s:s, s:O, s:O}", "output_type", "stream", "name", json_object_get(content, "name"),
                         "text", json_object_get(content, "text"));
    if (strcmp(type, "execute_result") == 0)
        return json_pack("{s:s, s:O, s:O, s:o}", "output_type", "execute_result", "execution_count",
                         json_object_get(content, "execution_count"), "data", json_object_get(content, "data"),
                         "metadata", json_object());
    if (strcmp(type, "display_data") == 0)
        return json_pack("{s:s, s:O, s:o}", "output_type", "display_data", "data", json_object_get(content, "data"),
                         "metadata", json_object());
    if (strcmp(type, "error") == 0)
        return json_pack("{s:s, s:O, s:O, s:O}", "output_type", "error", "ename", json_object_get(content, "ename"),
                         "evalue", json_object_get(content, "evalue"), "traceback",
                         json_object_get(content, "traceback"));
    return NULL;
}

/* The pending stream of f as an nbformat output (new reference). */
static json_t *stream_output(const kh__fold *f)
{
    return json_pack("{s:s, s:s, s:s%}", "output_type", "stream", "name", f->sname, "text", f->stext ? f->stext : "",
                     f->slen);
}

/* Make f's pending stream its last output. */
static void stream_settle(kh__fold *f)
{
    if (f->sname[0])
        json_array_append_new(f->outputs, stream_output(f));
    f->sname[0] = '\0';
    f->slen = 0;
    if (f->scap > (1u << 20)) {
        free(f->stext);
        f->stext = NULL;
        f->scap = 0;
    }
}

/* Apply one message (`len` bytes of JSON) to its fold (under mu). A cell's
 * folded outputs stop at FOLD_MAX bytes with one note saying so. */
void kh__fold_apply_locked(kh__k *k, const json_t *m, size_t len)
{
    const char *parent = json_string_value(json_object_get(json_object_get(m, "parent_header"), "msg_id"));
    const char *type = kr_msg_type(m);
    const json_t *content = json_object_get(m, "content");
    kh__fold *f;

    assert(kh__held(&k->hub->mu));
    if (parent == NULL)
        return;
    for (f = k->folds; f; f = f->next)
        if (!f->done && strcmp(f->msg_id, parent) == 0)
            break;
    if (f == NULL)
        return;
    if (strcmp(type, "execute_input") == 0) {
        f->exec_count = (int)json_integer_value(json_object_get(content, "execution_count"));
        f->dirty = true;
    } else if (strcmp(type, "clear_output") == 0) {
        json_array_clear(f->outputs);
        f->sname[0] = '\0';
        f->slen = 0;
        f->bytes = 0;
        f->capped = false;
        f->dirty = true;
    } else if (strcmp(type, "execute_reply") == 0) {
        if (json_is_integer(json_object_get(content, "execution_count")))
            f->exec_count = (int)json_integer_value(json_object_get(content, "execution_count"));
        f->done = f->dirty = true;
        f->fails = 0;   /* the final outputs get the whole budget of tries, at once */
        f->retry_ns = 0;
    } else {
        const char *name = json_string_value(json_object_get(content, "name"));
        const json_t *text = json_object_get(content, "text");
        bool stream = strcmp(type, "stream") == 0;
        json_t *o = stream ? NULL : nb_output(type, content);
        if (f->capped || (stream ? name == NULL || strlen(name) >= sizeof(f->sname) || !json_is_string(text)
                                 : o == NULL)) {
            json_decref(o);
            return;
        }
        if (f->bytes + len > FOLD_MAX) {
            json_decref(o);
            stream_settle(f);
            f->capped = f->dirty = true;
            json_array_append_new(f->outputs,
                                  json_pack("{s:s, s:s, s:s}", "output_type", "stream", "name", "stderr", "text",
                                            "[eddy] this cell's outputs past 8 MiB are not saved in the notebook "
                                            "(the kernel's journal has them while it keeps them).\n"));
            return;
        }
        f->bytes += len;
        if (stream) {
            /* consecutive stream outputs of one name are one output in nbformat */
            size_t tl = json_string_length(text);
            if (f->sname[0] && strcmp(f->sname, name) != 0)
                stream_settle(f);
            if (f->slen + tl + 1 > f->scap) {
                size_t cap = f->scap ? f->scap : 1024;
                while (cap < f->slen + tl + 1)
                    cap *= 2;
                char *nt = realloc(f->stext, cap);
                if (nt == NULL)
                    return;   /* this piece is lost from the notebook; the journal has it */
                f->stext = nt;
                f->scap = cap;
            }
            memcpy(f->stext + f->slen, json_string_value(text), tl);
            f->slen += tl;
            f->stext[f->slen] = '\0';
            snprintf(f->sname, sizeof(f->sname), "%s", name);
        } else {
            stream_settle(f);
            json_array_append_new(f->outputs, o);
        }
        f->dirty = true;
    }
}

/* Write the cell's outputs into the working-tree notebook: 0, or an error
 * (ed_error_last() says why); the caller keeps the fold dirty and tries
 * again later. The notebook is also written by the editor (autosave) and by
 * code in the kernel: the write is conditional on the ETag read, and a
 * write that lands in between makes us read again and fold into the newer
 * text, so neither side's cells nor outputs are lost. A notebook that is not
 * valid JSON is one that kernel code is rewriting in place (truncated, half
 * written): read again too. Between tries we sleep 10, 20, 40... ms (about
 * 0.5 s in all): this runs on the kernel's reader thread, and only slows
 * that kernel's output. */
enum { FOLD_ATTEMPTS = 8, FOLD_BACKOFF_MS = 10, FOLD_BACKOFF_TOTAL_MS = 500 };

static int fold_write(kh_hub *h, int64_t user_id, const char *project, const char *path, const char *cell_id,
                      json_t *outputs, int exec_count)
{
    int err = 0, slept = 0;

    for (int attempt = 0; attempt < FOLD_ATTEMPTS; attempt++) {
        char *buf = NULL, *text = NULL, etag[PROJ_ETAG_LEN + 1];
        size_t len = 0;
        json_t *nb = NULL, *cells, *cell;
        size_t i;
        bool found = false, again = false;

        if (attempt > 0) {
            int ms = FOLD_BACKOFF_MS << (attempt - 1);
            if (ms > FOLD_BACKOFF_TOTAL_MS - slept)
                ms = FOLD_BACKOFF_TOTAL_MS - slept;
            if (ms > 0)
                usleep((useconds_t)ms * 1000);
            slept += ms;
        }
        if ((err = proj_file_read_etag(&buf, &len, etag, h->cfg.projects, user_id, project, path, NULL)) < 0)
            goto next;
        if ((err = ed_json_parse_object(&nb, buf, len)) < 0) {
            again = true;   /* being rewritten in place */
            err = ed_error_set(ED_EUNPROC, "%s is not valid JSON (being rewritten?)", path);
            goto next;
        }
        cells = json_object_get(nb, "cells");
        json_array_foreach(cells, i, cell) {
            const char *cid = json_string_value(json_object_get(cell, "id"));
            if (cid && strcmp(cid, cell_id) == 0) {
                if (strcmp(json_string_value(json_object_get(cell, "cell_type")) ?: "", "code") != 0) {
                    err = ed_error_set(ED_EUNPROC, "cell %s is not a code cell", cell_id);
                    goto next;
                }
                json_object_set(cell, "outputs", outputs);
                json_object_set_new(cell, "execution_count", exec_count > 0 ? json_integer(exec_count) : json_null());
                found = true;
                break;
            }
        }
        if (!found) {
            err = ed_error_set(ED_ENOTFOUND, "no cell with id %s", cell_id);
            goto next;
        }
        if ((text = json_dumps(nb, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "notebook");
            goto next;
        }
        err = proj_file_write_if(NULL, NULL, h->cfg.projects, user_id, project, path, text, strlen(text), etag);
        again = err == ED_EPRECOND;
    next:
        free(buf);
        free(text);
        json_decref(nb);
        if (!again)
            break;   /* written, or failed for a reason another read now will not change */
    }
    return err;
}

/* Unlink f from k's folds and free it. Under mu. */
static void fold_drop_locked(kh__k *k, kh__fold *f)
{
    assert(kh__held(&k->hub->mu));
    for (kh__fold **pp = &k->folds; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    kh__fold_free(f);
}

/* When (monotonic ns) f is next due for a write; INT64_MAX: not now. Under mu. */
static int64_t fold_due_ns(const kh__fold *f)
{
    int64_t due;

    if (!f->dirty || f->writing)
        return INT64_MAX;
    due = f->done ? 0 : f->written_ns + (int64_t)FOLD_WRITE_MS * 1000000;
    return f->retry_ns > due ? f->retry_ns : due;
}

/* Milliseconds until one of k's folds is due for a write (0: now), or -1
 * when none waits; with `done_only`, only finished cells' folds count. */
int kh__folds_due_ms(kh_hub *h, kh__k *k, bool done_only)
{
    int64_t first = INT64_MAX, now = ed_mono_ns();

    kh__lock(&h->mu);
    for (kh__fold *f = k->folds; f; f = f->next)
        if (!done_only || f->done) {
            int64_t due = fold_due_ns(f);
            if (due < first)
                first = due;
        }
    kh__unlock(&h->mu);
    if (first == INT64_MAX)
        return -1;
    if (first <= now)
        return 0;
    return (first - now) / 1000000 + 1 > 60000 ? 60000 : (int)((first - now) / 1000000 + 1);
}

/* Write the folds that are due (outside mu); with `force`, every dirty fold
 * once, due or not (the kernel's process ended). A failed write leaves its
 * fold dirty, tried again after 1, 2, 4, 8... s; a finished cell's fold is
 * kept until its outputs are written, or FOLD_GIVE_UP writes in a row
 * failed (logged). Several reader threads of one kernel (a restart) may
 * flush at once: a fold being written is theirs alone (`writing`). */
void kh__folds_flush(kh_hub *h, kh__k *k, bool force)
{
    int64_t pass = ed_mono_ns();

    for (;;) {
        char *path = NULL, *cell = NULL, why[300];
        json_t *outs = NULL;
        int count = 0, err;
        int64_t now = ed_mono_ns();
        kh__fold *f;

        kh__lock(&h->mu);
        for (f = k->folds; f; f = f->next)
            if (f->dirty && !f->writing && f->pass != pass &&
                (force || fold_due_ns(f) <= now))
                break;
        if (f) {
            path = strdup(f->path);
            cell = strdup(f->cell_id);
            outs = json_deep_copy(f->outputs);
            if (outs && f->sname[0])
                json_array_append_new(outs, stream_output(f));
            count = f->exec_count;
            f->dirty = false;
            f->writing = true;
            f->written_ns = now;
            f->pass = pass;
        }
        int64_t user = k->user_id;
        char project[64];
        snprintf(project, sizeof(project), "%s", k->project_id);
        kh__unlock(&h->mu);
        if (f == NULL)
            return;
        err = path && cell && outs ? fold_write(h, user, project, path, cell, outs, count)
                                   : ed_error_set(ED_ENOMEM, "fold");
        snprintf(why, sizeof(why), "%s", err < 0 ? ed_error_last() : "");
        kh__lock(&h->mu);
        f->writing = false;
        if (err == 0) {
            f->fails = 0;
            f->retry_ns = 0;
            if (f->done && !f->dirty)
                fold_drop_locked(k, f);
        } else {
            f->dirty = true;   /* these outputs are not in the notebook yet */
            f->fails++;
            if (f->done && f->fails >= FOLD_GIVE_UP) {
                ed_log_warn("kernel.fold", "kernel %s: gave up folding the outputs of cell %s into %s of project %s "
                            "after %d failed writes: %s", k->id, cell, path, project, f->fails, why);
                fold_drop_locked(k, f);
            } else {
                int64_t ms = (int64_t)FOLD_WRITE_MS << (f->fails - 1 < 4 ? f->fails - 1 : 4);
                f->retry_ns = ed_mono_ns() + (ms < FOLD_RETRY_MAX_MS ? ms : FOLD_RETRY_MAX_MS) * 1000000;
                if (f->fails == 1)
                    ed_log_warn("kernel.fold", "kernel %s: cannot fold outputs into %s (cell %s) of project %s, "
                                "trying again: %s", k->id, path, cell, project, why);
            }
        }
        kh__unlock(&h->mu);
        free(path);
        free(cell);
        json_decref(outs);
    }
}

/* The kernel's process ended: write every dirty fold now, and keep trying
 * finished cells' folds until written or given up (unless the hub stops). */
void kh__folds_drain(kh_hub *h, kh__k *k)
{
    int ms;

    kh__folds_flush(h, k, true);
    while (!h->stopping && (ms = kh__folds_due_ms(h, k, true)) >= 0) {
        if (ms > 0) {
            usleep((useconds_t)(ms < 100 ? ms : 100) * 1000);   /* a stopping hub is noticed soon */
            continue;
        }
        kh__folds_flush(h, k, false);
    }
}


/* The notebook exists in the project's working tree, is JSON and has a code
 * cell with that id: checked before the code runs, so a typo is an error now
 * rather than a log line later. */
int kh__fold_check_cell(kh_hub *h, int64_t user_id, const char *project, const char *path, const char *cell_id)
{
    char *buf = NULL;
    size_t len = 0, i;
    json_t *nb = NULL, *cell;
    int err;

    if ((err = proj_file_read(&buf, &len, h->cfg.projects, user_id, project, path, NULL)) < 0)
        return err;
    if ((err = ed_json_parse_object(&nb, buf, len)) < 0) {
        free(buf);
        return ed_error_set(ED_EUNPROC, "%s is not a notebook", path);
    }
    free(buf);
    err = ed_error_set(ED_ENOTFOUND, "notebook %s has no code cell with id '%s'", path, cell_id);
    json_array_foreach(json_object_get(nb, "cells"), i, cell) {
        const char *cid = json_string_value(json_object_get(cell, "id"));
        const char *type = json_string_value(json_object_get(cell, "cell_type"));
        if (cid && type && strcmp(cid, cell_id) == 0 && strcmp(type, "code") == 0) {
            err = 0;
            break;
        }
    }
    json_decref(nb);
    return err;
}

int kh__fold_add(kh__fold **out, kh_hub *h, kh__k *k, const char *msg_id, const char *path, const char *cell_id)
{
    kh__fold *f;

    *out = NULL;
    if ((f = calloc(1, sizeof(*f))) == NULL || (f->path = strdup(path)) == NULL ||
        (f->cell_id = strdup(cell_id)) == NULL || (f->outputs = json_array()) == NULL) {
        if (f) {
            free(f->path);
            free(f->cell_id);
            free(f);
        }
        return ed_error_set(ED_ENOMEM, "fold");
    }
    snprintf(f->msg_id, sizeof(f->msg_id), "%s", msg_id);
    kh__lock(&h->mu);
    f->next = k->folds;
    k->folds = f;
    kh__unlock(&h->mu);
    *out = f;
    return 0;
}

void kh__fold_remove(kh_hub *h, kh__k *k, kh__fold *f)
{
    kh__lock(&h->mu);
    for (kh__fold **pp = &k->folds; *pp; pp = &(*pp)->next)
        if (*pp == f) {
            *pp = f->next;
            break;
        }
    kh__unlock(&h->mu);
    kh__fold_free(f);
}
