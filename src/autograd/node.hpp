// Autograd graph nodes. Every recorded operation creates one Node holding
// what its backward formula needs; edges point at the nodes that produced
// its inputs, or at leaf tensors whose .grad receives the result.
#pragma once
#include <initializer_list>
#include <memory>
#include <vector>

#include "core/op_table.hpp"
#include "core/tensor.hpp"

namespace mixp {

struct Node;

// Where the gradient of one input goes: into output `output_nr` of `fn`, or
// into `leaf`'s .grad; neither when the input needs no gradient.
struct Edge {
  std::shared_ptr<Node> fn;
  int output_nr = 0;
  TensorPtr leaf;
  bool active() const noexcept { return fn || leaf; }
};

struct Node {
  // `op` is the table row (core/ops.def) of what recorded the node: its name
  // in error messages, the numerics checker, traces and the profiler, and
  // the op statistics' row (for a public op).
  explicit Node(OpId op) noexcept : op_id(op) {}
  virtual ~Node() = default;

  const OpId op_id;
  const char *name() const noexcept { return op_name(op_id); }
  int num_outputs = 1;
  std::vector<Edge> next;  // one per differentiable input, in input order
  // Dtype and shape of each input: backward casts/checks grads against them.
  std::vector<DType> input_dtypes;
  std::vector<Shape> input_shapes;
  bool released = false;  // saved tensors freed by a backward pass

  bool needs_grad(size_t input) const noexcept { return input < next.size() && next[input].active(); }

  // Given the gradient of each output (null where no gradient arrived; at
  // least one is non-null), returns one gradient per input (null allowed
  // where !needs_grad(i)). Runs with grad mode off.
  virtual std::vector<TensorPtr> backward(std::vector<TensorPtr> &grad_outputs) = 0;
  // Drops saved tensors after backward.
  virtual void release_saved() {}
};

// True when `s` records graphs and any of `inputs` (nulls skipped) requires grad.
bool should_record(const Session *s, std::initializer_list<const Tensor *> inputs);
bool should_record(const Session *s, const std::vector<const Tensor *> &inputs);

// Wires `node` into the graph: one edge per input (nulls allowed), and marks
// each output as produced by output i of `node` (requires_grad = true).
void record(const std::shared_ptr<Node> &node, const std::vector<const Tensor *> &inputs,
            const std::vector<Tensor *> &outputs);

// Runs backward from `root` (see mixp_backward).
void run_backward(Tensor &root, const Tensor *seed);

// RAII: grad mode off on a session for a scope (used while running backward
// formulas and optimizer updates).
class NoGradGuard {
 public:
  explicit NoGradGuard(Session *s) : s_(s) { s_->grad_mode_stack.push_back(false); }
  ~NoGradGuard() { s_->grad_mode_stack.pop_back(); }
  NoGradGuard(const NoGradGuard &) = delete;
  NoGradGuard &operator=(const NoGradGuard &) = delete;

 private:
  Session *s_;
};

}  // namespace mixp
