/*
 * score_int.h - internals shared by score.c and metrics.c (private to
 * competitions/).
 */
#ifndef COMP_SCORE_INT_H
#define COMP_SCORE_INT_H

#include "score.h"

#include <stddef.h>
#include <stdint.h>

/* An interned set of byte strings: index i in 0..n, lookups by content.
 * A slot holds the hash, the index and the first 8 bytes of the string, so
 * a lookup of an id of at most 8 bytes (the common case: row numbers) reads
 * one cache line and never the string itself (scoring a shuffled 1M-row
 * submission is bound by these misses). Memory: the bytes + 1 and an 8-byte
 * offset per string, and 16-byte slots, at most 70% full. */
typedef struct comp_slot {
    uint32_t hash;
    uint32_t idx;       /* index + 1 (0: empty); COMP_SLOT_LONG set: longer than 8 bytes */
    uint64_t key8;      /* the first 8 bytes, zero-padded (ids hold no NUL) */
} comp_slot;
#define COMP_SLOT_LONG 0x80000000u

typedef struct comp_strtab {
    char *bytes;        /* NUL-terminated strings back to back */
    size_t blen, bcap;
    uint64_t *off;      /* string i starts at bytes + off[i] */
    size_t n, ncap;
    comp_slot *slot;    /* open addressing, linear probing */
    size_t nslot;       /* a power of two */
} comp_strtab;

/* calloc(), on 2 MiB-aligned memory advised for huge pages when it is 4 MiB
 * or more; freed with free(). */
void *comp__big_calloc(size_t n, size_t size);
/* realloc() the same way: keeps min(old_bytes, new_bytes); NULL leaves p. */
void *comp__big_realloc(void *p, size_t old_bytes, size_t new_bytes);

void comp__strtab_free(comp_strtab *t);
/* Index of s[0..len), or -1. */
int64_t comp__strtab_find(const comp_strtab *t, const char *s, size_t len);
/* The same with s's hash from comp__strtab_prefetch(), which also starts
 * loading the slot it will look at. */
int64_t comp__strtab_find_hashed(const comp_strtab *t, const char *s, size_t len, uint32_t hash);
uint32_t comp__strtab_prefetch(const comp_strtab *t, const char *s, size_t len);
/* Make room for n strings of `bytes` bytes in all (their NULs included)
 * without growing. 0, or ED_ENOMEM (the table unchanged). */
int comp__strtab_reserve(comp_strtab *t, size_t n, size_t bytes);
/* Add s (must not be present): its index, or ED_ENOMEM. */
int64_t comp__strtab_add(comp_strtab *t, const char *s, size_t len);
/* Append s without indexing it (a list, or a table indexed later): its
 * index, or ED_ENOMEM. */
int64_t comp__strtab_append(comp_strtab *t, const char *s, size_t len);
/* (Re)build the lookup index over every string, prefetching ahead. 0;
 * ED_EEXISTS with *dup_first < *dup_second the first pair of equal strings
 * (by the second's index); ED_ENOMEM. */
int comp__strtab_index(comp_strtab *t, size_t *dup_first, size_t *dup_second);
static inline const char *comp__strtab_get(const comp_strtab *t, size_t i) { return t->bytes + t->off[i]; }

struct comp_truth {
    comp_metric_kind metric;
    int k;                      /* map@K's K */
    char *id_column, *target_column;
    int64_t sub_max_bytes;
    comp_strtab ids;            /* row i's id */
    comp_strtab classes;        /* class labels (classification metrics) */
    uint32_t *cls;              /* row -> class index (classification) */
    double *y;                  /* row -> target (rmse, mae) */
    comp_strtab lists;          /* row -> label list (map@K), in row order */
    uint8_t *public_mask;       /* row -> 1 public, 0 private; NULL: all public */
    uint32_t *class_order;      /* classes sorted as sklearn sorts them */
    /* Ids that are all canonical decimal integers (no sign, no leading
     * zero, at most 18 digits) within a range of at most 2 rows + 1024
     * values (Kaggle's usual ids) are looked up by value instead of by
     * hash: dense[v - dense_min] = row + 1 (0: none), 4 bytes per value,
     * and ids.slot stays empty; dense NULL with dense_len > 0: the ids are
     * dense_min, dense_min + 1, ... in file order (row = v - dense_min, no
     * array). dense_len 0: the hash index. */
    uint32_t *dense;
    uint64_t dense_min;
    size_t dense_len;
    uint32_t positive;          /* binary: the positive class (the greater) */
};

/* Per-subset accumulators (0: private rows, 1: public rows). */
typedef struct comp_acc {
    int64_t n[2];
    int64_t correct[2];
    double sum[2];              /* squared/absolute error, loss, apk */
    int64_t *tp, *fp, *fn;      /* [2 * nclass_all]: subset s at s * cap + c */
    size_t ncls, ccap;          /* classes known (truth + unknown predicted) */
    comp_strtab extra;          /* predicted labels the truth does not have */
    /* auc: (score, positive?, subset) per scored row */
    struct comp_auc_item { double s; uint32_t pos; uint32_t pub; } *auc;
    size_t nauc;
    size_t auc_k, auc_cap;      /* segments (1, or the classes: one-vs-rest), rows each */
} comp_acc;

int comp__acc_init(comp_acc *a, const comp_truth *t);
void comp__acc_free(comp_acc *a);
/* A predicted label for row (accuracy, f1): interned into extra when unknown. */
int comp__acc_label(comp_acc *a, const comp_truth *t, size_t row, const char *s, size_t len);
/* The loss terms for one row. */
void comp__acc_value(comp_acc *a, const comp_truth *t, size_t row, double p);
/* Log loss: probs[c] per truth class c (unclipped), or NULL with p1 the
 * positive class's probability. */
void comp__acc_logloss(comp_acc *a, const comp_truth *t, size_t row, const double *probs, double p1);
/* AUC: the positive class's score. */
void comp__acc_auc(comp_acc *a, const comp_truth *t, size_t row, double score);
/* Multi-class AUC: probs[c] per truth class c (by class index). */
void comp__acc_auc_multi(comp_acc *a, const comp_truth *t, size_t row, const double *probs);
/* MAP@K: the predicted list. */
void comp__acc_mapk(comp_acc *a, const comp_truth *t, size_t row, const char *s, size_t len);
/* Final scores; ED_ENOMEM (auc sort needs none, but keep the shape). */
int comp__acc_finish(comp_acc *a, const comp_truth *t, double *pub, double *priv);

/* A truth id's row, or -1: the dense index or the hash index. */
int64_t comp__truth_find(const comp_truth *t, const char *s, size_t len);
/* The canonical decimal value of s[0..len) (see comp_truth.dense), or -1. */
static inline int64_t comp__canon_uint(const char *s, size_t len)
{
    uint64_t v = 0;

    if (len == 0 || len > 18 || (len > 1 && s[0] == '0'))
        return -1;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)s[i] - '0';
        if (d > 9)
            return -1;
        v = v * 10 + d;
    }
    return (int64_t)v;
}
/* The dense index's row for value v (from comp__canon_uint), or -1. */
static inline int64_t comp__dense_row(const comp_truth *t, int64_t v)
{
    uint64_t k = (uint64_t)v - t->dense_min;

    if (v < 0 || k >= t->dense_len)
        return -1;
    return t->dense != NULL ? (int64_t)t->dense[k] - 1 : (int64_t)k;
}

/* Kaggle's apk over space-separated lists. */
double comp__apk(const char *actual, size_t alen, const char *pred, size_t plen, int k);

#endif
