/*
 * kernels.c - interactive kernels on the jobs' queue: a kernel is a job whose
 * entry is SCHED_KERNEL_ENTRY; exec_local.c starts `eddy-kernel serve --fd N`
 * for it and hands the other end of the socketpair to the hook set here.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"

#include <pthread.h>
#include <string.h>

_Thread_local bool sched__submitting_kernel;

void sched_kernel_hook_set(sched *s, sched_kernel_fn fn, void *arg)
{
    pthread_mutex_lock(&s->mu);
    s->kernel_hook = fn;
    s->kernel_hook_arg = arg;
    pthread_mutex_unlock(&s->mu);
}

int sched_kernel_submit(sched_job_info *out, sched *s, const sched_job_spec *spec)
{
    sched_job_spec sp = *spec;
    char kernel[512];
    sqlite3_stmt *q = NULL;
    int err;

    sched__kernel_path(kernel, sizeof(kernel), s);
    if (kernel[0] == '\0')
        return ed_error_set(ED_EUNPROC, "interactive kernels need eddy-kernel, which is not installed on this host");
    sp.entry = SCHED_KERNEL_ENTRY;
    sp.args_json = NULL;
    sp.version = NULL;
    sp.requeue = false;
    sched__submitting_kernel = true;
    err = sched_job_submit(out, s, &sp);
    sched__submitting_kernel = false;
    if (err < 0)
        return err;
    /* informational: the row's kind (the entry is what the executor reads) */
    if (ed_store_prepare(&q, s->st, "UPDATE jobs SET kind = 'kernel' WHERE id = ?1") == 0) {
        sqlite3_bind_int64(q, 1, out->id);
        sched__step(q);
        sqlite3_finalize(q);
    }
    return 0;
}
