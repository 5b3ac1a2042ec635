/*
 * sched_bench.c - scheduler benchmarks (not run by ctest):
 *
 *   1. one scheduling decision (sched_plan) over 10,000 queued items and 200
 *      running ones in 3 classes, and the queue positions/ETAs (sched_eta) of
 *      all of them: median and p99 over ITERS runs. Target: decision < 1 ms.
 *   2. submit-to-running on an idle host: sched_job_submit of a .py job, the
 *      scheduler thread marking it running, and the program's first
 *      instruction inside the sandbox (it writes a file). Target: < 50 ms
 *      beyond the sandboxed program's own start.
 *
 *     bench_sched [ITERS]        (part 2 needs root for the sandbox)
 */
#include "sched.h"

#include "ed_crypto.h"
#include "ed_error.h"
#include "ed_store.h"
#include "ed_time.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static void report(const char *what, int64_t *ns, int n)
{
    qsort(ns, (size_t)n, sizeof(*ns), cmp_i64);
    printf("%-44s median %8.3f ms   p99 %8.3f ms   (n=%d)\n", what, ns[n / 2] / 1e6,
           ns[(int)(n * 0.99) < n ? (int)(n * 0.99) : n - 1] / 1e6, n);
}

static void bench_decision(int iters)
{
    size_t nq = 10000, nr = 200;
    sched_item *q = malloc(nq * sizeof(*q));
    sched_run *r = malloc(nr * sizeof(*r));
    int64_t *start = malloc(nq * sizeof(*start)), *pre = malloc(nr * sizeof(*pre));
    int64_t *t_plan = malloc((size_t)iters * sizeof(int64_t)), *t_eta = malloc((size_t)iters * sizeof(int64_t));
    int *pos = malloc(nq * sizeof(*pos));
    int64_t *eta = malloc(nq * sizeof(*eta)), now = 1700000000000LL;
    sched_pool pools[3] = {{150, false}, {40, true}, {16, true}};
    size_t started = 0;

    srand(1);
    for (size_t i = 0; i < nr; i++) {
        int cls = i < 150 ? 0 : i < 190 ? 1 : 2;
        r[i] = (sched_run){(int64_t)(100000 + i), rand() % 2000 + 1, 1 << (rand() % 3), cls, 1,
                           now - rand() % 3600000, now + rand() % 7200000, rand() % 2 == 0, false};
    }
    for (size_t i = 0; i < nq; i++)
        q[i] = (sched_item){(int64_t)i + 1, rand() % 2000 + 1, 1 << (rand() % 3), rand() % 3, 1 + (rand() % 4 == 0),
                            rand() % 4, (int64_t)(rand() % 86400000), now - rand() % 86400000,
                            60000 + rand() % 7200000};
    for (int it = 0; it < iters; it++) {
        sched_decision d = {start, 0, pre, 0};
        int64_t t0 = ed_mono_ns();
        if (sched_plan(&d, q, nq, r, nr, pools, 3, now) < 0) {
            fprintf(stderr, "plan: %s\n", ed_error_last());
            exit(1);
        }
        t_plan[it] = ed_mono_ns() - t0;
        started = d.nstart;
        t0 = ed_mono_ns();
        if (sched_eta(pos, eta, q, nq, r, nr, pools, 3, now) < 0) {
            fprintf(stderr, "eta: %s\n", ed_error_last());
            exit(1);
        }
        t_eta[it] = ed_mono_ns() - t0;
    }
    printf("queue: %zu items, %zu running, 3 classes; one decision starts %zu\n", nq, nr, started);
    report("scheduling decision (sched_plan), 10k queued", t_plan, iters);
    report("positions + ETAs (sched_eta), 10k queued", t_eta, iters);
    free(q), free(r), free(start), free(pre), free(t_plan), free(t_eta), free(pos), free(eta);
}

static int write_script(const char *dir, void *payload)
{
    char path[800];
    FILE *f;

    (void)payload;
    snprintf(path, sizeof(path), "%s/start.py", dir);
    if ((f = fopen(path, "w")) == NULL)
        return ed_error_set(ED_EIO, "write %s", path);
    fputs("open('/home/aistudio/output/started', 'w').close()\n", f);
    fclose(f);
    return 0;
}

static int job_running(ed_store *st, int64_t id)
{
    sqlite3_stmt *s;
    int running = 0;

    if (ed_store_prepare(&s, st, "SELECT status FROM jobs WHERE id = ?1") < 0)
        return 0;
    sqlite3_bind_int64(s, 1, id);
    if (sqlite3_step(s) == SQLITE_ROW)
        running = strcmp((const char *)sqlite3_column_text(s, 0), "queued") != 0;
    sqlite3_finalize(s);
    return running;
}

static void bench_submit(int iters)
{
    char dir[] = "/tmp/eddy-bench-sched-XXXXXX", path[200], marker[300];
    ed_store *st = NULL;
    sched *s = NULL;
    sched_config cfg;
    int64_t *t_sub = malloc((size_t)iters * sizeof(int64_t)), *t_run = malloc((size_t)iters * sizeof(int64_t)),
            *t_prog = malloc((size_t)iters * sizeof(int64_t));
    int n = 0;

    if (geteuid() != 0) {
        printf("submit-to-running: skipped (the sandbox needs root)\n");
        return;
    }
    if (mkdtemp(dir) == NULL || ed_crypto_init() < 0)
        exit(1);
    snprintf(path, sizeof(path), "%s/eddy.db", dir);
    if (ed_store_open(&st, path) < 0 ||
        ed_store_exec(st, "INSERT INTO users(username, email, password_hash, role, tier, created_at, updated_at) "
                          "VALUES ('bench', 'b@x.org', 'x', 'user', 'premium', 0, 0)") < 0 ||
        ed_store_exec(st, "UPDATE sched_resources SET price_mcoins_per_hour = 0 WHERE name = 'cpu-basic'") < 0) {
        fprintf(stderr, "store: %s\n", ed_error_last());
        exit(1);
    }
    sched_config_defaults(&cfg, dir);
    if (sched_open(&s, st, &cfg) < 0) {
        fprintf(stderr, "sched_open: %s\n", ed_error_last());
        exit(1);
    }
    for (int it = 0; it < iters; it++) {
        sched_job_spec sp = {.user_id = 1, .tier = "premium", .project_id = "p1", .entry = "start.py",
                             .resource = "cpu-basic", .max_runtime_ms = 60000, .prepare = write_script};
        sched_job_info j;
        sched_job_info done;
        struct stat sb;
        int64_t t0 = ed_mono_ns(), t1, t2, t3 = 0;

        if (sched_job_submit(&j, s, &sp) < 0) {
            fprintf(stderr, "submit: %s\n", ed_error_last());
            break;
        }
        t1 = ed_mono_ns();
        while (!job_running(st, j.id) && ed_mono_ns() - t1 < 5000000000LL)
            usleep(100);
        t2 = ed_mono_ns();
        snprintf(marker, sizeof(marker), "%s/jobs/%lld/output/started", dir, (long long)j.id);
        while (ed_mono_ns() - t2 < 10000000000LL) {
            if (stat(marker, &sb) == 0) {
                t3 = ed_mono_ns();
                break;
            }
            usleep(200);
        }
        /* wait for it to end so the next one meets an idle host */
        do {
            usleep(2000);
        } while (sched_job_get(&done, s, 0, j.id) == 0 &&
                 (strcmp(done.status, "running") == 0 || strcmp(done.status, "queued") == 0));
        if (t3 == 0) {
            fprintf(stderr, "job %lld never started its program (%s)\n", (long long)j.id, done.status);
            continue;
        }
        t_sub[n] = t1 - t0;
        t_run[n] = t2 - t1;
        t_prog[n] = t3 - t2;
        n++;
    }
    if (n > 0) {
        report("submit (validate, prepare tree, queue)", t_sub, n);
        report("queued -> running (scheduler latency)", t_run, n);
        report("running -> program's first line (sandbox+python)", t_prog, n);
    }
    sched_close(s);
    ed_store_close(st);
    snprintf(path, sizeof(path), "rm -rf %s", dir);
    if (system(path) != 0)
        fprintf(stderr, "could not remove %s\n", dir);
    free(t_sub), free(t_run), free(t_prog);
}

int main(int argc, char **argv)
{
    int iters = argc > 1 ? atoi(argv[1]) : 200;

    if (iters < 1)
        iters = 1;
    bench_decision(iters);
    bench_submit(iters < 20 ? iters : 20);
    return 0;
}
