/*
 * comp_score.c - score one CSV submission with competitions/score.h, as the
 * server does, and print the figures (used by comp_score.sh and by hand).
 *
 *   comp_score METRIC ID_COLUMN TARGET_COLUMN TRUTH.csv SUBMISSION.csv [SEED FRACTION]
 *
 * Prints "public <score>", "private <score>", "rows <public> <private>",
 * "load_s", "score_s" (wall seconds to load the truth, and to validate and
 * score the submission) and "truth_bytes"; or the error's class and message
 * on stderr with exit 1.
 */
#include "score.h"

#include "ed_error.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int main(int argc, char **argv)
{
    comp_score_spec spec = {0};
    comp_truth *t = NULL;
    comp_score_result r;
    comp_score_error e;
    double t0, t1, t2;
    int fd, rc;

    if (argc != 6 && argc != 8) {
        fprintf(stderr, "usage: %s METRIC ID_COLUMN TARGET_COLUMN TRUTH.csv SUBMISSION.csv [SEED FRACTION]\n", argv[0]);
        return 2;
    }
    spec.metric = argv[1];
    spec.id_column = argv[2];
    spec.target_column = argv[3];
    t0 = now();
    if ((fd = open(argv[4], O_RDONLY | O_CLOEXEC)) < 0) {
        perror(argv[4]);
        return 2;
    }
    rc = comp_truth_load(&t, fd, &spec);
    close(fd);
    if (rc < 0) {
        fprintf(stderr, "%s\n", ed_error_last());
        return 2;
    }
    if (argc == 8 && comp_truth_split(t, strtoull(argv[6], NULL, 10), strtod(argv[7], NULL)) < 0) {
        fprintf(stderr, "split: %s\n", ed_error_last());
        comp_truth_free(t);
        return 2;
    }
    t1 = now();
    if ((fd = open(argv[5], O_RDONLY | O_CLOEXEC)) < 0) {
        perror(argv[5]);
        comp_truth_free(t);
        return 2;
    }
    rc = comp_score_submission(&r, &e, t, fd);
    close(fd);
    t2 = now();
    if (rc < 0) {
        fprintf(stderr, "%s: %s\n", e.cls, e.message);
        comp_truth_free(t);
        return 1;
    }
    printf("public %.17g\nprivate %.17g\nrows %lld %lld\nload_s %.6f\nscore_s %.6f\ntruth_bytes %zu\n", r.public_score,
           r.private_score, (long long)r.public_rows, (long long)r.private_rows, t1 - t0, t2 - t1,
           comp_truth_memory(t));
    comp_truth_free(t);
    return 0;
}
