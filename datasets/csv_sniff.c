/*
 * csv_sniff.c - reading a CSV or TSV file's head as a table: the delimiter,
 * whether the first record is a header, each column's type, the first rows;
 * and counting a whole file's records as it streams (preview_int.h).
 *
 * Records follow RFC 4180 as files in the wild write it: fields quoted with
 * '"' may hold delimiters and newlines, "" inside quotes is one quote, CRLF
 * or LF ends a record, blank lines are skipped. Everything is bounded by the
 * bytes given: no allocation grows with a hostile field beyond its length.
 */
#include "preview_int.h"

#include "ed_buf.h"
#include "ed_error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#define SNIFF_RECORDS   20      /* records that choose the delimiter */
#define SAMPLE_RECORDS  1000    /* records whose cells choose the column types */

typedef struct record {
    ed_buf cells;               /* the fields, each NUL-terminated, one after another */
    size_t *off;                /* where field i starts in cells */
    size_t n, cap;
} record;

static void record_free(record *r)
{
    ed_buf_free(&r->cells);
    free(r->off);
}

/* End the field being built: note where its NUL goes, then write it. */
static int field_end(record *r)
{
    if (r->n == r->cap) {
        size_t ncap = r->cap ? r->cap * 2 : 16;
        size_t *p = realloc(r->off, ncap * sizeof(*p));
        if (!p)
            return ED_ENOMEM;
        r->off = p;
        r->cap = ncap;
    }
    r->off[r->n++] = r->cells.len;
    return ed_buf_append(&r->cells, "", 1) < 0 ? ED_ENOMEM : 0;
}

static const char *cell(const record *r, size_t i)
{
    size_t start = i == 0 ? 0 : r->off[i - 1] + 1;
    return r->cells.data ? r->cells.data + start : "";
}

/* Parse one record of buf[*pos..len) into r (cleared first). 1 when a record
 * was read, 0 at the end of the input, 2 when the input ended inside the
 * record (the rest of it is past `len`), < 0 out of memory. Blank lines are
 * skipped. Fields are stored with a NUL after each (field_end). */
static int next_record(record *r, const char *buf, size_t len, size_t *pos, char delim)
{
    size_t i = *pos;
    bool quoted = false, any = false;

    ed_buf_reset(&r->cells);
    r->n = 0;
    while (i < len && (buf[i] == '\n' || buf[i] == '\r'))
        i++;
    if (i >= len) {
        *pos = i;
        return 0;
    }
    for (; i < len; i++) {
        char c = buf[i];
        if (quoted) {
            if (c == '"') {
                if (i + 1 < len && buf[i + 1] == '"') {
                    if (ed_buf_append(&r->cells, "\"", 1) < 0)
                        return ED_ENOMEM;
                    i++;
                } else {
                    quoted = false;
                }
            } else if (ed_buf_append(&r->cells, &c, 1) < 0) {
                return ED_ENOMEM;
            }
            continue;
        }
        if (c == '"' && !any) {
            quoted = true;
            any = true;
        } else if (c == delim) {
            if (field_end(r) < 0)
                return ED_ENOMEM;
            any = false;
        } else if (c == '\n' || c == '\r') {
            break;
        } else {
            if (ed_buf_append(&r->cells, &c, 1) < 0)
                return ED_ENOMEM;
            if (c != ' ')
                any = true;
        }
    }
    if (field_end(r) < 0)
        return ED_ENOMEM;
    *pos = i;
    return i >= len || quoted ? 2 : 1;
}

/* ---- types --------------------------------------------------------------- */

enum { T_NONE = 0, T_INT = 1, T_FLOAT = 2, T_BOOL = 4, T_DATE = 8, T_STRING = 16 };

static bool digits(const char **s, int min, int max)
{
    int n = 0;
    while (isdigit((unsigned char)**s) && n < max) {
        (*s)++;
        n++;
    }
    return n >= min;
}

static bool is_date(const char *s)
{
    /* 2024-01-31, 2024/01/31, optionally [T ]12:30[:45[.123]][Z|+01:00] */
    if (!digits(&s, 4, 4) || (*s != '-' && *s != '/'))
        return false;
    s++;
    if (!digits(&s, 1, 2) || (*s != '-' && *s != '/'))
        return false;
    s++;
    if (!digits(&s, 1, 2))
        return false;
    if (*s == '\0')
        return true;
    if (*s != 'T' && *s != ' ')
        return false;
    s++;
    if (!digits(&s, 2, 2) || *s++ != ':' || !digits(&s, 2, 2))
        return false;
    if (*s == ':' && (s++, !digits(&s, 2, 2)))
        return false;
    if (*s == '.' && (s++, !digits(&s, 1, 9)))
        return false;
    if (*s == 'Z')
        return s[1] == '\0';
    if (*s == '+' || *s == '-') {
        s++;
        if (!digits(&s, 2, 2) || *s++ != ':' || !digits(&s, 2, 2))
            return false;
    }
    return *s == '\0';
}

static int type_of(const char *s)
{
    const char *p = s;
    char *end;

    while (*p == ' ')
        p++;
    if (*p == '\0')
        return T_NONE;
    if (strcasecmp(p, "true") == 0 || strcasecmp(p, "false") == 0)
        return T_BOOL;
    if (*p == '+' || *p == '-')
        p++;
    if (isdigit((unsigned char)*p)) {
        const char *q = p;
        while (isdigit((unsigned char)*q))
            q++;
        if (*q == '\0' || (*q == ' ' && q[strspn(q, " ")] == '\0'))
            return T_INT;
    }
    if (is_date(s))
        return T_DATE;
    if (isdigit((unsigned char)*p) || *p == '.') {
        strtod(s, &end);
        if (end != s && end[strspn(end, " ")] == '\0')
            return T_FLOAT;
    }
    return T_STRING;
}

static const char *type_name(int mask)
{
    if (mask == T_NONE || (mask & T_STRING))
        return "string";
    if (mask == T_INT)
        return "int";
    if ((mask & ~(T_INT | T_FLOAT)) == 0)
        return "float";
    if (mask == T_BOOL)
        return "bool";
    if (mask == T_DATE)
        return "date";
    return "string";
}

/* ---- the preview --------------------------------------------------------- */

/* Fields per record over the first records with delimiter `delim`: *out_n
 * the most common count, the score how many records have it (0 when one
 * field is all there is). */
static int delim_score(const char *buf, size_t len, bool cut, char delim, size_t *out_n)
{
    record r = {0};
    size_t pos = 0, counts[SNIFF_RECORDS], seen = 0, best = 0, bestn = 0;
    int k;

    while (seen < SNIFF_RECORDS && (k = next_record(&r, buf, len, &pos, delim)) > 0) {
        if (k == 2 && cut)
            break;
        counts[seen++] = r.n;
        if (k == 2)
            break;
    }
    for (size_t i = 0; i < seen; i++) {
        size_t same = 0;
        for (size_t j = 0; j < seen; j++)
            same += counts[j] == counts[i];
        if (counts[i] > 1 && (same > best || (same == best && counts[i] > bestn))) {
            best = same;
            bestn = counts[i];
        }
    }
    record_free(&r);
    *out_n = bestn;
    return (int)best;
}

int ds__csv_preview(json_t *obj, char *out_delim, bool *out_header, const char *head, size_t len, bool cut,
                    char prefer)
{
    static const char cands[] = {',', '\t', ';', '|'};
    record r = {0};
    char delim = prefer ? prefer : ',', dstr[2] = {0};
    size_t ncols = 0, pos = 0, nrows = 0;
    int best = -1, k, masks[DS_PREVIEW_COLS] = {0}, first[DS_PREVIEW_COLS] = {0};
    json_t *rows = json_array(), *cols = json_array(), *header = NULL;
    bool has_header = false, all_string = true;
    int err = 0;

    if (!rows || !cols) {
        err = ed_error_set(ED_ENOMEM, "preview");
        goto done;
    }
    if (memchr(head, '\0', len)) {
        err = ed_error_set(ED_EINVAL, "binary data is not a table");
        goto done;
    }
    for (size_t i = 0; i < sizeof(cands); i++) {
        size_t n;
        int s = delim_score(head, len, cut, cands[i], &n);
        /* the name's delimiter wins a tie */
        if (s > best || (s == best && s > 0 && cands[i] == prefer)) {
            best = s;
            delim = cands[i];
            ncols = n;
        }
    }
    if (best <= 0) {
        /* one column: every record is a single field */
        delim = prefer ? prefer : ',';
        ncols = 1;
    }
    if (ncols > DS_PREVIEW_COLS)
        ncols = DS_PREVIEW_COLS;
    /* the first record, then the sample: types and the rows shown */
    if ((header = json_array()) == NULL) {
        err = ed_error_set(ED_ENOMEM, "preview");
        goto done;
    }
    while (nrows < SAMPLE_RECORDS + 1 && (k = next_record(&r, head, len, &pos, delim)) > 0) {
        json_t *row;
        if (k < 0) {
            err = ed_error_set(ED_ENOMEM, "preview");
            goto done;
        }
        if (k == 2 && cut)
            break;              /* the file goes on: this record is partial */
        if (nrows == 0) {
            for (size_t c = 0; c < ncols; c++) {
                const char *v = c < r.n ? cell(&r, c) : "";
                json_array_append_new(header, json_stringn(v, strnlen(v, DS_PREVIEW_CELL)));
                first[c] = type_of(v);
            }
        } else {
            for (size_t c = 0; c < ncols && c < r.n; c++)
                masks[c] |= type_of(cell(&r, c));
            if (nrows <= DS_PREVIEW_ROWS && (row = json_array()) != NULL) {
                for (size_t c = 0; c < ncols; c++) {
                    const char *v = c < r.n ? cell(&r, c) : "";
                    json_array_append_new(row, json_stringn(v, strnlen(v, DS_PREVIEW_CELL)));
                }
                json_array_append_new(rows, row);
            }
        }
        nrows++;
        if (k == 2)
            break;
    }
    if (nrows == 0) {
        err = ed_error_set(ED_EINVAL, "no records");
        goto done;
    }
    /* A header: a column whose body has a type (number, bool, date) that
     * its first cell lacks; with only string columns, a first record
     * without empty cells. Python's csv.Sniffer.has_header votes similarly. */
    for (size_t c = 0; c < ncols; c++) {
        int body = masks[c];
        if (body != T_NONE && !(body & T_STRING)) {
            all_string = false;
            if (first[c] == T_STRING)
                has_header = true;
        }
    }
    if (all_string) {
        has_header = true;
        for (size_t c = 0; c < ncols; c++)
            if (first[c] == T_NONE)
                has_header = false;
    }
    if (nrows == 1)
        has_header = first[0] == T_STRING;
    if (!has_header) {
        /* the first record is data: it leads the rows and joins the types */
        json_t *row = header;
        header = NULL;
        json_array_insert_new(rows, 0, row);
        if (json_array_size(rows) > DS_PREVIEW_ROWS)
            json_array_remove(rows, DS_PREVIEW_ROWS);
        for (size_t c = 0; c < ncols; c++)
            masks[c] |= first[c];
    }
    for (size_t c = 0; c < ncols; c++) {
        char name[32];
        const char *nm = name;
        if (has_header)
            nm = json_string_value(json_array_get(header, c));
        else
            snprintf(name, sizeof(name), "column_%zu", c + 1);
        json_array_append_new(cols, json_pack("{s:s, s:s}", "name", nm ? nm : "", "type", type_name(masks[c])));
    }
    dstr[0] = delim;
    json_object_set_new(obj, "delimiter", json_string(dstr));
    json_object_set_new(obj, "header", json_boolean(has_header));
    json_object_set_new(obj, "columns", cols);
    json_object_set_new(obj, "rows", rows);
    cols = rows = NULL;
    *out_delim = delim;
    *out_header = has_header;
done:
    json_decref(header);
    json_decref(rows);
    json_decref(cols);
    record_free(&r);
    return err;
}

/* ---- counting ------------------------------------------------------------ */

void ds__csv_count_feed(ds_csv_count *c, const char *buf, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        char ch = buf[i];
        if (ch == '"') {
            c->in_quotes = !c->in_quotes;   /* "" inside quotes toggles twice */
            c->line_has_data = true;
        } else if (ch == '\n' && !c->in_quotes) {
            c->records += c->line_has_data;
            c->line_has_data = false;
        } else if (ch != '\r') {
            c->line_has_data = true;
        }
    }
}

int64_t ds__csv_count_end(ds_csv_count *c)
{
    c->records += c->line_has_data;
    c->line_has_data = false;
    return c->records;
}
