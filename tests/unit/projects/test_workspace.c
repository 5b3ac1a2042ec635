/* Unit tests for projects/ workspace features (issue 12): ETags and
 * conditional writes, streaming writes, versions that keep large and
 * .eddyignore'd files out of git, restore modes. Real store, real git. */
#include "proj_fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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
    file_is(p->id, "a.txt", NULL, "two");
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


/* ---- versions: large and ignored files ------------------------------------------ */

static const proj_large_file *large_of(const proj_version *v, const char *path)
{
    for (size_t i = 0; i < v->nlarge; i++)
        if (strcmp(v->large_files[i].path, path) == 0)
            return &v->large_files[i];
    return NULL;
}

START_TEST(eddyignore_patterns_follow_gitignore)
{
    proj *p = make(alice, "ign", PROJ_PRIVATE);
    proj_version *v = NULL;
    static const char *const in[] = {
        ".eddyignore", "keep.txt", "src/main.py", "logs/keep.log", "docs/a/b.md",
        "data/raw/keep.csv", "notes#1.txt", "a/build", "#hash.txt", "sub/deep/ok.py",
    };
    static const char *const out[] = {
        "run.log", "sub/run.log",               /* *.log at any depth */
        "cache/x.bin", "a/cache/y.bin",        /* cache/ : a directory anywhere */
        "build/out.o",                         /* /build/ anchored at the root */
        "data/raw/big.csv",                    /* csv files in data/raw, anchored */
        "ckpt/a/b/c/model.pt", "x/ckpt/m.pt",  /* any ckpt directory, any depth */
        "docs/a/tmp/x.md",                     /* docs, any dirs, then tmp */
        "sp ace.txt",                          /* trailing spaces stripped */
        "!bang.txt",                           /* \! escapes */
        "venv/lib/keep.py",                    /* inside an ignored dir: no re-include */
    };
    const char *rules = "# comment line\n"
                        "\n"
                        "*.log\n"
                        "!logs/keep.log\n"
                        "cache/\n"
                        "/build/\n"
                        "data/raw/*.csv\n"
                        "!data/raw/keep.csv\n"
                        "**/ckpt/**\n"
                        "docs/**/tmp\n"
                        "sp ace.txt   \n"
                        "\\!bang.txt\n"
                        "\\#hash.txt.nomatch\n"
                        "venv/\n"
                        "!venv/lib/keep.py\n"
                        "a/build/\n";   /* a/build is a file: dir-only rule misses it */

    put(p->id, ".eddyignore", rules);
    for (size_t i = 1; i < sizeof(in) / sizeof(in[0]); i++)
        put(p->id, in[i], "in");
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
        put(p->id, out[i], "out");
    ck_assert_msg(proj_version_create(&v, root, alice, p->id, "ignores") == 0, "%s", ed_error_last());
    for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++)
        ck_assert_msg(has_file(v, in[i]) && !large_of(v, in[i]), "%s should be versioned", in[i]);
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++) {
        const proj_large_file *lf = large_of(v, out[i]);
        char want[65];
        ck_assert_msg(!has_file(v, out[i]) && lf, "%s should be kept out", out[i]);
        ck_assert(lf->ignored);
        ck_assert_int_eq(lf->size, 3);
        ed_sha256_hex(want, "out", 3);
        ck_assert_str_eq(lf->sha256, want);
    }
    ck_assert_uint_eq(v->nfiles, sizeof(in) / sizeof(in[0]));
    ck_assert_uint_eq(v->nlarge, sizeof(out) / sizeof(out[0]));
    /* the working tree is not touched */
    for (size_t i = 0; i < sizeof(out) / sizeof(out[0]); i++)
        ck_assert(exists_in(p->id, out[i]));
    proj_version_free(v);
    proj_free(p);
}
END_TEST

START_TEST(large_files_stay_out_with_a_correct_manifest)
{
    proj *p = make(alice, "large", PROJ_PRIVATE);
    proj_version *v1 = NULL, *v2 = NULL, *got = NULL;
    proj_version_page *pg = NULL;
    size_t n = 21 * 1024 * 1024;
    char *big = malloc(n), want[65], *buf = NULL;
    size_t len = 0;

    for (size_t i = 0; i < n; i++)
        big[i] = (char)(i * 7 + i / 4096);
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, p->id, "model/w.bin", big, n), 0);
    put(p->id, "train.py", "print(1)\n");
    put(p->id, "small.bin", "0123456789");
    ck_assert_msg(proj_version_create(&v1, root, alice, p->id, "default threshold") == 0, "%s",
                  ed_error_last());
    ck_assert(has_file(v1, "train.py") && has_file(v1, "small.bin") && !has_file(v1, "model/w.bin"));
    ck_assert_uint_eq(v1->nlarge, 1);
    ck_assert_str_eq(v1->large_files[0].path, "model/w.bin");
    ck_assert_int_eq(v1->large_files[0].size, (int64_t)n);
    ck_assert(!v1->large_files[0].ignored);
    ed_sha256_hex(want, big, n);
    ck_assert_str_eq(v1->large_files[0].sha256, want);
    /* no blob of it in the version */
    ck_assert_int_eq(proj_file_read(&buf, &len, root, alice, p->id, "model/w.bin", v1->id), ED_ENOTFOUND);
    /* the manifest is durable: read back by get and list */
    ck_assert_int_eq(proj_version_get(&got, root, alice, p->id, v1->id), 0);
    ck_assert_uint_eq(got->nlarge, 1);
    ck_assert_str_eq(got->large_files[0].sha256, want);
    proj_version_free(got);
    ck_assert_int_eq(proj_version_list(&pg, root, alice, p->id, 10, NULL), 0);
    ck_assert_uint_eq(pg->items[0]->nlarge, 1);
    proj_version_page_free(pg);

    /* a tracked file that becomes large (lower threshold) leaves the tree */
    proj_root_set_large_file_bytes(root, 5);
    ck_assert_int_eq(proj_version_create(&v2, root, alice, p->id, "tiny threshold"), 0);
    ck_assert(has_file(v2, "train.py") == false && has_file(v2, "small.bin") == false);
    ck_assert_ptr_nonnull(large_of(v2, "small.bin"));
    ck_assert_ptr_nonnull(large_of(v2, "train.py"));
    ck_assert(exists_in(p->id, "small.bin"));
    proj_root_set_large_file_bytes(root, 0);
    free(big);
    proj_version_free(v1);
    proj_version_free(v2);
    proj_free(p);
}
END_TEST

START_TEST(files_ignored_later_leave_the_next_version)
{
    proj *p = make(alice, "later", PROJ_PRIVATE);
    proj_version *v1 = NULL, *v2 = NULL;

    put(p->id, "out/result.csv", "1,2\n");
    put(p->id, "main.py", "x\n");
    ck_assert_int_eq(proj_version_create(&v1, root, alice, p->id, "all in"), 0);
    ck_assert(has_file(v1, "out/result.csv"));
    put(p->id, ".eddyignore", "out/\n");
    ck_assert_int_eq(proj_version_create(&v2, root, alice, p->id, "out ignored"), 0);
    ck_assert(!has_file(v2, "out/result.csv") && has_file(v2, ".eddyignore"));
    ck_assert_ptr_nonnull(large_of(v2, "out/result.csv"));
    file_is(p->id, "out/result.csv", v1->id, "1,2\n");   /* history keeps it */
    proj_version_free(v1);
    proj_version_free(v2);
    proj_free(p);
}
END_TEST

START_TEST(manifest_hash_is_reused_only_for_an_unchanged_file)
{
    proj *p = make(alice, "rehash", PROJ_PRIVATE);
    proj_version *v1 = NULL, *v2 = NULL, *v3 = NULL;
    char path[600], want[65];
    struct timespec keep[2];
    struct stat sb;
    int fd;

    proj_root_set_large_file_bytes(root, 4);
    put(p->id, "w.bin", "AAAAAAAA");
    ck_assert_int_eq(proj_version_create(&v1, root, alice, p->id, "v1"), 0);
    ed_sha256_hex(want, "AAAAAAAA", 8);
    ck_assert_str_eq(large_of(v1, "w.bin")->sha256, want);
    ck_assert_int_eq(proj_version_create(&v2, root, alice, p->id, "v2 unchanged"), 0);
    ck_assert_str_eq(large_of(v2, "w.bin")->sha256, want);
    /* rewrite in place with the same size and mtime (as a kernel could):
     * ctime still moves, so the hash is computed again */
    snprintf(path, sizeof(path), "%s/%s/w.bin", rootdir, p->id);
    ck_assert_int_eq(stat(path, &sb), 0);
    keep[0] = sb.st_atim;
    keep[1] = sb.st_mtim;
    usleep(20000);
    fd = open(path, O_WRONLY);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(pwrite(fd, "BBBBBBBB", 8, 0), 8);
    ck_assert_int_eq(futimens(fd, keep), 0);
    close(fd);
    ck_assert_int_eq(proj_version_create(&v3, root, alice, p->id, "v3 rewritten"), 0);
    ed_sha256_hex(want, "BBBBBBBB", 8);
    ck_assert_str_eq(large_of(v3, "w.bin")->sha256, want);
    proj_root_set_large_file_bytes(root, 0);
    proj_version_free(v1);
    proj_version_free(v2);
    proj_version_free(v3);
    proj_free(p);
}
END_TEST

START_TEST(versions_and_restores_never_follow_links_in_the_tree)
{
    proj *p = make(alice, "links", PROJ_PRIVATE);
    proj_version *v1 = NULL, *v2 = NULL;
    char outside[400], link[600], target[600], path[600];
    struct stat sb;

    snprintf(outside, sizeof(outside), "%s/outside", tmp);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    snprintf(path, sizeof(path), "%s/secret.bin", outside);
    {
        FILE *f = fopen(path, "w");
        fputs("SECRET-BYTES-OUTSIDE-THE-TREE", f);
        fclose(f);
    }
    put(p->id, "out/a.txt", "in v1");
    put(p->id, "keep.txt", "k");
    ck_assert_int_eq(proj_version_create(&v1, root, alice, p->id, "v1"), 0);
    /* a kernel replaces out/ with a link out of the tree, and plants links
     * to the outside file as a "large" file and as the .eddyignore */
    snprintf(link, sizeof(link), "%s/%s/out", rootdir, p->id);
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "out/a.txt"), 0);
    ck_assert_int_eq(symlink(outside, link), 0);
    snprintf(link, sizeof(link), "%s/%s/model.bin", rootdir, p->id);
    ck_assert_int_eq(symlink(path, link), 0);
    snprintf(link, sizeof(link), "%s/%s/.eddyignore", rootdir, p->id);
    ck_assert_int_eq(symlink(path, link), 0);
    proj_root_set_large_file_bytes(root, 4);
    ck_assert_msg(proj_version_create(&v2, root, alice, p->id, "v2") == 0, "%s", ed_error_last());
    /* nothing behind a link is read: not versioned, not hashed */
    ck_assert(!has_file(v2, "out/secret.bin") && !large_of(v2, "out/secret.bin"));
    ck_assert(!has_file(v2, "model.bin") && !large_of(v2, "model.bin"));
    ck_assert(!has_file(v2, ".eddyignore"));
    /* a restore refuses to write through the link, outside stays as it was */
    ck_assert_int_eq(proj_version_restore(NULL, NULL, root, alice, p->id, v1->id,
                                          PROJ_RESTORE_KEEP_UNTRACKED), ED_ECONFLICT);
    ck_assert_int_eq(proj_version_restore(NULL, NULL, root, alice, p->id, v1->id,
                                          PROJ_RESTORE_EXACT), ED_ECONFLICT);
    snprintf(target, sizeof(target), "%s/a.txt", outside);
    ck_assert_int_ne(lstat(target, &sb), 0);
    ck_assert_int_eq(lstat(path, &sb), 0);   /* exact deleted nothing outside */
    proj_root_set_large_file_bytes(root, 0);
    proj_version_free(v1);
    proj_version_free(v2);
    proj_free(p);
}
END_TEST

/* ---- restore modes ------------------------------------------------------------ */

/* Work after version v1 (whose .eddyignore has *.tmp, with the large-file
 * threshold at 100 bytes): a.txt rewritten, `made` new, scratch.tmp
 * (ignored) and big.bin (200 bytes: large). */
static void later_work(const char *id, const char *made)
{
    char big[200];

    put(id, "a.txt", "later a");
    put(id, made, "made after v1");
    put(id, "scratch.tmp", "ignored");
    memset(big, 'B', sizeof(big));
    ck_assert_int_eq(proj_file_write(NULL, NULL, root, alice, id, "big.bin", big, sizeof(big)), 0);
}

START_TEST(restore_keep_untracked_never_deletes)
{
    proj *p = make(alice, "keep", PROJ_PRIVATE);
    proj_version *v1 = NULL, *restored = NULL, *autosave = NULL;

    proj_root_set_large_file_bytes(root, 100);
    put(p->id, "a.txt", "v1 a");
    put(p->id, "dir/b.txt", "v1 b");
    put(p->id, ".eddyignore", "*.tmp\n");
    ck_assert_int_eq(proj_version_create(&v1, root, alice, p->id, "v1"), 0);
    later_work(p->id, "new.txt");
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "dir/b.txt"), 0);
    ck_assert_msg(proj_version_restore(&restored, &autosave, root, alice, p->id, v1->id,
                                       PROJ_RESTORE_KEEP_UNTRACKED) == 0, "%s", ed_error_last());
    ck_assert_ptr_nonnull(autosave);
    file_is(p->id, "a.txt", NULL, "v1 a");
    file_is(p->id, "dir/b.txt", NULL, "v1 b");
    ck_assert(exists_in(p->id, "new.txt") && exists_in(p->id, "scratch.tmp") &&
              exists_in(p->id, "big.bin"));
    /* the autosave holds the later work, and lists what it kept out */
    file_is(p->id, "a.txt", autosave->id, "later a");
    ck_assert_ptr_nonnull(large_of(autosave, "big.bin"));
    ck_assert_ptr_nonnull(large_of(autosave, "scratch.tmp"));
    ck_assert_int_eq(proj_version_restore(NULL, NULL, root, alice, p->id, v1->id, 7), ED_EINVAL);
    {
        proj_restore_mode m;
        ck_assert_int_eq(proj_restore_mode_parse(&m, "exact"), 0);
        ck_assert_int_eq(m, PROJ_RESTORE_EXACT);
        ck_assert_int_eq(proj_restore_mode_parse(&m, NULL), 0);
        ck_assert_int_eq(m, PROJ_RESTORE_KEEP_UNTRACKED);
        ck_assert_int_eq(proj_restore_mode_parse(&m, "all"), ED_EINVAL);
    }
    proj_root_set_large_file_bytes(root, 0);
    proj_version_free(v1);
    proj_version_free(restored);
    proj_version_free(autosave);
    proj_free(p);
}
END_TEST

START_TEST(restore_exact_removes_only_what_a_version_holds)
{
    proj *p = make(alice, "exact", PROJ_PRIVATE);
    proj_version *v1 = NULL, *autosave = NULL;

    proj_root_set_large_file_bytes(root, 100);
    put(p->id, "a.txt", "v1 a");
    put(p->id, ".eddyignore", "*.tmp\ncache/\n");
    ck_assert_int_eq(proj_version_create(&v1, root, alice, p->id, "v1"), 0);
    later_work(p->id, "new/deep/file.txt");
    put(p->id, "cache/c.dat", "ignored dir");
    ck_assert_msg(proj_version_restore(NULL, &autosave, root, alice, p->id, v1->id,
                                       PROJ_RESTORE_EXACT) == 0, "%s", ed_error_last());
    ck_assert_ptr_nonnull(autosave);
    file_is(p->id, "a.txt", NULL, "v1 a");
    ck_assert(!exists_in(p->id, "new/deep/file.txt"));
    ck_assert(!exists_in(p->id, "new"));                 /* emptied directories go */
    ck_assert(exists_in(p->id, "scratch.tmp") && exists_in(p->id, "cache/c.dat") &&
              exists_in(p->id, "big.bin"));              /* no version can hold these */
    file_is(p->id, "new/deep/file.txt", autosave->id, "made after v1");    /* what went is in the autosave */
    proj_root_set_large_file_bytes(root, 0);
    proj_version_free(v1);
    proj_version_free(autosave);
    proj_free(p);
}
END_TEST

START_TEST(restore_refuses_a_directory_where_a_file_goes)
{
    proj *p = make(alice, "obst", PROJ_PRIVATE);
    proj_version *v1 = NULL;

    put(p->id, "out", "a file in v1");
    ck_assert_int_eq(proj_version_create(&v1, root, alice, p->id, "v1"), 0);
    ck_assert_int_eq(proj_file_delete(root, alice, p->id, "out"), 0);
    put(p->id, "out/x.txt", "now a directory");
    ck_assert_int_eq(proj_version_restore(NULL, NULL, root, alice, p->id, v1->id,
                                          PROJ_RESTORE_KEEP_UNTRACKED), ED_ECONFLICT);
    ck_assert(exists_in(p->id, "out/x.txt"));
    /* exact removes the directory's files (autosaved) and writes the file */
    ck_assert_msg(proj_version_restore(NULL, NULL, root, alice, p->id, v1->id,
                                       PROJ_RESTORE_EXACT) == 0, "%s", ed_error_last());
    file_is(p->id, "out", NULL, "a file in v1");
    proj_version_free(v1);
    proj_free(p);
}
END_TEST


int main(void)
{
    const TTest *tests[] = {etag_is_sha256_and_if_match_swaps, two_writers_with_one_etag_exactly_one_wins,
                            write_fd_streams_a_file_and_keeps_the_rules, write_fd_respects_the_storage_limit,
                            eddyignore_patterns_follow_gitignore, large_files_stay_out_with_a_correct_manifest,
                            files_ignored_later_leave_the_next_version,
                            manifest_hash_is_reused_only_for_an_unchanged_file,
                            versions_and_restores_never_follow_links_in_the_tree,
                            restore_keep_untracked_never_deletes, restore_exact_removes_only_what_a_version_holds,
                            restore_refuses_a_directory_where_a_file_goes, NULL};

    return unit_tests_run("projects_workspace", 120, proj_fixture_setup, proj_fixture_close, tests);
}
