/*
 * fw/fw.h - the umbrella header of Eddy's framework: include this one.
 *
 * API-STABLE
 *
 * tensor.h  tensors, dtypes, errors, autograd, no-grad mode (fwcore)
 * ops.h     elementwise, unary, reductions, matmul, views, cast (fwcore)
 * index.h   concat, stack, split, gather, where, topk, ... (fwidx)
 * nn.h      linear, conv, pooling, norms, losses, RNN cells (fwnn)
 * random.h, init.h, optim.h, safetensors.h (fwtrain)
 * Conventions (errors, ownership, threads) are in tensor.h and README.md.
 */
#ifndef FW_FW_H
#define FW_FW_H

#include "fw/tensor.h"
#include "fw/ops.h"

/* Areas owned by other modules' authors join as they land. */
#if __has_include("fw/index.h")
#include "fw/index.h"
#endif
#if __has_include("fw/nn.h")
#include "fw/nn.h"
#endif
#if __has_include("fw/random.h")
#include "fw/random.h"
#endif
#if __has_include("fw/init.h")
#include "fw/init.h"
#endif
#if __has_include("fw/optim.h")
#include "fw/optim.h"
#endif
#if __has_include("fw/safetensors.h")
#include "fw/safetensors.h"
#endif

#endif
