/*
 * admin.c - `eddy admin`: operator tasks on a data directory, without a
 * running server (SQLite lets both share the file).
 *
 *   eddy admin create-user --data DIR --username U --email E
 *                          (--password P | --password-file F)
 *                          [--role user|admin] [--tier free|pro|premium] [--if-not-exists]
 *   eddy admin set-role --data DIR --username U --role user|admin
 *   eddy admin set-tier --data DIR --username U --tier free|pro|premium
 *   eddy admin grant ...            (admin_grant.c)
 *
 * Exit status: 0 done (one line on stdout), 1 failed, 2 bad usage or a value
 * the rules refuse (bad username, short password, unknown role or tier).
 * Each change writes an audit row with no actor (the operator).
 */
#include "acct.h"
#include "cmd.h"

#include "ed_error.h"
#include "ed_store.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_PASSWORD 1024

static void usage(FILE *f)
{
    fprintf(f,
            "usage: eddy admin <command> [options]\n"
            "\n"
            "  create-user --data DIR --username U --email E (--password P | --password-file F)\n"
            "              [--role user|admin] [--tier free|pro|premium] [--if-not-exists]\n"
            "  set-role    --data DIR --username U --role user|admin\n"
            "  set-tier    --data DIR --username U --tier free|pro|premium\n"
            "  grant       --data DIR --username U (--mcoins N | --coins X) --reason TEXT\n");
}

typedef struct args {
    const char *data, *username, *email, *password, *password_file, *role, *tier;
    bool if_not_exists;
} args;

/* Parse "--flag VALUE" / "--flag=VALUE" options. 0 or 2 (usage, reported). */
static int parse(args *a, int argc, char **argv, const char *cmd)
{
    static const struct {
        const char *name;
        size_t      off;
    } flags[] = {
        {"--data", offsetof(args, data)},
        {"--username", offsetof(args, username)},
        {"--email", offsetof(args, email)},
        {"--password", offsetof(args, password)},
        {"--password-file", offsetof(args, password_file)},
        {"--role", offsetof(args, role)},
        {"--tier", offsetof(args, tier)},
    };

    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value = NULL;
        size_t k;
        if (strcmp(arg, "--if-not-exists") == 0) {
            a->if_not_exists = true;
            continue;
        }
        for (k = 0; k < sizeof(flags) / sizeof(flags[0]); k++) {
            size_t n = strlen(flags[k].name);
            if (strncmp(arg, flags[k].name, n) == 0 && (arg[n] == '\0' || arg[n] == '='))
                break;
        }
        if (k == sizeof(flags) / sizeof(flags[0])) {
            fprintf(stderr, "eddy admin %s: unknown argument '%s'\n", cmd, arg);
            return 2;
        }
        value = strchr(arg, '=') ? strchr(arg, '=') + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (value == NULL || value[0] == '\0') {
            fprintf(stderr, "eddy admin %s: %s needs a value\n", cmd, flags[k].name);
            return 2;
        }
        *(const char **)((char *)a + flags[k].off) = value;
    }
    return 0;
}

static int need(const char *value, const char *flag, const char *cmd)
{
    if (value)
        return 0;
    fprintf(stderr, "eddy admin %s: %s is required\n", cmd, flag);
    return 2;
}

/* Only create-user takes these; the other commands refuse them. */
static int refuse(const char *value, const char *flag, const char *cmd)
{
    if (value == NULL)
        return 0;
    fprintf(stderr, "eddy admin %s: %s does not apply here\n", cmd, flag);
    return 2;
}

/* Read a password file: its first line, without the line ending. */
static int read_password(char *out, size_t cap, const char *path)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (f == NULL) {
        fprintf(stderr, "eddy admin: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    n = fread(out, 1, cap - 1, f);
    fclose(f);
    out[n] = '\0';
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

static int open_store(ed_store **st, const char *data, bool create)
{
    char path[1024];

    if (create && mkdir(data, 0700) < 0 && errno != EEXIST) {
        fprintf(stderr, "eddy admin: cannot create %s: %s\n", data, strerror(errno));
        return 1;
    }
    if (cmd_become_data_owner(data) != 0)
        return 1;
    snprintf(path, sizeof(path), "%s/eddy.db", data);
    if (!create) {
        struct stat sb;
        if (stat(path, &sb) < 0) {
            fprintf(stderr, "eddy admin: no database at %s (run eddy serve or create-user first)\n",
                    path);
            return 1;
        }
    }
    if (ed_store_open(st, path) < 0) {
        fprintf(stderr, "eddy admin: %s: %s\n", path, ed_error_last());
        return 1;
    }
    return 0;
}

/* Exit status for a failed account call: 2 for a value the rules refuse. */
static int failed(const char *cmd)
{
    fprintf(stderr, "eddy admin %s: %s\n", cmd, ed_error_last());
    return ed_error_code() == ED_EINVAL ? 2 : 1;
}

static int create_user(int argc, char **argv)
{
    char pwbuf[MAX_PASSWORD + 2];
    const char *password;
    ed_store *st = NULL;
    int64_t id = 0;
    args a;
    int rc;

    if ((rc = parse(&a, argc, argv, "create-user")) != 0 ||
        (rc = need(a.data, "--data", "create-user")) != 0 ||
        (rc = need(a.username, "--username", "create-user")) != 0 ||
        (rc = need(a.email, "--email", "create-user")) != 0)
        return rc;
    if ((a.password == NULL) == (a.password_file == NULL)) {
        fprintf(stderr, "eddy admin create-user: give exactly one of --password and --password-file\n");
        return 2;
    }
    password = a.password;
    if (a.password_file) {
        if (read_password(pwbuf, sizeof(pwbuf), a.password_file) != 0)
            return 1;
        password = pwbuf;
    }
    if (open_store(&st, a.data, true) != 0)
        return 1;
    rc = acct_user_create(&id, st, a.username, a.email, password, a.role ? a.role : "user",
                          a.tier ? a.tier : "free");
    if (rc == ED_EEXISTS && a.if_not_exists) {
        acct_user u;
        /* Only the same username counts as "exists"; a taken email is an error. */
        if (acct_user_get_by_name(&u, st, a.username) == 0) {
            printf("user '%s' already exists\n", a.username);
            ed_store_close(st);
            return 0;
        }
        ed_error_set(ED_EEXISTS, "email is already registered");
    }
    if (rc < 0) {
        rc = failed("create-user");
        ed_store_close(st);
        return rc;
    }
    printf("created user '%s' (id %lld, role %s, tier %s)\n", a.username, (long long)id,
           a.role ? a.role : "user", a.tier ? a.tier : "free");
    ed_store_close(st);
    return 0;
}

static int set_field(int argc, char **argv, const char *cmd, bool role)
{
    ed_store *st = NULL;
    const char *value;
    args a;
    int rc;

    if ((rc = parse(&a, argc, argv, cmd)) != 0 || (rc = need(a.data, "--data", cmd)) != 0 ||
        (rc = need(a.username, "--username", cmd)) != 0 ||
        (rc = need(role ? a.role : a.tier, role ? "--role" : "--tier", cmd)) != 0 ||
        (rc = refuse(role ? a.tier : a.role, role ? "--tier" : "--role", cmd)) != 0 ||
        (rc = refuse(a.email, "--email", cmd)) != 0 ||
        (rc = refuse(a.password, "--password", cmd)) != 0 ||
        (rc = refuse(a.password_file, "--password-file", cmd)) != 0)
        return rc;
    if (a.if_not_exists) {
        fprintf(stderr, "eddy admin %s: --if-not-exists does not apply here\n", cmd);
        return 2;
    }
    value = role ? a.role : a.tier;
    if (open_store(&st, a.data, false) != 0)
        return 1;
    rc = role ? acct_user_set_role(st, a.username, value) : acct_user_set_tier(st, a.username, value);
    if (rc < 0) {
        rc = failed(cmd);
        ed_store_close(st);
        return rc;
    }
    printf("user '%s' now has %s %s\n", a.username, role ? "role" : "tier", value);
    ed_store_close(st);
    return 0;
}

int cmd_admin(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "help") == 0) {
        usage(stdout);
        return 0;
    }
    if (strcmp(argv[1], "create-user") == 0)
        return create_user(argc - 1, argv + 1);
    if (strcmp(argv[1], "set-role") == 0)
        return set_field(argc - 1, argv + 1, "set-role", true);
    if (strcmp(argv[1], "set-tier") == 0)
        return set_field(argc - 1, argv + 1, "set-tier", false);
    if (strcmp(argv[1], "grant") == 0)
        return cmd_admin_grant(argc - 1, argv + 1);
    fprintf(stderr, "eddy admin: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
