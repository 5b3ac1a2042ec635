/* The `eddy` command-line client driven as a user would: the built binary
 * with a temporary HOME against the real `eddy serve`, checking its output,
 * its exit codes (0 ok, 1 refused, 2 usage, 3 unreachable), the credential
 * file, and what reached the server. */
#include "harness.h"

#include <check.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

static it_server srv;
static char dir[64], data[128], home[128], home2[128], work[128];
static const char *const server_env[] = {"EDDY_METER_INTERVAL_MS=1000", "EDDY_OOF_GRACE_MS=1000",
                                         "EDDY_STOP_GRACE_MS=1000", NULL};
static const char ROOT_PW[] = "correct horse battery";

typedef it_run run_out;

/* Run eddy with HOME=`h`, optional stdin text and extra environment
 * ("NAME=value", NULL-terminated); EDDY_URL / EDDY_API_KEY are unset unless
 * given there. */
static void run_env(run_out *o, const char *h, const char *input, const char *const *env, const char *const *argv)
{
    it_run_eddy(o, dir, h, input, env, argv);
}

#define EDDY(o, ...) run_env((o), home, NULL, NULL, (const char *const[]){"eddy", __VA_ARGS__, NULL})

static void expect(const run_out *o, int status, const char *what)
{
    ck_assert_msg(o->status == status, "%s: exit %d, wanted %d\nstdout: %s\nstderr: %s", what, o->status, status,
                  o->out, o->err);
}

static void config_path(char *out, size_t n, const char *h)
{
    snprintf(out, n, "%s/.config/eddy/config.json", h);
}

static json_t *config_json(const char *h)
{
    char p[256];
    json_error_t e;
    config_path(p, sizeof(p), h);
    return json_load_file(p, 0, &e);
}

static void login_as(const char *h, const char *user, const char *pw, bool admin)
{
    run_out o;
    char input[128];
    snprintf(input, sizeof(input), "%s\n", pw);
    if (admin)
        run_env(&o, h, input, NULL,
                (const char *const[]){"eddy", "login", "--url", srv.base_url, "--username", user,
                                      "--password-stdin", "--scope", "read", "--scope", "write", "--scope", "run",
                                      "--scope", "admin", NULL});
    else
        run_env(&o, h, input, NULL,
                (const char *const[]){"eddy", "login", "--url", srv.base_url, "--username", user,
                                      "--password-stdin", NULL});
    expect(&o, 0, "login");
    ck_assert_ptr_nonnull(strstr(o.out, "Logged in"));
}

static void sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void sh(const char *fmt, ...)
{
    char cmd[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    ck_assert_int_eq(system(cmd), 0);
}

static void setup(void)
{
    run_out o;
    snprintf(dir, sizeof(dir), "/tmp/eddy-it-cli-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(home, sizeof(home), "%s/home", dir);
    snprintf(home2, sizeof(home2), "%s/home2", dir);
    snprintf(work, sizeof(work), "%s/work", dir);
    mkdir(data, 0700);
    mkdir(home, 0700);
    mkdir(home2, 0700);
    mkdir(work, 0700);
    EDDY(&o, "admin", "create-user", "--data", data, "--username", "root", "--email", "root@example.com",
         "--password", ROOT_PW, "--role", "admin");
    expect(&o, 0, "create admin");
    ck_assert_int_eq(it_server_start_in(&srv, data, server_env), 0);
}

static void teardown(void)
{
    char cmd[128];
    ck_assert_int_eq(it_server_stop(&srv), 0);
    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

START_TEST(login_stores_a_0600_key_it_never_prints_and_whoami_uses_it)
{
    run_out o;
    struct stat sb;
    char p[256];
    json_t *cfg;
    const char *key;

    login_as(home, "root", ROOT_PW, false);
    config_path(p, sizeof(p), home);
    ck_assert_int_eq(stat(p, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0600);
    snprintf(p, sizeof(p), "%s/.config/eddy", home);
    ck_assert_int_eq(stat(p, &sb), 0);
    ck_assert_int_eq(sb.st_mode & 0777, 0700);
    cfg = config_json(home);
    ck_assert_ptr_nonnull(cfg);
    key = json_string_value(json_object_get(cfg, "api_key"));
    ck_assert_ptr_nonnull(key);
    ck_assert(strncmp(key, "eddy_prod_", 10) == 0);
    ck_assert_str_eq(json_string_value(json_object_get(cfg, "url")), srv.base_url);

    EDDY(&o, "whoami");
    expect(&o, 0, "whoami");
    ck_assert_ptr_nonnull(strstr(o.out, "root <root@example.com>"));
    ck_assert_ptr_null(strstr(o.out, key));
    EDDY(&o, "whoami", "--json");
    expect(&o, 0, "whoami --json");
    {
        json_error_t e;
        json_t *me = json_loads(o.out, 0, &e);
        ck_assert_ptr_nonnull(me);
        ck_assert_str_eq(json_string_value(json_object_get(me, "role")), "admin");
        json_decref(me);
    }
    /* the key list shows the CLI's key with read,write,run and never the key itself */
    EDDY(&o, "keys", "list");
    expect(&o, 0, "keys list");
    ck_assert_ptr_nonnull(strstr(o.out, "cli-"));
    ck_assert_ptr_nonnull(strstr(o.out, "read,write,run"));
    ck_assert_ptr_null(strstr(o.out, key));
    ck_assert_ptr_null(strstr(o.out, "admin"));

    /* a wrong password: refused, exit 1, and the stored key is untouched */
    run_env(&o, home, "wrong password\n", NULL,
            (const char *const[]){"eddy", "login", "--url", srv.base_url, "--username", "root",
                                  "--password-stdin", NULL});
    expect(&o, 1, "login with a wrong password");
    ck_assert_ptr_nonnull(strstr(o.err, "unauthorized"));
    {
        json_t *again = config_json(home);
        ck_assert_str_eq(json_string_value(json_object_get(again, "api_key")), key);
        json_decref(again);
    }
    /* no terminal and no --password-stdin: a usage error, not a hang */
    run_env(&o, home2, NULL, NULL,
            (const char *const[]){"eddy", "login", "--url", srv.base_url, "--username", "root", NULL});
    expect(&o, 2, "login without a terminal");
    ck_assert_ptr_nonnull(strstr(o.err, "--password-stdin"));
    json_decref(cfg);
}
END_TEST

START_TEST(logout_revokes_the_stored_key_and_deletes_the_file)
{
    run_out o;
    char p[256], url_env[128], key_env[400];
    json_t *cfg;

    login_as(home, "root", ROOT_PW, false);
    /* logging in again replaces the key: the old one is revoked, not left behind */
    login_as(home, "root", ROOT_PW, false);
    EDDY(&o, "keys", "list", "--json");
    expect(&o, 0, "keys list");
    {
        json_error_t e;
        json_t *keys = json_loads(o.out, 0, &e);
        ck_assert_ptr_nonnull(keys);
        ck_assert_int_eq(json_array_size(json_object_get(keys, "items")), 1);
        json_decref(keys);
    }
    cfg = config_json(home);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);
    snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", json_string_value(json_object_get(cfg, "api_key")));
    json_decref(cfg);

    EDDY(&o, "logout");
    expect(&o, 0, "logout");
    config_path(p, sizeof(p), home);
    ck_assert_int_ne(access(p, F_OK), 0);
    /* the old key is dead on the server */
    run_env(&o, home, NULL, (const char *const[]){url_env, key_env, NULL},
            (const char *const[]){"eddy", "whoami", NULL});
    expect(&o, 1, "whoami with the revoked key");
    ck_assert_ptr_nonnull(strstr(o.err, "unauthorized"));
    EDDY(&o, "logout");
    expect(&o, 0, "logout twice");
    ck_assert_ptr_nonnull(strstr(o.out, "Not logged in"));
    EDDY(&o, "whoami");
    expect(&o, 2, "whoami when logged out");
    ck_assert_ptr_nonnull(strstr(o.err, "eddy login"));
}
END_TEST

START_TEST(env_overrides_and_the_stored_key_stays_with_its_server)
{
    run_out o;
    char url_env[128], key_env[400], other[] = "EDDY_URL=http://127.0.0.1:1";
    json_t *cfg;

    login_as(home, "root", ROOT_PW, false);
    cfg = config_json(home);
    snprintf(url_env, sizeof(url_env), "EDDY_URL=%s", srv.base_url);
    snprintf(key_env, sizeof(key_env), "EDDY_API_KEY=%s", json_string_value(json_object_get(cfg, "api_key")));
    json_decref(cfg);
    /* no file at all: the environment alone is enough */
    run_env(&o, home2, NULL, (const char *const[]){url_env, key_env, NULL},
            (const char *const[]){"eddy", "whoami", NULL});
    expect(&o, 0, "whoami from the environment");
    ck_assert_ptr_nonnull(strstr(o.out, "root"));
    /* another server: the stored key is not sent there */
    run_env(&o, home, NULL, (const char *const[]){other, NULL}, (const char *const[]){"eddy", "whoami", NULL});
    expect(&o, 2, "the stored key is not offered to another URL");
    ck_assert_ptr_nonnull(strstr(o.err, "not logged in to http://127.0.0.1:1"));
    /* an unreachable server with a key: a transport error, exit 3 */
    run_env(&o, home, NULL, (const char *const[]){other, key_env, NULL},
            (const char *const[]){"eddy", "projects", "list", NULL});
    expect(&o, 3, "unreachable server");
    ck_assert_ptr_nonnull(strstr(o.err, "cannot reach http://127.0.0.1:1"));
    /* a credential file others can read is refused, not used */
    {
        char p[256];
        config_path(p, sizeof(p), home);
        ck_assert_int_eq(chmod(p, 0644), 0);
        EDDY(&o, "whoami");
        expect(&o, 1, "world-readable credential file");
        ck_assert_ptr_nonnull(strstr(o.err, "chmod 600"));
    }
}
END_TEST

/* Requests the server has served, /metrics itself left out. */
static long long served(void)
{
    it_resp r;
    long long total = 0;
    ck_assert_int_eq(it_request(&r, &srv, "GET", "/metrics", NULL, NULL), 0);
    ck_assert_int_eq(r.status, 200);
    for (const char *p = r.body; (p = strstr(p, "eddy_http_requests_total{")) != NULL; p++) {
        const char *end = strchr(p, '\n'), *sp = strstr(p, "} ");
        if (sp && end && sp < end) {
            char line[512];
            snprintf(line, sizeof(line), "%.*s", (int)(end - p), p);
            if (strstr(line, "route=\"/metrics\"") == NULL)
                total += atoll(sp + 2);
        }
    }
    it_resp_free(&r);
    return total;
}

START_TEST(bad_input_is_refused_with_exit_2_before_any_request)
{
    run_out o;
    long long before;

    login_as(home, "root", ROOT_PW, false);
    /* the login's last request may still be being counted: wait until it settles */
    before = served();
    for (int i = 0; i < 50 && served() != before; i++) {
        usleep(20000);
        before = served();
    }
    EDDY(&o, "projects", "create");
    expect(&o, 2, "projects create without a name");
    ck_assert_ptr_nonnull(strstr(o.err, "usage: eddy projects"));
    EDDY(&o, "jobs", "submit", "demo", "train.py", "--gpus", "many");
    expect(&o, 2, "--gpus many");
    ck_assert_ptr_nonnull(strstr(o.err, "--gpus must be a whole number"));
    EDDY(&o, "ledger", "--limit", "0");
    expect(&o, 2, "--limit 0");
    EDDY(&o, "keys", "create", "k", "--scope", "everything");
    expect(&o, 2, "unknown scope");
    ck_assert_ptr_nonnull(strstr(o.err, "unknown scope 'everything'"));
    EDDY(&o, "admin-remote", "grant", "root", "1.0001", "--reason", "x");
    expect(&o, 2, "coins with 4 decimals");
    EDDY(&o, "versions", "demo", "restore", "not-hex");
    expect(&o, 2, "restore a non-commit");
    EDDY(&o, "frobnicate");
    expect(&o, 2, "unknown command");
    EDDY(&o, "projects", "--url");
    expect(&o, 2, "--url without a value");
    /* none of these reached the server */
    ck_assert_int_eq(served(), before);
    EDDY(&o, "projects", "list");
    expect(&o, 0, "projects list");
    ck_assert_ptr_nonnull(strstr(o.out, "(none)"));
    /* the server saying no: exit 1 with its error code */
    EDDY(&o, "projects", "show", "pAAAAAAAAAAAA");
    expect(&o, 1, "a project that does not exist");
    ck_assert_ptr_nonnull(strstr(o.err, "not_found"));
}
END_TEST

START_TEST(push_pull_files_and_versions_round_trip)
{
    run_out o;
    char src[200], out[200], out2[200], path[300], id[64], vid[64], buf[256];
    json_t *j;
    json_error_t e;

    login_as(home, "root", ROOT_PW, false);
    EDDY(&o, "projects", "create", "demo", "--description", "round trip", "--json");
    expect(&o, 0, "projects create");
    j = json_loads(o.out, 0, &e);
    ck_assert_ptr_nonnull(j);
    snprintf(id, sizeof(id), "%s", json_string_value(json_object_get(j, "id")));
    ck_assert_str_eq(json_string_value(json_object_get(j, "visibility")), "private");
    json_decref(j);

    snprintf(src, sizeof(src), "%s/src", work);
    sh("mkdir -p %1$s/sub/deep %1$s/.git %1$s/build %1$s/logs", src);
    sh("printf 'print(1)\\n' > %1$s/train.py && printf 'one\\n' > %1$s/sub/deep/a.txt", src);
    sh("printf 'x' > %1$s/.git/config && printf 'o' > %1$s/build/o.o && printf 'l' > %1$s/logs/x.log", src);
    sh("printf '# comment\\nbuild/\\n*.log\\n' > %1$s/.eddyignore", src);
    EDDY(&o, "push", "demo", src, "-m", "first");
    expect(&o, 0, "push");
    ck_assert_ptr_nonnull(strstr(o.out, "Pushed 3 files"));
    ck_assert_ptr_nonnull(strstr(o.out, "Created version"));

    EDDY(&o, "files", id, "ls", "--json");
    expect(&o, 0, "files ls");
    j = json_loads(o.out, 0, &e);
    ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 3);
    json_decref(j);
    EDDY(&o, "files", "demo");
    expect(&o, 0, "files (ls by default)");
    ck_assert_ptr_nonnull(strstr(o.out, "sub/deep/a.txt"));
    ck_assert_ptr_nonnull(strstr(o.out, ".eddyignore"));
    ck_assert_ptr_null(strstr(o.out, ".git"));
    ck_assert_ptr_null(strstr(o.out, "o.o"));
    ck_assert_ptr_null(strstr(o.out, "x.log"));

    EDDY(&o, "versions", "demo", "list", "--json");
    expect(&o, 0, "versions list");
    j = json_loads(o.out, 0, &e);
    snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "id")));
    ck_assert_int_eq(strlen(vid), 40);
    json_decref(j);

    /* change a file after the version */
    snprintf(path, sizeof(path), "%s/new.txt", work);
    sh("printf 'two\\n' > %1$s", path);
    EDDY(&o, "files", "demo", "put", "sub/deep/a.txt", path);
    expect(&o, 0, "files put");
    EDDY(&o, "files", "demo", "cat", "sub/deep/a.txt");
    expect(&o, 0, "files cat");
    ck_assert_str_eq(o.out, "two\n");
    vid[10] = '\0';   /* a short commit id is enough */
    EDDY(&o, "files", "demo", "cat", "sub/deep/a.txt", "--version", vid);
    expect(&o, 0, "files cat --version");
    ck_assert_str_eq(o.out, "one\n");

    snprintf(out, sizeof(out), "%s/out", work);
    EDDY(&o, "pull", "demo", out, "--version", vid);
    expect(&o, 0, "pull --version");
    snprintf(path, sizeof(path), "%s/sub/deep/a.txt", out);
    it_slurp(buf, sizeof(buf), path);
    ck_assert_str_eq(buf, "one\n");
    snprintf(out2, sizeof(out2), "%s/out2", work);
    EDDY(&o, "pull", "demo", out2);
    expect(&o, 0, "pull");
    snprintf(path, sizeof(path), "%s/sub/deep/a.txt", out2);
    it_slurp(buf, sizeof(buf), path);
    ck_assert_str_eq(buf, "two\n");

    EDDY(&o, "versions", "demo", "restore", vid);
    expect(&o, 0, "versions restore");
    ck_assert_ptr_nonnull(strstr(o.out, "Unsaved changes were kept as version"));
    EDDY(&o, "files", "demo", "cat", "sub/deep/a.txt");
    ck_assert_str_eq(o.out, "one\n");
    EDDY(&o, "files", "demo", "rm", "train.py");
    expect(&o, 0, "files rm");
    EDDY(&o, "files", "demo", "rm", "train.py");
    expect(&o, 1, "files rm of a missing file");
    ck_assert_ptr_nonnull(strstr(o.err, "not_found"));
    EDDY(&o, "versions", "demo", "create", "second");
    expect(&o, 0, "versions create");

    EDDY(&o, "projects", "fork", "demo", "--json");
    expect(&o, 0, "projects fork");
    j = json_loads(o.out, 0, &e);
    ck_assert_str_eq(json_string_value(json_object_get(j, "forked_from")), id);
    /* names are unique per owner: a fork of one's own project gets its own */
    ck_assert_str_eq(json_string_value(json_object_get(j, "name")), "demo (fork)");
    json_decref(j);
    EDDY(&o, "projects", "show", "demo", "--json");
    expect(&o, 0, "show by a name that is one project's");
    ck_assert_ptr_nonnull(strstr(o.out, id));
    EDDY(&o, "projects", "show", "demo (fork)");
    expect(&o, 0, "show the fork by its name");
    EDDY(&o, "projects", "delete", id);
    expect(&o, 0, "projects delete");
    EDDY(&o, "projects", "show", id);
    expect(&o, 1, "deleted project");
}
END_TEST

START_TEST(push_refuses_symlinks_and_pull_never_writes_outside_dir)
{
    run_out o;
    char src[200], out[200], outside[200], path[300];

    login_as(home, "root", ROOT_PW, false);
    EDDY(&o, "projects", "create", "demo");
    expect(&o, 0, "projects create");
    snprintf(src, sizeof(src), "%s/src", work);
    sh("mkdir -p %1$s/sub && printf 'a' > %1$s/sub/a.txt && ln -s /etc/passwd %1$s/link", src);
    EDDY(&o, "push", "demo", src);
    expect(&o, 2, "push with a symlink");
    ck_assert_ptr_nonnull(strstr(o.err, "symbolic link"));
    EDDY(&o, "files", "demo", "ls", "--json");
    expect(&o, 0, "files ls");
    {
        json_error_t e;
        json_t *j = json_loads(o.out, 0, &e);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(json_array_size(json_object_get(j, "items")), 0);   /* nothing was uploaded */
        json_decref(j);
    }
    /* listed in .eddyignore, the link is skipped */
    sh("printf 'link\\n' > %1$s/.eddyignore", src);
    EDDY(&o, "push", "demo", src);
    expect(&o, 0, "push with the link ignored");

    /* DIR/sub is a link to a directory elsewhere: pull must not write through it */
    snprintf(out, sizeof(out), "%s/out", work);
    snprintf(outside, sizeof(outside), "%s/outside", work);
    mkdir(out, 0755);
    mkdir(outside, 0755);
    snprintf(path, sizeof(path), "%s/sub", out);
    ck_assert_int_eq(symlink(outside, path), 0);
    EDDY(&o, "pull", "demo", out);
    expect(&o, 1, "pull through a symlinked directory");
    ck_assert_ptr_nonnull(strstr(o.err, "refusing"));
    snprintf(path, sizeof(path), "%s/a.txt", outside);
    ck_assert_int_ne(access(path, F_OK), 0);
    /* a symlink in the file's own place is replaced, its target untouched */
    snprintf(path, sizeof(path), "%s/sub", out);
    unlink(path);
    mkdir(path, 0755);
    snprintf(path, sizeof(path), "%s/sub/a.txt", out);
    {
        char target[300], buf[64];
        snprintf(target, sizeof(target), "%s/victim", outside);
        sh("printf 'keep' > %1$s", target);
        ck_assert_int_eq(symlink(target, path), 0);
        EDDY(&o, "pull", "demo", out);
        expect(&o, 0, "pull over a symlinked file");
        it_slurp(buf, sizeof(buf), target);
        ck_assert_str_eq(buf, "keep");
        it_slurp(buf, sizeof(buf), path);
        ck_assert_str_eq(buf, "a");
    }
}
END_TEST

static const char TRAIN_PY[] =
    "import os, sys, time\n"
    "for i in range(3):\n"
    "    print('epoch', i, ' '.join(sys.argv[1:]), flush=True)\n"
    "    time.sleep(0.5)\n"
    "out = os.environ['EDDY_OUTPUT_DIR']\n"
    "os.makedirs(out + '/ckpt', exist_ok=True)\n"
    "open(out + '/ckpt/model.txt', 'w').write('w=1')\n";

START_TEST(jobs_submit_follow_logs_artifacts_and_ledger_through_the_cli)
{
    run_out o;
    char src[200], path[300], buf[64], jid[32];
    json_t *j;
    json_error_t e;
    FILE *f;

    login_as(home, "root", ROOT_PW, true);
    EDDY(&o, "admin-remote", "grant", "root", "50", "--reason", "cli test", "--idempotency-key", "g-1");
    expect(&o, 0, "admin-remote grant");
    ck_assert_ptr_nonnull(strstr(o.out, "Granted 50.000 A-coins"));
    EDDY(&o, "admin-remote", "grant", "root", "50", "--reason", "cli test", "--idempotency-key", "g-1");
    expect(&o, 0, "the same grant again");
    EDDY(&o, "quota", "--json");
    expect(&o, 0, "quota");
    j = json_loads(o.out, 0, &e);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "balance_mcoins")), 50000);   /* granted once */
    json_decref(j);

    EDDY(&o, "projects", "create", "train");
    snprintf(src, sizeof(src), "%s/src", work);
    mkdir(src, 0755);
    snprintf(path, sizeof(path), "%s/train.py", src);
    f = fopen(path, "w");
    fputs(TRAIN_PY, f);
    fclose(f);
    EDDY(&o, "push", "train", src, "-m", "v1");
    expect(&o, 0, "push");
    EDDY(&o, "jobs", "submit", "train", "train.py", "--max-runtime", "120", "--json", "--", "--epochs", "3");
    expect(&o, 0, "jobs submit");
    j = json_loads(o.out, 0, &e);
    ck_assert_ptr_nonnull(j);
    snprintf(jid, sizeof(jid), "%lld", (long long)json_integer_value(json_object_get(j, "id")));
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(j, "args"), 0)), "--epochs");
    json_decref(j);

    EDDY(&o, "jobs", "logs", jid, "--follow");
    expect(&o, 0, "jobs logs --follow");
    ck_assert_msg(strstr(o.out, "epoch 0 --epochs 3\nepoch 1 --epochs 3\nepoch 2 --epochs 3\n") != NULL,
                  "logs: %s / %s", o.out, o.err);
    ck_assert_ptr_nonnull(strstr(o.err, "job succeeded (exit code 0)"));
    EDDY(&o, "jobs", "logs", jid);
    expect(&o, 0, "jobs logs");
    ck_assert_ptr_nonnull(strstr(o.out, "epoch 2 --epochs 3\n"));
    EDDY(&o, "jobs", "show", jid);
    expect(&o, 0, "jobs show");
    ck_assert_ptr_nonnull(strstr(o.out, "succeeded"));
    EDDY(&o, "jobs", "list");
    expect(&o, 0, "jobs list");
    ck_assert_ptr_nonnull(strstr(o.out, "train.py"));
    EDDY(&o, "jobs", "artifacts", jid);
    expect(&o, 0, "jobs artifacts");
    ck_assert_ptr_nonnull(strstr(o.out, "ckpt/model.txt"));
    snprintf(path, sizeof(path), "%s/arts", work);
    EDDY(&o, "jobs", "artifacts", jid, "--download", path);
    expect(&o, 0, "jobs artifacts --download");
    snprintf(path, sizeof(path), "%s/arts/ckpt/model.txt", work);
    it_slurp(buf, sizeof(buf), path);
    ck_assert_str_eq(buf, "w=1");
    EDDY(&o, "jobs", "cancel", jid);
    expect(&o, 1, "cancel a finished job");
    ck_assert_ptr_nonnull(strstr(o.err, "conflict"));

    EDDY(&o, "ledger", "--limit", "10");
    expect(&o, 0, "ledger");
    ck_assert_ptr_nonnull(strstr(o.out, "grant"));
    ck_assert_ptr_nonnull(strstr(o.out, "cli test"));
    EDDY(&o, "resources");
    expect(&o, 0, "resources");
    ck_assert_ptr_nonnull(strstr(o.out, "cpu-basic"));
    EDDY(&o, "tiers");
    expect(&o, 0, "tiers");
    ck_assert_ptr_nonnull(strstr(o.out, "free"));
    EDDY(&o, "admin-remote", "verify");
    expect(&o, 0, "admin-remote verify");
    ck_assert_ptr_nonnull(strstr(o.out, "Ledger consistent"));
    EDDY(&o, "admin-remote", "users");
    expect(&o, 0, "admin-remote users");
    ck_assert_ptr_nonnull(strstr(o.out, "root@example.com"));
}
END_TEST

START_TEST(admin_remote_is_refused_without_the_admin_role_or_scope)
{
    run_out o;
    it_resp r;

    ck_assert_int_eq(it_request(&r, &srv, "POST", "/api/v1/auth/signup",
                                "{\"username\":\"alice\",\"email\":\"alice@example.com\","
                                "\"password\":\"alice-password-1\"}", NULL), 0);
    ck_assert_int_eq(r.status, 201);
    it_resp_free(&r);
    login_as(home2, "alice", "alice-password-1", false);
    run_env(&o, home2, NULL, NULL, (const char *const[]){"eddy", "admin-remote", "users", NULL});
    expect(&o, 1, "a user lists users");
    ck_assert_ptr_nonnull(strstr(o.err, "forbidden"));
    run_env(&o, home2, NULL, NULL,
            (const char *const[]){"eddy", "admin-remote", "grant", "1", "5", "--reason", "me", NULL});
    expect(&o, 1, "a user grants coins");
    /* an admin whose CLI key lacks scope admin is refused too */
    login_as(home, "root", ROOT_PW, false);
    EDDY(&o, "admin-remote", "verify");
    expect(&o, 1, "admin without the admin scope");
    ck_assert_ptr_nonnull(strstr(o.err, "forbidden"));
    /* a user cannot give itself the admin scope */
    run_env(&o, home2, "alice-password-1\n", NULL,
            (const char *const[]){"eddy", "login", "--url", srv.base_url, "--username", "alice",
                                  "--password-stdin", "--scope", "admin", NULL});
    expect(&o, 1, "a user asks for scope admin");
}
END_TEST

START_TEST(files_if_match_versions_large_files_and_restore_modes)
{
    run_out o;
    char f1[200], f2[200], big[200], etag[80], vid[64];
    json_t *j;
    json_error_t e;

    login_as(home, "root", ROOT_PW, false);
    EDDY(&o, "projects", "create", "ws");
    expect(&o, 0, "projects create");
    snprintf(f1, sizeof(f1), "%s/one.txt", work);
    snprintf(f2, sizeof(f2), "%s/two.txt", work);
    snprintf(big, sizeof(big), "%s/big.bin", work);
    sh("printf one > %s && printf two > %s && head -c 22000000 /dev/zero > %s", f1, f2, big);

    /* put prints the new etag; --if-match with it wins once, then is stale */
    EDDY(&o, "files", "ws", "put", "a.txt", f1, "--json");
    expect(&o, 0, "files put --json");
    j = json_loads(o.out, 0, &e);
    ck_assert_ptr_nonnull(j);
    snprintf(etag, sizeof(etag), "%s", json_string_value(json_object_get(j, "etag")));
    json_decref(j);
    ck_assert_int_eq(strlen(etag), 64);
    EDDY(&o, "files", "ws", "put", "a.txt", f2, "--if-match", etag);
    expect(&o, 0, "files put --if-match (current)");
    ck_assert_ptr_nonnull(strstr(o.out, "etag "));
    EDDY(&o, "files", "ws", "put", "a.txt", f1, "--if-match", etag);
    expect(&o, 1, "files put --if-match (stale)");
    ck_assert_ptr_nonnull(strstr(o.err, "precondition_failed"));
    EDDY(&o, "files", "ws", "cat", "a.txt");
    ck_assert_str_eq(o.out, "two");

    /* a version lists what it kept out */
    sh("printf '*.tmp\\n' > %s", f1);
    EDDY(&o, "files", "ws", "put", ".eddyignore", f1);
    expect(&o, 0, "put .eddyignore");
    EDDY(&o, "files", "ws", "put", "x.tmp", f2);
    expect(&o, 0, "put x.tmp");
    EDDY(&o, "files", "ws", "put", "ckpt/model.bin", big);
    expect(&o, 0, "put a 22 MB file");
    EDDY(&o, "versions", "ws", "create", "with large files");
    expect(&o, 0, "versions create");
    ck_assert_ptr_nonnull(strstr(o.out, "2 large or ignored files not versioned"));
    ck_assert_ptr_nonnull(strstr(o.out, "ckpt/model.bin"));
    ck_assert_ptr_nonnull(strstr(o.out, "x.tmp"));
    EDDY(&o, "versions", "ws", "list", "--json");
    j = json_loads(o.out, 0, &e);
    snprintf(vid, sizeof(vid), "%s", json_string_value(json_object_get(json_array_get(json_object_get(j, "items"), 0), "id")));
    json_decref(j);
    EDDY(&o, "versions", "ws", "show", vid);
    expect(&o, 0, "versions show");
    ck_assert_ptr_nonnull(strstr(o.out, "LARGE FILE (NOT VERSIONED)"));
    ck_assert_ptr_nonnull(strstr(o.out, "eddyignore"));

    /* restore keeps files the version lacks unless --mode exact */
    EDDY(&o, "files", "ws", "put", "later.txt", f2);
    expect(&o, 0, "put later.txt");
    EDDY(&o, "versions", "ws", "restore", vid);
    expect(&o, 0, "versions restore");
    ck_assert_ptr_nonnull(strstr(o.out, "(keep_untracked)"));
    EDDY(&o, "files", "ws", "ls");
    ck_assert_ptr_nonnull(strstr(o.out, "later.txt"));
    EDDY(&o, "versions", "ws", "restore", vid, "--mode", "everything");
    expect(&o, 2, "a bad --mode");
    EDDY(&o, "versions", "ws", "restore", vid, "--mode", "exact");
    expect(&o, 0, "versions restore --mode exact");
    ck_assert_ptr_nonnull(strstr(o.out, "(exact)"));
    EDDY(&o, "files", "ws", "ls");
    ck_assert_ptr_null(strstr(o.out, "later.txt"));
    ck_assert_ptr_nonnull(strstr(o.out, "x.tmp"));
    ck_assert_ptr_nonnull(strstr(o.out, "ckpt/model.bin"));
}
END_TEST

int main(void)
{
    Suite *s = suite_create("cli");
    TCase *tc = tcase_create("cli");
    SRunner *sr;
    int failed;

    tcase_add_checked_fixture(tc, setup, teardown);
    tcase_set_timeout(tc, 180);
    tcase_add_test(tc, login_stores_a_0600_key_it_never_prints_and_whoami_uses_it);
    tcase_add_test(tc, logout_revokes_the_stored_key_and_deletes_the_file);
    tcase_add_test(tc, env_overrides_and_the_stored_key_stays_with_its_server);
    tcase_add_test(tc, bad_input_is_refused_with_exit_2_before_any_request);
    tcase_add_test(tc, push_pull_files_and_versions_round_trip);
    tcase_add_test(tc, push_refuses_symlinks_and_pull_never_writes_outside_dir);
    tcase_add_test(tc, files_if_match_versions_large_files_and_restore_modes);
    tcase_add_test(tc, jobs_submit_follow_logs_artifacts_and_ledger_through_the_cli);
    tcase_add_test(tc, admin_remote_is_refused_without_the_admin_role_or_scope);
    suite_add_tcase(s, tc);
    sr = srunner_create(s);
    srunner_run_all(sr, CK_NORMAL);
    failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed == 0 ? 0 : 1;
}
