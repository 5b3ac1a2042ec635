/*
 * bench_sandbox_launch - sandbox launch to exit of /bin/true, side by side
 * with `unshare --user --pid --mount --net --fork /bin/true`.
 *
 *   bench_sandbox_launch [ITERS]        (default 100; needs root)
 *
 * Alternates the two (ours, unshare, ours, ...) so background load hits both
 * alike, and prints median and p90 per side and the ratio of medians. Ours
 * does more: cgroup create/limits/remove, id maps, a built root with
 * pivot_root, a fresh /proc, /dev, /tmp and /home tmpfs, capability drop,
 * seccomp, an init. Target: at most 3x unshare.
 */
#include "ed_error.h"
#include "sbx.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double ours(void)
{
    char *argv[] = {"/bin/true", NULL};
    sbx_spec s;
    sbx_job *j;
    sbx_usage u;

    sbx_spec_init(&s);
    s.argv = argv;
    s.host_uid = s.host_gid = 203000;
    s.stdio[0] = s.stdio[1] = s.stdio[2] = -1;
    s.mem_bytes = 256 << 20;
    s.pids = 64;
    s.cpu_millis = 1000;
    s.wall_ms = 10000;
    double t0 = now_ms();
    if (sbx_launch(&j, &s) < 0) {
        fprintf(stderr, "launch: %s\n", ed_error_last());
        exit(1);
    }
    if (sbx_job_wait(j, -1, &u) < 0 || !u.exited || u.exit_code != 0) {
        fprintf(stderr, "/bin/true failed in the sandbox\n");
        exit(1);
    }
    sbx_job_free(j);
    return now_ms() - t0;
}

static double peer(void)
{
    double t0 = now_ms();
    pid_t pid = fork();
    int st;
    if (pid == 0) {
        execlp("unshare", "unshare", "--user", "--pid", "--mount", "--net", "--fork", "/bin/true",
               (char *)NULL);
        _exit(127);
    }
    if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
        fprintf(stderr, "unshare failed\n");
        exit(1);
    }
    return now_ms() - t0;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 100;
    if (n < 5)
        n = 5;
    double *a = calloc((size_t)n, sizeof(double)), *b = calloc((size_t)n, sizeof(double));
    if (!a || !b)
        return 1;
    ours();     /* warm caches on both sides */
    peer();
    for (int i = 0; i < n; i++) {
        a[i] = ours();
        b[i] = peer();
    }
    qsort(a, (size_t)n, sizeof(double), cmp);
    qsort(b, (size_t)n, sizeof(double), cmp);
    printf("%-58s %8s %8s\n", "launch to exit of /bin/true (ms)", "median", "p90");
    printf("%-58s %8.2f %8.2f\n", "eddy sandbox (sbx_launch + wait + free)", a[n / 2], a[n * 9 / 10]);
    printf("%-58s %8.2f %8.2f\n", "unshare --user --pid --mount --net --fork", b[n / 2], b[n * 9 / 10]);
    printf("ratio (median): %.2fx  (target <= 3x)\n", a[n / 2] / b[n / 2]);
    free(a);
    free(b);
    return 0;
}
