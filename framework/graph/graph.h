/*
 * graph.h - Eddy's static graph IR: load, optimise, plan and run.
 *
 * A graph is what paddle.jit.save writes (README.md here is the format):
 * a model file (JSON: inputs, outputs, values, nodes) and a parameters file
 * (safetensors). Nodes are operators with attributes; values are tensors with
 * a dtype and a shape whose -1 entries are dynamic. Integer list attributes
 * may hold symbols ("$k": the k-th dynamic input dimension, resolved per run).
 *
 * Loading validates everything before returning (bounded sizes, known ops,
 * arity, attribute types and ranges, every value defined before use,
 * parameters present with the declared dtype and shape); a bad file is
 * FW_EFORMAT (FW_EIO for unreadable files) with a message naming the node.
 *
 * Passes (fw_graph_optimize) rewrite the graph in place: constant folding,
 * dead-code elimination, batch-norm folding into the preceding conv,
 * linear/conv + bias + activation fusion, elementwise-chain fusion.
 * Memory planning (fw_graph_plan) assigns arena offsets to intermediate
 * buffers by liveness and reports the planned peak.
 *
 * Ownership: fw_graph_load* returns a graph the caller frees with
 * fw_graph_free(); fw_graph_ref() adds a reference (clones share one graph).
 * Threads: a loaded and optimised graph is read-only; fw_graph_run may be
 * called from many threads at once (each run owns its intermediate tensors).
 * Out of memory: FW_ENOMEM, nothing half-built is left behind.
 */
#ifndef FW_GRAPH_H
#define FW_GRAPH_H

#include <stddef.h>
#include <stdint.h>

#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bounds on what a model file may declare. */
#define FW_GRAPH_MAX_MODEL_BYTES (64u << 20)
#define FW_GRAPH_MAX_NODES 100000
#define FW_GRAPH_MAX_VALUES 200000
#define FW_GRAPH_MAX_IO 64
#define FW_GRAPH_MAX_NODE_INPUTS 64
#define FW_GRAPH_MAX_NAME 256
#define FW_GRAPH_MAX_CHAIN 16

typedef struct fw_graph fw_graph;

/* Load from files. Errors: FW_EIO, FW_EFORMAT, FW_EUNSUPPORTED (an op or
 * dtype this runtime cannot run), FW_ENOMEM. */
int fw_graph_load(fw_graph **out, const char *model_path, const char *params_path);
/* Load from memory: the model JSON and a safetensors image. Both are
 * borrowed only during the call (parameters are copied). */
int fw_graph_load_memory(fw_graph **out, const void *model, size_t model_len,
                         const void *params, size_t params_len);

fw_graph *fw_graph_ref(fw_graph *g);
void fw_graph_free(fw_graph *g);     /* drops one reference; NULL-safe */

/* Passes, for fw_graph_optimize's mask. */
enum {
    FW_GRAPH_PASS_CONST_FOLD = 1u << 0,
    FW_GRAPH_PASS_DCE = 1u << 1,
    FW_GRAPH_PASS_FOLD_BN = 1u << 2,
    FW_GRAPH_PASS_FUSE_BIAS_ACT = 1u << 3,
    FW_GRAPH_PASS_FUSE_ELEMENTWISE = 1u << 4,
    FW_GRAPH_PASS_ALL = 0x1f
};

typedef struct {
    int folded;          /* nodes replaced by constants */
    int removed;         /* dead or identity nodes removed */
    int bn_folded;       /* batch norms folded into a conv */
    int bias_act_fused;  /* matmul+bias into linear, activations into linear/conv */
    int ew_fused;        /* elementwise nodes merged into chains */
} fw_graph_stats;

/* Run the passes in `mask` (to a fixed point where one enables another).
 * stats may be NULL. The graph must not be running (load-time only). */
int fw_graph_optimize(fw_graph *g, unsigned mask, fw_graph_stats *stats);

/* Introspection (borrowed strings, valid while g lives). */
int fw_graph_num_nodes(const fw_graph *g);
const char *fw_graph_node_op(const fw_graph *g, int i);
int fw_graph_num_inputs(const fw_graph *g);
int fw_graph_num_outputs(const fw_graph *g);
const char *fw_graph_input_name(const fw_graph *g, int i);
const char *fw_graph_output_name(const fw_graph *g, int i);
fw_dtype fw_graph_input_dtype(const fw_graph *g, int i);
/* Declared shape (-1 = dynamic); returns ndim. */
int fw_graph_input_shape(const fw_graph *g, int i, int64_t shape[FW_MAX_DIMS]);

/* Run: inputs[i] for each graph input (any CPU tensor of the declared dtype
 * and a shape matching the declared one), outputs[j] receive new references.
 * Errors: FW_EINVAL (count, NULL), FW_EDTYPE, FW_ESHAPE naming the input,
 * or an op's error naming the node ("node 3 (conv2d): ..."). */
int fw_graph_run(const fw_graph *g, fw_tensor *const *inputs, fw_tensor **outputs);

/* The memory plan of one run with these inputs: every intermediate buffer
 * gets an arena offset; buffers whose lifetimes (first write to last read)
 * do not overlap share space. */
typedef struct {
    int64_t buffers;          /* intermediate buffers */
    int64_t total_bytes;      /* sum of their sizes (no reuse) */
    int64_t peak_live_bytes;  /* max over steps of the bytes alive at once */
    int64_t arena_bytes;      /* size of the planned arena (>= peak_live_bytes) */
} fw_graph_plan;

/* Runs the graph once on `inputs` to learn the sizes, then plans. */
int fw_graph_plan_memory(fw_graph_plan *plan, const fw_graph *g, fw_tensor *const *inputs);

#ifdef __cplusplus
}
#endif
#endif
