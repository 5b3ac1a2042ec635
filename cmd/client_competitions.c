/*
 * client_competitions.c - `eddy competitions`: list, show, the rules, the
 * data (as `eddy datasets download` of the competition's version), submit a
 * CSV (streamed from the file, never read whole) or a file of a job's output
 * or a project's tree, submissions, leaderboards, and the team.
 *
 * COMP is a competition's id or slug (the server resolves both).
 */
#include "cmd.h"

#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const cli_col comp_cols[] = {
    {"SLUG", "slug", CLI_FMT_TEXT},       {"TITLE", "title", CLI_FMT_TEXT},
    {"PHASE", "phase", CLI_FMT_TEXT},     {"METRIC", "metric", CLI_FMT_TEXT},
    {"ENDS", "end_at", CLI_FMT_TEXT},     {"ID", "id", CLI_FMT_TEXT},
};

static const cli_col comp_fields[] = {
    {"Title", "title", CLI_FMT_TEXT},
    {"Slug", "slug", CLI_FMT_TEXT},
    {"Id", "id", CLI_FMT_TEXT},
    {"Phase", "phase", CLI_FMT_TEXT},
    {"Starts", "start_at", CLI_FMT_TEXT},
    {"Team merge deadline", "merge_deadline", CLI_FMT_TEXT},
    {"Final selection deadline", "selection_deadline", CLI_FMT_TEXT},
    {"Ends", "end_at", CLI_FMT_TEXT},
    {"Dataset", "dataset.dataset_id", CLI_FMT_TEXT},
    {"Dataset version", "dataset.version", CLI_FMT_TEXT},
    {"Id column", "id_column", CLI_FMT_TEXT},
    {"Target columns", "target_columns", CLI_FMT_LIST},
    {"Metric", "metric", CLI_FMT_TEXT},
    {"Rows to predict", "rows", CLI_FMT_TEXT},
    {"Daily cap", "daily_cap", CLI_FMT_TEXT},
    {"Total cap", "total_cap", CLI_FMT_TEXT},
    {"Max team size", "max_team_size", CLI_FMT_TEXT},
    {"Final selections", "selection_max", CLI_FMT_TEXT},
    {"Leaderboard", "leaderboard", CLI_FMT_TEXT},
    {"Host", "host", CLI_FMT_TEXT},
    {"Scoring program", "scorer.direction", CLI_FMT_TEXT},
    {"Scoring program uploaded", "scorer.uploaded", CLI_FMT_TEXT},
    {"Rules accepted", "rules_accepted", CLI_FMT_TEXT},
};

static const cli_col sub_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},           {"SUBMITTED", "created_at", CLI_FMT_TEXT},
    {"STATUS", "status", CLI_FMT_TEXT},   {"PUBLIC SCORE", "public_score", CLI_FMT_TEXT},
    {"SELECTED", "selected", CLI_FMT_TEXT}, {"ERROR", "error.message", CLI_FMT_TEXT},
};

static const cli_col board_cols[] = {
    {"RANK", "rank", CLI_FMT_TEXT},       {"TEAM", "team", CLI_FMT_TEXT},
    {"SCORE", "score", CLI_FMT_TEXT},     {"SUBMITTED", "submitted_at", CLI_FMT_TEXT},
};

static int usage(void)
{
    fprintf(stderr,
            "usage: eddy competitions list\n"
            "       eddy competitions show COMP\n"
            "       eddy competitions accept-rules COMP\n"
            "       eddy competitions download COMP [-o OUT] [--tar]\n"
            "       eddy competitions submit COMP FILE [--wait]\n"
            "       eddy competitions submit COMP (--job ID | --project PROJECT) --path P [--wait]\n"
            "       eddy competitions submissions COMP [--all] [--limit N]\n"
            "       eddy competitions select COMP SUBMISSION_ID... | --clear\n"
            "       eddy competitions scorer COMP FILE.py | --remove      (hosts, before the start)\n"
            "       eddy competitions leaderboard COMP [--private] [--limit N] [--offset N]\n"
            "       eddy competitions team COMP [show | create NAME | invite USER | join TEAM_ID | leave]\n"
            "COMP is a competition's id or slug.\n");
    return CLI_EXIT_USAGE;
}

/* "/api/v1/competitions/<escaped comp><rest>" into out. */
static int comp_path(char *out, size_t n, const char *comp, const char *rest)
{
    char *e = cli_escape(comp, false);

    if (e == NULL)
        return ed_error_set(ED_ENOMEM, "path");
    if ((size_t)snprintf(out, n, "/api/v1/competitions/%s%s", e, rest) >= n) {
        free(e);
        return ed_error_set(CLI_EUSAGE, "competition name too long");
    }
    free(e);
    return 0;
}

/* GET a path and print it: --json raw, else a table of .items or fields. */
static int get_print(const cli_globals *g, const char *path, const cli_col *cols, size_t ncols, bool items)
{
    cli *c = NULL;
    json_t *out = NULL;
    int err;

    if ((err = cli_open(&c, g->url, true)) == 0 && (err = cli_call_json(&out, c, "GET", path, NULL, 0)) == 0) {
        if (g->json)
            cli_print_json(out);
        else if (items)
            cli_print_table(json_object_get(out, "items"), cols, ncols);
        else
            cli_print_fields(out, cols, ncols);
    }
    json_decref(out);
    return cli_done(c, err);
}

static int cmd_list(int argc, char **argv, const cli_globals *g)
{
    (void)argv;
    if (argc != 1)
        return usage();
    return get_print(g, "/api/v1/competitions?limit=500", comp_cols, sizeof(comp_cols) / sizeof(comp_cols[0]),
                     true);
}

static int cmd_show(int argc, char **argv, const cli_globals *g)
{
    char path[600];
    int err;

    if (argc != 2 || argv[1][0] == '-')
        return usage();
    if ((err = comp_path(path, sizeof(path), argv[1], "")) < 0)
        return cli_report(err);
    return get_print(g, path, comp_fields, sizeof(comp_fields) / sizeof(comp_fields[0]), false);
}

static int cmd_accept(int argc, char **argv, const cli_globals *g)
{
    char path[600];
    cli *c = NULL;
    json_t *out = NULL;
    int err;

    if (argc != 2 || argv[1][0] == '-')
        return usage();
    if ((err = comp_path(path, sizeof(path), argv[1], "/accept-rules")) == 0 &&
        (err = cli_open(&c, g->url, true)) == 0 && (err = cli_call_json(&out, c, "POST", path, NULL, 0)) == 0) {
        if (g->json)
            cli_print_json(out);
        else
            printf("Accepted the rules of %s.\n", json_string_value(json_object_get(out, "title")) ?: argv[1]);
    }
    json_decref(out);
    return cli_done(c, err);
}

/* The competition's dataset version, downloaded as `eddy datasets download
 * <id>@<version>` does (resumed, checked against the manifest). */
static int cmd_download(int argc, char **argv, const cli_globals *g)
{
    char path[600], ref[200];
    char *dargv[8];
    int dargc = 0;
    cli *c = NULL;
    json_t *k = NULL, *d;
    int err;

    if (argc < 2 || argv[1][0] == '-')
        return usage();
    for (int i = 2; i < argc; i++)
        if (strcmp(argv[i], "--tar") != 0 && !((strcmp(argv[i], "-o") == 0 || strcmp(argv[i], "--output") == 0) &&
                                                ++i < argc))
            return usage();
    if ((err = comp_path(path, sizeof(path), argv[1], "")) < 0 || (err = cli_open(&c, g->url, true)) < 0 ||
        (err = cli_call_json(&k, c, "GET", path, NULL, 0)) < 0)
        goto out;
    d = json_object_get(k, "dataset");
    if (!json_is_object(d)) {
        err = ed_error_set(ED_ENOTFOUND, "competition %s has no dataset yet", argv[1]);
        goto out;
    }
    snprintf(ref, sizeof(ref), "%s@%lld", json_string_value(json_object_get(d, "dataset_id")) ?: "",
             (long long)json_integer_value(json_object_get(d, "version")));
    json_decref(k);
    cli_free(c);
    dargv[dargc++] = "download";
    dargv[dargc++] = ref;
    for (int i = 2; i < argc && dargc < 7; i++)
        dargv[dargc++] = argv[i];
    dargv[dargc] = NULL;
    /* cmd_client_datasets takes its own subcommand first: "datasets download ..." */
    {
        char *full[9] = {"datasets"};
        for (int i = 0; i <= dargc; i++)
            full[i + 1] = dargv[i];
        return cmd_client_datasets(dargc + 1, full, g);
    }
out:
    json_decref(k);
    return cli_done(c, err);
}

static int collect(const char *buf, size_t n, void *payload)
{
    return ed_buf_append(payload, buf, n);
}

/* Poll the submission until it is in a final state (at most 10 min). */
static int wait_final(json_t **io, cli *c, const char *comp)
{
    char path[700], rest[100];
    int err;

    for (int i = 0; i < 6000; i++) {
        const char *st = json_string_value(json_object_get(*io, "status")) ?: "";
        json_t *next = NULL;
        if (strcmp(st, "scored") == 0 || strcmp(st, "invalid") == 0 || strcmp(st, "failed") == 0)
            return 0;
        usleep(100000);
        snprintf(rest, sizeof(rest), "/submissions/%s", json_string_value(json_object_get(*io, "id")) ?: "");
        if ((err = comp_path(path, sizeof(path), comp, rest)) < 0 ||
            (err = cli_call_json(&next, c, "GET", path, NULL, 0)) < 0)
            return err;
        json_decref(*io);
        *io = next;
    }
    return ed_error_set(ED_EBUSY, "the submission is still %s after 10 minutes",
                        json_string_value(json_object_get(*io, "status")) ?: "?");
}

static void print_submission(const json_t *s)
{
    const json_t *e = json_object_get(s, "error"), *score = json_object_get(s, "public_score");

    printf("Submission %s: %s", json_string_value(json_object_get(s, "id")) ?: "",
           json_string_value(json_object_get(s, "status")) ?: "");
    if (json_is_number(score))
        printf(", public score %.6g", json_number_value(score));
    printf("\n");
    if (json_is_object(e))
        printf("  %s: %s\n", json_string_value(json_object_get(e, "class")) ?: "",
               json_string_value(json_object_get(e, "message")) ?: "");
}

static int cmd_submit(int argc, char **argv, const cli_globals *g)
{
    const char *comp, *file = NULL, *job = NULL, *project = NULL, *rel = NULL;
    bool wait = false;
    char path[600], pid[64];
    cli *c = NULL;
    json_t *out = NULL;
    int err = 0, fd = -1;

    if (argc < 3 || argv[1][0] == '-')
        return usage();
    comp = argv[1];
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--job") == 0 && i + 1 < argc)
            job = argv[++i];
        else if (strcmp(argv[i], "--project") == 0 && i + 1 < argc)
            project = argv[++i];
        else if (strcmp(argv[i], "--path") == 0 && i + 1 < argc)
            rel = argv[++i];
        else if (strcmp(argv[i], "--wait") == 0)
            wait = true;
        else if (argv[i][0] == '-' || file)
            return usage();
        else
            file = argv[i];
    }
    if ((file != NULL) + (job != NULL) + (project != NULL) != 1 || (file == NULL) != (rel != NULL))
        return usage();
    if ((err = comp_path(path, sizeof(path), comp, "/submissions")) < 0 || (err = cli_open(&c, g->url, true)) < 0)
        goto out;
    if (file) {
        const char *hdrs[] = {"Content-Type: text/csv", NULL};
        struct stat sb;
        cli_resp r = {0};
        ed_buf body = {0};
        if ((fd = open(file, O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
            err = ed_error_set(CLI_EUSAGE, "%s: %s", file, fd < 0 ? strerror(errno) : "not a regular file");
            goto out;
        }
        err = cli_stream(&r, c, "POST", path, hdrs, fd, 0, sb.st_size, collect, &body);
        if (err == 0 && (out = json_loadb(body.data ? body.data : "", body.len, 0, NULL)) == NULL)
            err = ed_error_set(ED_EIO, "the server's answer is not JSON");
        ed_buf_free(&body);
        cli_resp_free(&r);
    } else {
        json_t *b = json_pack("{s:s}", "path", rel);
        if (job) {
            int64_t id;
            if ((err = cli_parse_int(&id, job, 1, INT64_MAX, "job id")) == 0)
                json_object_set_new(b, "job_id", json_integer(id));
        } else if ((err = cli_project_resolve(pid, sizeof(pid), c, project)) == 0) {
            json_object_set_new(b, "project_id", json_string(pid));
        }
        if (err == 0)
            err = cli_call_json(&out, c, "POST", path, b, 0);
        json_decref(b);
    }
    if (err == 0 && wait)
        err = wait_final(&out, c, comp);
    if (err == 0) {
        if (g->json)
            cli_print_json(out);
        else
            print_submission(out);
        if (wait && strcmp(json_string_value(json_object_get(out, "status")) ?: "", "scored") != 0)
            err = ed_error_set(ED_EUNPROC, "the submission was not scored");
    }
out:
    if (fd >= 0)
        close(fd);
    json_decref(out);
    return cli_done(c, err);
}

static int cmd_submissions(int argc, char **argv, const cli_globals *g)
{
    char path[700], rest[100];
    bool all = false;
    int64_t limit = 50;
    int err;

    if (argc < 2 || argv[1][0] == '-')
        return usage();
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--all") == 0)
            all = true;
        else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            if ((err = cli_parse_int(&limit, argv[++i], 1, 500, "--limit")) < 0)
                return cli_report(err);
        } else
            return usage();
    }
    snprintf(rest, sizeof(rest), "/submissions?limit=%lld%s", (long long)limit, all ? "&all=1" : "");
    if ((err = comp_path(path, sizeof(path), argv[1], rest)) < 0)
        return cli_report(err);
    return get_print(g, path, sub_cols, sizeof(sub_cols) / sizeof(sub_cols[0]), true);
}

static int cmd_select(int argc, char **argv, const cli_globals *g)
{
    char path[600];
    json_t *ids = json_array(), *out = NULL;
    cli *c = NULL;
    int err;

    /* --clear: no choice, the best public ones count (as on Kaggle) */
    bool clear = argc == 3 && strcmp(argv[2], "--clear") == 0;

    if (argc < 3 || argv[1][0] == '-' || ids == NULL) {
        json_decref(ids);
        return usage();
    }
    for (int i = 2; i < argc && !clear; i++)
        json_array_append_new(ids, json_string(argv[i]));
    if ((err = comp_path(path, sizeof(path), argv[1], "/submissions/select")) == 0 &&
        (err = cli_open(&c, g->url, true)) == 0) {
        json_t *b = json_pack("{s:O}", "ids", ids);
        if ((err = cli_call_json(&out, c, "POST", path, b, 0)) == 0) {
            if (g->json)
                cli_print_json(out);
            else
                printf(clear ? "Selection cleared: the best public submissions count.\n"
                             : "Selected %zu submission(s) for the final leaderboard.\n",
                       json_array_size(ids));
        }
        json_decref(b);
    }
    json_decref(ids);
    json_decref(out);
    return cli_done(c, err);
}

static int cmd_leaderboard(int argc, char **argv, const cli_globals *g)
{
    char path[700], rest[120];
    bool priv = false;
    int64_t limit = 50, offset = 0;
    int err;

    if (argc < 2 || argv[1][0] == '-')
        return usage();
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--private") == 0)
            priv = true;
        else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc) {
            if ((err = cli_parse_int(&limit, argv[++i], 1, 500, "--limit")) < 0)
                return cli_report(err);
        } else if (strcmp(argv[i], "--offset") == 0 && i + 1 < argc) {
            if ((err = cli_parse_int(&offset, argv[++i], 0, INT32_MAX, "--offset")) < 0)
                return cli_report(err);
        } else
            return usage();
    }
    snprintf(rest, sizeof(rest), "/leaderboard?board=%s&limit=%lld&offset=%lld", priv ? "private" : "public",
             (long long)limit, (long long)offset);
    if ((err = comp_path(path, sizeof(path), argv[1], rest)) < 0)
        return cli_report(err);
    return get_print(g, path, board_cols, sizeof(board_cols) / sizeof(board_cols[0]), true);
}

static void print_team(const json_t *t)
{
    const json_t *m = json_object_get(t, "members");

    printf("Team %s (id %lld): %lld submission(s), %lld today\n", json_string_value(json_object_get(t, "name")) ?: "",
           (long long)json_integer_value(json_object_get(t, "id")),
           (long long)json_integer_value(json_object_get(t, "submissions")),
           (long long)json_integer_value(json_object_get(t, "submissions_today")));
    for (size_t i = 0; i < json_array_size(m); i++)
        printf("  %s\n", json_string_value(json_object_get(json_array_get(m, i), "username")) ?: "");
}

/* The caller's team's id into *out. */
static int my_team_id(int64_t *out, cli *c, const char *comp)
{
    char path[600];
    json_t *t = NULL;
    int err;

    if ((err = comp_path(path, sizeof(path), comp, "/teams/mine")) < 0 ||
        (err = cli_call_json(&t, c, "GET", path, NULL, 0)) < 0)
        return err;
    *out = json_integer_value(json_object_get(t, "id"));
    json_decref(t);
    return 0;
}

static int cmd_team(int argc, char **argv, const cli_globals *g)
{
    const char *comp, *op;
    char path[700], rest[100];
    cli *c = NULL;
    json_t *out = NULL, *b = NULL;
    int64_t tid = 0;
    int err;

    if (argc < 2 || argv[1][0] == '-')
        return usage();
    comp = argv[1];
    op = argc > 2 ? argv[2] : "show";
    if ((strcmp(op, "show") == 0 || strcmp(op, "leave") == 0) ? argc > 3 : argc != 4)
        return usage();
    if ((err = cli_open(&c, g->url, true)) < 0)
        goto out;
    if (strcmp(op, "show") == 0) {
        err = comp_path(path, sizeof(path), comp, "/teams/mine");
        if (err == 0 && (err = cli_call_json(&out, c, "GET", path, NULL, 0)) == 0 && !g->json)
            print_team(out);
    } else if (strcmp(op, "create") == 0) {
        b = json_pack("{s:s}", "name", argv[3]);
        if ((err = comp_path(path, sizeof(path), comp, "/teams")) == 0 &&
            (err = cli_call_json(&out, c, "POST", path, b, 0)) == 0 && !g->json)
            print_team(out);
    } else if (strcmp(op, "invite") == 0) {
        b = json_pack("{s:s}", "username", argv[3]);
        if ((err = my_team_id(&tid, c, comp)) == 0) {
            snprintf(rest, sizeof(rest), "/teams/%lld/invites", (long long)tid);
            if ((err = comp_path(path, sizeof(path), comp, rest)) == 0 &&
                (err = cli_call_json(&out, c, "POST", path, b, 0)) == 0 && !g->json)
                printf("Invited %s; they join with: eddy competitions team %s join %lld\n", argv[3], comp,
                       (long long)tid);
        }
    } else if (strcmp(op, "join") == 0) {
        if ((err = cli_parse_int(&tid, argv[3], 1, INT64_MAX, "team id")) == 0) {
            snprintf(rest, sizeof(rest), "/teams/%lld/join", (long long)tid);
            if ((err = comp_path(path, sizeof(path), comp, rest)) == 0 &&
                (err = cli_call_json(&out, c, "POST", path, NULL, 0)) == 0 && !g->json)
                print_team(out);
        }
    } else if (strcmp(op, "leave") == 0) {
        if ((err = comp_path(path, sizeof(path), comp, "/teams/mine")) == 0 &&
            (err = cli_call_json(&out, c, "DELETE", path, NULL, 0)) == 0 && !g->json)
            printf("Left the team.\n");
    } else {
        err = ed_error_set(CLI_EUSAGE, "unknown team command '%s' (show, create, invite, join, leave)", op);
    }
    if (err == 0 && g->json)
        cli_print_json(out);
out:
    json_decref(out);
    json_decref(b);
    return cli_done(c, err);
}

/* scorer COMP FILE.py (PUT, streamed) | scorer COMP --remove (DELETE) */
static int cmd_scorer(int argc, char **argv, const cli_globals *g)
{
    char path[600];
    cli *c = NULL;
    json_t *out = NULL;
    int err, fd = -1;

    if (argc != 3 || argv[1][0] == '-')
        return usage();
    if ((err = comp_path(path, sizeof(path), argv[1], "/scorer")) < 0 || (err = cli_open(&c, g->url, true)) < 0)
        goto out;
    if (strcmp(argv[2], "--remove") == 0) {
        err = cli_call_json(&out, c, "DELETE", path, NULL, 0);
    } else {
        const char *hdrs[] = {"Content-Type: text/x-python", NULL};
        struct stat sb;
        cli_resp r = {0};
        ed_buf body = {0};
        if ((fd = open(argv[2], O_RDONLY | O_CLOEXEC)) < 0 || fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
            err = ed_error_set(CLI_EUSAGE, "%s: %s", argv[2], fd < 0 ? strerror(errno) : "not a regular file");
            goto out;
        }
        err = cli_stream(&r, c, "PUT", path, hdrs, fd, 0, sb.st_size, collect, &body);
        if (err == 0 && (out = json_loadb(body.data ? body.data : "", body.len, 0, NULL)) == NULL)
            err = ed_error_set(ED_EIO, "the server's answer is not JSON");
        ed_buf_free(&body);
        cli_resp_free(&r);
    }
    if (err == 0) {
        if (g->json)
            cli_print_json(out);
        else if (json_is_null(json_object_get(out, "scorer")))
            printf("No scoring program: the built-in metric %s scores.\n",
                   json_string_value(json_object_get(out, "metric")) ?: "");
        else
            printf("Scoring program stored (%s is better).\n",
                   json_string_value(json_object_get(json_object_get(out, "scorer"), "direction")) ?: "");
    }
out:
    if (fd >= 0)
        close(fd);
    json_decref(out);
    return cli_done(c, err);
}

int cmd_client_competitions(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : NULL;

    if (sub == NULL || strcmp(sub, "-h") == 0 || strcmp(sub, "--help") == 0 || strcmp(sub, "help") == 0) {
        usage();
        return sub ? CLI_EXIT_OK : CLI_EXIT_USAGE;
    }
    argc--;
    argv++;
    if (strcmp(sub, "list") == 0 || strcmp(sub, "ls") == 0)
        return cmd_list(argc, argv, g);
    if (strcmp(sub, "show") == 0)
        return cmd_show(argc, argv, g);
    if (strcmp(sub, "accept-rules") == 0)
        return cmd_accept(argc, argv, g);
    if (strcmp(sub, "download") == 0)
        return cmd_download(argc, argv, g);
    if (strcmp(sub, "submit") == 0)
        return cmd_submit(argc, argv, g);
    if (strcmp(sub, "submissions") == 0)
        return cmd_submissions(argc, argv, g);
    if (strcmp(sub, "select") == 0)
        return cmd_select(argc, argv, g);
    if (strcmp(sub, "leaderboard") == 0)
        return cmd_leaderboard(argc, argv, g);
    if (strcmp(sub, "team") == 0)
        return cmd_team(argc, argv, g);
    if (strcmp(sub, "scorer") == 0)
        return cmd_scorer(argc, argv, g);
    fprintf(stderr, "eddy: unknown competitions command '%s'\n", sub);
    return usage();
}
