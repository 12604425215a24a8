// Convolution plans (conv_plan.cu): for one direction of one convolution,
// cuDNN's descriptors, the algorithm and the workspace size, made on first
// use and kept in the session's Libs::conv_plans, so a training step
// rebuilds no descriptor and queries nothing (conv.cu runs them).
#pragma once
#include "libs.hpp"

namespace mixp::cuda {

enum class ConvDir { Fwd = 0, BwdData = 1, BwdFilter = 2 };

// ConvPlan::algo when cuDNN has no algorithm that the mode allows for a
// backward direction: conv.cu's direct kernels, which sum in a fixed order.
constexpr int kConvDirect = -1;

// The device buffers of the call a plan is made for, which benchmark mode
// times the candidates on: Fwd (x, w, y), BwdData (w, gy, gx), BwdFilter
// (x, gy, gw; the timing writes scratch, never gw, which a later batch
// piece accumulates into).
struct ConvOperands {
  const void *a = nullptr, *b = nullptr;
  void *out = nullptr;
};

// The plan of `piece` (at most 2^31 elements per tensor) in direction
// `dir`, chosen as piece.benchmark / piece.deterministic say: by timing
// (cudnnFind*AlgorithmEx) or by cuDNN's heuristic ranking
// (cudnnGet*Algorithm_v7), among the deterministic algorithms or all, with
// workspaces up to 1 GiB. A forward without one fails with
// MIXP_ERR_UNSUPPORTED naming the geometry; a backward gets kConvDirect.
const ConvPlan &conv_plan(CudaBackend &be, const Conv2dGeom &piece, DType dt, ConvDir dir,
                          const ConvOperands &ops);

}  // namespace mixp::cuda
