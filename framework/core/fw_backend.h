/*
 * fw_backend.h - the device backend table (private to framework/).
 *
 * Each device registers one fw_backend: memory functions plus the kernels
 * the core ops dispatch to. cpu/backend.c provides FW_CPU (always present);
 * a cuda/ folder can register FW_CUDA with fw_backend_register() without
 * the core knowing about it. Kernels receive views whose data pointers are
 * device pointers; they return 0 or a negative FW_E* (with a message).
 */
#ifndef FW_BACKEND_H
#define FW_BACKEND_H

#include "fw/device.h"
#include "fw/tensor.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A strided view handed to kernels: data points at the first element. */
typedef struct fw_kview {
    void *data;
    fw_dtype dtype;
    int ndim;
    int64_t shape[FW_MAX_DIMS];
    int64_t strides[FW_MAX_DIMS]; /* elements; 0 on broadcast dims */
} fw_kview;

/* Binary kernel ops. Arithmetic ones read and write the same dtype;
 * comparisons/logical ones read `a`'s dtype and write bool. The *_GRAD_*
 * ones are helpers for backward passes. */
typedef enum {
    FW_BIN_ADD, FW_BIN_SUB, FW_BIN_MUL, FW_BIN_DIV, FW_BIN_POW,
    FW_BIN_MAX, FW_BIN_MIN,
    FW_BIN_EQ, FW_BIN_NE, FW_BIN_LT, FW_BIN_LE, FW_BIN_GT, FW_BIN_GE,
    FW_BIN_AND, FW_BIN_OR, FW_BIN_XOR,
    FW_BIN_POW_GRAD_A,  /* b * a^(b-1) */
    FW_BIN_POW_GRAD_B,  /* a > 0 ? a^b * log(a) : 0 */
    FW_BIN_GE_MASK,     /* a >= b ? 1 : 0 in a's dtype */
    FW_BIN_LT_MASK,     /* a < b ? 1 : 0 in a's dtype */
    FW_BIN_FLOORDIV,    /* floor(a / b) (Python //); ints: b != 0 checked by the op */
    FW_BIN_MOD,         /* a - floor(a / b) * b (Python %, sign of b) */
    FW_BIN_COUNT
} fw_binop;

/* Unary kernel ops over contiguous float/double arrays (ABS/NEG also ints). */
typedef enum {
    FW_UN_EXP, FW_UN_LOG, FW_UN_SQRT, FW_UN_RSQRT, FW_UN_ABS, FW_UN_NEG,
    FW_UN_SQUARE, FW_UN_TANH, FW_UN_SIGMOID, FW_UN_RELU, FW_UN_GELU,
    FW_UN_GELU_TANH, FW_UN_LEAKY_RELU, FW_UN_SILU, FW_UN_SIN, FW_UN_COS,
    FW_UN_POW,          /* x ** alpha */
    FW_UN_RPOW,         /* alpha ** x */
    FW_UN_NOT,          /* logical not -> bool */
    FW_UN_FLOOR, FW_UN_CEIL, FW_UN_ROUND, FW_UN_SIGN, FW_UN_RECIPROCAL,
    FW_UN_LOG1P, FW_UN_EXPM1, FW_UN_ERF, FW_UN_LOG2, FW_UN_LOG10,
    FW_UN_COUNT
} fw_unop;

typedef enum {
    FW_RED_SUM, FW_RED_MAX, FW_RED_MIN, FW_RED_PROD, FW_RED_COUNT
} fw_redop;

/* Kernel families beyond the core ones, one table each, declared in their
 * own headers so each family's owner changes only its file:
 *   core/fw_backend_nn.h     softmax, linear, conv, pooling, norms, dropout,
 *                            embedding, losses, RNN cells      (ops/nn_*.c)
 *   core/fw_backend_index.h  concat, split, gather, scatter, where, sort,
 *                            clip, cumsum, masked ops, ...     (ops/index*.c, join.c)
 *   core/fw_backend_optim.h  fused SGD/Momentum/Adam(W), sum of squares (optim/)
 *   core/fw_backend_random.h Philox fills: uniform, normal, bernoulli (random/)
 *   core/fw_backend_fft.h    complex DFT                        (ops/fft.c)
 * A backend leaves a family NULL when it has none; ops then fail with
 * FW_EDEVICE "<op>: not supported on cuda" (fw_backend_family()). */
struct fw_nn_kernels;
struct fw_index_kernels;
struct fw_optim_kernels;
struct fw_random_kernels;
struct fw_fft_kernels;

/* Device queries behind fw/device.h (NULL for the CPU: one device). */
typedef struct fw_device_ops {
    int (*count)(void);
    int (*set_current)(int index);
    int (*current)(void);
    int (*synchronize)(int index);
    int (*properties)(int index, fw_device_props *out);
    int (*memory_stats)(int index, fw_device_memory *out);
    int (*reset_peak)(int index);
    int (*empty_cache)(void);
} fw_device_ops;

typedef struct fw_backend {
    const char *name;
    fw_device device;
    bool host_accessible;     /* data pointers are CPU-addressable */

    /* Memory (raw, 64-byte aligned; alloc returns NULL when out of memory). */
    void *(*alloc)(size_t nbytes);
    void (*free)(void *p, size_t nbytes);
    /* Copy nbytes between this device and dst_dev/src_dev (one is this). */
    int (*copy)(void *dst, fw_device dst_dev, const void *src, fw_device src_dev,
                size_t nbytes);
    int (*memset)(void *dst, int byte, size_t nbytes);

    /* Kernels. */
    /* dst[i] = (dst dtype) src[i] over the common shape (strided, casting). */
    int (*copy_strided)(const fw_kview *dst, const fw_kview *src);
    /* dst[i] = value converted to dst's dtype. */
    int (*fill)(const fw_kview *dst, double value);
    /* out (contiguous) = a op b; a and b already broadcast to out's shape. */
    int (*binary)(fw_binop op, const fw_kview *out, const fw_kview *a, const fw_kview *b);
    /* out[i] = f(x[i]) over n contiguous elements of dtype dt. */
    int (*unary)(fw_unop op, void *out, const void *x, int64_t n, fw_dtype dt,
                 double alpha);
    /* gx[i] = gy[i] * f'(x[i]) (y = f(x) given too), contiguous. */
    int (*unary_grad)(fw_unop op, void *gx, const void *gy, const void *x,
                      const void *y, int64_t n, fw_dtype dt, double alpha);
    /* out (contiguous, kept dims of x) = reduction of contiguous x over the
     * axes in mask. out dtype may differ for SUM (int64 for ints). */
    int (*reduce)(fw_redop op, const fw_kview *out, const fw_kview *x, unsigned mask);
    /* out (contiguous, int64) = index of first max (is_max) / min along axis
     * of contiguous x viewed as [outer, n, inner]. */
    int (*arg_reduce)(bool is_max, int64_t *out, const void *x, fw_dtype dt,
                      int64_t outer, int64_t n, int64_t inner);
    /* C[b] = op(A[b]) @ op(B[b]) for `batch` matrices, row-major with
     * leading dims lda/ldb/ldc and batch strides sa/sb/sc (elements);
     * float32/float64. */
    int (*gemm_batched)(fw_dtype dt, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                        const void *a, int64_t lda, const int64_t *a_off,
                        const void *b, int64_t ldb, const int64_t *b_off,
                        void *c, int64_t ldc, int64_t sc, int64_t batch);

    /* The families above (NULL: none on this device). */
    const struct fw_nn_kernels *nn;
    const struct fw_index_kernels *index;
    const struct fw_optim_kernels *optim;
    const struct fw_random_kernels *random;
    const struct fw_fft_kernels *fft;

    /* Device queries (NULL: a single always-ready device, the CPU). */
    const fw_device_ops *dev;
    /* alloc/free do their own caching (the CUDA backend's stream-ordered
     * allocator): core/alloc.c passes requests straight through. */
    bool caches_itself;
} fw_backend;

/* Install the table for b->device (replaces any earlier one). */
int fw_backend_register(const fw_backend *b);
/* The table of dev or NULL; FW_CPU is always there. */
const fw_backend *fw_backend_get(fw_device dev);
/* Sets FW_EDEVICE "<op>: no backend for cuda" and returns NULL. */
const fw_backend *fw_backend_require(fw_device dev, const char *op);
/* The family table `fam` (b->nn, b->index, ...) or NULL with FW_EDEVICE
 * "<op>: not supported on <backend name>". Usage:
 *   const struct fw_nn_kernels *k = fw_backend_family(b, b->nn, "conv2d"); */
const void *fw_backend_family(const fw_backend *b, const void *fam, const char *op);

/* The CPU table (cpu/backend.c). */
const fw_backend *fw__cpu_backend(void);

/* View of a tensor for kernels. */
void fw__kview(fw_kview *v, const fw_tensor *t);

#endif
