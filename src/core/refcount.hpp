// A minimal intrusive smart pointer for the reference-counted C handles
// (mixp_tensor, mixp_session): the count lives in the object, so a raw handle
// handed across the C ABI and a Ref<> inside the library share one count.
#pragma once
#include <utility>

namespace mixp {

// T must provide static void ref_inc(T*) and ref_dec(T*) via ADL-free traits.
template <class T>
struct RefTraits;

template <class T>
class Ref {
 public:
  Ref() noexcept = default;
  Ref(std::nullptr_t) noexcept {}
  // Takes over one existing reference (no increment).
  static Ref adopt(T *p) noexcept {
    Ref r;
    r.p_ = p;
    return r;
  }
  // Adds a reference to p.
  static Ref share(T *p) noexcept {
    if (p) RefTraits<T>::inc(p);
    return adopt(p);
  }
  Ref(const Ref &o) noexcept : p_(o.p_) {
    if (p_) RefTraits<T>::inc(p_);
  }
  Ref(Ref &&o) noexcept : p_(std::exchange(o.p_, nullptr)) {}
  Ref &operator=(Ref o) noexcept {
    std::swap(p_, o.p_);
    return *this;
  }
  ~Ref() {
    if (p_) RefTraits<T>::dec(p_);
  }
  T *get() const noexcept { return p_; }
  T *operator->() const noexcept { return p_; }
  T &operator*() const noexcept { return *p_; }
  explicit operator bool() const noexcept { return p_ != nullptr; }
  // Gives up ownership of the reference without decrementing.
  T *release() noexcept { return std::exchange(p_, nullptr); }
  void reset() noexcept { Ref().swap(*this); }
  void swap(Ref &o) noexcept { std::swap(p_, o.p_); }
  bool operator==(const Ref &o) const noexcept { return p_ == o.p_; }

 private:
  T *p_ = nullptr;
};

}  // namespace mixp
