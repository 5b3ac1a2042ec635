/*
 * test_datasets.c - datasets/ against a real SQLite store and a real data
 * directory: names, access, resumable uploads, dedup, publish atomicity, gc,
 * start-up recovery and the read-only trees.
 */
#include "ds.h"
#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"
#include "unit_util.h"

#include <check.h>
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ALICE 1
#define BOB   2
#define CAROL 3

static char dir[64];
static char data_dir[128];
static ed_store *st;
static ds *d;

static void setup(void)
{
    char db[256];

    snprintf(dir, sizeof(dir), "/tmp/eddy-ds-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data_dir, sizeof(data_dir), "%s", dir);
    snprintf(db, sizeof(db), "%s/eddy.db", dir);
    ck_assert_int_eq(ed_store_open(&st, db), 0);
    ck_assert_int_eq(ed_store_exec(st,
                                   "INSERT INTO users (id, username, email, password_hash, created_at, updated_at) "
                                   "VALUES (1, 'alice', 'a@x', 'x', 0, 0), (2, 'bob', 'b@x', 'x', 0, 0), "
                                   "(3, 'carol', 'c@x', 'x', 0, 0)"),
                     0);
    ck_assert_int_eq(ds_open(&d, st, data_dir, NULL), 0);
}

static void teardown(void)
{
    char cmd[200];

    ds_free(d);
    ed_store_close(st);
    /* trees are 0555: writable again, so an unprivileged run can remove them */
    snprintf(cmd, sizeof(cmd), "chmod -R u+w %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "teardown: %s failed\n", cmd);
    unit_remove_tree(dir);
}

/* ---- helpers ------------------------------------------------------------- */

static ds_dataset *mk(int64_t user, const char *name, ds_visibility vis)
{
    ds_dataset_spec spec = DS_SPEC_KEEP;
    ds_dataset *s = NULL;

    spec.name = name;
    spec.visibility = vis;
    ck_assert_msg(ds_dataset_create(&s, d, user, &spec) == 0, "%s", ed_error_last());
    return s;
}

/* A descriptor reading `n` bytes of `buf` (a pipe for small, a temp file for large). */
static int bytes_fd(const void *buf, size_t n)
{
    char path[200];
    int fd;

    snprintf(path, sizeof(path), "%s/src-XXXXXX", dir);
    ck_assert_int_ge(fd = mkstemp(path), 0);
    unlink(path);
    ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
    ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
    return fd;
}

static void put(int64_t user, const char *id, const char *path, const char *text)
{
    int fd = bytes_fd(text, strlen(text));
    int err = ds_draft_put_fd(NULL, d, user, id, path, fd, NULL, 0);
    close(fd);
    ck_assert_msg(err == 0, "put %s: %s", path, ed_error_last());
}

static int64_t count(const char *sql)
{
    return unit_store_int(st, sql);
}

/* Regular files under DATA/datasets/<sub> (one level of subdirectories). */
static int files_under(const char *sub)
{
    char cmd[300];

    snprintf(cmd, sizeof(cmd), "find %s/datasets/%s -type f | wc -l", data_dir, sub);
    return unit_popen_int(cmd);
}

static bool exists(const char *rel)
{
    char p[800];
    struct stat sb;

    snprintf(p, sizeof(p), "%s/datasets/%s", data_dir, rel);
    return lstat(p, &sb) == 0;
}

static void touch(const char *rel)
{
    char p[800];
    FILE *f;

    snprintf(p, sizeof(p), "%s/datasets/%s", data_dir, rel);
    ck_assert_ptr_nonnull(f = fopen(p, "w"));
    fputs("junk", f);
    fclose(f);
}

/* ---- names --------------------------------------------------------------- */

START_TEST(names_slugs_and_paths_refuse_slash_dotdot_nul_and_controls)
{
    char deep[200] = "";
    ds_dataset_spec spec = DS_SPEC_KEEP;
    ds_dataset *s = NULL;

    ck_assert_int_eq(ds_name_validate("MNIST digits", 12), 0);
    ck_assert_int_eq(ds_name_validate("Données é", strlen("Données é")), 0);
    ck_assert_int_eq(ds_name_validate("a/b", 3), ED_EINVAL);
    ck_assert_int_eq(ds_name_validate("..", 2), ED_EINVAL);
    ck_assert_int_eq(ds_name_validate("a\0b", 3), ED_EINVAL);
    ck_assert_int_eq(ds_name_validate("a\x01" "b", 3), ED_EINVAL);
    ck_assert_int_eq(ds_name_validate("a\x7f", 2), ED_EINVAL);
    ck_assert_int_eq(ds_name_validate("\xc0\xaf", 2), ED_EINVAL);    /* overlong '/' */
    ck_assert_int_eq(ds_name_validate("   ", 3), ED_EINVAL);
    ck_assert_int_eq(ds_name_validate("", 0), ED_EINVAL);

    ck_assert_int_eq(ds_slug_validate("mnist-2024_v1.0", 15), 0);
    ck_assert_int_eq(ds_slug_validate("a/b", 3), ED_EINVAL);
    ck_assert_int_eq(ds_slug_validate("..", 2), ED_EINVAL);
    ck_assert_int_eq(ds_slug_validate("a..b", 4), ED_EINVAL);
    ck_assert_int_eq(ds_slug_validate("-a", 2), ED_EINVAL);
    ck_assert_int_eq(ds_slug_validate("a\0", 2), ED_EINVAL);
    ck_assert_int_eq(ds_slug_validate("a b", 3), ED_EINVAL);

    ck_assert_int_eq(ds_path_validate("train/images/0001.png", 21), 0);
    ck_assert_int_eq(ds_path_validate("../etc/passwd", 13), ED_EINVAL);
    ck_assert_int_eq(ds_path_validate("a/../../b", 9), ED_EINVAL);
    ck_assert_int_eq(ds_path_validate("/etc/passwd", 11), ED_EINVAL);
    ck_assert_int_eq(ds_path_validate("a//b", 4), ED_EINVAL);
    ck_assert_int_eq(ds_path_validate("a/./b", 5), ED_EINVAL);
    ck_assert_int_eq(ds_path_validate("a\0b", 3), ED_EINVAL);
    ck_assert_int_eq(ds_path_validate("a\nb", 3), ED_EINVAL);
    for (int i = 0; i < DS_PATH_DEPTH + 1; i++)
        strcat(deep, "d/");
    strcat(deep, "f");
    ck_assert_int_eq(ds_path_validate(deep, strlen(deep)), ED_EINVAL);

    /* create refuses them too, and writes nothing */
    spec.name = "bad/name";
    ck_assert_int_eq(ds_dataset_create(&s, d, ALICE, &spec), ED_EINVAL);
    spec.name = "ok";
    spec.slug = "../up";
    ck_assert_int_eq(ds_dataset_create(&s, d, ALICE, &spec), ED_EINVAL);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM datasets"), 0);

    /* slug from the name, unique per owner whatever its case */
    s = mk(ALICE, "My Data Set!", DS_PRIVATE);
    ck_assert_str_eq(s->slug, "my-data-set");
    ds_dataset_free(s);
    spec = DS_SPEC_KEEP;
    spec.name = "another";
    spec.slug = "MY-DATA-SET";
    ck_assert_int_eq(ds_dataset_create(&s, d, ALICE, &spec), ED_EEXISTS);
    ck_assert_int_eq(ds_dataset_create(&s, d, BOB, &spec), 0);     /* another owner may */
    ds_dataset_free(s);
    ck_assert_int_eq(ds_dataset_get_by_slug(&s, d, ALICE, ALICE, "My-Data-Set"), 0);
    ck_assert_str_eq(s->name, "My Data Set!");
    ds_dataset_free(s);
    ck_assert_int_eq(ds_dataset_get_by_slug(&s, d, BOB, ALICE, "my-data-set"), ED_ENOTFOUND);   /* private */
    ck_assert_int_eq(ds_dataset_get_by_slug(&s, d, ALICE, ALICE, "../x"), ED_ENOTFOUND);
}
END_TEST

/* ---- access -------------------------------------------------------------- */

static bool listed(int64_t user, const char *id)
{
    ds_dataset_list *l = NULL;
    bool found = false;

    ck_assert_int_eq(ds_dataset_list_get(&l, d, user, NULL), 0);
    for (size_t i = 0; i < l->count; i++)
        found |= strcmp(l->items[i]->id, id) == 0;
    ds_dataset_list_free(l);
    return found;
}

START_TEST(private_unlisted_public_are_seen_by_the_right_users)
{
    ds_dataset *s = mk(ALICE, "secret", DS_PRIVATE), *g = NULL;
    ds_dataset_spec change = DS_SPEC_KEEP;
    const char *tags[] = {"vision", "mnist"};

    /* private: owner and shares only; others get not-found, not forbidden */
    ck_assert_int_eq(ds_dataset_get(&g, d, BOB, s->id), ED_ENOTFOUND);
    ck_assert(!listed(BOB, s->id));
    ck_assert(listed(ALICE, s->id));
    ck_assert_int_eq(ds_share_add(d, BOB, s->id, CAROL), ED_ENOTFOUND);
    ck_assert_int_eq(ds_share_add(d, ALICE, s->id, 99), ED_ENOTFOUND);      /* no such user */
    ck_assert_int_eq(ds_share_add(d, ALICE, s->id, BOB), 0);
    ck_assert_int_eq(ds_share_add(d, ALICE, s->id, BOB), 0);                 /* twice is once */
    ck_assert_int_eq(ds_dataset_get(&g, d, BOB, s->id), 0);
    ck_assert(!g->can_write);
    ds_dataset_free(g);
    ck_assert(listed(BOB, s->id));
    change.name = "mine now";
    ck_assert_int_eq(ds_dataset_update(NULL, d, BOB, s->id, &change), ED_EPERM);
    ck_assert_int_eq(ds_dataset_delete(d, BOB, s->id), ED_EPERM);
    ck_assert_int_eq(ds_dataset_get(&g, d, CAROL, s->id), ED_ENOTFOUND);
    ck_assert_int_eq(ds_share_remove(d, ALICE, s->id, BOB), 0);
    ck_assert_int_eq(ds_dataset_get(&g, d, BOB, s->id), ED_ENOTFOUND);

    /* unlisted: anyone with the id, listed to nobody but the owner */
    change = DS_SPEC_KEEP;
    change.visibility = DS_UNLISTED;
    change.tags = tags;
    change.ntags = 2;
    ck_assert_int_eq(ds_dataset_update(&g, d, ALICE, s->id, &change), 0);
    ck_assert_int_eq(g->visibility, DS_UNLISTED);
    ck_assert_uint_eq(g->ntags, 2);
    ck_assert_str_eq(g->tags[1], "mnist");
    ck_assert_str_eq(g->name, "secret");        /* kept */
    ds_dataset_free(g);
    ck_assert_int_eq(ds_dataset_get(&g, d, CAROL, s->id), 0);
    ds_dataset_free(g);
    ck_assert(!listed(CAROL, s->id));

    /* public: listed to all, searchable by tag and text */
    change = DS_SPEC_KEEP;
    change.visibility = DS_PUBLIC;
    ck_assert_int_eq(ds_dataset_update(NULL, d, ALICE, s->id, &change), 0);
    ck_assert(listed(CAROL, s->id));
    {
        ds_list_query q = {.tag = "vision"};
        ds_dataset_list *l = NULL;
        ck_assert_int_eq(ds_dataset_list_get(&l, d, CAROL, &q), 0);
        ck_assert_uint_eq(l->count, 1);
        ds_dataset_list_free(l);
        q.tag = "audio";
        ck_assert_int_eq(ds_dataset_list_get(&l, d, CAROL, &q), 0);
        ck_assert_uint_eq(l->count, 0);
        ds_dataset_list_free(l);
        q = (ds_list_query){.q = "ecr"};
        ck_assert_int_eq(ds_dataset_list_get(&l, d, CAROL, &q), 0);
        ck_assert_uint_eq(l->count, 1);
        ds_dataset_list_free(l);
        q = (ds_list_query){.q = "%"};          /* a pattern character is literal */
        ck_assert_int_eq(ds_dataset_list_get(&l, d, CAROL, &q), 0);
        ck_assert_uint_eq(l->count, 0);
        ds_dataset_list_free(l);
    }
    /* reading is not writing */
    {
        int fd = bytes_fd("x", 1);
        ck_assert_int_eq(ds_draft_put_fd(NULL, d, CAROL, s->id, "x.txt", fd, NULL, 0), ED_EPERM);
        close(fd);
    }
    ds_dataset_free(s);
}
END_TEST

/* ---- uploads ------------------------------------------------------------- */

#define UP_SIZE (3 * 1024 * 1024 + 17)

static unsigned char *random_bytes(size_t n, unsigned seed)
{
    unsigned char *b = malloc(n);
    ck_assert_ptr_nonnull(b);
    srand(seed);
    for (size_t i = 0; i < n; i++)
        b[i] = (unsigned char)rand();
    return b;
}

/* Write [from, to) of buf as chunks of odd sizes. */
static void write_range(ds_upload_chunk *c, const unsigned char *buf, size_t from, size_t to)
{
    while (from < to) {
        size_t n = to - from < 70001 ? to - from : 70001;
        ck_assert_int_eq(ds_upload_chunk_write(c, buf + from, n), 0);
        from += n;
    }
}

START_TEST(upload_in_chunks_resumes_after_a_dropped_chunk)
{
    ds_dataset *s = mk(ALICE, "big", DS_PRIVATE);
    unsigned char *buf = random_bytes(UP_SIZE, 7);
    char sha[65], up[DS_ID_LEN];
    ds_upload_chunk *c = NULL, *c2 = NULL;
    int64_t off = -1, size = -1;
    bool done = true;
    ds_file f = {0};
    ds_file_list *draft = NULL;

    ed_sha256_hex(sha, buf, UP_SIZE);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "data/big.bin", UP_SIZE, sha, 0), 0);
    ck_assert_int_eq(ds_upload_status(&off, &size, d, ALICE, up), 0);
    ck_assert_int_eq(off, 0);
    ck_assert_int_eq(size, UP_SIZE);
    ck_assert_int_eq(ds_upload_status(&off, &size, d, BOB, up), ED_ENOTFOUND);   /* another user's */

    /* first chunk: 1 MiB */
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 0), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c2, d, ALICE, up, 0), ED_ECONFLICT);  /* one at a time */
    write_range(c, buf, 0, 1 << 20);
    ck_assert_int_eq(ds_upload_chunk_end(&off, &done, NULL, c), 0);
    ck_assert_int_eq(off, 1 << 20);
    ck_assert(!done);

    /* second chunk: the connection drops half way (different bytes than
     * the real ones, so a resume that kept them would fail the hash) */
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 1 << 20), 0);
    {
        unsigned char *junk = random_bytes(500000, 99);
        ck_assert_int_eq(ds_upload_chunk_write(c, junk, 500000), 0);
        free(junk);
    }
    ds_upload_chunk_abort(c);
    ck_assert_int_eq(ds_upload_status(&off, NULL, d, ALICE, up), 0);
    ck_assert_int_eq(off, 1 << 20);

    /* a chunk that skips or overlaps is refused and changes nothing */
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 2 << 20), ED_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "continue from 1048576"));
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 1000), ED_ECONFLICT);
    ck_assert_int_eq(ds_upload_status(&off, NULL, d, ALICE, up), 0);
    ck_assert_int_eq(off, 1 << 20);

    /* the resume cuts off what the dropped chunk left; the rest; one byte
     * too many is refused */
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 1 << 20), 0);
    {
        char p[300];
        struct stat sb;
        snprintf(p, sizeof(p), "%s/datasets/uploads/%s", data_dir, up);
        ck_assert_int_eq(stat(p, &sb), 0);
        ck_assert_int_eq(sb.st_size, 1 << 20);
    }
    write_range(c, buf, 1 << 20, UP_SIZE);
    ck_assert_int_eq(ds_upload_chunk_write(c, buf, 1), ED_ETOOBIG);
    ds_upload_chunk_abort(c);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 1 << 20), 0);
    write_range(c, buf, 1 << 20, UP_SIZE);
    ck_assert_msg(ds_upload_chunk_end(&off, &done, &f, c) == 0, "%s", ed_error_last());
    ck_assert(done);
    ck_assert_int_eq(off, UP_SIZE);
    ck_assert_str_eq(f.sha256, sha);
    ck_assert_str_eq(f.path, "data/big.bin");
    free(f.path);

    /* finished: the upload is gone, the file is a blob in the draft */
    ck_assert_int_eq(ds_upload_status(&off, NULL, d, ALICE, up), ED_ENOTFOUND);
    ck_assert_int_eq(files_under("uploads"), 0);
    ck_assert_int_eq(ds_draft_list(&draft, d, ALICE, s->id), 0);
    ck_assert_uint_eq(draft->count, 1);
    ck_assert_str_eq(draft->items[0].sha256, sha);
    ck_assert_int_eq(draft->items[0].size, UP_SIZE);
    ds_file_list_free(draft);
    {
        char rel[200];
        snprintf(rel, sizeof(rel), "blobs/%.2s/%s", sha, sha);
        ck_assert(exists(rel));
    }
    free(buf);
    ds_dataset_free(s);
}
END_TEST

START_TEST(upload_with_a_wrong_sha256_is_refused_and_discarded)
{
    ds_dataset *s = mk(ALICE, "wrong", DS_PRIVATE);
    const char *text = "id,label\n1,cat\n";
    char declared[65], actual[65], up[DS_ID_LEN];
    ds_upload_chunk *c = NULL;
    bool done = true;

    ed_sha256_hex(declared, "something else", 14);
    ed_sha256_hex(actual, text, strlen(text));
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "a.csv", 5, "xyz", 0), ED_EINVAL);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "../a.csv", 5, declared, 0), ED_EINVAL);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "a.csv", (int64_t)strlen(text), declared, 0), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 0), 0);
    ck_assert_int_eq(ds_upload_chunk_write(c, text, strlen(text)), 0);
    ck_assert_int_eq(ds_upload_chunk_end(NULL, &done, NULL, c), ED_EINVAL);
    ck_assert(!done);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), declared));
    ck_assert_ptr_nonnull(strstr(ed_error_last(), actual));
    ck_assert_int_eq(ds_upload_status(&(int64_t){0}, NULL, d, ALICE, up), ED_ENOTFOUND);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_draft_files"), 0);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_blobs"), 0);
    ck_assert_int_eq(files_under("uploads"), 0);
    ck_assert_int_eq(files_under("blobs"), 0);
    ds_dataset_free(s);
}
END_TEST

START_TEST(uploads_are_bounded_by_the_file_limit_and_the_quota)
{
    ds_dataset *s = mk(ALICE, "bounded", DS_PRIVATE);
    char sha[65], up[DS_ID_LEN];
    ds_limits lim = {1000, 1000};
    ds_gc_stats gs;

    ed_sha256_hex(sha, "", 0);
    put(ALICE, s->id, "a.txt", "0123456789");
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "b.bin", 100, sha, 105), ED_EQUOTA);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "b.bin", 95, sha, 105), 0);
    /* expired by gc once idle past the TTL */
    ck_assert_int_eq(ds_gc(&gs, d, INT64_C(1) << 60), 0);
    ck_assert_int_eq(gs.uploads_expired, 1);
    ck_assert_int_eq(ds_upload_status(&(int64_t){0}, NULL, d, ALICE, up), ED_ENOTFOUND);
    ck_assert_int_eq(files_under("uploads"), 0);

    ds_free(d);
    ck_assert_int_eq(ds_open(&d, st, data_dir, &lim), 0);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "b.bin", 1001, sha, 0), ED_ETOOBIG);
    {
        char big[1001];
        int fd;
        memset(big, 'x', sizeof(big));
        fd = bytes_fd(big, sizeof(big));
        ck_assert_int_eq(ds_draft_put_fd(NULL, d, ALICE, s->id, "big.txt", fd, NULL, 0), ED_ETOOBIG);
        close(fd);
    }
    ck_assert_int_eq(files_under("tmp"), 0);
    ds_dataset_free(s);
}
END_TEST

/* ---- dedup, publish ------------------------------------------------------ */

START_TEST(same_bytes_are_stored_once_and_a_new_version_stores_only_what_changed)
{
    ds_dataset *a = mk(ALICE, "a", DS_PRIVATE), *b = mk(BOB, "b", DS_PRIVATE);
    ds_version *v = NULL;
    char name[40], text[80];
    int64_t usage = 0;

    put(ALICE, a->id, "same.txt", "identical bytes");
    put(BOB, b->id, "copy/same.txt", "identical bytes");
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_blobs"), 1);
    ck_assert_int_eq(files_under("blobs"), 1);
    ck_assert_int_eq(ds_draft_remove(d, ALICE, a->id, "same.txt"), 0);

    for (int i = 0; i < 100; i++) {
        snprintf(name, sizeof(name), "part/%03d.csv", i);
        snprintf(text, sizeof(text), "x,y\n%d,%d\n", i, i * i);
        put(ALICE, a->id, name, text);
    }
    ck_assert_msg(ds_version_publish(&v, d, ALICE, a->id, "100 files", NULL) == 0, "%s", ed_error_last());
    ck_assert_int_eq(v->number, 1);
    ck_assert_int_eq(v->file_count, 100);
    ck_assert_uint_eq(v->files->count, 100);
    ds_version_free(v);
    /* unchanged draft: nothing to publish */
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, a->id, "again", NULL), ED_EUNPROC);
    int64_t before = count("SELECT COUNT(*) FROM dataset_blobs");
    put(ALICE, a->id, "part/042.csv", "x,y\n42,0\n");
    ck_assert_int_eq(ds_version_publish(&v, d, ALICE, a->id, "fix row 42", "{\"job_id\":\"j1\"}"), 0);
    ck_assert_int_eq(v->number, 2);
    ck_assert_int_eq(v->file_count, 100);
    ck_assert_str_eq(v->source, "{\"job_id\":\"j1\"}");
    ds_version_free(v);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_blobs") - before, 1);
    ck_assert_int_eq(files_under("blobs"), 102);      /* 100 + the changed one + "identical bytes" */

    /* usage counts each blob once, whatever references it */
    ck_assert_int_eq(ds_usage_bytes(&usage, d, ALICE), 0);
    ck_assert_int_eq(usage, count("SELECT SUM(size) FROM dataset_blobs WHERE sha256 IN (SELECT sha256 FROM "
                                  "dataset_files WHERE dataset_id IN (SELECT id FROM datasets WHERE owner_id = 1))"));
    {
        ds_version *v1 = NULL;
        ck_assert_int_eq(ds_version_get(&v1, d, ALICE, a->id, 1), 0);
        ck_assert_int_eq(usage, v1->size_bytes + 9);   /* v1 plus the one new file */
        ds_version_free(v1);
    }
    ds_dataset_free(a);
    ds_dataset_free(b);
}
END_TEST

START_TEST(a_publish_that_fails_before_commit_leaves_no_version_and_the_draft_intact)
{
    ds_dataset *s = mk(ALICE, "atomic", DS_PRIVATE);
    ds_version *v = NULL;
    ds_file_list *draft = NULL;

    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, s->id, "empty", NULL), ED_EUNPROC);
    put(ALICE, s->id, "a.txt", "a");
    put(ALICE, s->id, "b/c.txt", "c");
    ds__fail_publish_before_commit(true);
    ck_assert_int_eq(ds_version_publish(&v, d, ALICE, s->id, "boom", NULL), ED_EIO);
    ds__fail_publish_before_commit(false);
    ck_assert_ptr_null(v);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_versions"), 0);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_files"), 0);
    ck_assert_int_eq(count("SELECT version_seq FROM datasets"), 0);
    ck_assert_int_eq(ds_version_get(&v, d, ALICE, s->id, 0), ED_ENOTFOUND);
    ck_assert_int_eq(ds_draft_list(&draft, d, ALICE, s->id), 0);
    ck_assert_uint_eq(draft->count, 2);
    ds_file_list_free(draft);

    ck_assert_int_eq(ds_version_publish(&v, d, ALICE, s->id, "ok", NULL), 0);
    ck_assert_int_eq(v->number, 1);
    ck_assert_int_eq(v->size_bytes, 2);
    ds_version_free(v);
    ds_dataset_free(s);
}
END_TEST

/* ---- delete, gc, recovery ------------------------------------------------ */

static int hook(char *why, size_t len, const char *id, int64_t number, void *payload)
{
    const char *busy = payload;
    if (strcmp(id, busy) == 0 && (number == 0 || number == 1)) {
        snprintf(why, len, "running job 42");
        return 1;
    }
    return 0;
}

START_TEST(versions_in_use_cannot_be_deleted_and_numbers_are_never_reused)
{
    ds_dataset *s = mk(ALICE, "pinned", DS_PUBLIC);
    ds_version *v = NULL;

    put(ALICE, s->id, "a.txt", "1");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, s->id, "v1", NULL), 0);
    put(ALICE, s->id, "a.txt", "2");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, s->id, "v2", NULL), 0);
    ds_in_use_fn_set(d, hook, s->id);
    ck_assert_int_eq(ds_version_delete(d, ALICE, s->id, 1), ED_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "running job 42"));
    ck_assert_int_eq(ds_dataset_delete(d, ALICE, s->id), ED_ECONFLICT);
    ds_in_use_fn_set(d, NULL, NULL);

    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO project_datasets (project_id, dataset_id, version, created_at) "
                                       "SELECT 'pAAAA', id, 1, 0 FROM datasets"), 0);
    ck_assert_int_eq(ds_version_delete(d, ALICE, s->id, 1), ED_ECONFLICT);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), "pAAAA"));
    ck_assert_int_eq(ds_version_delete(d, BOB, s->id, 2), ED_EPERM);
    ck_assert_int_eq(ds_version_delete(d, ALICE, s->id, 2), 0);
    ck_assert_int_eq(ds_version_get(&v, d, BOB, s->id, 2), ED_ENOTFOUND);
    ck_assert_int_eq(ds_version_get(&v, d, BOB, s->id, 0), 0);      /* the latest is 1 again */
    ck_assert_int_eq(v->number, 1);
    ds_version_free(v);
    put(ALICE, s->id, "a.txt", "3");
    ck_assert_int_eq(ds_version_publish(&v, d, ALICE, s->id, "v3", NULL), 0);
    ck_assert_int_eq(v->number, 3);
    ds_version_free(v);
    ds_dataset_free(s);
}
END_TEST

START_TEST(gc_after_delete_frees_only_blobs_nothing_references)
{
    ds_dataset *a = mk(ALICE, "a", DS_PRIVATE), *b = mk(ALICE, "b", DS_PRIVATE);
    ds_gc_stats gs;
    char *tree = NULL;
    int fd = -1;
    ds_file f = {0};
    char buf[32] = "";

    put(ALICE, a->id, "shared.txt", "shared");
    put(ALICE, a->id, "only-a.txt", "only in a");
    put(ALICE, b->id, "shared.txt", "shared");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, a->id, "a", NULL), 0);
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, b->id, "b", NULL), 0);
    ck_assert_int_eq(ds_version_tree(&tree, d, ALICE, a->id, 1), 0);
    free(tree);
    ck_assert_int_eq(ds_gc(&gs, d, 0), 0);
    ck_assert_int_eq(gs.blobs_freed, 0);

    ck_assert_int_eq(ds_dataset_delete(d, ALICE, a->id), 0);
    ck_assert(!exists(a->id));
    ck_assert_int_eq(ds_gc(&gs, d, 0), 0);
    ck_assert_int_eq(gs.blobs_freed, 1);
    ck_assert_int_eq(gs.bytes_freed, 9);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_blobs"), 1);
    ck_assert_int_eq(files_under("blobs"), 1);
    ck_assert_int_eq(ds_version_file_open(&fd, &f, d, ALICE, b->id, 0, "shared.txt"), 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), 6);
    ck_assert_str_eq(buf, "shared");
    close(fd);
    free(f.path);

    /* a draft's file is live too, until it leaves the draft */
    put(ALICE, b->id, "draft-only.txt", "draft");
    ck_assert_int_eq(ds_gc(&gs, d, 0), 0);
    ck_assert_int_eq(gs.blobs_freed, 0);
    ck_assert_int_eq(ds_draft_remove(d, ALICE, b->id, "draft-only.txt"), 0);
    ck_assert_int_eq(ds_gc(&gs, d, 0), 0);
    ck_assert_int_eq(gs.blobs_freed, 1);
    ds_dataset_free(a);
    ds_dataset_free(b);
}
END_TEST

START_TEST(start_up_recovery_removes_temporary_files_and_orphans)
{
    ds_dataset *s = mk(ALICE, "r", DS_PRIVATE);
    ds_recover_stats rs;
    char *tree = NULL;
    char orphan[65], missing[65];
    char rel[200];

    put(ALICE, s->id, "kept.txt", "kept");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, s->id, "v1", NULL), 0);
    ck_assert_int_eq(ds_version_tree(&tree, d, ALICE, s->id, 1), 0);
    free(tree);

    /* what a crash leaves: a half-written blob, a half-built tree, a blob
     * placed before its row committed, an upload file without its row, the
     * tree of a version that never committed, a dataset gone */
    touch("tmp/put-half");
    snprintf(rel, sizeof(rel), "%s/datasets/trees/.tmp-x", data_dir);
    ck_assert_int_eq(mkdir(rel, 0755), 0);
    touch("trees/.tmp-x/f");
    ed_sha256_hex(orphan, "orphan", 6);
    snprintf(rel, sizeof(rel), "%s/datasets/blobs/%.2s", data_dir, orphan);
    mkdir(rel, 0755);
    snprintf(rel, sizeof(rel), "blobs/%.2s/%s", orphan, orphan);
    touch(rel);
    touch("uploads/11111111-2222-3333-4444-555555555555");
    snprintf(rel, sizeof(rel), "%s/datasets/trees/%s/7", data_dir, s->id);
    ck_assert_int_eq(mkdir(rel, 0555), 0);
    snprintf(rel, sizeof(rel), "%s/datasets/trees/gone-dataset", data_dir);
    ck_assert_int_eq(mkdir(rel, 0755), 0);
    /* and a row whose file the disk lost: logged, never dropped */
    ed_sha256_hex(missing, "missing", 7);
    snprintf(rel, sizeof(rel), "INSERT INTO dataset_blobs VALUES ('%s', 7, 'text/plain', 0)", missing);
    ck_assert_int_eq(ed_store_exec(st, rel), 0);

    ck_assert_int_eq(ds_recover(&rs, d), 0);
    ck_assert_int_eq(rs.tmp_removed, 1);
    ck_assert_int_eq(rs.orphan_blobs, 1);
    ck_assert_int_eq(rs.orphan_uploads, 1);
    ck_assert_int_eq(rs.orphan_trees, 3);      /* .tmp-x, version 7, gone-dataset */
    ck_assert_int_eq(rs.missing_blobs, 1);
    ck_assert_int_eq(files_under("tmp"), 0);
    ck_assert_int_eq(files_under("uploads"), 0);
    ck_assert(!exists("trees/.tmp-x"));
    ck_assert(!exists("trees/gone-dataset"));
    snprintf(rel, sizeof(rel), "blobs/%.2s/%s", orphan, orphan);
    ck_assert(!exists(rel));
    snprintf(rel, sizeof(rel), "trees/%s/1/kept.txt", s->id);
    ck_assert(exists(rel));                    /* a real version's tree stays */
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_blobs"), 2);   /* the missing one's row is kept */

    /* a removed tree is rebuilt when asked for */
    snprintf(rel, sizeof(rel), "%s/datasets/trees/%s", data_dir, s->id);
    {
        char cmd[500];
        snprintf(cmd, sizeof(cmd), "chmod -R u+w %s && rm -rf %s", rel, rel);
        ck_assert_int_eq(system(cmd), 0);
    }
    ck_assert_int_eq(ds_version_tree(&tree, d, ALICE, s->id, 0), 0);
    free(tree);
    snprintf(rel, sizeof(rel), "trees/%s/1/kept.txt", s->id);
    ck_assert(exists(rel));
    ds_dataset_free(s);
}
END_TEST

/* ---- trees --------------------------------------------------------------- */

START_TEST(a_version_tree_is_hard_links_read_only)
{
    ds_dataset *s = mk(ALICE, "tree", DS_PUBLIC);
    char *tree = NULL, p[600], blob[600];
    struct stat sb, bb;
    ds_file f = {0};
    int fd;

    put(ALICE, s->id, "train/images/0001.txt", "pixels");
    put(ALICE, s->id, "labels.csv", "id,label\n1,7\n");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, s->id, "v1", NULL), 0);
    ck_assert_int_eq(ds_version_tree(&tree, d, CAROL, s->id, 1), 0);     /* public: anyone */

    snprintf(p, sizeof(p), "%s/train/images/0001.txt", tree);
    ck_assert_int_eq(lstat(p, &sb), 0);
    ck_assert(S_ISREG(sb.st_mode));
    ck_assert_int_eq(sb.st_mode & 07777, 0444);
    ck_assert_int_ge(sb.st_nlink, 2);
    ck_assert_int_eq(ds_version_file_open(&fd, &f, d, CAROL, s->id, 1, "train/images/0001.txt"), 0);
    snprintf(blob, sizeof(blob), "%s/datasets/blobs/%.2s/%s", data_dir, f.sha256, f.sha256);
    close(fd);
    free(f.path);
    ck_assert_int_eq(stat(blob, &bb), 0);
    ck_assert_int_eq(bb.st_ino, sb.st_ino);       /* the blob itself: no copy */
    ck_assert_int_eq(stat(tree, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0555);
    snprintf(p, sizeof(p), "%s/train/images", tree);
    ck_assert_int_eq(stat(p, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 07777, 0555);

    /* an unprivileged writer (a kernel's user) can neither change a file nor add one */
    if (geteuid() == 0) {
        int e = 0;
        snprintf(p, sizeof(p), "%s/labels.csv", tree);
        ck_assert_int_eq(unit_write_as_nobody(p, 10, &e), 0);
        ck_assert_int_ne(e, 0);
        snprintf(p, sizeof(p), "%s/new.txt", tree);
        ck_assert_int_eq(unit_write_as_nobody(p, 10, &e), 0);
        ck_assert_int_ne(e, 0);
    } else {
        /* not root: this process is such a writer itself */
        snprintf(p, sizeof(p), "%s/labels.csv", tree);
        ck_assert_int_lt(open(p, O_WRONLY), 0);
        snprintf(p, sizeof(p), "%s/new.txt", tree);
        ck_assert_int_lt(open(p, O_WRONLY | O_CREAT, 0644), 0);
        fprintf(stderr, "a_version_tree_is_hard_links_read_only: not root, writes tried as this user, not nobody\n");
    }
    {
        char *again = NULL;
        ck_assert_int_eq(ds_version_tree(&again, d, ALICE, s->id, 0), 0);
        ck_assert_str_eq(again, tree);
        free(again);
    }
    free(tree);
    ds_dataset_free(s);
}
END_TEST

START_TEST(a_hostile_path_in_the_draft_never_escapes_the_tree)
{
    ds_dataset *s = mk(ALICE, "hostile", DS_PUBLIC);
    char sql[600], *tree = NULL;
    ds_file_list *draft = NULL;

    put(ALICE, s->id, "ok.txt", "ok");
    ck_assert_int_eq(ds_draft_list(&draft, d, ALICE, s->id), 0);
    /* rows no API lets in, as a corrupted or hand-edited store might hold */
    snprintf(sql, sizeof(sql),
             "INSERT INTO dataset_draft_files VALUES ('%s', '../../escaped.txt', '%s', 2, 'text/plain', 0)", s->id,
             draft->items[0].sha256);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    ds_file_list_free(draft);
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, s->id, "v1", NULL), 0);
    ck_assert_int_eq(ds_version_tree(&tree, d, ALICE, s->id, 1), ED_EINVAL);
    ck_assert_ptr_null(tree);
    ck_assert(!exists("escaped.txt"));
    ck_assert(!exists("trees/escaped.txt"));
    ck_assert_int_eq(unit_popen_int("find /tmp -maxdepth 3 -name escaped.txt 2>/dev/null | wc -l"), 0);
    snprintf(sql, sizeof(sql), "trees/%s/1", s->id);
    ck_assert(!exists(sql));
    {
        char cmd[300];
        snprintf(cmd, sizeof(cmd), "ls -A %s/datasets/trees | grep -c tmp", data_dir);
        ck_assert_int_eq(unit_popen_int(cmd), 0);     /* the half tree is gone */
    }
    /* a path through the API is refused before it is stored */
    {
        int fd = bytes_fd("x", 1);
        ck_assert_int_eq(ds_draft_put_fd(NULL, d, ALICE, s->id, "a/../../x", fd, NULL, 0), ED_EINVAL);
        /* and a file where a directory is, or the other way round */
        ck_assert_int_eq(ds_draft_put_fd(NULL, d, ALICE, s->id, "ok.txt/inner", fd, NULL, 0), ED_ECONFLICT);
        put(ALICE, s->id, "dir/sub/f.txt", "f");
        put(ALICE, s->id, "dir.txt", "beside, not inside");
        put(ALICE, s->id, "dir0", "beside, not inside");
        ck_assert_int_eq(lseek(fd, 0, SEEK_SET), 0);
        ck_assert_int_eq(ds_draft_put_fd(NULL, d, ALICE, s->id, "dir/sub", fd, NULL, 0), ED_ECONFLICT);
        ck_assert_int_eq(ds_draft_put_fd(NULL, d, ALICE, s->id, "dir", fd, NULL, 0), ED_ECONFLICT);
        close(fd);
    }
    ds_dataset_free(s);
}
END_TEST

START_TEST(an_upload_survives_a_restart_at_its_durable_offset)
{
    ds_dataset *s = mk(ALICE, "restart", DS_PRIVATE);
    unsigned char *buf = random_bytes(200000, 3);
    char sha[65], up[DS_ID_LEN];
    ds_upload_chunk *c = NULL;
    int64_t off = -1;
    bool done = false;

    ed_sha256_hex(sha, buf, 200000);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "r.bin", 200000, sha, 0), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 0), 0);
    write_range(c, buf, 0, 120000);
    ck_assert_int_eq(ds_upload_chunk_end(&off, NULL, NULL, c), 0);
    /* a chunk in flight when the server dies: never ended */
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 120000), 0);
    write_range(c, buf, 120000, 150000);
    ds_upload_chunk_abort(c);
    ds_free(d);
    d = NULL;
    ck_assert_int_eq(ds_open(&d, st, data_dir, NULL), 0);      /* recovery keeps a live upload */
    ck_assert_int_eq(ds_upload_status(&off, NULL, d, ALICE, up), 0);
    ck_assert_int_eq(off, 120000);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 120000), 0);
    write_range(c, buf, 120000, 200000);
    ck_assert_msg(ds_upload_chunk_end(&off, &done, NULL, c) == 0, "%s", ed_error_last());
    ck_assert(done);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_draft_files"), 1);
    free(buf);
    ds_dataset_free(s);
}
END_TEST

/* The hash state goes with the durable offset: after a restart the upload
 * finishes without reading its file again, and a state that is missing or
 * saved for another offset is rebuilt from the file; a wrong byte in an
 * early chunk (hashed as it came) still fails the check at the end. */
START_TEST(an_upload_hash_state_follows_the_offset_and_is_rebuilt_when_missing)
{
    ds_dataset *s = mk(ALICE, "hashes", DS_PRIVATE);
    unsigned char *buf = random_bytes(300000, 4);
    char sha[65], up[DS_ID_LEN], sql[200];
    ds_upload_chunk *c = NULL;
    int64_t off = -1;
    bool done = false;

    ed_sha256_hex(sha, buf, 300000);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "h.bin", 300000, sha, 0), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 0), 0);
    write_range(c, buf, 0, 100000);
    ck_assert_int_eq(ds_upload_chunk_end(&off, NULL, NULL, c), 0);
    snprintf(sql, sizeof(sql), "SELECT length(hash_state) > 0 FROM dataset_uploads WHERE id = '%s'", up);
    ck_assert_int_eq(count(sql), 1);
    /* no state: rebuilt from the durable prefix */
    snprintf(sql, sizeof(sql), "UPDATE dataset_uploads SET hash_state = NULL WHERE id = '%s'", up);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    ds_free(d);
    d = NULL;
    ck_assert_int_eq(ds_open(&d, st, data_dir, NULL), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 100000), 0);
    write_range(c, buf, 100000, 200000);
    ck_assert_int_eq(ds_upload_chunk_end(&off, NULL, NULL, c), 0);
    /* a state saved for another offset (the row's offset moved back): ignored */
    snprintf(sql, sizeof(sql), "UPDATE dataset_uploads SET durable_offset = 100000 WHERE id = '%s'", up);
    ck_assert_int_eq(ed_store_exec(st, sql), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 100000), 0);
    write_range(c, buf, 100000, 300000);
    ck_assert_msg(ds_upload_chunk_end(&off, &done, NULL, c) == 0, "%s", ed_error_last());
    ck_assert(done);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_draft_files WHERE path = 'h.bin'"), 1);
    /* a byte of the first chunk differs from the declared file: refused at the end */
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "l.bin", 300000, sha, 0), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 0), 0);
    buf[0] ^= 1;
    write_range(c, buf, 0, 100000);
    buf[0] ^= 1;
    ck_assert_int_eq(ds_upload_chunk_end(&off, NULL, NULL, c), 0);
    ck_assert_int_eq(ds_upload_chunk_begin(&c, d, ALICE, up, 100000), 0);
    write_range(c, buf, 100000, 300000);
    ck_assert_int_eq(ds_upload_chunk_end(&off, &done, NULL, c), ED_EINVAL);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_draft_files WHERE path = 'l.bin'"), 0);
    free(buf);
    ds_dataset_free(s);
}
END_TEST

/* Usage counts distinct blobs: bytes the owner holds already cost nothing
 * more, for a put and for an upload of a declared hash. */
START_TEST(the_quota_charges_a_blob_the_owner_holds_once)
{
    ds_dataset *s = mk(ALICE, "quota-dedup", DS_PRIVATE);
    char sha[65], up[DS_ID_LEN];
    int64_t used = -1;
    int fd;

    put(ALICE, s->id, "a.txt", "0123456789");               /* 10 bytes held */
    fd = bytes_fd("0123456789", 10);
    ck_assert_int_eq(ds_draft_put_fd(NULL, d, ALICE, s->id, "copy.txt", fd, NULL, 15), 0);
    close(fd);
    fd = bytes_fd("abcdefghij", 10);
    ck_assert_int_eq(ds_draft_put_fd(NULL, d, ALICE, s->id, "new.txt", fd, NULL, 15), ED_EQUOTA);
    close(fd);
    ed_sha256_hex(sha, "0123456789", 10);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "up.txt", 10, sha, 15), 0);
    ed_sha256_hex(sha, "abcdefghij", 10);
    ck_assert_int_eq(ds_upload_open(up, d, ALICE, s->id, "up2.txt", 10, sha, 15), ED_EQUOTA);
    ck_assert_int_eq(ds_usage_bytes(&used, d, ALICE), 0);
    ck_assert_int_eq(used, 10);
    ds_dataset_free(s);
}
END_TEST

/* Writers putting the same bytes into several datasets while gc runs: no
 * draft file may end up naming a blob whose file or row gc removed. */
typedef struct put_arg {
    char id[DS_ID_LEN];
    int64_t user;
    int failures;
} put_arg;

static void *put_thread(void *p)
{
    put_arg *a = p;
    char name[40], text[40];

    /* few contents, each often dead (its only file removed) and put again:
     * the case where a writer deduplicates against a blob gc is freeing */
    for (int i = 0; i < 200; i++) {
        int fd;
        snprintf(name, sizeof(name), "f%d.txt", i % 3);
        snprintf(text, sizeof(text), "content %d", (i / 2) % 4);
        fd = bytes_fd(text, strlen(text));
        if (ds_draft_put_fd(NULL, d, a->user, a->id, name, fd, NULL, 0) < 0)
            a->failures++;
        close(fd);
        if (i % 2)
            ds_draft_remove(d, a->user, a->id, name);
    }
    return NULL;
}

static volatile int gc_stop;

static void *gc_thread(void *p)
{
    int *failures = p;
    while (!gc_stop)
        if (ds_gc(NULL, d, 0) < 0)
            (*failures)++;
    return NULL;
}

START_TEST(concurrent_puts_and_gc_never_lose_a_referenced_blob)
{
    put_arg args[4];
    pthread_t th[4], g;
    int gc_failures = 0;
    sqlite3_stmt *q = NULL;

    for (int i = 0; i < 4; i++) {
        char nm[20];
        ds_dataset *s;
        snprintf(nm, sizeof(nm), "conc%d", i);
        s = mk(ALICE, nm, DS_PRIVATE);
        memset(&args[i], 0, sizeof(args[i]));
        memcpy(args[i].id, s->id, DS_ID_LEN);
        args[i].user = ALICE;
        ds_dataset_free(s);
    }
    gc_stop = 0;
    ck_assert_int_eq(pthread_create(&g, NULL, gc_thread, &gc_failures), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_int_eq(pthread_create(&th[i], NULL, put_thread, &args[i]), 0);
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        ck_assert_int_eq(args[i].failures, 0);
    }
    gc_stop = 1;
    pthread_join(g, NULL);
    ck_assert_int_eq(gc_failures, 0);
    ck_assert_int_eq(ds_gc(NULL, d, 0), 0);
    /* every referenced blob has its row (FK) and its file */
    ck_assert_int_eq(ed_store_prepare(&q, st, "SELECT DISTINCT sha256 FROM dataset_draft_files"), 0);
    while (sqlite3_step(q) == SQLITE_ROW) {
        char rel[200];
        const char *sha = (const char *)sqlite3_column_text(q, 0);
        snprintf(rel, sizeof(rel), "blobs/%.2s/%s", sha, sha);
        ck_assert_msg(exists(rel), "blob %s is gone", sha);
    }
    sqlite3_finalize(q);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_blobs"),
                     count("SELECT COUNT(DISTINCT sha256) FROM dataset_draft_files"));
    ck_assert_int_eq(files_under("blobs"), count("SELECT COUNT(*) FROM dataset_blobs"));
}
END_TEST

START_TEST(a_project_mounts_visible_datasets_with_latest_resolved_at_start)
{
    ds_dataset *pub = mk(ALICE, "public-one", DS_PUBLIC), *priv = mk(ALICE, "private-one", DS_PRIVATE);
    ds_dataset *empty = mk(BOB, "empty", DS_PUBLIC);
    ds_attachment items[2], *got = NULL;
    ds_mount *m = NULL;
    size_t n = 0;

    put(ALICE, pub->id, "a.txt", "v1");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, pub->id, "v1", NULL), 0);
    put(ALICE, priv->id, "s.txt", "secret");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, priv->id, "v1", NULL), 0);

    /* bob may not mount alice's private dataset, nor a version that is not there */
    memcpy(items[0].dataset_id, pub->id, DS_ID_LEN);
    items[0].version = 0;
    memcpy(items[1].dataset_id, priv->id, DS_ID_LEN);
    items[1].version = 1;
    ck_assert_int_eq(ds_project_datasets_set(d, BOB, "pBOB", items, 2), ED_ENOTFOUND);
    ck_assert_int_eq(count("SELECT COUNT(*) FROM project_datasets"), 0);     /* all or nothing */
    items[1].version = 9;
    ck_assert_int_eq(ds_project_datasets_set(d, ALICE, "pALICE", items, 2), ED_ENOTFOUND);
    memcpy(items[1].dataset_id, empty->id, DS_ID_LEN);
    items[1].version = 0;
    ck_assert_int_eq(ds_project_datasets_set(d, BOB, "pBOB", items, 2), ED_EUNPROC);
    memcpy(items[1].dataset_id, pub->id, DS_ID_LEN);
    ck_assert_int_eq(ds_project_datasets_set(d, BOB, "pBOB", items, 2), ED_EINVAL);   /* twice */
    ck_assert_int_eq(ds_project_datasets_set(d, BOB, "p BOB", items, 1), ED_EINVAL);

    memcpy(items[1].dataset_id, priv->id, DS_ID_LEN);
    items[1].version = 1;
    ck_assert_int_eq(ds_project_datasets_set(d, ALICE, "pALICE", items, 2), 0);
    ck_assert_int_eq(ds_project_datasets_get(&got, &n, d, "pALICE"), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_str_eq(got[0].dataset_id, pub->id);
    ck_assert_int_eq(got[0].version, 0);
    ck_assert_int_eq(got[1].version, 1);
    free(got);

    /* latest resolves when the kernel starts */
    put(ALICE, pub->id, "a.txt", "v2");
    ck_assert_int_eq(ds_version_publish(NULL, d, ALICE, pub->id, "v2", NULL), 0);
    ck_assert_int_eq(ds_project_mounts(&m, &n, d, ALICE, "pALICE"), 0);
    ck_assert_uint_eq(n, 2);
    ck_assert_int_eq(m[0].version, 2);
    ck_assert_str_eq(m[0].slug, "public-one");
    ck_assert_int_eq(m[0].owner_id, ALICE);
    ck_assert_int_eq(m[1].version, 1);
    {
        char p[600];
        FILE *f;
        char buf[8] = "";
        snprintf(p, sizeof(p), "%s/a.txt", m[0].tree);
        ck_assert_ptr_nonnull(f = fopen(p, "r"));
        ck_assert_ptr_nonnull(fgets(buf, sizeof(buf), f));
        fclose(f);
        ck_assert_str_eq(buf, "v2");
    }
    ds_mounts_free(m, n);
    /* another user starting it: the private dataset stops the start */
    ck_assert_int_eq(ds_project_mounts(&m, &n, d, BOB, "pALICE"), ED_ENOTFOUND);
    ck_assert_ptr_nonnull(strstr(ed_error_last(), priv->id));
    ck_assert_ptr_null(m);

    ck_assert_int_eq(ds_project_datasets_clear(d, "pALICE"), 0);
    ck_assert_int_eq(ds_project_mounts(&m, &n, d, ALICE, "pALICE"), 0);
    ck_assert_uint_eq(n, 0);
    ds_dataset_free(pub);
    ds_dataset_free(priv);
    ds_dataset_free(empty);
}
END_TEST

/* ---- crashes ------------------------------------------------------------- */

/* The child: uploads (in chunks) and publishes in a loop, writing a byte to
 * `pfd` after each step, until it is killed. Own store and handle: nothing
 * opened before fork is used. */
static void crash_child(int pfd, const char *id)
{
#define CHILD_FAIL(code) do { fprintf(stderr, "child: %s\n", ed_error_last()); _exit(code); } while (0)
    char db[256], sha[65], up[DS_ID_LEN], name[40];
    unsigned char *buf = random_bytes(300000, 11);
    ed_store *cst;
    ds *cd;

    snprintf(db, sizeof(db), "%s/eddy.db", dir);
    if (ed_store_open(&cst, db) < 0 || ds_open(&cd, cst, data_dir, NULL) < 0)
        CHILD_FAIL(2);
    for (int i = 0;; i++) {
        ds_upload_chunk *c = NULL;
        int64_t off = 0;
        pid_t me = getpid();
        memcpy(buf, &i, sizeof(i));         /* new bytes each round: new blobs */
        memcpy(buf + sizeof(i), &me, sizeof(me));
        ed_sha256_hex(sha, buf, 300000);
        snprintf(name, sizeof(name), "round/%d.bin", i % 5);
        if (ds_upload_open(up, cd, ALICE, id, name, 300000, sha, 0) < 0)
            CHILD_FAIL(3);
        while (off < 300000) {
            size_t n = 300000 - off < 100000 ? (size_t)(300000 - off) : 100000;
            if (ds_upload_chunk_begin(&c, cd, ALICE, up, off) < 0 || ds_upload_chunk_write(c, buf + off, n) < 0 ||
                ds_upload_chunk_end(&off, NULL, NULL, c) < 0)
                CHILD_FAIL(4);
            if (write(pfd, "u", 1) != 1)
                _exit(5);
        }
        if (ds_version_publish(NULL, cd, ALICE, id, "round", NULL) < 0)
            CHILD_FAIL(6);
        if (write(pfd, "p", 1) != 1)
            _exit(5);
    }
}

START_TEST(a_kill_during_uploads_and_publishes_leaves_whole_versions_only)
{
    ds_dataset *s = mk(ALICE, "crashy", DS_PRIVATE);
    char id[DS_ID_LEN], db[256];

    memcpy(id, s->id, DS_ID_LEN);
    ds_dataset_free(s);
    snprintf(db, sizeof(db), "%s/eddy.db", dir);
    for (int round = 0; round < 6; round++) {
        int p[2], wst;
        char c;
        pid_t pid;
        ds_recover_stats rs;
        sqlite3_stmt *q = NULL;

        ds_free(d);
        d = NULL;
        ed_store_close(st);
        st = NULL;
        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_ge(pid = fork(), 0);
        if (pid == 0) {
            close(p[0]);
            crash_child(p[1], id);
        }
        close(p[1]);
        /* let it run 3..13 steps, then kill it wherever it is */
        for (int k = 0; k < 3 + round * 2; k++)
            if (read(p[0], &c, 1) != 1) {
                waitpid(pid, &wst, 0);
                ck_abort_msg("the child stopped by itself (exit %d)", WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
            }
        kill(pid, SIGKILL);
        ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
        ck_assert(WIFSIGNALED(wst));
        close(p[0]);

        /* restart */
        ck_assert_int_eq(ed_store_open(&st, db), 0);
        ck_assert_int_eq(ds_open(&d, st, data_dir, NULL), 0);
        ck_assert_int_eq(ds_recover(&rs, d), 0);
        ck_assert_int_eq(rs.missing_blobs, 0);
        ck_assert_int_eq(files_under("tmp"), 0);
        /* every version is whole: its counts match its manifest, and every
         * file of it reads back with its hash */
        ck_assert_int_eq(count("SELECT COUNT(*) FROM dataset_versions v WHERE file_count <> (SELECT COUNT(*) "
                               "FROM dataset_files f WHERE f.dataset_id = v.dataset_id AND f.number = v.number) "
                               "OR size_bytes <> (SELECT COALESCE(SUM(size), 0) FROM dataset_files f "
                               "WHERE f.dataset_id = v.dataset_id AND f.number = v.number)"),
                         0);
        ck_assert_int_eq(ed_store_prepare(&q, st, "SELECT number, path, sha256 FROM dataset_files"), 0);
        while (sqlite3_step(q) == SQLITE_ROW) {
            char got[65];
            int fd;
            ds_file f = {0};
            unsigned char *b = malloc(300000);
            ssize_t n;
            ck_assert_int_eq(ds_version_file_open(&fd, &f, d, ALICE, id, sqlite3_column_int64(q, 0),
                                                  (const char *)sqlite3_column_text(q, 1)),
                             0);
            n = read(fd, b, 300000);
            ck_assert_int_eq(n, 300000);
            ed_sha256_hex(got, b, (size_t)n);
            ck_assert_str_eq(got, (const char *)sqlite3_column_text(q, 2));
            close(fd);
            free(f.path);
            free(b);
        }
        sqlite3_finalize(q);
        /* uploads left open hold at least their durable bytes */
        ck_assert_int_eq(ed_store_prepare(&q, st, "SELECT id, durable_offset FROM dataset_uploads"), 0);
        while (sqlite3_step(q) == SQLITE_ROW) {
            char rel[400];
            struct stat sb;
            snprintf(rel, sizeof(rel), "%s/datasets/uploads/%s", data_dir, (const char *)sqlite3_column_text(q, 0));
            ck_assert_int_eq(stat(rel, &sb), 0);
            ck_assert_int_ge(sb.st_size, sqlite3_column_int64(q, 1));
        }
        sqlite3_finalize(q);
        ck_assert_int_eq(files_under("uploads"), count("SELECT COUNT(*) FROM dataset_uploads"));
        /* and gc then leaves exactly the referenced blobs */
        ck_assert_int_eq(ds_gc(NULL, d, 0), 0);
        ck_assert_int_eq(files_under("blobs"), count("SELECT COUNT(*) FROM dataset_blobs"));
    }
    ck_assert_int_gt(count("SELECT COUNT(*) FROM dataset_versions"), 0);
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        names_slugs_and_paths_refuse_slash_dotdot_nul_and_controls,
        private_unlisted_public_are_seen_by_the_right_users,
        upload_in_chunks_resumes_after_a_dropped_chunk,
        upload_with_a_wrong_sha256_is_refused_and_discarded,
        uploads_are_bounded_by_the_file_limit_and_the_quota,
        same_bytes_are_stored_once_and_a_new_version_stores_only_what_changed,
        a_publish_that_fails_before_commit_leaves_no_version_and_the_draft_intact,
        versions_in_use_cannot_be_deleted_and_numbers_are_never_reused,
        gc_after_delete_frees_only_blobs_nothing_references,
        start_up_recovery_removes_temporary_files_and_orphans,
        a_version_tree_is_hard_links_read_only,
        a_hostile_path_in_the_draft_never_escapes_the_tree,
        an_upload_survives_a_restart_at_its_durable_offset,
        concurrent_puts_and_gc_never_lose_a_referenced_blob,
        a_project_mounts_visible_datasets_with_latest_resolved_at_start,
        a_kill_during_uploads_and_publishes_leaves_whole_versions_only,
        an_upload_hash_state_follows_the_offset_and_is_rebuilt_when_missing,
        the_quota_charges_a_blob_the_owner_holds_once,
        NULL,
    };
    return unit_tests_run("datasets", 120, setup, teardown, tests);
}
