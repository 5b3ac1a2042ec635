/*
 * unit_util.h - small helpers that several Check suites share: run a suite,
 * read a number from a shell command, write as an unprivileged user until a
 * disk quota stops it, remove a temporary tree with whatever is mounted
 * beneath it, read one number from a store (include ed_store.h first). Header-only (each suite is its own executable); include it by
 * a relative path ("../support/unit_util.h").
 */
#ifndef UNIT_UTIL_H
#define UNIT_UTIL_H

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define UNIT_NOBODY 65534

/* Run every test of `s` (and free it): EXIT_FAILURE when any failed. */
__attribute__((unused)) static int unit_run(Suite *s)
{
    SRunner *sr = srunner_create(s);
    int failed;

    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* A suite and one test case, both named `name`, with the tests of `tests`
 * (as START_TEST names them, NULL-terminated), each limited to `timeout_s`
 * (0: Check's default, CK_DEFAULT_TIMEOUT) and, when `setup` or `teardown`
 * is not NULL, run between them as a checked fixture; then as unit_run().
 *     const TTest *tests[] = {hold_rejects_negative_amount, ..., NULL};
 *     return unit_tests_run("quota", 0, setup, teardown, tests); */
__attribute__((unused)) static int unit_tests_run(const char *name, double timeout_s, SFun setup, SFun teardown,
                                                  const TTest *const *tests)
{
    Suite *s = suite_create(name);
    TCase *tc = tcase_create(name);

    if (setup || teardown)
        tcase_add_checked_fixture(tc, setup, teardown);
    if (timeout_s > 0)
        tcase_set_timeout(tc, timeout_s);
    for (; *tests; tests++)
        tcase_add_test(tc, *tests);
    suite_add_tcase(s, tc);
    return unit_run(s);
}

/* The first number that shell command `cmd` prints; -1 when it prints none. */
__attribute__((unused)) static int unit_popen_int(const char *cmd)
{
    FILE *f;
    int n = -1;

    if ((f = popen(cmd, "r")) != NULL) {
        if (fscanf(f, "%d", &n) != 1)
            n = -1;
        pclose(f);
    }
    return n;
}

/* As nobody (an unprivileged writer, as a kernel or a job is): write `want`
 * bytes to `file` in 1 MiB pieces, then fsync and close it. Returns the bytes
 * written; *err gets the errno that stopped it (0: all written). */
__attribute__((unused)) static int64_t unit_write_as_nobody(const char *file, int64_t want, int *err)
{
    int pfd[2];
    int64_t res[2] = {0, 0};
    pid_t pid;
    int wst;

    ck_assert_int_eq(pipe(pfd), 0);
    pid = fork();
    ck_assert_int_ge(pid, 0);
    if (pid == 0) {
        static char buf[1 << 20];
        int64_t done = 0, e = 0;
        int fd;
        memset(buf, 'x', sizeof(buf));
        if (setgid(UNIT_NOBODY) < 0 || setuid(UNIT_NOBODY) < 0)
            _exit(3);
        if ((fd = open(file, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0) {
            e = errno;
        } else {
            /* a short write at the limit: the next one fails */
            while (done < want) {
                ssize_t k = write(fd, buf, sizeof(buf));
                if (k < 0) {
                    e = errno;
                    break;
                }
                done += k;
            }
            if (e == 0 && fsync(fd) < 0)
                e = errno;
            if (close(fd) < 0 && e == 0)
                e = errno;
        }
        res[0] = done;
        res[1] = e;
        if (write(pfd[1], res, sizeof(res)) != sizeof(res))
            _exit(4);
        _exit(0);
    }
    close(pfd[1]);
    ck_assert_int_eq(read(pfd[0], res, sizeof(res)), sizeof(res));
    close(pfd[0]);
    ck_assert_int_eq(waitpid(pid, &wst, 0), pid);
    ck_assert(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
    *err = (int)res[1];
    return res[0];
}

/* Unmount (lazily, deepest first) whatever is mounted beneath `dir`, then
 * remove it: nothing of a failed test stays mounted or on disk. */
__attribute__((unused)) static void unit_remove_tree(const char *dir)
{
    char cmd[400];

    snprintf(cmd, sizeof(cmd), "grep -o ' %s[^ ]*' /proc/self/mounts | sort -r | xargs -r -n1 umount -l", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "teardown: %s failed\n", cmd);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "teardown: %s failed\n", cmd);
}

#ifdef ED_STORE_H
/* The first column of the first row that `sql` answers in `store` (a
 * count, a sum, one value); -1 when it answers no row. Defined where the
 * suite included ed_store.h before this header. */
__attribute__((unused)) static int64_t unit_store_int(ed_store *store, const char *sql)
{
    sqlite3_stmt *q = NULL;
    int64_t v = -1;

    ck_assert_int_eq(ed_store_prepare(&q, store, sql), 0);
    if (sqlite3_step(q) == SQLITE_ROW)
        v = sqlite3_column_int64(q, 0);
    sqlite3_finalize(q);
    return v;
}
#endif

#endif
