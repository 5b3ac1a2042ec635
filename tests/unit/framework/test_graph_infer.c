/*
 * test_graph_infer.c - the model loader refuses bad files with clear errors
 * (one case per check, every truncation of a valid file, truncated and
 * mismatched parameters), and the C inference runtime (eddy_infer.h):
 * handles, bad input, the GPU refusal, and clones running in threads.
 */
#include <pthread.h>

#include "eddy_infer.h"
#include "graph_util.h"

static const char *mlp_json =
    "{\"format\":\"eddy-graph\",\"version\":1,"
    "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,6]}],"
    "\"outputs\":[{\"name\":\"probs\",\"value\":\"y\"}],"
    "\"nodes\":["
    "{\"op\":\"linear\",\"inputs\":[\"x\",\"W1\",\"b1\"],\"outputs\":[\"h\"]},"
    "{\"op\":\"tanh\",\"inputs\":[\"h\"],\"outputs\":[\"t\"]},"
    "{\"op\":\"linear\",\"inputs\":[\"t\",\"W2\",\"\"],\"outputs\":[\"z\"]},"
    "{\"op\":\"softmax\",\"inputs\":[\"z\"],\"outputs\":[\"y\"],\"attrs\":{\"axis\":-1}}]}";

static fw_tensor *mlp_params[3];
static const char *mlp_names[] = { "W1", "b1", "W2" };

static void write_mlp(char *m, char *p)
{
    mlp_params[0] = gu_tensor((int64_t[]){ 6, 16 }, 2, 0.5f, 0);
    mlp_params[1] = gu_tensor((int64_t[]){ 16 }, 1, 0.5f, 0);
    mlp_params[2] = gu_tensor((int64_t[]){ 16, 4 }, 2, 0.5f, 0);
    gu_write(mlp_json, mlp_names, mlp_params, 3, m, p);
}

static void free_mlp(void)
{
    for (int i = 0; i < 3; i++)
        fw_tensor_unref(mlp_params[i]);
}

static uint8_t *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    uint8_t *b;
    long n;
    ck_assert_ptr_nonnull(f);
    fseek(f, 0, SEEK_END);
    n = ftell(f);
    fseek(f, 0, SEEK_SET);
    b = malloc((size_t)n + 1);
    ck_assert_int_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* An empty safetensors image: length 2, "{}". */
static const uint8_t empty_st[] = { 2, 0, 0, 0, 0, 0, 0, 0, '{', '}' };

static void expect_bad_model(const char *json, int code, const char *part)
{
    fw_graph *g = (fw_graph *)1;
    int err = fw_graph_load_memory(&g, json, strlen(json), empty_st, sizeof(empty_st));
    ck_assert_msg(err == code, "%.80s: code %d, want %d (%s)", json, err, code, fw_error_last());
    ck_assert_ptr_null(g);
    ck_assert_msg(strstr(fw_error_last(), part) != NULL, "%.80s: message '%s' lacks '%s'", json,
                  fw_error_last(), part);
}

#define HEAD "{\"format\":\"eddy-graph\",\"version\":1,\"inputs\":[{\"name\":\"x\"," \
             "\"dtype\":\"float32\",\"shape\":[-1,4]}],\"outputs\":[{\"name\":\"o\"," \
             "\"value\":\"y\"}],"

START_TEST(bad_models)
{
    char deep[512];
    expect_bad_model("", FW_EFORMAT, "JSON");
    expect_bad_model("{\"format\":\"onnx\"}", FW_EFORMAT, "not an Eddy graph");
    expect_bad_model("{\"format\":\"eddy-graph\",\"version\":2}", FW_EUNSUPPORTED, "version");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"fft\",\"inputs\":[\"x\"],\"outputs\":[\"y\"]}]}",
                     FW_EUNSUPPORTED, "unknown op 'fft'");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"relu\",\"inputs\":[\"q\"],\"outputs\":[\"y\"]}]}",
                     FW_EFORMAT, "input 'q' is neither defined");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"relu\",\"inputs\":[\"x\",\"x\"],"
                     "\"outputs\":[\"y\"]}]}", FW_EFORMAT, "node 0 (relu): wrong number");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"max_pool2d\",\"inputs\":[\"x\"],\"outputs\":"
                     "[\"y\"],\"attrs\":{\"kernel\":[2,2],\"stride\":[0,2],\"padding\":[0,0]}}]}",
                     FW_EFORMAT, "stride");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"reshape\",\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
                     "\"attrs\":{\"shape\":[\"$1\",-1]}}]}", FW_EFORMAT, "unknown symbol");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"reshape\",\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
                     "\"attrs\":{\"shape\":[1e300,-1]}}]}", FW_EFORMAT, "out of range");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"relu\",\"inputs\":[\"x\"],\"outputs\":[\"z\"]}]}",
                     FW_EFORMAT, "output 0 must name a defined value");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"relu\",\"inputs\":[\"x\"],\"outputs\":[\"x\"]}]}",
                     FW_EFORMAT, "already defined");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"batch_norm\",\"inputs\":[\"x\",\"\",\"\"],"
                     "\"outputs\":[\"y\"]}]}", FW_EFORMAT, "required input");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"ew_chain\",\"inputs\":[\"x\"],"
                     "\"outputs\":[\"y\"]}]}", FW_EFORMAT, "internal");
    expect_bad_model(HEAD "\"nodes\":[{\"op\":\"cast\",\"inputs\":[\"x\"],\"outputs\":[\"y\"],"
                     "\"attrs\":{\"dtype\":\"complex64\"}}]}", FW_EFORMAT, "unknown dtype");
    expect_bad_model("{\"format\":\"eddy-graph\",\"version\":1,\"inputs\":[],\"nodes\":[]}",
                     FW_EFORMAT, "\"inputs\" must list");
    expect_bad_model("{\"format\":\"eddy-graph\",\"version\":1,\"inputs\":[{\"name\":\"x\","
                     "\"dtype\":\"float32\",\"shape\":[-2]}]}", FW_EFORMAT, "bad shape");
    expect_bad_model("{\"format\":\"eddy-gr\xff\"}", FW_EFORMAT, "UTF-8");
    memset(deep, '[', sizeof(deep) - 1);
    deep[sizeof(deep) - 1] = '\0';
    expect_bad_model(deep, FW_EFORMAT, "nested too deeply");
}
END_TEST

START_TEST(every_truncation_fails_cleanly)
{
    char m[256], p[256];
    size_t plen, mlen = strlen(mlp_json);
    uint8_t *params;

    write_mlp(m, p);
    params = read_all(p, &plen);
    for (size_t n = 0; n < mlen; n++) {
        fw_graph *g = NULL;
        char *cut = malloc(n + 1);
        memcpy(cut, mlp_json, n);
        ck_assert_msg(fw_graph_load_memory(&g, cut, n, params, plen) < 0, "prefix %zu loaded", n);
        free(cut);
    }
    for (size_t n = 0; n < plen; n += 7) {
        fw_graph *g = NULL;
        uint8_t *cut = malloc(n + 1);
        memcpy(cut, params, n);
        ck_assert_msg(fw_graph_load_memory(&g, mlp_json, mlen, cut, n) < 0,
                      "params prefix %zu loaded", n);
        ck_assert_msg(strstr(fw_error_last(), "parameters") != NULL, "%s", fw_error_last());
        free(cut);
    }
    free(params);
    free_mlp();
}
END_TEST

START_TEST(mismatched_parameters_fail_at_run_naming_the_node)
{
    char m[256], p[256];
    fw_tensor *bad[3], *x, *y = NULL;

    bad[0] = gu_tensor((int64_t[]){ 5, 16 }, 2, 1, 0);   /* wants [6, 16] */
    bad[1] = gu_tensor((int64_t[]){ 16 }, 1, 1, 0);
    bad[2] = gu_tensor((int64_t[]){ 16, 4 }, 2, 1, 0);
    gu_write(mlp_json, mlp_names, bad, 3, m, p);
    fw_graph *g = gu_load(m, p);
    x = gu_tensor((int64_t[]){ 2, 6 }, 2, 1, 0);
    ck_assert_int_eq(fw_graph_run(g, &x, &y), FW_ESHAPE);
    ck_assert_msg(strstr(fw_error_last(), "node 0 (linear)") != NULL, "%s", fw_error_last());
    ck_assert_ptr_null(y);
    fw_tensor_unref(x);
    fw_graph_free(g);
    for (int i = 0; i < 3; i++)
        fw_tensor_unref(bad[i]);
}
END_TEST

static fw_infer_predictor *make_predictor(const char *m, const char *p)
{
    fw_infer_config *c = fw_infer_config_new();
    fw_infer_predictor *pred = NULL;
    ck_assert_int_eq(fw_infer_config_set_model(c, m, p), 0);
    ck_assert_int_eq(fw_infer_config_set_cpu_threads(c, 2), 0);
    ck_assert_msg(fw_infer_predictor_create(&pred, c) == 0, "%s", fw_infer_last_error());
    fw_infer_config_free(c);
    return pred;
}

START_TEST(runtime_handles_and_bad_input)
{
    char m[256], p[256];
    float x[3 * 6], y[3 * 4], yy[3 * 4];
    int64_t shape[FW_MAX_DIMS];
    fw_infer_predictor *pred;
    fw_infer_config *c;
    fw_infer_tensor *in, *out;

    write_mlp(m, p);
    pred = make_predictor(m, p);
    ck_assert_int_eq(fw_infer_num_inputs(pred), 1);
    ck_assert_str_eq(fw_infer_input_name(pred, 0), "x");
    ck_assert_str_eq(fw_infer_output_name(pred, 0), "probs");
    ck_assert_ptr_null(fw_infer_get_input_handle(pred, "nope"));
    ck_assert_ptr_nonnull(strstr(fw_infer_last_error(), "no input named 'nope'"));
    in = fw_infer_get_input_handle(pred, "x");
    out = fw_infer_get_output_handle(pred, "probs");
    ck_assert_int_eq(fw_infer_predictor_run(pred), FW_EINVAL);
    ck_assert_ptr_nonnull(strstr(fw_infer_last_error(), "input 'x' has no data"));
    ck_assert_int_eq(fw_infer_tensor_reshape(in, 2, (int64_t[]){ 3, 5 }), FW_ESHAPE);
    ck_assert_int_eq(fw_infer_tensor_reshape(in, 3, (int64_t[]){ 3, 6, 1 }), FW_ESHAPE);
    ck_assert_int_eq(fw_infer_tensor_reshape(in, 2, (int64_t[]){ 1 << 30, 6 }), FW_ESHAPE);
    ck_assert_int_eq(fw_infer_tensor_reshape(in, 2, (int64_t[]){ 3, 6 }), 0);
    for (int i = 0; i < 18; i++)
        x[i] = gu_rand();
    ck_assert_int_eq(fw_infer_tensor_copy_from_cpu(in, x, sizeof(x) - 4), FW_ESHAPE);
    ck_assert_int_eq(fw_infer_tensor_copy_from_cpu(in, x, sizeof(x)), 0);
    ck_assert_int_eq(fw_infer_tensor_copy_to_cpu(out, y, sizeof(y)), FW_EINVAL);
    ck_assert_msg(fw_infer_predictor_run(pred) == 0, "%s", fw_infer_last_error());
    ck_assert_int_eq(fw_infer_tensor_shape(out, shape), 2);
    ck_assert_int_eq(shape[0], 3);
    ck_assert_int_eq(shape[1], 4);
    ck_assert_int_eq(fw_infer_tensor_copy_to_cpu(out, y, sizeof(y) - 1), FW_ERANGE);
    ck_assert_int_eq(fw_infer_tensor_copy_to_cpu(out, y, sizeof(y)), 0);
    for (int r = 0; r < 3; r++) {
        float s = 0;
        for (int k = 0; k < 4; k++)
            s += y[r * 4 + k];
        ck_assert_float_eq_tol(s, 1.0f, 1e-5f);
    }
    /* without passes: the same numbers */
    {
        fw_infer_config *c2 = fw_infer_config_new();
        fw_infer_predictor *p2 = NULL;
        fw_infer_config_set_model(c2, m, p);
        fw_infer_config_switch_ir_optim(c2, 0);
        ck_assert_int_eq(fw_infer_predictor_create(&p2, c2), 0);
        fw_infer_tensor *i2 = fw_infer_get_input_handle(p2, "x");
        fw_infer_tensor_reshape(i2, 2, (int64_t[]){ 3, 6 });
        fw_infer_tensor_copy_from_cpu(i2, x, sizeof(x));
        ck_assert_int_eq(fw_infer_predictor_run(p2), 0);
        fw_infer_tensor_copy_to_cpu(fw_infer_get_output_handle(p2, "probs"), yy, sizeof(yy));
        for (int i = 0; i < 12; i++)
            ck_assert_float_eq_tol(y[i], yy[i], 1e-6f);
        fw_infer_predictor_free(p2);
        fw_infer_config_free(c2);
    }
    fw_infer_predictor_free(pred);

    c = fw_infer_config_new();
    ck_assert_int_eq(fw_infer_predictor_create(&pred, c), FW_EINVAL);
    ck_assert_int_eq(fw_infer_config_set_model(c, "", NULL), FW_EINVAL);
    ck_assert_int_eq(fw_infer_config_set_cpu_threads(c, 0), FW_EINVAL);
    ck_assert_int_eq(fw_infer_config_set_model(c, m, p), 0);
    ck_assert_int_eq(fw_infer_config_enable_gpu(c, 100, 0), 0);
    ck_assert_int_eq(fw_infer_predictor_create(&pred, c), FW_EUNSUPPORTED);
    ck_assert_ptr_nonnull(strstr(fw_infer_last_error(), "no CUDA backend"));
    ck_assert_ptr_null(pred);
    fw_infer_config_disable_gpu(c);
    ck_assert_int_eq(fw_infer_config_set_model(c, "/nonexistent/model", NULL), 0);
    ck_assert_int_eq(fw_infer_predictor_create(&pred, c), FW_EIO);
    ck_assert_ptr_nonnull(strstr(fw_infer_last_error(), "/nonexistent/model.pdmodel"));
    fw_infer_config_free(c);
    free_mlp();
}
END_TEST

typedef struct {
    fw_infer_predictor *p;
    const float *x;
    const float *want;
    int rows;
    int bad;
} worker;

static void *work(void *arg)
{
    worker *w = arg;
    float y[64 * 4];
    fw_infer_tensor *in = fw_infer_get_input_handle(w->p, "x");
    fw_infer_tensor *out = fw_infer_get_output_handle(w->p, "probs");
    for (int it = 0; it < 50; it++) {
        int rows = 1 + (it % w->rows);
        if (fw_infer_tensor_reshape(in, 2, (int64_t[]){ rows, 6 }) < 0 ||
            fw_infer_tensor_copy_from_cpu(in, w->x, (size_t)rows * 6 * sizeof(float)) < 0 ||
            fw_infer_predictor_run(w->p) < 0 ||
            fw_infer_tensor_copy_to_cpu(out, y, sizeof(y)) < 0) {
            w->bad++;
            continue;
        }
        for (int i = 0; i < rows * 4; i++)
            if (fabsf(y[i] - w->want[i]) > 1e-6f)
                w->bad++;
    }
    return NULL;
}

START_TEST(clones_share_weights_across_threads)
{
    char m[256], p[256];
    float x[64 * 6], want[64 * 4];
    fw_infer_predictor *base, *clones[4];
    pthread_t th[4];
    worker w[4];

    write_mlp(m, p);
    base = make_predictor(m, p);
    for (int i = 0; i < 64 * 6; i++)
        x[i] = gu_rand();
    fw_infer_tensor *in = fw_infer_get_input_handle(base, "x");
    fw_infer_tensor_reshape(in, 2, (int64_t[]){ 64, 6 });
    fw_infer_tensor_copy_from_cpu(in, x, sizeof(x));
    ck_assert_int_eq(fw_infer_predictor_run(base), 0);
    fw_infer_tensor_copy_to_cpu(fw_infer_get_output_handle(base, "probs"), want, sizeof(want));
    for (int t = 0; t < 4; t++) {
        ck_assert_int_eq(fw_infer_predictor_clone(&clones[t], base), 0);
        w[t] = (worker){ clones[t], x, want, 64, 0 };
        ck_assert_int_eq(pthread_create(&th[t], NULL, work, &w[t]), 0);
    }
    /* the original may go first: clones hold the graph */
    fw_infer_predictor_free(base);
    for (int t = 0; t < 4; t++) {
        pthread_join(th[t], NULL);
        ck_assert_int_eq(w[t].bad, 0);
        fw_infer_predictor_free(clones[t]);
    }
    free_mlp();
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("graph_infer");
    TCase *tc = tcase_create("infer");
    tcase_add_checked_fixture(tc, gu_setup, gu_teardown);
    tcase_add_test(tc, bad_models);
    tcase_add_test(tc, every_truncation_fails_cleanly);
    tcase_add_test(tc, mismatched_parameters_fail_at_run_naming_the_node);
    tcase_add_test(tc, runtime_handles_and_bad_input);
    tcase_add_test(tc, clones_share_weights_across_threads);
    suite_add_tcase(s, tc);
    return s;
}

int main(void)
{
    SRunner *sr = srunner_create(suite());
    srunner_run_all(sr, CK_NORMAL);
    int failed = srunner_ntests_failed(sr);
    srunner_free(sr);
    return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
