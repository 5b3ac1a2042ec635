/*
 * test_ws_quota - the workspace quota (projects/workspace.c, proj_ws.h) on
 * the real kernel: each project's working tree is a disk-quota tree with its
 * owner's tier limit; create, delete and fork are all-or-nothing with the
 * tree; what a crash leaves is removed at the next start; a plain project
 * (older than the quota) is converted into a tree without losing a byte,
 * also after a crash midway; trees come back after their mounts are gone;
 * with no mechanism a limited tier fails closed.
 *
 * Needs root and a disk quota mechanism (this host: "loop images"). Exits 77
 * (skip) with the reason where the host has none.
 *
 * EDDY_WS_BENCH=N also times attaching N projects' trees after a restart
 * (EDDY_WS_BENCH_MIB: their limit, default 32).
 */
#include "proj_fixture.h"

#include "ed_time.h"
#include "proj_ws.h"
#include "sbx.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../support/unit_util.h"

#define MIB (INT64_C(1) << 20)

static sbx_disk disk;

static void open_root(void)
{
    ck_assert_msg(proj_root_open(&root, st, rootdir, 0) == 0, "%s", ed_error_last());
    ck_assert_msg(proj_root_set_disk(root, &disk) == 0, "%s", ed_error_last());
    ck_assert_int_eq(chmod(rootdir, 0755), 0);   /* nobody (write_as_nobody) walks to a tree */
}

static void setup(void)
{
    proj_fixture_open("/tmp/eddy-wsq-XXXXXX");
    ck_assert_int_eq(chmod(tmp, 0755), 0);
    ck_assert_msg(ed_store_exec(st, "UPDATE users SET tier = 'free' WHERE username = 'alice';"
                                    "UPDATE users SET tier = 'pro' WHERE username = 'bob'") == 0, "%s",
                  ed_error_last());
    ck_assert_msg(sbx_disk_probe(&disk, tmp, -1, SBX_DISK_SETUP) == 0, "%s", ed_error_last());
    ck_assert_msg(disk.mech != SBX_DISK_NONE, "%s", disk.detail);
    open_root();
    ck_assert_int_eq(proj_workspace_tier_set(root, "free", 32 * MIB), 0);
    ck_assert_int_eq(proj_workspace_tier_set(root, "pro", 0), 0);
}

/* ---- helpers --------------------------------------------------------------------- */

static int is_mount(const char *path)
{
    char parent[600];
    struct stat a, b;

    snprintf(parent, sizeof(parent), "%s/..", path);
    return lstat(path, &a) == 0 && stat(parent, &b) == 0 && a.st_dev != b.st_dev;
}

static void tree_of(char out[400], const char *id)
{
    snprintf(out, 400, "%s/%s", rootdir, id);
}

/* DIR: the tree of project `id`, a mount of its own unless the mechanism is
 * project quotas (one filesystem for all trees). */
static void tree_is_made(char dir[400], const char *id)
{
    tree_of(dir, id);
    if (disk.mech != SBX_DISK_PRJQUOTA)
        ck_assert_msg(is_mount(dir), "%s is not a tree's mount", dir);
}

static int64_t count(const char *sql)
{
    return unit_store_int(st, sql);
}

/* Entries of `dir` (not . and ..). */
static int entries(const char *dir)
{
    char cmd[500];

    snprintf(cmd, sizeof(cmd), "ls -A %s | wc -l", dir);
    return unit_popen_int(cmd);
}

/* Mounts beneath the temporary directory. */
static int mounts(void)
{
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "grep -c ' %s/' /proc/self/mounts", tmp);
    return unit_popen_int(cmd);
}

/* Nothing of any workspace is left: no project directory, image, row or mount. */
static void assert_nothing_left(void)
{
    char images[400];

    ck_assert_int_eq(entries(rootdir), 0);
    snprintf(images, sizeof(images), "%s/images", tmp);
    ck_assert_int_le(entries(images), 0);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM workspaces"), 0);
    ck_assert_int_eq(mounts(), 0);
}

/* As nobody (an unprivileged writer, as a kernel is): write `want` bytes
 * into `file` (the tree's top handed to nobody first). Bytes written; *err
 * the errno that stopped it. */
static int64_t write_as_nobody(const char *dir, const char *file, int64_t want, int *err)
{
    char path[600];
    int64_t n;

    ck_assert_int_eq(chown(dir, UNIT_NOBODY, UNIT_NOBODY), 0);
    snprintf(path, sizeof(path), "%s/%s", dir, file);
    n = unit_write_as_nobody(path, want, err);
    ck_assert_int_eq(chown(dir, 0, 0), 0);
    return n;
}

/* ---- tests ------------------------------------------------------------------------- */

START_TEST(create_makes_a_tree_with_the_tier_limit)
{
    proj *p = make(alice, "limited", PROJ_PRIVATE), *q = make(bob, "unlimited", PROJ_PRIVATE);
    char dir[400];
    int64_t n;
    int e;

    tree_is_made(dir, p->id);
    put_as(alice, p->id, "a.txt", "hello");
    file_is_as(alice, p->id, "a.txt", NULL, "hello");
    /* an unprivileged writer (a kernel) stops at the limit with ENOSPC/EDQUOT */
    n = write_as_nobody(dir, "big.bin", 64 * MIB, &e);
    ck_assert_msg(e == ENOSPC || e == EDQUOT, "wrote %lld bytes, errno %d", (long long)n, e);
    ck_assert_int_le(n, 32 * MIB);
    ck_assert_int_ge(n, 28 * MIB);
    /* ... the usage says so, and deleting frees it again */
    {
        proj_ws_usage *u = NULL;
        ck_assert_int_eq(proj_workspace_usage(&u, root, alice), 0);
        ck_assert_int_eq(u->limit_bytes, 32 * MIB);
        ck_assert_int_eq(u->count, 1);
        ck_assert_int_ge(u->used_bytes, 28 * MIB);
        proj_ws_usage_free(u);
    }
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "big.bin"), 0);
    n = write_as_nobody(dir, "again.bin", 8 * MIB, &e);
    ck_assert_int_eq(e, 0);
    ck_assert_int_eq(n, 8 * MIB);
    /* a tier without a limit: a plain directory */
    tree_of(dir, q->id);
    ck_assert(!is_mount(dir));
    ck_assert_int_eq(count("SELECT COUNT(*) FROM workspaces WHERE limit_bytes > 0"), 1);
    proj_free(p);
    proj_free(q);
}
END_TEST

START_TEST(create_is_all_or_nothing)
{
    proj *p = NULL;

    /* the row cannot be inserted: nothing of the tree stays */
    ck_assert_int_eq(ed_store_exec(st, "CREATE TRIGGER no_projects BEFORE INSERT ON projects "
                                       "BEGIN SELECT RAISE(ABORT, 'injected failure'); END"), 0);
    ck_assert_int_lt(proj_create(&p, root, alice, "doomed", NULL, PROJ_PRIVATE), 0);
    ck_assert_ptr_null(p);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "injected failure"));
    assert_nothing_left();
    ck_assert_int_eq(ed_store_exec(st, "DROP TRIGGER no_projects"), 0);
    p = make(alice, "fine", PROJ_PRIVATE);
    proj_free(p);
}
END_TEST

START_TEST(delete_removes_the_tree)
{
    proj *p = make(alice, "gone", PROJ_PRIVATE), *keep = make(alice, "kept", PROJ_PRIVATE);

    put_as(alice, p->id, "x.txt", "x");
    put_as(alice, keep->id, "y.txt", "y");
    ck_assert_int_eq(proj_delete(root, alice, p->id), 0);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM workspaces"), 1);
    ck_assert_int_eq(entries(rootdir), 1);
    ck_assert_int_eq(proj_delete(root, alice, keep->id), 0);
    assert_nothing_left();
    proj_free(p);
    proj_free(keep);
}
END_TEST

START_TEST(crashed_create_and_delete_are_swept_at_start)
{
    proj *p = make(alice, "half deleted", PROJ_PRIVATE);
    int64_t disk_id;
    char dir[400];

    put_as(alice, p->id, "x.txt", "x");
    /* a delete that crashed after its commit: the row is gone, the tree not */
    ck_assert_int_eq(ed_store_exec(st, "DELETE FROM projects"), 0);
    /* a create that crashed before its commit: a tree, no row */
    ck_assert_int_eq(proj__ws_prepare(root, alice, "pAAAAAAAAAAAA", &disk_id), 0);
    tree_is_made(dir, "pAAAAAAAAAAAA");
    /* the next start */
    proj_root_free(root);
    open_root();
    assert_nothing_left();
    proj_free(p);
}
END_TEST

START_TEST(fork_is_all_or_nothing_with_its_tree)
{
    proj *p = make(bob, "source", PROJ_PRIVATE), *f = NULL;
    proj_version *v = NULL;
    char dir[400];

    ck_assert_int_eq(proj_update(NULL, root, bob, p->id, &(proj_changes){NULL, NULL, PROJ_PUBLIC}), 0);
    ck_assert_msg(proj_file_write(NULL, NULL, root, bob, p->id, "train.py", "print(1)\n", 9) == 0, "%s",
                  ed_error_last());
    ck_assert_msg(proj_version_create(&v, root, bob, p->id, "v1") == 0, "%s", ed_error_last());
    proj_version_free(v);
    /* a fork whose row cannot be inserted leaves nothing */
    ck_assert_int_eq(ed_store_exec(st, "CREATE TRIGGER no_forks BEFORE INSERT ON projects "
                                       "WHEN NEW.forked_from IS NOT NULL BEGIN SELECT RAISE(ABORT, 'injected'); END"),
                     0);
    ck_assert_int_lt(proj_fork(&f, root, alice, p->id), 0);
    ck_assert_int_eq(entries(rootdir), 1);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM workspaces"), 1);
    ck_assert_int_eq(ed_store_exec(st, "DROP TRIGGER no_forks"), 0);
    /* alice's fork is a tree with alice's limit, bob's source is not */
    ck_assert_msg(proj_fork(&f, root, alice, p->id) == 0, "%s", ed_error_last());
    tree_is_made(dir, f->id);
    file_is_as(alice, f->id, "train.py", NULL, "print(1)\n");
    ck_assert_int_eq(count("SELECT limit_bytes FROM workspaces w JOIN projects p ON p.id = w.project_id"
                           " WHERE p.forked_from IS NOT NULL"), 32 * MIB);
    proj_free(f);
    proj_free(p);
}
END_TEST

START_TEST(trees_come_back_after_a_restart)
{
    proj *p = make(alice, "persistent", PROJ_PRIVATE);
    char dir[400];

    put_as(alice, p->id, "notes/a.txt", "kept across restarts");
    /* the server stops: every mount goes */
    proj_root_free(root);
    ck_assert_int_eq(sbx_disk_detach(tmp), 0);
    tree_of(dir, p->id);
    if (disk.mech != SBX_DISK_PRJQUOTA) {
        ck_assert(!is_mount(dir));
        ck_assert_int_eq(entries(dir), 0);
    }
    open_root();
    file_is_as(alice, p->id, "notes/a.txt", NULL, "kept across restarts");   /* attached at first use */
    if (disk.mech != SBX_DISK_PRJQUOTA)
        ck_assert(is_mount(dir));
    proj_free(p);
}
END_TEST

/* A project older than the quota (no workspaces row, a plain directory)
 * becomes a tree at its first use, history and all. */
START_TEST(plain_projects_are_converted_losslessly)
{
    proj *p = make(bob, "old", PROJ_PRIVATE);   /* pro: no limit, a plain directory */
    proj_version *v = NULL;
    proj_version_page *pg = NULL;
    char dir[400];

    ck_assert_int_eq(ed_store_exec(st, "UPDATE users SET tier = 'free' WHERE username = 'alice'"), 0);
    put_as(bob, p->id, "data/a.txt", "alpha");
    ck_assert_msg(proj_version_create(&v, root, bob, p->id, "v1") == 0, "%s", ed_error_last());
    proj_version_free(v);
    put_as(bob, p->id, "data/b.txt", "uncommitted");
    ck_assert_int_eq(ed_store_exec(st, "DELETE FROM workspaces"), 0);   /* as before migration 0012 */
    /* bob moves to a limited tier */
    ck_assert_int_eq(ed_store_exec(st, "UPDATE users SET tier = 'free' WHERE username = 'bob'"), 0);
    ck_assert_int_eq(proj_workspace_sync(root, bob, NULL), 1);
    tree_is_made(dir, p->id);
    file_is_as(bob, p->id, "data/a.txt", NULL, "alpha");
    file_is_as(bob, p->id, "data/b.txt", NULL, "uncommitted");
    ck_assert_int_eq(proj_version_list(&pg, root, bob, p->id, 10, NULL), 0);
    ck_assert_int_eq(pg->count, 1);
    proj_version_page_free(pg);
    ck_assert_int_eq(count("SELECT limit_bytes FROM workspaces"), 32 * MIB);
    ck_assert_int_eq(entries(rootdir), 1);   /* no .conv- left */
    proj_free(p);
}
END_TEST

/* A conversion cut by a crash after the move aside and a partial copy
 * resumes at the next start and loses nothing. */
START_TEST(an_interrupted_conversion_resumes)
{
    proj *p = make(bob, "cut", PROJ_PRIVATE);
    char dir[400], conv[400], junk[500];
    FILE *f;

    put_as(bob, p->id, "model.txt", "weights");
    ck_assert_int_eq(ed_store_exec(st, "DELETE FROM workspaces"), 0);
    /* the crash: original moved aside, a tree half filled with a stale copy */
    proj_root_free(root);
    tree_of(dir, p->id);
    snprintf(conv, sizeof(conv), "%s/.conv-%s", rootdir, p->id);
    ck_assert_int_eq(rename(dir, conv), 0);
    ck_assert_int_eq(mkdir(dir, 0750), 0);
    snprintf(junk, sizeof(junk), "%s/model.txt", dir);
    f = fopen(junk, "w");
    ck_assert_ptr_nonnull(f);
    fputs("wei", f);
    fclose(f);
    ck_assert_int_eq(ed_store_exec(st, "UPDATE users SET tier = 'free' WHERE username = 'bob'"), 0);
    open_root();   /* .conv- is not swept away */
    ck_assert_int_eq(access(conv, F_OK), 0);
    file_is_as(bob, p->id, "model.txt", NULL, "weights");
    ck_assert_int_ne(access(conv, F_OK), 0);
    ck_assert_int_eq(count("SELECT limit_bytes FROM workspaces"), 32 * MIB);
    proj_free(p);
}
END_TEST

/* A project over its new limit stays a plain directory (nothing lost). */
START_TEST(a_project_over_the_limit_stays_plain)
{
    proj *p = make(bob, "huge", PROJ_PRIVATE);
    char dir[400], file[500];
    int fd;

    tree_of(dir, p->id);
    snprintf(file, sizeof(file), "%s/big.bin", dir);
    fd = open(file, O_WRONLY | O_CREAT, 0644);
    ck_assert_int_ge(fd, 0);
    {
        static char buf[1 << 20];
        memset(buf, 'y', sizeof(buf));
        for (int i = 0; i < 40; i++)
            ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    }
    close(fd);
    put_as(bob, p->id, "small.txt", "small");
    ck_assert_int_eq(ed_store_exec(st, "UPDATE users SET tier = 'free' WHERE username = 'bob'"), 0);
    proj_workspace_sync(root, bob, NULL);
    if (disk.mech != SBX_DISK_PRJQUOTA && geteuid() != 0) {
        ck_assert(!is_mount(dir));
    }
    file_is_as(bob, p->id, "small.txt", NULL, "small");
    {
        struct stat sb;
        ck_assert_int_eq(stat(file, &sb), 0);
        ck_assert_int_eq(sb.st_size, 40 * MIB);
    }
    proj_free(p);
}
END_TEST

START_TEST(no_mechanism_fails_closed)
{
    sbx_disk none = disk;
    proj *p = NULL;

    none.mech = SBX_DISK_NONE;
    snprintf(none.detail, sizeof(none.detail), "no loop devices (test)");
    ck_assert_int_eq(proj_root_set_disk(root, &none), 0);
    ck_assert_int_eq(proj_create(&p, root, alice, "refused", NULL, PROJ_PRIVATE), ED_EUNPROC);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "no disk quota mechanism"));
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "workspace_bytes"));
    assert_nothing_left();
    p = make(bob, "unlimited tier", PROJ_PRIVATE);   /* no limit: fine */
    ck_assert_int_eq(proj_workspace_attach(root, bob, p->id), 0);
    proj_free(p);
    /* a limited owner's kernel start (attach) is refused too */
    ck_assert_int_eq(ed_store_exec(st, "UPDATE users SET tier = 'free' WHERE username = 'bob'"), 0);
    p = NULL;
    {
        proj_page *pg = NULL;
        ck_assert_int_eq(proj_list(&pg, root, bob, 10, NULL), 0);
        ck_assert_int_eq(pg->count, 1);
        ck_assert_int_eq(proj_workspace_attach(root, bob, pg->items[0]->id), ED_EUNPROC);
        proj_page_free(pg);
    }
}
END_TEST

/* A tier's new limit reaches existing trees: smaller at once, larger at
 * once where the host can grow a mounted image (else at the next attach). */
START_TEST(a_tier_change_changes_the_trees_limits)
{
    proj *p = make(alice, "resized", PROJ_PRIVATE);
    char dir[400];
    int64_t n;
    int e;

    tree_of(dir, p->id);
    /* down to 24 MiB */
    ck_assert_int_eq(proj_workspace_tier_set(root, "free", 24 * MIB), 0);
    ck_assert_int_eq(proj_workspace_sync(root, 0, "free"), 1);
    n = write_as_nobody(dir, "fill.bin", 64 * MIB, &e);
    ck_assert_msg(e == ENOSPC || e == EDQUOT, "errno %d", e);
    ck_assert_msg(n <= 24 * MIB && n >= 20 * MIB, "wrote %lld under 24 MiB", (long long)n);
    ck_assert_int_eq(count("SELECT limit_bytes FROM workspaces"), 24 * MIB);
    /* up to 96 MiB: past the image */
    ck_assert_int_eq(proj_workspace_tier_set(root, "free", 96 * MIB), 0);
    ck_assert_int_eq(proj_workspace_sync(root, 0, "free"), 1);
    n = write_as_nobody(dir, "fill.bin", 128 * MIB, &e);
    ck_assert_msg(n > 24 * MIB, "wrote %lld after raising the limit", (long long)n);
    if (n < 90 * MIB) {
        /* not grown while mounted (no CAP_SYS_RESOURCE here): at the next attach */
        fprintf(stderr, "a_tier_change: %lld MiB before a restart\n", (long long)(n >> 20));
        proj_root_free(root);
        ck_assert_int_eq(sbx_disk_detach(tmp), 0);
        open_root();
        ck_assert_int_eq(proj_workspace_attach(root, alice, p->id), 0);
        n = write_as_nobody(dir, "fill.bin", 128 * MIB, &e);
    }
    ck_assert_msg(e == ENOSPC || e == EDQUOT, "errno %d", e);
    ck_assert_msg(n <= 96 * MIB && n >= 90 * MIB, "wrote %lld under 96 MiB", (long long)n);
    ck_assert_int_eq(count("SELECT limit_bytes FROM workspaces"), 96 * MIB);
    proj_free(p);
}
END_TEST

/* Not a check: how long attaching N trees takes after a restart. */
START_TEST(bench_attach)
{
    const char *nv = getenv("EDDY_WS_BENCH");
    int n = nv ? atoi(nv) : 0;
    char (*ids)[PROJ_ID_LEN + 1];
    int64_t t0, t1, t2;

    if (n <= 0)
        return;
    if (getenv("EDDY_WS_BENCH_MIB"))
        ck_assert_int_eq(proj_workspace_tier_set(root, "free", atoll(getenv("EDDY_WS_BENCH_MIB")) * MIB), 0);
    ids = calloc((size_t)n, sizeof(*ids));
    t0 = ed_now_ms();
    for (int i = 0; i < n; i++) {
        proj *p = NULL;
        ck_assert_int_eq(proj_create(&p, root, alice, "bench", NULL, PROJ_PRIVATE), 0);
        snprintf(ids[i], sizeof(ids[i]), "%s", p->id);
        proj_free(p);
    }
    t1 = ed_now_ms();
    proj_root_free(root);
    ck_assert_int_eq(sbx_disk_detach(tmp), 0);
    open_root();
    t2 = ed_now_ms();
    for (int i = 0; i < n; i++)
        ck_assert_int_eq(proj_workspace_attach(root, alice, ids[i]), 0);
    fprintf(stderr, "bench: %s: create %d projects %lld ms (%.1f ms each); restart %lld ms; attach all %lld ms "
                    "(%.1f ms each)\n",
            sbx_disk_mech_name(disk.mech), n, (long long)(t1 - t0), (double)(t1 - t0) / n,
            (long long)(t2 - t1), (long long)(ed_now_ms() - t2), (double)(ed_now_ms() - t2) / n);
    free(ids);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {create_makes_a_tree_with_the_tier_limit, create_is_all_or_nothing,
                            delete_removes_the_tree, crashed_create_and_delete_are_swept_at_start,
                            fork_is_all_or_nothing_with_its_tree, trees_come_back_after_a_restart,
                            plain_projects_are_converted_losslessly, an_interrupted_conversion_resumes,
                            a_project_over_the_limit_stays_plain, no_mechanism_fails_closed,
                            a_tier_change_changes_the_trees_limits, bench_attach, NULL};
    sbx_disk probe;
    char dir[] = "/tmp/eddy-wsq-probe-XXXXXX";

    if (geteuid() != 0) {
        fprintf(stderr, "skip: workspace quotas need root\n");
        return 77;
    }
    if (mkdtemp(dir) == NULL || sbx_disk_probe(&probe, dir, -1, 0) < 0 || probe.mech == SBX_DISK_NONE) {
        fprintf(stderr, "skip: no disk quota mechanism here: %s\n", probe.detail);
        rmdir(dir);
        return 77;
    }
    rmdir(dir);
    return unit_tests_run("ws_quota", 300, setup, proj_fixture_close, tests);
}
