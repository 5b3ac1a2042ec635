/* graph_int.h - the graph IR's internals (private to framework/graph and
 * framework/infer). */
#ifndef FW_GRAPH_INT_H
#define FW_GRAPH_INT_H

#include <stdatomic.h>
#include <stdbool.h>

#include "graph.h"

typedef enum {
    G_IDENTITY,
    /* binary, two tensors */
    G_ADD, G_SUB, G_MUL, G_DIV, G_POW, G_MAXIMUM, G_MINIMUM,
    /* a tensor and the scalar attribute s (chainable) */
    G_ADD_S, G_SUB_S, G_RSUB_S, G_MUL_S, G_DIV_S, G_RDIV_S, G_POW_S, G_RPOW_S,
    /* unary (chainable) */
    G_RELU, G_SIGMOID, G_TANH, G_EXP, G_LOG, G_SQRT, G_RSQRT, G_ABS, G_NEG, G_SQUARE,
    G_SILU, G_SIN, G_COS, G_GELU, G_LEAKY_RELU, G_CLIP,
    /* the rest */
    G_LINEAR, G_CONV2D, G_MAX_POOL2D, G_AVG_POOL2D, G_ADAPTIVE_AVG_POOL2D, G_BATCH_NORM,
    G_LAYER_NORM, G_SOFTMAX, G_LOG_SOFTMAX, G_MATMUL, G_RESHAPE, G_FLATTEN, G_SQUEEZE,
    G_UNSQUEEZE, G_TRANSPOSE, G_SUM, G_MEAN, G_MAX, G_MIN, G_CONCAT, G_CAST,
    G_EW_CHAIN,   /* produced by the elementwise-fusion pass only */
    G_NOPS
} g_op;

/* Ops the elementwise-fusion pass can chain (one tensor in, same shape out). */
static inline bool g_chainable(int op) { return op >= G_ADD_S && op <= G_CLIP; }

typedef struct {
    uint8_t op;       /* a chainable g_op */
    bool flag;        /* gelu: approximate; clip: has min */
    bool flag2;       /* clip: has max */
    double s, s2;     /* scalar / slope / clip min, clip max */
} g_step;

typedef struct {
    int op;
    int nin;
    int *in;              /* value indices, -1 for an absent optional input */
    int out;
    double s, s2, eps;    /* scalar ops / leaky slope; clip min, max; norms */
    bool has_min, has_max;
    int64_t stride[2], pad[4], dil[2], groups, kernel[2], osize[2];
    bool ceil_mode, exclusive, approximate, tx, ty, keepdim;
    int axis, start, stop;
    int64_t list[FW_MAX_DIMS];   /* shape / perm / axes / normalized_shape */
    int32_t sym[FW_MAX_DIMS];    /* -1, or the symbol list[i] stands for */
    int nlist;
    bool has_sym;
    fw_dtype dtype;
    int act;                     /* fused activation: 0, G_RELU, G_SIGMOID, G_TANH */
    int nsteps;                  /* G_EW_CHAIN */
    g_step steps[FW_GRAPH_MAX_CHAIN];
    bool dead;
    int *frees;                  /* values whose last reader is this node */
    int nfrees;
} g_node;

typedef enum { GV_INPUT, GV_CONST, GV_INTER } g_vkind;

typedef struct {
    char *name;
    g_vkind kind;
    fw_dtype dtype;               /* declared (inputs), actual (constants) */
    int ndim;
    int64_t shape[FW_MAX_DIMS];
    fw_tensor *konst;             /* GV_CONST */
} g_value;

struct fw_graph {
    atomic_int refs;
    g_node *nodes;
    int nnodes, capnodes;
    g_value *values;
    int nvalues, capvalues;
    int nin, nout;
    int in[FW_GRAPH_MAX_IO];
    int out[FW_GRAPH_MAX_IO];
    char *out_names[FW_GRAPH_MAX_IO];
    int nsyms;                    /* dynamic input dimensions */
    int sym_input[FW_GRAPH_MAX_IO * FW_MAX_DIMS];
    int sym_axis[FW_GRAPH_MAX_IO * FW_MAX_DIMS];
};

const char *fw__graph_op_name(int op);
/* Append a value (name copied); returns its index or a negative error. */
int fw__graph_add_value(fw_graph *g, const char *name, g_vkind kind);
/* Recompute each node's frees list (after passes). */
int fw__graph_finalize(fw_graph *g);
/* Run node n on the given input tensors (NULL for absent), symbols resolved
 * from syms (may be NULL when the node has none). */
int fw__graph_run_node(const g_node *n, fw_tensor *const *ins, const int64_t *syms,
                       fw_tensor **out);
/* The elementwise step a chainable node computes. */
g_step fw__graph_node_step(const g_node *n);
/* fw_graph_run that also records each node output's size in bytes
 * (sizes[value index]) when sizes is not NULL. */
int fw__graph_run_sized(const fw_graph *g, fw_tensor *const *inputs, fw_tensor **outputs,
                        int64_t *sizes);

#endif
