/*
 * test_unpack.c - ds_draft_unpack over archives written here with
 * libarchive's write API (zip, tar, tar.gz): nested directories, traversal,
 * absolute names, links, bombs (ratio, total, entries), truncated archives,
 * collisions and the quota; after every refusal the draft is unchanged.
 */
#include "ds.h"
#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"
#include "unit_util.h"

#include <archive.h>
#include <archive_entry.h>
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ALICE 1

static char dir[64];
static ed_store *st;
static ds *d;
static ds_dataset *set;

static void setup(void)
{
    char db[256];
    ds_dataset_spec spec = DS_SPEC_KEEP;

    snprintf(dir, sizeof(dir), "/tmp/eddy-unpack-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(db, sizeof(db), "%s/eddy.db", dir);
    ck_assert_int_eq(ed_store_open(&st, db), 0);
    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO users (id, username, email, password_hash, created_at, "
                                       "updated_at) VALUES (1, 'alice', 'a@x', 'x', 0, 0)"),
                     0);
    ck_assert_int_eq(ds_open(&d, st, dir, NULL), 0);
    spec.name = "archives";
    ck_assert_msg(ds_dataset_create(&set, d, ALICE, &spec) == 0, "%s", ed_error_last());
}

static void teardown(void)
{
    ds_dataset_free(set);
    ds_free(d);
    ed_store_close(st);
    unit_remove_tree(dir);
}

/* ---- writing archives ---------------------------------------------------- */

enum { ZIP, TAR, TGZ };

typedef struct item {
    const char *name;
    char type;                  /* 'f' file, 'd' directory, 'l' symlink, 'h' hard link, 'p' FIFO */
    const char *data;           /* file contents, or the link's target */
    int64_t zeros;              /* a file of this many zero bytes instead of data */
} item;

typedef struct blob {
    unsigned char *buf;
    size_t len;
} blob;

static blob build(int kind, const item *items, size_t n)
{
    struct archive *a = archive_write_new();
    size_t cap = 64 << 20;
    blob b = {malloc(cap), 0};
    static char zeros[1 << 20];

    ck_assert_ptr_nonnull(b.buf);
    if (kind == ZIP) {
        ck_assert_int_eq(archive_write_set_format_zip(a), ARCHIVE_OK);
    } else {
        ck_assert_int_eq(archive_write_set_format_pax_restricted(a), ARCHIVE_OK);
        if (kind == TGZ)
            ck_assert_int_eq(archive_write_add_filter_gzip(a), ARCHIVE_OK);
    }
    ck_assert_int_eq(archive_write_open_memory(a, b.buf, cap, &b.len), ARCHIVE_OK);
    for (size_t i = 0; i < n; i++) {
        struct archive_entry *e = archive_entry_new();
        int64_t size = items[i].zeros ? items[i].zeros : (items[i].data ? (int64_t)strlen(items[i].data) : 0);
        archive_entry_set_pathname(e, items[i].name);
        archive_entry_set_perm(e, 0644);
        switch (items[i].type) {
        case 'd':
            archive_entry_set_filetype(e, AE_IFDIR);
            break;
        case 'l':
            archive_entry_set_filetype(e, AE_IFLNK);
            archive_entry_set_symlink(e, items[i].data);
            break;
        case 'h':
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_hardlink(e, items[i].data);
            break;
        case 'p':
            archive_entry_set_filetype(e, AE_IFIFO);
            break;
        default:
            archive_entry_set_filetype(e, AE_IFREG);
            archive_entry_set_size(e, size);
        }
        ck_assert_msg(archive_write_header(a, e) == ARCHIVE_OK, "%s", archive_error_string(a));
        if (items[i].type == 'f' && items[i].zeros) {
            for (int64_t left = items[i].zeros; left > 0; left -= (int64_t)sizeof(zeros))
                ck_assert_int_gt(archive_write_data(a, zeros, left < (int64_t)sizeof(zeros) ? (size_t)left
                                                                                          : sizeof(zeros)),
                                 0);
        } else if (items[i].type == 'f' && size > 0) {
            ck_assert_int_eq(archive_write_data(a, items[i].data, (size_t)size), size);
        }
        archive_entry_free(e);
    }
    ck_assert_int_eq(archive_write_close(a), ARCHIVE_OK);
    archive_write_free(a);
    return b;
}

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

static void put_bytes(const char *path, const void *buf, size_t n)
{
    int fd = bytes_fd(buf, n);
    int err = ds_draft_put_fd(NULL, d, ALICE, set->id, path, fd, NULL, 0);
    close(fd);
    ck_assert_msg(err == 0, "put %s: %s", path, ed_error_last());
}

static void put_archive(const char *path, int kind, const item *items, size_t n)
{
    blob b = build(kind, items, n);
    put_bytes(path, b.buf, b.len);
    free(b.buf);
}

/* The draft as "path sha size\n" lines. */
static char *draft(void)
{
    ds_file_list *l = NULL;
    char *s = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&s, &len);

    ck_assert_int_eq(ds_draft_list(&l, d, ALICE, set->id), 0);
    for (size_t i = 0; i < l->count; i++)
        fprintf(f, "%s %s %lld\n", l->items[i].path, l->items[i].sha256, (long long)l->items[i].size);
    fclose(f);
    ds_file_list_free(l);
    return s;
}

static const char *sha_of(const char *text)
{
    static char out[65];
    ed_sha256_hex(out, text, strlen(text));
    return out;
}

/* Unpacking `path` fails with `code` and a message holding `needle`; the
 * draft is as it was. */
static void refused(const char *path, const ds_unpack_limits *lim, int64_t quota, int code, const char *needle)
{
    char *before = draft(), *after;
    int64_t files = -1;
    int err = ds_draft_unpack(&files, d, ALICE, set->id, path, lim, quota);

    ck_assert_msg(err == code, "unpack %s: %d (%s), wanted %d", path, err, ed_error_last(), code);
    ck_assert_msg(strstr(ed_error_last(), needle), "message '%s' lacks '%s'", ed_error_last(), needle);
    ck_assert_int_eq(files, 0);
    after = draft();
    ck_assert_str_eq(before, after);
    free(before);
    free(after);
}

/* ---- tests --------------------------------------------------------------- */

START_TEST(zip_tar_and_tgz_unpack_nested_directories_beside_the_archive)
{
    static const item items[] = {
        {"./", 'd', NULL, 0},
        {"./top.csv", 'f', "a,b\n1,2\n", 0},
        {"./sub/", 'd', NULL, 0},
        {"./sub/deep/x.txt", 'f', "hello\n", 0},
        {"./sub/empty.bin", 'f', "", 0},
    };
    const char *names[] = {"in/a.zip", "in2/b.tar", "c.tar.gz"};
    const char *dirs[] = {"in/", "in2/", ""};
    const int kinds[] = {ZIP, TAR, TGZ};

    put_bytes("keep.txt", "kept", 4);
    for (int k = 0; k < 3; k++) {
        int64_t files = 0;
        char *l;
        char want[2000];
        const char *pre = dirs[k];
        put_archive(names[k], kinds[k], items, 5);
        ck_assert_msg(ds_draft_unpack(&files, d, ALICE, set->id, names[k], NULL, 0) == 0, "%s: %s", names[k],
                      ed_error_last());
        ck_assert_int_eq(files, 3);
        l = draft();
        ck_assert_ptr_null(strstr(l, names[k]));        /* the archive is gone */
        snprintf(want, sizeof(want), "%ssub/deep/x.txt %s 6\n", pre, sha_of("hello\n"));
        ck_assert_msg(strstr(l, want), "%s lacks %s", l, want);
        snprintf(want, sizeof(want), "%stop.csv %s 8\n", pre, sha_of("a,b\n1,2\n"));
        ck_assert_msg(strstr(l, want), "%s lacks %s", l, want);
        snprintf(want, sizeof(want), "%ssub/empty.bin %s 0\n", pre, sha_of(""));
        ck_assert_msg(strstr(l, want), "%s lacks %s", l, want);
        ck_assert_ptr_nonnull(strstr(l, "keep.txt "));
        free(l);
    }
    /* and the unpacked draft publishes like any other */
    {
        ds_version *v = NULL;
        int fd;
        ds_file f = {0};
        char buf[16] = {0};
        ck_assert_int_eq(ds_version_publish(&v, d, ALICE, set->id, "unpacked", NULL), 0);
        ck_assert_int_eq(v->file_count, 10);
        ck_assert_int_eq(ds_version_file_open(&fd, &f, d, ALICE, set->id, 1, "in/sub/deep/x.txt"), 0);
        ck_assert_int_eq(read(fd, buf, sizeof(buf)), 6);
        ck_assert_str_eq(buf, "hello\n");
        ck_assert_str_eq(f.media_type, "text/plain");
        close(fd);
        free(f.path);
        ds_version_free(v);
    }
}
END_TEST

START_TEST(traversal_absolute_names_links_and_devices_are_refused_naming_the_entry)
{
    static const item ok = {"fine.txt", 'f', "fine", 0};
    const struct {
        item bad;
        int kind;
        const char *needle;
    } cases[] = {
        {{"../x", 'f', "evil", 0}, TAR, "'../x' climbs out"},
        {{"a/../../x", 'f', "evil", 0}, ZIP, "'a/../../x' climbs out"},
        {{"/abs", 'f', "evil", 0}, TAR, "'/abs' has an absolute path"},
        {{"/etc/passwd", 'f', "evil", 0}, ZIP, "absolute path"},
        {{"link", 'l', "/etc/passwd", 0}, TAR, "'link' is a symbolic link"},
        {{"zlink", 'l', "../../x", 0}, ZIP, "'zlink' is a symbolic link"},
        {{"hard", 'h', "fine.txt", 0}, TAR, "'hard' is a hard link"},
        {{"fifo", 'p', NULL, 0}, TAR, "'fifo' is a device, FIFO or socket"},
        {{"bad\001name", 'f', "x", 0}, TAR, "control"},
    };

    put_bytes("other.txt", "x", 1);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        item items[2] = {ok, cases[i].bad};
        put_archive("bad.archive", cases[i].kind, items, 2);
        refused("bad.archive", NULL, 0, ED_EINVAL, cases[i].needle);
    }
    /* no blob of fine.txt was given a row: nothing half-written is visible */
    ck_assert_int_eq(unit_store_int(st, "SELECT COUNT(*) FROM dataset_draft_files WHERE path = 'fine.txt'"), 0);
}
END_TEST

START_TEST(duplicates_and_file_directory_collisions_are_refused)
{
    static const item dup[] = {{"a.txt", 'f', "1", 0}, {"a.txt", 'f', "2", 0}};
    static const item filedir[] = {{"a", 'f', "1", 0}, {"a/b", 'f', "2", 0}};
    static const item dirfile[] = {{"a/", 'd', NULL, 0}, {"a", 'f', "2", 0}};
    static const item clash_file[] = {{"keep.txt", 'f', "new", 0}};
    static const item clash_dir[] = {{"keep.txt/x", 'f', "new", 0}};
    static const item clash_up[] = {{"data", 'f', "new", 0}};

    put_bytes("keep.txt", "old", 3);
    put_bytes("data/x.csv", "1\n", 2);
    put_archive("t.tar", TAR, dup, 2);
    refused("t.tar", NULL, 0, ED_EINVAL, "'a.txt' twice");
    put_archive("t.tar", TAR, filedir, 2);
    refused("t.tar", NULL, 0, ED_EINVAL, "'a' both as a file and as a directory");
    put_archive("t.tar", TAR, dirfile, 2);
    refused("t.tar", NULL, 0, ED_EINVAL, "'a' both as a file and as a directory");
    put_archive("t.zip", ZIP, clash_file, 1);
    refused("t.zip", NULL, 0, ED_EINVAL, "'keep.txt' would replace a file already in the draft");
    put_archive("t.zip", ZIP, clash_dir, 1);
    refused("t.zip", NULL, 0, ED_EINVAL, "'keep.txt' a directory");
    put_archive("t.zip", ZIP, clash_up, 1);
    refused("t.zip", NULL, 0, ED_EINVAL, "'data' is a directory of the draft");
    /* not an archive at all, and a missing one */
    put_bytes("plain.zip", "this is not a zip", 17);
    refused("plain.zip", NULL, 0, ED_EINVAL, "not a zip or tar archive");
    ck_assert_int_eq(ds_draft_unpack(NULL, d, ALICE, set->id, "nope.zip", NULL, 0), ED_ENOTFOUND);
    /* only the owner */
    ck_assert_int_eq(ed_store_exec(st, "INSERT INTO users (id, username, email, password_hash, created_at, "
                                       "updated_at) VALUES (2, 'bob', 'b@x', 'x', 0, 0)"),
                     0);
    ck_assert_int_eq(ds_draft_unpack(NULL, d, 2, set->id, "t.zip", NULL, 0), ED_ENOTFOUND);
}
END_TEST

START_TEST(a_gigabyte_of_zeros_is_stopped_by_the_ratio_as_it_streams)
{
    static const item bomb[] = {{"small.txt", 'f', "x", 0}, {"zeros.bin", 'f', NULL, INT64_C(1) << 30}};
    char *before;
    int64_t files = 0;

    put_archive("bomb.zip", ZIP, bomb, 2);
    {
        /* what refusing it costs (printed, not asserted) */
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        refused("bomb.zip", NULL, 0, ED_ETOOBIG, "archive bomb");
        clock_gettime(CLOCK_MONOTONIC, &t1);
        fprintf(stderr, "unpack: a 1 GiB zip bomb (%lld bytes) refused in %.0f ms\n",
                (long long)unit_store_int(st, "SELECT size FROM dataset_draft_files WHERE path = 'bomb.zip'"),
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
    }
    put_archive("bomb.tgz", TGZ, bomb, 2);
    refused("bomb.tgz", NULL, 0, ED_ETOOBIG, "archive bomb");
    /* no temporary file is left behind */
    {
        char cmd[200];
        snprintf(cmd, sizeof(cmd), "find %s/datasets/tmp -type f | wc -l", dir);
        ck_assert_int_eq(unit_popen_int(cmd), 0);
    }
    /* with the ratio limit off, the total limit stops it */
    refused("bomb.zip", &(ds_unpack_limits){INT64_C(100) << 20, 1000, 0}, 0, ED_ETOOBIG,
            "more than the limit of 104857600 bytes");
    /* and a small archive that compresses very well is not a bomb */
    {
        static const item text[] = {{"t.txt", 'f', NULL, INT64_C(1) << 20}};
        put_archive("fine.zip", ZIP, text, 1);
        before = draft();
        ck_assert_msg(ds_draft_unpack(&files, d, ALICE, set->id, "fine.zip", NULL, 0) == 0, "%s", ed_error_last());
        ck_assert_int_eq(files, 1);
        free(before);
    }
}
END_TEST

START_TEST(too_many_entries_truncated_archives_and_the_quota_are_refused)
{
    item many[30];
    char names[30][16];
    blob b;

    for (int i = 0; i < 30; i++) {
        snprintf(names[i], sizeof(names[i]), "f%02d.txt", i);
        many[i] = (item){names[i], 'f', names[i], 0};
    }
    put_archive("many.tar", TAR, many, 30);
    refused("many.tar", &(ds_unpack_limits){INT64_C(1) << 30, 20, 200}, 0, ED_ETOOBIG, "limit of 20 entries");
    /* under the limit it goes */
    ck_assert_int_eq(ds_draft_unpack(NULL, d, ALICE, set->id, "many.tar", &(ds_unpack_limits){INT64_C(1) << 30, 30, 200},
                                     0),
                     0);

    /* truncated: the same archives cut short */
    for (int kind = ZIP; kind <= TGZ; kind++) {
        static const item big[] = {{"d/one.txt", 'f', "one", 0}, {"d/two.bin", 'f', NULL, 300000}};
        b = build(kind, big, 2);
        if (kind == TGZ) {
            /* zeros compress too well for a cut to land inside them: random bytes */
            item rnd[2] = {big[0], {"d/two.bin", 'f', NULL, 0}};
            char *data = malloc(300001);
            for (int i = 0; i < 300000; i++)
                data[i] = (char)('a' + rand() % 26);
            data[300000] = '\0';
            rnd[1].data = data;
            free(b.buf);
            b = build(kind, rnd, 2);
            free(data);
        }
        put_bytes("cut.archive", b.buf, b.len * 2 / 3);
        refused("cut.archive", NULL, 0, ED_EINVAL, "truncated or corrupt");
        free(b.buf);
    }

    /* the quota: what unpacking adds passes it */
    {
        static const item mb[] = {{"m.bin", 'f', NULL, 3 << 20}};
        int64_t used = 0;
        put_archive("q.tgz", TGZ, mb, 1);
        ck_assert_int_eq(ds_usage_bytes(&used, d, ALICE), 0);
        refused("q.tgz", NULL, used + (2 << 20), ED_EQUOTA, "quota");
        ck_assert_int_eq(ds_draft_unpack(NULL, d, ALICE, set->id, "q.tgz", NULL, used + (4 << 20)), 0);
    }

    /* the server's per-file limit holds for an archive's entries too */
    {
        static const item big[] = {{"ok.txt", 'f', "small", 0}, {"big.txt", 'f', NULL, 5000}};
        ds_free(d);
        ck_assert_int_eq(ds_open(&d, st, dir, &(ds_limits){1000, INT64_C(3600000)}), 0);
        put_archive("lim.tgz", TGZ, big, 2);
        refused("lim.tgz", NULL, 0, ED_ETOOBIG, "'big.txt' is larger than the file limit of 1000 bytes");
    }
}
END_TEST

int main(void)
{
    const TTest *tests[] = {
        zip_tar_and_tgz_unpack_nested_directories_beside_the_archive,
        traversal_absolute_names_links_and_devices_are_refused_naming_the_entry,
        duplicates_and_file_directory_collisions_are_refused,
        a_gigabyte_of_zeros_is_stopped_by_the_ratio_as_it_streams,
        too_many_entries_truncated_archives_and_the_quota_are_refused,
        NULL,
    };
    return unit_tests_run("unpack", 240, setup, teardown, tests);
}
