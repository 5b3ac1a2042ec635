/*
 * fuzz_graph.c - the model loader of the inference runtime
 * (fw_graph_load_memory, framework/graph/graph.h), which reads model files
 * users upload for deployment.
 *
 * Input: 4 bytes little-endian model length M (clamped to what follows),
 * M bytes of model JSON, the rest a safetensors image of the parameters.
 * An accepted graph must report sane inputs and outputs and survive the
 * rewriting passes (constant folding is left out: it runs the model's own
 * arithmetic, whose cost a fuzzer input could make arbitrary).
 */
#include "fuzz.h"

#include "graph.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fw_graph *g = NULL;
    size_t m;
    int64_t shape[FW_MAX_DIMS];

    if (size < 4)
        return 0;
    m = (size_t)data[0] | (size_t)data[1] << 8 | (size_t)data[2] << 16 | (size_t)data[3] << 24;
    if (m > size - 4)
        m = size - 4;
    if (fw_graph_load_memory(&g, data + 4, m, data + 4 + m, size - 4 - m) < 0) {
        if (g != NULL || fw_error_last()[0] == '\0')
            abort();
        return 0;
    }
    if (fw_graph_num_inputs(g) < 1 || fw_graph_num_inputs(g) > FW_GRAPH_MAX_IO ||
        fw_graph_num_outputs(g) < 1 || fw_graph_num_outputs(g) > FW_GRAPH_MAX_IO)
        abort();
    for (int i = 0; i < fw_graph_num_inputs(g); i++) {
        int nd = fw_graph_input_shape(g, i, shape);
        if (fw_graph_input_name(g, i) == NULL || nd < 0 || nd > FW_MAX_DIMS)
            abort();
    }
    (void)fw_graph_optimize(g, FW_GRAPH_PASS_ALL & ~(unsigned)FW_GRAPH_PASS_CONST_FOLD, NULL);
    for (int i = 0; i < fw_graph_num_nodes(g); i++)
        if (fw_graph_node_op(g, i) == NULL)
            abort();
    fw_graph_free(g);
    return 0;
}
