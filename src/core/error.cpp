#include "core/error.hpp"

#include "core/tensor.hpp"

namespace mixp {

namespace {
// Per thread, like libgit2's git_error_last(): a host that calls from many
// threads reads the message of its own failed call.
thread_local std::string t_last_message;
thread_local mixp_status t_last_status = MIXP_OK;
}  // namespace

void set_last_error(mixp_status status, const std::string &message) noexcept {
  try {
    // Messages quote names from files and callers; a NUL or control byte
    // among them would cut the C string short or garble a terminal, so they
    // are written as \xHH.
    t_last_message.clear();
    t_last_message.reserve(message.size());
    for (const char c : message) {
      const auto u = static_cast<unsigned char>(c);
      if (u >= 0x20 && u != 0x7f) {
        t_last_message += c;
      } else {
        static const char hex[] = "0123456789abcdef";
        t_last_message += "\\x";
        t_last_message += hex[u >> 4];
        t_last_message += hex[u & 15];
      }
    }
  } catch (...) {
    t_last_message.clear();  // allocation failed: keep the status at least
  }
  t_last_status = status;
}

const char *last_error_message() noexcept { return t_last_message.c_str(); }
mixp_status last_error_status() noexcept { return t_last_status; }

std::string shape_str(const int64_t *shape, int ndim) {
  std::string s = "[";
  for (int i = 0; i < ndim; ++i) {
    if (i) s += ",";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::string shape_str(const Shape &s) { return shape_str(s.d, s.ndim); }

}  // namespace mixp
