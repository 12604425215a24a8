// The backward pass: a topological walk over the nodes reachable from the
// root, summing gradients per node output, then accumulating into leaves.
// A leaf's gradient is final once the last node feeding it has run: it is
// formed then (and shown to the session's LeafGradObserver, if one is
// armed), but leaf .grad fields are written only after every node ran, so a
// pass that fails part-way leaves the leaves as they were. The engine sits
// above the ops (the formulas it runs and the sums it forms are ops), while
// the graph it walks is recorded below them (autograd/graph.cpp).
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "autograd/node.hpp"
#include "core/error.hpp"
#include "core/op_stats.hpp"
#include "ops/ops.hpp"
#include "ops/profile.hpp"

namespace mixp {

namespace {

// Adds g into slot (summing when a gradient already arrived there).
void accumulate(TensorPtr &slot, const TensorPtr &g) {
  if (!g) return;
  slot = slot ? add(slot, g) : g;
}

// Brings a gradient to the dtype and shape the receiving tensor expects.
TensorPtr conform(TensorPtr g, DType dtype, const Shape &shape, const char *node_name) {
  if (shape_of(*g) != shape)
    fail(MIXP_ERR_INTERNAL, "mixp_backward: op '", node_name, "' produced a gradient of shape ",
         shape_str(*g), " for an input of shape ", shape_str(shape));
  if (g->dtype != dtype) g = cast(g, dtype);
  return g;
}

// Op statistics: one backward call of the node's op, in the dtype of the
// first gradient it produced (nodes of internal scopes are not counted).
void count_backward(Session *s, const Node &n, const std::vector<TensorPtr> &gins) {
  if (!op_info(n.op_id).is_public) return;
  for (const TensorPtr &g : gins)
    if (g) {
      count_op_call(s, n.op_id, true, g->dtype);
      return;
    }
}

// The gradient the pass starts from: seed_grad in the loss's dtype (a copy
// of its own), or 1 for a scalar loss.
TensorPtr seed_gradient(Tensor &root, const Tensor *seed, const char *fn) {
  Session *s = root.session.get();
  NoGradGuard ng(s);
  if (!seed) {
    if (root.numel() != 1)
      fail(MIXP_ERR_SHAPE, fn, ": loss has shape ", shape_str(root),
           "; a non-scalar loss needs an explicit seed_grad");
    return full(s, root.dtype, shape_of(root), 1.0);
  }
  if (seed->session.get() != s) fail(MIXP_ERR_DEVICE, fn, ": seed_grad belongs to another session");
  if (shape_of(*seed) != shape_of(root))
    fail(MIXP_ERR_SHAPE, fn, ": seed_grad has shape ", shape_str(*seed), " but loss has shape ",
         shape_str(root));
  if (!is_float(seed->dtype))
    fail(MIXP_ERR_DTYPE, fn, ": seed_grad must be a float tensor, got ", dtype_name(seed->dtype));
  TensorPtr seed_grad = cast(TensorPtr::share(const_cast<Tensor *>(seed)), root.dtype);
  if (seed_grad.get() == seed) seed_grad = clone(seed_grad);
  return seed_grad;
}

// The graph below a root with a grad_fn: its nodes in an order where each
// precedes its inputs' nodes, and how many edges lead into each leaf.
struct Walk {
  std::vector<Node *> order;
  std::unordered_map<const Tensor *, int> leaf_edges;
};

Walk walk_graph(const Tensor &root, const char *fn) {
  Walk walk;
  // Dependency counts: how many edges point at each node.
  std::unordered_map<Node *, int> deps;
  std::vector<Node *> stack{root.grad_fn.get()};
  std::unordered_set<Node *> seen{root.grad_fn.get()};
  while (!stack.empty()) {
    Node *n = stack.back();
    stack.pop_back();
    if (n->released)
      fail(MIXP_ERR_STATE, fn, ": the graph through op '", n->name(),
           "' was already freed by an earlier backward; recompute the forward pass before calling "
           "backward again");
    for (const Edge &e : n->next) {
      if (e.leaf) ++walk.leaf_edges[e.leaf.get()];
      if (!e.fn) continue;
      ++deps[e.fn.get()];
      if (seen.insert(e.fn.get()).second) stack.push_back(e.fn.get());
    }
  }
  // Kahn's algorithm from the root.
  std::vector<Node *> ready{root.grad_fn.get()};
  while (!ready.empty()) {
    Node *n = ready.back();
    ready.pop_back();
    walk.order.push_back(n);
    for (const Edge &e : n->next)
      if (e.fn && --deps[e.fn.get()] == 0) ready.push_back(e.fn.get());
  }
  return walk;
}

// The leaves' gradients of one pass: summed as they arrive, formed into
// their final value once no node can add to them (and shown to the armed
// observer), written into the leaves' .grad only by commit().
class LeafGrads {
 public:
  explicit LeafGrads(LeafGradObserver *observer) : observer_(observer) {}

  void receive(const TensorPtr &leaf, const TensorPtr &g) {
    auto it = grads_.find(leaf.get());
    if (it == grads_.end()) {
      grads_.emplace(leaf.get(), g);
      order_.push_back(leaf);
    } else {
      accumulate(it->second, g);
    }
  }

  // The value the leaf's .grad receives at the end of the pass, formed in
  // place of the sum.
  void finalize(const TensorPtr &leaf) {
    auto it = grads_.find(leaf.get());
    if (it == grads_.end()) return;  // no gradient reached it
    TensorPtr g = std::move(it->second);
    const DType want = leaf->grad_dtype_set ? leaf->grad_dtype : leaf->dtype;
    if (g->dtype != want) g = cast(g, want);
    if (leaf->grad) {
      g = add(leaf->grad, g);
    } else {
      // Keep a fresh gradient as it is; copy one that may alias another
      // tensor (a saved input, a view, the caller's seed).
      const bool exclusive = g->refs.load() == 1 && g->storage.use_count() == 1 &&
                             g->is_contiguous() && g->offset == 0;
      g = exclusive ? detach(*g) : clone(g);
    }
    it->second = g;
    if (observer_) observer_->final_grad(*leaf, g);
  }

  // All gradients computed: now (and only now) touch the leaves.
  void commit() {
    for (const TensorPtr &leaf : order_) leaf->grad = std::move(grads_[leaf.get()]);
  }

 private:
  LeafGradObserver *observer_;
  std::unordered_map<const Tensor *, TensorPtr> grads_;
  std::vector<TensorPtr> order_;  // first-seen order, for deterministic accumulation
};

// The gradients waiting at each node's outputs.
using Pending = std::unordered_map<Node *, std::vector<TensorPtr>>;

// Runs one node's formula on the gradients of its outputs and hands what it
// returns on to the nodes and leaves its inputs came from.
void run_node(Session *s, Node &n, std::vector<TensorPtr> gouts, Pending &pending,
              LeafGrads &leaves) {
  std::vector<TensorPtr> gins;
  {
    ProfileScope profiled(s, n.name(), true);
    if (profiled.recording()) profiled.inputs(gouts);
    gins = n.backward(gouts);
  }
  if (s->op_stats_on) count_backward(s, n, gins);
  for (size_t i = 0; i < n.next.size(); ++i) {
    const Edge &e = n.next[i];
    if (!e.active() || i >= gins.size() || !gins[i]) continue;
    TensorPtr g = conform(gins[i], n.input_dtypes[i], n.input_shapes[i], n.name());
    if (s->numerics != MIXP_NUMERICS_OFF) check_numerics(s, n.name(), "backward", int(i), *g);
    if (s->trace) record_trace(s, n.name(), true, int(i), *g);
    if (e.fn) {
      auto &slots = pending[e.fn.get()];
      slots.resize(size_t(e.fn->num_outputs));
      accumulate(slots[size_t(e.output_nr)], g);
    } else {
      leaves.receive(e.leaf, g);
    }
  }
}

}  // namespace

void run_backward(Tensor &root, const Tensor *seed) {
  const char *fn = "mixp_backward";
  Session *s = root.session.get();
  // The ops run from here on are a backward pass's (op statistics tell them
  // apart from the forward's).
  struct BackwardDepth {
    Session *s;
    explicit BackwardDepth(Session *session) : s(session) { ++s->backward_depth; }
    ~BackwardDepth() { --s->backward_depth; }
  } backward_depth(s);
  if (!root.requires_grad)
    fail(MIXP_ERR_STATE, fn, ": loss does not require grad (no parameter that requires grad "
         "contributed to it, or it was computed in a no-grad region)");
  TensorPtr seed_grad = seed_gradient(root, seed, fn);
  // One armed observer sees this pass only (mixp_dist_prepare_gradients).
  LeafGrads leaves(std::exchange(s->leaf_grad_observer, nullptr));
  Walk walk = root.grad_fn ? walk_graph(root, fn) : Walk{};
  {
    NoGradGuard ng(s);
    if (!root.grad_fn) {
      const TensorPtr leaf = TensorPtr::share(&root);
      leaves.receive(leaf, seed_grad);
      leaves.finalize(leaf);
    } else {
      Pending pending;
      pending[root.grad_fn.get()].resize(size_t(root.grad_fn->num_outputs));
      pending[root.grad_fn.get()][size_t(root.output_nr)] = seed_grad;
      for (Node *n : walk.order) {
        auto it = pending.find(n);
        if (it != pending.end()) {  // else no gradient reached it
          std::vector<TensorPtr> gouts = std::move(it->second);
          pending.erase(it);
          run_node(s, *n, std::move(gouts), pending, leaves);
        }
        // After the node's gradients are gone, so that a gradient it made is
        // owned by its leaf alone (and kept rather than copied).
        for (const Edge &e : n->next)
          if (e.leaf && --walk.leaf_edges[e.leaf.get()] == 0) leaves.finalize(e.leaf);
      }
    }
    leaves.commit();
  }
  for (Node *n : walk.order) {
    n->release_saved();
    n->released = true;
  }
}

}  // namespace mixp
