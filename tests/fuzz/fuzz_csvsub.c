/*
 * fuzz_csvsub.c - CSV submissions and truths (competitions/csvsub.c, the
 * validation and scoring in score.c, the metrics in metrics.c), which read
 * files participants and hosts upload.
 *
 * Input: byte 0 picks the metric (bits 0-2: accuracy, f1_macro, f1_micro,
 * rmse, mae, logloss, auc, map@3) and what the rest is (bit 3 clear: a
 * submission scored against a fixed small truth split 50/50; set: a truth).
 * Contract checked: the reader's records hold at most COMP_CSV_MAX_COLUMNS
 * NUL-terminated, valid UTF-8 fields of at most COMP_CSV_MAX_FIELD bytes; a
 * submission is either scored (rows add up to the truth's, a finite score
 * for every non-empty part) or refused as invalid_output with a message; a
 * truth loads or is refused with ED_EINVAL/ED_ETOOBIG.
 */
#include "fuzz.h"

#include "csvsub.h"
#include "score.h"

#include "ed_error.h"

#include <fcntl.h>
#include <math.h>
#include <unistd.h>

static const char *const metrics[] = {"accuracy", "f1_macro", "f1_micro", "rmse", "mae", "logloss", "auc", "map@3"};
static const char *const truths[] = {
    "id,y\n1,a\n2,b\n3,a\n\"4,x\",c\n", "id,y\n1,a\n2,b\n3,a\n\"4,x\",c\n", "id,y\n1,a\n2,b\n3,a\n\"4,x\",c\n",
    "id,y\n1,1.5\n2,-2\n3,0\n\"4,x\",1e3\n", "id,y\n1,1.5\n2,-2\n3,0\n\"4,x\",1e3\n",
    "id,y\n1,a\n2,b\n3,a\n\"4,x\",c\n", "id,y\n1,0\n2,1\n3,1\n\"4,x\",0\n", "id,y\n1,a b\n2,\n3,c a\n\"4,x\",b\n"};

/* The reader's fast path (plain lines) and its general parser read every
 * input alike: the same records, the same error at the same place. */
static void check_fast_path(const uint8_t *data, size_t size)
{
    char path[64];
    comp_csv a, b;
    int fa = fuzz_memfile(path, data, size), fb, ra, rb, i;

    fb = open(path, O_RDONLY | O_CLOEXEC);
    if (fb < 0)
        abort();
    if (comp__csv_open(&a, fa, 1 << 20) < 0) {
        close(fb);
        return;
    }
    if (comp__csv_open(&b, fb, 1 << 20) < 0) {
        comp__csv_close(&a);
        close(fb);
        return;
    }
    b.slow_only = 1;
    do {
        ra = comp__csv_next(&a);
        rb = comp__csv_next(&b);
        if (ra != rb)
            abort();
        if (ra == 1) {
            if (a.nfields != b.nfields || a.rec_line != b.rec_line)
                abort();
            for (i = 0; i < a.nfields; i++)
                if (a.flen[i] != b.flen[i] || memcmp(a.field[i], b.field[i], a.flen[i] + 1) != 0)
                    abort();
        } else if (ra < 0 && (strcmp(a.err, b.err) != 0 || a.err_line != b.err_line || a.err_col != b.err_col)) {
            abort();
        }
    } while (ra == 1);
    comp__csv_close(&a);
    comp__csv_close(&b);
    close(fb);
}

static void check_reader(const uint8_t *data, size_t size)
{
    char path[64];
    comp_csv r;
    int fd, rc, i;

    check_fast_path(data, size);
    fd = fuzz_memfile(path, data, size);
    if (comp__csv_open(&r, fd, 1 << 20) < 0) {
        if (r.err_code != ED_EUNPROC && r.err_code != ED_ENOMEM)
            abort();
        return;
    }
    while ((rc = comp__csv_next(&r)) == 1) {
        if (r.nfields < 1 || r.nfields > COMP_CSV_MAX_COLUMNS)
            abort();
        for (i = 0; i < r.nfields; i++) {
            if (r.flen[i] > COMP_CSV_MAX_FIELD || r.field[i][r.flen[i]] != '\0' ||
                strlen(r.field[i]) != r.flen[i] || !comp__utf8_valid(r.field[i], r.flen[i]))
                abort();
        }
    }
    if (rc < 0 && (rc != r.err_code || (rc != ED_EUNPROC && rc != ED_ENOMEM) || !r.err[0]))
        abort();
    comp__csv_close(&r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char path[64];
    int m, fd, rc;

    if (size < 1)
        return 0;
    m = data[0] & 7;
    check_reader(data + 1, size - 1);
    if (data[0] & 8) {
        comp_score_spec spec = {.metric = metrics[m], .id_column = "id", .target_column = "y"};
        comp_truth *t = NULL;
        fd = fuzz_memfile(path, data + 1, size - 1);
        rc = comp_truth_load(&t, fd, &spec);
        if (rc == 0) {
            if (!t || comp_truth_rows(t) < 1)
                abort();
            rc = comp_truth_split(t, 1, 0.5);
            if (rc != 0 && rc != ED_EINVAL)
                abort();
        } else if ((rc != ED_EINVAL && rc != ED_ETOOBIG && rc != ED_ENOMEM) || t) {
            abort();
        }
        comp_truth_free(t);
    } else {
        comp_score_spec spec = {.metric = metrics[m], .id_column = "id", .target_column = "y"};
        comp_truth *t = NULL;
        comp_score_result res;
        comp_score_error e;
        fd = fuzz_memfile(path, (const uint8_t *)truths[m], strlen(truths[m]));
        if (comp_truth_load(&t, fd, &spec) < 0 || comp_truth_split(t, 3, 0.5) < 0)
            abort();        /* the fixed truths are valid */
        fd = fuzz_memfile(path, data + 1, size - 1);
        rc = comp_score_submission(&res, &e, t, fd);
        if (rc == 0) {
            if (res.public_rows + res.private_rows != (int64_t)comp_truth_rows(t) ||
                (res.public_rows > 0 && !isfinite(res.public_score)) ||
                (res.private_rows > 0 && !isfinite(res.private_score)))
                abort();
        } else if (rc != ED_EUNPROC || strcmp(e.cls, "invalid_output") || !e.message[0]) {
            if (rc != ED_ENOMEM)
                abort();
        }
        comp_truth_free(t);
    }
    return 0;
}
