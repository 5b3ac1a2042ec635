/*
 * kernels.c - interactive kernels on the jobs' queue: a kernel is a job whose
 * entry is SCHED_KERNEL_ENTRY; exec_local.c starts `eddy-kernel serve --fd N`
 * for it and hands the other end of the socketpair to the hook set here.
 *
 * A kernel works in its project's live working tree (DATA/projects/<id>,
 * bound at /home/aistudio/work through an idmapped mount: exec_local.c), so
 * kernels need idmapped bind mounts. They are probed once, when the hook is
 * set at the server's start (logged as sched.workspace), and a kernel is
 * refused with ED_EUNPROC naming what is missing where the host lacks them:
 * never a silent copy.
 */
#include "sched.h"
#include "sched_int.h"

#include "ed_error.h"
#include "ed_log.h"
#include "sbx.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Thread_local bool sched__submitting_kernel;

/* Probe idmapped bind mounts for the data directory once (not under s->mu:
 * it may ask the launcher). EDDY_IDMAP=none stands for a host without them
 * (tests of failing closed). */
static void idmap_probe(sched *s)
{
    char why[256] = "";
    int ok;

    sched__lock(s);
    ok = s->idmap;
    sched__unlock(s);
    if (ok != 0)
        return;
    if (getenv("EDDY_IDMAP") && strcmp(getenv("EDDY_IDMAP"), "none") == 0) {
        ok = -1;
        snprintf(why, sizeof(why), "idmapped bind mounts switched off (EDDY_IDMAP=none)");
    } else {
        ok = sbx_idmap_probe(s->cfg.data_dir, why, sizeof(why)) ? 1 : -1;
    }
    sched__lock(s);
    s->idmap = ok;
    snprintf(s->idmap_why, sizeof(s->idmap_why), "%s", why);
    sched__unlock(s);
    if (ok > 0)
        ed_log_info("sched.workspace", "workspaces: idmapped bind mounts: yes (a kernel works in its project's "
                    "live tree)");
    else
        ed_log_error("sched.workspace", "workspaces: idmapped bind mounts: no (%s): interactive kernels will "
                     "not start", why);
}

void sched_kernel_hook_set(sched *s, sched_kernel_fn fn, void *arg)
{
    if (fn)
        idmap_probe(s);
    sched__lock(s);
    s->kernel_hook = fn;
    s->kernel_hook_arg = arg;
    sched__unlock(s);
}

int sched_kernel_submit(sched_job_info *out, sched *s, const sched_job_spec *spec)
{
    sched_job_spec sp = *spec;
    char kernel[512], why[256];
    sqlite3_stmt *q = NULL;
    int err, idmap;

    sched__kernel_path(kernel, sizeof(kernel), s);
    if (kernel[0] == '\0')
        return ed_error_set(ED_EUNPROC, "interactive kernels need eddy-kernel, which is not installed on this host");
    /* on Slurm (exec_slurm.c) the kernel runs in the tree itself, as the
     * cluster's user: no sandbox, so no idmapped mount */
    idmap = 1;
    if (strcmp(s->exec->name, "local") == 0) {
        idmap_probe(s);
        sched__lock(s);
        idmap = s->idmap;
        snprintf(why, sizeof(why), "%s", s->idmap_why);
        sched__unlock(s);
    }
    if (idmap < 0)
        return ed_error_set(ED_EUNPROC, "interactive kernels work in the project's tree through an idmapped bind "
                            "mount, which this host cannot make: %s (Linux 5.12 or later and a data directory "
                            "on ext4, XFS or btrfs; `eddy sandbox check --data DIR` tells)", why);
    sp.entry = SCHED_KERNEL_ENTRY;
    sp.args_json = NULL;
    sp.version = NULL;
    sp.requeue = false;
    sp.prepare = NULL;      /* the project's live tree is bound, nothing is copied */
    sp.payload = NULL;
    sched__submitting_kernel = true;
    err = sched_job_submit(out, s, &sp);
    sched__submitting_kernel = false;
    if (err < 0)
        return err;
    /* informational: the row's kind (the entry is what the executor reads) */
    if (ed_store_prepare(&q, s->st, "UPDATE jobs SET kind = 'kernel' WHERE id = ?1") == 0) {
        sqlite3_bind_int64(q, 1, out->id);
        ed_store_step(q);
        sqlite3_finalize(q);
    }
    return 0;
}
