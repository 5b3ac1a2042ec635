/*
 * serve.h - model deployments: saved inference models behind API keys.
 *
 * A deployment is a model (what paddle.jit.save wrote: PATH.pdmodel and
 * PATH.pdiparams) copied into DATA/models/<id>/v<n>/, validated with the C
 * inference runtime's loader, and served by replicas: each replica is an
 * `eddy-serve-replica` process (replica_main.c, the runtime linked in) in
 * its own sandbox (sbx.h), speaking a bounded framed protocol over a
 * socketpair (wire.c). Concurrent calls are batched dynamically (up to
 * max_batch calls, waiting at most max_delay_ms for more) along the first
 * dimension. A new model version starts its replicas before the old ones
 * drain (a rolling swap: the queue is the deployment's, so no call is
 * dropped). Every call is logged (serve_call_log) before it is answered;
 * calls' costs are charged to their callers in idempotent batches
 * (quota_charge, key "serve-batch-<id>"); replicas' time is metered to the
 * owner like jobs (quota_meter_charge, ref "deployment:<id>:r<replica>").
 *
 *     serve_hub *h;
 *     serve_hub_open(&h, store, sched, &cfg);
 *     serve_deployment d;
 *     serve_deployment_create(&d, h, &spec, model, model_len, params, params_len);
 *     serve_call c;  serve_call_init(&c);  ... c.in[] ...
 *     err = serve_predict(h, &c);   // c.out[], c.version, c.batch_size
 *     serve_call_done(&c);
 *     serve_hub_free(h);
 *
 * Errors: 0 or a negative ED_E* code with ed_error_set's message.
 * ED_EUNPROC: a model the loader refuses, an input of the wrong name,
 * dtype or shape; ED_ENOTFOUND: no such deployment visible to the caller;
 * ED_EBUSY: no replica could take the call (stopped, failed);
 * SERVE_ETIMEOUT (serve_predict only): the deployment's timeout passed.
 * Threads: every function is thread-safe; serve_predict blocks its caller
 * until the answer or the timeout.
 */
#ifndef EDDY_SERVE_H
#define EDDY_SERVE_H

#include "ed_store.h"
#include "fw/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sched;
struct json_t;

#define SERVE_MAX_TENSORS   16
#define SERVE_MAX_DIMS      8
#define SERVE_NAME_MAX      64           /* bytes of a tensor or deployment name, NUL excluded */
#define SERVE_MAX_REPLICAS  8
#define SERVE_MAX_BATCH     256
#define SERVE_MODEL_MAX     (64u << 20)  /* .pdmodel bytes (the loader's own cap) */
#define SERVE_PARAMS_MAX    (1u << 30)   /* .pdiparams bytes */
#define SERVE_CALL_BYTES_MAX (64u << 20) /* input bytes of one call */
#define SERVE_ETIMEOUT      (-100)       /* serve_predict: the timeout passed (504) */

typedef struct serve_hub serve_hub;

typedef struct serve_config {
    char     data_dir[512];          /* models in DATA/models/ */
    char     replica_bin[512];       /* eddy-serve-replica; "" = next to this executable */
    char     slot_dir[256];          /* sandbox uid slots (shared with the scheduler: flock) */
    unsigned slot_base, slot_count;
    int64_t  meter_interval_ms;      /* EDDY_METER_INTERVAL_MS (replicas' time), >= 1000 */
    int64_t  flush_interval_ms;      /* EDDY_SERVE_FLUSH_MS: call charges posted, 1000 */
    int64_t  ready_timeout_ms;       /* a replica that has not loaded by then failed: 60000 */
    bool     allow_degraded;         /* EDDY_SANDBOX_DEGRADED=1: rlimits only without cgroups */
} serve_config;

/* Defaults from the scheduler's (slots) and the environment. ED_EINVAL. */
int serve_config_defaults(serve_config *c, const char *data_dir);

/* Open the hub over `st` (borrowed) and `sched` (borrowed: resource classes,
 * allowances): finish what a crash left (replicas of the last run ended,
 * unposted charge batches posted, temporary model dirs removed), start the
 * supervisor thread, and start the replicas of every running deployment.
 * Caller frees with serve_hub_free (stops every replica). */
int  serve_hub_open(serve_hub **out, ed_store *st, struct sched *sched, const serve_config *cfg);
void serve_hub_free(serve_hub *h);

/* ---- deployments ------------------------------------------------------------- */

typedef struct serve_spec {
    int64_t     user_id;
    const char *tier;            /* the owner's tier */
    const char *name;            /* 1..64 of [A-Za-z0-9._-], unique among the owner's */
    const char *kind;            /* "model" (NULL: "model") */
    const char *resource;        /* a resource class (cpu only) */
    int         replicas;        /* 1..SERVE_MAX_REPLICAS */
    int         max_batch;       /* 1..SERVE_MAX_BATCH */
    int         max_delay_ms;    /* 0..10000 */
    int         timeout_ms;      /* 1..600000 */
    int64_t     price_mcoins_per_call; /* 0..1000000 */
    bool        allow_nan;
    const char *source_json;     /* recorded with the version */
} serve_spec;

typedef struct serve_deployment {
    int64_t id, user_id;
    char    name[SERVE_NAME_MAX + 1];
    char    kind[8], resource[32], tier[32], status[12];
    int     replicas, max_batch, max_delay_ms, timeout_ms;
    int64_t price_mcoins_per_call;
    bool    allow_nan;
    int     version;                 /* served now (or rolling to) */
    int64_t created_at, updated_at;  /* ms */
    int     replicas_ready;          /* live: ready replicas of any version */
    char    source_json[1024];       /* the current version's source */
    char    inputs_json[2048];       /* [{name, dtype, shape}] */
    char    outputs_json[1024];      /* [name] */
} serve_deployment;

/* Create a deployment of `spec`'s owner from a model's two files' bytes:
 * they are written to a new directory, loaded with the inference runtime
 * (ED_EUNPROC "model: ..." naming what is wrong; nothing is kept) and only
 * then recorded; replicas start in the background. ED_EINVAL / ED_EUNPROC
 * naming a bad field, ED_EEXISTS for a name in use, ED_ENOTFOUND for an
 * unknown resource. */
int serve_deployment_create(serve_deployment *out, serve_hub *h, const serve_spec *spec,
                            const char *model, size_t model_len, const char *params, size_t params_len);
/* `ref` is the id ("12") or the owner's deployment name. ED_ENOTFOUND when
 * `user_id` does not own it (or it is deleted). */
int serve_deployment_get(serve_deployment *out, serve_hub *h, int64_t user_id, const char *ref);
/* serve_deployment_get for the call path: the id and price of the
 * caller's deployment `ref`, from memory when the hub holds it. */
int serve_deployment_resolve(int64_t *id, int64_t *price, serve_hub *h, int64_t user_id, const char *ref);
/* The owner's deployments (not deleted), newest first, ids below `before`
 * (0: from the newest); *n_out of at most `max`. */
int serve_deployment_list(serve_deployment *out, size_t max, size_t *n_out, serve_hub *h,
                          int64_t user_id, int64_t before);

/* A change: fields < 0 / NULL keep their value. */
typedef struct serve_change {
    int replicas, max_batch, max_delay_ms, timeout_ms;
    int64_t price_mcoins_per_call;
    int allow_nan;               /* -1 keep, 0, 1 */
    const char *status;          /* "running" (start again) | "stopped" | NULL */
    /* a new model version (rolling swap) when model != NULL */
    const char *model; size_t model_len;
    const char *params; size_t params_len;
    const char *source_json;
    const char *tier;            /* refresh the owner's tier (may be NULL) */
} serve_change;
int serve_deployment_update(serve_deployment *out, serve_hub *h, int64_t user_id, int64_t id,
                            const serve_change *c);
/* Stop its replicas and hide it (its calls and versions stay). */
int serve_deployment_delete(serve_hub *h, int64_t user_id, int64_t id);

/* Its replicas (live ones first), as JSON array of {id, version, status,
 * detail, started_at, ended_at} (ms). New reference into *out. */
int serve_replicas_json(struct json_t **out, serve_hub *h, int64_t user_id, int64_t id, int limit);

/* ---- calls ------------------------------------------------------------------- */

typedef struct serve_tensor {
    char     name[SERVE_NAME_MAX + 1];
    fw_dtype dtype;
    int      ndim;
    int64_t  shape[SERVE_MAX_DIMS];
    void    *data;                   /* malloc'd, owned by the serve_call */
    size_t   nbytes;                 /* numel x dtype size */
} serve_tensor;

typedef struct serve_call {
    /* in */
    int64_t      deployment_id;      /* resolved by the caller (serve_deployment_get) */
    int64_t      user_id, key_id;    /* the caller; key 0: a session */
    serve_tensor in[SERVE_MAX_TENSORS];
    int          n_in;
    /* out */
    serve_tensor out[SERVE_MAX_TENSORS];
    int          n_out;
    int          version;            /* the model version that answered */
    int          batch_size;         /* calls in the batch it ran in */
    char         error[512];         /* the replica's message for a refused input */
} serve_call;

/* Bytes of a tensor of that dtype and shape (numel x element size), or 0
 * with *bad set when a dimension is negative or it passes `limit`. */
size_t serve_tensor_bytes(fw_dtype dtype, int ndim, const int64_t *shape, size_t limit, int *bad);

void serve_call_init(serve_call *c);
/* Free the tensors' data (in and out). */
void serve_call_done(serve_call *c);

/* Check `c`'s inputs against the deployment's model (every input present
 * by name, dtype, rank, fixed dimensions; NaN unless allowed), queue it,
 * and wait for its batch's answer or the timeout. ED_EUNPROC (bad input,
 * or the replica refused it: message says which), SERVE_ETIMEOUT, ED_EBUSY
 * (no replica), ED_ENOTFOUND. */
int serve_predict(serve_hub *h, serve_call *c);

/* Per-key limits and spending before a call. 0 to go on (*release set:
 * call serve_call_release after the call); ED_ELIMIT with *retry_after_s
 * (requests a minute or concurrency); ED_EQUOTA (the key's daily budget,
 * `key_budget_mcoins` from accounts, -1 none; or the caller's balance
 * cannot pay `price`). Key 0 checks only the balance. */
int  serve_call_admit(serve_hub *h, int64_t key_id, int64_t user_id, int64_t key_budget_mcoins,
                      int64_t price_mcoins, int *retry_after_s);
/* After an admitted call was logged (or refused): its concurrency slot and
 * its reserved price go back. */
void serve_call_release(serve_hub *h, int64_t key_id, int64_t user_id, int64_t price_mcoins);

/* Log one call. An answered or charged call waits for its row to be
 * committed (calls arriving meanwhile share one transaction: group commit),
 * so it is answered only once logged; a refusal is queued. */
typedef struct serve_call_record {
    int64_t deployment_id, key_id, user_id;
    int     version, status, batch_size;
    int64_t latency_ms, cost_mcoins;
    const char *error;               /* may be NULL */
} serve_call_record;
int serve_call_log(serve_hub *h, const serve_call_record *r);

/* Post every pending charge batch now (the supervisor does it every
 * flush_interval_ms). *posted (may be NULL) gets the batches posted. */
int serve_charges_flush(serve_hub *h, int *posted);

/* ---- limits and usage ---------------------------------------------------------- */

typedef struct serve_key_limits {
    int64_t requests_per_min;        /* 0: none beyond the key's rate limit */
    int64_t concurrency;             /* 0: SERVE_DEFAULT_CONCURRENCY */
    int64_t daily_budget_mcoins;     /* -1: none beyond the key's */
} serve_key_limits;
#define SERVE_DEFAULT_CONCURRENCY 16
int serve_key_limits_get(serve_key_limits *out, serve_hub *h, int64_t key_id);
int serve_key_limits_put(serve_hub *h, int64_t key_id, int64_t user_id, const serve_key_limits *l);

/* Usage per UTC day in [from_ms, to_ms): a JSON array of {day, calls,
 * errors, p50_ms, p95_ms, p99_ms, cost_mcoins}. By deployment (of
 * user_id) or by key (the caller checked the key is theirs). */
int serve_usage_deployment(struct json_t **out, serve_hub *h, int64_t user_id, int64_t id, int64_t from_ms,
                           int64_t to_ms);
int serve_usage_key(struct json_t **out, serve_hub *h, int64_t key_id, int64_t from_ms, int64_t to_ms);
/* The deployment's last `limit` calls, newest first (for `eddy deploy logs`). */
int serve_calls_json(struct json_t **out, serve_hub *h, int64_t user_id, int64_t id, int limit);

#endif
