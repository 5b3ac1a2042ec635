/*
 * scorer.c - custom scoring programs (comp.h "custom scoring programs";
 * issue 16 item 2, Codabench-style).
 *
 * The program is stored like the truth: DATA/competitions/<id>/scorer.py,
 * 0400, written atomically beneath the competition's directory fd. A
 * submission that passed the metric's validation (score.h) is split into
 * its public and its private rows, each with the matching part of the
 * truth, in two run directories DATA/competitions/.runs/<uuid>-{pub,priv}
 * (0755, files 0444, removed after the run; leftovers of a crash at
 * comp_open). Each is bound read-only at /scoring in its own sandbox
 * (sandbox/sbx.h: own network namespace with no interface, a uid slot of
 * the scheduler's pool, the scorer's time and memory limits), so one run
 * never sees the other part. Only the last stdout line is read, from a
 * memfd, and only a finite {"score": x} in it passes; every failure is a
 * fixed message: the program's bytes (which may hold the truth) go nowhere.
 */
#include "comp_int.h"
#include "csvsub.h"
#include "score_int.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_fs.h"
#include "ed_log.h"
#include "sbx.h"
#include "sched.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define RUNS_DIR      ".runs"
#define OUT_MAX       (16 << 20)    /* bytes of a run's stdout (RLIMIT_FSIZE) */
#define LAST_LINE_MAX 4096

/* ---- settings ------------------------------------------------------------- */

int comp__scorer_spec_check(const comp_spec *sp)
{
    const comp_scorer_spec *s = &sp->scorer;

    if (s->direction == NULL) {
        if (s->timeout_s != 0 || s->memory_mb != 0)
            return ed_error_set(ED_EUNPROC, "scorer.timeout_s and scorer.memory_mb need scorer.direction "
                                            "(a custom scoring program); the built-in metric has no limits to set");
        return 0;
    }
    if (strcmp(s->direction, "higher") != 0 && strcmp(s->direction, "lower") != 0)
        return ed_error_set(ED_EINVAL, "scorer.direction must be \"higher\" or \"lower\" (is better)");
    if (s->timeout_s < 0 || s->timeout_s > COMP_SCORER_TIMEOUT_MAX)
        return ed_error_set(ED_EINVAL, "scorer.timeout_s must be 1..%d seconds", COMP_SCORER_TIMEOUT_MAX);
    if (s->memory_mb != 0 && (s->memory_mb < 64 || s->memory_mb > COMP_SCORER_MEMORY_MAX_MB))
        return ed_error_set(ED_EINVAL, "scorer.memory_mb must be 64..%d", COMP_SCORER_MEMORY_MAX_MB);
    return 0;
}

int comp__scorer_update_check(const comp_competition *cur, const comp_spec *sp, bool started)
{
    const char *now = sp->scorer.direction != NULL ? sp->scorer.direction : "";

    if (strcmp(cur->scorer_direction, now) == 0)
        return 0;
    if (started)
        return ed_error_set(ED_ECONFLICT, "scorer.direction cannot change once the competition has started");
    if (cur->has_scorer && now[0] == '\0')
        return ed_error_set(ED_EUNPROC, "a scoring program is stored: remove it (DELETE .../scorer) to go back "
                                        "to the built-in metric");
    return 0;
}

int comp__scorer_spec_save(comp *c, const char *id, const comp_spec *sp)
{
    const comp_scorer_spec *s = &sp->scorer;

    return comp__exec(c, "UPDATE competitions SET scorer_direction = ?2, scorer_timeout_s = ?3, "
                         "scorer_memory_mb = ?4 WHERE id = ?1", "ttii", id, s->direction,
                      (int64_t)(s->timeout_s > 0 ? s->timeout_s : 60),
                      (int64_t)(s->memory_mb > 0 ? s->memory_mb : 1024));
}

void comp__competition_fill(comp *c, comp_competition *k)
{
    sqlite3_stmt *s = NULL;

    if (ed_store_prepare(&s, c->st,
            "SELECT k.scorer_direction, k.scorer_token IS NOT NULL, k.scorer_timeout_s, k.scorer_memory_mb, "
            "u.username FROM competitions k LEFT JOIN users u ON u.id = k.host_id WHERE k.id = ?1") < 0) {
        ed_error_clear();
        return;
    }
    sqlite3_bind_text(s, 1, k->id, -1, SQLITE_TRANSIENT);
    if (ed_store_step(s) == SQLITE_ROW) {
        const unsigned char *d = sqlite3_column_text(s, 0), *u = sqlite3_column_text(s, 4);
        snprintf(k->scorer_direction, sizeof(k->scorer_direction), "%s", d ? (const char *)d : "");
        k->has_scorer = sqlite3_column_int(s, 1) != 0;
        k->scorer_timeout_s = sqlite3_column_int(s, 2);
        k->scorer_memory_mb = sqlite3_column_int(s, 3);
        snprintf(k->host_username, sizeof(k->host_username), "%s", u ? (const char *)u : "");
    }
    sqlite3_finalize(s);
}

/* ---- put and delete ------------------------------------------------------- */

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return ed_error_set(errno == ENOSPC || errno == EDQUOT ? ED_ELIMIT : ED_EIO, "write: %s",
                                strerror(errno));
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static int editable(comp__info *k, comp *c, int64_t user, const char *id)
{
    int err;

    if ((err = comp__info_get(k, c, id)) < 0)
        return err;
    if (!comp__can_edit(c, k, user))
        return ed_error_set(ED_EPERM, "only the competition's host or an admin changes its scoring program");
    if (comp__now(c) >= k->start_at)
        return ed_error_set(ED_ECONFLICT, "the scoring program cannot change once the competition has started");
    return 0;
}

int comp_scorer_put_fd(comp *c, int64_t user, const char *id, int fd)
{
    comp__info k;
    char tmp[64], token[COMP_ID_LEN], *buf = NULL;
    size_t len = 0;
    int dir = -1, out = -1, err;

    if ((err = editable(&k, c, user, id)) < 0)
        return err;
    if (k.scorer_direction[0] == '\0')
        return ed_error_set(ED_EUNPROC, "set scorer.direction (\"higher\" or \"lower\" is better) on the "
                                        "competition before uploading a scoring program");
    if ((err = ed_fs_read_fd(&buf, &len, fd, COMP_SCORER_MAX)) < 0)
        return err == ED_ETOOBIG ? ed_error_set(ED_ETOOBIG, "a scoring program is at most %d bytes",
                                                COMP_SCORER_MAX)
                                 : err;
    if (len == 0)
        err = ed_error_set(ED_EINVAL, "the scoring program is empty");
    else if (memchr(buf, '\0', len) != NULL || !comp__utf8_valid(buf, len))
        err = ed_error_set(ED_EINVAL, "the scoring program must be UTF-8 text (a Python file)");
    if (err < 0 || (err = comp__comp_dir(&dir, c, id, true)) < 0)
        goto done;
    ed_uuid4(token);
    snprintf(tmp, sizeof(tmp), ".scorer-%s", token);
    if ((out = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0) {
        err = ed_error_set(ED_EIO, "create the scoring program's file: %s", strerror(errno));
        goto done;
    }
    if ((err = write_all(out, buf, len)) < 0)
        goto fail;
    if (fsync(out) < 0 || fchmod(out, 0400) < 0) {
        err = ed_error_set(ED_EIO, "sync the scoring program: %s", strerror(errno));
        goto fail;
    }
    if (renameat(dir, tmp, dir, "scorer.py") < 0) {
        err = ed_error_set(ED_EIO, "place the scoring program: %s", strerror(errno));
        goto fail;
    }
    fsync(dir);
    err = comp__exec(c, "UPDATE competitions SET scorer_token = ?2, updated_at = ?3 WHERE id = ?1", "tti", id,
                     token, comp__now(c));
    goto done;
fail:
    unlinkat(dir, tmp, 0);
done:
    if (out >= 0)
        close(out);
    if (dir >= 0)
        close(dir);
    free(buf);
    return err;
}

int comp_scorer_delete(comp *c, int64_t user, const char *id)
{
    comp__info k;
    bool higher = true;
    int dir = -1, err;

    if ((err = editable(&k, c, user, id)) < 0)
        return err;
    if (!k.has_scorer && k.scorer_direction[0] == '\0')
        return ed_error_set(ED_ENOTFOUND, "the competition has no scoring program");
    comp_metric_info(&higher, k.metric);
    if ((err = comp__exec(c, "UPDATE competitions SET scorer_token = NULL, scorer_direction = NULL, "
                             "scorer_timeout_s = 60, scorer_memory_mb = 1024, higher_is_better = ?2, "
                             "updated_at = ?3 WHERE id = ?1", "tii", id, (int64_t)higher, comp__now(c))) < 0)
        return err;
    if (comp__comp_dir(&dir, c, id, false) == 0) {
        if (unlinkat(dir, "scorer.py", 0) < 0 && errno != ENOENT)
            ed_log_warn("comp.scorer", "competition %s: remove scorer.py: %s", id, strerror(errno));
        close(dir);
    } else {
        ed_error_clear();
    }
    return 0;
}

/* ---- the run directories -------------------------------------------------- */

/* Remove the flat run directory `name` beneath .runs (its files first). */
static void run_dir_remove(int runs, const char *name)
{
    int fd = openat(runs, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d;
    struct dirent *e;

    if (fd >= 0 && (d = fdopendir(fd)) != NULL) {
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
                unlinkat(fd, e->d_name, 0);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    unlinkat(runs, name, AT_REMOVEDIR);
}

void comp__scorer_runs_clear(comp *c)
{
    int runs = openat(c->dir_fd, RUNS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC), fd;
    DIR *d;
    struct dirent *e;

    if (runs < 0)
        return;
    if ((fd = dup(runs)) >= 0 && (d = fdopendir(fd)) != NULL) {
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.')
                run_dir_remove(runs, e->d_name);
        closedir(d);
    } else if (fd >= 0) {
        close(fd);
    }
    close(runs);
}

/* A buffered CSV writer. */
typedef struct csv_out {
    int fd;
    size_t n;
    int err;
    char buf[1 << 16];
} csv_out;

static void out_flush(csv_out *o)
{
    if (o->err == 0 && o->n > 0)
        o->err = write_all(o->fd, o->buf, o->n);
    o->n = 0;
}

static void out_bytes(csv_out *o, const char *p, size_t n)
{
    while (n > 0 && o->err == 0) {
        size_t k = sizeof(o->buf) - o->n < n ? sizeof(o->buf) - o->n : n;
        memcpy(o->buf + o->n, p, k);
        o->n += k;
        p += k;
        n -= k;
        if (o->n == sizeof(o->buf))
            out_flush(o);
    }
}

/* One record, each field quoted when it needs it (RFC 4180). */
static void out_record(csv_out *o, const comp_csv *r)
{
    for (int i = 0; i < r->nfields; i++) {
        const char *f = r->field[i];
        size_t n = r->flen[i];
        if (i > 0)
            out_bytes(o, ",", 1);
        if (strpbrk(f, ",\"\r\n") == NULL) {
            out_bytes(o, f, n);
            continue;
        }
        out_bytes(o, "\"", 1);
        for (const char *p = f, *q; p < f + n; p = q + 1) {
            q = memchr(p, '"', (size_t)(f + n - p));
            if (q == NULL) {
                out_bytes(o, p, (size_t)(f + n - p));
                break;
            }
            out_bytes(o, p, (size_t)(q - p + 1));
            out_bytes(o, "\"", 1);
        }
        out_bytes(o, "\"", 1);
    }
    out_bytes(o, "\n", 1);
}

/* Split the CSV at `in` by its `id_column` into out[1] (public rows) and
 * out[0] (private rows), the header in both; rows counted in n[]. */
static int split_csv(int64_t n[2], csv_out *out[2], const comp_truth *t, int in, int64_t max)
{
    comp_csv r;
    int idcol = -1, rc, err = 0;

    n[0] = n[1] = 0;
    if ((err = comp__csv_open(&r, in, max)) < 0)
        return ed_error_set(err, "%s", r.err);
    if ((rc = comp__csv_next(&r)) == 1) {
        for (int i = 0; i < r.nfields; i++)
            if (strcmp(r.field[i], t->id_column) == 0)
                idcol = i;
        out_record(out[0], &r);
        out_record(out[1], &r);
    }
    while (idcol >= 0 && (rc = comp__csv_next(&r)) == 1) {
        int64_t row;
        int part;
        if (idcol >= r.nfields || (row = comp__truth_find(t, r.field[idcol], r.flen[idcol])) < 0)
            continue;   /* validated before: cannot happen */
        part = t->public_mask == NULL || t->public_mask[row] ? 1 : 0;
        out_record(out[part], &r);
        n[part]++;
    }
    if (rc < 0)
        err = ed_error_set(ED_EIO, "re-read for the scoring program: %s", r.err);
    else if (idcol < 0)
        err = ed_error_set(ED_EIO, "re-read for the scoring program: no id column");
    comp__csv_close(&r);
    return err;
}

/* Make .runs/<name> (0755) and open its file `file` for writing (0444). */
static int run_file(int *out, int runs, const char *name, const char *file)
{
    int d;

    if ((d = openat(runs, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0) {
        if (mkdirat(runs, name, 0755) < 0 || fchmodat(runs, name, 0755, 0) < 0 ||
            (d = openat(runs, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
            return ed_error_set(ED_EIO, "make a scoring run directory: %s", strerror(errno));
    }
    *out = openat(d, file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
    if (*out >= 0)
        fchmod(*out, 0444);   /* whatever the umask: the sandbox's uid reads it */
    close(d);
    return *out >= 0 ? 0 : ed_error_set(ED_EIO, "create a scoring run file: %s", strerror(errno));
}

/* ---- one run -------------------------------------------------------------- */

typedef struct run_result {
    double score;
    const char *fail;           /* NULL: score is good; else the fixed message */
    char msg[160];
} run_result;

/* The last non-empty line of the memfd, parsed as {"score": x}. */
static void read_score(run_result *rr, int mfd)
{
    struct stat sb;
    char buf[LAST_LINE_MAX + 1];
    off_t from;
    ssize_t got;
    char *end, *line;
    json_t *j, *v;

    rr->fail = "the scoring program did not print a JSON score ({\"score\": <number>}) as its last line";
    if (fstat(mfd, &sb) < 0 || sb.st_size <= 0)
        return;
    from = sb.st_size > LAST_LINE_MAX ? sb.st_size - LAST_LINE_MAX : 0;
    if ((got = pread(mfd, buf, LAST_LINE_MAX, from)) <= 0)
        return;
    buf[got] = '\0';
    end = buf + got;
    while (end > buf && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' ' || end[-1] == '\t'))
        *--end = '\0';
    line = memrchr(buf, '\n', (size_t)(end - buf));
    line = line != NULL ? line + 1 : (from == 0 ? buf : NULL);
    if (line == NULL || (j = json_loads(line, 0, NULL)) == NULL)
        return;
    v = json_object_get(j, "score");
    if (json_is_number(v)) {
        rr->score = json_number_value(v);
        rr->fail = isfinite(rr->score) ? NULL : "the scoring program printed a score that is not a finite number";
    }
    json_decref(j);
}

/* Run the program in .runs/<name> (bound at /scoring) once. < 0: a platform
 * error; else rr says how it went. */
static int run_one(run_result *rr, comp *c, const comp__info *k, const char *name)
{
    sched_config sc;
    sbx_slot *slot = NULL;
    sbx_job *j = NULL;
    sbx_spec sp;
    sbx_usage u;
    sbx_bind ro[1];
    char dir[PATH_MAX];
    char *const argv[] = {"/usr/bin/python3", "-I", "/scoring/scorer.py", "/scoring/truth.csv",
                          "/scoring/submission.csv", NULL};
    const char *deg = getenv("EDDY_SANDBOX_DEGRADED");
    int timeout_s = k->scorer_timeout_s > 0 ? k->scorer_timeout_s : 60;
    int mem_mb = k->scorer_memory_mb > 0 ? k->scorer_memory_mb : 1024;
    int mfd = -1, err;

    memset(rr, 0, sizeof(*rr));
    if ((size_t)snprintf(dir, sizeof(dir), "%s/competitions/" RUNS_DIR "/%s", c->data_dir, name) >= sizeof(dir))
        return ed_error_set(ED_EINVAL, "the data directory's path is too long");
    if ((err = sched_config_defaults(&sc, c->data_dir)) < 0)
        return err;
    if ((mfd = memfd_create("eddy-scorer-out", MFD_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "memfd: %s", strerror(errno));
    if ((err = sbx_slot_claim(&slot, sc.slot_dir, sc.slot_base, sc.slot_count)) < 0)
        goto done;
    sbx_spec_init(&sp);
    sp.argv = argv;
    sp.host_uid = sbx_slot_uid(slot);
    sp.host_gid = sbx_slot_uid(slot);
    sp.cwd = "/tmp";
    ro[0] = (sbx_bind){dir, "/scoring", 0};
    sp.ro = ro;
    sp.n_ro = 1;
    sp.mem_bytes = (int64_t)mem_mb << 20;
    sp.cpu_millis = 1000;
    sp.pids = 64;
    sp.nofile = 256;
    sp.tmp_bytes = 64LL << 20;
    sp.fsize_bytes = OUT_MAX;
    sp.wall_ms = timeout_s * 1000;
    sp.cpu_s = timeout_s + 1;
    sp.net = SBX_NET_NONE;
    sp.stdio[0] = -1;
    sp.stdio[1] = mfd;
    sp.stdio[2] = -1;     /* nothing of it is kept */
    sp.allow_degraded = deg != NULL && strcmp(deg, "1") == 0;
    if ((err = sbx_launch(&j, &sp)) < 0)
        goto done;
    if ((err = sbx_job_wait(j, sp.wall_ms + 10000, &u)) == ED_EBUSY) {
        sbx_job_kill(j);
        err = sbx_job_wait(j, 10000, &u);
        u.limit = SBX_LIMIT_WALL;
    }
    if (err < 0)
        goto done;
    if (u.limit == SBX_LIMIT_WALL || u.limit == SBX_LIMIT_CPU) {
        snprintf(rr->msg, sizeof(rr->msg), "the scoring program ran past its time limit of %d s", timeout_s);
        rr->fail = rr->msg;
    } else if (u.limit == SBX_LIMIT_MEMORY) {
        snprintf(rr->msg, sizeof(rr->msg), "the scoring program ran out of memory (its limit is %d MiB)", mem_mb);
        rr->fail = rr->msg;
    } else if (u.limit == SBX_LIMIT_FSIZE) {
        snprintf(rr->msg, sizeof(rr->msg), "the scoring program wrote more than %d MiB", OUT_MAX >> 20);
        rr->fail = rr->msg;
    } else if (!u.exited) {
        snprintf(rr->msg, sizeof(rr->msg), "the scoring program was killed by signal %d", u.term_signal);
        rr->fail = rr->msg;
    } else if (u.exit_code != 0) {
        snprintf(rr->msg, sizeof(rr->msg), "the scoring program failed (exit status %d)", u.exit_code);
        rr->fail = rr->msg;
    } else {
        read_score(rr, mfd);
    }
done:
    sbx_job_free(j);
    sbx_slot_free(slot);
    close(mfd);
    return err;
}

/* Copy the stored program into the run directory `name`. */
static int copy_program(comp *c, const char *id, int runs, const char *name)
{
    char *buf = NULL;
    size_t len = 0;
    int dir = -1, out = -1, err;

    if ((err = comp__comp_dir(&dir, c, id, false)) < 0)
        return err;
    err = ed_fs_read_beneath(&buf, &len, dir, "scorer.py", COMP_SCORER_MAX);
    close(dir);
    if (err < 0)
        return err;
    if ((err = run_file(&out, runs, name, "scorer.py")) == 0) {
        err = write_all(out, buf, len);
        close(out);
    }
    free(buf);
    return err;
}

int comp__scorer_score(comp_score_result *r, const char **fail, char *msg, size_t msglen, comp *c,
                       const char *id, const comp__info *k, const comp_truth *t, int sub_fd, off_t sub_off)
{
    static const char *const part_name[2] = {"priv", "pub"};
    char base[COMP_ID_LEN], names[2][64];
    csv_out *tr[2] = {NULL, NULL}, *sb[2] = {NULL, NULL};
    int64_t nt[2], ns[2];
    int runs = -1, tfd = -1, err = 0;

    *fail = NULL;
    if (!k->has_scorer) {
        *fail = "the competition's scoring program has not been uploaded (the host's side); it does not count";
        return 0;
    }
    if (mkdirat(c->dir_fd, RUNS_DIR, 0700) < 0 && errno != EEXIST)
        return ed_error_set(ED_EIO, "mkdir " RUNS_DIR ": %s", strerror(errno));
    if ((runs = openat(c->dir_fd, RUNS_DIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
        return ed_error_set(ED_EIO, "open " RUNS_DIR ": %s", strerror(errno));
    ed_uuid4(base);
    for (int p = 0; p < 2; p++)
        snprintf(names[p], sizeof(names[p]), "%s-%s", base, part_name[p]);
    for (int p = 0; p < 2; p++) {
        if ((tr[p] = calloc(1, sizeof(*tr[p]))) == NULL || (sb[p] = calloc(1, sizeof(*sb[p]))) == NULL) {
            err = ed_error_set(ED_ENOMEM, "scoring run buffers");
            goto done;
        }
        tr[p]->fd = sb[p]->fd = -1;
    }
    for (int p = 0; p < 2; p++)
        if ((err = copy_program(c, id, runs, names[p])) < 0 ||
            (err = run_file(&tr[p]->fd, runs, names[p], "truth.csv")) < 0 ||
            (err = run_file(&sb[p]->fd, runs, names[p], "submission.csv")) < 0)
            goto done;
    if ((err = comp_truth_open(&tfd, c, id)) < 0 || (err = split_csv(nt, tr, t, tfd, COMP_TRUTH_MAX)) < 0)
        goto done;
    if (lseek(sub_fd, sub_off, SEEK_SET) < 0) {
        err = ed_error_set(ED_EIO, "rewind the submission: %s", strerror(errno));
        goto done;
    }
    if ((err = split_csv(ns, sb, t, sub_fd, COMP_SUBMISSION_MAX)) < 0)
        goto done;
    for (int p = 0; p < 2; p++) {
        out_flush(tr[p]);
        out_flush(sb[p]);
        if ((err = tr[p]->err) < 0 || (err = sb[p]->err) < 0)
            goto done;
        close(tr[p]->fd);
        close(sb[p]->fd);
        tr[p]->fd = sb[p]->fd = -1;
    }
    /* public first, then private; an empty part has no score (NaN) */
    for (int p = 1; p >= 0 && *fail == NULL; p--) {
        run_result rr;
        double *dst = p ? &r->public_score : &r->private_score;
        if (nt[p] == 0) {
            *dst = NAN;
            continue;
        }
        if ((err = run_one(&rr, c, k, names[p])) < 0)
            goto done;
        if (rr.fail != NULL) {
            snprintf(msg, msglen, "%s", rr.fail);
            *fail = msg;
        }
        *dst = rr.score;
    }
    r->public_rows = ns[1];
    r->private_rows = ns[0];
    r->metric_version = 1;
done:
    for (int p = 0; p < 2; p++) {
        if (tr[p] != NULL && tr[p]->fd >= 0)
            close(tr[p]->fd);
        if (sb[p] != NULL && sb[p]->fd >= 0)
            close(sb[p]->fd);
        free(tr[p]);
        free(sb[p]);
        run_dir_remove(runs, names[p]);
    }
    if (tfd >= 0)
        close(tfd);
    close(runs);
    return err;
}
