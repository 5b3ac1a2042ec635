/*
 * client_admin.c - eddy admin-remote users|set|grant|verify|overview
 *
 * Administration over the REST API with an API key that has scope `admin`
 * (make one with `eddy login --scope read --scope write --scope run --scope
 * admin` as an administrator). It is not `eddy admin`, which works on a
 * data directory on the server's own disk without any server running.
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const cli_col user_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},       {"USERNAME", "username", CLI_FMT_TEXT},
    {"EMAIL", "email", CLI_FMT_TEXT}, {"ROLE", "role", CLI_FMT_TEXT},
    {"TIER", "tier", CLI_FMT_TEXT},   {"SUSPENDED", "suspended", CLI_FMT_TEXT},
    {"CREATED", "created_at", CLI_FMT_TEXT},
};

static int admin_usage(void)
{
    fprintf(stderr,
            "usage: eddy admin-remote users\n"
            "       eddy admin-remote set USER [--tier T] [--role user|admin] [--suspend | --unsuspend]\n"
            "       eddy admin-remote grant USER AMOUNT --reason TEXT [--idempotency-key K]\n"
            "       eddy admin-remote verify\n"
            "       eddy admin-remote overview\n"
            "(USER: a user id or username; AMOUNT: A-coins, e.g. 12.5; needs an API key with scope admin)\n");
    return CLI_EXIT_USAGE;
}

/* Every user, across pages, into one array (a new reference in *out). */
static int all_users(json_t **out, cli *c)
{
    json_t *all = json_array();
    char path[128], *cursor = NULL;
    int err = 0;

    *out = NULL;
    if (all == NULL)
        return ed_error_set(ED_ENOMEM, "users");
    for (int pages = 0; pages < 10000; pages++) {
        json_t *j = NULL, *next;
        char *esc = cursor ? cli_escape(cursor, false) : NULL;
        snprintf(path, sizeof(path), "/api/v1/admin/users?limit=500%s%.60s", esc ? "&cursor=" : "", esc ? esc : "");
        free(esc);
        free(cursor);
        cursor = NULL;
        if ((err = cli_call_json(&j, c, "GET", path, NULL, 0)) < 0)
            break;
        json_array_extend(all, json_object_get(j, "items"));
        next = json_object_get(j, "next_cursor");
        if (json_is_string(next))
            cursor = strdup(json_string_value(next));
        json_decref(j);
        if (cursor == NULL)
            break;
    }
    free(cursor);
    if (err < 0) {
        json_decref(all);
        return err;
    }
    *out = all;
    return 0;
}

static int resolve_user(int64_t *out, cli *c, const char *ref)
{
    json_t *all = NULL, *u;
    size_t i;
    int err;

    if (ref[0] >= '0' && ref[0] <= '9')
        return cli_parse_int(out, ref, 1, INT64_MAX, "the user id");
    if ((err = all_users(&all, c)) < 0)
        return err;
    err = ed_error_set(ED_ENOTFOUND, "not_found: no user named '%s'", ref);
    json_array_foreach(all, i, u) {
        const char *name = json_string_value(json_object_get(u, "username"));
        if (name && strcmp(name, ref) == 0) {
            *out = json_integer_value(json_object_get(u, "id"));
            err = 0;
            break;
        }
    }
    json_decref(all);
    return err;
}

int cmd_client_admin(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : "";
    char path[128];
    cli *c = NULL;
    cli_resp r = {0};
    json_t *body = NULL, *all = NULL;
    char *text = NULL;
    int64_t uid = 0;
    int err = 0;

    if (strcmp(sub, "users") == 0) {
        if (argc != 2)
            return admin_usage();
        if ((err = cli_open(&c, g->url, true)) < 0 || (err = all_users(&all, c)) < 0)
            goto out;
        if (g->json) {
            text = json_dumps(all, JSON_COMPACT);
            printf("%s\n", text ? text : "[]");
        } else {
            cli_print_table(all, user_cols, N(user_cols));
        }
    } else if (strcmp(sub, "set") == 0) {
        if (argc < 4 || argv[2][0] == '\0')
            return admin_usage();
        if ((body = json_object()) == NULL) {
            err = ed_error_set(ED_ENOMEM, "patch");
            goto out;
        }
        for (int i = 3; i < argc; i++) {
            if (strcmp(argv[i], "--tier") == 0 && i + 1 < argc)
                json_object_set_new(body, "tier", json_string(argv[++i]));
            else if (strcmp(argv[i], "--role") == 0 && i + 1 < argc)
                json_object_set_new(body, "role", json_string(argv[++i]));
            else if (strcmp(argv[i], "--suspend") == 0)
                json_object_set_new(body, "suspended", json_true());
            else if (strcmp(argv[i], "--unsuspend") == 0)
                json_object_set_new(body, "suspended", json_false());
            else {
                json_decref(body);
                return admin_usage();
            }
        }
        if ((text = json_dumps(body, JSON_COMPACT)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "patch");
            goto out;
        }
        if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve_user(&uid, c, argv[2])) < 0)
            goto out;
        snprintf(path, sizeof(path), "/api/v1/admin/users/%lld", (long long)uid);
        if ((err = cli_call(&r, c, "PATCH", path, text, strlen(text), "application/json", 0)) < 0)
            goto out;
        if (g->json)
            cli_print_raw(&r);
        else
            cli_print_table(json_pack("[O]", r.json), user_cols, N(user_cols));
    } else if (strcmp(sub, "grant") == 0) {
        const char *user = NULL, *amount = NULL, *reason = NULL, *key = NULL;
        int64_t mcoins = 0;
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--reason") == 0 && i + 1 < argc)
                reason = argv[++i];
            else if (strcmp(argv[i], "--idempotency-key") == 0 && i + 1 < argc)
                key = argv[++i];
            else if (user == NULL && argv[i][0] != '-')
                user = argv[i];
            else if (amount == NULL && (argv[i][0] != '-' || (argv[i][1] >= '0' && argv[i][1] <= '9')))
                amount = argv[i];
            else
                return admin_usage();
        }
        if (user == NULL || amount == NULL || reason == NULL || user[0] == '\0')
            return admin_usage();
        if ((err = cli_parse_coins(&mcoins, amount)) < 0)
            goto out;
        if (mcoins <= 0) {
            err = ed_error_set(CLI_EUSAGE, "the amount must be more than 0 A-coins");
            goto out;
        }
        if (reason[0] == '\0' || strlen(reason) > 200) {
            err = ed_error_set(CLI_EUSAGE, "--reason must be 1 to 200 bytes");
            goto out;
        }
        if (key && (key[0] == '\0' || strlen(key) > 200 || strpbrk(key, "\r\n"))) {
            err = ed_error_set(CLI_EUSAGE, "--idempotency-key must be 1 to 200 bytes on one line");
            goto out;
        }
        body = json_pack("{s:I, s:s}", "amount_mcoins", (json_int_t)mcoins, "reason", reason);
        if (body == NULL || (text = json_dumps(body, JSON_COMPACT)) == NULL) {
            err = ed_error_set(ED_ENOMEM, "grant");
            goto out;
        }
        if ((err = cli_open(&c, g->url, true)) < 0 || (err = resolve_user(&uid, c, user)) < 0)
            goto out;
        if (key) {
            char hdr[260];
            const char *hdrs[] = {hdr, NULL};
            snprintf(hdr, sizeof(hdr), "Idempotency-Key: %s", key);
            if ((err = cli_set_headers(c, hdrs)) < 0)
                goto out;
        }
        snprintf(path, sizeof(path), "/api/v1/admin/users/%lld/grants", (long long)uid);
        if ((err = cli_call(&r, c, "POST", path, text, strlen(text), "application/json",
                            key ? 0 : CLI_IDEMPOTENT)) < 0)
            goto out;
        if (g->json) {
            cli_print_raw(&r);
        } else {
            char amt[32], bal[32];
            cli_format(amt, sizeof(amt), json_object_get(r.json, "amount_mcoins"), CLI_FMT_COINS);
            cli_format(bal, sizeof(bal), json_object_get(r.json, "balance_after_mcoins"), CLI_FMT_COINS);
            printf("Granted %s A-coins to user %lld (balance %s A-coins).\n", amt, (long long)uid, bal);
        }
    } else if (strcmp(sub, "verify") == 0) {
        if (argc != 2)
            return admin_usage();
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_call(&r, c, "GET", "/api/v1/admin/ledger/verify", NULL, 0, NULL, 0)) < 0)
            goto out;
        bool ok = json_is_true(json_object_get(r.json, "ok"));
        if (g->json) {
            cli_print_raw(&r);
        } else {
            char acc[32], tr[32];
            cli_format(acc, sizeof(acc), json_object_get(r.json, "accounts_checked"), CLI_FMT_TEXT);
            cli_format(tr, sizeof(tr), json_object_get(r.json, "transfers_checked"), CLI_FMT_TEXT);
            printf("Ledger %s: %s accounts and %s transfers checked.\n", ok ? "consistent" : "INCONSISTENT",
                   acc, tr);
            if (!ok) {
                char *m = json_dumps(json_object_get(r.json, "mismatches"), JSON_INDENT(2));
                printf("Mismatches:\n%s\n", m ? m : "?");
                free(m);
            }
        }
        if (!ok)
            err = ed_error_set(ED_EINTERNAL, "the ledger does not balance");
    } else if (strcmp(sub, "overview") == 0) {
        if (argc != 2)
            return admin_usage();
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_call(&r, c, "GET", "/api/v1/admin/overview", NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json) {
            cli_print_raw(&r);
        } else {
            text = json_dumps(r.json, JSON_INDENT(2));
            printf("%s\n", text ? text : "?");
        }
    } else {
        return admin_usage();
    }
out:
    free(text);
    json_decref(body);
    json_decref(all);
    cli_resp_free(&r);
    return cli_done(c, err);
}
