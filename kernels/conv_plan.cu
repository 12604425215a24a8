// Convolution plans through cuDNN's legacy descriptor API (still shipped in
// cuDNN 9): NCHW and NHWC activations, KCRS filters under NCHW and KRSC
// under NHWC (conv.cu reorders mixp's KCRS weights), F16/BF16 on Tensor
// Cores with fp32 accumulation, F32 in plain FMA math (no TF32, so results
// track the CPU's), F64 in fp64.
//
// The algorithm: with benchmark off, the first of cuDNN's heuristic ranking
// that the mode allows; with it on, the fastest that cudnnFind*AlgorithmEx
// measures on the call's own buffers (PyTorch's cudnn.benchmark), once per
// plan. Deterministic mode allows only CUDNN_DETERMINISTIC algorithms, so a
// run repeats bit for bit; off, any algorithm (some use atomics).
#include <algorithm>
#include <cstdint>

#include "common.cuh"
#include "conv_plan.hpp"

namespace mixp::cuda {
namespace {

// Workspaces above this are passed over for a leaner algorithm.
constexpr size_t kMaxConvWorkspace = size_t(1) << 30;

cudnnDataType_t dnn_type(DType t) {
  switch (t) {
    case MIXP_F16: return CUDNN_DATA_HALF;
    case MIXP_BF16: return CUDNN_DATA_BFLOAT16;
    case MIXP_F32: return CUDNN_DATA_FLOAT;
    case MIXP_F64: return CUDNN_DATA_DOUBLE;
    default: fail(MIXP_ERR_INTERNAL, "cuda conv2d: dtype ", dtype_name(t), " is not a float type");
  }
}

int as_int(int64_t v, const char *what) {
  if (v < 0 || v > INT32_MAX) fail(MIXP_ERR_UNSUPPORTED, "cuda conv2d: ", what, " = ", v, " exceeds cuDNN's int range");
  return int(v);
}

void set_act(cudnnTensorDescriptor_t d, cudnnDataType_t dt, int64_t n, int64_t c, int64_t h, int64_t w,
             bool nhwc) {
  const int N = as_int(n, "n"), C = as_int(c, "channels"), H = as_int(h, "height"), W = as_int(w, "width");
  // Strides in 64 bits first: H * W * C can pass 2^31 while each factor fits.
  const int image = as_int(c * h * w, "an image's element count (C*H*W)");
  as_int(n * c * h * w, "a batch piece's element count");
  if (nhwc)
    MIXP_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(d, dt, N, C, H, W, image, 1, as_int(w * c, "W*C"), C));
  else
    MIXP_CUDNN_CHECK(cudnnSetTensor4dDescriptorEx(d, dt, N, C, H, W, image, as_int(h * w, "H*W"), W, 1));
}

void destroy(ConvPlan &p) noexcept {
  if (p.conv) cudnnDestroyConvolutionDescriptor(p.conv);
  if (p.w) cudnnDestroyFilterDescriptor(p.w);
  if (p.y) cudnnDestroyTensorDescriptor(p.y);
  if (p.x) cudnnDestroyTensorDescriptor(p.x);
  p = ConvPlan{};
}

// The plan's descriptors; `p` is destroyed by the caller if this throws.
void describe(ConvPlan &p, const Conv2dGeom &g, DType dtype) {
  const cudnnDataType_t dt = dnn_type(dtype);
  MIXP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p.x));
  MIXP_CUDNN_CHECK(cudnnCreateTensorDescriptor(&p.y));
  MIXP_CUDNN_CHECK(cudnnCreateFilterDescriptor(&p.w));
  MIXP_CUDNN_CHECK(cudnnCreateConvolutionDescriptor(&p.conv));
  set_act(p.x, dt, g.n, g.c_in, g.h, g.w, g.nhwc);
  set_act(p.y, dt, g.n, g.c_out, g.oh, g.ow, g.nhwc);
  MIXP_CUDNN_CHECK(cudnnSetFilter4dDescriptor(p.w, dt, g.nhwc ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW,
                                              as_int(g.c_out, "c_out"), as_int(g.c_in / g.groups, "c_in/groups"),
                                              as_int(g.kh, "kh"), as_int(g.kw, "kw")));
  const cudnnDataType_t compute = dtype == MIXP_F64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
  MIXP_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(
      p.conv, as_int(g.pad_h, "pad_h"), as_int(g.pad_w, "pad_w"), as_int(g.stride_h, "stride_h"),
      as_int(g.stride_w, "stride_w"), as_int(g.dil_h, "dilation_h"), as_int(g.dil_w, "dilation_w"),
      CUDNN_CROSS_CORRELATION, compute));
  MIXP_CUDNN_CHECK(cudnnSetConvolutionGroupCount(p.conv, as_int(g.groups, "groups")));
  MIXP_CUDNN_CHECK(cudnnSetConvolutionMathType(p.conv, is_half(dtype) ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH));
}

ConvKey key_of(const Conv2dGeom &g, DType dt, ConvDir dir) {
  ConvKey k;
  k.v = {g.n, g.c_in, g.h, g.w, g.c_out, g.kh, g.kw, g.oh, g.ow, g.stride_h, g.stride_w,
         g.pad_h, g.pad_w, g.dil_h, g.dil_w, g.groups, int64_t(g.nhwc), int64_t(dt), int64_t(dir),
         int64_t(g.benchmark), int64_t(g.deterministic), 0};
  return k;
}

// The first entry of a ranked list (heuristic order, or fastest first from
// a find) that ran, is allowed by the mode and fits `max_ws`.
template <class Perf>
int first_allowed(const Perf *perf, int count, bool deterministic, size_t max_ws) {
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= max_ws &&
        (!deterministic || perf[i].determinism == CUDNN_DETERMINISTIC))
      return int(perf[i].algo);
  return kConvDirect;
}

// The largest workspace the heuristic's allowed candidates ask for (at most
// kMaxConvWorkspace): what benchmark mode lends the timing runs.
template <class Perf>
size_t candidates_workspace(const Perf *perf, int count, bool deterministic) {
  size_t ws = 0;
  for (int i = 0; i < count; ++i)
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxConvWorkspace &&
        (!deterministic || perf[i].determinism == CUDNN_DETERMINISTIC))
      ws = std::max(ws, size_t(perf[i].memory));
  return ws;
}

// Ranks with the heuristic, then (benchmark) times the candidates with
// `find(perf, count, workspace, ws_bytes)`, and returns the chosen algorithm.
template <class Perf, int kCount, class Rank, class Find>
int choose(CudaBackend &be, const Conv2dGeom &g, Rank rank, Find find) {
  Perf perf[kCount];
  int count = 0;
  MIXP_CUDNN_CHECK(rank(kCount, &count, perf));
  if (!g.benchmark) return first_allowed(perf, count, g.deterministic, kMaxConvWorkspace);
  Scratch ws(be, candidates_workspace(perf, count, g.deterministic));
  MIXP_CUDNN_CHECK(find(kCount, &count, perf, ws.p, ws.n));
  return first_allowed(perf, count, g.deterministic, ws.n);
}

int choose_algo(CudaBackend &be, const Conv2dGeom &g, DType dt, ConvDir dir, const ConvPlan &p,
                const ConvOperands &o) {
  cudnnHandle_t h = cudnn_handle(be);
  switch (dir) {
    case ConvDir::Fwd:
      return choose<cudnnConvolutionFwdAlgoPerf_t, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
          be, g,
          [&](int n, int *c, auto *perf) {
            return cudnnGetConvolutionForwardAlgorithm_v7(h, p.x, p.w, p.conv, p.y, n, c, perf);
          },
          [&](int n, int *c, auto *perf, void *ws, size_t wsb) {
            return cudnnFindConvolutionForwardAlgorithmEx(h, p.x, o.a, p.w, o.b, p.conv, p.y, o.out, n, c,
                                                          perf, ws, wsb);
          });
    case ConvDir::BwdData:
      return choose<cudnnConvolutionBwdDataAlgoPerf_t, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          be, g,
          [&](int n, int *c, auto *perf) {
            return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, p.w, p.y, p.conv, p.x, n, c, perf);
          },
          [&](int n, int *c, auto *perf, void *ws, size_t wsb) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(h, p.w, o.a, p.y, o.b, p.conv, p.x, o.out, n,
                                                               c, perf, ws, wsb);
          });
    case ConvDir::BwdFilter: {
      // Timed into scratch: gw may hold earlier batch pieces' partial sums.
      Scratch gw(be, g.benchmark ? size_t(g.c_out * (g.c_in / g.groups) * g.kh * g.kw) * dtype_size(dt) : 0);
      return choose<cudnnConvolutionBwdFilterAlgoPerf_t, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          be, g,
          [&](int n, int *c, auto *perf) {
            return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, p.x, p.y, p.conv, p.w, n, c, perf);
          },
          [&](int n, int *c, auto *perf, void *ws, size_t wsb) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, p.x, o.a, p.y, o.b, p.conv, p.w, gw.p, n,
                                                                 c, perf, ws, wsb);
          });
    }
  }
  return kConvDirect;
}

size_t workspace_of(cudnnHandle_t h, const ConvPlan &p, ConvDir dir) {
  size_t ws = 0;
  if (p.algo == kConvDirect) return 0;
  switch (dir) {
    case ConvDir::Fwd:
      MIXP_CUDNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(h, p.x, p.w, p.conv, p.y,
                                                               cudnnConvolutionFwdAlgo_t(p.algo), &ws));
      break;
    case ConvDir::BwdData:
      MIXP_CUDNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(
          h, p.w, p.y, p.conv, p.x, cudnnConvolutionBwdDataAlgo_t(p.algo), &ws));
      break;
    case ConvDir::BwdFilter:
      MIXP_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(
          h, p.x, p.y, p.conv, p.w, cudnnConvolutionBwdFilterAlgo_t(p.algo), &ws));
      break;
  }
  return ws;
}

[[noreturn]] void no_forward_algorithm(const Conv2dGeom &g, DType dt) {
  fail(MIXP_ERR_UNSUPPORTED, "cuda conv2d: cuDNN offers no ", g.deterministic ? "deterministic " : "",
       "forward algorithm for x [", g.n, ", ", g.c_in, ", ", g.h, ", ", g.w, "] ", g.nhwc ? "NHWC" : "NCHW",
       ", weight [", g.c_out, ", ", g.c_in / g.groups, ", ", g.kh, ", ", g.kw, "], stride ", g.stride_h, "x",
       g.stride_w, ", padding ", g.pad_h, "x", g.pad_w, ", dilation ", g.dil_h, "x", g.dil_w, ", groups ",
       g.groups, " in ", dtype_name(dt),
       g.deterministic ? " (cudnn_deterministic=0, by mixp_session_set_cudnn or MIXP_CUDNN_DETERMINISTIC=0, "
                         "allows non-deterministic ones)"
                       : "");
}

}  // namespace

const ConvPlan &conv_plan(CudaBackend &be, const Conv2dGeom &piece, DType dt, ConvDir dir,
                          const ConvOperands &ops) {
  auto &cache = be.libs().conv_plans;
  const ConvKey key = key_of(piece, dt, dir);
  if (auto it = cache.find(key); it != cache.end()) return it->second;
  ConvPlan p;
  try {
    describe(p, piece, dt);
    p.algo = choose_algo(be, piece, dt, dir, p, ops);
    if (p.algo == kConvDirect && dir == ConvDir::Fwd) no_forward_algorithm(piece, dt);
    p.workspace = workspace_of(cudnn_handle(be), p, dir);
    return cache.emplace(key, p).first->second;
  } catch (...) {
    destroy(p);
    throw;
  }
}

void destroy_conv_plans(CudaBackend::Libs &libs) noexcept {
  for (auto &kv : libs.conv_plans) destroy(kv.second);
  libs.conv_plans.clear();
}

}  // namespace mixp::cuda
