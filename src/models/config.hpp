// The model zoo's configuration strings: "name key=value key=value ...".
// A Config is parsed once, then each model reads the keys it knows with a
// default and a range; finish() rejects every key nobody read, so a typo is
// an error naming the key instead of a silently ignored setting.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "mixp/mixp.h"

namespace mixp::models {

class Config {
 public:
  // Splits `text` into the model name and key=value pairs. Fails (naming
  // `fn`) on an empty config, a token without '=', an empty key or value, or
  // a repeated key.
  Config(const char *text, const char *fn);

  const std::string &name() const noexcept { return name_; }
  // Replaces the model name (for aliases such as "resnet18" -> "resnet").
  void set_name(std::string n) { name_ = std::move(n); }
  // Adds a key the caller implies (an alias's preset); fails if it is given.
  void preset(const std::string &key, const std::string &value);

  bool has(const std::string &key) const;
  int64_t get_int(const std::string &key, int64_t def, int64_t lo, int64_t hi);
  double get_double(const std::string &key, double def, double lo, double hi, bool hi_open);
  std::string get_choice(const std::string &key, const std::string &def,
                         const std::vector<std::string> &choices);
  // A comma-separated list of integers in [lo, hi], or "none" for an empty list.
  std::vector<int64_t> get_int_list(const std::string &key, const std::vector<int64_t> &def,
                                    int64_t lo, int64_t hi);
  // The common dtype key: f32 (default), f64, f16, bf16.
  mixp_dtype get_dtype();

  // Fails on the first key no getter asked for, listing the model's keys.
  void finish() const;

 private:
  struct Entry {
    std::string key, value;
    bool used = false;
  };
  Entry *find(const std::string &key);
  [[noreturn]] void bad_value(const Entry &e, const std::string &expected) const;

  const char *fn_;
  std::string name_;
  std::vector<Entry> entries_;
  std::vector<std::string> known_;  // keys asked for, for the unknown-key message
};

}  // namespace mixp::models
