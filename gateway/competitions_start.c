/*
 * competitions_start.c - the competitions handle's start and stop (see
 * competitions_int.h): comp_open with the server's hooks, crash recovery,
 * the worker.
 */
#include "competitions_int.h"
#include "dataset_mounts.h"
#include "ds.h"
#include "quota.h"

#include "ed_error.h"
#include "ed_log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

/* gw__dataset_in_use_add keeps process-wide hooks with no way to remove
 * one, while a process (the tests) may start and stop several servers: the
 * hook is added once and asks whichever comp handle is open now. */
static _Atomic(comp *) in_use_comp;
static pthread_once_t in_use_once = PTHREAD_ONCE_INIT;
static int in_use_added;

static int in_use(char *why, size_t why_len, const char *id, int64_t number, void *payload)
{
    comp *c = atomic_load(&in_use_comp);

    (void)payload;
    return c ? comp_dataset_in_use(why, why_len, id, number, c) : 0;
}

static void add_in_use(void)
{
    in_use_added = gw__dataset_in_use_add(in_use, NULL);
}

static int dataset_check(void *payload, int64_t user, const char *dataset_id, int64_t version)
{
    gw_server *srv = payload;

    if (srv->datasets == NULL)
        return ed_error_set(ED_EUNPROC, "datasets are not available on this server");
    return comp_ds_check(srv->datasets, user, dataset_id, version);
}

/* A platform-failed submission's charge back, once (the ledger's key). */
static int refund(void *payload, int64_t user, int64_t mcoins, const char *idem_key)
{
    gw_server *srv = payload;
    int64_t transfer = 0;

    return quota_refund(&transfer, srv->store, user, mcoins, idem_key, "competition submission platform_error",
                        idem_key);
}

int gw__competitions_start(gw_server *srv)
{
    comp_hooks hooks = {.dataset_check = dataset_check, .refund = refund, .payload = srv};
    comp_watchdog_report rep = {0};
    const char *env = getenv("EDDY_COMP_WATCHDOG_MS");
    int64_t watchdog_ms = 30000;
    int err;

    if (env && atoll(env) >= 100)
        watchdog_ms = atoll(env);
    pthread_once(&in_use_once, add_in_use);
    if (in_use_added < 0)
        return ed_error_set(ED_EINTERNAL, "cannot add the competitions' dataset in-use hook");
    if ((err = comp_open(&srv->competitions, srv->store, srv->cfg.data_dir, &hooks, NULL)) < 0)
        return err;
    if ((err = comp_recover(srv->competitions)) < 0 ||
        (err = comp_watchdog_run(&rep, srv->competitions)) < 0 ||
        (err = comp_worker_start(srv->competitions, watchdog_ms)) < 0) {
        comp_free(srv->competitions);
        srv->competitions = NULL;
        return err;
    }
    atomic_store(&in_use_comp, srv->competitions);
    if (rep.requeued || rep.failed || rep.refunded)
        ed_log_info("comp.recover", "requeued=%d failed=%d refunded=%d", rep.requeued, rep.failed,
                    rep.refunded);
    return 0;
}

void gw__competitions_stop(gw_server *srv)
{
    if (srv->competitions == NULL)
        return;
    gw__competitions_runner_stop(srv);
    atomic_compare_exchange_strong(&in_use_comp, &(comp *){srv->competitions}, NULL);
    comp_free(srv->competitions);
    srv->competitions = NULL;
}
