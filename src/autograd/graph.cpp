// Recording the autograd graph: ops call these right after computing their
// outputs (autograd/node.hpp).
#include "autograd/node.hpp"

namespace mixp {

bool should_record(const Session *s, std::initializer_list<const Tensor *> inputs) {
  if (!s->grad_enabled()) return false;
  for (const Tensor *t : inputs)
    if (t && t->requires_grad) return true;
  return false;
}

bool should_record(const Session *s, const std::vector<const Tensor *> &inputs) {
  if (!s->grad_enabled()) return false;
  for (const Tensor *t : inputs)
    if (t && t->requires_grad) return true;
  return false;
}

void record(const std::shared_ptr<Node> &node, const std::vector<const Tensor *> &inputs,
            const std::vector<Tensor *> &outputs) {
  node->next.clear();
  node->input_dtypes.clear();
  node->input_shapes.clear();
  for (const Tensor *t : inputs) {
    Edge e;
    if (t && t->requires_grad) {
      if (t->grad_fn) {
        e.fn = t->grad_fn;
        e.output_nr = t->output_nr;
      } else {
        e.leaf = TensorPtr::share(const_cast<Tensor *>(t));
      }
    }
    node->next.push_back(std::move(e));
    node->input_dtypes.push_back(t ? t->dtype : MIXP_F32);
    node->input_shapes.push_back(t ? shape_of(*t) : Shape());
  }
  node->num_outputs = int(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    outputs[i]->grad_fn = node;
    outputs[i]->output_nr = int(i);
    outputs[i]->requires_grad = true;
  }
}

}  // namespace mixp
