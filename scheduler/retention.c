/*
 * retention.c - a job's disk: the quota on what it writes, and the fate of
 * its directory once it has ended.
 *
 * DATA/jobs/<id>/work and /output are one disk-quota tree (sandbox/
 * sbx_disk.c, project id SBX_DISK_PROJID_JOBS + id) limited to the tier's
 * job_disk_bytes, made when the job is submitted (before its project copy
 * goes in, so the copy counts) and attached again at launch (after a
 * restart). A write past the limit fails with EDQUOT/ENOSPC inside the job;
 * nothing else on the host notices. With a limit configured and no quota
 * mechanism on the host, submissions fail closed (ED_EUNPROC, naming what
 * is missing).
 *
 * The sweep, run from the scheduler's loop every SWEEP_MS (and at once at
 * start): for each job that has ended, it records the disk it used, deletes
 * its work directory (a copy of the project version: nothing there is an
 * artifact) and takes its output out of the quota tree into a plain
 * directory (under the loop mechanisms a finished job then holds no mount
 * or loop device); once a job ended more than job_retention_ms ago, it
 * deletes the job's directory (output, log) and marks the row
 * artifacts_expired_at. The row stays.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"
#include "ed_log.h"
#include "ed_time.h"
#include "quota.h"
#include "sbx.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SWEEP_MS  10000
#define SWEEP_MAX 64      /* jobs per pass and kind */

static uint32_t projid_of(int64_t id)
{
    return SBX_DISK_PROJID_JOBS + (uint32_t)(id & 0x3fffffff);
}

static void tree_paths(char work[760], char output[760], sched *s, int64_t id)
{
    char dir[700];

    sched_job_dir(dir, sizeof(dir), s, id);
    snprintf(work, 760, "%s/work", dir);
    snprintf(output, 760, "%s/output", dir);
}

static int most_job_disk(const quota_tier *t, void *payload)
{
    int64_t *most = payload;

    if (t->job_disk_bytes > *most)
        *most = t->job_disk_bytes;
    return 0;
}

int sched__disk_open(sched *s)
{
    int64_t most = 0;
    char abs[512];

    if ((s->disk = calloc(1, sizeof(*s->disk))) == NULL)
        return ed_error_set(ED_ENOMEM, "disk");
    if (s->cfg.data_dir[0] == '/') {
        snprintf(abs, sizeof(abs), "%s", s->cfg.data_dir);
    } else if (realpath(s->cfg.data_dir, abs) == NULL) {   /* our own directory, made at start */
        sched__disk_close(s);
        return ed_error_set(ED_EIO, "data directory %s: %s", s->cfg.data_dir, strerror(errno));
    }
    if (getenv("EDDY_DISK_QUOTA") && strcmp(getenv("EDDY_DISK_QUOTA"), "none") == 0) {
        /* as on a host without any mechanism (tests of failing closed) */
        s->disk->mech = SBX_DISK_NONE;
        snprintf(s->disk->data_dir, sizeof(s->disk->data_dir), "%.399s", abs);
        snprintf(s->disk->detail, sizeof(s->disk->detail), "disk quotas switched off (EDDY_DISK_QUOTA=none)");
    } else if (sbx_disk_probe(s->disk, abs, s->cfg.volume_bytes, SBX_DISK_SETUP) < 0) {
        int err = ed_error_set(ED_EINVAL, "disk quotas: %s", ed_error_last());
        sched__disk_close(s);
        return err;
    }
    quota_tier_each(s->st, most_job_disk, &most);
    if (s->disk->mech == SBX_DISK_NONE && most > 0)
        ed_log_error("sched.disk", "disk quotas: none available, so jobs of tiers with a job_disk_bytes limit "
                     "will not start (set job_disk_bytes 0 to run them unlimited): %s", s->disk->detail);
    else
        ed_log_info("sched.disk", "disk quotas: %s (%s); job retention %s%" PRId64 " days",
                    sbx_disk_mech_name(s->disk->mech), s->disk->detail,
                    s->cfg.job_retention_ms > 0 ? "" : "off, was ",
                    s->cfg.job_retention_ms / 86400000);
    return 0;
}

void sched__disk_close(sched *s)
{
    /* the trees' mounts go with the server; the next start attaches them */
    if (s->disk && s->disk->mech != SBX_DISK_NONE && s->disk->mech != SBX_DISK_PRJQUOTA &&
        sbx_disk_detach(s->disk->data_dir) < 0)
        ed_log_warn("sched.disk", "%s", ed_error_last());
    free(s->disk);
    s->disk = NULL;
}

const struct sbx_disk *sched_disk(sched *s)
{
    return s ? s->disk : NULL;
}

/* The tier's job disk limit (0: none, or no such tier). */
static int tier_limit(int64_t *out, sched *s, const char *tier)
{
    quota_tier t;
    int err;

    *out = 0;
    if ((err = quota_tier_get(&t, s->st, tier ? tier : "")) == ED_ENOTFOUND)
        return 0;
    if (err < 0)
        return err;
    *out = t.job_disk_bytes;
    return 0;
}

int sched__disk_job_init(sched *s, int64_t id, const char *tier)
{
    char work[760], output[760];
    const char *dirs[2] = {work, output};
    sqlite3_stmt *q = NULL;
    int64_t limit;
    int err;

    tree_paths(work, output, s, id);
    if ((err = tier_limit(&limit, s, tier)) < 0)
        return err;
    if (limit <= 0) {
        if ((mkdir(work, 0700) < 0 && errno != EEXIST) || (mkdir(output, 0700) < 0 && errno != EEXIST))
            return ed_error_set(ED_EIO, "cannot create %s: %s", work, strerror(errno));
        return 0;
    }
    /* Serving unprivileged, sbx_disk_* goes to the sandbox launcher (root),
     * which probed and mounts for us: the same refusal applies. */
    if (s->disk == NULL || s->disk->mech == SBX_DISK_NONE)
        return ed_error_set(ED_EUNPROC,
                            "tier '%s' limits a job's disk to %" PRId64 " bytes, but this host has no disk "
                            "quota mechanism, so no job of it starts: %s",
                            tier ? tier : "", limit, s->disk ? s->disk->detail : "not probed");
    if ((err = sbx_disk_tree_init(s->disk, dirs, 2, projid_of(id), limit)) < 0)
        return err;
    if (ed_store_prepare(&q, s->st, "UPDATE jobs SET disk_limit_bytes = ?2 WHERE id = ?1") == 0) {
        sqlite3_bind_int64(q, 1, id);
        sqlite3_bind_int64(q, 2, limit);
        ed_store_step(q);
        sqlite3_finalize(q);
    }
    return 0;
}

/* The limit a job was submitted with (0: none). */
static int64_t job_limit(sched *s, int64_t id)
{
    sqlite3_stmt *q = NULL;
    int64_t limit = 0;

    if (ed_store_prepare(&q, s->st, "SELECT IFNULL(disk_limit_bytes, 0) FROM jobs WHERE id = ?1") == 0) {
        sqlite3_bind_int64(q, 1, id);
        if (sqlite3_step(q) == SQLITE_ROW)
            limit = sqlite3_column_int64(q, 0);
        sqlite3_finalize(q);
    }
    return limit;
}

int sched__disk_job_attach(sched *s, int64_t id)
{
    char work[760], output[760];
    const char *dirs[2] = {work, output};
    int64_t limit = job_limit(s, id);

    if (limit <= 0)
        return 0;   /* submitted without a limit */
    if (s->disk == NULL || s->disk->mech == SBX_DISK_NONE)
        return ed_error_set(ED_EUNPROC, "job %lld has a disk limit of %" PRId64 " bytes, but this host has no "
                            "disk quota mechanism now: %s", (long long)id, limit,
                            s->disk ? s->disk->detail : "not probed");
    tree_paths(work, output, s, id);
    return sbx_disk_tree_init(s->disk, dirs, 2, projid_of(id), limit);
}

void sched__disk_job_remove(sched *s, int64_t id)
{
    char work[760], output[760];
    const char *dirs[2] = {work, output};

    if (s->disk == NULL)
        return;
    tree_paths(work, output, s, id);
    if (sbx_disk_tree_remove(s->disk, dirs, 2, projid_of(id)) < 0)
        ed_log_warn("sched.disk", "job %lld: %s", (long long)id, ed_error_last());
}

void sched__disk_job_fill(sched *s, sched_job_info *j)
{
    sqlite3_stmt *q = NULL;

    j->disk_limit_bytes = j->disk_used_bytes = -1;
    j->artifacts_expired_at = 0;
    if (ed_store_prepare(&q, s->st, "SELECT IFNULL(disk_limit_bytes, -1), IFNULL(disk_used_bytes, -1), "
                                    "IFNULL(artifacts_expired_at, 0) FROM jobs WHERE id = ?1") < 0)
        return;
    sqlite3_bind_int64(q, 1, j->id);
    if (sqlite3_step(q) == SQLITE_ROW) {
        j->disk_limit_bytes = sqlite3_column_int64(q, 0);
        j->disk_used_bytes = sqlite3_column_int64(q, 1);
        j->artifacts_expired_at = sqlite3_column_int64(q, 2);
    }
    sqlite3_finalize(q);
    if (j->disk_used_bytes < 0 && j->disk_limit_bytes > 0 && s->disk && strcmp(j->status, "running") == 0) {
        char work[760], output[760];
        int64_t used, inodes;
        tree_paths(work, output, s, j->id);
        if (sbx_disk_tree_usage(s->disk, output, projid_of(j->id), &used, &inodes) == 0)
            j->disk_used_bytes = used;
    }
}

/* ---- the sweep ------------------------------------------------------------------ */

/* Up to SWEEP_MAX job ids of a query with ?1 = a time bound (ms). */
static int ids_of(int64_t *ids, sched *s, const char *sql, int64_t bound)
{
    sqlite3_stmt *q = NULL;
    int n = 0;

    if (ed_store_prepare(&q, s->st, sql) < 0)
        return 0;
    sqlite3_bind_int64(q, 1, bound);
    while (n < SWEEP_MAX && sqlite3_step(q) == SQLITE_ROW)
        ids[n++] = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return n;
}

static void set_col(sched *s, const char *sql, int64_t id, int64_t v)
{
    sqlite3_stmt *q = NULL;

    if (ed_store_prepare(&q, s->st, sql) < 0)
        return;
    sqlite3_bind_int64(q, 1, id);
    sqlite3_bind_int64(q, 2, v);
    if (ed_store_step(q) != SQLITE_DONE)
        ed_log_warn("sched.retention", "job %lld: %s", (long long)id, sqlite3_errmsg(ed_store_db(s->st)));
    sqlite3_finalize(q);
}

#define ENDED "status NOT IN ('preparing', 'queued', 'running') AND ended_at IS NOT NULL"

/* An ended job: record what it used, delete its work copy, and take its
 * output out of the quota tree (sbx_disk_path_freeze: a plain directory, so
 * a finished job holds no mount or loop device), then drop the tree. Each
 * step is safe to repeat: until disk_used_bytes is set the next sweep does
 * it again; the tree goes only after that, so a crash never loses output
 * (a tree that is gone is never made again here: its output was frozen). */
static void finish_disk(sched *s, int64_t id)
{
    char work[760], output[760];
    const char *dirs[2] = {work, output};
    int64_t used = -1, inodes, limit = job_limit(s, id);
    bool tree = false;

    tree_paths(work, output, s, id);
    if (s->disk && limit > 0 && s->disk->mech != SBX_DISK_NONE) {
        tree = s->disk->mech == SBX_DISK_PRJQUOTA || sbx_disk_tree_exists(s->disk, projid_of(id));
        if (tree && s->disk->mech != SBX_DISK_PRJQUOTA &&
            sbx_disk_tree_init(s->disk, dirs, 2, projid_of(id), limit) < 0) {   /* attached after a restart */
            ed_log_warn("sched.retention", "job %lld: cannot attach its tree: %s", (long long)id, ed_error_last());
            return;
        }
        if (tree && sbx_disk_tree_usage(s->disk, output, projid_of(id), &used, &inodes) < 0)
            used = -1;
    }
    if (sbx_disk_path_clear(work) < 0)
        ed_log_warn("sched.retention", "job %lld: cannot delete its work directory: %s", (long long)id,
                    ed_error_last());
    if (tree && sbx_disk_path_freeze(output) < 0) {
        ed_log_warn("sched.retention", "job %lld: %s", (long long)id, ed_error_last());
        return;   /* again at the next sweep */
    }
    set_col(s, "UPDATE jobs SET disk_used_bytes = ?2 WHERE id = ?1", id, used);
    if (tree && sbx_disk_tree_remove(s->disk, NULL, 0, projid_of(id)) < 0)
        ed_log_warn("sched.retention", "job %lld: %s", (long long)id, ed_error_last());
}

/* A job past retention: its directory goes, its row says so. */
static void expire(sched *s, int64_t id, int64_t now)
{
    char dir[700];

    sched__disk_job_remove(s, id);
    if (sched_job_dir(dir, sizeof(dir), s, id) == 0)
        sched__rm_rf(dir);
    set_col(s, "UPDATE jobs SET artifacts_expired_at = ?2 WHERE id = ?1", id, now);
    ed_log_info("sched.retention", "job %lld: directory deleted (ended over %lld days ago)", (long long)id,
                (long long)(s->cfg.job_retention_ms / 86400000));
}

void sched__retention_sweep(sched *s)
{
    int64_t now = ed_now_ms(), ids[SWEEP_MAX];
    int n, cleared = 0, expired = 0;

    assert(sched__locked(s));
    if (s->swept_at != 0 && now - s->swept_at < SWEEP_MS)
        return;
    /* Filesystem work can take seconds: not under the scheduler's lock (the
     * loop calling us holds it; ticks and requests go on meanwhile). */
    sched__unlock(s);
    n = ids_of(ids, s, "SELECT id FROM jobs WHERE " ENDED " AND disk_used_bytes IS NULL AND ?1 >= 0 "
                       "ORDER BY id LIMIT 64", 0);
    for (int i = 0; i < n; i++)
        finish_disk(s, ids[i]);
    cleared = n;
    if (s->cfg.job_retention_ms > 0) {
        n = ids_of(ids, s, "SELECT id FROM jobs WHERE " ENDED " AND artifacts_expired_at IS NULL AND ended_at < ?1 "
                           "ORDER BY ended_at LIMIT 64", now - s->cfg.job_retention_ms);
        for (int i = 0; i < n; i++)
            expire(s, ids[i], now);
        expired = n;
    }
    if (s->swept_at == 0)
        ed_log_info("sched.retention", "first sweep: %d work directories of ended jobs deleted, %d job "
                    "directories expired", cleared, expired);
    sched__lock(s);
    s->swept_at = now;
}
