/* Unit tests for projects/ workspace features (issue 12): ETags and
 * conditional writes, streaming writes, versions that keep large and
 * .eddyignore'd files out of git, restore modes. Real store, real git. */
#include "proj.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char tmp[256];
static char rootdir[300];
static ed_store *st;
static proj_root *root;
static int64_t alice, bob;

/* ---- fixtures ------------------------------------------------------------ */

/* Insert a user without knowing the accounts schema in detail: fill every
 * NOT NULL column that has no default. */
static int64_t add_user(const char *name)
{
    sqlite3 *db = ed_store_db(st);
    sqlite3_stmt *s;
    char cols[1024] = "", vals[2048] = "", sql[4096];

    ck_assert_int_eq(sqlite3_prepare_v2(db, "PRAGMA table_info(users)", -1, &s, NULL), SQLITE_OK);
    while (sqlite3_step(s) == SQLITE_ROW) {
        const char *col = (const char *)sqlite3_column_text(s, 1);
        const char *type = (const char *)sqlite3_column_text(s, 2);
        int notnull = sqlite3_column_int(s, 3), has_default = sqlite3_column_type(s, 4) != SQLITE_NULL;
        int pk = sqlite3_column_int(s, 5);
        char v[300];
        if (pk || (!notnull && strcmp(col, "username") != 0) || has_default)
            continue;
        if (strcmp(col, "username") == 0)
            snprintf(v, sizeof(v), "'%s'", name);
        else if (type && strcasestr(type, "INT"))
            snprintf(v, sizeof(v), "0");
        else
            snprintf(v, sizeof(v), "'%s-%s'", name, col);
        snprintf(cols + strlen(cols), sizeof(cols) - strlen(cols), "%s%s", cols[0] ? "," : "", col);
        snprintf(vals + strlen(vals), sizeof(vals) - strlen(vals), "%s%s", vals[0] ? "," : "", v);
    }
    sqlite3_finalize(s);
    snprintf(sql, sizeof(sql), "INSERT INTO users (%s) VALUES (%s)", cols, vals);
    ck_assert_msg(ed_store_exec(st, sql) == 0, "%s: %s", sql, ed_error_last());
    return sqlite3_last_insert_rowid(db);
}

static void setup(void)
{
    char dbpath[300];

    ck_assert_int_eq(ed_crypto_init(), 0);
    snprintf(tmp, sizeof(tmp), "/tmp/eddy-proj-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(tmp));
    snprintf(dbpath, sizeof(dbpath), "%s/eddy.db", tmp);
    snprintf(rootdir, sizeof(rootdir), "%s/projects", tmp);
    ck_assert_msg(ed_store_open(&st, dbpath) == 0, "%s", ed_error_last());
    alice = add_user("alice");
    bob = add_user("bob");
    ck_assert_msg(proj_root_open(&root, st, rootdir, 0) == 0, "%s", ed_error_last());
}

static int rm_entry(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb; (void)flag; (void)ftw;
    return remove(path);
}

static void teardown(void)
{
    proj_root_free(root);
    root = NULL;
    ed_store_close(st);
    st = NULL;
    nftw(tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- helpers ----------------------------------------------------------------- */

static proj *make(int64_t owner, const char *name, proj_visibility vis)
{
    proj *p = NULL;
    usleep(2000);   /* distinct created_at, so "newest first" has one answer */
    ck_assert_msg(proj_create(&p, root, owner, name, "test project", vis) == 0, "%s",
                  ed_error_last());
    return p;
}

static void put(const char *id, const char *path, const char *text)
{
    ck_assert_msg(proj_file_write(NULL, NULL, root, alice, id, path, text, strlen(text)) == 0,
                  "write %s: %s", path, ed_error_last());
}

static char *get(const char *id, const char *path, const char *version)
{
    char *buf = NULL;
    size_t len = 0;
    ck_assert_msg(proj_file_read(&buf, &len, root, alice, id, path, version) == 0, "read %s: %s",
                  path, ed_error_last());
    ck_assert_uint_eq(strlen(buf), len);
    return buf;
}


static bool exists_in(const char *id, const char *rel)
{
    char path[1024];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s/%s", rootdir, id, rel);
    return lstat(path, &sb) == 0;
}

/* ---- ETags and conditional writes ------------------------------------------ */

START_TEST(etag_is_sha256_and_if_match_swaps)
{
    proj *p = make(alice, "cas", PROJ_PRIVATE);
    proj_file *f = NULL;
    char etag[PROJ_ETAG_LEN + 1], want[65], quoted[80], *buf = NULL;
    size_t len = 0;
    bool created = false;

    ck_assert_int_eq(proj_file_write_if(&f, &created, root, alice, p->id, "a.txt", "one", 3, ""), 0);
    ck_assert(created);
    ed_sha256_hex(want, "one", 3);
    ck_assert_str_eq(f->etag, want);
    proj_file_free(f);
    /* "" is create-only */
    ck_assert_int_eq(proj_file_write_if(NULL, NULL, root, alice, p->id, "a.txt", "x", 1, ""), ED_EPRECOND);
    ck_assert_int_eq(proj_file_read_etag(&buf, &len, etag, root, alice, p->id, "a.txt", NULL), 0);
    ck_assert_str_eq(etag, want);
    free(buf);
    ck_assert_int_eq(proj_file_etag(etag, root, alice, p->id, "a.txt"), 0);
    ck_assert_str_eq(etag, want);
    /* the right ETag (bare or quoted) wins, and the old one is then stale */
    snprintf(quoted, sizeof(quoted), "\"%s\"", want);
    ck_assert_int_eq(proj_file_write_if(&f, NULL, root, alice, p->id, "a.txt", "two", 3, quoted), 0);
    ed_sha256_hex(want, "two", 3);
    ck_assert_str_eq(f->etag, want);
    proj_file_free(f);
    ck_assert_int_eq(proj_file_write_if(NULL, NULL, root, alice, p->id, "a.txt", "three", 5, etag),
                     ED_EPRECOND);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), want));   /* names the current ETag */
    buf = get(p->id, "a.txt", NULL);
    ck_assert_str_eq(buf, "two");
    free(buf);
    /* garbage, "*" and a missing file */
    ck_assert_int_eq(proj_file_write_if(NULL, NULL, root, alice, p->id, "a.txt", "z", 1, "W/\"abc\""),
                     ED_EPRECOND);
    ck_assert_int_eq(proj_file_write_if(NULL, NULL, root, alice, p->id, "a.txt", "four", 4, "*"), 0);
    ck_assert_int_eq(proj_file_write_if(NULL, NULL, root, alice, p->id, "new/b.txt", "b", 1, "*"),
                     ED_EPRECOND);
    ck_assert_int_eq(proj_file_write_if(NULL, NULL, root, alice, p->id, "new/b.txt", "b", 1, want),
                     ED_EPRECOND);
    ck_assert(!exists_in(p->id, "new"));   /* the parent it made is gone again */
    /* a version's copy has the same ETag as the bytes */
    {
        proj_version *v = NULL;
        ck_assert_int_eq(proj_version_create(&v, root, alice, p->id, "v"), 0);
        ck_assert_int_eq(proj_file_read_etag(&buf, &len, etag, root, alice, p->id, "a.txt", v->id), 0);
        ed_sha256_hex(want, "four", 4);
        ck_assert_str_eq(etag, want);
        free(buf);
        proj_version_free(v);
    }
    proj_free(p);
}
END_TEST

typedef struct racer {
    const char      *id;
    const char      *etag;
    int              n;
    pthread_barrier_t *go;
    int              result;
} racer;

static void *race(void *arg)
{
    racer *a = arg;
    char text[32];

    snprintf(text, sizeof(text), "writer %d", a->n);
    pthread_barrier_wait(a->go);
    a->result = proj_file_write_if(NULL, NULL, root, alice, a->id, "nb.txt", text, strlen(text),
                                   a->etag);
    return NULL;
}

START_TEST(two_writers_with_one_etag_exactly_one_wins)
{
    proj *p = make(alice, "race", PROJ_PRIVATE);

    for (int round = 0; round < 20; round++) {
        char etag[PROJ_ETAG_LEN + 1], *buf = NULL, want[16];
        size_t len = 0;
        pthread_barrier_t go;
        pthread_t t[2];
        racer a[2];
        int wins = 0, winner = -1;

        put(p->id, "nb.txt", "base");
        ck_assert_int_eq(proj_file_etag(etag, root, alice, p->id, "nb.txt"), 0);
        pthread_barrier_init(&go, NULL, 2);
        for (int i = 0; i < 2; i++) {
            a[i] = (racer){p->id, etag, i, &go, 1};
            ck_assert_int_eq(pthread_create(&t[i], NULL, race, &a[i]), 0);
        }
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
        pthread_barrier_destroy(&go);
        for (int i = 0; i < 2; i++) {
            ck_assert_msg(a[i].result == 0 || a[i].result == ED_EPRECOND, "writer %d: %d", i,
                          a[i].result);
            if (a[i].result == 0)
                wins++, winner = i;
        }
        ck_assert_int_eq(wins, 1);
        ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "nb.txt", NULL), 0);
        snprintf(want, sizeof(want), "writer %d", winner);
        ck_assert_str_eq(buf, want);
        free(buf);
    }
    proj_free(p);
}
END_TEST

START_TEST(write_fd_streams_a_file_and_keeps_the_rules)
{
    proj *p = make(alice, "fd", PROJ_PRIVATE);
    char src[400], want[65], *big, *buf = NULL;
    size_t n = 3 * 1024 * 1024 + 17, len = 0;
    proj_file *f = NULL;
    bool created = false;
    int fd;

    big = malloc(n);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + i % 26);
    snprintf(src, sizeof(src), "%s/src.bin", tmp);
    fd = open(src, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, big, n), (ssize_t)n);
    lseek(fd, 0, SEEK_SET);
    ck_assert_msg(proj_file_write_fd(&f, &created, root, alice, p->id, "out/model.bin", fd,
                                     (int64_t)n) == 0, "%s", ed_error_last());
    ck_assert(created);
    ck_assert_int_eq(f->size, (int64_t)n);
    ed_sha256_hex(want, big, n);
    ck_assert_str_eq(f->etag, want);
    proj_file_free(f);
    ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "out/model.bin", NULL), 0);
    ck_assert_uint_eq(len, n);
    ck_assert(memcmp(buf, big, n) == 0);
    free(buf);
    /* a bad notebook is refused, a non-owner and a bad path too */
    lseek(fd, 0, SEEK_SET);
    ck_assert_int_eq(proj_file_write_fd(NULL, NULL, root, alice, p->id, "x.ipynb", fd, -1),
                     ED_EUNPROC);
    ck_assert(!exists_in(p->id, "x.ipynb"));
    lseek(fd, 0, SEEK_SET);
    ck_assert_int_eq(proj_file_write_fd(NULL, NULL, root, bob, p->id, "b.bin", fd, -1), ED_ENOTFOUND);
    ck_assert_int_eq(proj_file_write_fd(NULL, NULL, root, alice, p->id, "../b.bin", fd, -1), ED_EINVAL);
    close(fd);
    free(big);
    proj_free(p);
}
END_TEST

START_TEST(write_fd_respects_the_storage_limit)
{
    proj_root *small = NULL;
    proj *p = NULL;
    char src[400], dir[400];
    char buf[8000];
    int fd;

    snprintf(dir, sizeof(dir), "%s/small", tmp);
    ck_assert_int_eq(proj_root_open(&small, st, dir, 10000), 0);
    ck_assert_int_eq(proj_create(&p, small, alice, "s", NULL, PROJ_PRIVATE), 0);
    memset(buf, 'x', sizeof(buf));
    snprintf(src, sizeof(src), "%s/src2.bin", tmp);
    fd = open(src, O_RDWR | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_eq(write(fd, buf, sizeof(buf)), (ssize_t)sizeof(buf));
    lseek(fd, 0, SEEK_SET);
    ck_assert_int_eq(proj_file_write_fd(NULL, NULL, small, alice, p->id, "a.bin", fd, 8000), 0);
    lseek(fd, 0, SEEK_SET);
    /* announced too large: refused before copying */
    ck_assert_int_eq(proj_file_write_fd(NULL, NULL, small, alice, p->id, "b.bin", fd, 8000), ED_EQUOTA);
    /* announced small but the bytes are not: refused before the rename */
    lseek(fd, 0, SEEK_SET);
    ck_assert_int_eq(proj_file_write_fd(NULL, NULL, small, alice, p->id, "c.bin", fd, 10), ED_EQUOTA);
    {
        char path[600];
        struct stat sb;
        snprintf(path, sizeof(path), "%s/%s/c.bin", dir, p->id);
        ck_assert_int_ne(lstat(path, &sb), 0);
    }
    close(fd);
    proj_free(p);
    proj_root_free(small);
}
END_TEST


static Suite *workspace_suite(void)
{
    Suite *s = suite_create("projects_workspace");
    TCase *t = tcase_create("workspace");

    tcase_set_timeout(t, 120);
    tcase_add_checked_fixture(t, setup, teardown);
    tcase_add_test(t, etag_is_sha256_and_if_match_swaps);
    tcase_add_test(t, two_writers_with_one_etag_exactly_one_wins);
    tcase_add_test(t, write_fd_streams_a_file_and_keeps_the_rules);
    tcase_add_test(t, write_fd_respects_the_storage_limit);
    suite_add_tcase(s, t);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(workspace_suite());
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
