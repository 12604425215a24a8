#include "nn/module.hpp"

#include "core/error.hpp"

using mixp::fail;
using mixp::TensorPtr;

mixp_module::mixp_module(mixp::Session *session, std::string type_name)
    : session_(mixp::SessionRef::share(session)), type_name_(std::move(type_name)) {}

// Poisons the magic so that a stale handle is recognised by check_module()
// for as long as the memory is not reused.
mixp_module::~mixp_module() { magic = 0; }

void mixp_module::set_training(bool on) {
  training_ = on;
  for (auto &c : children_) c.second->set_training(on);
}

void mixp_module::check_new_name(const std::string &name, const char *what) const {
  if (name.empty() || name.find('.') != std::string::npos)
    fail(MIXP_ERR_INTERNAL, type_name_, ": ", what, " name '", name,
         "' must be non-empty and contain no '.'");
  auto taken = [&](const auto &list) {
    for (const auto &e : list)
      if (e.first == name) return true;
    return false;
  };
  if (taken(own_params_) || taken(own_buffers_) || taken(children_))
    fail(MIXP_ERR_INTERNAL, type_name_, ": ", what, " name '", name, "' is already used");
}

size_t mixp_module::register_parameter(std::string name, TensorPtr t) {
  check_new_name(name, "parameter");
  if (!t || !mixp::is_float(t->dtype) || !t->is_leaf() || t->session.get() != session_.get())
    fail(MIXP_ERR_INTERNAL, type_name_, ": parameter '", name,
         "' must be a float leaf tensor of the module's session");
  own_params_.emplace_back(std::move(name), std::move(t));
  invalidate_flat();
  return own_params_.size() - 1;
}

size_t mixp_module::register_buffer(std::string name, TensorPtr t) {
  check_new_name(name, "buffer");
  if (!t || t->session.get() != session_.get())
    fail(MIXP_ERR_INTERNAL, type_name_, ": buffer '", name,
         "' must be a tensor of the module's session");
  own_buffers_.emplace_back(std::move(name), std::move(t));
  invalidate_flat();
  return own_buffers_.size() - 1;
}

size_t mixp_module::register_module(std::string name, std::unique_ptr<mixp_module> m) {
  check_new_name(name, "child module");
  if (!m || m->parent_ || m->session() != session())
    fail(MIXP_ERR_INTERNAL, type_name_, ": child module '", name,
         "' must be a parentless module of the same session");
  m->parent_ = this;
  m->set_training(training_);
  children_.emplace_back(std::move(name), std::move(m));
  invalidate_flat();
  return children_.size() - 1;
}

// Ancestors cache their descendants' names too, so the invalidation walks up.
void mixp_module::invalidate_flat() noexcept {
  for (mixp_module *m = this; m; m = m->parent_) m->flat_valid_ = false;
}

void mixp_module::collect(const std::string &prefix, std::vector<FlatEntry> &params,
                          std::vector<FlatEntry> &buffers) {
  for (size_t i = 0; i < own_params_.size(); ++i)
    params.push_back({prefix + own_params_[i].first, this, i});
  for (size_t i = 0; i < own_buffers_.size(); ++i)
    buffers.push_back({prefix + own_buffers_[i].first, this, i});
  for (auto &c : children_) c.second->collect(prefix + c.first + ".", params, buffers);
}

const std::vector<mixp_module::FlatEntry> &mixp_module::flat_params() const {
  if (!flat_valid_) {
    std::vector<FlatEntry> p, b;
    const_cast<mixp_module *>(this)->collect("", p, b);
    flat_params_ = std::move(p);
    flat_buffers_ = std::move(b);
    flat_valid_ = true;
  }
  return flat_params_;
}

const std::vector<mixp_module::FlatEntry> &mixp_module::flat_buffers() const {
  flat_params();
  return flat_buffers_;
}

const TensorPtr &mixp_module::parameter(size_t i) const {
  const FlatEntry &e = flat_params()[i];
  return e.owner->own_params_[e.slot].second;
}

const TensorPtr &mixp_module::buffer(size_t i) const {
  const FlatEntry &e = flat_buffers()[i];
  return e.owner->own_buffers_[e.slot].second;
}

void mixp_module::replace_parameter(size_t i, TensorPtr t) {
  const FlatEntry &e = flat_params().at(i);
  TensorPtr &cur = e.owner->own_params_[e.slot].second;
  if (!t || !mixp::is_float(t->dtype) || !t->is_leaf() || t->session.get() != session_.get() ||
      mixp::shape_of(*t) != mixp::shape_of(*cur))
    fail(MIXP_ERR_SHAPE, type_name_, ": replacement for parameter '", e.name,
         "' must be a float leaf of the same session with shape ", mixp::shape_str(*cur));
  cur = std::move(t);
}

void mixp_module::replace_buffer(size_t i, TensorPtr t) {
  const FlatEntry &e = flat_buffers().at(i);
  TensorPtr &cur = e.owner->own_buffers_[e.slot].second;
  if (!t || t->session.get() != session_.get() || mixp::shape_of(*t) != mixp::shape_of(*cur))
    fail(MIXP_ERR_SHAPE, type_name_, ": replacement for buffer '", e.name,
         "' must be a tensor of the same session with shape ", mixp::shape_str(*cur));
  cur = std::move(t);
}

namespace mixp {

Module *check_module(const mixp_module *m, const char *fn, const char *arg) {
  if (!m) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (m->magic != Module::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg,
         " is not a live module handle (destroyed or not a mixp_module)");
  return const_cast<Module *>(m);
}

}  // namespace mixp
