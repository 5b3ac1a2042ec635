/*
 * fw/fw.h - the umbrella header of Eddy's framework: include this one.
 *
 * API-STABLE
 *
 * tensor.h  tensors, dtypes, errors, autograd, no-grad mode (fwcore)
 * ops.h     elementwise, unary, reductions, matmul, views, cast (fwcore)
 * index.h   concat, stack, split, gather, where, topk, ... (fwidx)
 * nn.h      linear, conv, pooling, norms, losses, RNN cells (fwnn)
 * device.h  device counts, the current GPU, memory counters
 * random.h, init.h, optim.h, safetensors.h (fwtrain)
 * Conventions (errors, ownership, threads) are in tensor.h and README.md.
 */
#ifndef FW_FW_H
#define FW_FW_H

#include "fw/tensor.h"
#include "fw/ops.h"

#include "fw/index.h"
#include "fw/nn.h"
#include "fw/random.h"
#include "fw/init.h"
#include "fw/optim.h"
#include "fw/safetensors.h"
#include "fw/complex.h"
#include "fw/device.h"

#endif
