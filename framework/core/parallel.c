/* parallel.c - the framework's thread pool (fw_parallel.h).
 *
 * One persistent pool of (threads - 1) workers plus the calling thread.
 * A loop is published as a job with an atomic chunk counter; workers and
 * the caller claim chunks until none are left, then the caller waits for
 * the stragglers. Idle workers spin briefly (a loop often follows a loop)
 * and then sleep on a condition variable so they leave the cores to
 * OpenBLAS between our kernels.
 *
 * OpenBLAS: while a loop runs, OpenBLAS is set to 1 thread so a gemm called
 * from inside chunks does not start OpenBLAS's own pool on top of ours;
 * afterwards it goes back to the pool's thread count, so a gemm called from
 * plain op code uses every core. See framework/README.md ("Threads").
 */
#include "fw_parallel.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_THREADS 256
#define SPIN_ITERS 20000

typedef struct job {
    fw_parallel_fn fn;
    void *ctx;
    int64_t n, chunk, nchunks;
    atomic_llong next;        /* next chunk to claim */
} job;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int nthreads = 1;                 /* including the caller */
static int blas_threads = 1;             /* OpenBLAS threads outside our loops */
static int nworkers_started;
static atomic_uint generation;           /* bumped per job */
static job *_Atomic current;
static atomic_int busy;                  /* workers between reading current and done */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER; /* one loop at a time */
static atomic_int stop_below = MAX_THREADS; /* workers with index >= this park */
static _Thread_local bool in_region;

static void run_chunks(job *j)
{
    int64_t c;
    while ((c = atomic_fetch_add_explicit(&j->next, 1, memory_order_relaxed)) < j->nchunks) {
        int64_t b = c * j->chunk;
        int64_t e = b + j->chunk < j->n ? b + j->chunk : j->n;
        j->fn(j->ctx, b, e);
    }
}

static void *worker(void *arg)
{
    int idx = (int)(intptr_t)arg;
    unsigned seen = 0;

    in_region = true;
    for (;;) {
        unsigned g;
        int spins = 0;
        while ((g = atomic_load_explicit(&generation, memory_order_acquire)) == seen &&
               spins < SPIN_ITERS)
            spins++;
        if (g == seen) {
            pthread_mutex_lock(&lock);
            while ((g = atomic_load(&generation)) == seen)
                pthread_cond_wait(&wake, &lock);
            pthread_mutex_unlock(&lock);
        }
        seen = g;
        if (idx >= atomic_load(&stop_below))
            continue;
        /* Announce ourselves before reading current: the caller clears
         * current and then waits for busy == 0, so a job is never touched
         * after its caller returned. */
        atomic_fetch_add(&busy, 1);
        job *j = atomic_load(&current);
        if (j != NULL)
            run_chunks(j);
        atomic_fetch_sub(&busy, 1);
    }
    return NULL;
}

static int env_threads(void)
{
    const char *s = getenv("FW_NUM_THREADS");
    if (s == NULL || *s == '\0')
        s = getenv("OMP_NUM_THREADS");
    if (s && *s) {
        int v = atoi(s);
        if (v >= 1)
            return v < MAX_THREADS ? v : MAX_THREADS;
    }
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > MAX_THREADS ? MAX_THREADS : (int)n;
}

static void start_workers_locked(int want)
{
    while (nworkers_started < want - 1) {
        pthread_t th;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&th, &attr, worker, (void *)(intptr_t)nworkers_started) != 0) {
            pthread_attr_destroy(&attr);
            break;                           /* run with fewer threads */
        }
        pthread_attr_destroy(&attr);
        nworkers_started++;
    }
    nthreads = nworkers_started + 1 < want ? nworkers_started + 1 : want;
    atomic_store(&stop_below, nthreads - 1);
}

/* fork(): the child has none of the workers. Hold the pool's locks across
 * fork so none is copied mid-critical-section, then let the child run
 * single-threaded (it can grow a pool again with fw_parallel_set_num_threads;
 * Python's multiprocessing forks DataLoader workers). */
static void atfork_prepare(void)
{
    pthread_mutex_lock(&job_lock);
    pthread_mutex_lock(&lock);
}

static void atfork_parent(void)
{
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&job_lock);
}

static void atfork_child(void)
{
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&job_lock);
    nworkers_started = 0;
    nthreads = 1;
    blas_threads = 1;
    atomic_store(&busy, 0);
    atomic_store(&current, NULL);
    atomic_store(&stop_below, 0);
    pthread_cond_init(&wake, NULL);
}

static void init_pool(void)
{
    const char *ob = getenv("OPENBLAS_NUM_THREADS");

    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    pthread_mutex_lock(&lock);
    start_workers_locked(env_threads());
    pthread_mutex_unlock(&lock);
    /* an explicit OPENBLAS_NUM_THREADS wins (benchmarks pin it); otherwise
     * OpenBLAS gets as many threads as the pool */
    blas_threads = ob && atoi(ob) >= 1 ? atoi(ob) : nthreads;
    openblas_set_num_threads(blas_threads);
}

int fw_parallel_num_threads(void)
{
    pthread_once(&once, init_pool);
    return nthreads;
}

void fw_parallel_set_num_threads(int n)
{
    pthread_once(&once, init_pool);
    if (n < 1)
        n = 1;
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    pthread_mutex_lock(&job_lock);          /* no loop is running */
    pthread_mutex_lock(&lock);
    start_workers_locked(n);
    blas_threads = nthreads;
    pthread_mutex_unlock(&lock);
    pthread_mutex_unlock(&job_lock);
    openblas_set_num_threads(blas_threads);
}

bool fw_parallel_in_region(void) { return in_region; }

void fw_parallel_run_serial(int64_t n, fw_parallel_fn fn, void *ctx)
{
    pthread_once(&once, init_pool);
    if (in_region || blas_threads == 1 || pthread_mutex_trylock(&job_lock) != 0) {
        fn(ctx, 0, n);
        return;
    }
    openblas_set_num_threads(1);
    in_region = true;
    fn(ctx, 0, n);
    in_region = false;
    openblas_set_num_threads(blas_threads);
    pthread_mutex_unlock(&job_lock);
}

void fw_parallel_for(int64_t n, int64_t grain, fw_parallel_fn fn, void *ctx)
{
    job j;

    if (n <= 0)
        return;
    if (grain < 1)
        grain = 1;
    pthread_once(&once, init_pool);
    /* inline when small, single-threaded, nested, or another thread's
     * loop holds the pool */
    if (n <= grain || nthreads == 1 || in_region || pthread_mutex_trylock(&job_lock) != 0) {
        fn(ctx, 0, n);
        return;
    }
    int64_t nchunks = (n + grain - 1) / grain;
    if (nchunks > (int64_t)nthreads * 4)
        nchunks = (int64_t)nthreads * 4;     /* a few chunks per thread balances load */
    j.fn = fn;
    j.ctx = ctx;
    j.n = n;
    j.chunk = (n + nchunks - 1) / nchunks;
    j.nchunks = (n + j.chunk - 1) / j.chunk;
    atomic_init(&j.next, 0);

    openblas_set_num_threads(1);
    pthread_mutex_lock(&lock);
    atomic_store_explicit(&current, &j, memory_order_release);
    atomic_fetch_add_explicit(&generation, 1, memory_order_release);
    pthread_cond_broadcast(&wake);
    pthread_mutex_unlock(&lock);

    in_region = true;
    run_chunks(&j);
    in_region = false;
    /* unpublish, then wait for workers still inside this job */
    atomic_store(&current, NULL);
    for (int spins = 0; atomic_load(&busy) > 0; spins++)
        if (spins > 1000)
            sched_yield();          /* a preempted worker needs the core */
    openblas_set_num_threads(blas_threads);
    pthread_mutex_unlock(&job_lock);
}
