/*
 * preview_compute.c - the preview of one blob (preview_int.h): a table for
 * CSV/TSV and JSON Lines, an image's size and thumbnail, the head of a JSON
 * or text file, or kind "none". The work is bounded: a head of at most
 * HEAD_MAX bytes is parsed; only a table's row count reads further (the
 * whole file up to DS_PREVIEW_COUNT_MAX, counting only), and an image is
 * read whole only up to DS_IMAGE_FILE_MAX.
 */
#include "preview_int.h"

#include "ed_error.h"
#include "ed_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define HEAD_MAX (1 << 20)      /* bytes of a table's head parsed for rows and types */
#define IO_BUF   (1 << 20)

static bool stopped(const bool *stop)
{
    return stop && __atomic_load_n(stop, __ATOMIC_RELAXED);
}

/* Read up to n bytes at off; the count read, or -1 (errno). */
static ssize_t read_at(int fd, void *buf, size_t n, int64_t off)
{
    size_t got = 0;

    while (got < n) {
        ssize_t k = pread(fd, (char *)buf + got, n - got, (off_t)(off + (int64_t)got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* Length of the longest prefix of s[0..n) that is valid UTF-8 without NUL,
 * and whether that is all of it but a character cut at the end. */
static size_t utf8_prefix(const unsigned char *s, size_t n, bool *whole)
{
    size_t i = 0;

    *whole = false;
    while (i < n) {
        unsigned c = s[i];
        size_t k;
        if (c == 0)
            return i;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf)
            k = 1;
        else if (c >= 0xe0 && c <= 0xef)
            k = 2;
        else if (c >= 0xf0 && c <= 0xf4)
            k = 3;
        else
            return i;
        if (i + k >= n) {
            /* cut at the end of the buffer: fine when every byte present continues */
            for (size_t j = i + 1; j < n; j++)
                if ((s[j] & 0xc0) != 0x80)
                    return i;
            *whole = true;
            return i;
        }
        for (size_t j = 1; j <= k; j++)
            if ((s[i + j] & 0xc0) != 0x80)
                return i;
        if ((c == 0xe0 && s[i + 1] < 0xa0) || (c == 0xed && s[i + 1] > 0x9f) || (c == 0xf0 && s[i + 1] < 0x90) ||
            (c == 0xf4 && s[i + 1] > 0x8f))
            return i;
        i += k + 1;
    }
    *whole = true;
    return i;
}

static bool is_text(const unsigned char *s, size_t n, size_t *out_len)
{
    bool whole;
    size_t k = utf8_prefix(s, n, &whole);
    *out_len = k;
    return whole;
}

static const char *ext_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    const char *dot = strrchr(slash ? slash + 1 : path, '.');
    return dot ? dot + 1 : "";
}

/* Records past the head counted by streaming the rest of the file. */
static int count_rows(int64_t *out, bool *exact, int fd, int64_t size, const char *head, size_t head_len,
                      bool lines_only, const bool *stop)
{
    ds_csv_count c = {0};
    char *buf;
    int64_t off = (int64_t)head_len;

    *exact = true;
    if (lines_only) {
        /* JSON Lines: quotes never span lines; count non-blank lines */
        for (size_t i = 0; i < head_len; i++)
            if (head[i] == '\n') {
                c.records += c.line_has_data;
                c.line_has_data = false;
            } else if (head[i] != '\r' && head[i] != ' ') {
                c.line_has_data = true;
            }
    } else {
        ds__csv_count_feed(&c, head, head_len);
    }
    if ((buf = malloc(IO_BUF)) == NULL)
        return ed_error_set(ED_ENOMEM, "count");
    while (off < size) {
        ssize_t n;
        if (off >= DS_PREVIEW_COUNT_MAX) {
            *exact = false;
            break;
        }
        if (stopped(stop)) {
            free(buf);
            return ED_EBUSY;
        }
        if ((n = read_at(fd, buf, IO_BUF, off)) <= 0)
            break;
        if (lines_only) {
            for (ssize_t i = 0; i < n; i++)
                if (buf[i] == '\n') {
                    c.records += c.line_has_data;
                    c.line_has_data = false;
                } else if (buf[i] != '\r' && buf[i] != ' ') {
                    c.line_has_data = true;
                }
        } else {
            ds__csv_count_feed(&c, buf, (size_t)n);
        }
        off += n;
    }
    free(buf);
    *out = ds__csv_count_end(&c);
    return 0;
}

/* JSON Lines: a table whose columns are the keys of the first objects. */
static int jsonl_table(json_t *obj, const char *head, size_t len, bool cut)
{
    json_t *cols = json_array(), *names = json_object(), *rows = json_array(), *objs = json_array();
    size_t pos = 0;
    int err = 0;

    if (!cols || !names || !rows || !objs) {
        err = ed_error_set(ED_ENOMEM, "preview");
        goto done;
    }
    while (pos < len && json_array_size(objs) < DS_PREVIEW_ROWS) {
        const char *nl = memchr(head + pos, '\n', len - pos);
        size_t n = nl ? (size_t)(nl - (head + pos)) : len - pos;
        json_t *v = NULL;
        if (!nl && cut)
            break;
        if (n > 0 && strspn(head + pos, " \r\t") < n) {
            if (ed_json_parse(&v, head + pos, n, ED_JSON_MAX_DEPTH) < 0 || !json_is_object(v)) {
                json_decref(v);
                err = ed_error_set(ED_EINVAL, "line is not a JSON object");
                goto done;
            }
            json_array_append_new(objs, v);
        }
        pos += n + 1;
    }
    if (json_array_size(objs) == 0) {
        err = ed_error_set(ED_EINVAL, "no JSON objects");
        goto done;
    }
    /* columns: keys in first-seen order, with a type per column */
    {
        size_t i;
        json_t *o;
        json_array_foreach(objs, i, o) {
            const char *k;
            json_t *v;
            json_object_foreach(o, k, v) {
                const char *t = json_is_integer(v) ? "int"
                                : json_is_real(v)  ? "float"
                                : json_is_boolean(v) ? "bool"
                                : json_is_string(v)  ? "string"
                                : json_is_null(v)    ? NULL
                                                     : "json";
                json_t *col = json_object_get(names, k);
                if (!col) {
                    if (json_array_size(cols) >= DS_PREVIEW_COLS)
                        continue;
                    col = json_pack("{s:s, s:n}", "name", k, "type");
                    json_array_append_new(cols, col);
                    json_object_set(names, k, col);
                }
                if (t) {
                    const char *have = json_string_value(json_object_get(col, "type"));
                    if (!have)
                        json_object_set_new(col, "type", json_string(t));
                    else if (strcmp(have, t) != 0)
                        json_object_set_new(col, "type",
                                            json_string((!strcmp(have, "int") && !strcmp(t, "float")) ||
                                                                (!strcmp(have, "float") && !strcmp(t, "int"))
                                                            ? "float"
                                                            : "string"));
                }
            }
        }
        json_array_foreach(cols, i, o) {
            if (json_is_null(json_object_get(o, "type")))
                json_object_set_new(o, "type", json_string("string"));
        }
        json_array_foreach(objs, i, o) {
            json_t *row = json_array(), *c;
            size_t j;
            json_array_foreach(cols, j, c) {
                json_t *v = json_object_get(o, json_string_value(json_object_get(c, "name")));
                if (!v || json_is_null(v))
                    json_array_append_new(row, json_null());
                else if (json_is_object(v) || json_is_array(v)) {
                    char *s = json_dumps(v, JSON_COMPACT);
                    json_array_append_new(row, s ? json_stringn(s, strnlen(s, DS_PREVIEW_CELL)) : json_null());
                    free(s);
                } else if (json_is_string(v)) {
                    json_array_append_new(row, json_stringn(json_string_value(v),
                                                            strnlen(json_string_value(v), DS_PREVIEW_CELL)));
                } else {
                    json_array_append(row, v);
                }
            }
            json_array_append_new(rows, row);
        }
    }
    json_object_set_new(obj, "columns", cols);
    json_object_set_new(obj, "rows", rows);
    cols = rows = NULL;
done:
    json_decref(cols);
    json_decref(names);
    json_decref(rows);
    json_decref(objs);
    return err;
}

/* The head as text, at most DS_PREVIEW_TEXT bytes cut at a character. */
static void text_head(json_t *obj, const char *head, size_t len, int64_t size)
{
    size_t n = len < DS_PREVIEW_TEXT ? len : DS_PREVIEW_TEXT;
    bool whole;
    size_t k = utf8_prefix((const unsigned char *)head, n, &whole);

    json_object_set_new(obj, "kind", json_string("text"));
    json_object_set_new(obj, "text", json_stringn(head, k));
    json_object_set_new(obj, "truncated", json_boolean((int64_t)k < size));
}

static json_t *image(char **out_error, json_t *obj, int fd, int64_t size)
{
    unsigned char *buf;
    ssize_t n;

    json_object_set_new(obj, "kind", json_string("image"));
    if (size > DS_IMAGE_FILE_MAX) {
        json_object_set_new(obj, "kind", json_string("none"));
        if (asprintf(out_error, "image file of %lld bytes is over the limit of %lld for a thumbnail",
                     (long long)size, (long long)DS_IMAGE_FILE_MAX) < 0)
            *out_error = NULL;
        return obj;
    }
    if ((buf = malloc((size_t)size)) == NULL || (n = read_at(fd, buf, (size_t)size, 0)) != (ssize_t)size) {
        free(buf);
        json_object_set_new(obj, "kind", json_string("none"));
        *out_error = strdup("image file does not read");
        return obj;
    }
    if (ds__thumb(obj, buf, (size_t)size) < 0) {
        json_object_set_new(obj, "kind", json_string("none"));
        *out_error = strdup(ed_error_last());
    }
    free(buf);
    return obj;
}

json_t *ds__preview_compute(char **out_error, int fd, int64_t size, const char *path, const char *mt,
                            const bool *stop)
{
    json_t *obj = json_object();
    const char *ext = ext_of(path);
    size_t want = size < HEAD_MAX ? (size_t)size : HEAD_MAX, tlen;
    char *head = NULL;
    ssize_t got;
    bool cut, csv, tsv, jsonl, json;

    *out_error = NULL;
    if (!obj)
        return NULL;
    json_object_set_new(obj, "kind", json_string("none"));
    json_object_set_new(obj, "size", json_integer(size));
    json_object_set_new(obj, "media_type", json_string(mt));
    if (size == 0)
        return obj;
    if ((head = malloc(want + 1)) == NULL || (got = read_at(fd, head, want, 0)) < 0) {
        *out_error = strdup(head ? "blob does not read" : "out of memory");
        free(head);
        return obj;
    }
    head[got] = '\0';
    cut = (int64_t)got < size;
    if (ds__image_sniff((const unsigned char *)head, (size_t)got)) {
        free(head);
        return image(out_error, obj, fd, size);
    }
    csv = !strcasecmp(ext, "csv") || !strcmp(mt, "text/csv");
    tsv = !strcasecmp(ext, "tsv") || !strcmp(mt, "text/tab-separated-values");
    jsonl = !strcasecmp(ext, "jsonl") || !strcasecmp(ext, "ndjson") || !strcmp(mt, "application/x-ndjson");
    json = !strcasecmp(ext, "json") || !strcmp(mt, "application/json");
    if (!is_text((const unsigned char *)head, (size_t)got, &tlen)) {
        json_object_set_new(obj, "binary", json_true());
        free(head);
        return obj;
    }
    if (csv || tsv || jsonl) {
        char delim = 0;
        bool header = false;
        int64_t rows = 0;
        bool exact = true;
        int err = jsonl ? jsonl_table(obj, head, (size_t)got, cut)
                        : ds__csv_preview(obj, &delim, &header, head, (size_t)got, cut, tsv ? '\t' : 0);
        if (err == 0) {
            json_object_set_new(obj, "kind", json_string("table"));
            if ((err = count_rows(&rows, &exact, fd, size, head, (size_t)got, jsonl, stop)) == ED_EBUSY) {
                free(head);
                json_decref(obj);
                return NULL;
            }
            if (err == 0) {
                json_object_set_new(obj, "row_count", json_integer(rows - (header ? 1 : 0)));
                json_object_set_new(obj, "row_count_exact", json_boolean(exact));
            }
            free(head);
            return obj;
        }
        /* not a table after all: its head as text */
        json_object_del(obj, "columns");
        json_object_del(obj, "rows");
    }
    if (json && !cut) {
        json_t *v = NULL;
        if (ed_json_parse(&v, head, (size_t)got, 64) == 0) {
            char *pretty = json_dumps(v, JSON_INDENT(2) | JSON_ENCODE_ANY | JSON_PRESERVE_ORDER);
            json_decref(v);
            if (pretty) {
                size_t plen = strlen(pretty);
                bool whole;
                size_t k = utf8_prefix((const unsigned char *)pretty, plen < DS_PREVIEW_TEXT ? plen : DS_PREVIEW_TEXT,
                                       &whole);
                json_object_set_new(obj, "kind", json_string("json"));
                json_object_set_new(obj, "text", json_stringn(pretty, k));
                json_object_set_new(obj, "truncated", json_boolean(k < plen));
                free(pretty);
                free(head);
                return obj;
            }
        }
    }
    text_head(obj, head, (size_t)got, size);
    free(head);
    return obj;
}
