/*
 * test_disk - sbx.h disk quotas on the real kernel: trees with a limit that
 * an unprivileged writer hits with EDQUOT/ENOSPC, shared by a tree's
 * directories; hard links across trees refused; trees attached again after
 * their mounts are gone (a reboot); directories and trees removed.
 *
 *   test_disk          the "loop images" mechanism (loop devices and ext4)
 *   test_disk volume   the "loop volume" (ext4 with project quotas): create,
 *                      mount, remount; project quota limits; a project id
 *                      change refused from a user namespace
 *
 * Needs root. Exits 77 (skip) with the reason where the host lacks what a
 * suite needs: no root, no loop devices, or (volume) a kernel without ext4
 * quota support.
 */
#include "ed_error.h"
#include "sbx.h"

#include "../support/unit_util.h"

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define NOBODY UNIT_NOBODY
#define MIB (INT64_C(1) << 20)

struct t_fsxattr {
    uint32_t fsx_xflags, fsx_extsize, fsx_nextents, fsx_projid, fsx_cowextsize;
    unsigned char fsx_pad[8];
};
#define T_FSGETXATTR _IOR('X', 31, struct t_fsxattr)
#define T_FSSETXATTR _IOW('X', 32, struct t_fsxattr)

static char data[128];
static sbx_disk disk;
static unsigned probe_flags;

static void setup(void)
{
    snprintf(data, sizeof(data), "/tmp/eddy-disk-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(data));
    ck_assert_int_eq(chmod(data, 0755), 0);   /* nobody walks to its tree */
    ck_assert_int_eq(sbx_disk_probe(&disk, data, 256 * MIB, probe_flags), 0);
    ck_assert_msg(disk.mech != SBX_DISK_NONE, "%s", disk.detail);
}

static void teardown(void)
{
    char vol[200];

    /* nothing of a failed test may stay mounted */
    snprintf(vol, sizeof(vol), "%s/volume", data);
    umount2(vol, MNT_DETACH);
    unit_remove_tree(data);
}

/* DATA/<rel> */
static void path(char *out, size_t n, const char *rel)
{
    snprintf(out, n, "%s/%s", data, rel);
}

/* A job's tree: DATA/jobs/<name>/{work,output}, created and given to nobody. */
static void job_tree(char work[200], char output[200], const char *name, uint32_t projid, int64_t limit)
{
    char dir[200];
    const char *dirs[2];

    path(dir, 200, "jobs");
    mkdir(dir, 0755);
    snprintf(dir, 200, "%s/jobs/%s", data, name);
    ck_assert_int_eq(mkdir(dir, 0755), 0);
    snprintf(work, 200, "%.180s/work", dir);
    snprintf(output, 200, "%.180s/output", dir);
    dirs[0] = work;
    dirs[1] = output;
    ck_assert_msg(sbx_disk_tree_init(&disk, dirs, 2, projid, limit) == 0, "%s", ed_error_last());
    ck_assert_int_eq(chown(work, NOBODY, NOBODY), 0);
    ck_assert_int_eq(chown(output, NOBODY, NOBODY), 0);
}

/* DIR/<name> (its path in `f`), made with `text` and `mode`. */
static void make_file(char f[300], const char *dir, const char *name, const char *text, mode_t mode)
{
    int fd;

    snprintf(f, 300, "%s/%s", dir, name);
    ck_assert_int_ge(fd = open(f, O_WRONLY | O_CREAT, mode), 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

/* ---- every mechanism -------------------------------------------------------- */

START_TEST(tree_limit_refuses_writes_past_it)
{
    char work[200], output[200], f[300];
    int64_t wrote, used = 0, inodes = 0;
    int e;

    job_tree(work, output, "1", SBX_DISK_PROJID_JOBS + 1, 8 * MIB);
    snprintf(f, sizeof(f), "%s/big.bin", work);
    wrote = unit_write_as_nobody(f, 64 * MIB, &e);
    ck_assert_msg(e == EDQUOT || e == ENOSPC, "a write past 8 MiB ended with errno %d (%s) after %lld bytes", e,
                  strerror(e), (long long)wrote);
    ck_assert_msg(wrote >= 6 * MIB && wrote <= 9 * MIB, "wrote %lld bytes under an 8 MiB limit", (long long)wrote);
    ck_assert_int_eq(sbx_disk_tree_usage(&disk, work, SBX_DISK_PROJID_JOBS + 1, &used, &inodes), 0);
    ck_assert_msg(used >= wrote - MIB && used <= 9 * MIB, "usage %lld after writing %lld", (long long)used,
                  (long long)wrote);
    ck_assert_int_ge(inodes, 1);
    /* the output directory shares the limit */
    snprintf(f, sizeof(f), "%s/more.bin", output);
    wrote = unit_write_as_nobody(f, 4 * MIB, &e);
    ck_assert_msg(e == EDQUOT || e == ENOSPC, "output past the shared limit: errno %d, %lld bytes", e,
                  (long long)wrote);
    /* deleting frees the space again */
    snprintf(f, sizeof(f), "%s/big.bin", work);
    ck_assert_int_eq(unlink(f), 0);
    snprintf(f, sizeof(f), "%s/more.bin", output);
    wrote = unit_write_as_nobody(f, 4 * MIB, &e);
    ck_assert_msg(e == 0 && wrote == 4 * MIB, "after deleting: errno %d, %lld bytes", e, (long long)wrote);
}
END_TEST

START_TEST(hard_link_across_trees_is_refused)
{
    char wa[200], oa[200], wb[200], ob[200], src[300], dst[300];

    job_tree(wa, oa, "a", SBX_DISK_PROJID_JOBS + 2, 8 * MIB);
    job_tree(wb, ob, "b", SBX_DISK_PROJID_JOBS + 3, 8 * MIB);
    make_file(src, wa, "f", "", 0644);
    snprintf(dst, sizeof(dst), "%s/f", wb);
    errno = 0;
    ck_assert_int_eq(link(src, dst), -1);
    ck_assert_msg(errno == EXDEV, "link across trees: %s", strerror(errno));
}
END_TEST

START_TEST(tree_attaches_again_after_its_mounts_are_gone)
{
    char work[200], output[200], f[300], buf[16] = "";
    const char *dirs[2];
    int fd;

    job_tree(work, output, "r", SBX_DISK_PROJID_JOBS + 4, 8 * MIB);
    make_file(f, output, "model.txt", "weights", 0644);
    if (disk.mech == SBX_DISK_PRJQUOTA)
        return;   /* nothing is mounted */
    /* a reboot: every mount gone, the images or the volume stay */
    ck_assert_int_eq(umount2(work, 0), 0);
    ck_assert_int_eq(umount2(output, 0), 0);
    ck_assert_int_ne(access(f, F_OK), 0);
    if (disk.mech == SBX_DISK_VOLUME) {
        char img[200], mnt[200];
        path(mnt, sizeof(mnt), "volume");
        path(img, sizeof(img), "volume.img");
        ck_assert_int_eq(umount2(mnt, 0), 0);
        ck_assert_int_eq(sbx_disk_volume_mount(img, mnt, 256 * MIB, 1), 0);
    }
    dirs[0] = work;
    dirs[1] = output;
    ck_assert_msg(sbx_disk_tree_init(&disk, dirs, 2, SBX_DISK_PROJID_JOBS + 4, 8 * MIB) == 0, "%s",
                  ed_error_last());
    ck_assert_int_ge(fd = open(f, O_RDONLY), 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf) - 1), 7);
    close(fd);
    ck_assert_str_eq(buf, "weights");
    /* attaching an attached tree changes nothing */
    ck_assert_int_eq(sbx_disk_tree_init(&disk, dirs, 2, SBX_DISK_PROJID_JOBS + 4, 8 * MIB), 0);
}
END_TEST

START_TEST(attach_while_a_lazy_unmount_lives_reuses_the_filesystem)
{
    char work[200], output[200], f[300], buf[16] = "";
    const char *dirs[2];
    int fd, fd2;

    if (disk.mech != SBX_DISK_IMAGES)
        return;   /* only images are attached per tree */
    job_tree(work, output, "z", SBX_DISK_PROJID_JOBS + 7, 8 * MIB);
    snprintf(f, sizeof(f), "%s/open.txt", output);
    ck_assert_int_ge(fd = open(f, O_WRONLY | O_CREAT, 0644), 0);
    /* a shutdown's lazy unmount while something still holds the filesystem */
    ck_assert_int_eq(umount2(work, MNT_DETACH), 0);
    ck_assert_int_eq(umount2(output, MNT_DETACH), 0);
    dirs[0] = work;
    dirs[1] = output;
    ck_assert_msg(sbx_disk_tree_init(&disk, dirs, 2, SBX_DISK_PROJID_JOBS + 7, 8 * MIB) == 0, "%s",
                  ed_error_last());
    /* one filesystem, not two over one image: the old descriptor's write shows */
    ck_assert_int_eq(write(fd, "late", 4), 4);
    ck_assert_int_eq(fsync(fd), 0);
    close(fd);
    ck_assert_int_ge(fd2 = open(f, O_RDONLY), 0);
    ck_assert_int_eq(read(fd2, buf, sizeof(buf) - 1), 4);
    close(fd2);
    ck_assert_str_eq(buf, "late");
}
END_TEST

START_TEST(clear_then_remove_frees_everything)
{
    char work[200], output[200], f[300], img[200];
    const char *out1[1];
    struct stat sb;

    job_tree(work, output, "c", SBX_DISK_PROJID_JOBS + 5, 8 * MIB);
    make_file(f, work, "a.txt", "", 0644);
    make_file(f, output, "b.txt", "", 0644);
    /* the job ended: its work copy goes, its output stays */
    ck_assert_int_eq(sbx_disk_path_clear(work), 0);
    ck_assert_int_ne(lstat(work, &sb), 0);
    ck_assert_int_eq(access(f, F_OK), 0);
    /* retention: the rest goes */
    out1[0] = output;
    ck_assert_msg(sbx_disk_tree_remove(&disk, out1, 1, SBX_DISK_PROJID_JOBS + 5) == 0, "%s", ed_error_last());
    ck_assert_int_ne(lstat(output, &sb), 0);
    snprintf(img, sizeof(img), "%s/images/%u.img", data, SBX_DISK_PROJID_JOBS + 5);
    ck_assert_int_ne(lstat(img, &sb), 0);
    /* and the project id can hold a new tree */
    job_tree(work, output, "c2", SBX_DISK_PROJID_JOBS + 5, 8 * MIB);
}
END_TEST

START_TEST(freeze_copies_output_out_of_the_tree_as_it_was)
{
    char work[200], output[200], f[300], g[300], buf[64];
    struct stat st, st2;
    int fd;

    job_tree(work, output, "f", SBX_DISK_PROJID_JOBS + 8, 8 * MIB);
    make_file(f, output, "model.bin", "weights", 0640);
    ck_assert_int_eq(chown(f, NOBODY, NOBODY), 0);
    /* a thousand hard links to 1 MiB: one copy, not a GiB */
    snprintf(f, sizeof(f), "%s/big.bin", output);
    ck_assert_int_ge(fd = open(f, O_WRONLY | O_CREAT, 0644), 0);
    ck_assert_int_eq(ftruncate(fd, MIB), 0);
    ck_assert_int_eq(pwrite(fd, "x", 1, MIB - 1), 1);
    close(fd);
    snprintf(g, sizeof(g), "%s/links", output);
    ck_assert_int_eq(mkdir(g, 0755), 0);
    for (int i = 0; i < 1000; i++) {
        snprintf(g, sizeof(g), "%s/links/%d", output, i);
        ck_assert_int_eq(link(f, g), 0);
    }
    /* a 1 TiB sparse file: holes stay holes */
    snprintf(f, sizeof(f), "%s/sparse.bin", output);
    ck_assert_int_ge(fd = open(f, O_WRONLY | O_CREAT, 0644), 0);
    ck_assert_int_eq(pwrite(fd, "end", 3, (INT64_C(1) << 40) - 3), 3);
    close(fd);
    /* a link to a host file is copied as a link, never followed */
    snprintf(f, sizeof(f), "%s/shadow", output);
    ck_assert_int_eq(symlink("/etc/shadow", f), 0);
    snprintf(f, sizeof(f), "%s/pipe", output);
    ck_assert_int_eq(mkfifo(f, 0644), 0);

    ck_assert_msg(sbx_disk_path_clear(work) == 0, "%s", ed_error_last());
    ck_assert_msg(sbx_disk_path_freeze(output) == 0, "%s", ed_error_last());
    /* a plain directory on the parent's filesystem now */
    {
        char parent[200];
        snprintf(parent, sizeof(parent), "%s/jobs/f", data);
        ck_assert_int_eq(stat(parent, &st), 0);
        ck_assert_int_eq(stat(output, &st2), 0);
        ck_assert_int_eq(st.st_dev, st2.st_dev);
        ck_assert_int_eq(st2.st_uid, NOBODY);
    }
    snprintf(f, sizeof(f), "%s/model.bin", output);
    ck_assert_int_ge(fd = open(f, O_RDONLY), 0);
    ck_assert_int_eq(read(fd, buf, sizeof(buf)), 7);
    close(fd);
    ck_assert_int_eq(stat(f, &st), 0);
    ck_assert_int_eq(st.st_uid, NOBODY);
    ck_assert_int_eq(st.st_mode & 0777, 0640);
    snprintf(f, sizeof(f), "%s/big.bin", output);
    ck_assert_int_eq(stat(f, &st), 0);
    ck_assert_int_eq(st.st_nlink, 1001);
    snprintf(f, sizeof(f), "%s/sparse.bin", output);
    ck_assert_int_eq(stat(f, &st), 0);
    ck_assert_int_eq(st.st_size, INT64_C(1) << 40);
    ck_assert_int_lt((int64_t)st.st_blocks * 512, MIB);
    snprintf(f, sizeof(f), "%s/shadow", output);
    ck_assert_int_eq(lstat(f, &st), 0);
    ck_assert(S_ISLNK(st.st_mode));
    ck_assert_int_eq(readlink(f, buf, sizeof(buf)), 11);
    snprintf(f, sizeof(f), "%s/pipe", output);
    ck_assert_int_ne(lstat(f, &st), 0);
    /* again: nothing to do */
    ck_assert_int_eq(sbx_disk_path_freeze(output), 0);
    /* the tree goes; the frozen output stays */
    ck_assert_int_eq(sbx_disk_tree_exists(&disk, SBX_DISK_PROJID_JOBS + 8), disk.mech != SBX_DISK_PRJQUOTA);
    ck_assert_int_eq(sbx_disk_tree_remove(&disk, NULL, 0, SBX_DISK_PROJID_JOBS + 8), 0);
    ck_assert_int_eq(sbx_disk_tree_exists(&disk, SBX_DISK_PROJID_JOBS + 8), 0);
    snprintf(f, sizeof(f), "%s/model.bin", output);
    ck_assert_int_eq(access(f, R_OK), 0);
}
END_TEST

START_TEST(tree_init_rejects_bad_arguments)
{
    const char *rel[] = {"jobs/1/work"};
    const char *dup[] = {"/tmp/x/work", "/tmp/y/work"};
    const char *ok[] = {"/tmp/never/work"};

    ck_assert_int_eq(sbx_disk_tree_init(&disk, rel, 1, 7, MIB), ED_EINVAL);
    ck_assert_int_eq(sbx_disk_tree_init(&disk, dup, 2, 7, MIB), ED_EINVAL);
    ck_assert_int_eq(sbx_disk_tree_init(&disk, ok, 1, 0, MIB), ED_EINVAL);
    ck_assert_int_eq(sbx_disk_tree_init(&disk, ok, 1, 7, 0), ED_EINVAL);
    ck_assert_int_eq(sbx_disk_tree_init(&disk, ok, 0, 7, MIB), ED_EINVAL);
}
END_TEST

START_TEST(probe_without_root_names_what_is_missing)
{
    int pfd[2], st;
    char detail[800] = "";
    pid_t pid;

    ck_assert_int_eq(pipe(pfd), 0);
    ck_assert_int_ge(pid = fork(), 0);
    if (pid == 0) {
        sbx_disk d;
        if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(3);
        if (sbx_disk_probe(&d, "/tmp", -1, SBX_DISK_NO_PRJQUOTA) < 0 || d.mech != SBX_DISK_NONE)
            _exit(4);
        if (write(pfd[1], d.detail, strlen(d.detail)) < 0)
            _exit(5);
        _exit(0);
    }
    close(pfd[1]);
    ck_assert_int_ge(read(pfd[0], detail, sizeof(detail) - 1), 1);
    close(pfd[0]);
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_int_eq(WEXITSTATUS(st), 0);
    ck_assert_msg(strstr(detail, "need root"), "%s", detail);
    ck_assert_str_eq(sbx_disk_mech_name(SBX_DISK_NONE), "none");
}
END_TEST

/* ---- loop volume (project quotas) -------------------------------------------- */

START_TEST(volume_is_created_mounted_and_remounted)
{
    char img[200], mnt[200], f[300];
    struct stat sb;

    path(img, sizeof(img), "volume.img");
    path(mnt, sizeof(mnt), "volume");
    ck_assert_int_eq(disk.mech, SBX_DISK_VOLUME);
    ck_assert_int_eq(stat(img, &sb), 0);
    ck_assert_int_eq(sb.st_size, 256 * MIB);
    ck_assert_int_lt((int64_t)sb.st_blocks * 512, 64 * MIB);   /* sparse */
    make_file(f, mnt, "marker", "", 0600);
    /* mounting a mounted volume is a no-op; after an unmount it comes back */
    ck_assert_int_eq(sbx_disk_volume_mount(img, mnt, 256 * MIB, 1), 0);
    ck_assert_int_eq(umount2(mnt, 0), 0);
    ck_assert_int_ne(access(f, F_OK), 0);
    ck_assert_int_eq(sbx_disk_probe(&disk, data, 256 * MIB, probe_flags), 0);
    ck_assert_int_eq(disk.mech, SBX_DISK_VOLUME);
    ck_assert_int_eq(access(f, F_OK), 0);
}
END_TEST

START_TEST(projid_change_is_refused_in_a_user_namespace)
{
    char work[200], output[200], f[300];
    pid_t pid;
    int fd, st;

    job_tree(work, output, "u", SBX_DISK_PROJID_JOBS + 6, 8 * MIB);
    make_file(f, work, "mine", "", 0644);
    ck_assert_int_eq(chown(f, NOBODY, NOBODY), 0);
    ck_assert_int_ge(pid = fork(), 0);
    if (pid == 0) {
        /* as a sandboxed job is: an unprivileged uid, root in its own user
         * namespace, owner of the file */
        struct t_fsxattr fa;
        char map[64];
        int m;
        if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(10);
        if (unshare(CLONE_NEWUSER) < 0)
            _exit(11);
        if ((m = open("/proc/self/setgroups", O_WRONLY)) >= 0) {
            if (write(m, "deny", 4) < 0)
                _exit(12);
            close(m);
        }
        snprintf(map, sizeof(map), "0 %d 1", NOBODY);
        if ((m = open("/proc/self/uid_map", O_WRONLY)) < 0 || write(m, map, strlen(map)) < 0)
            _exit(13);
        close(m);
        if ((fd = open(f, O_RDONLY)) < 0 || ioctl(fd, T_FSGETXATTR, &fa) < 0)
            _exit(14);
        if (fa.fsx_projid != SBX_DISK_PROJID_JOBS + 6)
            _exit(15);
        if (ioctl(fd, T_FSSETXATTR, &fa) < 0)
            _exit(16);   /* unchanged attributes are allowed: the owner check passed */
        fa.fsx_projid = 1;
        if (ioctl(fd, T_FSSETXATTR, &fa) == 0)
            _exit(17);   /* ESCAPED: moved out of its tree's quota */
        _exit(errno == EINVAL || errno == EPERM ? 0 : 18);
    }
    ck_assert_int_eq(waitpid(pid, &st, 0), pid);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child status %d", WEXITSTATUS(st));
}
END_TEST

int main(int argc, char **argv)
{
    int volume = argc > 1 && strcmp(argv[1], "volume") == 0;
    Suite *s = suite_create(volume ? "disk (loop volume)" : "disk");
    TCase *tc = tcase_create("trees");

    if (geteuid() != 0) {
        printf("SKIP: disk quotas need root\n");
        return 77;
    }
    probe_flags = SBX_DISK_SETUP | SBX_DISK_NO_PRJQUOTA | (volume ? 0 : SBX_DISK_NO_VOLUME);
    {
        char d[] = "/tmp/eddy-disk-probe-XXXXXX", cmd[128];
        int ok;
        if (mkdtemp(d) == NULL) {
            perror("mkdtemp");
            return 1;
        }
        ok = sbx_disk_probe(&disk, d, 256 * MIB, probe_flags) == 0 &&
             disk.mech == (volume ? SBX_DISK_VOLUME : SBX_DISK_IMAGES);
        if (disk.mech == SBX_DISK_VOLUME) {
            snprintf(cmd, sizeof(cmd), "%s/volume", d);
            umount2(cmd, MNT_DETACH);
        }
        snprintf(cmd, sizeof(cmd), "rm -rf %s", d);
        if (system(cmd) != 0)
            fprintf(stderr, "cannot remove %s\n", d);
        if (!ok) {
            printf("SKIP: no %s on this host: %s\n", volume ? "loop volume with project quotas" : "loop images",
                   disk.detail);
            return 77;
        }
    }
    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_add_test(tc, tree_limit_refuses_writes_past_it);
    tcase_add_test(tc, hard_link_across_trees_is_refused);
    tcase_add_test(tc, tree_attaches_again_after_its_mounts_are_gone);
    tcase_add_test(tc, attach_while_a_lazy_unmount_lives_reuses_the_filesystem);
    tcase_add_test(tc, clear_then_remove_frees_everything);
    tcase_add_test(tc, freeze_copies_output_out_of_the_tree_as_it_was);
    tcase_add_test(tc, tree_init_rejects_bad_arguments);
    if (volume) {
        tcase_add_test(tc, volume_is_created_mounted_and_remounted);
        tcase_add_test(tc, projid_change_is_refused_in_a_user_namespace);
    } else {
        tcase_add_test(tc, probe_without_root_names_what_is_missing);
    }
    suite_add_tcase(s, tc);
    return unit_run(s);
}
