/*
 * client_jobs.c - eddy jobs submit|list|show|logs|cancel|artifacts, eddy resources
 *
 * `jobs artifacts ID --to-project P [--dest DIR] [--overwrite]` asks the
 * server to copy the job's artifacts into project P's working tree (POST
 * /api/v1/jobs/{id}/artifacts/copy): no bytes pass through the client.
 *
 * `jobs submit` sends a fresh Idempotency-Key, so a retry after a broken
 * connection never starts the job twice. `jobs logs --follow` reads the
 * log's Server-Sent Events and reconnects with Last-Event-ID (the byte
 * offset) until the server sends `event: end`.
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define FOLLOW_RETRIES 5

static const cli_col job_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},           {"STATUS", "status", CLI_FMT_TEXT},
    {"PROJECT", "project_id", CLI_FMT_TEXT}, {"ENTRY", "entry", CLI_FMT_TEXT},
    {"RESOURCE", "resource", CLI_FMT_TEXT}, {"GPUS", "gpus", CLI_FMT_TEXT},
    {"QUEUE", "queue_position", CLI_FMT_TEXT}, {"CHARGED", "charged_mcoins", CLI_FMT_COINS},
    {"CREATED", "created_at", CLI_FMT_TEXT},
};

static const cli_col job_fields[] = {
    {"ID:", "id", CLI_FMT_TEXT},
    {"Status:", "status", CLI_FMT_TEXT},
    {"Project:", "project_id", CLI_FMT_TEXT},
    {"Version:", "version", CLI_FMT_TEXT},
    {"Entry:", "entry", CLI_FMT_TEXT},
    {"Args:", "args", CLI_FMT_LIST},
    {"Resource:", "resource", CLI_FMT_TEXT},
    {"GPUs:", "gpus", CLI_FMT_TEXT},
    {"Max runtime (s):", "max_runtime_s", CLI_FMT_TEXT},
    {"Queue position:", "queue_position", CLI_FMT_TEXT},
    {"ETA (s):", "eta_s", CLI_FMT_TEXT},
    {"Exit code:", "exit_code", CLI_FMT_TEXT},
    {"Failure:", "failure_reason", CLI_FMT_TEXT},
    {"Charged (A-coins):", "charged_mcoins", CLI_FMT_COINS},
    {"CPU time:", "cpu_ms", CLI_FMT_MS},
    {"Peak memory:", "peak_mem_bytes", CLI_FMT_BYTES},
    {"Attempt:", "attempt", CLI_FMT_TEXT},
    {"Created:", "created_at", CLI_FMT_TEXT},
    {"Started:", "started_at", CLI_FMT_TEXT},
    {"Ended:", "ended_at", CLI_FMT_TEXT},
};

static const cli_col artifact_cols[] = {
    {"PATH", "path", CLI_FMT_TEXT}, {"SIZE", "size", CLI_FMT_BYTES},
};

static const cli_col skipped_cols[] = {
    {"SKIPPED", "path", CLI_FMT_TEXT}, {"REASON", "reason", CLI_FMT_TEXT},
};

static const cli_col resource_cols[] = {
    {"NAME", "name", CLI_FMT_TEXT},          {"CPUS", "cpus", CLI_FMT_TEXT},
    {"MEMORY MB", "memory_mb", CLI_FMT_TEXT}, {"GPUS", "gpus", CLI_FMT_TEXT},
    {"GPU MODEL", "gpu_model", CLI_FMT_TEXT}, {"PRICE/HOUR", "price_mcoins_per_hour", CLI_FMT_COINS},
    {"TIERS", "tiers", CLI_FMT_LIST},        {"CAPACITY", "capacity", CLI_FMT_TEXT},
    {"IN USE", "in_use", CLI_FMT_TEXT},      {"QUEUED", "queued", CLI_FMT_TEXT},
};

static int jobs_usage(void)
{
    fprintf(stderr,
            "usage: eddy jobs submit PROJECT ENTRY [--resource R] [--gpus N] [--max-runtime S] "
            "[--version V] [--requeue] [-- ARGS...]\n"
            "       eddy jobs list [--limit N]\n"
            "       eddy jobs show ID | cancel ID\n"
            "       eddy jobs logs ID [--follow]\n"
            "       eddy jobs artifacts ID [--download DIR]\n"
            "       eddy jobs artifacts ID --to-project P [--dest DIR] [--overwrite]\n"
            "         (copy the artifacts into project P's files, by default under jobs/ID/;\n"
            "          all or nothing; --overwrite replaces files that already exist)\n");
    return CLI_EXIT_USAGE;
}

static int submit(cli **cp, cli_resp *r, int argc, char **argv, const cli_globals *g)
{
    const char *project = NULL, *entry = NULL, *resource = "cpu-basic", *version = NULL;
    int64_t gpus = -1, max_rt = 0;
    bool requeue = false;
    json_t *body = NULL, *args = json_array();
    char id[64], *text = NULL;
    int err = 0, i;

    for (i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--") == 0) {
            for (i++; i < argc; i++)
                json_array_append_new(args, json_string(argv[i]));
            break;
        } else if (strcmp(argv[i], "--resource") == 0 && i + 1 < argc) {
            resource = argv[++i];
        } else if (strcmp(argv[i], "--gpus") == 0 && i + 1 < argc) {
            if ((err = cli_parse_int(&gpus, argv[++i], 0, 64, "--gpus")) < 0)
                goto out;
        } else if (strcmp(argv[i], "--max-runtime") == 0 && i + 1 < argc) {
            if ((err = cli_parse_int(&max_rt, argv[++i], 1, 30LL * 86400, "--max-runtime (seconds)")) < 0)
                goto out;
        } else if (strcmp(argv[i], "--version") == 0 && i + 1 < argc) {
            version = argv[++i];
        } else if (strcmp(argv[i], "--requeue") == 0) {
            requeue = true;
        } else if (argv[i][0] != '-' && project == NULL) {
            project = argv[i];
        } else if (argv[i][0] != '-' && entry == NULL) {
            entry = argv[i];
        } else {
            json_decref(args);
            return jobs_usage();
        }
    }
    if (project == NULL || entry == NULL || entry[0] == '\0' || resource[0] == '\0') {
        json_decref(args);
        return jobs_usage();
    }
    if (version && (strlen(version) < 7 || strlen(version) > 40 ||
                    strspn(version, "0123456789abcdef") != strlen(version))) {
        err = ed_error_set(CLI_EUSAGE, "--version '%s' must be a commit id (7 to 40 hex digits)", version);
        goto out;
    }
    if ((err = cli_open(cp, g->url, true)) < 0 || (err = cli_project_resolve(id, sizeof(id), *cp, project)) < 0)
        goto out;
    body = json_pack("{s:s, s:s, s:s, s:O}", "project_id", id, "entry", entry, "resource", resource, "args", args);
    if (body && version)
        json_object_set_new(body, "version", json_string(version));
    if (body && gpus >= 0)
        json_object_set_new(body, "gpus", json_integer(gpus));
    if (body && max_rt > 0)
        json_object_set_new(body, "max_runtime_s", json_integer(max_rt));
    if (body && requeue)
        json_object_set_new(body, "requeue", json_true());
    if (body == NULL || (text = json_dumps(body, JSON_COMPACT)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "job");
        goto out;
    }
    if ((err = cli_call(r, *cp, "POST", "/api/v1/jobs", text, strlen(text), "application/json",
                        CLI_IDEMPOTENT)) < 0)
        goto out;
    if (g->json) {
        cli_print_raw(r);
    } else {
        char jid[32], st[32], qp[32], eta[32];
        cli_format(jid, sizeof(jid), json_object_get(r->json, "id"), CLI_FMT_TEXT);
        cli_format(st, sizeof(st), json_object_get(r->json, "status"), CLI_FMT_TEXT);
        cli_format(qp, sizeof(qp), json_object_get(r->json, "queue_position"), CLI_FMT_TEXT);
        cli_format(eta, sizeof(eta), json_object_get(r->json, "eta_s"), CLI_FMT_TEXT);
        printf("Submitted job %s (%s, queue position %s, eta %s s).\n", jid, st, qp, eta);
    }
out:
    free(text);
    json_decref(body);
    json_decref(args);
    return cli_report(err);
}

typedef struct follow_state {
    char last[64];
    bool ended;
    const cli_globals *g;
} follow_state;

static int on_log_event(const char *event, const char *id, const char *data, void *payload)
{
    follow_state *f = payload;

    if (strcmp(event, "end") == 0) {
        json_error_t e;
        json_t *j = json_loads(data, 0, &e);
        char st[32] = "?", code[32] = "-";
        if (j) {
            cli_format(st, sizeof(st), json_object_get(j, "status"), CLI_FMT_TEXT);
            cli_format(code, sizeof(code), json_object_get(j, "exit_code"), CLI_FMT_TEXT);
            json_decref(j);
        }
        fflush(stdout);
        fprintf(stderr, "eddy: job %s (exit code %s)\n", st, code);
        f->ended = true;
        return 1;
    }
    if (strcmp(event, "message") == 0) {
        fputs(data, stdout);
        fputc('\n', stdout);
        fflush(stdout);
    }
    snprintf(f->last, sizeof(f->last), "%s", id);
    return 0;
}

static int logs(cli *c, const char *jid, bool follow, const cli_globals *g)
{
    char path[128];
    int err = 0;

    if (follow) {
        follow_state f = {.last = "", .ended = false, .g = g};
        int failures = 0;
        snprintf(path, sizeof(path), "/api/v1/jobs/%s/logs?follow=1", jid);
        while (!f.ended) {
            err = cli_sse(c, path, f.last[0] ? f.last : NULL, on_log_event, &f);
            if (err == CLI_ETRANSPORT && ++failures <= FOLLOW_RETRIES) {
                sleep(1);
                continue;
            }
            if (err < 0)
                return err;
            failures = 0;
        }
        return 0;
    }
    /* the whole log so far, in chunks */
    for (long long offset = 0;;) {
        cli_resp r;
        char next[32];
        snprintf(path, sizeof(path), "/api/v1/jobs/%s/logs?offset=%lld", jid, offset);
        if ((err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) < 0) {
            cli_resp_free(&r);
            return err;
        }
        if (r.body.len)
            fwrite(r.body.data, 1, r.body.len, stdout);
        if (r.body.len == 0 || cli_resp_header(next, sizeof(next), &r, "X-Log-Offset") < 0 ||
            atoll(next) <= offset) {
            cli_resp_free(&r);
            break;
        }
        offset = atoll(next);
        cli_resp_free(&r);
    }
    return 0;
}

static int artifacts(cli *c, cli_resp *r, const char *jid, const char *dir, const cli_globals *g)
{
    char path[4700];
    json_t *items, *e;
    size_t i, bytes = 0;
    struct stat sb;
    int err;

    if (dir && stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return ed_error_set(CLI_EUSAGE, "%s exists and is not a directory", dir);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/artifacts", jid);
    if ((err = cli_call(r, c, "GET", path, NULL, 0, NULL, 0)) < 0)
        return err;
    items = json_object_get(r->json, "items");
    if (dir == NULL) {
        if (g->json)
            cli_print_raw(r);
        else
            cli_print_table(items, artifact_cols, N(artifact_cols));
        return 0;
    }
    json_array_foreach(items, i, e) {
        const char *rel = json_string_value(json_object_get(e, "path"));
        if (rel == NULL || !cli_path_is_safe(rel))
            return ed_error_set(ED_EPERM, "the server named an unsafe artifact path '%.200s': nothing was written",
                                rel ? rel : "(not a string)");
    }
    if (mkdir(dir, 0755) < 0 && errno != EEXIST)
        return ed_error_set(CLI_EUSAGE, "cannot create %s: %s", dir, strerror(errno));
    json_array_foreach(items, i, e) {
        const char *rel = json_string_value(json_object_get(e, "path"));
        char *esc = cli_escape(rel, true);
        cli_resp f;
        if (esc == NULL)
            return ed_error_set(ED_ENOMEM, "path");
        snprintf(path, sizeof(path), "/api/v1/jobs/%s/artifacts/%s", jid, esc);
        free(esc);
        if ((err = cli_call(&f, c, "GET", path, NULL, 0, NULL, 0)) == 0)
            err = cli_write_under(dir, rel, f.body.data ? f.body.data : "", f.body.len);
        bytes += f.body.len;
        cli_resp_free(&f);
        if (err < 0)
            return err;
    }
    printf("Downloaded %zu artifacts (%zu bytes) of job %s into %s.\n", json_array_size(items), bytes, jid, dir);
    return 0;
}

/* POST /api/v1/jobs/{id}/artifacts/copy: the server copies, the client
 * prints what was copied and what was skipped (and why). */
static int copy_to_project(cli *c, cli_resp *r, const char *jid, const char *project, const char *dest,
                           bool overwrite, const cli_globals *g)
{
    char path[128], pid[64], size[32];
    json_t *body = NULL, *files, *e;
    char *text = NULL;
    int64_t bytes = 0;
    size_t i;
    int err;

    if ((err = cli_project_resolve(pid, sizeof(pid), c, project)) < 0)
        return err;
    body = json_pack("{s:s}", "project_id", pid);
    if (body && dest)
        json_object_set_new(body, "dest_dir", json_string(dest));
    if (body && overwrite)
        json_object_set_new(body, "overwrite", json_true());
    if (body == NULL || (text = json_dumps(body, JSON_COMPACT)) == NULL) {
        json_decref(body);
        return ed_error_set(ED_ENOMEM, "copy");
    }
    json_decref(body);
    snprintf(path, sizeof(path), "/api/v1/jobs/%s/artifacts/copy", jid);
    /* not retried: a copy that reached the server and lost its answer is
     * refused the second time (409: the files exist), never done twice */
    err = cli_call(r, c, "POST", path, text, strlen(text), "application/json", 0);
    free(text);
    if (err < 0)
        return err;
    if (g->json) {
        cli_print_raw(r);
        return 0;
    }
    files = json_object_get(r->json, "files");
    json_array_foreach(files, i, e)
        bytes += json_integer_value(json_object_get(e, "size"));
    if (json_array_size(files))
        cli_print_table(files, artifact_cols, N(artifact_cols));
    if (json_array_size(json_object_get(r->json, "skipped"))) {
        if (json_array_size(files))
            putchar('\n');
        cli_print_table(json_object_get(r->json, "skipped"), skipped_cols, N(skipped_cols));
    }
    body = json_integer(bytes);
    cli_format(size, sizeof(size), body, CLI_FMT_BYTES);
    json_decref(body);
    printf("Copied %zu files (%s) of job %s into project %s at %s/; %lld skipped.\n", json_array_size(files), size,
           jid, pid, json_string_value(json_object_get(r->json, "dest_dir")) ?: "?",
           (long long)json_integer_value(json_object_get(r->json, "skipped_count")));
    return 0;
}

int cmd_client_jobs(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : "list";
    char path[128];
    int64_t id = 0, limit = 50;
    cli *c = NULL;
    cli_resp r = {0};
    int err = 0;

    if (strcmp(sub, "submit") == 0) {
        int status = submit(&c, &r, argc, argv, g);
        cli_resp_free(&r);
        cli_free(c);
        return status;
    }
    if (strcmp(sub, "list") == 0) {
        if (argc == 4 && strcmp(argv[2], "--limit") == 0) {
            if ((err = cli_parse_int(&limit, argv[3], 1, 500, "--limit")) < 0)
                return cli_report(err);
        } else if (argc > 2) {
            return jobs_usage();
        }
        snprintf(path, sizeof(path), "/api/v1/jobs?limit=%lld", (long long)limit);
        if ((err = cli_open(&c, g->url, true)) == 0 && (err = cli_call(&r, c, "GET", path, NULL, 0, NULL, 0)) == 0) {
            if (g->json)
                cli_print_raw(&r);
            else
                cli_print_table(json_object_get(r.json, "items"), job_cols, N(job_cols));
        }
        goto out;
    }
    if (argc < 3)
        return jobs_usage();
    if ((err = cli_parse_int(&id, argv[2], 1, INT64_MAX, "the job id")) < 0)
        return cli_report(err);
    if (strcmp(sub, "show") == 0 || strcmp(sub, "cancel") == 0) {
        if (argc != 3)
            return jobs_usage();
        snprintf(path, sizeof(path), "/api/v1/jobs/%lld", (long long)id);
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_call(&r, c, strcmp(sub, "show") == 0 ? "GET" : "DELETE", path, NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json)
            cli_print_raw(&r);
        else if (strcmp(sub, "show") == 0)
            cli_print_fields(r.json, job_fields, N(job_fields));
        else
            printf("Job %lld is %s.\n", (long long)id,
                   json_string_value(json_object_get(r.json, "status")) ?: "cancelled");
    } else if (strcmp(sub, "logs") == 0) {
        bool follow = false;
        if (argc == 4 && (strcmp(argv[3], "--follow") == 0 || strcmp(argv[3], "-f") == 0))
            follow = true;
        else if (argc != 3)
            return jobs_usage();
        if ((err = cli_open(&c, g->url, true)) == 0)
            err = logs(c, argv[2], follow, g);
    } else if (strcmp(sub, "artifacts") == 0) {
        const char *dir = NULL, *project = NULL, *dest = NULL;
        bool overwrite = false;
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--download") == 0 && i + 1 < argc && argv[i + 1][0] && dir == NULL)
                dir = argv[++i];
            else if (strcmp(argv[i], "--to-project") == 0 && i + 1 < argc && argv[i + 1][0] && project == NULL)
                project = argv[++i];
            else if (strcmp(argv[i], "--dest") == 0 && i + 1 < argc && argv[i + 1][0] && dest == NULL)
                dest = argv[++i];
            else if (strcmp(argv[i], "--overwrite") == 0)
                overwrite = true;
            else
                return jobs_usage();
        }
        if ((dir && project) || ((dest || overwrite) && project == NULL))
            return jobs_usage();
        if ((err = cli_open(&c, g->url, true)) == 0)
            err = project ? copy_to_project(c, &r, argv[2], project, dest, overwrite, g)
                          : artifacts(c, &r, argv[2], dir, g);
    } else {
        return jobs_usage();
    }
out:
    cli_resp_free(&r);
    return cli_done(c, err);
}

int cmd_client_resources(int argc, char **argv, const cli_globals *g)
{
    cli *c = NULL;
    cli_resp r = {0};
    int err;

    (void)argv;
    if (argc != 1) {
        fprintf(stderr, "usage: eddy resources [--json]\n");
        return CLI_EXIT_USAGE;
    }
    if ((err = cli_open(&c, g->url, true)) == 0 &&
        (err = cli_call(&r, c, "GET", "/api/v1/resources", NULL, 0, NULL, 0)) == 0) {
        if (g->json)
            cli_print_raw(&r);
        else
            cli_print_table(json_object_get(r.json, "items"), resource_cols, N(resource_cols));
    }
    cli_resp_free(&r);
    return cli_done(c, err);
}
