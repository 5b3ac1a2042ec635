/*
 * diff.c - the diff of one file between two versions (or the working tree),
 * notebook-aware for .ipynb (nbdime's idea): cells matched by id, falling
 * back to position; per cell a source diff as line hunks with the unchanged
 * lines folded, an output diff (text as line hunks, images as mime + sha256,
 * never their base64), and metadata changes listed apart. Other text files
 * get line hunks; binary files their size and sha256.
 *
 * Line hunks come from libgit2's git_diff_buffers (xdiff's Myers diff) with
 * PROJ_DIFF_CONTEXT lines of context, so unchanged runs are folded. The work
 * is bounded: each side at most PROJ_DIFF_MAX_BYTES and PROJ_DIFF_MAX_LINES
 * lines, a notebook at most PROJ_DIFF_MAX_CELLS cells (ED_ETOOBIG past them);
 * a line longer than PROJ_DIFF_MAX_LINE bytes is cut (with "truncated").
 */
#include "proj.h"

#include "ed_error.h"
#include "ed_json.h"

#include <git2.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PROJ_DIFF_CONTEXT   3
#define PROJ_DIFF_MAX_LINE  4000

typedef struct hunk_ctx {
    json_t *hunks;
    json_t *cur;      /* the current hunk's "lines" */
    int     err;
} hunk_ctx;

static void sha256_hex(char out[65], const void *buf, size_t len)
{
    unsigned char md[SHA256_DIGEST_LENGTH];
    SHA256(buf, len, md);
    for (int i = 0; i < SHA256_DIGEST_LENGTH; i++)
        snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static size_t count_lines(const char *s, size_t n)
{
    size_t k = n ? 1 : 0;
    for (size_t i = 0; i < n; i++)
        if (s[i] == '\n' && i + 1 < n)
            k++;
    return k;
}

static int on_hunk(const git_diff_delta *d, const git_diff_hunk *h, void *payload)
{
    hunk_ctx *c = payload;
    json_t *hk;
    (void)d;
    c->cur = json_array();
    hk = json_pack("{s:i, s:i, s:i, s:i, s:o}", "old_start", (json_int_t)h->old_start,
                   "old_lines", (json_int_t)h->old_lines, "new_start", (json_int_t)h->new_start,
                   "new_lines", (json_int_t)h->new_lines, "lines", c->cur);
    if (!hk || json_array_append_new(c->hunks, hk) < 0) {
        c->err = ED_ENOMEM;
        return -1;
    }
    return 0;
}

static int on_line(const git_diff_delta *d, const git_diff_hunk *h, const git_diff_line *l,
                   void *payload)
{
    hunk_ctx *c = payload;
    size_t n = l->content_len;
    bool cut = false;
    char op[2] = {0, 0};
    json_t *line;
    (void)d;
    (void)h;
    if (!c->cur || (l->origin != '+' && l->origin != '-' && l->origin != ' '))
        return 0;   /* "\ No newline at end of file" markers */
    if (n && l->content[n - 1] == '\n')
        n--;
    if (n > PROJ_DIFF_MAX_LINE) {
        n = PROJ_DIFF_MAX_LINE;
        while (n && ((unsigned char)l->content[n] & 0xC0) == 0x80)
            n--;   /* cut on a UTF-8 boundary */
        cut = true;
    }
    op[0] = (char)l->origin;
    line = json_pack("{s:s, s:s%}", "op", op, "text", l->content, n);
    if (line && cut)
        json_object_set_new(line, "truncated", json_true());
    if (!line || json_array_append_new(c->cur, line) < 0) {
        c->err = ED_ENOMEM;
        return -1;
    }
    return 0;
}

/* Line hunks between two texts (valid UTF-8) into *out (a JSON array). */
static int line_hunks(json_t **out, const char *a, size_t an, const char *b, size_t bn)
{
    git_diff_options opts;
    hunk_ctx c = {0};

    if (count_lines(a, an) > PROJ_DIFF_MAX_LINES || count_lines(b, bn) > PROJ_DIFF_MAX_LINES)
        return ed_error_set(ED_ETOOBIG, "more than %d lines to compare", PROJ_DIFF_MAX_LINES);
    if (git_diff_options_init(&opts, GIT_DIFF_OPTIONS_VERSION) < 0)
        return ed_error_set(ED_EIO, "git_diff_options_init");
    opts.context_lines = PROJ_DIFF_CONTEXT;
    opts.flags |= GIT_DIFF_FORCE_TEXT;
    if ((c.hunks = json_array()) == NULL)
        return ed_error_set(ED_ENOMEM, "diff");
    if (git_diff_buffers(a, an, "a", b, bn, "b", &opts, NULL, NULL, on_hunk, on_line, &c) < 0 ||
        c.err) {
        json_decref(c.hunks);
        return c.err ? ed_error_set(c.err, "diff") : ed_error_set(ED_EIO, "git_diff_buffers");
    }
    *out = c.hunks;
    return 0;
}

static bool valid_utf8_text(const char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        unsigned char ch = (unsigned char)s[i];
        size_t k;
        if (ch == 0)
            return false;
        if (ch < 0x80) {
            i++;
            continue;
        }
        k = (ch & 0xE0) == 0xC0 ? 1 : (ch & 0xF0) == 0xE0 ? 2 : (ch & 0xF8) == 0xF0 ? 3 : 9;
        if (k == 9 || ch == 0xC0 || ch == 0xC1 || ch > 0xF4 || i + k >= n)
            return false;
        {
            unsigned char c1 = (unsigned char)s[i + 1];
            if ((ch == 0xE0 && c1 < 0xA0) || (ch == 0xED && c1 >= 0xA0) ||   /* overlong, surrogates */
                (ch == 0xF0 && c1 < 0x90) || (ch == 0xF4 && c1 >= 0x90))
                return false;
        }
        for (size_t j = 1; j <= k; j++)
            if (((unsigned char)s[i + j] & 0xC0) != 0x80)
                return false;
        i += k + 1;
    }
    return true;
}

/* ---- notebooks ------------------------------------------------------------ */

/* A notebook string field: a string, or an array of strings joined. */
static char *nb_text(const json_t *v)
{
    size_t n = 0, i;
    json_t *e;
    char *s;
    if (json_is_string(v))
        return strndup(json_string_value(v), json_string_length(v));
    if (!json_is_array(v))
        return strdup("");
    json_array_foreach(v, i, e)
        if (json_is_string(e))
            n += json_string_length(e);
    if ((s = malloc(n + 1)) == NULL)
        return NULL;
    n = 0;
    json_array_foreach(v, i, e)
        if (json_is_string(e)) {
            memcpy(s + n, json_string_value(e), json_string_length(e));
            n += json_string_length(e);
        }
    s[n] = 0;
    return s;
}

static bool is_image_mime(const char *m)
{
    return strncmp(m, "image/", 6) == 0 && strcmp(m, "image/svg+xml") != 0;
}

/* An output's text (what a reader compares) appended to *buf, and its images
 * appended to `imgs` as {mime, sha256, output}. */
static int output_parts(char **buf, size_t *len, json_t *imgs, const json_t *o, size_t idx)
{
    const char *type = json_string_value(json_object_get(o, "output_type"));
    json_t *data = json_object_get(o, "data");
    char *t = NULL, *nb;
    size_t tn;

    if (!type)
        type = "";
    if (strcmp(type, "stream") == 0) {
        t = nb_text(json_object_get(o, "text"));
    } else if (strcmp(type, "error") == 0) {
        char *tb = nb_text(json_object_get(o, "traceback"));
        const char *en = json_string_value(json_object_get(o, "ename"));
        const char *ev = json_string_value(json_object_get(o, "evalue"));
        if (tb && asprintf(&t, "%s: %s\n%s", en ? en : "", ev ? ev : "", tb) < 0)
            t = NULL;
        free(tb);
    } else if (json_is_object(data)) {
        const char *mime;
        json_t *val;
        json_object_foreach(data, mime, val) {
            if (is_image_mime(mime)) {
                char hex[65], *b64 = nb_text(val), *w = b64, *r2;
                if (!b64)
                    return ED_ENOMEM;
                for (r2 = b64; *r2; r2++)   /* the base64 without its line breaks */
                    if (*r2 != '\n' && *r2 != '\r' && *r2 != ' ')
                        *w++ = *r2;
                sha256_hex(hex, b64, (size_t)(w - b64));
                free(b64);
                json_array_append_new(imgs, json_pack("{s:s, s:s, s:i}", "mime", mime,
                                                      "sha256", hex, "output", (json_int_t)idx));
            }
        }
        val = json_object_get(data, "text/plain");
        if (!val)
            val = json_object_get(data, "text/html");
        t = val ? nb_text(val) : strdup("");
    } else {
        t = strdup("");
    }
    if (!t)
        return ED_ENOMEM;
    tn = strlen(t);
    if ((nb = realloc(*buf, *len + tn + 2)) == NULL) {
        free(t);
        return ED_ENOMEM;
    }
    memcpy(nb + *len, t, tn);
    *len += tn;
    if (tn && nb[*len - 1] != '\n')
        nb[(*len)++] = '\n';
    nb[*len] = 0;
    *buf = nb;
    free(t);
    return 0;
}

/* Keys whose values differ between two metadata objects: [{key, from, to}]. */
static json_t *meta_changes(const json_t *a, const json_t *b)
{
    json_t *out = json_array(), *v;
    const char *k;
    if (!out)
        return NULL;
    if (json_is_object(a))
        json_object_foreach((json_t *)a, k, v) {
            json_t *w = json_is_object(b) ? json_object_get(b, k) : NULL;
            if (!w || !json_equal(v, w))
                json_array_append_new(out, json_pack("{s:s, s:O, s:O?}", "key", k, "from", v, "to", w));
        }
    if (json_is_object(b))
        json_object_foreach((json_t *)b, k, v)
            if (!json_is_object(a) || !json_object_get(a, k))
                json_array_append_new(out, json_pack("{s:s, s:n, s:O}", "key", k, "from", "to", v));
    return out;
}

typedef struct cell_side {
    char   *src;
    char   *out_text;
    size_t  out_len;
    json_t *imgs;
} cell_side;

static int cell_side_load(cell_side *s, const json_t *cell)
{
    json_t *outs = json_object_get(cell, "outputs"), *o;
    size_t i;
    memset(s, 0, sizeof *s);
    s->src = cell ? nb_text(json_object_get(cell, "source")) : strdup("");
    s->out_text = strdup("");
    s->imgs = json_array();
    if (!s->src || !s->out_text || !s->imgs)
        return ED_ENOMEM;
    if (json_is_array(outs))
        json_array_foreach(outs, i, o)
            if (output_parts(&s->out_text, &s->out_len, s->imgs, o, i) < 0)
                return ED_ENOMEM;
    return 0;
}

static void cell_side_free(cell_side *s)
{
    free(s->src);
    free(s->out_text);
    json_decref(s->imgs);
}

/* One cell's entry; a or b NULL for an added or removed cell. */
static int cell_entry(json_t **out, const json_t *a, long ai, const json_t *b, long bi)
{
    cell_side sa, sb;
    json_t *src = NULL, *otext = NULL, *imgs = NULL, *meta = NULL, *e;
    const json_t *any = b ? b : a;
    const char *status;
    size_t n;
    int err;

    memset(&sb, 0, sizeof sb);
    if ((err = cell_side_load(&sa, a)) < 0 || (err = cell_side_load(&sb, b)) < 0) {
        cell_side_free(&sa);
        cell_side_free(&sb);
        return ed_error_set(ED_ENOMEM, "diff cell");
    }
    if ((err = line_hunks(&src, sa.src, strlen(sa.src), sb.src, strlen(sb.src))) < 0 ||
        (err = line_hunks(&otext, sa.out_text, sa.out_len, sb.out_text, sb.out_len)) < 0)
        goto done;
    imgs = json_array();
    n = json_array_size(sa.imgs) > json_array_size(sb.imgs) ? json_array_size(sa.imgs)
                                                            : json_array_size(sb.imgs);
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_array_get(sa.imgs, i), *y = json_array_get(sb.imgs, i);
        json_t *ix = json_object_get(x, "sha256"), *iy = json_object_get(y, "sha256");
        json_array_append_new(imgs, json_pack(
            "{s:O, s:O?, s:O?, s:O?, s:O?, s:b}", "mime", json_object_get(y ? y : x, "mime"),
            "from_sha256", ix, "to_sha256", iy, "from_output", json_object_get(x, "output"),
            "to_output", json_object_get(y, "output"), "changed", !(ix && iy && json_equal(ix, iy))));
    }
    meta = meta_changes(a ? json_object_get(a, "metadata") : NULL,
                        b ? json_object_get(b, "metadata") : NULL);
    if (!a)
        status = "added";
    else if (!b)
        status = "removed";
    else {
        bool same = json_array_size(src) == 0 && json_array_size(otext) == 0 &&
                    json_array_size(meta) == 0 &&
                    json_equal(json_object_get(a, "cell_type"), json_object_get(b, "cell_type"));
        json_t *im;
        size_t i;
        json_array_foreach(imgs, i, im)
            if (json_is_true(json_object_get(im, "changed")))
                same = false;
        status = same ? "unchanged" : "modified";
    }
    e = json_pack("{s:s, s:O?, s:O?, s:s?, s:o, s:{s:o, s:o}, s:o}", "status", status,
                  "id", json_object_get(any, "id"), "cell_type", json_object_get(any, "cell_type"),
                  "source_text", strcmp(status, "unchanged") == 0 ? sb.src : NULL,
                  "source", src, "outputs", "text", otext, "images", imgs, "metadata", meta);
    src = otext = imgs = meta = NULL;
    if (!e) {
        err = ed_error_set(ED_ENOMEM, "diff cell");
        goto done;
    }
    if (a)
        json_object_set_new(e, "from_index", json_integer(ai));
    if (b)
        json_object_set_new(e, "to_index", json_integer(bi));
    if (a && b && (json_object_get(a, "execution_count") || json_object_get(b, "execution_count")) &&
        !json_equal(json_object_get(a, "execution_count"), json_object_get(b, "execution_count")))
        json_object_set_new(e, "execution_count", json_pack("{s:O?, s:O?}",
                            "from", json_object_get(a, "execution_count"),
                            "to", json_object_get(b, "execution_count")));
    *out = e;
done:
    json_decref(src);
    json_decref(otext);
    json_decref(imgs);
    json_decref(meta);
    cell_side_free(&sa);
    cell_side_free(&sb);
    return err;
}

static const char *cell_id(const json_t *c)
{
    return json_string_value(json_object_get(c, "id"));
}

/* b's cell j's partner in a: the cell with its id, else (for a cell
 * without id, or whose id a lacks) the unclaimed cell of a at the same
 * position. -1: none (added). */
static void match_cells(long *bmatch, bool *aused, const json_t *ca, const json_t *cb)
{
    size_t na = json_array_size(ca), nb = json_array_size(cb);
    for (size_t j = 0; j < nb; j++) {
        const char *id = cell_id(json_array_get(cb, j));
        bmatch[j] = -1;
        if (!id)
            continue;
        for (size_t i = 0; i < na; i++) {
            const char *ia = cell_id(json_array_get(ca, i));
            if (!aused[i] && ia && strcmp(ia, id) == 0) {
                bmatch[j] = (long)i;
                aused[i] = true;
                break;
            }
        }
    }
    for (size_t j = 0; j < nb; j++) {
        const char *id = cell_id(json_array_get(cb, j));
        bool id_in_a = false;
        if (bmatch[j] >= 0 || j >= na || aused[j])
            continue;
        /* a cell whose id a holds elsewhere, or one a lacks while a's cell at
         * j has an id of its own, is not the same cell */
        for (size_t i = 0; id && i < na; i++) {
            const char *ia = cell_id(json_array_get(ca, i));
            if (ia && strcmp(ia, id) == 0)
                id_in_a = true;
        }
        if (!id_in_a && (!id || !cell_id(json_array_get(ca, j)))) {
            bmatch[j] = (long)j;
            aused[j] = true;
        }
    }
}

static int notebook_diff(json_t *out, const char *a, size_t an, const char *b, size_t bn)
{
    json_error_t je;
    json_t *na = NULL, *nb = NULL, *cells = NULL, *ca, *cb, *e;
    long *bmatch = NULL;
    bool *aused = NULL;
    size_t lena, lenb, next_a = 0;
    int err = 0;
    json_t *empty = json_array();

    if (a && (na = json_loadb(a, an, 0, &je)) == NULL) {
        err = ed_error_set(ED_EUNPROC, "the 'from' notebook is not JSON: %s (line %d)", je.text, je.line);
        goto done;
    }
    if (b && (nb = json_loadb(b, bn, 0, &je)) == NULL) {
        err = ed_error_set(ED_EUNPROC, "the 'to' notebook is not JSON: %s (line %d)", je.text, je.line);
        goto done;
    }
    ca = na ? json_object_get(na, "cells") : empty;
    cb = nb ? json_object_get(nb, "cells") : empty;
    if (!json_is_array(ca) || !json_is_array(cb)) {
        err = ed_error_set(ED_EUNPROC, "not a notebook: no 'cells' array");
        goto done;
    }
    lena = json_array_size(ca);
    lenb = json_array_size(cb);
    if (lena > PROJ_DIFF_MAX_CELLS || lenb > PROJ_DIFF_MAX_CELLS) {
        err = ed_error_set(ED_ETOOBIG, "more than %d cells to compare", PROJ_DIFF_MAX_CELLS);
        goto done;
    }
    bmatch = calloc(lenb + 1, sizeof *bmatch);
    aused = calloc(lena + 1, sizeof *aused);
    cells = json_array();
    if (!bmatch || !aused || !cells) {
        err = ed_error_set(ED_ENOMEM, "diff");
        goto done;
    }
    match_cells(bmatch, aused, ca, cb);
    for (size_t j = 0; j <= lenb; j++) {
        /* a's unmatched cells before this one's partner: removed here */
        size_t upto = j < lenb && bmatch[j] >= 0 ? (size_t)bmatch[j] : (j == lenb ? lena : next_a);
        for (; next_a < upto; next_a++)
            if (!aused[next_a]) {
                if ((err = cell_entry(&e, json_array_get(ca, next_a), (long)next_a, NULL, 0)) < 0)
                    goto done;
                json_array_append_new(cells, e);
            }
        if (j == lenb)
            break;
        if (bmatch[j] >= 0 && (size_t)bmatch[j] + 1 > next_a)
            next_a = (size_t)bmatch[j] + 1;
        if ((err = cell_entry(&e, bmatch[j] >= 0 ? json_array_get(ca, (size_t)bmatch[j]) : NULL,
                              bmatch[j], json_array_get(cb, j), (long)j)) < 0)
            goto done;
        json_array_append_new(cells, e);
    }
    /* matched cells of a left behind by a reorder are still in; unmatched
     * ones after the last partner were emitted at j == lenb */
    json_object_set_new(out, "kind", json_string("notebook"));
    json_object_set_new(out, "cells", cells);
    cells = NULL;
    json_object_set_new(out, "metadata", meta_changes(na ? json_object_get(na, "metadata") : NULL,
                                                      nb ? json_object_get(nb, "metadata") : NULL));
done:
    json_decref(empty);
    json_decref(na);
    json_decref(nb);
    json_decref(cells);
    free(bmatch);
    free(aused);
    return err;
}

static bool ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

static json_t *side_json(const char *buf, size_t len)
{
    char hex[65];
    if (!buf)
        return json_null();
    sha256_hex(hex, buf, len);
    return json_pack("{s:I, s:s}", "size", (json_int_t)len, "sha256", hex);
}

int proj_diff_buffers(char **out_json, const char *path, const char *a, size_t alen,
                      const char *b, size_t blen)
{
    json_t *out;
    int err = 0;

    *out_json = NULL;
    if (!a && !b)
        return ed_error_set(ED_ENOTFOUND, "%s is in neither version", path);
    if (alen > PROJ_DIFF_MAX_BYTES || blen > PROJ_DIFF_MAX_BYTES)
        return ed_error_set(ED_ETOOBIG, "a side is over %d bytes: too large to compare",
                            PROJ_DIFF_MAX_BYTES);
    out = json_pack("{s:s, s:s, s:o, s:o}", "path", path, "status",
                    !a ? "added" : !b ? "removed" :
                    alen == blen && memcmp(a, b, alen) == 0 ? "unchanged" : "modified",
                    "from", side_json(a, alen), "to", side_json(b, blen));
    if (!out)
        return ed_error_set(ED_ENOMEM, "diff");
    if ((a && !valid_utf8_text(a, alen)) || (b && !valid_utf8_text(b, blen))) {
        json_object_set_new(out, "kind", json_string("binary"));
    } else if (ends_with(path, ".ipynb")) {
        err = notebook_diff(out, a, alen, b, blen);
    } else {
        json_t *h = NULL;
        if ((err = line_hunks(&h, a ? a : "", a ? alen : 0, b ? b : "", b ? blen : 0)) == 0) {
            json_object_set_new(out, "kind", json_string("text"));
            json_object_set_new(out, "hunks", h);
        }
    }
    if (err == 0 && (*out_json = json_dumps(out, JSON_COMPACT)) == NULL)
        err = ed_error_set(ED_ENOMEM, "diff");
    json_decref(out);
    return err;
}

int proj_diff(char **out_json, proj_root *r, int64_t user_id, const char *id, const char *path,
              const char *from, const char *to)
{
    char *a = NULL, *b = NULL;
    size_t an = 0, bn = 0;
    int err;

    *out_json = NULL;
    if (!path || proj_path_validate(path, strlen(path)) < 0)
        return ed_error_set(ED_EINVAL, "path: a project file path is needed");
    if (from && strcmp(from, "working") == 0)
        from = NULL;
    if (to && strcmp(to, "working") == 0)
        to = NULL;
    /* a version that does not exist is an error; a file missing from one
     * existing version is an added or removed file */
    if (from) {
        proj_version *v = NULL;
        if ((err = proj_version_get(&v, r, user_id, id, from)) < 0)
            return err;
        proj_version_free(v);
    }
    if (to) {
        proj_version *v = NULL;
        if ((err = proj_version_get(&v, r, user_id, id, to)) < 0)
            return err;
        proj_version_free(v);
    }
    if ((err = proj_file_read(&a, &an, r, user_id, id, path, from)) < 0 && err != ED_ENOTFOUND)
        return err;
    if ((err = proj_file_read(&b, &bn, r, user_id, id, path, to)) < 0 && err != ED_ENOTFOUND) {
        free(a);
        return err;
    }
    err = proj_diff_buffers(out_json, path, a, an, b, bn);
    free(a);
    free(b);
    return err;
}
