// Fused attention on CUDA (Backend::attention_forward/backward): cuDNN's
// scaled-dot-product-attention engines, described with the cuDNN frontend's
// graph API (header-only: PyPI's nvidia-cudnn-frontend, the version pinned
// in .ci/run). Built only when CMake found those headers
// (MIXP_HAVE_CUDNN_FRONTEND); without them the backend declines every case
// and attention runs composed.
//
// What cuDNN runs: F16/BF16 with fp32 softmax, causal or not, dropout, the
// head sizes and strides its engines take (check_support says; D <= 128 on
// sm_80/sm_90, more on newer parts). Everything else -- F32, F64, an odd D,
// a misaligned view -- is declined, so the op composes it from the other
// kernels. One case is described once: the forward and the deterministic
// backward graphs are built together on first sight (a backend that accepts
// a forward must accept its backward) and cached per shape, strides, dtype,
// scale, causal flag and dropout rate in Libs::attention; a declined case is
// cached too, so it costs one failed build, not one per call.
//
// Dropout: cuDNN draws its own mask from Philox with the seed and offset
// mixp's session stream hands out (device I64 scalars), and regenerates the
// same mask in the backward. Its bits are cuDNN's, not the CPU's philox_uniform at (b, h, i,
// j) (backend.hpp, AttentionArgs): the rate and the 1 / (1 - p) scaling are
// the same, the dropped elements are not.
#include "libs.hpp"

#ifdef MIXP_HAVE_CUDNN_FRONTEND
#include <cudnn_frontend.h>

#include <array>
#include <cstring>
#include <exception>
#include <memory>
#include <unordered_map>
#include <vector>

#include "core/error.hpp"

namespace fe = cudnn_frontend;

namespace mixp::cuda {
namespace {

using TensorAttr = std::shared_ptr<fe::graph::Tensor_attributes>;
using Dims = std::vector<int64_t>;

// The graphs' tensor ids: the keys of the variant pack.
enum Uid : int64_t { kQ = 1, kK, kV, kO, kStats, kSeed, kOffset, kDO, kDQ, kDK, kDV };

// A View's dims; a dim of extent 1 (view4's padding has stride 0) gets the
// stride of a packed dim, which cuDNN accepts and which addresses nothing.
Dims dims_of(const View &v) { return Dims(v.shape, v.shape + 4); }
Dims strides_of(const View &v) {
  Dims s(v.strides, v.strides + 4);
  for (int i = 2; i >= 0; --i)
    if (v.shape[i] == 1) s[i] = v.shape[i + 1] * s[i + 1];
  return s;
}

// The layout the op gives o and the gradients (dense_strides_in_order of
// the tensor they belong to), as the graphs are planned for it.
Dims dense_like(const View &v) {
  View d = v;
  dense_strides_in_order(v, d.strides);
  return strides_of(d);
}

bool aligned16(const void *p) { return reinterpret_cast<uintptr_t>(p) % 16 == 0; }

// What cuDNN is never asked: dtypes other than F16/BF16, a stride it cannot
// take (0 or negative on a real dim), pointers off its 16-byte vectors.
bool worth_asking(const AttentionArgs &a) {
  const DType t = a.q.dtype;
  if (t != MIXP_F16 && t != MIXP_BF16) return false;
  if (a.k.dtype != t || a.v.dtype != t || a.o.dtype != t || a.lse.dtype != MIXP_F32) return false;
  for (const View *v : {&a.q, &a.k, &a.v, &a.o}) {
    if (v->ndim != 4 || v->strides[3] != 1 || !aligned16(v->data)) return false;
    for (int i = 0; i < 3; ++i)
      if (v->shape[i] > 1 && v->strides[i] <= 0) return false;
  }
  return true;
}

using AttentionKey = PlanKey<24>;

int64_t bits_of(double x) {
  int64_t b;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// Everything a plan depends on: the pointers' values do not matter (the
// variant pack carries them), their geometry does.
AttentionKey key_of(const AttentionArgs &a) {
  AttentionKey k;
  size_t i = 0;
  k.v[i++] = int64_t(a.q.dtype) | int64_t(a.causal) << 8;
  k.v[i++] = bits_of(a.scale);
  k.v[i++] = bits_of(a.dropout_p);
  k.v[i++] = a.k.shape[2];  // S (q carries B, H, L, D)
  for (const View *v : {&a.q, &a.k, &a.v, &a.o}) {
    const Dims s = strides_of(*v);
    for (int d = 0; d < 3; ++d) k.v[i++] = s[d];
  }
  for (int d = 0; d < 4; ++d) k.v[i++] = a.q.shape[d];
  return k;
}

// The forward and backward graphs of one case; null graphs: declined.
struct AttentionPlan {
  std::shared_ptr<fe::graph::Graph> fwd, bwd;
  int64_t fwd_workspace = 0, bwd_workspace = 0;
};

std::shared_ptr<fe::graph::Graph> new_graph(DType t) {
  auto g = std::make_shared<fe::graph::Graph>();
  g->set_io_data_type(t == MIXP_F16 ? fe::DataType_t::HALF : fe::DataType_t::BFLOAT16)
      .set_intermediate_data_type(fe::DataType_t::FLOAT)
      .set_compute_data_type(fe::DataType_t::FLOAT);
  return g;
}

TensorAttr tensor(fe::graph::Graph &g, const char *name, Uid uid, const Dims &dims, const Dims &strides) {
  return g.tensor(
      fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim(dims).set_stride(strides));
}
TensorAttr tensor(fe::graph::Graph &g, const char *name, Uid uid, const View &v) {
  return tensor(g, name, uid, dims_of(v), strides_of(v));
}

// The dropout's Philox seed or offset: one I64 in device memory, as
// cuDNN's RNG reads it (and as PyTorch hands it over).
TensorAttr philox_scalar(fe::graph::Graph &g, const char *name, Uid uid) {
  return g.tensor(fe::graph::Tensor_attributes()
                      .set_name(name)
                      .set_uid(uid)
                      .set_dim({1, 1, 1, 1})
                      .set_stride({1, 1, 1, 1})
                      .set_data_type(fe::DataType_t::INT64));
}

// lse as cuDNN's Stats: fp32 [B, H, L, 1], packed.
TensorAttr &as_stats(TensorAttr &t, const View &q) {
  const int64_t h = q.shape[1], l = q.shape[2];
  t->set_uid(kStats).set_data_type(fe::DataType_t::FLOAT).set_dim({q.shape[0], h, l, 1})
      .set_stride({h * l, l, 1, 1});
  return t;
}

// Validated, lowered, supported by an engine, planned: false where cuDNN
// has no engine for the graph (or cannot describe it).
bool plan_graph(fe::graph::Graph &g, cudnnHandle_t h, int64_t *workspace) {
  return g.validate().is_good() && g.build_operation_graph(h).is_good() &&
         g.create_execution_plans({fe::HeurMode_t::A}).is_good() && g.check_support().is_good() &&
         g.build_plans().is_good() && g.get_workspace_size(*workspace).is_good();
}

std::shared_ptr<fe::graph::Graph> forward_graph(const AttentionArgs &a, cudnnHandle_t h,
                                                int64_t *workspace) {
  auto g = new_graph(a.q.dtype);
  auto opts = fe::graph::SDPA_attributes()
                  .set_name("mixp_attention")
                  .set_generate_stats(true)
                  .set_attn_scale(float(a.scale))
                  .set_causal_mask(a.causal);
  if (a.dropout_p > 0.0)
    opts.set_dropout(float(a.dropout_p), philox_scalar(*g, "seed", kSeed),
                     philox_scalar(*g, "offset", kOffset));
  auto [o, stats] = g->sdpa(tensor(*g, "q", kQ, a.q), tensor(*g, "k", kK, a.k),
                            tensor(*g, "v", kV, a.v), opts);
  o->set_output(true).set_uid(kO).set_dim(dims_of(a.o)).set_stride(strides_of(a.o));
  as_stats(stats, a.q)->set_output(true);
  return plan_graph(*g, h, workspace) ? g : nullptr;
}

// dO in o's layout, dQ, dK and dV each in its input's (dense_like: no
// copies where q, k and v are heads viewed out of one projection);
// deterministic (no atomics in dQ's accumulation), as every mixp backward is.
std::shared_ptr<fe::graph::Graph> backward_graph(const AttentionArgs &a, cudnnHandle_t h,
                                                 int64_t *workspace) {
  const int64_t b = a.q.shape[0], nh = a.q.shape[1], l = a.q.shape[2], s = a.k.shape[2],
                d = a.q.shape[3];
  auto g = new_graph(a.q.dtype);
  auto opts = fe::graph::SDPA_backward_attributes()
                  .set_name("mixp_attention_backward")
                  .set_attn_scale(float(a.scale))
                  .set_causal_mask(a.causal)
                  .set_deterministic_algorithm(true);
  if (a.dropout_p > 0.0)
    opts.set_dropout(float(a.dropout_p), philox_scalar(*g, "seed", kSeed),
                     philox_scalar(*g, "offset", kOffset));
  TensorAttr stats = g->tensor(fe::graph::Tensor_attributes().set_name("lse"));
  auto [dq, dk, dv] = g->sdpa_backward(
      tensor(*g, "q", kQ, a.q), tensor(*g, "k", kK, a.k), tensor(*g, "v", kV, a.v),
      tensor(*g, "o", kO, a.o), tensor(*g, "dO", kDO, dims_of(a.o), dense_like(a.o)),
      as_stats(stats, a.q), opts);
  dq->set_output(true).set_uid(kDQ).set_dim({b, nh, l, d}).set_stride(dense_like(a.q));
  dk->set_output(true).set_uid(kDK).set_dim({b, nh, s, d}).set_stride(dense_like(a.k));
  dv->set_output(true).set_uid(kDV).set_dim({b, nh, s, d}).set_stride(dense_like(a.v));
  return plan_graph(*g, h, workspace) ? g : nullptr;
}

// Runs a planned graph on the session's stream. Its workspace and, with
// dropout, the seed and offset (written there by a kernel, no wait) are
// stream-ordered scratch.
void execute(CudaBackend &be, const AttentionArgs &a, const fe::graph::Graph &g, int64_t workspace,
             std::unordered_map<int64_t, void *> &pack) {
  Scratch philox(be, a.dropout_p > 0.0 ? 2 * sizeof(int64_t) : 0);
  if (philox.p) {
    write_philox_args(be, philox.as<int64_t>(), a.seed, a.offset);
    pack[kSeed] = philox.as<int64_t>();
    pack[kOffset] = philox.as<int64_t>() + 1;
  }
  Scratch ws(be, size_t(workspace));
  fe::error_t st = g.execute(cudnn_handle(be), pack, ws.p);
  if (st.is_bad())
    fail(MIXP_ERR_DEVICE, "cuda: cuDNN's fused attention failed to run: ", st.get_message());
}

}  // namespace

struct AttentionPlans {
  std::unordered_map<AttentionKey, AttentionPlan, PlanKeyHash> plans;
};

namespace {

// The case's plans, built on first sight; null when declined.
const AttentionPlan *plan_for(CudaBackend &be, const AttentionArgs &a) {
  if (!worth_asking(a)) return nullptr;
  CudaBackend::Libs &L = be.libs();
  if (!L.attention) L.attention = std::make_shared<AttentionPlans>();
  const AttentionKey key = key_of(a);
  auto it = L.attention->plans.find(key);
  if (it == L.attention->plans.end()) {
    AttentionPlan p;
    try {
      p.fwd = forward_graph(a, cudnn_handle(be), &p.fwd_workspace);
      if (p.fwd) p.bwd = backward_graph(a, cudnn_handle(be), &p.bwd_workspace);
    } catch (const Error &) {
      throw;  // mixp's own (a failed cudnnCreate): not a decline
    } catch (const std::exception &) {
      p = AttentionPlan{};  // the frontend could not describe the case
    }
    if (!p.bwd) p = AttentionPlan{};
    it = L.attention->plans.emplace(key, std::move(p)).first;
  }
  return it->second.fwd ? &it->second : nullptr;
}

}  // namespace

bool CudaBackend::attention_forward(const AttentionArgs &a) {
  const AttentionPlan *p = plan_for(*this, a);
  if (!p) return false;
  std::unordered_map<int64_t, void *> pack = {
      {kQ, a.q.data}, {kK, a.k.data}, {kV, a.v.data}, {kO, a.o.data}, {kStats, a.lse.data}};
  execute(*this, a, *p->fwd, p->fwd_workspace, pack);
  return true;
}

namespace {

// One tensor of the backward graph in the layout it was planned for: the
// caller's View itself when it has that layout, else dense scratch (dO
// copied in before the graph runs, a gradient copied out after it).
struct PlannedView {
  View at;
  Scratch scratch;
  PlannedView(CudaBackend &be, const View &given, const Dims &want)
      : at(given),
        scratch(be, strides_of(given) == want && aligned16(given.data)
                        ? 0
                        : size_t(given.numel()) * dtype_size(given.dtype)) {
    if (!scratch.p) return;
    at.data = scratch.p;
    for (int i = 0; i < 4; ++i) at.strides[i] = want[size_t(i)];
  }
};

}  // namespace

bool CudaBackend::attention_backward(const AttentionArgs &a) {
  const AttentionPlan *p = plan_for(*this, a);
  if (!p) return false;
  PlannedView dout(*this, a.dout, dense_like(a.o)), dq(*this, a.dq, dense_like(a.q)),
      dk(*this, a.dk, dense_like(a.k)), dv(*this, a.dv, dense_like(a.v));
  if (dout.scratch.p) copy(a.dout, dout.at);
  std::unordered_map<int64_t, void *> pack = {
      {kQ, a.q.data},      {kK, a.k.data},      {kV, a.v.data},      {kO, a.o.data},
      {kStats, a.lse.data}, {kDO, dout.at.data}, {kDQ, dq.at.data},   {kDK, dk.at.data},
      {kDV, dv.at.data}};
  execute(*this, a, *p->bwd, p->bwd_workspace, pack);
  if (dq.scratch.p) copy(dq.at, a.dq);
  if (dk.scratch.p) copy(dk.at, a.dk);
  if (dv.scratch.p) copy(dv.at, a.dv);
  return true;
}

}  // namespace mixp::cuda
#endif  // MIXP_HAVE_CUDNN_FRONTEND
