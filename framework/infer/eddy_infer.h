/*
 * eddy_infer.h - Eddy's C inference runtime (Paddle Inference's shape).
 *
 *   fw_infer_config *cfg = fw_infer_config_new();
 *   fw_infer_config_set_model(cfg, "lenet.pdmodel", "lenet.pdiparams");
 *   fw_infer_config_set_cpu_threads(cfg, 4);
 *   fw_infer_predictor *p;
 *   if (fw_infer_predictor_create(&p, cfg) < 0) puts(fw_infer_last_error());
 *   fw_infer_tensor *in = fw_infer_get_input_handle(p, fw_infer_input_name(p, 0));
 *   fw_infer_tensor_reshape(in, 4, (int64_t[]){1, 1, 8, 8});
 *   fw_infer_tensor_copy_from_cpu(in, pixels, sizeof(pixels));
 *   fw_infer_predictor_run(p);
 *   fw_infer_tensor *out = fw_infer_get_output_handle(p, fw_infer_output_name(p, 0));
 *   fw_infer_tensor_copy_to_cpu(out, logits, sizeof(logits));
 *
 * Models are what paddle.jit.save writes (framework/graph/README.md); they
 * run with the framework's CPU kernels, no Python. Loading validates the
 * files completely (a truncated or crafted file is a clear error, never a
 * crash) and applies the graph passes unless switched off.
 *
 * Errors: functions returning int give 0 or a negative FW_E* code (fw/tensor.h)
 * and set the thread's message, read with fw_infer_last_error().
 * Ownership: a config is the caller's (the predictor copies what it needs);
 * handles belong to their predictor and live until it is freed.
 * Threads: one predictor serves one thread at a time; fw_infer_predictor_clone
 * makes another predictor sharing the loaded weights (read-only), so N
 * threads run N clones concurrently. The thread count set in a config sizes
 * the framework's one thread pool (process-wide).
 * GPU: this build has no CUDA backend; fw_infer_config_enable_gpu records
 * the request and predictor creation fails with FW_EUNSUPPORTED saying so.
 */
#ifndef EDDY_INFER_H
#define EDDY_INFER_H

#include <stddef.h>
#include <stdint.h>

#include "fw/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FW_INFER_API __attribute__((visibility("default")))
#else
#define FW_INFER_API
#endif

typedef struct fw_infer_config fw_infer_config;
typedef struct fw_infer_predictor fw_infer_predictor;
typedef struct fw_infer_tensor fw_infer_tensor;

/* The thread's last error message ("" when none). */
FW_INFER_API const char *fw_infer_last_error(void);

/* ---- config ---------------------------------------------------------------- */
/* NULL when out of memory. Defaults: no model, threads = the pool's size,
 * CPU, graph passes on. */
FW_INFER_API fw_infer_config *fw_infer_config_new(void);
FW_INFER_API void fw_infer_config_free(fw_infer_config *c);
/* Model and parameters files (copied). params may be NULL: model_file is
 * then a prefix and ".pdmodel"/".pdiparams" are appended. FW_EINVAL for
 * NULL/empty or over-long (4096) paths. */
FW_INFER_API int fw_infer_config_set_model(fw_infer_config *c, const char *model_file,
                                           const char *params_file);
/* 1..1024 threads (FW_EINVAL otherwise). */
FW_INFER_API int fw_infer_config_set_cpu_threads(fw_infer_config *c, int n);
/* Ask for GPU device_id with memory_mb of pool. Accepted here; refused by
 * fw_infer_predictor_create when no CUDA backend is registered. */
FW_INFER_API int fw_infer_config_enable_gpu(fw_infer_config *c, int memory_mb, int device_id);
FW_INFER_API void fw_infer_config_disable_gpu(fw_infer_config *c);
/* Graph passes on (default) or off (Paddle's switch_ir_optim). */
FW_INFER_API void fw_infer_config_switch_ir_optim(fw_infer_config *c, int on);

/* ---- predictor -------------------------------------------------------------- */
/* Load and optimise the model. Errors: FW_EINVAL (no model set), FW_EIO,
 * FW_EFORMAT (bad file, message names what), FW_EUNSUPPORTED (GPU, op),
 * FW_ENOMEM. */
FW_INFER_API int fw_infer_predictor_create(fw_infer_predictor **out, const fw_infer_config *c);
/* A predictor sharing p's graph and weights, with its own handles. */
FW_INFER_API int fw_infer_predictor_clone(fw_infer_predictor **out, fw_infer_predictor *p);
FW_INFER_API void fw_infer_predictor_free(fw_infer_predictor *p);   /* NULL-safe */

FW_INFER_API int fw_infer_num_inputs(const fw_infer_predictor *p);
FW_INFER_API int fw_infer_num_outputs(const fw_infer_predictor *p);
/* Borrowed names, NULL for a bad index. */
FW_INFER_API const char *fw_infer_input_name(const fw_infer_predictor *p, int i);
FW_INFER_API const char *fw_infer_output_name(const fw_infer_predictor *p, int i);
/* Handles by name (NULL and an error message when unknown). */
FW_INFER_API fw_infer_tensor *fw_infer_get_input_handle(fw_infer_predictor *p, const char *name);
FW_INFER_API fw_infer_tensor *fw_infer_get_output_handle(fw_infer_predictor *p, const char *name);

/* Run on the inputs' current data. Errors: FW_EINVAL (an input never
 * copied in), FW_EDTYPE/FW_ESHAPE (naming the input), an op's error. */
FW_INFER_API int fw_infer_predictor_run(fw_infer_predictor *p);

/* The memory plan of the last run's input shapes (bytes): peak planned
 * arena and the sum of all intermediates without reuse. */
FW_INFER_API int fw_infer_predictor_memory_plan(fw_infer_predictor *p, int64_t *arena_bytes,
                                                int64_t *total_bytes);

/* ---- tensors ---------------------------------------------------------------- */
/* Set an input's shape (ndim 0..8, dims >= 0, numel <= 2^31); must agree with
 * the model's declared shape where that is fixed. */
FW_INFER_API int fw_infer_tensor_reshape(fw_infer_tensor *t, int ndim, const int64_t *shape);
/* Copy nbytes (== numel x dtype size of the shape set by reshape) into an
 * input, in the input's dtype, C order. */
FW_INFER_API int fw_infer_tensor_copy_from_cpu(fw_infer_tensor *t, const void *data,
                                               size_t nbytes);
/* Copy an output (after run) into data; nbytes must be at least its size. */
FW_INFER_API int fw_infer_tensor_copy_to_cpu(fw_infer_tensor *t, void *data, size_t nbytes);
/* Shape into shape[FW_MAX_DIMS]; returns ndim (or a negative error before
 * the tensor has data). */
FW_INFER_API int fw_infer_tensor_shape(const fw_infer_tensor *t, int64_t *shape);
FW_INFER_API fw_dtype fw_infer_tensor_dtype(const fw_infer_tensor *t);
FW_INFER_API const char *fw_infer_tensor_name(const fw_infer_tensor *t);
/* Bytes of data (numel x dtype size), 0 before any. */
FW_INFER_API size_t fw_infer_tensor_nbytes(const fw_infer_tensor *t);

#ifdef __cplusplus
}
#endif
#endif
