/*
 * client_auth.c - eddy login | logout | whoami | keys
 *
 * `eddy login` signs in once with a password, creates an API key named
 * "cli-<host>" (scopes read,write,run unless --scope says otherwise), ends
 * the browser-style session and stores only the key, so later commands never
 * need a cookie or a CSRF token. `eddy logout` revokes that key and deletes
 * the file.
 */
#include "cli.h"
#include "cmd.h"

#include "ed_error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#define PASSWORD_MAX 1024

static const char *const scope_names[] = {"read", "write", "run", "serve", "admin"};

static int check_scope(const char *s)
{
    for (size_t i = 0; i < sizeof(scope_names) / sizeof(scope_names[0]); i++)
        if (strcmp(s, scope_names[i]) == 0)
            return 0;
    return ed_error_set(CLI_EUSAGE, "unknown scope '%s' (read, write, run, serve, admin)", s);
}

static int check_env(const char *e)
{
    if (strcmp(e, "dev") && strcmp(e, "test") && strcmp(e, "prod"))
        return ed_error_set(CLI_EUSAGE, "--env must be dev, test or prod, not '%s'", e);
    return 0;
}

/* One line from fd into buf (without the newline). */
static int read_line(char *buf, size_t n, int fd)
{
    size_t used = 0;
    char ch;

    for (;;) {
        ssize_t r = read(fd, &ch, 1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0 || ch == '\n')
            break;
        if (used + 1 >= n) {
            explicit_bzero(buf, n);
            return ed_error_set(CLI_EUSAGE, "the password is longer than %d bytes", PASSWORD_MAX - 1);
        }
        buf[used++] = ch;
    }
    if (used > 0 && buf[used - 1] == '\r')
        used--;
    buf[used] = '\0';
    if (used == 0)
        return ed_error_set(CLI_EUSAGE, "no password was given");
    return 0;
}

static int prompt_password(char *buf, size_t n)
{
    struct termios old, quiet;
    int fd = open("/dev/tty", O_RDWR | O_CLOEXEC), err;

    if (fd < 0)
        return ed_error_set(CLI_EUSAGE, "no terminal to ask for the password on: use --password-stdin");
    if (tcgetattr(fd, &old) < 0) {
        close(fd);
        return ed_error_set(CLI_EUSAGE, "cannot turn off echo: use --password-stdin");
    }
    quiet = old;
    quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHONL);
    quiet.c_lflag |= ICANON;
    if (write(fd, "Password: ", 10) != 10 || tcsetattr(fd, TCSAFLUSH, &quiet) < 0) {
        close(fd);
        return ed_error_set(CLI_EUSAGE, "cannot turn off echo: use --password-stdin");
    }
    err = read_line(buf, n, fd);
    tcsetattr(fd, TCSAFLUSH, &old);
    if (write(fd, "\n", 1) < 0) {
        /* nothing to do: the newline is cosmetic */
    }
    close(fd);
    return err;
}

static int login_usage(void)
{
    fprintf(stderr, "usage: eddy login [--url URL] --username U [--password-stdin] [--scope S]... "
                    "[--env dev|test|prod]\n");
    return CLI_EXIT_USAGE;
}

int cmd_client_login(int argc, char **argv, const cli_globals *g)
{
    const char *username = NULL, *env = "prod", *scopes[8];
    size_t nscopes = 0;
    bool from_stdin = false;
    char password[PASSWORD_MAX], host[128], keyname[160], cookie[600], csrf_hdr[300], tmp[512];
    cli_config cfg, old;
    cli *c = NULL;
    cli_resp r = {0};
    json_t *body = NULL, *key = NULL, *ignored = NULL, *sc;
    const char *url = g->url, *s;
    int err;

    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--username") == 0 && i + 1 < argc)
            username = argv[++i];
        else if (strcmp(argv[i], "--password-stdin") == 0)
            from_stdin = true;
        else if (strcmp(argv[i], "--scope") == 0 && i + 1 < argc && nscopes < 8)
            scopes[nscopes++] = argv[++i];
        else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc)
            env = argv[++i];
        else
            return login_usage();
    }
    if (username == NULL || username[0] == '\0')
        return login_usage();
    for (size_t i = 0; i < nscopes; i++)
        if ((err = check_scope(scopes[i])) < 0)
            return cli_report(err);
    if ((err = check_env(env)) < 0)
        return cli_report(err);
    memset(&old, 0, sizeof(old));
    cli_config_load(&old);   /* the key it replaces, if any */
    if (url == NULL && getenv("EDDY_URL") == NULL && old.url[0] == '\0') {
        fprintf(stderr, "eddy: --url is needed the first time (eddy login --url https://eddy.example.org ...)\n");
        return CLI_EXIT_USAGE;
    }
    if ((err = from_stdin ? read_line(password, sizeof(password), 0)
                          : prompt_password(password, sizeof(password))) < 0)
        return cli_report(err);
    if ((err = cli_open(&c, url, false)) < 0 || (err = cli_set_key(c, NULL)) < 0)
        goto out;

    body = json_pack("{s:s, s:s}", "username", username, "password", password);
    explicit_bzero(password, sizeof(password));
    if (body == NULL) {
        err = ed_error_set(ED_ENOMEM, "login");
        goto out;
    }
    {
        char *text = json_dumps(body, JSON_COMPACT);
        json_t *pw = json_object_get(body, "password");
        if (text == NULL) {
            err = ed_error_set(ED_ENOMEM, "login");
            goto out;
        }
        json_string_set(pw, "");
        err = cli_call(&r, c, "POST", "/api/v1/auth/login", text, strlen(text), "application/json", 0);
        explicit_bzero(text, strlen(text));
        free(text);
    }
    if (err < 0)
        goto out;
    if (cli_resp_header(tmp, sizeof(tmp), &r, "Set-Cookie") < 0 ||
        (s = json_string_value(json_object_get(r.json, "csrf_token"))) == NULL) {
        err = ed_error_set(ED_EIO, "the server's login answer has no session: is %s an Eddy server?",
                           cli_url(c));
        goto out;
    }
    snprintf(cookie, sizeof(cookie), "Cookie: %.*s", (int)strcspn(tmp, ";"), tmp);
    snprintf(csrf_hdr, sizeof(csrf_hdr), "X-CSRF-Token: %.200s", s);
    cli_resp_free(&r);
    {
        const char *hdrs[] = {cookie, csrf_hdr, NULL};
        if ((err = cli_set_headers(c, hdrs)) < 0)
            goto out;
    }
    if (gethostname(host, sizeof(host)) < 0 || host[0] == '\0')
        snprintf(host, sizeof(host), "unknown");
    host[sizeof(host) - 1] = '\0';
    snprintf(keyname, sizeof(keyname), "cli-%.100s", host);
    json_decref(body);
    body = json_pack("{s:s, s:s, s:[]}", "name", keyname, "env", env, "scopes");
    sc = json_object_get(body, "scopes");
    if (nscopes == 0) {
        json_array_append_new(sc, json_string("read"));
        json_array_append_new(sc, json_string("write"));
        json_array_append_new(sc, json_string("run"));
    }
    for (size_t i = 0; i < nscopes; i++)
        json_array_append_new(sc, json_string(scopes[i]));
    err = cli_call_json(&key, c, "POST", "/api/v1/keys", body, 0);
    /* the session was only needed to make the key */
    cli_call_json(&ignored, c, "POST", "/api/v1/auth/logout", NULL, 0);
    json_decref(ignored);
    ignored = NULL;
    cli_set_headers(c, NULL);
    if (err < 0)
        goto out;
    if ((s = json_string_value(json_object_get(key, "key"))) == NULL || strlen(s) >= sizeof(cfg.api_key)) {
        err = ed_error_set(ED_EIO, "the server made a key but did not return it");
        goto out;
    }
    memset(&cfg, 0, sizeof(cfg));
    snprintf(cfg.url, sizeof(cfg.url), "%s", cli_url(c));
    snprintf(cfg.api_key, sizeof(cfg.api_key), "%s", s);
    cfg.key_id = json_integer_value(json_object_get(key, "id"));
    snprintf(cfg.username, sizeof(cfg.username), "%s", username);
    err = cli_config_save(&cfg);
    explicit_bzero(&cfg, sizeof(cfg));
    if (err < 0) {
        /* a key nobody holds is useless: take it back */
        char path[64];
        int keep = err;
        snprintf(path, sizeof(path), "/api/v1/keys/%lld", (long long)json_integer_value(json_object_get(key, "id")));
        cli_set_key(c, s);
        cli_call_json(&ignored, c, "DELETE", path, NULL, 0);
        err = keep;
        goto out;
    }
    /* the key this login replaces is revoked, when it was the same user's */
    if (old.key_id > 0 && strcmp(old.url, cli_url(c)) == 0 && strcmp(old.username, username) == 0 &&
        old.key_id != json_integer_value(json_object_get(key, "id"))) {
        char path[64];
        snprintf(path, sizeof(path), "/api/v1/keys/%lld", (long long)old.key_id);
        cli_set_key(c, s);
        cli_call_json(&ignored, c, "DELETE", path, NULL, 0);
    }
    {
        char scopes_txt[128];
        cli_format(scopes_txt, sizeof(scopes_txt), json_object_get(key, "scopes"), CLI_FMT_LIST);
        printf("Logged in to %s as %s (API key '%s', scopes %s).\n", cli_url(c), username, keyname,
               scopes_txt);
    }
    err = 0;
out:
    explicit_bzero(password, sizeof(password));
    explicit_bzero(&old, sizeof(old));
    if (key) {
        json_t *k = json_object_get(key, "key");
        if (k && json_string_value(k))
            explicit_bzero((char *)json_string_value(k), json_string_length(k));
    }
    json_decref(key);
    json_decref(ignored);
    json_decref(body);
    cli_resp_free(&r);
    return cli_done(c, err);
}

int cmd_client_logout(int argc, char **argv, const cli_globals *g)
{
    cli_config cfg;
    cli *c = NULL;
    json_t *j = NULL;
    char path[64];
    int err;

    (void)g;
    if (argc != 1) {
        fprintf(stderr, "usage: eddy logout\n");
        return CLI_EXIT_USAGE;
    }
    if ((err = cli_config_load(&cfg)) < 0) {
        if (err == ED_ENOTFOUND) {
            printf("Not logged in.\n");
            return 0;
        }
        return cli_report(err);
    }
    /* revoke the stored key itself, whatever EDDY_API_KEY says */
    if ((err = cli_open(&c, cfg.url, false)) < 0 || (err = cli_set_key(c, cfg.api_key)) < 0)
        goto out;
    snprintf(path, sizeof(path), "/api/v1/keys/%lld", (long long)cfg.key_id);
    err = cfg.key_id > 0 ? cli_call_json(&j, c, "DELETE", path, NULL, 0) : 0;
    json_decref(j);
    /* already revoked or expired (401), or gone (404): the key is dead either way */
    if (err == ED_EAUTH || err == ED_ENOTFOUND)
        err = 0;
    if (err == CLI_ETRANSPORT) {
        fprintf(stderr, "eddy: the key was not revoked and the credential file was kept; try again\n");
        goto out;
    }
    if (err < 0)
        goto out;
    if ((err = cli_config_remove()) < 0)
        goto out;
    printf("Logged out of %s (API key revoked).\n", cfg.url);
out:
    explicit_bzero(&cfg, sizeof(cfg));
    return cli_done(c, err);
}

int cmd_client_whoami(int argc, char **argv, const cli_globals *g)
{
    cli *c = NULL;
    cli_resp r = {0};
    int err;

    if (argc != 1) {
        fprintf(stderr, "usage: eddy whoami [--json]\n");
        return CLI_EXIT_USAGE;
    }
    if ((err = cli_open(&c, g->url, true)) < 0 ||
        (err = cli_call(&r, c, "GET", "/api/v1/me", NULL, 0, NULL, 0)) < 0)
        goto out;
    if (g->json) {
        cli_print_raw(&r);
    } else {
        char name[160], role[64], tier[64], email[200];
        cli_format(name, sizeof(name), json_object_get(r.json, "username"), CLI_FMT_TEXT);
        cli_format(role, sizeof(role), json_object_get(r.json, "role"), CLI_FMT_TEXT);
        cli_format(tier, sizeof(tier), json_object_get(r.json, "tier"), CLI_FMT_TEXT);
        cli_format(email, sizeof(email), json_object_get(r.json, "email"), CLI_FMT_TEXT);
        printf("%s <%s> on %s (role %s, tier %s)\n", name, email, cli_url(c), role, tier);
    }
out:
    cli_resp_free(&r);
    return cli_done(c, err);
}

static const cli_col key_cols[] = {
    {"ID", "id", CLI_FMT_TEXT},         {"NAME", "name", CLI_FMT_TEXT},
    {"ENV", "env", CLI_FMT_TEXT},       {"SCOPES", "scopes", CLI_FMT_LIST},
    {"PREFIX", "prefix", CLI_FMT_TEXT}, {"CREATED", "created_at", CLI_FMT_TEXT},
    {"EXPIRES", "expires_at", CLI_FMT_TEXT}, {"LAST USED", "last_used_at", CLI_FMT_TEXT},
};

static int keys_usage(void)
{
    fprintf(stderr, "usage: eddy keys list\n"
                    "       eddy keys create NAME [--scope S]... [--env dev|test|prod] "
                    "[--expires-days N] [--daily-budget COINS] [--rate-limit N]\n"
                    "       eddy keys revoke ID\n");
    return CLI_EXIT_USAGE;
}

int cmd_client_keys(int argc, char **argv, const cli_globals *g)
{
    const char *sub = argc > 1 ? argv[1] : "list";
    cli *c = NULL;
    cli_resp r = {0};
    json_t *body = NULL;
    int err;

    if (strcmp(sub, "list") == 0) {
        if (argc > 2)
            return keys_usage();
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_call(&r, c, "GET", "/api/v1/keys?limit=500", NULL, 0, NULL, 0)) < 0)
            goto out;
        if (g->json)
            cli_print_raw(&r);
        else
            cli_print_table(json_object_get(r.json, "items"), key_cols,
                            sizeof(key_cols) / sizeof(key_cols[0]));
    } else if (strcmp(sub, "create") == 0) {
        const char *name = NULL, *env = "prod";
        int64_t days = 0, budget = -1, rate = 0;
        json_t *scopes = json_array();
        body = json_object();
        if (body == NULL || scopes == NULL) {
            json_decref(scopes);
            err = ed_error_set(ED_ENOMEM, "key");
            goto out;
        }
        json_object_set_new(body, "scopes", scopes);
        for (int i = 2; i < argc; i++) {
            if (strcmp(argv[i], "--scope") == 0 && i + 1 < argc) {
                if ((err = check_scope(argv[++i])) < 0)
                    goto out;
                json_array_append_new(scopes, json_string(argv[i]));
            } else if (strcmp(argv[i], "--env") == 0 && i + 1 < argc) {
                env = argv[++i];
            } else if (strcmp(argv[i], "--expires-days") == 0 && i + 1 < argc) {
                if ((err = cli_parse_int(&days, argv[++i], 1, 3650, "--expires-days")) < 0)
                    goto out;
            } else if (strcmp(argv[i], "--daily-budget") == 0 && i + 1 < argc) {
                if ((err = cli_parse_coins(&budget, argv[++i])) < 0)
                    goto out;
                if (budget < 0) {
                    err = ed_error_set(CLI_EUSAGE, "--daily-budget must not be negative");
                    goto out;
                }
            } else if (strcmp(argv[i], "--rate-limit") == 0 && i + 1 < argc) {
                if ((err = cli_parse_int(&rate, argv[++i], 1, 1000000, "--rate-limit")) < 0)
                    goto out;
            } else if (argv[i][0] != '-' && name == NULL) {
                name = argv[i];
            } else {
                json_decref(body);
                return keys_usage();
            }
        }
        if (name == NULL || name[0] == '\0') {
            json_decref(body);
            return keys_usage();
        }
        if ((err = check_env(env)) < 0)
            goto out;
        if (json_array_size(scopes) == 0)
            json_array_append_new(scopes, json_string("read"));
        json_object_set_new(body, "name", json_string(name));
        json_object_set_new(body, "env", json_string(env));
        if (days > 0)
            json_object_set_new(body, "expires_in_days", json_integer(days));
        if (budget >= 0)
            json_object_set_new(body, "daily_budget_mcoins", json_integer(budget));
        if (rate > 0)
            json_object_set_new(body, "rate_limit_per_min", json_integer(rate));
        {
            char *text = json_dumps(body, JSON_COMPACT);
            if (text == NULL) {
                err = ed_error_set(ED_ENOMEM, "key");
                goto out;
            }
            if ((err = cli_open(&c, g->url, true)) == 0)
                err = cli_call(&r, c, "POST", "/api/v1/keys", text, strlen(text), "application/json", 0);
            free(text);
            if (err < 0)
                goto out;
        }
        if (g->json) {
            cli_print_raw(&r);
        } else {
            char id[32], scopes_txt[128];
            cli_format(id, sizeof(id), json_object_get(r.json, "id"), CLI_FMT_TEXT);
            cli_format(scopes_txt, sizeof(scopes_txt), json_object_get(r.json, "scopes"), CLI_FMT_LIST);
            printf("Created API key '%s' (id %s, scopes %s). It is shown only this once:\n%s\n", name, id,
                   scopes_txt, json_string_value(json_object_get(r.json, "key")) ?: "?");
        }
    } else if (strcmp(sub, "revoke") == 0) {
        int64_t id;
        char path[64];
        cli_config cfg;
        if (argc != 3)
            return keys_usage();
        if ((err = cli_parse_int(&id, argv[2], 1, INT64_MAX, "the key id")) < 0)
            goto out;
        snprintf(path, sizeof(path), "/api/v1/keys/%lld", (long long)id);
        if ((err = cli_open(&c, g->url, true)) < 0 ||
            (err = cli_call(&r, c, "DELETE", path, NULL, 0, NULL, 0)) < 0)
            goto out;
        printf("Revoked API key %lld.\n", (long long)id);
        if (cli_config_load(&cfg) == 0 && cfg.key_id == id && strcmp(cfg.url, cli_url(c)) == 0)
            printf("That was this CLI's own key: run `eddy login` to sign in again.\n");
        explicit_bzero(&cfg, sizeof(cfg));
    } else {
        return keys_usage();
    }
    err = 0;
out:
    json_decref(body);
    cli_resp_free(&r);
    return cli_done(c, err);
}
