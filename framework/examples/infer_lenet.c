/*
 * infer_lenet.c - classify 8x8 digits with a LeNet saved by paddle.jit.save,
 * through the C inference runtime only (eddy_infer.h; no Python).
 *
 *   fw_example_infer_lenet MODEL_PREFIX DIGITS.csv [THREADS]
 *
 * MODEL_PREFIX.pdmodel / .pdiparams: the model, input [-1, 1, 8, 8] float32,
 * output [-1, 10] logits. DIGITS.csv: one digit per line, "label,p0,...,p63"
 * (pixels already scaled as in training). Prints each prediction and the
 * accuracy; exits 0 when every line was classified, 1 on any error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eddy_infer.h"

#define MAX_DIGITS 100000

static int parse_line(char *line, int *label, float px[64])
{
    char *save = NULL, *tok = strtok_r(line, ",\n", &save);
    char *end;

    if (tok == NULL)
        return -1;
    *label = (int)strtol(tok, &end, 10);
    if (*end)
        return -1;
    for (int i = 0; i < 64; i++) {
        if ((tok = strtok_r(NULL, ",\n", &save)) == NULL)
            return -1;
        px[i] = strtof(tok, &end);
        if (*end)
            return -1;
    }
    return strtok_r(NULL, ",\n", &save) == NULL ? 0 : -1;
}

int main(int argc, char **argv)
{
    fw_infer_config *cfg = NULL;
    fw_infer_predictor *pred = NULL;
    fw_infer_tensor *in, *out;
    float *pixels = NULL, *logits = NULL;
    int *labels = NULL, n = 0, correct = 0, rc = 1;
    char line[4096];
    FILE *f = NULL;

    if (argc < 3) {
        fprintf(stderr, "usage: %s MODEL_PREFIX DIGITS.csv [THREADS]\n", argv[0]);
        return 2;
    }
    if ((f = fopen(argv[2], "r")) == NULL) {
        perror(argv[2]);
        return 1;
    }
    pixels = malloc((size_t)MAX_DIGITS * 64 * sizeof(float));
    labels = malloc((size_t)MAX_DIGITS * sizeof(int));
    if (pixels == NULL || labels == NULL)
        goto done;
    while (n < MAX_DIGITS && fgets(line, sizeof(line), f)) {
        if (parse_line(line, &labels[n], &pixels[(size_t)n * 64]) < 0) {
            fprintf(stderr, "%s:%d: expected label and 64 pixels\n", argv[2], n + 1);
            goto done;
        }
        n++;
    }
    cfg = fw_infer_config_new();
    if (cfg == NULL || fw_infer_config_set_model(cfg, argv[1], NULL) < 0 ||
        (argc > 3 && fw_infer_config_set_cpu_threads(cfg, atoi(argv[3])) < 0) ||
        fw_infer_predictor_create(&pred, cfg) < 0) {
        fprintf(stderr, "infer_lenet: %s\n", fw_infer_last_error());
        goto done;
    }
    in = fw_infer_get_input_handle(pred, fw_infer_input_name(pred, 0));
    out = fw_infer_get_output_handle(pred, fw_infer_output_name(pred, 0));
    if (in == NULL || out == NULL ||
        fw_infer_tensor_reshape(in, 4, (const int64_t[]){ n, 1, 8, 8 }) < 0 ||
        fw_infer_tensor_copy_from_cpu(in, pixels, (size_t)n * 64 * sizeof(float)) < 0 ||
        fw_infer_predictor_run(pred) < 0 ||
        (logits = malloc(fw_infer_tensor_nbytes(out))) == NULL ||
        fw_infer_tensor_copy_to_cpu(out, logits, fw_infer_tensor_nbytes(out)) < 0) {
        fprintf(stderr, "infer_lenet: %s\n", fw_infer_last_error());
        goto done;
    }
    for (int i = 0; i < n; i++) {
        int best = 0;
        for (int k = 1; k < 10; k++)
            if (logits[i * 10 + k] > logits[i * 10 + best])
                best = k;
        correct += best == labels[i];
        printf("digit %d: label %d predicted %d\n", i, labels[i], best);
    }
    printf("accuracy %d/%d = %.4f\n", correct, n, n ? (double)correct / n : 0.0);
    rc = 0;
done:
    if (f)
        fclose(f);
    fw_infer_predictor_free(pred);
    fw_infer_config_free(cfg);
    free(pixels);
    free(labels);
    free(logits);
    return rc;
}
