/*
 * score.c - loading a truth, its split, and validating and scoring a
 * submission in one streamed pass (score.h).
 */
#include "csvsub.h"
#include "score_int.h"

#include "ed_error.h"

#include <math.h>
#include <sys/stat.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the truth ---------------------------------------------------------- */

void comp_truth_free(comp_truth *t)
{
    if (!t)
        return;
    free(t->id_column);
    free(t->target_column);
    comp__strtab_free(&t->ids);
    comp__strtab_free(&t->classes);
    comp__strtab_free(&t->lists);
    free(t->cls);
    free(t->y);
    free(t->public_mask);
    free(t->class_order);
    free(t->dense);
    free(t);
}

int64_t comp__truth_find(const comp_truth *t, const char *s, size_t len)
{
    if (t->dense_len > 0)
        return comp__dense_row(t, comp__canon_uint(s, len));
    return comp__strtab_find(&t->ids, s, len);
}

/* The dense index (see comp_truth.dense) when every id is a canonical
 * integer in a narrow range: 1 built, 0 not applicable (the hash index is
 * built instead), ED_EEXISTS with the duplicate pair, ED_ENOMEM. */
static int dense_index(comp_truth *t, size_t *dup_first, size_t *dup_second)
{
    uint64_t lo = UINT64_MAX, hi = 0, first = 0;
    size_t n = t->ids.n, i;
    int seq = 1;

    for (i = 0; i < n; i++) {
        const char *s = comp__strtab_get(&t->ids, i);
        int64_t v = comp__canon_uint(s, strlen(s));
        if (v < 0)
            return 0;
        if (i == 0)
            first = (uint64_t)v;
        seq = seq && (uint64_t)v == first + i;
        if ((uint64_t)v < lo)
            lo = (uint64_t)v;
        if ((uint64_t)v > hi)
            hi = (uint64_t)v;
    }
    if (n == 0 || hi - lo >= 2 * (uint64_t)n + 1024)
        return 0;
    t->dense_len = (size_t)(hi - lo + 1);
    t->dense_min = lo;
    if (seq)
        return 1;   /* in order, one apart: the row is the value's offset */
    if ((t->dense = comp__big_calloc(t->dense_len, sizeof(*t->dense))) == NULL)
        return ED_ENOMEM;
    for (i = 0; i < n; i++) {
        const char *s = comp__strtab_get(&t->ids, i);
        uint64_t k = (uint64_t)comp__canon_uint(s, strlen(s)) - lo;
        if (t->dense[k] != 0) {
            *dup_first = t->dense[k] - 1;
            *dup_second = i;
            return ED_EEXISTS;
        }
        t->dense[k] = (uint32_t)(i + 1);
    }
    return 1;
}

size_t comp_truth_rows(const comp_truth *t) { return t->ids.n; }
comp_metric_kind comp_truth_metric(const comp_truth *t) { return t->metric; }

static size_t strtab_mem(const comp_strtab *s)
{
    return s->bcap + s->ncap * sizeof(uint64_t) + s->nslot * sizeof(comp_slot);
}

size_t comp_truth_memory(const comp_truth *t)
{
    size_t rows = t->ids.ncap;
    return sizeof(*t) + strtab_mem(&t->ids) + strtab_mem(&t->classes) + strtab_mem(&t->lists) +
           (t->dense ? t->dense_len * sizeof(uint32_t) : 0) +
           (t->cls ? rows * sizeof(uint32_t) : 0) + (t->y ? rows * sizeof(double) : 0) +
           (t->public_mask ? t->ids.n : 0);
}

static int is_classification(comp_metric_kind m)
{
    return m == COMP_METRIC_ACCURACY || m == COMP_METRIC_F1_MACRO || m == COMP_METRIC_F1_MICRO ||
           m == COMP_METRIC_LOGLOSS || m == COMP_METRIC_AUC;
}

/* The reader's error as the host sees it (a truth error). */
static int truth_csv_error(const comp_csv *r)
{
    int code = r->err_code == ED_EUNPROC ? ED_EINVAL : r->err_code;
    if (r->err_line > 0 && r->err_col > 0)
        return ed_error_set(code, "truth: line %lld, column %d: %s", (long long)r->err_line, r->err_col, r->err);
    if (r->err_line > 0)
        return ed_error_set(code, "truth: line %lld: %s", (long long)r->err_line, r->err);
    return ed_error_set(code, "truth: %s", r->err);
}

static int find_col(const comp_csv *r, const char *name)
{
    int i;
    for (i = 0; i < r->nfields; i++)
        if (!strcmp(r->field[i], name))
            return i;
    return -1;
}

/* Numeric labels sort as numbers, others as bytes (as sklearn's np.unique on
 * the column pandas would give). */
static const comp_truth *sort_truth;
static int all_numeric;
static int cmp_class(const void *x, const void *y)
{
    const char *a = comp__strtab_get(&sort_truth->classes, *(const uint32_t *)x);
    const char *b = comp__strtab_get(&sort_truth->classes, *(const uint32_t *)y);
    if (all_numeric) {
        double da = 0, db = 0;
        comp__parse_double(&da, a, strlen(a));
        comp__parse_double(&db, b, strlen(b));
        if (da != db)
            return da < db ? -1 : 1;
    }
    return strcmp(a, b);
}

static int order_classes(comp_truth *t)
{
    size_t i, n = t->classes.n;
    double d;

    if ((t->class_order = malloc((n ? n : 1) * sizeof(uint32_t))) == NULL)
        return ed_error_set(ED_ENOMEM, "truth classes");
    all_numeric = 1;
    for (i = 0; i < n; i++) {
        const char *s = comp__strtab_get(&t->classes, i);
        t->class_order[i] = (uint32_t)i;
        if (comp__parse_double(&d, s, strlen(s)) != 0)
            all_numeric = 0;
    }
    sort_truth = t;     /* qsort has no payload; truth loads are rare and short */
    qsort(t->class_order, n, sizeof(uint32_t), cmp_class);
    sort_truth = NULL;
    t->positive = n ? t->class_order[n - 1] : 0;
    return 0;
}

int comp_truth_load(comp_truth **out, int fd, const comp_score_spec *spec)
{
    comp_truth *t = NULL;
    comp_csv r;
    int err, rc, idc, tc, cls_metric, hdr_fields;
    size_t cap_rows = 0;
    struct stat sb;
    int64_t fsize = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) ? (int64_t)sb.st_size : 0;

    *out = NULL;
    memset(&r, 0, sizeof(r));
    if (!spec || !spec->id_column || !spec->target_column || !spec->id_column[0] || !spec->target_column[0])
        return ed_error_set(ED_EINVAL, "the id and target columns must be named");
    if (!strcmp(spec->id_column, spec->target_column))
        return ed_error_set(ED_EINVAL, "the id and target columns are both '%.64s'", spec->id_column);
    if ((t = calloc(1, sizeof(*t))) == NULL)
        return ed_error_set(ED_ENOMEM, "truth");
    if ((err = comp_metric_parse(&t->metric, &t->k, spec->metric)) < 0)
        goto fail;
    t->sub_max_bytes = spec->sub_max_bytes > 0 ? spec->sub_max_bytes : COMP_SUB_DEFAULT_MAX_BYTES;
    t->id_column = strdup(spec->id_column);
    t->target_column = strdup(spec->target_column);
    if (!t->id_column || !t->target_column) {
        err = ed_error_set(ED_ENOMEM, "truth");
        goto fail;
    }
    cls_metric = is_classification(t->metric);
    if (comp__csv_open(&r, fd, spec->truth_max_bytes > 0 ? spec->truth_max_bytes : COMP_TRUTH_DEFAULT_MAX_BYTES) <
        0) {
        err = truth_csv_error(&r);
        goto fail;
    }
    if ((rc = comp__csv_next(&r)) <= 0) {
        err = rc < 0 ? truth_csv_error(&r) : ed_error_set(ED_EINVAL, "truth: the file is empty");
        goto fail;
    }
    hdr_fields = r.nfields;
    idc = find_col(&r, t->id_column);
    tc = find_col(&r, t->target_column);
    if (idc < 0 || tc < 0) {
        err = ed_error_set(ED_EINVAL, "truth: line 1 has no column '%.64s'",
                           idc < 0 ? t->id_column : t->target_column);
        goto fail;
    }
    while ((rc = comp__csv_next(&r)) == 1) {
        size_t row = t->ids.n;
        const char *id = r.field[idc], *tv = r.field[tc];
        size_t idl = r.flen[idc], tl = r.flen[tc];
        if (r.nfields != hdr_fields) {
            err = ed_error_set(ED_EINVAL, "truth: line %lld has %d fields, the header %d", (long long)r.rec_line,
                               r.nfields, hdr_fields);
            goto fail;
        }
        if (row >= COMP_TRUTH_MAX_ROWS) {
            err = ed_error_set(ED_ETOOBIG, "truth: over %d rows", COMP_TRUTH_MAX_ROWS);
            goto fail;
        }
        if (idl == 0) {
            err = ed_error_set(ED_EINVAL, "truth: line %lld: empty id", (long long)r.rec_line);
            goto fail;
        }
        if (comp__strtab_append(&t->ids, id, idl) < 0) {
            err = ed_error_set(ED_ENOMEM, "truth ids");
            goto fail;
        }
        if (row == 4096 && fsize > 0) {
            /* Size the arrays for the whole file from the first rows (10%
             * over; short: they double as before): no copies while growing. */
            int64_t used = r.total - (int64_t)(r.len - r.pos);
            if (used > 0 && fsize > used) {
                double scale = (double)fsize / (double)used * 1.1;
                size_t est = (size_t)((double)row * scale) + 1024;
                if (est > COMP_TRUTH_MAX_ROWS)
                    est = COMP_TRUTH_MAX_ROWS;
                if (comp__strtab_reserve(&t->ids, est, (size_t)((double)t->ids.blen * scale) + 4096) < 0) {
                    err = ed_error_set(ED_ENOMEM, "truth ids");
                    goto fail;
                }
                if (est > cap_rows && cls_metric) {
                    void *p = comp__big_realloc(t->cls, cap_rows * sizeof(*t->cls), est * sizeof(*t->cls));
                    if (p == NULL) {
                        err = ed_error_set(ED_ENOMEM, "truth targets");
                        goto fail;
                    }
                    t->cls = p;
                    cap_rows = est;
                } else if (est > cap_rows && t->metric != COMP_METRIC_MAPK) {
                    void *p = comp__big_realloc(t->y, cap_rows * sizeof(*t->y), est * sizeof(*t->y));
                    if (p == NULL) {
                        err = ed_error_set(ED_ENOMEM, "truth targets");
                        goto fail;
                    }
                    t->y = p;
                    cap_rows = est;
                }
            }
        }
        if (row >= cap_rows) {
            size_t nc = cap_rows ? cap_rows * 2 : 1024;
            void *p;
            if (cls_metric) {
                if ((p = comp__big_realloc(t->cls, cap_rows * sizeof(*t->cls), nc * sizeof(*t->cls))) == NULL) {
                    err = ed_error_set(ED_ENOMEM, "truth targets");
                    goto fail;
                }
                t->cls = p;
            } else if (t->metric != COMP_METRIC_MAPK) {
                if ((p = comp__big_realloc(t->y, cap_rows * sizeof(*t->y), nc * sizeof(*t->y))) == NULL) {
                    err = ed_error_set(ED_ENOMEM, "truth targets");
                    goto fail;
                }
                t->y = p;
            }
            cap_rows = nc;
        }
        if (cls_metric) {
            /* runs of one label are common (sorted truths): the last one first */
            const char *ls = row > 0 ? comp__strtab_get(&t->classes, t->cls[row - 1]) : NULL;
            int64_t c = ls != NULL && strncmp(ls, tv, tl) == 0 && ls[tl] == '\0'
                            ? (int64_t)t->cls[row - 1]
                            : comp__strtab_find(&t->classes, tv, tl);
            if (c < 0 && (c = comp__strtab_add(&t->classes, tv, tl)) < 0) {
                err = ed_error_set(ED_ENOMEM, "truth classes");
                goto fail;
            }
            t->cls[row] = (uint32_t)c;
        } else if (t->metric == COMP_METRIC_MAPK) {
            if (comp__strtab_append(&t->lists, tv, tl) < 0) {   /* one entry per row */
                err = ed_error_set(ED_ENOMEM, "truth label lists");
                goto fail;
            }
        } else {
            int pr = comp__parse_double(&t->y[row], tv, tl);
            if (pr != 0) {
                err = ed_error_set(ED_EINVAL, "truth: line %lld, column %d: '%.40s' is not a finite number",
                                   (long long)r.rec_line, tc + 1, tv);
                goto fail;
            }
        }
    }
    if (rc < 0) {
        err = truth_csv_error(&r);
        goto fail;
    }
    if (t->ids.n == 0) {
        err = ed_error_set(ED_EINVAL, "truth: no rows after the header");
        goto fail;
    }
    {
        size_t d1 = 0, d2 = 0;
        if ((err = dense_index(t, &d1, &d2)) == 0)
            err = comp__strtab_index(&t->ids, &d1, &d2);
        if (err < 0) {
            if (err == ED_EEXISTS)
                err = ed_error_set(ED_EINVAL, "truth: duplicate id '%.64s' (data rows %zu and %zu)",
                                   comp__strtab_get(&t->ids, d2), d1 + 1, d2 + 1);
            else
                err = ed_error_set(ED_ENOMEM, "truth id index");
            goto fail;
        }
    }
    if (cls_metric && (err = order_classes(t)) < 0)
        goto fail;
    if ((t->metric == COMP_METRIC_LOGLOSS || t->metric == COMP_METRIC_AUC) && t->classes.n < 2) {
        err = ed_error_set(ED_EINVAL, "truth: %s needs at least two classes; the truth has one",
                           comp_metric_name(t->metric));
        goto fail;
    }
    if (t->metric == COMP_METRIC_AUC && t->classes.n > COMP_AUC_MAX_CLASSES) {
        err = ed_error_set(ED_ETOOBIG, "truth: auc takes at most %d classes (one-vs-rest); the truth has %zu",
                           COMP_AUC_MAX_CLASSES, t->classes.n);
        goto fail;
    }
    if (t->metric == COMP_METRIC_LOGLOSS && t->classes.n > COMP_CSV_MAX_COLUMNS - 1) {
        err = ed_error_set(ED_ETOOBIG, "truth: %zu classes, over %d", t->classes.n, COMP_CSV_MAX_COLUMNS - 1);
        goto fail;
    }
    comp__csv_close(&r);
    *out = t;
    return 0;
fail:
    comp__csv_close(&r);
    comp_truth_free(t);
    return err;
}

int comp_truth_split(comp_truth *t, uint64_t seed, double public_fraction)
{
    uint8_t *m;
    int err;

    if ((m = comp__big_calloc(t->ids.n ? t->ids.n : 1, 1)) == NULL)
        return ed_error_set(ED_ENOMEM, "split mask");
    if ((err = comp_split_mask(m, t->ids.n, seed, public_fraction)) < 0) {
        free(m);
        return err;
    }
    if (t->metric == COMP_METRIC_AUC && t->classes.n > 2) {
        /* one-vs-rest: sklearn refuses a subset without every class */
        size_t i, n[2] = {0, 0}, *cnt = calloc(2 * t->classes.n, sizeof(*cnt));
        if (cnt == NULL) {
            free(m);
            return ed_error_set(ED_ENOMEM, "split check");
        }
        for (i = 0; i < t->ids.n; i++) {
            n[m[i]]++;
            cnt[m[i] * t->classes.n + t->cls[i]]++;
        }
        for (int s = 0; s < 2; s++)
            for (size_t k = 0; k < t->classes.n; k++)
                if (n[s] > 0 && cnt[s * t->classes.n + k] == 0) {
                    free(cnt);
                    free(m);
                    return ed_error_set(ED_EINVAL, "the %s rows lack a class (a single class against the rest "
                                                   "is undefined there: auc one-vs-rest needs every class in "
                                                   "both parts; change the seed or the fraction)",
                                        s ? "public" : "private");
                }
        free(cnt);
    } else if (t->metric == COMP_METRIC_AUC) {
        size_t i, pos[2] = {0, 0}, n[2] = {0, 0};
        int s;
        for (i = 0; i < t->ids.n; i++) {
            n[m[i]]++;
            pos[m[i]] += t->cls[i] == t->positive;
        }
        for (s = 0; s < 2; s++) {
            if (n[s] > 0 && (pos[s] == 0 || pos[s] == n[s])) {
                free(m);
                return ed_error_set(ED_EINVAL, "the %s rows hold a single class: auc is undefined there "
                                               "(change the seed or the fraction)",
                                    s ? "public" : "private");
            }
        }
    }
    free(t->public_mask);
    t->public_mask = m;
    return 0;
}

/* ---- a submission ------------------------------------------------------- */

static int sub_fail(comp_score_error *e, int code, int64_t line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));

static int sub_fail(comp_score_error *e, int code, int64_t line, int col, const char *fmt, ...)
{
    char msg[400];
    comp_score_error local;
    va_list ap;

    if (!e)
        e = &local;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    snprintf(e->cls, sizeof(e->cls), "%s", code == ED_EUNPROC ? "invalid_output" : "platform_error");
    if (line > 0 && col > 0)
        snprintf(e->message, sizeof(e->message), "line %lld, column %d: %s", (long long)line, col, msg);
    else if (line > 0)
        snprintf(e->message, sizeof(e->message), "line %lld: %s", (long long)line, msg);
    else
        snprintf(e->message, sizeof(e->message), "%s", msg);
    e->line = line;
    e->column = col;
    return ed_error_set(code, "%s", e->message);
}

/* A submitted value for a message: printable ASCII kept, the rest as '?',
 * at most 40 bytes. */
static const char *show(char *buf, size_t cap, const char *s, size_t n)
{
    size_t i, o = 0;
    for (i = 0; i < n && o + 4 < cap && i < 40; i++)
        buf[o++] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    if (i < n && o + 4 < cap) {
        memcpy(buf + o, "...", 3);
        o += 3;
    }
    buf[o] = '\0';
    return buf;
}

/* The columns a submission must have, in the order the message lists them. */
typedef struct sub_cols {
    int n;
    const char *name[COMP_CSV_MAX_COLUMNS];
    int at[COMP_CSV_MAX_COLUMNS];   /* field index in the header, -1 missing */
    int single;                     /* logloss/auc: the one-column form */
} sub_cols;

static void expected_cols(sub_cols *c, const comp_truth *t, int single)
{
    size_t k;

    c->n = 0;
    c->single = single;
    c->name[c->n++] = t->id_column;
    if ((t->metric == COMP_METRIC_LOGLOSS || t->metric == COMP_METRIC_AUC) && !single) {
        for (k = 0; k < t->classes.n; k++)
            c->name[c->n++] = comp__strtab_get(&t->classes, t->class_order[k]);
    } else {
        c->name[c->n++] = t->target_column;
    }
}

static int check_header(sub_cols *c, const comp_truth *t, const comp_csv *r, comp_score_error *e)
{
    char list[300], miss[300], extra[300], b[64];
    int i, j, single;
    size_t lo = 0, mo = 0, eo = 0;

    for (i = 0; i < r->nfields; i++)
        for (j = 0; j < i; j++)
            if (r->flen[i] == r->flen[j] && !memcmp(r->field[i], r->field[j], r->flen[i]))
                return sub_fail(e, ED_EUNPROC, r->rec_line, i + 1, "column '%s' appears twice in the header",
                                show(b, sizeof(b), r->field[i], r->flen[i]));
    single = t->metric != COMP_METRIC_LOGLOSS && t->metric != COMP_METRIC_AUC;
    if (!single && t->classes.n == 2 && find_col(r, t->target_column) >= 0)
        single = 1;     /* binary: the positive class's probability alone */
    expected_cols(c, t, single);
    for (i = 0; i < c->n; i++) {
        c->at[i] = find_col(r, c->name[i]);
        lo += (size_t)snprintf(list + lo, lo < sizeof(list) ? sizeof(list) - lo : 0, "%s%s", i ? "," : "",
                               c->name[i]);
        if (c->at[i] < 0)
            mo += (size_t)snprintf(miss + mo, mo < sizeof(miss) ? sizeof(miss) - mo : 0, "%s'%s'", mo ? ", " : "",
                                   c->name[i]);
        if (lo >= sizeof(list))
            lo = sizeof(list) - 1;
        if (mo >= sizeof(miss))
            mo = sizeof(miss) - 1;
    }
    if (mo == 0 && r->nfields == c->n)
        return 0;
    for (i = 0; i < r->nfields; i++) {
        for (j = 0; j < c->n; j++)
            if (c->at[j] == i)
                break;
        if (j == c->n) {
            eo += (size_t)snprintf(extra + eo, eo < sizeof(extra) ? sizeof(extra) - eo : 0, "%s'%s'",
                                   eo ? ", " : "", show(b, sizeof(b), r->field[i], r->flen[i]));
            if (eo >= sizeof(extra))
                eo = sizeof(extra) - 1;
        }
    }
    miss[mo] = extra[eo] = '\0';
    /* No id column, and the first field is one of the truth's ids: the header is missing. */
    if (c->at[0] < 0 && r->nfields > 0 && comp__truth_find(t, r->field[0], r->flen[0]) >= 0)
        return sub_fail(e, ED_EUNPROC, 1, 0,
                        "missing header: the first line looks like data; it must name the columns: %s", list);
    if (mo && eo)
        return sub_fail(e, ED_EUNPROC, 1, 0, "wrong columns: missing %s; unexpected %s (expected: %s)", miss, extra,
                        list);
    if (mo)
        return sub_fail(e, ED_EUNPROC, 1, 0, "wrong columns: missing %s (expected: %s)", miss, list);
    return sub_fail(e, ED_EUNPROC, 1, 0, "wrong columns: unexpected %s (expected: %s)", extra, list);
}

/* Parse a number field; 0, or the error set. */
static int number(double *v, comp_score_error *e, const comp_csv *r, int col, const char *name)
{
    char b[64];
    switch (comp__parse_double(v, r->field[col], r->flen[col])) {
    case 0:
        return 0;
    case 1:
        return sub_fail(e, ED_EUNPROC, r->rec_line, col + 1, "NaN in '%s' (every value must be a finite number)",
                        name);
    case 2:
        return sub_fail(e, ED_EUNPROC, r->rec_line, col + 1, "infinity in '%s' (every value must be a finite number)",
                        name);
    case 3:
        return sub_fail(e, ED_EUNPROC, r->rec_line, col + 1, "empty value in '%s'", name);
    default:
        return sub_fail(e, ED_EUNPROC, r->rec_line, col + 1, "'%s' in '%s' is not a number",
                        show(b, sizeof(b), r->field[col], r->flen[col]), name);
    }
}

/* A submission being scored. Records are gathered in batches: the ids'
 * index slots are prefetched as each record is copied in, the rows' data
 * once the batch is full, then the batch is scored in file order, so the
 * random accesses of a shuffled submission overlap (file order and the
 * first error are unchanged). */
#define BATCH 32

typedef struct sub_ctx {
    const comp_truth *t;
    comp_score_error *err;
    comp_acc acc;
    sub_cols *cols;
    uint32_t *seen;             /* row -> the line it was on (0: not yet) */
    double *probs;
    int64_t rows;
    size_t guess;               /* the row after the last one */
    int guessing;               /* the submission has kept the truth's order so far */
    /* the batch: n records, fields copied into arena */
    int n;
    char *arena;
    size_t used, cap;
    int64_t line[BATCH];
    uint32_t hash[BATCH];
    int64_t key[BATCH];         /* dense ids: the id's value (-1: not canonical) */
    int64_t found[BATCH];
    char **field;               /* [BATCH * cols->n] */
    size_t *flen;
} sub_ctx;

/* Score one row of the batch (its fields in *v). 0, or the error set. */
static int score_row(sub_ctx *c, const comp_csv *v, int64_t found)
{
    const char *id = v->field[c->cols->at[0]];
    size_t idl = v->flen[c->cols->at[0]], row;
    char b[64];
    int e, i;

    if (found < 0)
        return sub_fail(c->err, ED_EUNPROC, v->rec_line, c->cols->at[0] + 1, "unknown id '%s'", show(b, sizeof(b), id, idl));
    row = (size_t)found;
    if (c->seen[row])
        return sub_fail(c->err, ED_EUNPROC, v->rec_line, c->cols->at[0] + 1, "duplicate id '%s' (first on line %u)",
                        show(b, sizeof(b), id, idl), c->seen[row]);
    c->seen[row] = (uint32_t)(v->rec_line > UINT32_MAX ? UINT32_MAX : v->rec_line);
    c->rows++;


        switch (c->t->metric) {
        case COMP_METRIC_ACCURACY:
        case COMP_METRIC_F1_MACRO:
        case COMP_METRIC_F1_MICRO:
            if (comp__acc_label(&c->acc, c->t, row, v->field[c->cols->at[1]], v->flen[c->cols->at[1]]) < 0) {
                return sub_fail(c->err, ED_ENOMEM, 0, 0, "out of memory for predicted labels");
            }
            break;
        case COMP_METRIC_RMSE:
        case COMP_METRIC_MAE: {
            double x;
            if ((e = number(&x, c->err, v, c->cols->at[1], c->cols->name[1])) < 0)
                return e;
            comp__acc_value(&c->acc, c->t, row, x);
            break;
        }
        case COMP_METRIC_AUC: {
            double x, score = 0, sum = 0;
            int multi = c->t->classes.n > 2;
            /* the one-column form, or a column per class: the positive one is
             * the score; more than two classes: every column (one-vs-rest) */
            for (i = 1; i < c->cols->n; i++) {
                if ((e = number(&x, c->err, v, c->cols->at[i], c->cols->name[i])) < 0)
                    return e;
                if (multi) {
                    c->probs[c->t->class_order[i - 1]] = x;
                    sum += x;
                } else if (c->cols->single || c->t->class_order[i - 1] == c->t->positive) {
                    score = x;
                }
            }
            if (!multi) {
                comp__acc_auc(&c->acc, c->t, row, score);
                break;
            }
            /* sklearn's check: np.allclose(1, row sum) */
            if (!(fabs(1 - sum) <= 1e-8 + 1e-5 * fabs(sum)))
                return sub_fail(c->err, ED_EUNPROC, v->rec_line, 0,
                                "the class probabilities sum to %.9g, not 1 (multi-class auc takes "
                                "probabilities)", sum);
            comp__acc_auc_multi(&c->acc, c->t, row, c->probs);
            break;
        }
        case COMP_METRIC_LOGLOSS: {
            double x;
            for (i = 1; i < c->cols->n; i++) {
                if ((e = number(&x, c->err, v, c->cols->at[i], c->cols->name[i])) < 0)
                    return e;
                if (x < 0 || x > 1) {
                    return sub_fail(c->err, ED_EUNPROC, v->rec_line, c->cols->at[i] + 1,
                                    "probability %g in '%s' is outside [0, 1]", x, c->cols->name[i]);
                }
                if (!c->cols->single)
                    c->probs[c->t->class_order[i - 1]] = x;
            }
            if (c->cols->single)
                comp__acc_logloss(&c->acc, c->t, row, NULL, x);
            else
                comp__acc_logloss(&c->acc, c->t, row, c->probs, 0);
            break;
        }
        case COMP_METRIC_MAPK:
            comp__acc_mapk(&c->acc, c->t, row, v->field[c->cols->at[1]], v->flen[c->cols->at[1]]);
            break;
        default:
            return sub_fail(c->err, ED_EINTERNAL, 0, 0, "metric %d", (int)c->t->metric);
        }
    return 0;
}

/* Find each batched id's row (the guess first, then the index), prefetch
 * the rows' data, then score the rows in order. */
static int flush_batch(sub_ctx *c)
{
    const comp_truth *t = c->t;
    int k, e, nc = c->cols->n;
    comp_csv v;

    for (k = 0; k < c->n; k++) {
        char **f = c->field + (size_t)k * nc;
        size_t *fl = c->flen + (size_t)k * nc, idl = fl[c->cols->at[0]];
        const char *id = f[c->cols->at[0]];
        int64_t found = -1;
        /* Most submissions keep the truth's order (the sample submission's):
         * try the row after the last one before the index. */
        if (c->guessing && c->guess < t->ids.n) {
            const char *g = comp__strtab_get(&t->ids, c->guess);
            if (strncmp(g, id, idl) == 0 && g[idl] == '\0')
                found = (int64_t)c->guess;
        }
        if (found < 0)
            found = t->dense_len > 0 ? comp__dense_row(t, (int64_t)c->key[k])
                                     : comp__strtab_find_hashed(&t->ids, id, idl, c->hash[k]);
        if (found >= 0) {
            c->guessing = (size_t)found == c->guess;
            c->guess = (size_t)found + 1;
            __builtin_prefetch(&c->seen[found], 1);
            if (t->public_mask)
                __builtin_prefetch(&t->public_mask[found]);
            if (t->cls)
                __builtin_prefetch(&t->cls[found]);
            if (t->y)
                __builtin_prefetch(&t->y[found]);
        }
        c->found[k] = found;
    }
    memset(&v, 0, sizeof(v));
    for (k = 0; k < c->n; k++) {
        v.field = c->field + (size_t)k * nc;
        v.flen = c->flen + (size_t)k * nc;
        v.rec_line = c->line[k];
        if ((e = score_row(c, &v, c->found[k])) < 0)
            return e;
    }
    c->n = 0;
    c->used = 0;
    return 0;
}

/* Copy the reader's record into the batch (flushing first when full). */
static int add_record(sub_ctx *c, const comp_csv *r)
{
    size_t need = 0, o;
    int i, e, nc = c->cols->n;
    char **f;
    size_t *fl;

    for (i = 0; i < nc; i++)
        need += r->flen[i] + 1;
    if ((c->n == BATCH || c->used + need > c->cap) && (e = flush_batch(c)) < 0)
        return e;
    f = c->field + (size_t)c->n * nc;
    fl = c->flen + (size_t)c->n * nc;
    for (i = 0, o = c->used; i < nc; i++) {
        memcpy(c->arena + o, r->field[i], r->flen[i] + 1);
        f[i] = c->arena + o;
        fl[i] = r->flen[i];
        o += r->flen[i] + 1;
    }
    c->used = o;
    c->line[c->n] = r->rec_line;
    if (c->t->dense_len > 0) {
        int64_t v = comp__canon_uint(f[c->cols->at[0]], fl[c->cols->at[0]]);
        uint64_t k = (uint64_t)v - c->t->dense_min;
        c->key[c->n] = v;
        if (v >= 0 && k < c->t->dense_len && c->t->dense != NULL)
            __builtin_prefetch(&c->t->dense[k]);
    } else {
        c->hash[c->n] = comp__strtab_prefetch(&c->t->ids, f[c->cols->at[0]], fl[c->cols->at[0]]);
    }
    c->n++;
    return 0;
}

int comp_score_submission(comp_score_result *out, comp_score_error *err, const comp_truth *t, int fd)
{
    comp_csv r;
    sub_ctx c;
    int rc, e;
    size_t missing = 0, row;
    char b[64];

    memset(out, 0, sizeof(*out));
    memset(&c, 0, sizeof(c));
    c.t = t;
    c.err = err;
    c.guessing = 1;
    if (err)
        memset(err, 0, sizeof(*err));
    if (comp__csv_open(&r, fd, t->sub_max_bytes) < 0)
        return sub_fail(err, r.err_code, r.err_line, r.err_col, "%s", r.err);
    if ((rc = comp__csv_next(&r)) <= 0) {
        e = rc < 0 ? sub_fail(err, r.err_code, r.err_line, r.err_col, "%s", r.err)
                   : sub_fail(err, ED_EUNPROC, 0, 0, "the file is empty");
        goto done;
    }
    c.cols = malloc(sizeof(*c.cols));
    c.seen = comp__big_calloc(t->ids.n, sizeof(*c.seen));
    c.probs = malloc((t->classes.n + 1) * sizeof(*c.probs));
    c.cap = (size_t)COMP_CSV_MAX_RECORD + COMP_CSV_MAX_COLUMNS + 16;    /* always holds one record */
    c.arena = malloc(c.cap);
    if (!c.cols || !c.seen || !c.probs || !c.arena || comp__acc_init(&c.acc, t) < 0) {
        e = sub_fail(err, ED_ENOMEM, 0, 0, "out of memory scoring %zu rows", t->ids.n);
        goto done;
    }
    if ((e = check_header(c.cols, t, &r, err)) < 0)
        goto done;
    c.field = malloc(sizeof(*c.field) * BATCH * (size_t)c.cols->n);
    c.flen = malloc(sizeof(*c.flen) * BATCH * (size_t)c.cols->n);
    if (!c.field || !c.flen) {
        e = sub_fail(err, ED_ENOMEM, 0, 0, "out of memory scoring %zu rows", t->ids.n);
        goto done;
    }
    while ((rc = comp__csv_next(&r)) == 1) {
        if (r.nfields != c.cols->n) {
            if ((e = flush_batch(&c)) < 0)   /* an earlier row's error comes first */
                goto done;
            e = sub_fail(err, ED_EUNPROC, r.rec_line, 0, "%d fields, expected %d", r.nfields, c.cols->n);
            goto done;
        }
        if ((e = add_record(&c, &r)) < 0)
            goto done;
    }
    if ((e = flush_batch(&c)) < 0)
        goto done;
    if (rc < 0) {
        e = sub_fail(err, r.err_code, r.err_line, r.err_col, "%s", r.err);
        goto done;
    }
    missing = t->ids.n - (size_t)c.rows;
    if (missing > 0) {
        char first[200];
        size_t o = 0, shown = 0;
        first[0] = '\0';
        for (row = 0; row < t->ids.n && shown < 3; row++) {
            if (!c.seen[row]) {
                const char *id = comp__strtab_get(&t->ids, row);
                o += (size_t)snprintf(first + o, sizeof(first) - o, "%s'%s'", shown ? ", " : "",
                                      show(b, sizeof(b), id, strlen(id)));
                if (o >= sizeof(first))
                    o = sizeof(first) - 1;
                shown++;
            }
        }
        e = sub_fail(err, ED_EUNPROC, 0, 0, "wrong row count: %lld rows, expected %zu; %zu id%s missing (first: %s%s)",
                     (long long)c.rows, t->ids.n, missing, missing == 1 ? " is" : "s are", first,
                     missing > shown ? ", ..." : "");
        goto done;
    }
    comp__acc_finish(&c.acc, t, &out->public_score, &out->private_score);
    out->public_rows = c.acc.n[1];
    out->private_rows = c.acc.n[0];
    out->metric = t->metric;
    out->metric_version = comp_metric_version(t->metric);
    e = 0;
done:
    comp__csv_close(&r);
    comp__acc_free(&c.acc);
    free(c.cols);
    free(c.seen);
    free(c.probs);
    free(c.arena);
    free(c.field);
    free(c.flen);
    return e;
}
