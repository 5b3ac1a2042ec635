/*
 * test_graph_passes.c - each graph pass on a graph where it applies: the
 * pass reports its rewrite, the node count drops, and the optimised graph
 * gives the same outputs as the original on random inputs of two batch
 * sizes. Memory planning: buffers are reused (arena below the no-reuse
 * total) and the plan is consistent (arena >= peak of live bytes).
 */
#include "graph_util.h"

/* Run g0 (as loaded) and g1 (after `mask`) on random [b, ...rest] inputs. */
static void compare(fw_graph *g0, fw_graph *g1, const int64_t *rest, int nrest, double tol)
{
    static const int64_t batches[] = { 1, 5 };
    for (int bi = 0; bi < 2; bi++) {
        int64_t shape[FW_MAX_DIMS];
        fw_tensor *x, *y0 = NULL, *y1 = NULL;
        shape[0] = batches[bi];
        memcpy(shape + 1, rest, (size_t)nrest * sizeof(int64_t));
        x = gu_tensor(shape, nrest + 1, 1.5f, 0.1f);
        ck_assert_msg(fw_graph_run(g0, &x, &y0) == 0, "%s", fw_error_last());
        ck_assert_msg(fw_graph_run(g1, &x, &y1) == 0, "%s", fw_error_last());
        double d = gu_diff(y1, y0);
        ck_assert_msg(d <= tol, "batch %lld: optimised differs by %g", (long long)batches[bi], d);
        fw_tensor_unref(x);
        fw_tensor_unref(y0);
        fw_tensor_unref(y1);
    }
}

static void optimise(fw_graph *g, unsigned mask, fw_graph_stats *st)
{
    ck_assert_msg(fw_graph_optimize(g, mask, st) == 0, "%s", fw_error_last());
}

START_TEST(const_fold)
{
    const char *json =
        "{\"format\":\"eddy-graph\",\"version\":1,"
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,4]}],"
        "\"outputs\":[{\"name\":\"out\",\"value\":\"y\"}],\"values\":{},"
        "\"nodes\":["
        "{\"op\":\"add\",\"inputs\":[\"A\",\"B\"],\"outputs\":[\"c\"],\"attrs\":{}},"
        "{\"op\":\"mul_scalar\",\"inputs\":[\"c\"],\"outputs\":[\"d\"],\"attrs\":{\"s\":0.5}},"
        "{\"op\":\"transpose\",\"inputs\":[\"d\"],\"outputs\":[\"w\"],\"attrs\":{\"perm\":[1,0]}},"
        "{\"op\":\"matmul\",\"inputs\":[\"x\",\"w\"],\"outputs\":[\"y\"],\"attrs\":{}}]}";
    const char *names[] = { "A", "B" };
    int64_t s[] = { 3, 4 };
    fw_tensor *ts[] = { gu_tensor(s, 2, 1, 0), gu_tensor(s, 2, 1, 0) };
    char m[256], p[256];
    fw_graph_stats st;

    gu_write(json, names, ts, 2, m, p);
    fw_graph *g0 = gu_load(m, p), *g1 = gu_load(m, p);
    optimise(g1, FW_GRAPH_PASS_CONST_FOLD | FW_GRAPH_PASS_DCE, &st);
    ck_assert_int_eq(st.folded, 3);
    ck_assert_int_eq(fw_graph_num_nodes(g0), 4);
    ck_assert_int_eq(fw_graph_num_nodes(g1), 1);
    ck_assert_str_eq(fw_graph_node_op(g1, 0), "matmul");
    compare(g0, g1, (int64_t[]){ 4 }, 1, 1e-6);
    fw_graph_free(g0);
    fw_graph_free(g1);
    fw_tensor_unref(ts[0]);
    fw_tensor_unref(ts[1]);
}
END_TEST

START_TEST(dead_code)
{
    const char *json =
        "{\"format\":\"eddy-graph\",\"version\":1,"
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,3]}],"
        "\"outputs\":[{\"name\":\"out\",\"value\":\"z\"}],\"values\":{},"
        "\"nodes\":["
        "{\"op\":\"relu\",\"inputs\":[\"x\"],\"outputs\":[\"a\"]},"
        "{\"op\":\"exp\",\"inputs\":[\"x\"],\"outputs\":[\"unused\"]},"
        "{\"op\":\"sum\",\"inputs\":[\"unused\"],\"outputs\":[\"unused2\"],"
        "\"attrs\":{\"axes\":[],\"keepdim\":false}},"
        "{\"op\":\"identity\",\"inputs\":[\"a\"],\"outputs\":[\"z\"]}]}";
    char m[256], p[256];
    fw_graph_stats st;

    gu_write(json, NULL, NULL, 0, m, p);
    fw_graph *g0 = gu_load(m, p), *g1 = gu_load(m, p);
    optimise(g1, FW_GRAPH_PASS_DCE, &st);
    ck_assert_int_eq(st.removed, 3);
    ck_assert_int_eq(fw_graph_num_nodes(g1), 1);
    ck_assert_str_eq(fw_graph_node_op(g1, 0), "relu");
    compare(g0, g1, (int64_t[]){ 3 }, 1, 0);
    fw_graph_free(g0);
    fw_graph_free(g1);
}
END_TEST

START_TEST(fold_batch_norm)
{
    const char *json =
        "{\"format\":\"eddy-graph\",\"version\":1,"
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,2,5,5]}],"
        "\"outputs\":[{\"name\":\"out\",\"value\":\"y\"}],\"values\":{},"
        "\"nodes\":["
        "{\"op\":\"conv2d\",\"inputs\":[\"W\",\"W\",\"b\"],\"outputs\":[\"c\"],"
        "\"attrs\":{\"stride\":[1,1],\"padding\":[1,1,1,1],\"dilation\":[1,1],\"groups\":1}},"
        "{\"op\":\"batch_norm\",\"inputs\":[\"c\",\"mean\",\"var\",\"gamma\",\"beta\"],"
        "\"outputs\":[\"y\"],\"attrs\":{\"epsilon\":1e-5}}]}";
    const char *names[] = { "W", "b", "mean", "var", "gamma", "beta" };
    int64_t ws[] = { 3, 2, 3, 3 }, cs[] = { 3 };
    fw_tensor *ts[] = { gu_tensor(ws, 4, 0.5f, 0), gu_tensor(cs, 1, 0.5f, 0),
                        gu_tensor(cs, 1, 0.3f, 0.1f), gu_tensor(cs, 1, 0.4f, 0.6f),
                        gu_tensor(cs, 1, 0.5f, 1.0f), gu_tensor(cs, 1, 0.5f, 0) };
    char m[256], p[256], buf[2048];
    fw_graph_stats st;

    /* the conv reads x, not W: fix the first input */
    snprintf(buf, sizeof(buf), "%s", json);
    char *q = strstr(buf, "[\"W\",\"W\"");
    memcpy(q, "[\"x\",\"W\"", 8);
    gu_write(buf, names, ts, 6, m, p);
    fw_graph *g0 = gu_load(m, p), *g1 = gu_load(m, p);
    optimise(g1, FW_GRAPH_PASS_FOLD_BN | FW_GRAPH_PASS_DCE, &st);
    ck_assert_int_eq(st.bn_folded, 1);
    ck_assert_int_eq(fw_graph_num_nodes(g1), 1);
    ck_assert_str_eq(fw_graph_node_op(g1, 0), "conv2d");
    compare(g0, g1, (int64_t[]){ 2, 5, 5 }, 3, 1e-5);
    fw_graph_free(g0);
    fw_graph_free(g1);
    for (int i = 0; i < 6; i++)
        fw_tensor_unref(ts[i]);
}
END_TEST

START_TEST(fuse_bias_activation)
{
    const char *json =
        "{\"format\":\"eddy-graph\",\"version\":1,"
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,1,4,4]}],"
        "\"outputs\":[{\"name\":\"out\",\"value\":\"y\"}],\"values\":{},"
        "\"nodes\":["
        "{\"op\":\"conv2d\",\"inputs\":[\"x\",\"K\",\"\"],\"outputs\":[\"c\"],"
        "\"attrs\":{\"stride\":[1,1],\"padding\":[0,0,0,0],\"dilation\":[1,1],\"groups\":1}},"
        "{\"op\":\"sigmoid\",\"inputs\":[\"c\"],\"outputs\":[\"s\"]},"
        "{\"op\":\"flatten\",\"inputs\":[\"s\"],\"outputs\":[\"f\"],"
        "\"attrs\":{\"start_axis\":1,\"stop_axis\":-1}},"
        "{\"op\":\"matmul\",\"inputs\":[\"f\",\"W\"],\"outputs\":[\"mm\"],"
        "\"attrs\":{\"transpose_x\":false,\"transpose_y\":false}},"
        "{\"op\":\"add\",\"inputs\":[\"mm\",\"b\"],\"outputs\":[\"a\"]},"
        "{\"op\":\"relu\",\"inputs\":[\"a\"],\"outputs\":[\"y\"]}]}";
    const char *names[] = { "K", "W", "b" };
    int64_t ks[] = { 2, 1, 3, 3 }, wsh[] = { 8, 5 }, bs[] = { 5 };
    fw_tensor *ts[] = { gu_tensor(ks, 4, 1, 0), gu_tensor(wsh, 2, 1, 0), gu_tensor(bs, 1, 1, 0) };
    char m[256], p[256];
    fw_graph_stats st;

    gu_write(json, names, ts, 3, m, p);
    fw_graph *g0 = gu_load(m, p), *g1 = gu_load(m, p);
    optimise(g1, FW_GRAPH_PASS_FUSE_BIAS_ACT | FW_GRAPH_PASS_DCE, &st);
    ck_assert_int_eq(st.bias_act_fused, 3);
    ck_assert_int_eq(fw_graph_num_nodes(g1), 3);
    ck_assert_str_eq(fw_graph_node_op(g1, 0), "conv2d");
    ck_assert_str_eq(fw_graph_node_op(g1, 2), "linear");
    compare(g0, g1, (int64_t[]){ 1, 4, 4 }, 3, 1e-6);
    fw_graph_free(g0);
    fw_graph_free(g1);
    for (int i = 0; i < 3; i++)
        fw_tensor_unref(ts[i]);
}
END_TEST

START_TEST(fuse_elementwise_chain)
{
    const char *json =
        "{\"format\":\"eddy-graph\",\"version\":1,"
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,7]}],"
        "\"outputs\":[{\"name\":\"out\",\"value\":\"y\"},{\"name\":\"mid\",\"value\":\"t\"}],"
        "\"values\":{},\"nodes\":["
        "{\"op\":\"tanh\",\"inputs\":[\"x\"],\"outputs\":[\"t\"]},"
        "{\"op\":\"mul_scalar\",\"inputs\":[\"t\"],\"outputs\":[\"a\"],\"attrs\":{\"s\":0.5}},"
        "{\"op\":\"add_scalar\",\"inputs\":[\"a\"],\"outputs\":[\"b\"],\"attrs\":{\"s\":1.0}},"
        "{\"op\":\"gelu\",\"inputs\":[\"b\"],\"outputs\":[\"c\"],\"attrs\":{\"approximate\":false}},"
        "{\"op\":\"rsub_scalar\",\"inputs\":[\"c\"],\"outputs\":[\"d\"],\"attrs\":{\"s\":2.0}},"
        "{\"op\":\"leaky_relu\",\"inputs\":[\"d\"],\"outputs\":[\"e\"],"
        "\"attrs\":{\"negative_slope\":0.1}},"
        "{\"op\":\"clip\",\"inputs\":[\"e\"],\"outputs\":[\"y\"],\"attrs\":{\"min\":-0.5}}]}";
    char m[256], p[256];
    fw_graph_stats st;
    fw_tensor *x, *y0[2] = { 0 }, *y1[2] = { 0 };

    gu_write(json, NULL, NULL, 0, m, p);
    fw_graph *g0 = gu_load(m, p), *g1 = gu_load(m, p);
    optimise(g1, FW_GRAPH_PASS_FUSE_ELEMENTWISE, &st);
    /* tanh's output is also a graph output, so the chain starts after it */
    ck_assert_int_eq(st.ew_fused, 5);
    ck_assert_int_eq(fw_graph_num_nodes(g1), 2);
    ck_assert_str_eq(fw_graph_node_op(g1, 1), "ew_chain");
    x = gu_tensor((int64_t[]){ 5, 7 }, 2, 3, 0);
    ck_assert_int_eq(fw_graph_run(g0, &x, y0), 0);
    ck_assert_int_eq(fw_graph_run(g1, &x, y1), 0);
    ck_assert_msg(gu_diff(y1[0], y0[0]) <= 1e-6, "chain differs by %g", gu_diff(y1[0], y0[0]));
    ck_assert(gu_diff(y1[1], y0[1]) == 0);
    for (int i = 0; i < 2; i++) {
        fw_tensor_unref(y0[i]);
        fw_tensor_unref(y1[i]);
    }
    fw_tensor_unref(x);
    fw_graph_free(g0);
    fw_graph_free(g1);
}
END_TEST

START_TEST(memory_plan_reuses_buffers)
{
    /* x -> 8 x (linear 32x32, relu): each buffer is dead two steps later */
    char json[8192], m[256], p[256];
    const char *names[8];
    char nbuf[8][8];
    fw_tensor *ts[8];
    size_t k = 0;
    fw_graph_plan plan;

    k += (size_t)snprintf(json + k, sizeof(json) - k,
                          "{\"format\":\"eddy-graph\",\"version\":1,\"inputs\":[{\"name\":\"x\","
                          "\"dtype\":\"float32\",\"shape\":[-1,32]}],\"outputs\":[{\"name\":"
                          "\"out\",\"value\":\"r7\"}],\"nodes\":[");
    for (int i = 0; i < 8; i++) {
        snprintf(nbuf[i], sizeof(nbuf[i]), "W%d", i);
        names[i] = nbuf[i];
        ts[i] = gu_tensor((int64_t[]){ 32, 32 }, 2, 0.3f, 0);
        k += (size_t)snprintf(json + k, sizeof(json) - k,
                              "%s{\"op\":\"linear\",\"inputs\":[\"%s%d\",\"W%d\"],\"outputs\":"
                              "[\"l%d\"]},{\"op\":\"relu\",\"inputs\":[\"l%d\"],\"outputs\":"
                              "[\"r%d\"]}", i ? "," : "", i ? "r" : "x", i ? i - 1 : 0 * i, i,
                              i, i, i);
    }
    /* the first linear reads x, not r-1 */
    char *q = strstr(json, "\"x0\"");
    memcpy(q, "\"x\" ", 4);
    snprintf(json + k, sizeof(json) - k, "]}");
    gu_write(json, names, ts, 8, m, p);
    fw_graph *g = gu_load(m, p);
    fw_tensor *x = gu_tensor((int64_t[]){ 64, 32 }, 2, 1, 0);
    ck_assert_msg(fw_graph_plan_memory(&plan, g, &x) == 0, "%s", fw_error_last());
    ck_assert_int_eq(plan.buffers, 16);
    ck_assert_int_eq(plan.total_bytes, 16 * 64 * 32 * 4);
    /* a buffer lives from its writer to its reader: at most two at once */
    ck_assert_int_eq(plan.peak_live_bytes, 2 * 64 * 32 * 4);
    ck_assert(plan.arena_bytes >= plan.peak_live_bytes);
    ck_assert(plan.arena_bytes <= 3 * 64 * 32 * 4);
    fw_tensor_unref(x);
    fw_graph_free(g);
    for (int i = 0; i < 8; i++)
        fw_tensor_unref(ts[i]);
}
END_TEST

START_TEST(all_passes_on_lenet_shape)
{
    /* conv -> bn -> relu -> pool -> flatten -> matmul + b -> tanh*2+1 */
    const char *json =
        "{\"format\":\"eddy-graph\",\"version\":1,"
        "\"inputs\":[{\"name\":\"x\",\"dtype\":\"float32\",\"shape\":[-1,1,6,6]}],"
        "\"outputs\":[{\"name\":\"out\",\"value\":\"y\"}],"
        "\"nodes\":["
        "{\"op\":\"conv2d\",\"inputs\":[\"x\",\"K\"],\"outputs\":[\"c\"],"
        "\"attrs\":{\"stride\":[1,1],\"padding\":[1,1,1,1],\"dilation\":[1,1],\"groups\":1}},"
        "{\"op\":\"batch_norm\",\"inputs\":[\"c\",\"mean\",\"var\",\"\",\"beta\"],"
        "\"outputs\":[\"n\"],\"attrs\":{\"epsilon\":1e-5}},"
        "{\"op\":\"relu\",\"inputs\":[\"n\"],\"outputs\":[\"r\"]},"
        "{\"op\":\"max_pool2d\",\"inputs\":[\"r\"],\"outputs\":[\"pl\"],\"attrs\":{\"kernel\":"
        "[2,2],\"stride\":[2,2],\"padding\":[0,0],\"ceil_mode\":false}},"
        "{\"op\":\"reshape\",\"inputs\":[\"pl\"],\"outputs\":[\"f\"],\"attrs\":{\"shape\":"
        "[\"$0\",-1]}},"
        "{\"op\":\"matmul\",\"inputs\":[\"f\",\"W\"],\"outputs\":[\"mm\"]},"
        "{\"op\":\"add\",\"inputs\":[\"b\",\"mm\"],\"outputs\":[\"a\"]},"
        "{\"op\":\"tanh\",\"inputs\":[\"a\"],\"outputs\":[\"t\"]},"
        "{\"op\":\"mul_scalar\",\"inputs\":[\"t\"],\"outputs\":[\"t2\"],\"attrs\":{\"s\":2}},"
        "{\"op\":\"add_scalar\",\"inputs\":[\"t2\"],\"outputs\":[\"y\"],\"attrs\":{\"s\":1}}]}";
    const char *names[] = { "K", "mean", "var", "beta", "W", "b" };
    fw_tensor *ts[] = { gu_tensor((int64_t[]){ 4, 1, 3, 3 }, 4, 1, 0),
                        gu_tensor((int64_t[]){ 4 }, 1, 0.2f, 0),
                        gu_tensor((int64_t[]){ 4 }, 0 + 1, 0.3f, 0.8f),
                        gu_tensor((int64_t[]){ 4 }, 1, 0.2f, 0),
                        gu_tensor((int64_t[]){ 36, 3 }, 2, 0.3f, 0),
                        gu_tensor((int64_t[]){ 3 }, 1, 0.3f, 0) };
    char m[256], p[256];
    fw_graph_stats st;

    gu_write(json, names, ts, 6, m, p);
    fw_graph *g0 = gu_load(m, p), *g1 = gu_load(m, p);
    optimise(g1, FW_GRAPH_PASS_ALL, &st);
    ck_assert_int_eq(st.bn_folded, 1);
    ck_assert_int_ge(st.bias_act_fused, 3);
    ck_assert_int_ge(st.ew_fused, 1);
    ck_assert_int_eq(fw_graph_num_nodes(g1), 5);   /* conv, pool, reshape, linear, chain */
    compare(g0, g1, (int64_t[]){ 1, 6, 6 }, 3, 1e-5);
    fw_graph_free(g0);
    fw_graph_free(g1);
    for (int i = 0; i < 6; i++)
        fw_tensor_unref(ts[i]);
}
END_TEST

static Suite *suite(void)
{
    Suite *s = suite_create("graph_passes");
    TCase *tc = tcase_create("passes");
    tcase_add_checked_fixture(tc, gu_setup, gu_teardown);
    tcase_add_test(tc, const_fold);
    tcase_add_test(tc, dead_code);
    tcase_add_test(tc, fold_batch_norm);
    tcase_add_test(tc, fuse_bias_activation);
    tcase_add_test(tc, fuse_elementwise_chain);
    tcase_add_test(tc, memory_plan_reuses_buffers);
    tcase_add_test(tc, all_passes_on_lenet_shape);
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
