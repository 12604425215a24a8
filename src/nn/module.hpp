// The module model behind the opaque mixp_module handle: a layer owns named
// parameters (leaf tensors that require grad), named buffers (state that is
// saved but not trained, e.g. running statistics) and named child modules.
// Flattened names are dotted paths ("0.weight", "encoder.1.bias"), ordered
// like PyTorch's named_parameters(): a module's own entries first, then each
// child's, depth first, in registration order.
//
// Subclasses register everything in their constructor and refer to their
// tensors by slot (the index register_* returned), never by a cached
// TensorPtr: a later pass (O2 decorate casting parameters to half, a
// checkpoint load) may replace the tensor in a slot, and forward() must see it.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.hpp"

struct mixp_module {
  static constexpr uint32_t kMagic = 0x4d4f4455u;  // "MODU"
  uint32_t magic = kMagic;

  mixp_module(mixp::Session *session, std::string type_name);
  virtual ~mixp_module();
  mixp_module(const mixp_module &) = delete;
  mixp_module &operator=(const mixp_module &) = delete;

  // The forward pass, built from public operations (src/ops/ops.hpp); may
  // consult training().
  virtual mixp::TensorPtr forward(const mixp::TensorPtr &x) = 0;

  // "Linear", "Sequential", ... (for messages and model summaries).
  const std::string &type_name() const noexcept { return type_name_; }
  mixp::Session *session() const noexcept { return session_.get(); }

  // Normalisation layers (BatchNorm, LayerNorm, ...) override this to return
  // true: O2 decorate keeps their parameters in fp32 (keep_norm_fp32).
  virtual bool is_norm_layer() const { return false; }

  // Set by O2 decorate (src/amp/decorate.cpp) on every module of a tree it
  // casts, so that a second decorate of the tree, or of a part of it, is
  // refused instead of casting half parameters again.
  bool amp_decorated = false;

  bool training() const noexcept { return training_; }
  // Sets the flag on this module and every descendant.
  void set_training(bool on);

  // ---- flattened views over the whole tree ---------------------------------
  size_t num_parameters() const { return flat_params().size(); }
  // The name stays valid, and at the same address, while the module lives
  // (registration happens during construction only).
  const std::string &parameter_name(size_t i) const { return flat_params()[i].name; }
  const mixp::TensorPtr &parameter(size_t i) const;
  // The module (this one or a descendant) that registered parameter i.
  const mixp_module &parameter_owner(size_t i) const { return *flat_params()[i].owner; }
  size_t num_buffers() const { return flat_buffers().size(); }
  const std::string &buffer_name(size_t i) const { return flat_buffers()[i].name; }
  const mixp::TensorPtr &buffer(size_t i) const;

  // Replaces the tensor of a parameter or buffer of the tree (by flat index)
  // with one of the same shape; used by passes that change dtypes or load
  // checkpoints.
  void replace_parameter(size_t i, mixp::TensorPtr t);
  void replace_buffer(size_t i, mixp::TensorPtr t);

  size_t num_children() const noexcept { return children_.size(); }
  const std::string &child_name(size_t i) const { return children_[i].first; }
  mixp_module &child(size_t i) const { return *children_[i].second; }

 protected:
  // Registration, for subclass constructors. Names are unique per module and
  // contain no '.'; parameters must be float leaves of this module's session.
  // Each returns the slot through which the subclass reads the tensor.
  size_t register_parameter(std::string name, mixp::TensorPtr t);
  size_t register_buffer(std::string name, mixp::TensorPtr t);
  size_t register_module(std::string name, std::unique_ptr<mixp_module> m);

  const mixp::TensorPtr &param_slot(size_t slot) const { return own_params_[slot].second; }
  const mixp::TensorPtr &buffer_slot(size_t slot) const { return own_buffers_[slot].second; }
  mixp_module &child_slot(size_t slot) const { return *children_[slot].second; }

 private:
  using Named = std::pair<std::string, mixp::TensorPtr>;
  // One entry of a flattened list: the dotted name and where the tensor lives.
  struct FlatEntry {
    std::string name;
    mixp_module *owner;
    size_t slot;
  };

  void check_new_name(const std::string &name, const char *what) const;
  void invalidate_flat() noexcept;
  const std::vector<FlatEntry> &flat_params() const;
  const std::vector<FlatEntry> &flat_buffers() const;
  void collect(const std::string &prefix, std::vector<FlatEntry> &params,
               std::vector<FlatEntry> &buffers);

  mixp::SessionRef session_;
  std::string type_name_;
  bool training_ = true;
  mixp_module *parent_ = nullptr;
  std::vector<Named> own_params_;
  std::vector<Named> own_buffers_;
  std::vector<std::pair<std::string, std::unique_ptr<mixp_module>>> children_;

  mutable bool flat_valid_ = false;
  mutable std::vector<FlatEntry> flat_params_;
  mutable std::vector<FlatEntry> flat_buffers_;
};

namespace mixp {

using Module = mixp_module;

// Validates a module handle from the C API (non-NULL, live magic).
Module *check_module(const mixp_module *m, const char *fn, const char *arg = "module");

}  // namespace mixp
