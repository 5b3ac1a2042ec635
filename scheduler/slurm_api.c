/*
 * slurm_api.c - slurmrestd's requests and responses as data (slurm_api.h).
 */
#include "slurm_api.h"

#include "ed_error.h"
#include "ed_json.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const sched__slurm_versions[] = {"v0.0.38", "v0.0.37", NULL};

static bool spoken(const char *ver)
{
    for (int i = 0; sched__slurm_versions[i]; i++)
        if (strcmp(sched__slurm_versions[i], ver) == 0)
            return true;
    return false;
}

int sched__slurm_pick(char *out, size_t n, const char *text, size_t len, const char *forced)
{
    json_t *doc = NULL, *paths;
    char offered[200] = "", key[64];
    const char *k;
    json_t *v;

    out[0] = '\0';
    if (ed_json_parse(&doc, text, len, 64) < 0 || !json_is_object(paths = json_object_get(doc, "paths"))) {
        json_decref(doc);
        return ed_error_set(ED_EINVAL, "slurmrestd's /openapi/v3 is not an OpenAPI document");
    }
    /* what it offers, for the message */
    json_object_foreach(paths, k, v) {
        const char *end;
        if (strncmp(k, "/slurm/", 7) == 0 && (end = strstr(k + 7, "/job/submit")) != NULL && end[11] == '\0' &&
            end - (k + 7) < 20 && strlen(offered) + 24 < sizeof(offered))
            snprintf(offered + strlen(offered), sizeof(offered) - strlen(offered), "%s%.*s", offered[0] ? ", " : "",
                     (int)(end - (k + 7)), k + 7);
    }
    for (int i = 0; sched__slurm_versions[i]; i++) {
        const char *ver = sched__slurm_versions[i];
        if (forced && forced[0] && strcmp(forced, ver) != 0)
            continue;
        snprintf(key, sizeof(key), "/slurm/%s/job/submit", ver);
        if (json_object_get(paths, key)) {
            snprintf(out, n, "%s", ver);
            json_decref(doc);
            return 0;
        }
    }
    json_decref(doc);
    if (forced && forced[0] && !spoken(forced))
        return ed_error_set(ED_EUNPROC, "EDDY_SLURM_API %s is not a version this executor speaks (v0.0.38, v0.0.37)",
                            forced);
    return ed_error_set(ED_EUNPROC, "slurmrestd offers %s; this executor speaks %s (v0.0.38, v0.0.37)",
                        offered[0] ? offered : "no job API", forced && forced[0] ? forced : "any of");
}

char *sched__slurm_submit_body(const char *ver, const sched__slurm_req *q)
{
    json_t *job = NULL, *env = NULL, *body = NULL;
    char *text = NULL, gpn[16];
    bool ok;

    if (!spoken(ver)) {
        ed_error_set(ED_EINVAL, "Slurm API %s", ver);
        return NULL;
    }
    if ((env = json_object()) == NULL)
        goto nomem;
    for (size_t i = 0; q->env && q->env[i]; i++) {
        const char *eq = strchr(q->env[i], '=');
        char name[128];
        if (eq == NULL || eq == q->env[i] || (size_t)(eq - q->env[i]) >= sizeof(name))
            continue;
        snprintf(name, sizeof(name), "%.*s", (int)(eq - q->env[i]), q->env[i]);
        if (json_object_set_new(env, name, json_string(eq + 1)) < 0)
            goto nomem;
    }
    /* requeue false: after a node failure Slurm would requeue a batch job by
     * itself (JobRequeue=1); Eddy decides (NODE_FAIL -> platform_error,
     * refunded). open_mode append: the scheduler's own notices go to the
     * same log. */
    job = json_pack("{s:s, s:s, s:s, s:s, s:s, s:i, s:[i,i], s:i, s:i, s:b, s:s}", "name", q->name,
                    "current_working_directory", q->cwd, "standard_output", q->output, "standard_error", q->output,
                    "open_mode", "append", "tasks", q->tasks, "nodes", q->nodes, q->nodes, "tasks_per_node",
                    q->tasks / (q->nodes > 0 ? q->nodes : 1), "time_limit", q->time_limit_min, "requeue", 0,
                    "environment", "");
    if (job == NULL || json_object_set(job, "environment", env) < 0)
        goto nomem;
    ok = true;
    if (q->partition && q->partition[0])
        ok = ok && json_object_set_new(job, "partition", json_string(q->partition)) == 0;
    if (q->qos && q->qos[0])
        ok = ok && json_object_set_new(job, "qos", json_string(q->qos)) == 0;
    if (q->cpus_per_task > 0)
        ok = ok && json_object_set_new(job, "cpus_per_task", json_integer(q->cpus_per_task)) == 0;
    if (q->memory_per_node_mb > 0)
        ok = ok && json_object_set_new(job, "memory_per_node", json_integer(q->memory_per_node_mb)) == 0;
    if (q->gpus_per_node > 0) {
        snprintf(gpn, sizeof(gpn), "%d", q->gpus_per_node);
        ok = ok && json_object_set_new(job, "gpus_per_node", json_string(gpn)) == 0;
    }
    if (!ok || (body = json_pack("{s:s, s:O}", "script", q->script, "job", job)) == NULL)
        goto nomem;
    text = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS);
    if (text == NULL)
        goto nomem;
    json_decref(body);
    json_decref(job);
    json_decref(env);
    return text;
nomem:
    json_decref(body);
    json_decref(job);
    json_decref(env);
    ed_error_set(ED_ENOMEM, "Slurm job submission");
    return NULL;
}

/* slurmrestd's "errors" list: 0 when empty, else ED_EIO (ED_ENOTFOUND for
 * an unknown job) with the first error's text. */
static int errors_of(json_t *doc, const char *what)
{
    json_t *errs = json_object_get(doc, "errors"), *e;
    const char *msg;
    json_int_t num;

    if (!json_is_array(errs) || json_array_size(errs) == 0)
        return 0;
    e = json_array_get(errs, 0);
    msg = json_string_value(json_object_get(e, "error"));
    if (msg == NULL)
        msg = json_string_value(json_object_get(e, "description"));
    num = json_integer_value(json_object_get(e, "errno"));
    if (num == 0)
        num = json_integer_value(json_object_get(e, "error_number"));
    if (num == 0)
        num = json_integer_value(json_object_get(e, "error_code"));
    /* ESLURM_INVALID_JOB_ID */
    if (num == 2017 || (msg && strstr(msg, "Invalid job id")))
        return ed_error_set(ED_ENOTFOUND, "%s: Slurm no longer knows this job (%s)", what, msg ? msg : "");
    return ed_error_set(ED_EIO, "%s: slurmrestd: %.200s (error %lld)", what, msg ? msg : "unknown error",
                        (long long)num);
}

int sched__slurm_parse_submit(int64_t *job_id, const char *ver, const char *text, size_t len)
{
    json_t *doc = NULL, *id;
    int err;

    *job_id = 0;
    if (!spoken(ver))
        return ed_error_set(ED_EINVAL, "Slurm API %s", ver);
    if (ed_json_parse(&doc, text, len, 16) < 0 || !json_is_object(doc)) {
        json_decref(doc);
        return ed_error_set(ED_EIO, "submit: slurmrestd's answer is not JSON: %.80s", text ? text : "");
    }
    if ((err = errors_of(doc, "submit")) < 0) {
        json_decref(doc);
        return err;
    }
    id = json_object_get(doc, "job_id");
    if (!json_is_integer(id) || json_integer_value(id) <= 0) {
        json_decref(doc);
        return ed_error_set(ED_EIO, "submit: slurmrestd's answer has no job_id");
    }
    *job_id = json_integer_value(id);
    json_decref(doc);
    return 0;
}

/* exit_code: a wait status (v0.0.37/38), or {status, return_code, signal}
 * (v0.0.39 on; signal {signal_id}). */
static void exit_of(sched__slurm_job *o, json_t *v)
{
    if (json_is_integer(v)) {
        int ws = (int)json_integer_value(v);
        o->has_exit = true;
        if (ws & 0x7f)
            o->term_signal = ws & 0x7f;
        else
            o->exit_status = (ws >> 8) & 0xff;
    } else if (json_is_object(v)) {
        json_t *rc = json_object_get(v, "return_code"), *sig = json_object_get(v, "signal");
        if (json_is_object(rc))
            rc = json_object_get(rc, "number");
        if (json_is_object(sig))
            sig = json_object_get(sig, "id") ? json_object_get(sig, "id") : json_object_get(sig, "signal_id");
        if (json_is_object(sig))
            sig = json_object_get(sig, "number");
        o->has_exit = json_is_integer(rc);
        o->exit_status = (int)json_integer_value(rc);
        o->term_signal = (int)json_integer_value(sig);
    }
}

int sched__slurm_parse_job(sched__slurm_job *out, const char *ver, const char *text, size_t len)
{
    json_t *doc = NULL, *jobs, *j, *st;
    int err;

    memset(out, 0, sizeof(*out));
    if (!spoken(ver))
        return ed_error_set(ED_EINVAL, "Slurm API %s", ver);
    if (ed_json_parse(&doc, text, len, 16) < 0 || !json_is_object(doc)) {
        json_decref(doc);
        return ed_error_set(ED_EIO, "job: slurmrestd's answer is not JSON: %.80s", text ? text : "");
    }
    if ((err = errors_of(doc, "job")) < 0) {
        json_decref(doc);
        return err;
    }
    jobs = json_object_get(doc, "jobs");
    if (!json_is_array(jobs) || json_array_size(jobs) == 0) {
        json_decref(doc);
        return ed_error_set(ED_ENOTFOUND, "job: Slurm no longer knows this job");
    }
    j = json_array_get(jobs, 0);
    out->job_id = json_integer_value(json_object_get(j, "job_id"));
    st = json_object_get(j, "job_state");
    if (json_is_array(st))               /* v0.0.39 on: a list of flags, the state first */
        st = json_array_get(st, 0);
    snprintf(out->state, sizeof(out->state), "%s", json_is_string(st) ? json_string_value(st) : "");
    snprintf(out->reason, sizeof(out->reason), "%s",
             json_is_string(json_object_get(j, "state_reason")) ? json_string_value(json_object_get(j, "state_reason"))
                                                                  : "");
    exit_of(out, json_object_get(j, "exit_code"));
    out->start_time = json_integer_value(json_object_get(j, "start_time"));
    out->end_time = json_integer_value(json_object_get(j, "end_time"));
    out->restarts = (int)json_integer_value(json_object_get(j, "restart_cnt"));
    json_decref(doc);
    if (out->state[0] == '\0')
        return ed_error_set(ED_EIO, "job: slurmrestd's answer has no job_state");
    return 0;
}

int sched__slurm_outcome(sched__outcome *o, const sched__slurm_job *j)
{
    static const char *const live[] = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED",
                                       "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING",
                                       "STAGE_OUT", "RESV_DEL_HOLD", "SPECIAL_EXIT", NULL};

    memset(o, 0, sizeof(*o));
    if (j->restarts > 0) {
        o->reason = "platform_error";
        o->term_signal = SIGKILL;
        return 1;
    }
    for (int i = 0; live[i]; i++)
        if (strcmp(j->state, live[i]) == 0)
            return 0;
    if (strcmp(j->state, "COMPLETED") == 0 || strcmp(j->state, "FAILED") == 0) {
        o->exited = j->term_signal == 0;
        o->exit_code = j->exit_status;
        o->term_signal = j->term_signal;
        if (strcmp(j->state, "FAILED") == 0 && o->exited && o->exit_code == 0)
            o->exit_code = 1;      /* failed to launch (a bad working directory, ...) */
    } else if (strcmp(j->state, "CANCELLED") == 0) {
        o->exited = j->has_exit && j->term_signal == 0 && j->exit_status != 0;
        o->exit_code = j->exit_status;
        o->term_signal = o->exited ? 0 : (j->term_signal ? j->term_signal : SIGTERM);
    } else if (strcmp(j->state, "TIMEOUT") == 0 || strcmp(j->state, "DEADLINE") == 0) {
        o->wall = true;
        o->term_signal = SIGKILL;
    } else if (strcmp(j->state, "OUT_OF_MEMORY") == 0) {
        o->oom = true;
        o->term_signal = SIGKILL;
    } else if (strcmp(j->state, "PREEMPTED") == 0) {
        o->reason = "preempted";
        o->term_signal = SIGTERM;
    } else {
        /* NODE_FAIL, BOOT_FAIL, and anything newer we do not know */
        o->reason = "platform_error";
        o->term_signal = SIGKILL;
    }
    return 1;
}

int sched__sh_quote(char *out, size_t n, const char *s)
{
    size_t len = strlen(out);

#define PUT(c)                                                                                               \
    do {                                                                                                     \
        if (len + 1 >= n)                                                                                    \
            return -1;                                                                                       \
        out[len++] = (c);                                                                                    \
    } while (0)
    PUT('\'');
    for (; *s; s++) {
        if (*s == '\'') {
            PUT('\'');
            PUT('\\');
            PUT('\'');
            PUT('\'');
        } else {
            PUT(*s);
        }
    }
    PUT('\'');
#undef PUT
    out[len] = '\0';
    return 0;
}
