/*
 * config.c - gw_config from defaults, a `key = value` file and EDDY_*
 * environment variables. Keys are the gw_config field names; the same parser
 * checks every value whichever way it arrives.
 */
#include "gw_int.h"

#include "ed_error.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#ifndef EDDY_WEB_DIR
#define EDDY_WEB_DIR "" /* the build defines it (gateway/CMakeLists.txt) */
#endif

typedef enum { F_STR, F_INT, F_I64, F_BOOL, F_SIZE } field_kind;

static const struct field {
    const char *name;
    field_kind  kind;
    size_t      off;
    size_t      size;   /* F_STR: buffer size */
    int64_t     min, max;
} fields[] = {
#define STR(f) {#f, F_STR, offsetof(gw_config, f), sizeof(((gw_config *)0)->f), 0, 0}
#define NUM(f, k, lo, hi) {#f, k, offsetof(gw_config, f), 0, lo, hi}
    STR(data_dir),
    STR(listen_host),
    NUM(listen_port, F_INT, 0, 65535),
    STR(tls_cert),
    STR(tls_key),
    NUM(threads, F_INT, 1, 1024),
    NUM(max_body_bytes, F_SIZE, 1, INT64_C(1) << 40),
    NUM(max_header_bytes, F_SIZE, 1024, 1 << 20),
    NUM(conn_timeout_s, F_INT, 1, 86400),
    NUM(header_timeout_s, F_INT, 1, 3600),
    NUM(max_conns, F_INT, 0, 1000000),
    STR(metrics_access),
    NUM(max_conns_per_ip, F_INT, 1, 1000000),
    NUM(signup_open, F_BOOL, 0, 1),
    NUM(user_storage_bytes, F_SIZE, 0, INT64_C(1) << 50),
    NUM(volume_bytes, F_SIZE, -1, INT64_C(1) << 50),
    NUM(job_retention_days, F_INT, 0, 36500),
    NUM(login_attempts_per_min, F_INT, 1, 1000000),
    NUM(default_key_rate_per_min, F_INT, 1, 100000000),
    NUM(session_ttl_ms, F_I64, 60000, INT64_C(366) * 24 * 3600 * 1000),
    STR(env_name),
    STR(trusted_proxies),
    STR(web_dir),
    STR(user),
    STR(key_envs),
    STR(allow_origins),
    NUM(kernel_output_msgs_per_s, F_INT, 0, 100000000),
    NUM(kernel_output_bytes_per_s, F_SIZE, 0, INT64_C(1) << 40),
    NUM(kernel_output_window_ms, F_INT, 100, 3600000),
    NUM(kernel_flood_bytes_per_s, F_SIZE, 0, INT64_C(1) << 40),
    NUM(kernel_journal_max_bytes, F_SIZE, 0, INT64_C(1) << 50),
    NUM(kernel_journal_retention_ms, F_I64, 0, INT64_C(3660) * 24 * 3600 * 1000),
    NUM(jupyter_sessions_per_user, F_INT, 1, 1000000),
    NUM(kernel_dead_journals_per_user, F_INT, 0, 1000000),
    NUM(version_large_file_bytes, F_SIZE, 1, INT64_C(1) << 50),
#undef STR
#undef NUM
};

void gw_config_defaults(gw_config *c)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);

    memset(c, 0, sizeof(*c));
    snprintf(c->data_dir, sizeof(c->data_dir), "./data");
    snprintf(c->listen_host, sizeof(c->listen_host), "127.0.0.1");
    c->listen_port = 8080;
    /* At most 32 by default: WebSockets and idle streams hold no worker, so
     * more only adds threads (the whole server stays under 64). */
    c->threads = cores < 2 ? 2 : cores > 32 ? 32 : (int)cores;
    c->max_body_bytes = INT64_C(64) << 20;
    c->max_header_bytes = 16 << 10;
    c->conn_timeout_s = 60;
    c->header_timeout_s = 10;
    c->max_conns = 0;   /* from RLIMIT_NOFILE at start */
    snprintf(c->metrics_access, sizeof(c->metrics_access), "loopback");
    c->max_conns_per_ip = 64;
    c->signup_open = true;
    c->user_storage_bytes = INT64_C(1) << 30;
    c->job_retention_days = 7;
    c->login_attempts_per_min = 10;
    c->default_key_rate_per_min = 600;
    c->session_ttl_ms = INT64_C(7) * 24 * 3600 * 1000;
    snprintf(c->env_name, sizeof(c->env_name), "prod");
    snprintf(c->web_dir, sizeof(c->web_dir), "%s", EDDY_WEB_DIR);
    snprintf(c->user, sizeof(c->user), "eddy");
    c->kernel_output_msgs_per_s = 1000;                /* Jupyter's iopub_msg_rate_limit */
    c->kernel_output_bytes_per_s = 1000000;            /* Jupyter's iopub_data_rate_limit */
    c->kernel_output_window_ms = 3000;                 /* Jupyter's rate_limit_window */
    c->kernel_flood_bytes_per_s = INT64_C(64) << 20;
    c->kernel_journal_max_bytes = INT64_C(64) << 20;
    c->kernel_journal_retention_ms = INT64_C(7) * 24 * 3600 * 1000;
    c->jupyter_sessions_per_user = 64;
    c->kernel_dead_journals_per_user = 16;
    c->version_large_file_bytes = INT64_C(20) << 20;   /* PROJ_LARGE_FILE_DEFAULT */
}

static int parse_bool(bool *out, const char *v)
{
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no", "off"};

    for (size_t i = 0; i < 4; i++) {
        if (strcasecmp(v, yes[i]) == 0) {
            *out = true;
            return 0;
        }
        if (strcasecmp(v, no[i]) == 0) {
            *out = false;
            return 0;
        }
    }
    return -1;
}

/* A decimal integer, with an optional K/M/G/T suffix (powers of 1024) for sizes. */
static int parse_int(int64_t *out, const char *v, bool sizes)
{
    char *end;
    long long n;
    int64_t mult = 1;

    errno = 0;
    if (*v == '\0' || isspace((unsigned char)*v))
        return -1;
    n = strtoll(v, &end, 10);
    if (errno != 0 || end == v)
        return -1;
    if (sizes && *end) {
        switch (toupper((unsigned char)*end)) {
        case 'K': mult = INT64_C(1) << 10; break;
        case 'M': mult = INT64_C(1) << 20; break;
        case 'G': mult = INT64_C(1) << 30; break;
        case 'T': mult = INT64_C(1) << 40; break;
        default: return -1;
        }
        end++;
        if (toupper((unsigned char)*end) == 'I')
            end++;
        if (toupper((unsigned char)*end) == 'B')
            end++;
    }
    if (*end != '\0')
        return -1;
    if (n > INT64_MAX / mult || n < INT64_MIN / mult)
        return -1;
    *out = (int64_t)n * mult;
    return 0;
}

int gw_config_set_listen(gw_config *c, const char *hostport)
{
    const char *colon, *host = hostport;
    size_t hlen;
    int64_t port;

    if (hostport == NULL || *hostport == '\0')
        return ed_error_set(ED_EINVAL, "listen address is empty: expected HOST:PORT");
    if (hostport[0] == '[') {                 /* [::1]:8080 */
        const char *rb = strchr(hostport, ']');
        if (rb == NULL || rb[1] != ':')
            return ed_error_set(ED_EINVAL, "listen address '%s': expected [IPV6]:PORT", hostport);
        host = hostport + 1;
        hlen = (size_t)(rb - host);
        colon = rb + 1;
    } else {
        colon = strrchr(hostport, ':');
        if (colon == NULL || strchr(hostport, ':') != colon)
            return ed_error_set(ED_EINVAL, "listen address '%s': expected HOST:PORT", hostport);
        hlen = (size_t)(colon - hostport);
    }
    if (hlen == 0 || hlen >= sizeof(c->listen_host))
        return ed_error_set(ED_EINVAL, "listen address '%s': bad host", hostport);
    for (size_t i = 0; i < hlen; i++)
        if (isspace((unsigned char)host[i]) || host[i] == '/')
            return ed_error_set(ED_EINVAL, "listen address '%s': bad host", hostport);
    if (parse_int(&port, colon + 1, false) < 0 || port < 0 || port > 65535)
        return ed_error_set(ED_EINVAL, "listen address '%s': port must be 0..65535", hostport);
    memcpy(c->listen_host, host, hlen);
    c->listen_host[hlen] = '\0';
    c->listen_port = (int)port;
    return 0;
}

/* Each comma-separated item one of dev, test, prod ("" is fine: all). */
static int check_key_envs(const char *v)
{
    while (*v) {
        size_t n = strcspn(v, ",");
        const char *a = v, *b = v + n;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        if (!((b - a == 3 && memcmp(a, "dev", 3) == 0) || (b - a == 4 && memcmp(a, "test", 4) == 0) ||
              (b - a == 4 && memcmp(a, "prod", 4) == 0)))
            return -1;
        v += n;
        if (*v == ',')
            v++;
    }
    return 0;
}

/* "*" alone, or items "http[s]://host[:port]" with no path. */
static int check_origins(const char *v)
{
    if (strcmp(v, "*") == 0 || *v == '\0')
        return 0;
    while (*v) {
        size_t n = strcspn(v, ",");
        const char *a = v, *b = v + n, *host;
        while (a < b && *a == ' ')
            a++;
        while (b > a && b[-1] == ' ')
            b--;
        if (b - a > 7 && strncasecmp(a, "http://", 7) == 0)
            host = a + 7;
        else if (b - a > 8 && strncasecmp(a, "https://", 8) == 0)
            host = a + 8;
        else
            return -1;
        for (const char *h = host; h < b; h++)
            if (*h == '/' || *h == '*' || *h == '@' || isspace((unsigned char)*h))
                return -1;
        if (host == b)
            return -1;
        v += n;
        if (*v == ',')
            v++;
    }
    return 0;
}

int gw__config_set(gw_config *c, const char *key, const char *value)
{
    if (strcmp(key, "listen") == 0)
        return gw_config_set_listen(c, value);
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        const struct field *f = &fields[i];
        char *p = (char *)c + f->off;
        int64_t n;
        bool b;

        if (strcmp(key, f->name) != 0)
            continue;
        switch (f->kind) {
        case F_STR:
            if (strlen(value) >= f->size)
                return ed_error_set(ED_EINVAL, "%s: value longer than %zu bytes", key, f->size - 1);
            if (strcmp(key, "env_name") == 0 && strcmp(value, "dev") != 0 &&
                strcmp(value, "test") != 0 && strcmp(value, "prod") != 0)
                return ed_error_set(ED_EINVAL, "env_name: '%s' is not one of dev, test, prod", value);
            if (strcmp(key, "metrics_access") == 0 && strcmp(value, "loopback") != 0 &&
                strcmp(value, "admin") != 0 && strcmp(value, "public") != 0)
                return ed_error_set(ED_EINVAL, "metrics_access: '%s' is not one of loopback, admin, "
                                               "public", value);
            if ((strcmp(key, "data_dir") == 0 || strcmp(key, "listen_host") == 0) && *value == '\0')
                return ed_error_set(ED_EINVAL, "%s: must not be empty", key);
            if (strcmp(key, "key_envs") == 0 && check_key_envs(value) < 0)
                return ed_error_set(ED_EINVAL, "key_envs: '%s' is not a comma-separated list of dev, test, prod",
                                    value);
            if (strcmp(key, "allow_origins") == 0 && check_origins(value) < 0)
                return ed_error_set(ED_EINVAL, "allow_origins: '%s' is not '*' or a comma-separated list of "
                                    "scheme://host[:port] origins", value);
            snprintf(p, f->size, "%s", value);
            /* env_name (older configs) restricts the accepted key envs to that one. */
            if (strcmp(key, "env_name") == 0)
                snprintf(c->key_envs, sizeof(c->key_envs), "%s", value);
            return 0;
        case F_BOOL:
            if (parse_bool(&b, value) < 0)
                return ed_error_set(ED_EINVAL, "%s: '%s' is not a boolean (true/false)", key, value);
            *(bool *)p = b;
            return 0;
        case F_INT:
        case F_I64:
        case F_SIZE:
            if (parse_int(&n, value, f->kind == F_SIZE) < 0)
                return ed_error_set(ED_EINVAL, "%s: '%s' is not an integer%s", key, value,
                                    f->kind == F_SIZE ? " (optionally with K, M, G or T)" : "");
            if (n < f->min || n > f->max)
                return ed_error_set(ED_EINVAL, "%s: %lld is outside %lld..%lld", key, (long long)n,
                                    (long long)f->min, (long long)f->max);
            if (f->kind == F_INT)
                *(int *)p = (int)n;
            else
                *(int64_t *)p = n;
            return 0;
        }
    }
    return ed_error_set(ED_EINVAL, "unknown setting '%s'", key);
}

static char *trim(char *s)
{
    char *e;

    while (isspace((unsigned char)*s))
        s++;
    e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

int gw_config_load_file(gw_config *c, const char *path)
{
    FILE *f = fopen(path, "r");
    char line[2048];
    int lineno = 0, err = 0;
    gw_config tmp;

    if (f == NULL)
        return ed_error_set(ED_EINVAL, "config file %s: %s", path, strerror(errno));
    tmp = *c;   /* all or nothing: a bad line leaves *c untouched */
    while (fgets(line, sizeof(line), f) != NULL) {
        char *s, *eq, *key, *value;
        lineno++;
        if (strchr(line, '\n') == NULL && !feof(f)) {
            err = ed_error_set(ED_EINVAL, "%s:%d: line longer than %zu bytes", path, lineno,
                               sizeof(line) - 2);
            break;
        }
        s = trim(line);
        if (*s == '\0' || *s == '#')
            continue;
        if ((eq = strchr(s, '=')) == NULL) {
            err = ed_error_set(ED_EINVAL, "%s:%d: expected 'key = value'", path, lineno);
            break;
        }
        *eq = '\0';
        key = trim(s);
        value = trim(eq + 1);
        /* Optional double quotes keep spaces and '#'; otherwise " # ..." after
         * a value is a comment. */
        if (value[0] == '"') {
            char *close = strchr(value + 1, '"');
            char *rest = close ? trim(close + 1) : NULL;
            if (close == NULL || (*rest != '\0' && *rest != '#')) {
                err = ed_error_set(ED_EINVAL, "%s:%d: unbalanced quotes in the value of '%s'",
                                   path, lineno, key);
                break;
            }
            *close = '\0';
            value++;
        } else {
            for (char *h = value; *h; h++) {
                if (*h == '#' && h > value && isspace((unsigned char)h[-1])) {
                    *h = '\0';
                    value = trim(value);
                    break;
                }
            }
        }
        if ((err = gw__config_set(&tmp, key, value)) < 0) {
            char msg[512];
            snprintf(msg, sizeof(msg), "%s", ed_error_last());
            err = ed_error_set(err, "%s:%d: %s", path, lineno, msg);
            break;
        }
    }
    if (err == 0 && ferror(f))
        err = ed_error_set(ED_EINVAL, "config file %s: read error", path);
    fclose(f);
    if (err == 0)
        *c = tmp;
    return err;
}

int gw_config_apply_env(gw_config *c)
{
    gw_config tmp = *c;
    const char *v;
    int err;

    if ((v = getenv("EDDY_LISTEN")) != NULL && (err = gw_config_set_listen(&tmp, v)) < 0) {
        char msg[512];
        snprintf(msg, sizeof(msg), "%s", ed_error_last());
        return ed_error_set(err, "EDDY_LISTEN: %s", msg);
    }
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        char name[64];
        size_t k = snprintf(name, sizeof(name), "EDDY_");
        for (const char *p = fields[i].name; *p && k + 1 < sizeof(name); p++)
            name[k++] = (char)toupper((unsigned char)*p);
        name[k] = '\0';
        if ((v = getenv(name)) == NULL)
            continue;
        if ((err = gw__config_set(&tmp, fields[i].name, v)) < 0) {
            char msg[512];
            snprintf(msg, sizeof(msg), "%s", ed_error_last());
            return ed_error_set(err, "%s: %s", name, msg);
        }
    }
    *c = tmp;
    return 0;
}
