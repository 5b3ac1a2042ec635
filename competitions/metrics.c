/*
 * metrics.c - the built-in metrics (score.h): names, directions, versions,
 * the per-row accumulators that give the public and the private score in
 * one pass, and the public/private split mask.
 *
 * Each metric follows sklearn 1.2 (or Kaggle's reference code for MAP@K)
 * exactly; tests/unit/competitions/ref_metrics.py checks them to 1e-9.
 */
#include "score_int.h"

#include "ed_error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static const struct {
    const char *name;
    int higher;
    int version;
} metric_info[COMP_METRIC_COUNT] = {
    [COMP_METRIC_ACCURACY] = {"accuracy", 1, 1}, [COMP_METRIC_F1_MACRO] = {"f1_macro", 1, 1},
    [COMP_METRIC_F1_MICRO] = {"f1_micro", 1, 1}, [COMP_METRIC_RMSE] = {"rmse", 0, 1},
    [COMP_METRIC_MAE] = {"mae", 0, 1},           [COMP_METRIC_LOGLOSS] = {"logloss", 0, 1},
    [COMP_METRIC_AUC] = {"auc", 1, 1},           [COMP_METRIC_MAPK] = {"map@k", 1, 1},
};

int comp_metric_parse(comp_metric_kind *kind, int *k, const char *name)
{
    int i;

    if (k)
        *k = 0;
    if (!name)
        return ed_error_set(ED_EINVAL, "no metric given");
    if (!strncmp(name, "map@", 4)) {
        char *end;
        long v = strtol(name + 4, &end, 10);
        if (name[4] < '1' || name[4] > '9' || *end || v < 1 || v > COMP_MAPK_MAX_K)
            return ed_error_set(ED_EINVAL, "metric '%.40s': K must be 1..%d (e.g. map@5)", name, COMP_MAPK_MAX_K);
        *kind = COMP_METRIC_MAPK;
        if (k)
            *k = (int)v;
        return 0;
    }
    for (i = 0; i < COMP_METRIC_COUNT; i++) {
        if (i != COMP_METRIC_MAPK && !strcmp(name, metric_info[i].name)) {
            *kind = (comp_metric_kind)i;
            return 0;
        }
    }
    return ed_error_set(ED_EINVAL,
                        "unknown metric '%.40s' (known: accuracy, f1_macro, f1_micro, rmse, mae, logloss, auc, map@K)",
                        name);
}

const char *comp_metric_name(comp_metric_kind kind)
{
    return (unsigned)kind < COMP_METRIC_COUNT ? metric_info[kind].name : "?";
}

int comp_metric_higher_is_better(comp_metric_kind kind)
{
    return (unsigned)kind < COMP_METRIC_COUNT ? metric_info[kind].higher : 0;
}

int comp_metric_version(comp_metric_kind kind)
{
    return (unsigned)kind < COMP_METRIC_COUNT ? metric_info[kind].version : 0;
}

/* ---- the split ---------------------------------------------------------- */

static uint64_t splitmix64(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static uint64_t xoshiro(uint64_t s[4])
{
    uint64_t r = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return r;
}

/* Uniform in [0, bound) (Lemire: multiply, reject the biased low part). */
static uint64_t bounded(uint64_t s[4], uint64_t bound)
{
    __uint128_t m = (__uint128_t)xoshiro(s) * bound;
    uint64_t lo = (uint64_t)m;
    if (lo < bound) {
        uint64_t thresh = (0 - bound) % bound;
        while (lo < thresh) {
            m = (__uint128_t)xoshiro(s) * bound;
            lo = (uint64_t)m;
        }
    }
    return (uint64_t)(m >> 64);
}

int comp_split_mask(uint8_t *mask, size_t rows, uint64_t seed, double public_fraction)
{
    uint64_t s[4], x = seed;
    uint32_t *perm;
    size_t i, npub;

    if (!(public_fraction >= 0.0 && public_fraction <= 1.0))
        return ed_error_set(ED_EINVAL, "public fraction %g is not in [0, 1]", public_fraction);
    if (rows > COMP_TRUTH_MAX_ROWS)
        return ed_error_set(ED_ETOOBIG, "%zu rows", rows);
    npub = (size_t)floor((double)rows * public_fraction + 0.5);
    if (npub > rows)
        npub = rows;
    memset(mask, 0, rows);
    if (rows == 0)
        return 0;
    if ((perm = malloc(rows * sizeof(*perm))) == NULL)
        return ed_error_set(ED_ENOMEM, "split permutation of %zu rows", rows);
    for (i = 0; i < 4; i++)
        s[i] = splitmix64(&x);
    for (i = 0; i < rows; i++)
        perm[i] = (uint32_t)i;
    /* Fisher-Yates from the front: position i takes a uniform pick of i..rows-1.
     * Only the first npub positions matter. */
    for (i = 0; i < npub; i++) {
        size_t j = i + (size_t)bounded(s, rows - i);
        uint32_t tmp = perm[i];
        perm[i] = perm[j];
        perm[j] = tmp;
        mask[perm[i]] = 1;
    }
    free(perm);
    return 0;
}

/* ---- string table ------------------------------------------------------- */

/* 8 bytes at a time (ids are short: most take one round). Not keyed: the
 * table is built from the host's truth, and a participant's lookups never
 * insert, so a submission cannot lengthen the probe chains. */
static uint32_t hash_bytes(const char *s, size_t n)
{
    uint64_t h = (uint64_t)n * 0x9E3779B97F4A7C15ull, k;

    while (n >= 8) {
        memcpy(&k, s, 8);
        h = (h ^ k) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
        s += 8;
        n -= 8;
    }
    if (n > 0) {
        k = 0;
        memcpy(&k, s, n);
        h = (h ^ k) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    h *= 0x94D049BB133111EBull;
    return (uint32_t)(h ^ (h >> 32));
}

void comp__strtab_free(comp_strtab *t)
{
    free(t->bytes);
    free(t->off);
    free(t->slot);
    memset(t, 0, sizeof(*t));
}

static uint64_t key8_of(const char *s, size_t len)
{
    uint64_t k = 0;
    memcpy(&k, s, len < 8 ? len : 8);
    return k;
}

uint32_t comp__strtab_prefetch(const comp_strtab *t, const char *s, size_t len)
{
    uint32_t h = hash_bytes(s, len);
    if (t->nslot)
        __builtin_prefetch(&t->slot[h & (t->nslot - 1)]);
    return h;
}

int64_t comp__strtab_find(const comp_strtab *t, const char *s, size_t len)
{
    return comp__strtab_find_hashed(t, s, len, hash_bytes(s, len));
}

int64_t comp__strtab_find_hashed(const comp_strtab *t, const char *s, size_t len, uint32_t h)
{
    uint64_t k8;
    size_t m, i;

    if (t->nslot == 0)
        return -1;
    k8 = key8_of(s, len);
    m = t->nslot - 1;
    for (i = h & m;; i = (i + 1) & m) {
        const comp_slot *sl = &t->slot[i];
        if (sl->idx == 0)
            return -1;
        if (sl->hash == h && sl->key8 == k8) {
            uint32_t v = (sl->idx & ~COMP_SLOT_LONG) - 1;
            if (!(sl->idx & COMP_SLOT_LONG)) {
                if (len <= 8)
                    return v;   /* both at most 8 bytes, no NULs: the padded keys say it all */
            } else if (len > 8) {
                const char *e = t->bytes + t->off[v];
                if (!memcmp(e + 8, s + 8, len - 8) && e[len] == '\0')
                    return v;
            }
        }
    }
}

static void put_slot(comp_slot *tab, size_t nslot, const comp_slot *x)
{
    size_t m = nslot - 1, k = x->hash & m;
    while (tab[k].idx)
        k = (k + 1) & m;
    tab[k] = *x;
}

void *comp__big_calloc(size_t n, size_t size)
{
    size_t bytes = n * size;
    void *p = NULL;

    if (size && bytes / size != n)
        return NULL;
    if (bytes < ((size_t)4 << 20))
        return calloc(n ? n : 1, size ? size : 1);
    /* Random lookups over tens of MiB miss the TLB on 4 KiB pages: ask for
     * transparent huge pages (THP "madvise" mode is Debian's default). */
    if (posix_memalign(&p, (size_t)2 << 20, bytes) != 0)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    memset(p, 0, bytes);
    return p;
}

void *comp__big_realloc(void *p, size_t old_bytes, size_t new_bytes)
{
    void *q;

    if (new_bytes < ((size_t)4 << 20))
        return realloc(p, new_bytes);
    if (posix_memalign(&q, (size_t)2 << 20, new_bytes) != 0)
        return NULL;
    (void)madvise(q, new_bytes, MADV_HUGEPAGE);
    if (p)
        memcpy(q, p, old_bytes < new_bytes ? old_bytes : new_bytes);
    free(p);
    return q;
}

static int grow_slots(comp_strtab *t)
{
    size_t ns = t->nslot ? t->nslot * 2 : 64, i;
    comp_slot *sl = comp__big_calloc(ns, sizeof(*sl));

    if (!sl)
        return ED_ENOMEM;
    for (i = 0; i < t->nslot; i++)
        if (t->slot[i].idx)
            put_slot(sl, ns, &t->slot[i]);
    free(t->slot);
    t->slot = sl;
    t->nslot = ns;
    return 0;
}

int comp__strtab_reserve(comp_strtab *t, size_t n, size_t bytes)
{
    if (n > t->ncap) {
        uint64_t *o = comp__big_realloc(t->off, t->ncap * sizeof(*o), n * sizeof(*o));
        if (!o)
            return ED_ENOMEM;
        t->off = o;
        t->ncap = n;
    }
    if (bytes > t->bcap) {
        char *b = comp__big_realloc(t->bytes, t->blen, bytes);
        if (!b)
            return ED_ENOMEM;
        t->bytes = b;
        t->bcap = bytes;
    }
    return 0;
}

int64_t comp__strtab_append(comp_strtab *t, const char *s, size_t len)
{
    if (t->n >= (size_t)(COMP_SLOT_LONG - 2))
        return ED_ENOMEM;
    if (t->n == t->ncap) {
        size_t nc = t->ncap ? t->ncap * 2 : 64;
        uint64_t *o = comp__big_realloc(t->off, t->ncap * sizeof(*o), nc * sizeof(*o));
        if (!o)
            return ED_ENOMEM;
        t->off = o;
        t->ncap = nc;
    }
    if (t->blen + len + 1 > t->bcap) {
        size_t nc = t->bcap ? t->bcap * 2 : 4096;
        char *b;
        while (nc < t->blen + len + 1)
            nc *= 2;
        if ((b = comp__big_realloc(t->bytes, t->blen, nc)) == NULL)
            return ED_ENOMEM;
        t->bytes = b;
        t->bcap = nc;
    }
    memcpy(t->bytes + t->blen, s, len);
    t->bytes[t->blen + len] = '\0';
    t->off[t->n] = t->blen;
    t->blen += len + 1;
    return (int64_t)t->n++;
}

static void slot_of(comp_slot *x, const char *s, size_t len, size_t idx)
{
    x->hash = hash_bytes(s, len);
    x->idx = ((uint32_t)idx + 1) | (len > 8 ? COMP_SLOT_LONG : 0);
    x->key8 = key8_of(s, len);
}

int64_t comp__strtab_add(comp_strtab *t, const char *s, size_t len)
{
    comp_slot x;
    int64_t i;

    if ((t->n + 1) * 10 > t->nslot * 7 && grow_slots(t) < 0)
        return ED_ENOMEM;
    if ((i = comp__strtab_append(t, s, len)) < 0)
        return i;
    slot_of(&x, s, len, (size_t)i);
    put_slot(t->slot, t->nslot, &x);
    return i;
}

#define INDEX_AHEAD 16

int comp__strtab_index(comp_strtab *t, size_t *dup_first, size_t *dup_second)
{
    comp_slot ring[INDEX_AHEAD];
    size_t ns = 64, i, m;

    while (t->n * 10 > ns * 7)
        ns *= 2;
    free(t->slot);
    if ((t->slot = comp__big_calloc(ns, sizeof(*t->slot))) == NULL) {
        t->nslot = 0;
        return ED_ENOMEM;
    }
    t->nslot = ns;
    m = ns - 1;
    /* Hash INDEX_AHEAD strings ahead and prefetch their slots, so the
     * table's cache misses overlap instead of queueing one by one. */
    for (i = 0; i < t->n + INDEX_AHEAD; i++) {
        if (i >= INDEX_AHEAD) {
            const comp_slot *x = &ring[(i - INDEX_AHEAD) % INDEX_AHEAD];
            size_t row = i - INDEX_AHEAD, k;
            const char *s = t->bytes + t->off[row];
            size_t len = strlen(s);
            for (k = x->hash & m; t->slot[k].idx; k = (k + 1) & m) {
                const comp_slot *o = &t->slot[k];
                if (o->hash == x->hash && o->key8 == x->key8 && (o->idx & COMP_SLOT_LONG) == (x->idx & COMP_SLOT_LONG)) {
                    size_t v = (o->idx & ~COMP_SLOT_LONG) - 1;
                    if (len <= 8 || !strcmp(t->bytes + t->off[v], s)) {
                        *dup_first = v;
                        *dup_second = row;
                        return ED_EEXISTS;
                    }
                }
            }
            t->slot[k] = *x;
        }
        if (i < t->n) {
            const char *s = t->bytes + t->off[i];
            slot_of(&ring[i % INDEX_AHEAD], s, strlen(s), i);
            __builtin_prefetch(&t->slot[ring[i % INDEX_AHEAD].hash & m], 1);
        }
    }
    return 0;
}

/* ---- accumulators ------------------------------------------------------- */

int comp__acc_init(comp_acc *a, const comp_truth *t)
{
    memset(a, 0, sizeof(*a));
    if (t->metric == COMP_METRIC_F1_MACRO || t->metric == COMP_METRIC_F1_MICRO) {
        a->ncls = t->classes.n;
        a->ccap = a->ncls + 16;
        a->tp = calloc(2 * a->ccap, sizeof(int64_t));
        a->fp = calloc(2 * a->ccap, sizeof(int64_t));
        a->fn = calloc(2 * a->ccap, sizeof(int64_t));
        if (!a->tp || !a->fp || !a->fn)
            goto nomem;
    }
    if (t->metric == COMP_METRIC_AUC && t->ids.n > 0) {
        a->auc_k = t->classes.n > 2 ? t->classes.n : 1;
        a->auc_cap = t->ids.n;
        if ((a->auc = comp__big_calloc(t->ids.n * a->auc_k, sizeof(*a->auc))) == NULL)
            goto nomem;
    }
    return 0;
nomem:
    comp__acc_free(a);
    return ED_ENOMEM;
}

void comp__acc_free(comp_acc *a)
{
    free(a->tp);
    free(a->fp);
    free(a->fn);
    free(a->auc);
    comp__strtab_free(&a->extra);
    memset(a, 0, sizeof(*a));
}

static int grow_classes(comp_acc *a)
{
    size_t nc = a->ccap * 2, s;
    int64_t *arr[3] = {a->tp, a->fp, a->fn}, *n[3];
    int i;

    for (i = 0; i < 3; i++) {
        if ((n[i] = calloc(2 * nc, sizeof(int64_t))) == NULL) {
            while (i-- > 0)
                free(n[i]);
            return ED_ENOMEM;
        }
        for (s = 0; s < 2; s++)
            memcpy(n[i] + s * nc, arr[i] + s * a->ccap, a->ccap * sizeof(int64_t));
    }
    free(a->tp);
    free(a->fp);
    free(a->fn);
    a->tp = n[0];
    a->fp = n[1];
    a->fn = n[2];
    a->ccap = nc;
    return 0;
}

int comp__acc_label(comp_acc *a, const comp_truth *t, size_t row, const char *s, size_t len)
{
    int pub = t->public_mask ? t->public_mask[row] : 1;
    uint32_t truth = t->cls[row];
    const char *ts = comp__strtab_get(&t->classes, truth);
    int64_t c;

    /* the truth's own label first (a right answer needs no lookup) */
    if (strncmp(ts, s, len) == 0 && ts[len] == '\0')
        c = (int64_t)truth;
    else
        c = comp__strtab_find(&t->classes, s, len);
    a->n[pub]++;
    if (c == (int64_t)truth)
        a->correct[pub]++;
    if (!a->tp)
        return 0;
    if (c < 0) {
        int64_t e = comp__strtab_find(&a->extra, s, len);
        if (e < 0 && (e = comp__strtab_add(&a->extra, s, len)) < 0)
            return ED_ENOMEM;
        c = (int64_t)t->classes.n + e;
        if ((size_t)c >= a->ccap && grow_classes(a) < 0)
            return ED_ENOMEM;
        if ((size_t)c + 1 > a->ncls)
            a->ncls = (size_t)c + 1;
    }
    if (c == (int64_t)truth) {
        a->tp[pub * a->ccap + truth]++;
    } else {
        a->fp[pub * a->ccap + (size_t)c]++;
        a->fn[pub * a->ccap + truth]++;
    }
    return 0;
}

void comp__acc_value(comp_acc *a, const comp_truth *t, size_t row, double p)
{
    int pub = t->public_mask ? t->public_mask[row] : 1;
    double d = t->y[row] - p;

    a->n[pub]++;
    a->sum[pub] += t->metric == COMP_METRIC_RMSE ? d * d : fabs(d);
}

#define LOGLOSS_EPS 2.220446049250313e-16   /* np.finfo(np.float64).eps, sklearn 1.2's "auto" */

static double clip01(double p)
{
    return p < LOGLOSS_EPS ? LOGLOSS_EPS : p > 1 - LOGLOSS_EPS ? 1 - LOGLOSS_EPS : p;
}

void comp__acc_logloss(comp_acc *a, const comp_truth *t, size_t row, const double *probs, double p1)
{
    int pub = t->public_mask ? t->public_mask[row] : 1;
    uint32_t y = t->cls[row];
    double num, den = 0;
    size_t c;

    if (probs) {
        for (c = 0; c < t->classes.n; c++)
            den += clip01(probs[c]);
        num = clip01(probs[y]);
    } else {
        /* sklearn: clip the one column, then stack [1 - p, p] and renormalise. */
        double p = clip01(p1);
        den = (1 - p) + p;
        num = y == t->positive ? p : 1 - p;
    }
    a->n[pub]++;
    a->sum[pub] += -log(num / den);
}

void comp__acc_auc(comp_acc *a, const comp_truth *t, size_t row, double score)
{
    int pub = t->public_mask ? t->public_mask[row] : 1;

    a->auc[a->nauc].s = score;
    a->auc[a->nauc].pos = t->cls[row] == t->positive;
    a->auc[a->nauc].pub = (uint32_t)pub;
    a->nauc++;
    a->n[pub]++;
}

void comp__acc_auc_multi(comp_acc *a, const comp_truth *t, size_t row, const double *probs)
{
    int pub = t->public_mask ? t->public_mask[row] : 1;

    for (size_t c = 0; c < a->auc_k; c++) {
        struct comp_auc_item *it = &a->auc[c * a->auc_cap + a->nauc];
        it->s = probs[c];
        it->pos = t->cls[row] == c;
        it->pub = (uint32_t)pub;
    }
    a->nauc++;
    a->n[pub]++;
}

/* Next space-separated token of s[*i..n): its start and length; 0 at the end. */
static int next_tok(const char *s, size_t n, size_t *i, const char **tok, size_t *tlen)
{
    size_t k = *i;

    while (k < n && s[k] == ' ')
        k++;
    if (k == n)
        return 0;
    *tok = s + k;
    while (k < n && s[k] != ' ')
        k++;
    *tlen = (size_t)(s + k - *tok);
    *i = k;
    return 1;
}

static int tok_in(const char *s, size_t n, size_t limit_tokens, const char *tok, size_t tlen)
{
    size_t i = 0, seen = 0, l;
    const char *x;

    while (seen < limit_tokens && next_tok(s, n, &i, &x, &l)) {
        if (l == tlen && !memcmp(x, tok, l))
            return 1;
        seen++;
    }
    return 0;
}

/* Kaggle's ml_metrics apk():
 *     if len(predicted) > k: predicted = predicted[:k]
 *     for i, p in enumerate(predicted):
 *         if p in actual and p not in predicted[:i]: hits += 1; score += hits / (i + 1)
 *     if not actual: return 0.0
 *     return score / min(len(actual), k)
 * with both lists from str.split() on spaces. */
double comp__apk(const char *actual, size_t alen, const char *pred, size_t plen, int k)
{
    size_t i = 0, na = 0, pi = 0, l;
    const char *x;
    double score = 0, hits = 0;

    while (next_tok(actual, alen, &i, &x, &l))
        na++;
    if (na == 0)
        return 0.0;
    i = 0;
    while ((int)pi < k && next_tok(pred, plen, &i, &x, &l)) {
        if (tok_in(actual, alen, (size_t)-1, x, l) && !tok_in(pred, plen, pi, x, l)) {
            hits += 1;
            score += hits / (double)(pi + 1);
        }
        pi++;
    }
    return score / (double)(na < (size_t)k ? na : (size_t)k);
}

void comp__acc_mapk(comp_acc *a, const comp_truth *t, size_t row, const char *s, size_t len)
{
    int pub = t->public_mask ? t->public_mask[row] : 1;
    const char *act = comp__strtab_get(&t->lists, row);

    a->n[pub]++;
    a->sum[pub] += comp__apk(act, strlen(act), s, len, t->k);
}

static int cmp_auc(const void *x, const void *y)
{
    double a = ((const struct comp_auc_item *)x)->s, b = ((const struct comp_auc_item *)y)->s;
    return a < b ? -1 : a > b;
}

/* Mann-Whitney with tied scores counted half: equal to the trapezoidal area
 * under the ROC curve sklearn computes. Both subsets in one sorted pass. */
static void auc_segment(struct comp_auc_item *items, size_t nitems, double out[2])
{
    double npos[2] = {0, 0}, nneg[2] = {0, 0}, negbelow[2] = {0, 0}, area[2] = {0, 0};
    size_t i = 0, j;
    int s;

    qsort(items, nitems, sizeof(*items), cmp_auc);
    while (i < nitems) {
        double gp[2] = {0, 0}, gn[2] = {0, 0};
        for (j = i; j < nitems && items[j].s == items[i].s; j++) {
            if (items[j].pos)
                gp[items[j].pub] += 1;
            else
                gn[items[j].pub] += 1;
        }
        for (s = 0; s < 2; s++) {
            area[s] += gp[s] * (negbelow[s] + 0.5 * gn[s]);
            negbelow[s] += gn[s];
            npos[s] += gp[s];
            nneg[s] += gn[s];
        }
        i = j;
    }
    for (s = 0; s < 2; s++)
        out[s] = npos[s] > 0 && nneg[s] > 0 ? area[s] / (npos[s] * nneg[s]) : NAN;
}

/* Binary: one segment. One-vs-rest: each class's segment (its column's
 * scores, positive = that class), then the unweighted mean (macro), as
 * sklearn's roc_auc_score(multi_class="ovr", average="macro"); a class
 * without positives or negatives in a subset makes it NaN there (the split
 * refuses that). */
static void auc_finish(comp_acc *a, double out[2])
{
    double sum[2] = {0, 0}, one[2];

    if (a->auc_k <= 1) {
        auc_segment(a->auc, a->nauc, out);
        return;
    }
    for (size_t c = 0; c < a->auc_k; c++) {
        auc_segment(a->auc + c * a->auc_cap, a->nauc, one);
        sum[0] += one[0];
        sum[1] += one[1];
    }
    out[0] = sum[0] / (double)a->auc_k;
    out[1] = sum[1] / (double)a->auc_k;
}

static double f1_of(const comp_acc *a, int s, int macro)
{
    size_t c;
    double sum = 0, cnt = 0, tp = 0, fp = 0, fn = 0;

    for (c = 0; c < a->ncls; c++) {
        double ctp = (double)a->tp[s * a->ccap + c], cfp = (double)a->fp[s * a->ccap + c],
               cfn = (double)a->fn[s * a->ccap + c];
        if (ctp + cfp + cfn == 0)
            continue;   /* the label is in neither y_true nor y_pred of this subset */
        sum += 2 * ctp / (2 * ctp + cfp + cfn);
        cnt += 1;
        tp += ctp;
        fp += cfp;
        fn += cfn;
    }
    if (macro)
        return cnt > 0 ? sum / cnt : NAN;
    return tp + fp + fn > 0 ? 2 * tp / (2 * tp + fp + fn) : NAN;
}

int comp__acc_finish(comp_acc *a, const comp_truth *t, double *pub, double *priv)
{
    double v[2];
    int s;

    if (t->metric == COMP_METRIC_AUC) {
        auc_finish(a, v);
    } else {
        for (s = 0; s < 2; s++) {
            double n = (double)a->n[s];
            switch (t->metric) {
            case COMP_METRIC_ACCURACY:
                v[s] = n > 0 ? (double)a->correct[s] / n : NAN;
                break;
            case COMP_METRIC_F1_MACRO:
            case COMP_METRIC_F1_MICRO:
                v[s] = f1_of(a, s, t->metric == COMP_METRIC_F1_MACRO);
                break;
            case COMP_METRIC_RMSE:
                v[s] = n > 0 ? sqrt(a->sum[s] / n) : NAN;
                break;
            default:
                v[s] = n > 0 ? a->sum[s] / n : NAN;
                break;
            }
        }
    }
    *pub = v[1];
    *priv = v[0];
    return 0;
}
