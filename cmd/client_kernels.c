/*
 * client_kernels.c - eddy kernels start|list|show|exec|interrupt|restart|stop
 *
 * Written against API.md "Kernels": POST /api/v1/kernels {project_id,
 * resource}; POST .../execute {code} -> {msg_id}; GET .../events?after=SEQ
 * (Server-Sent Events of Jupyter messages, each with a `seq`). `exec` posts
 * the code, then reads the events for that msg_id (replayed from the journal,
 * so nothing is missed between the two requests) and prints its streams,
 * results and tracebacks until the execute_reply; a cell that raised exits 1.
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))
#define CODE_MAX (1 << 20)
#define FOLLOW_RETRIES 5

static const cli_col kernel_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},          {"STATUS", "status", CLI_FMT_TEXT},
    {"PROJECT", "project_id", CLI_FMT_TEXT}, {"RESOURCE", "resource", CLI_FMT_TEXT},
    {"QUEUE", "queue_position", CLI_FMT_TEXT}, {"ETA (s)", "eta_s", CLI_FMT_TEXT},
};

static const cli_col kernel_fields[] = {
    {"ID:", "id", CLI_FMT_TEXT},
    {"Status:", "status", CLI_FMT_TEXT},
    {"Project:", "project_id", CLI_FMT_TEXT},
    {"Resource:", "resource", CLI_FMT_TEXT},
    {"Queue position:", "queue_position", CLI_FMT_TEXT},
    {"ETA (s):", "eta_s", CLI_FMT_TEXT},
    {"Started:", "started_at", CLI_FMT_TEXT},
    {"Last activity:", "last_activity_at", CLI_FMT_TEXT},
};

static int kernels_usage(void)
{
    fprintf(stderr, "usage: eddy kernels start PROJECT [--resource R]\n"
                    "       eddy kernels list\n"
                    "       eddy kernels show ID | interrupt ID | restart ID | stop ID\n"
                    "       eddy kernels exec ID CODE     (CODE '-' reads it from stdin)\n");
    return CLI_EXIT_USAGE;
}

typedef struct exec_state {
    const char *msg_id;
    char        after[64];   /* the last seq seen, for a reconnect */
    bool        done, failed;
    const cli_globals *g;
    bool died;              /* the events stream said `event: end` */
    char stop_reason[64];
} exec_state;

static const char *str_at(const json_t *o, const char *a, const char *b)
{
    const json_t *v = json_object_get(o, a);
    return json_string_value(b ? json_object_get(v, b) : v);
}

static void put_text(FILE *f, const char *s)
{
    if (s == NULL)
        return;
    fputs(s, f);
    if (*s && s[strlen(s) - 1] != '\n')
        fputc('\n', f);
}

static int on_kernel_event(const char *event, const char *id, const char *data, void *payload)
{
    exec_state *x = payload;
    json_error_t e;
    json_t *m, *inner, *seq;
    const char *type, *parent;

    if (id && *id)
        snprintf(x->after, sizeof(x->after), "%s", id);
    if (event && strcmp(event, "end") == 0) {
        /* the kernel is dead ({"status":"dead","stop_reason":...}): no reply will come */
        json_t *end = json_loads(data, 0, &e);
        const char *why = end ? json_string_value(json_object_get(end, "stop_reason")) : NULL;
        x->died = true;
        snprintf(x->stop_reason, sizeof(x->stop_reason), "%s", why ? why : "unknown");
        json_decref(end);
        x->done = true;
        return 1;
    }
    if ((m = json_loads(data, 0, &e)) == NULL)
        return 0;   /* not a message (a comment or keep-alive) */
    seq = json_object_get(m, "seq");
    if (json_is_integer(seq))
        snprintf(x->after, sizeof(x->after), "%lld", (long long)json_integer_value(seq));
    /* a message may come bare or wrapped as {seq, msg} */
    inner = json_is_object(json_object_get(m, "msg")) ? json_object_get(m, "msg") : m;
    type = str_at(inner, "msg_type", NULL);
    if (type == NULL)
        type = str_at(inner, "header", "msg_type");
    parent = str_at(inner, "parent_header", "msg_id");
    if (type == NULL || parent == NULL || strcmp(parent, x->msg_id) != 0) {
        json_decref(m);
        return 0;
    }
    if (x->g->json) {
        char *s = json_dumps(inner, JSON_COMPACT);
        if (s)
            printf("%s\n", s);
        free(s);
    }
    const json_t *content = json_object_get(inner, "content");
    if (strcmp(type, "stream") == 0 && !x->g->json) {
        const char *name = str_at(content, "name", NULL);
        const char *text = str_at(content, "text", NULL);
        FILE *f = name && strcmp(name, "stderr") == 0 ? stderr : stdout;
        if (text)
            fputs(text, f);
        fflush(f);
    } else if ((strcmp(type, "execute_result") == 0 || strcmp(type, "display_data") == 0) && !x->g->json) {
        const char *text = str_at(content, "data", "text/plain");
        if (text)
            put_text(stdout, text);
        else
            printf("[%s without text/plain]\n", type);
    } else if (strcmp(type, "error") == 0) {
        const json_t *tb = json_object_get(content, "traceback"), *line;
        size_t i;
        x->failed = true;
        if (!x->g->json) {
            json_array_foreach(tb, i, line)
                put_text(stderr, json_string_value(line));
            if (json_array_size(tb) == 0)
                fprintf(stderr, "%s: %s\n", str_at(content, "ename", NULL) ?: "error",
                        str_at(content, "evalue", NULL) ?: "");
        }
    } else if (strcmp(type, "execute_reply") == 0) {
        const char *status = str_at(content, "status", NULL);
        if (status && strcmp(status, "ok") != 0)
            x->failed = true;
        x->done = true;
    }
    fflush(stdout);
    json_decref(m);
    return x->done ? 1 : 0;
}

static int exec_code(cli *c, const char *kid, const char *code, const cli_globals *g)
{
    char path[400];
    json_t *body = json_pack("{s:s}", "code", code), *reply = NULL;
    exec_state x = {.after = "0", .g = g};
    int err, failures = 0;

    if (body == NULL)
        return ed_error_set(ED_ENOMEM, "execute");
    snprintf(path, sizeof(path), "/api/v1/kernels/%s/execute", kid);
    err = cli_call_json(&reply, c, "POST", path, body, 0);
    json_decref(body);
    if (err < 0)
        return err;
    if ((x.msg_id = json_string_value(json_object_get(reply, "msg_id"))) == NULL) {
        json_decref(reply);
        return ed_error_set(ED_EIO, "the server accepted the code but gave no msg_id");
    }
    while (!x.done) {
        char before[64];
        snprintf(before, sizeof(before), "%s", x.after);
        snprintf(path, sizeof(path), "/api/v1/kernels/%s/events?after=%s", kid, x.after);
        err = cli_sse(c, path, NULL, on_kernel_event, &x);
        if (err == CLI_ETRANSPORT && ++failures <= FOLLOW_RETRIES) {
            sleep(1);
            continue;
        }
        if (err < 0)
            break;
        err = 0;
        if (!x.done && strcmp(before, x.after) == 0)
            usleep(500000);   /* the stream ended with nothing new: do not hammer the server */
    }
    json_decref(reply);
    if (err == 0 && x.died)
        err = ed_error_set(ED_EUNPROC, "the kernel stopped before the code finished (%s)", x.stop_reason);
    else if (err == 0 && x.failed)
        err = ed_error_set(ED_EUNPROC, "the code raised an error");
    return err;
}

static int read_stdin(char **out)
{
    ed_buf b = {0};
    char chunk[4096];
    size_t n;

    while ((n = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
        if (b.len + n > CODE_MAX || ed_buf_append(&b, chunk, n) < 0) {
            ed_buf_free(&b);
            return ed_error_set(CLI_EUSAGE, "the code on stdin is over 1 MiB");
        }
    }
    if (b.len == 0) {
        ed_buf_free(&b);
        return ed_error_set(CLI_EUSAGE, "no code on stdin");
    }
    *out = ed_buf_steal(&b);
    return 0;
}

int cmd_client_kernels(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : "list";
    char path[400], pid[64], *kid = NULL, *code = NULL;
    cli *c = NULL;
    cli_resp r = {0};
    json_t *body = NULL;
    char *text = NULL;
    int err = 0;

    if (strcmp(sub, "list") == 0) {
        if (argc > 2)
            return kernels_usage();
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_call(&r, c, "GET", "/api/v1/kernels", NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json)
            cli_print_raw(&r);
        else
            cli_print_table(json_is_array(r.json) ? r.json : json_object_get(r.json, "items"), kernel_cols,
                            N(kernel_cols));
        goto out;
    }
    if (strcmp(sub, "start") == 0) {
        const char *project = NULL, *resource = "cpu-basic";
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--resource") == 0 && i + 1 < argc)
                resource = argv[++i];
            else if (argv[i][0] != '-' && project == NULL)
                project = argv[i];
            else
                return kernels_usage();
        }
        if (project == NULL || resource[0] == '\0')
            return kernels_usage();
        if ((err = cli_open(&c, g->url, true)) < 0 || (err = cli_project_resolve(pid, sizeof(pid), c, project)) < 0)
            goto out;
        body = json_pack("{s:s, s:s}", "project_id", pid, "resource", resource);
        if (body == NULL || (text = json_dumps(body, JSON_COMPACT)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "kernel");
            goto out;
        }
        if ((err = cli_call(&r, c, "POST", "/api/v1/kernels", text, strlen(text), "application/json",
                            CLI_IDEMPOTENT)) < 0)
            goto out;
        if (g->json) {
            cli_print_raw(&r);
        } else {
            char id[128], st[32], qp[32];
            cli_format(id, sizeof(id), json_object_get(r.json, "id"), CLI_FMT_TEXT);
            cli_format(st, sizeof(st), json_object_get(r.json, "status"), CLI_FMT_TEXT);
            cli_format(qp, sizeof(qp), json_object_get(r.json, "queue_position"), CLI_FMT_TEXT);
            printf("Started kernel %s (%s, queue position %s).\n", id, st, qp);
        }
        goto out;
    }
    if (argc < 3 || argv[2][0] == '\0' || strlen(argv[2]) > 128)
        return kernels_usage();
    if ((kid = cli_escape(argv[2], false)) == NULL) {
        err = ed_error_set(ED_ENOMEM, "kernel id");
        goto out;
    }
    if (strcmp(sub, "exec") == 0) {
        if (argc != 4)
            return free(kid), kernels_usage();
        if (strcmp(argv[3], "-") == 0) {
            if ((err = read_stdin(&code)) < 0)
                goto out;
        } else if (argv[3][0] == '\0') {
            err = ed_error_set(CLI_EUSAGE, "no code to run");
            goto out;
        }
        if ((err = cli_open(&c, g->url, true)) == 0)
            err = exec_code(c, kid, code ? code : argv[3], g);
        goto out;
    }
    if (argc != 3)
        return free(kid), kernels_usage();
    if (strcmp(sub, "show") == 0 || strcmp(sub, "stop") == 0) {
        snprintf(path, sizeof(path), "/api/v1/kernels/%s", kid);
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_call(&r, c, strcmp(sub, "show") == 0 ? "GET" : "DELETE", path, NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json)
            cli_print_raw(&r);
        else if (strcmp(sub, "show") == 0)
            cli_print_fields(r.json, kernel_fields, N(kernel_fields));
        else
            printf("Stopped kernel %s.\n", argv[2]);
    } else if (strcmp(sub, "interrupt") == 0 || strcmp(sub, "restart") == 0) {
        snprintf(path, sizeof(path), "/api/v1/kernels/%s/%s", kid, sub);
        if ((err = cli_open(&c, g->url, true)) < 0 || (err = cli_call(&r, c, "POST", path, NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json)
            cli_print_raw(&r);
        else
            printf("%s kernel %s.\n", strcmp(sub, "interrupt") == 0 ? "Interrupted" : "Restarted", argv[2]);
    } else {
        free(kid);
        return kernels_usage();
    }
out:
    free(kid);
    free(code);
    free(text);
    json_decref(body);
    cli_resp_free(&r);
    return cli_done(c, err);
}
