/* Unit tests for common/ed_fs: opening beneath a directory descriptor in a
 * tree the user controls. Every case that opens runs twice: once with
 * openat2 (where the kernel has it) and once through the O_NOFOLLOW
 * component walk (forced), so both code paths are held to the same rules. */
#include "ed_error.h"
#include "ed_fs.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#ifndef SYS_openat2
#define SYS_openat2 437
#endif

static char top[64], tree[128], outside[128];
static int root = -1;
static bool kernel_has_openat2;

static void put(const char *dir, const char *rel, const char *text)
{
    char p[512];
    FILE *f;
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    ck_assert_ptr_nonnull(f = fopen(p, "w"));
    fputs(text, f);
    fclose(f);
}

static void mkd(const char *dir, const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, rel);
    ck_assert_int_eq(mkdir(p, 0755), 0);
}

static void lnk(const char *target, const char *rel)
{
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", tree, rel);
    ck_assert_int_eq(symlink(target, p), 0);
}

/* tree/            the root handed to ed_fs
 *   a/b/f.txt      "inside"
 *   d/secret       "inside secret"
 *   f.txt          "top file"
 *   up    -> ..                 (relative link out)
 *   abs   -> OUTSIDE            (absolute link to a directory outside)
 *   leaf  -> OUTSIDE/secret     (link to a file outside)
 *   self  -> a                  (link that stays inside: still refused)
 *   dangling -> OUTSIDE/created (O_CREAT through it must not create)
 * outside/secret   "OUTSIDE" */
static void setup(void)
{
    char o[160];
    snprintf(top, sizeof(top), "/tmp/eddy-fs-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(top));
    snprintf(tree, sizeof(tree), "%s/tree", top);
    snprintf(outside, sizeof(outside), "%s/outside", top);
    ck_assert_int_eq(mkdir(tree, 0755), 0);
    ck_assert_int_eq(mkdir(outside, 0755), 0);
    put(outside, "secret", "OUTSIDE");
    mkd(tree, "a");
    mkd(tree, "a/b");
    mkd(tree, "d");
    put(tree, "a/b/f.txt", "inside");
    put(tree, "d/secret", "inside secret");
    put(tree, "f.txt", "top file");
    lnk("..", "up");
    lnk(outside, "abs");
    snprintf(o, sizeof(o), "%s/secret", outside);
    lnk(o, "leaf");
    lnk("a", "self");
    snprintf(o, sizeof(o), "%s/created", outside);
    lnk(o, "dangling");
    ck_assert_int_ge(root = open(tree, O_RDONLY | O_DIRECTORY), 0);
}

static void teardown(void)
{
    char cmd[128];
    close(root);
    ed_fs__force_fallback(false);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", top);
    ck_assert_int_eq(system(cmd), 0);
}

/* _i == 0: openat2 (where there is one); _i == 1: the forced walk. */
static void pick_path(int i)
{
    ed_fs__force_fallback(i == 1);
}

static void expect_path(int i)
{
    ck_assert_int_eq(ed_fs__used_openat2(), i == 0 && kernel_has_openat2);
}

static void refused(const char *rel, int flags, int want_errno)
{
    int fd = 12345;
    int rc = ed_fs_open_beneath(&fd, root, rel, flags, 0644);
    int e = errno;
    ck_assert_msg(rc == ED_ENOTFOUND, "%s: rc %d (%s)", rel, rc, ed_error_last());
    ck_assert_int_eq(fd, -1);
    ck_assert_msg(e == want_errno, "%s: errno %d (%s), want %d", rel, e, strerror(e), want_errno);
}

static char *slurp(const char *rel)
{
    char *buf = NULL;
    size_t len;
    int rc = ed_fs_read_beneath(&buf, &len, root, rel, 1 << 20);
    ck_assert_msg(rc == 0, "%s: %s", rel, ed_error_last());
    ck_assert_uint_eq(len, strlen(buf));
    return buf;
}

START_TEST(path_check_refuses_dotdot_absolute_empty_and_nul)
{
    static const char *bad[] = {"", "/etc/passwd", "..", "../x", "a/../f.txt", "a/./b", ".",
                                "a//b", "a/", "/", "a/b/.."};
    char longseg[300];
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int fd;
        ck_assert_msg(ed_fs_path_check(bad[i], strlen(bad[i])) == ED_EINVAL, "%s", bad[i]);
        ck_assert_msg(ed_fs_open_beneath(&fd, root, bad[i], O_RDONLY, 0) == ED_EINVAL, "%s", bad[i]);
        ck_assert_int_eq(fd, -1);
    }
    ck_assert_int_eq(ed_fs_path_check("a\0b", 3), ED_EINVAL);
    memset(longseg, 'x', sizeof(longseg) - 1);
    longseg[sizeof(longseg) - 1] = '\0';
    ck_assert_int_eq(ed_fs_path_check(longseg, strlen(longseg)), ED_EINVAL);
    ck_assert_int_eq(ed_fs_path_check("..hidden/x.y", 12), 0);
    ck_assert_int_eq(ed_fs_path_check("a/b/f.txt", 9), 0);
}
END_TEST

START_TEST(reads_regular_files_beneath)
{
    char *s;
    pick_path(_i);
    s = slurp("a/b/f.txt");
    expect_path(_i);
    ck_assert_str_eq(s, "inside");
    free(s);
    s = slurp("f.txt");
    ck_assert_str_eq(s, "top file");
    free(s);
}
END_TEST

START_TEST(symlink_components_are_refused)
{
    pick_path(_i);
    refused("abs/secret", O_RDONLY, ELOOP);      /* absolute link to a directory outside */
    refused("up/outside/secret", O_RDONLY, ELOOP); /* relative link out */
    refused("self/b/f.txt", O_RDONLY, ELOOP);    /* even a link that stays inside */
    refused("abs/new", O_WRONLY | O_CREAT | O_EXCL, ELOOP);
    {
        char p[200];
        snprintf(p, sizeof(p), "%s/new", outside);
        ck_assert_int_ne(access(p, F_OK), 0);
    }
}
END_TEST

START_TEST(symlink_leaf_is_refused_and_never_created_through)
{
    char p[200];
    pick_path(_i);
    refused("leaf", O_RDONLY, ELOOP);
    refused("leaf", O_WRONLY | O_TRUNC, ELOOP);
    refused("self", O_RDONLY | O_DIRECTORY, ELOOP);
    refused("dangling", O_WRONLY | O_CREAT, ELOOP);
    snprintf(p, sizeof(p), "%s/created", outside);
    ck_assert_int_ne(access(p, F_OK), 0);
    {
        char *s = NULL;
        size_t n;
        snprintf(p, sizeof(p), "%s/secret", outside);
        FILE *f = fopen(p, "r");
        char got[32] = "";
        ck_assert_ptr_nonnull(fgets(got, sizeof(got), f));
        fclose(f);
        ck_assert_str_eq(got, "OUTSIDE");     /* O_TRUNC went nowhere */
        ck_assert_int_eq(ed_fs_read_beneath(&s, &n, root, "leaf", 100), ED_ENOTFOUND);
        ck_assert_ptr_null(s);
    }
}
END_TEST

START_TEST(magic_links_are_refused)
{
    char rel[64];
    int proc, secret, fd;

    /* /proc/self as the root: "root" and "fd/N" are magic links that would
     * jump to the host's / and to an open file outside */
    pick_path(_i);
    ck_assert_int_ge(proc = open("/proc/self", O_RDONLY | O_DIRECTORY), 0);
    ck_assert_int_ge(secret = openat(root, "abs/secret", O_RDONLY), 0);   /* the test itself may */
    snprintf(rel, sizeof(rel), "fd/%d", secret);
    ck_assert_int_eq(ed_fs_open_beneath(&fd, proc, rel, O_RDONLY, 0), ED_ENOTFOUND);
    ck_assert_int_eq(errno, ELOOP);
    ck_assert_int_eq(ed_fs_open_beneath(&fd, proc, "root/etc/passwd", O_RDONLY, 0), ED_ENOTFOUND);
    ck_assert_int_eq(errno, ELOOP);
    ck_assert_int_eq(ed_fs_open_beneath(&fd, proc, "cwd", O_RDONLY | O_DIRECTORY, 0), ED_ENOTFOUND);
    ck_assert_int_eq(errno, ELOOP);
    /* the proc files themselves are regular and readable */
    ck_assert_int_eq(ed_fs_open_beneath(&fd, proc, "status", O_RDONLY, 0), 0);
    close(fd);
    close(secret);
    close(proc);
}
END_TEST

START_TEST(wrong_types_are_not_found)
{
    char p[200];
    int fd;
    pick_path(_i);
    refused("a", O_RDONLY, EISDIR);                 /* a directory where a file was wanted */
    refused("a/b", O_WRONLY, EISDIR);
    refused("f.txt", O_RDONLY | O_DIRECTORY, ENOTDIR);
    refused("f.txt/x", O_RDONLY, ENOTDIR);          /* a file as a directory on the way */
    refused("missing", O_RDONLY, ENOENT);
    refused("a/missing/f", O_RDONLY, ENOENT);
    snprintf(p, sizeof(p), "%s/fifo", tree);
    ck_assert_int_eq(mkfifo(p, 0644), 0);
    refused("fifo", O_RDONLY, ENXIO);               /* and the open did not block */
    refused("fifo", O_WRONLY, ENXIO);
    ck_assert_int_eq(ed_fs_open_beneath(&fd, root, "a/b", O_RDONLY | O_DIRECTORY, 0), 0);
    close(fd);
    ck_assert_msg(ed_fs_open_beneath(&fd, root, "a/b", O_PATH | O_DIRECTORY, 0) == 0, "%s", ed_error_last());
    close(fd);
    ck_assert_msg(ed_fs_open_beneath(&fd, root, "a/b/f.txt", O_PATH, 0) == 0, "%s", ed_error_last());
    close(fd);
    refused("leaf", O_PATH, ELOOP);     /* O_PATH | O_NOFOLLOW would open the link itself */
}
END_TEST

START_TEST(creates_beneath_and_reports_existing)
{
    int fd, fl;
    char *s;
    pick_path(_i);
    ck_assert_int_eq(ed_fs_open_beneath(&fd, root, "a/b/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600), 0);
    ck_assert_int_eq(write(fd, "made", 4), 4);
    fl = fcntl(fd, F_GETFL);
    ck_assert_int_eq(fl & O_NONBLOCK, 0);          /* the check's O_NONBLOCK is gone */
    ck_assert_int_ne(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
    close(fd);
    s = slurp("a/b/new.txt");
    ck_assert_str_eq(s, "made");
    free(s);
    ck_assert_int_eq(ed_fs_open_beneath(&fd, root, "a/b/new.txt", O_WRONLY | O_CREAT | O_EXCL, 0600),
                     ED_EEXISTS);
    refused("nodir/new.txt", O_WRONLY | O_CREAT, ENOENT);
}
END_TEST

START_TEST(read_size_cap_and_empty_file)
{
    char *buf = (char *)1;
    size_t n = 7;
    ck_assert_int_eq(ed_fs_read_beneath(&buf, &n, root, "a/b/f.txt", 5), ED_ETOOBIG);
    ck_assert_ptr_null(buf);
    ck_assert_int_eq(ed_fs_read_beneath(&buf, &n, root, "a/b/f.txt", 6), 0);
    ck_assert_str_eq(buf, "inside");
    free(buf);
    put(tree, "empty", "");
    ck_assert_int_eq(ed_fs_read_beneath(&buf, &n, root, "empty", 0), 0);
    ck_assert_uint_eq(n, 0);
    ck_assert_str_eq(buf, "");
    free(buf);
}
END_TEST

START_TEST(open_parent_creates_counts_and_refuses_links)
{
    const char *name;
    int dir, created;
    char p[200];

    ck_assert_int_eq(ed_fs_open_parent(&dir, &name, &created, root, "a/x/y/z.txt", true, 0755), 0);
    ck_assert_str_eq(name, "z.txt");
    ck_assert_int_eq(created, 2);
    ck_assert_int_eq(fsync(dir), 0);    /* a real descriptor, not O_PATH */
    close(dir);
    ck_assert_int_eq(ed_fs_open_parent(&dir, &name, &created, root, "a/x/y/z.txt", true, 0755), 0);
    ck_assert_int_eq(created, 0);
    close(dir);
    ck_assert_int_eq(ed_fs_open_parent(&dir, &name, &created, root, "top.txt", false, 0), 0);
    ck_assert_str_eq(name, "top.txt");
    close(dir);
    ck_assert_int_eq(ed_fs_open_parent(&dir, &name, &created, root, "abs/new/f", true, 0755), ED_ENOTFOUND);
    ck_assert_int_eq(errno, ELOOP);
    ck_assert_int_eq(dir, -1);
    snprintf(p, sizeof(p), "%s/new", outside);
    ck_assert_int_ne(access(p, F_OK), 0);
    ck_assert_int_eq(ed_fs_open_parent(&dir, &name, &created, root, "f.txt/x", true, 0755), ED_ENOTFOUND);
    ck_assert_int_eq(errno, ENOTDIR);
    ck_assert_int_eq(ed_fs_open_parent(&dir, &name, &created, root, "nope/x", false, 0), ED_ENOTFOUND);
    ck_assert_int_eq(errno, ENOENT);
    ck_assert_int_eq(ed_fs_open_parent(&dir, &name, &created, root, "../x", true, 0755), ED_EINVAL);
}
END_TEST

typedef struct seen {
    char   paths[64][128];
    size_t n;
    const char *swap_dir;    /* on seeing this directory, swap it for a link outside */
} seen;

static int record(const char *rel, const struct stat *sb, void *payload)
{
    seen *s = payload;
    ck_assert_uint_lt(s->n, 64);
    snprintf(s->paths[s->n++], sizeof(s->paths[0]), "%s%s", rel, S_ISDIR(sb->st_mode) ? "/" : "");
    if (s->swap_dir && strcmp(rel, s->swap_dir) == 0) {
        char a[300], b[300];
        snprintf(a, sizeof(a), "%s/%s", tree, rel);
        snprintf(b, sizeof(b), "%s/moved", top);
        ck_assert_int_eq(rename(a, b), 0);
        ck_assert_int_eq(symlink(outside, a), 0);
    }
    return strcmp(rel, "skipme") == 0 ? ED_FS_WALK_SKIP : 0;
}

static bool has(const seen *s, const char *p)
{
    for (size_t i = 0; i < s->n; i++)
        if (strcmp(s->paths[i], p) == 0)
            return true;
    return false;
}

START_TEST(walk_lists_files_and_dirs_never_links)
{
    static seen s;
    memset(&s, 0, sizeof(s));
    mkd(tree, "skipme");
    put(tree, "skipme/hidden", "x");
    ck_assert_int_eq(ed_fs_walk(root, 16, 1000, record, &s), 0);
    ck_assert(has(&s, "a/"));
    ck_assert(has(&s, "a/b/"));
    ck_assert(has(&s, "a/b/f.txt"));
    ck_assert(has(&s, "d/secret"));
    ck_assert(has(&s, "f.txt"));
    ck_assert(has(&s, "skipme/"));
    ck_assert(!has(&s, "skipme/hidden"));
    ck_assert_uint_eq(s.n, 7);     /* a/ a/b/ a/b/f.txt d/ d/secret f.txt skipme/ */
    for (size_t i = 0; i < s.n; i++)
        ck_assert_msg(strstr(s.paths[i], "secret") == NULL || strcmp(s.paths[i], "d/secret") == 0,
                      "%s", s.paths[i]);
}
END_TEST

START_TEST(walk_limits_depth_and_count)
{
    static seen s;
    memset(&s, 0, sizeof(s));
    ck_assert_int_eq(ed_fs_walk(root, 0, 1000, record, &s), 0);   /* root entries only */
    ck_assert(has(&s, "a/"));
    ck_assert(!has(&s, "a/b/"));
    memset(&s, 0, sizeof(s));
    ck_assert_int_eq(ed_fs_walk(root, 1, 1000, record, &s), 0);
    ck_assert(has(&s, "a/b/"));
    ck_assert(!has(&s, "a/b/f.txt"));
    memset(&s, 0, sizeof(s));
    ck_assert_int_eq(ed_fs_walk(root, 16, 2, record, &s), ED_ETOOBIG);
    ck_assert_uint_eq(s.n, 2);
}
END_TEST

START_TEST(walk_does_not_follow_a_directory_swapped_for_a_link)
{
    static seen s;
    memset(&s, 0, sizeof(s));
    s.swap_dir = "d";    /* replaced by a link to outside/ right after it was seen */
    ck_assert_int_eq(ed_fs_walk(root, 16, 1000, record, &s), 0);
    ck_assert(has(&s, "d/"));
    ck_assert(!has(&s, "d/secret"));    /* neither the old tree nor outside/secret */
}
END_TEST

/* The race of issue 11 at the lowest level: one thread swaps a directory and
 * a link to the outside (renameat2 RENAME_EXCHANGE) as fast as it can while
 * the test opens d/secret beneath the root; only the tree's bytes or
 * "not found" may come back. */
static atomic_bool stop_swapping;
static atomic_long swaps;

static void *swapper(void *arg)
{
    char a[300], b[300];
    (void)arg;
    snprintf(a, sizeof(a), "%s/d", tree);
    snprintf(b, sizeof(b), "%s/swap", tree);
    while (!atomic_load(&stop_swapping))
        if (syscall(SYS_renameat2, AT_FDCWD, a, AT_FDCWD, b, 2 /* RENAME_EXCHANGE */) == 0)
            atomic_fetch_add(&swaps, 1);
    return NULL;
}

START_TEST(rename_exchange_race_never_reaches_outside)
{
    pthread_t t;
    int inside = 0, missing = 0;

    pick_path(_i);
    lnk(outside, "swap");
    atomic_store(&stop_swapping, false);
    atomic_store(&swaps, 0);
    ck_assert_int_eq(pthread_create(&t, NULL, swapper, NULL), 0);
    for (int k = 0; k < 20000; k++) {
        char *buf = NULL;
        size_t n;
        int rc = ed_fs_read_beneath(&buf, &n, root, "d/secret", 100);
        if (rc == 0) {
            ck_assert_msg(strcmp(buf, "inside secret") == 0, "read '%s' through the swap", buf);
            inside++;
        } else {
            ck_assert_msg(rc == ED_ENOTFOUND, "rc %d: %s", rc, ed_error_last());
            missing++;
        }
        free(buf);
    }
    atomic_store(&stop_swapping, true);
    pthread_join(t, NULL);
    printf("race (%s): %ld swaps, %d reads of the tree's bytes, %d not found\n",
           _i == 0 && kernel_has_openat2 ? "openat2" : "walk", atomic_load(&swaps), inside, missing);
    ck_assert_int_gt(atomic_load(&swaps), 0);    /* the race did run */
}
END_TEST

/* A kernel (or a container's seccomp profile) without openat2: the call
 * answers ENOSYS here (a seccomp filter in Check's forked child), and
 * ed_fs notices and walks instead, with the same refusals. */
START_TEST(without_openat2_the_walk_takes_over)
{
    struct sock_filter f[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_openat2, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {(unsigned short)(sizeof(f) / sizeof(f[0])), f};
    char *s;

    ck_assert_int_eq(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
    ck_assert_int_eq(prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog), 0);
    ck_assert_int_eq(syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0), -1);
    ck_assert_int_eq(errno, ENOSYS);
    s = slurp("a/b/f.txt");
    ck_assert_str_eq(s, "inside");
    free(s);
    ck_assert(!ed_fs__used_openat2());
    refused("abs/secret", O_RDONLY, ELOOP);
    refused("leaf", O_RDONLY, ELOOP);
    s = slurp("d/secret");
    ck_assert_str_eq(s, "inside secret");
    free(s);
    ck_assert(!ed_fs__used_openat2());
}
END_TEST

int main(void)
{
    Suite *s = suite_create("ed_fs");
    TCase *tc = tcase_create("fs");
    SRunner *sr;
    int failed;
    long fd = syscall(SYS_openat2, AT_FDCWD, ".", NULL, 0);

    /* EFAULT/EINVAL: the call exists; ENOSYS: it does not */
    kernel_has_openat2 = !(fd < 0 && errno == ENOSYS);
    if (fd >= 0)
        close((int)fd);
    printf("openat2: %s\n", kernel_has_openat2 ? "present" : "missing (both loops use the walk)");
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 60);
    tcase_add_test(tc, path_check_refuses_dotdot_absolute_empty_and_nul);
    tcase_add_loop_test(tc, reads_regular_files_beneath, 0, 2);
    tcase_add_loop_test(tc, symlink_components_are_refused, 0, 2);
    tcase_add_loop_test(tc, symlink_leaf_is_refused_and_never_created_through, 0, 2);
    tcase_add_loop_test(tc, magic_links_are_refused, 0, 2);
    tcase_add_loop_test(tc, wrong_types_are_not_found, 0, 2);
    tcase_add_loop_test(tc, creates_beneath_and_reports_existing, 0, 2);
    tcase_add_test(tc, read_size_cap_and_empty_file);
    tcase_add_test(tc, open_parent_creates_counts_and_refuses_links);
    tcase_add_test(tc, walk_lists_files_and_dirs_never_links);
    tcase_add_test(tc, walk_limits_depth_and_count);
    tcase_add_test(tc, walk_does_not_follow_a_directory_swapped_for_a_link);
    tcase_add_loop_test(tc, rename_exchange_race_never_reaches_outside, 0, 2);
#if defined(__x86_64__)
    tcase_add_test(tc, without_openat2_the_walk_takes_over);
#endif
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? 1 : 0;
}
