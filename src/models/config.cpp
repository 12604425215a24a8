#include "models/config.hpp"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "core/error.hpp"

namespace mixp::models {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string join(const std::vector<std::string> &v, const char *sep) {
  std::string r;
  for (size_t i = 0; i < v.size(); ++i) r += (i ? sep : "") + v[i];
  return r;
}

// Parses a whole string as a base-10 integer; false on anything else.
bool parse_int(const std::string &s, int64_t &out) {
  if (s.empty() || is_space(s[0])) return false;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  out = v;
  return true;
}

bool parse_double(const std::string &s, double &out) {
  if (s.empty() || is_space(s[0])) return false;
  errno = 0;
  char *end = nullptr;
  double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return false;
  out = v;
  return true;
}

}  // namespace

Config::Config(const char *text, const char *fn) : fn_(fn) {
  std::vector<std::string> tokens;
  std::string cur;
  for (const char *p = text;; ++p) {
    if (*p == '\0' || is_space(*p)) {
      if (!cur.empty()) tokens.push_back(std::move(cur));
      cur.clear();
      if (*p == '\0') break;
    } else {
      cur += *p;
    }
  }
  if (tokens.empty())
    fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": config is empty; expected a model name "
         "(mlp, cnn, resnet, mobilenet_v3, gpt) followed by key=value pairs");
  if (tokens[0].find('=') != std::string::npos)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": config must start with a model name, got '",
         tokens[0], "'");
  name_ = tokens[0];
  for (size_t i = 1; i < tokens.size(); ++i) {
    const std::string &t = tokens[i];
    size_t eq = t.find('=');
    if (eq == std::string::npos)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": '", t, "' is not a key=value pair (missing '=')");
    std::string key = t.substr(0, eq), value = t.substr(eq + 1);
    if (key.empty()) fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": '", t, "' has an empty key");
    if (value.empty())
      fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": key '", key, "' has no value (write ", key,
           "=VALUE)");
    if (find(key)) fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": key '", key, "' is given twice");
    entries_.push_back({std::move(key), std::move(value)});
  }
}

Config::Entry *Config::find(const std::string &key) {
  for (auto &e : entries_)
    if (e.key == key) return &e;
  return nullptr;
}

void Config::preset(const std::string &key, const std::string &value) {
  if (find(key))
    fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": ", name_, ": key '", key, "' is implied by the name '",
         name_, "' (", key, "=", value, ") and must not be given");
  entries_.push_back({key, value});
}

bool Config::has(const std::string &key) const {
  for (const auto &e : entries_)
    if (e.key == key) return true;
  return false;
}

void Config::bad_value(const Entry &e, const std::string &expected) const {
  fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": ", name_, ": invalid value '", e.value, "' for key '",
       e.key, "': expected ", expected);
}

int64_t Config::get_int(const std::string &key, int64_t def, int64_t lo, int64_t hi) {
  known_.push_back(key);
  Entry *e = find(key);
  if (!e) return def;
  e->used = true;
  int64_t v = 0;
  if (!parse_int(e->value, v) || v < lo || v > hi)
    bad_value(*e, str("an integer in [", lo, ", ", hi, "]"));
  return v;
}

double Config::get_double(const std::string &key, double def, double lo, double hi,
                          bool hi_open) {
  known_.push_back(key);
  Entry *e = find(key);
  if (!e) return def;
  e->used = true;
  double v = 0;
  if (!parse_double(e->value, v) || v < lo || v > hi || (hi_open && v == hi))
    bad_value(*e, str("a number in [", lo, ", ", hi, hi_open ? ")" : "]"));
  return v;
}

std::string Config::get_choice(const std::string &key, const std::string &def,
                               const std::vector<std::string> &choices) {
  known_.push_back(key);
  Entry *e = find(key);
  if (!e) return def;
  e->used = true;
  for (const auto &c : choices)
    if (e->value == c) return c;
  bad_value(*e, "one of " + join(choices, ", "));
}

std::vector<int64_t> Config::get_int_list(const std::string &key,
                                          const std::vector<int64_t> &def, int64_t lo,
                                          int64_t hi) {
  known_.push_back(key);
  Entry *e = find(key);
  if (!e) return def;
  e->used = true;
  if (e->value == "none") return {};
  std::vector<int64_t> out;
  size_t start = 0;
  const std::string expected =
      str("a comma-separated list of integers in [", lo, ", ", hi, "] or 'none'");
  for (;;) {
    size_t comma = e->value.find(',', start);
    std::string item = e->value.substr(start, comma == std::string::npos ? std::string::npos
                                                                         : comma - start);
    int64_t v = 0;
    if (!parse_int(item, v) || v < lo || v > hi) bad_value(*e, expected);
    out.push_back(v);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

mixp_dtype Config::get_dtype() {
  std::string d = get_choice("dtype", "f32", {"f32", "f64", "f16", "bf16"});
  if (d == "f64") return MIXP_F64;
  if (d == "f16") return MIXP_F16;
  if (d == "bf16") return MIXP_BF16;
  return MIXP_F32;
}

void Config::finish() const {
  for (const auto &e : entries_)
    if (!e.used)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn_, ": ", name_, ": unknown key '", e.key,
           "' (known keys: ", join(known_, ", "), ")");
}

}  // namespace mixp::models
