/*
 * output.c - tables, field lists, error reports, and argument parsing
 * shared by the client commands.
 */
#include "cli.h"

#include "ed_error.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CELL_MAX 60

int cli_globals_take(cli_globals *out, int *argc, char **argv)
{
    int w = 0, n = *argc;
    bool dashdash = false;

    out->url = NULL;
    out->json = false;
    for (int i = 0; i < n; i++) {
        const char *a = argv[i];
        if (!dashdash && i > 0) {
            if (strcmp(a, "--") == 0) {
                dashdash = true;
            } else if (strcmp(a, "--json") == 0) {
                out->json = true;
                continue;
            } else if (strcmp(a, "--url") == 0) {
                if (i + 1 >= n || argv[i + 1][0] == '\0')
                    return ed_error_set(CLI_EUSAGE, "--url needs a value");
                out->url = argv[++i];
                continue;
            } else if (strncmp(a, "--url=", 6) == 0) {
                out->url = a + 6;
                continue;
            }
        }
        argv[w++] = argv[i];
    }
    argv[w] = NULL;
    *argc = w;
    return 0;
}

static const json_t *lookup(const json_t *obj, const char *key)
{
    char part[64];
    const char *dot;

    while ((dot = strchr(key, '.')) != NULL) {
        snprintf(part, sizeof(part), "%.*s", (int)(dot - key), key);
        obj = json_object_get(obj, part);
        key = dot + 1;
    }
    return json_object_get(obj, key);
}

void cli_format(char *out, size_t n, const json_t *v, cli_fmt fmt)
{
    if (v == NULL || json_is_null(v)) {
        snprintf(out, n, "-");
        return;
    }
    switch (fmt) {
    case CLI_FMT_COINS:
        if (json_is_integer(v)) {
            json_int_t m = json_integer_value(v);
            long long a = (long long)(m < 0 ? -m : m);
            snprintf(out, n, "%s%lld.%03lld", m < 0 ? "-" : "", a / 1000, a % 1000);
            return;
        }
        break;
    case CLI_FMT_BYTES:
        if (json_is_integer(v)) {
            double b = (double)json_integer_value(v);
            const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
            int i = 0;
            while (b >= 1024 && i < 4) {
                b /= 1024;
                i++;
            }
            if (i == 0)
                snprintf(out, n, "%.0f B", b);
            else
                snprintf(out, n, "%.1f %s", b, u[i]);
            return;
        }
        break;
    case CLI_FMT_MS:
        if (json_is_integer(v)) {
            long long s = (long long)json_integer_value(v) / 1000;
            if (s >= 3600)
                snprintf(out, n, "%lldh%02lldm", s / 3600, (s % 3600) / 60);
            else if (s >= 60)
                snprintf(out, n, "%lldm%02llds", s / 60, s % 60);
            else
                snprintf(out, n, "%llds", s);
            return;
        }
        break;
    case CLI_FMT_LIST:
        if (json_is_array(v)) {
            size_t i, used = 0;
            json_t *e;
            out[0] = '\0';
            json_array_foreach(v, i, e) {
                char cell[128];
                cli_format(cell, sizeof(cell), e, CLI_FMT_TEXT);
                int w = snprintf(out + used, n - used, "%s%s", i ? "," : "", cell);
                if (w < 0 || (size_t)w >= n - used)
                    break;
                used += (size_t)w;
            }
            if (json_array_size(v) == 0)
                snprintf(out, n, "-");
            return;
        }
        break;
    case CLI_FMT_TEXT:
        break;
    }
    if (json_is_string(v))
        snprintf(out, n, "%s", json_string_value(v));
    else if (json_is_integer(v))
        snprintf(out, n, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else if (json_is_real(v))
        snprintf(out, n, "%g", json_real_value(v));
    else if (json_is_true(v))
        snprintf(out, n, "yes");
    else if (json_is_false(v))
        snprintf(out, n, "no");
    else {
        char *s = json_dumps(v, JSON_COMPACT);
        snprintf(out, n, "%s", s ? s : "?");
        free(s);
    }
    /* text from the server goes to a terminal: no control characters */
    for (char *p = out; *p; p++)
        if ((unsigned char)*p < 0x20 || *p == 0x7f)
            *p = ' ';
}

void cli_print_table(const json_t *items, const cli_col *cols, size_t ncols)
{
    size_t rows = json_array_size(items), width[16] = {0};
    char cell[CELL_MAX + 8];

    if (ncols > 16)
        ncols = 16;
    if (rows == 0) {
        printf("(none)\n");
        return;
    }
    for (size_t c = 0; c < ncols; c++)
        width[c] = strlen(cols[c].header);
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < ncols; c++) {
            cli_format(cell, CELL_MAX + 1, lookup(json_array_get(items, r), cols[c].key), cols[c].fmt);
            if (strlen(cell) > width[c])
                width[c] = strlen(cell);
        }
    for (size_t c = 0; c < ncols; c++)
        printf("%-*s%s", c + 1 < ncols ? (int)width[c] : 0, cols[c].header, c + 1 < ncols ? "  " : "\n");
    for (size_t r = 0; r < rows; r++)
        for (size_t c = 0; c < ncols; c++) {
            cli_format(cell, CELL_MAX + 1, lookup(json_array_get(items, r), cols[c].key), cols[c].fmt);
            printf("%-*s%s", c + 1 < ncols ? (int)width[c] : 0, cell, c + 1 < ncols ? "  " : "\n");
        }
}

void cli_print_fields(const json_t *obj, const cli_col *cols, size_t ncols)
{
    size_t w = 0;
    char cell[1024];

    for (size_t c = 0; c < ncols; c++)
        if (strlen(cols[c].header) > w)
            w = strlen(cols[c].header);
    for (size_t c = 0; c < ncols; c++) {
        cli_format(cell, sizeof(cell), lookup(obj, cols[c].key), cols[c].fmt);
        printf("%-*s  %s\n", (int)w + 1, cols[c].header, cell);
    }
}

void cli_print_json(const json_t *j)
{
    char *s = json_dumps(j, JSON_COMPACT);

    printf("%s\n", s ? s : "null");
    free(s);
}

void cli_print_raw(const cli_resp *r)
{
    if (r->body.len)
        fwrite(r->body.data, 1, r->body.len, stdout);
    if (r->body.len == 0 || r->body.data[r->body.len - 1] != '\n')
        putchar('\n');
}

int cli_report(int err)
{
    const char *msg = ed_error_last();

    if (err >= 0)
        return CLI_EXIT_OK;
    fprintf(stderr, "eddy: %s\n", msg && *msg ? msg : ed_error_name(err));
    if (err == CLI_ETRANSPORT)
        return CLI_EXIT_TRANSPORT;
    if (err == CLI_EUSAGE)
        return CLI_EXIT_USAGE;
    return CLI_EXIT_REFUSED;
}

int cli_parse_int(int64_t *out, const char *s, int64_t min, int64_t max, const char *what)
{
    char *end;
    long long v;

    errno = 0;
    v = strtoll(s, &end, 10);
    if (*s == '\0' || *end || errno || v < min || v > max)
        return ed_error_set(CLI_EUSAGE, "%s must be a whole number from %" PRId64 " to %" PRId64
                            ", not '%s'", what, min, max, s);
    *out = v;
    return 0;
}

int cli_parse_coins(int64_t *out, const char *s)
{
    const char *p = s;
    int64_t whole = 0, frac = 0;
    int digits = 0, fd = 0;
    bool neg = false;

    if (*p == '-') {
        neg = true;
        p++;
    }
    for (; isdigit((unsigned char)*p); p++, digits++) {
        if (whole > INT64_MAX / 10000)
            goto bad;
        whole = whole * 10 + (*p - '0');
    }
    if (*p == '.') {
        for (p++; isdigit((unsigned char)*p); p++, fd++) {
            if (fd >= 3)
                goto bad;
            frac = frac * 10 + (*p - '0');
        }
    }
    if (*p || (digits == 0 && fd == 0))
        goto bad;
    while (fd++ < 3)
        frac *= 10;
    *out = (whole * 1000 + frac) * (neg ? -1 : 1);
    return 0;
bad:
    return ed_error_set(CLI_EUSAGE, "amount '%s' must be A-coins with at most 3 decimals (12.5)", s);
}
