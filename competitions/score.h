/*
 * score.h - scoring a CSV submission against a competition's hidden truth:
 * the built-in metrics, the public/private split and submission validation.
 *
 * No Python and no subprocess on this path: the truth is parsed once into a
 * compact table (comp_truth), the split is a mask over its rows, and a
 * submission is streamed from a file descriptor, validated and scored in one
 * pass, giving the public and the private score together.
 *
 *     comp_score_spec spec = {.metric = "rmse", .id_column = "id",
 *                             .target_column = "price"};
 *     comp_truth *t;
 *     comp_score_result r;
 *     comp_score_error e;
 *     if (comp_truth_load(&t, truth_fd, &spec) < 0)       // host's error
 *         ...ed_error_last()...
 *     if (comp_truth_split(t, seed, 0.3) < 0) ...
 *     if (comp_score_submission(&r, &e, t, sub_fd) < 0)   // e.cls, e.message
 *         ...
 *     comp_truth_free(t);
 *
 * Threads: a comp_truth is read-only after comp_truth_split(); any number of
 * threads may score submissions against it at once. Each call allocates its
 * own working memory and frees it before returning.
 *
 * Memory (bounded, stated per truth row):
 *   truth: the id's bytes + 1, an 8-byte offset, 23 to 46 bytes of index
 *          (16-byte slots kept 35-70% full), 1 byte of split; plus 8 bytes
 *          for a numeric target, 4 for a class, or the label list's bytes + 9
 *          for map@k. About 60 bytes a row for short ids; capped by
 *          spec.truth_max_bytes (file size) and COMP_TRUTH_MAX_ROWS. Arrays of
 *          4 MiB or more are asked for transparent huge pages (random
 *          lookups otherwise miss the TLB on every row).
 *   scoring: 4 bytes per truth row (the line each id was seen on), 16 more
 *          for auc (scores kept for one sort), 48 per class (confusion
 *          counts), plus the reader's fixed 2 MiB buffer and one record of
 *          at most COMP_CSV_MAX_RECORD.
 *
 * Ownership: comp_truth_load() hands the caller a truth to free with
 * comp_truth_free() (NULL-safe). Strings in comp_score_spec are copied.
 */
#ifndef COMP_SCORE_H
#define COMP_SCORE_H

#include <stddef.h>
#include <stdint.h>

/* Bounds on what a truth or a submission may hold. */
#define COMP_CSV_MAX_FIELD     65536          /* bytes in one field */
#define COMP_CSV_MAX_RECORD    (1u << 20)     /* bytes in one record (line) */
#define COMP_CSV_MAX_COLUMNS   1024           /* fields in one record */
#define COMP_TRUTH_MAX_ROWS    50000000       /* rows in a truth */
#define COMP_SUB_DEFAULT_MAX_BYTES  ((int64_t)256 << 20)   /* submission cap */
#define COMP_TRUTH_DEFAULT_MAX_BYTES ((int64_t)2 << 30)    /* truth file cap */
#define COMP_MAPK_MAX_K        1000
#define COMP_AUC_MAX_CLASSES   100            /* multi-class auc: 16 bytes per row per class */

/* The built-in metrics. */
typedef enum comp_metric_kind {
    COMP_METRIC_ACCURACY = 0, /* share of exact label matches */
    COMP_METRIC_F1_MACRO,     /* unweighted mean of per-class F1 (sklearn average="macro") */
    COMP_METRIC_F1_MICRO,     /* F1 over pooled counts (sklearn average="micro") */
    COMP_METRIC_RMSE,         /* sqrt(mean((y - p)^2)) */
    COMP_METRIC_MAE,          /* mean(|y - p|) */
    COMP_METRIC_LOGLOSS,      /* sklearn log_loss: clip to [eps, 1-eps], eps = 2^-52, rows renormalised */
    COMP_METRIC_AUC,          /* ROC AUC, ties as sklearn roc_auc_score; more than two classes:
                               * one-vs-rest macro (multi_class="ovr", average="macro") */
    COMP_METRIC_MAPK,         /* Kaggle's MAP@K over space-separated label lists */
    COMP_METRIC_COUNT
} comp_metric_kind;

/* Parse a metric name: "accuracy", "f1_macro", "f1_micro", "rmse", "mae",
 * "logloss", "auc", "map@K" (K in 1..COMP_MAPK_MAX_K, e.g. "map@5").
 * *kind gets the metric, *k the K of map@K (0 for the others; k may be NULL).
 * ED_EINVAL names the metrics it knows. */
int comp_metric_parse(comp_metric_kind *kind, int *k, const char *name);

/* The metric's canonical name ("map@k" for map@K); "?" when out of range. */
const char *comp_metric_name(comp_metric_kind kind);

/* 1 when a higher score is better (accuracy, f1_*, auc, map@k), 0 when a
 * lower one is (rmse, mae, logloss). */
int comp_metric_higher_is_better(comp_metric_kind kind);

/* The metric's version: stored beside every score so that a change in how a
 * metric is computed makes a rescore explicit. Starts at 1. */
int comp_metric_version(comp_metric_kind kind);

/* What a competition scores, from its configuration.
 *
 * Truth CSV: a header naming at least id_column and target_column, one row
 * per id (ids unique, any bytes but valid UTF-8). The target is a number for
 * rmse/mae; a class label (compared as exact strings) for accuracy, f1_*,
 * logloss and auc; a space-separated label list for map@K.
 *
 * Submission CSV: a header with exactly these columns, in any order:
 *   - id_column, and
 *   - accuracy, f1_*, rmse, mae, map@K: target_column (a label, a number, or
 *     a space-separated list of up to K predicted labels: more are ignored);
 *   - logloss, auc: one probability column per class, named by the class
 *     label; or, when the truth has two classes, either that or target_column
 *     alone holding the probability of the positive class (the greater label:
 *     numeric order when every label is a number, byte order otherwise, as
 *     sklearn sorts them).
 * One row per truth id, in any order. */
typedef struct comp_score_spec {
    const char *metric;         /* as comp_metric_parse() reads it */
    const char *id_column;      /* e.g. "id" */
    const char *target_column;  /* e.g. "label" */
    int64_t sub_max_bytes;      /* submission size cap; 0: COMP_SUB_DEFAULT_MAX_BYTES */
    int64_t truth_max_bytes;    /* truth size cap; 0: COMP_TRUTH_DEFAULT_MAX_BYTES */
} comp_score_spec;

typedef struct comp_truth comp_truth;

/* Read the truth from fd (read from its current offset to the end; not
 * closed). The spec's strings are copied. Errors (messages are for the host
 * and may quote the truth: never show them to a participant):
 *   ED_EINVAL  unknown metric, bad CSV (line and column given), missing
 *              column, duplicate id, a target that does not parse, a
 *              classification truth with fewer than two classes for auc/logloss
 *   ED_ETOOBIG over truth_max_bytes, COMP_TRUTH_MAX_ROWS or a field/record bound
 *   ED_EIO     read failure; ED_ENOMEM. */
int comp_truth_load(comp_truth **out, int fd, const comp_score_spec *spec);

/* Frees the truth; NULL-safe. */
void comp_truth_free(comp_truth *t);

/* Rows in the truth. */
size_t comp_truth_rows(const comp_truth *t);

/* Bytes the truth holds in memory (for the caller's accounting). */
size_t comp_truth_memory(const comp_truth *t);

/* The metric the truth was loaded for. */
comp_metric_kind comp_truth_metric(const comp_truth *t);

/* The public/private split: mask[i] = 1 when truth row i (in file order) is
 * public, 0 when private. Exactly round(rows * public_fraction) rows are
 * public (round half up), chosen by a Fisher-Yates shuffle of 0..rows-1
 * driven by xoshiro256** seeded through splitmix64(seed) (the four state words
 * are four successive splitmix64 outputs), with unbiased bounded draws
 * (Lemire's multiply-and-reject); the first n public indices of the shuffle
 * are public. Same seed, fraction and rows give the same mask everywhere.
 * public_fraction must be in [0, 1]. mask holds rows bytes. ED_EINVAL,
 * ED_ENOMEM (a 4-byte-per-row scratch permutation). */
int comp_split_mask(uint8_t *mask, size_t rows, uint64_t seed, double public_fraction);

/* Set the truth's split with comp_split_mask(). Must be called once before
 * scoring (a truth without a split scores every row as public). For auc,
 * ED_EINVAL when the public or the private rows (where there are any) hold
 * a single class: the score would be undefined. */
int comp_truth_split(comp_truth *t, uint64_t seed, double public_fraction);

/* Why a submission failed. cls is "invalid_output" for anything wrong with
 * the submission itself (safe to show its author: it never quotes the truth,
 * only the submission), "platform_error" for a read failure or out of
 * memory. line is the 1-based physical line where the problem is (0 when it
 * is about the whole file), column the 1-based field (0 when none). The
 * message already includes them. */
typedef struct comp_score_error {
    char cls[24];
    char message[512];
    int64_t line;
    int column;
} comp_score_error;

/* One scored submission. A score over zero rows (an empty public or private
 * part) is NaN; rows says how many rows it covers. */
typedef struct comp_score_result {
    double public_score;
    double private_score;
    int64_t public_rows;
    int64_t private_rows;
    comp_metric_kind metric;
    int metric_version;
} comp_score_result;

/* Validate the submission read from fd (current offset to end; not closed)
 * against t and score it. On success fills *out and returns 0. On failure
 * fills *err (err may be NULL) and returns:
 *   ED_EUNPROC  the submission is invalid (err->cls "invalid_output"):
 *               empty file; size over the cap; UTF-16 or invalid UTF-8;
 *               missing header or wrong columns (named); a record with the
 *               wrong number of fields; bad quoting; a field or record over
 *               its bound; an unknown, duplicate or missing id (how many, the
 *               first few); a wrong row count; NaN or infinity; a number that
 *               does not parse; a logloss probability outside [0, 1]
 *   ED_EIO, ED_ENOMEM (err->cls "platform_error").
 * The message is also set with ed_error_set(). */
int comp_score_submission(comp_score_result *out, comp_score_error *err, const comp_truth *t, int fd);

#endif
