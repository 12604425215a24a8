// Internal error model: C++ code throws mixp::Error; the API shims in
// src/api/ catch it and turn it into a status plus the thread-local message.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

#include "mixp/mixp.h"

namespace mixp {

class Error : public std::exception {
 public:
  Error(mixp_status status, std::string message)
      : status_(status), message_(std::move(message)) {}
  mixp_status status() const noexcept { return status_; }
  const char *what() const noexcept override { return message_.c_str(); }
  // The whole message; what() stops at a NUL quoted from a name.
  const std::string &message() const noexcept { return message_; }

 private:
  mixp_status status_;
  std::string message_;
};

template <class... Args>
std::string str(const Args &...args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

// Throws Error(status, concatenation of args).
template <class... Args>
[[noreturn]] void fail(mixp_status status, const Args &...args) {
  throw Error(status, str(args...));
}

// Records the failure of the current API call for mixp_last_error().
void set_last_error(mixp_status status, const std::string &message) noexcept;

// Formats a shape as "[2,3,4]".
std::string shape_str(const int64_t *shape, int ndim);

}  // namespace mixp
