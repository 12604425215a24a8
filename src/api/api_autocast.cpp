// Autocast shims: regions, policy queries and the op registry.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "autocast/autocast.hpp"
#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "core/options.hpp"

using namespace mixp;

namespace {

// A policy line read into options; the list entries point into `names`.
struct ParsedPolicy {
  mixp_autocast_options options{};
  std::vector<std::string> names[2];  // white, black
  std::vector<const char *> lists[2];
};

std::vector<std::string> split(const std::string &text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= text.size()) {
    const size_t end = std::min(text.find(sep, start), text.size());
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

int flag(const std::string &word, const std::string &value, const char *fn) {
  if (value == "0") return 0;
  if (value == "1") return 1;
  fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": '", word, "' needs 0 or 1");
}

ParsedPolicy parse_policy(const char *policy, const char *fn) {
  ParsedPolicy p;
  mixp_autocast_options_init(&p.options);
  std::istringstream words{std::string(policy)};
  std::string word;
  while (words >> word) {
    if (word == "O0") p.options.level = MIXP_AMP_O0;
    else if (word == "O1") p.options.level = MIXP_AMP_O1;
    else if (word == "O2") p.options.level = MIXP_AMP_O2;
    else if (word == "OD") p.options.level = MIXP_AMP_OD;
    else if (word == "bf16" || word == "bfloat16") p.options.dtype = MIXP_BF16;
    else if (word == "f16" || word == "fp16" || word == "float16") p.options.dtype = MIXP_F16;
    else {
      const size_t eq = word.find('=');
      const std::string key = word.substr(0, eq), value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (eq == std::string::npos || value.empty())
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown word '", word,
             "' (expected O0/O1/O2/OD, bf16/f16, or white=, black=, promote=, cache=, enabled=)");
      if (key == "white" || key == "black") {
        const int k = key == "white" ? 0 : 1;
        for (const std::string &name : split(value, ','))
          if (name.empty()) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": empty op name in '", word, "'");
          else p.names[k].push_back(name);
      } else if (key == "promote") {
        p.options.use_promote = flag(word, value, fn);
      } else if (key == "cache") {
        p.options.cache_enabled = flag(word, value, fn);
      } else if (key == "enabled") {
        p.options.enabled = flag(word, value, fn);
      } else {
        fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown key '", key, "' in '", word,
             "' (expected white, black, promote, cache or enabled)");
      }
    }
  }
  for (int k = 0; k < 2; ++k)
    for (const std::string &n : p.names[k]) p.lists[k].push_back(n.c_str());
  p.options.custom_white_list = p.lists[0].data();
  p.options.n_custom_white = int(p.lists[0].size());
  p.options.custom_black_list = p.lists[1].data();
  p.options.n_custom_black = int(p.lists[1].size());
  return p;
}

}  // namespace

extern "C" {

mixp_status mixp_autocast_options_init_sized(mixp_autocast_options *o, size_t size) {
  static const mixp_autocast_options defaults = defaults_of<mixp_autocast_options>([](mixp_autocast_options &d) {
    d.struct_size = sizeof d;
    d.enabled = 1;
    d.dtype = MIXP_BF16;
    d.level = MIXP_AMP_O1;
    d.cache_enabled = 1;
  });
  return init_options_sized(o, size, defaults, "mixp_autocast_options_init_sized");
}

mixp_status mixp_autocast_push(mixp_session *session, const mixp_autocast_options *options) {
  const char *fn = "mixp_autocast_push";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    const mixp_autocast_options o = read_options(options, mixp_autocast_options_init, fn,
                                                 "mixp_autocast_options_init");
    autocast::push(s, o, fn);
  });
}

mixp_status mixp_autocast_push_policy(mixp_session *session, const char *policy) {
  const char *fn = "mixp_autocast_push_policy";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (!policy) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": policy is NULL");
    ParsedPolicy p = parse_policy(policy, fn);
    autocast::push(s, p.options, fn);
  });
}

mixp_status mixp_autocast_pop(mixp_session *session) {
  const char *fn = "mixp_autocast_pop";
  return guard(fn, [&] { autocast::pop(check_session(session, fn), fn); });
}

mixp_status mixp_autocast_policy(const mixp_session *session, const char *op_name,
                                 mixp_autocast_policy_info *policy) {
  const char *fn = "mixp_autocast_policy";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (!op_name) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": op_name is NULL");
    check_out(policy, fn, "policy");
    check_struct_size(*policy, fn, "policy", "set it to sizeof(mixp_autocast_policy_info)");
    const int idx = op_index(op_name);
    if (idx < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown op '", op_name, "'");
    const autocast::State *st = autocast::current(s);
    autocast::Decision d = st ? autocast::decide(*st, op_at(idx)) : autocast::Decision{};
    policy->cast = d.cast;
    policy->dtype = d.cast == MIXP_CAST_LOWER ? d.dtype : MIXP_F32;
  });
}

int mixp_op_count(void) { return kOpCount; }

const char *mixp_op_name(int index) {
  if (index < 0 || index >= kOpCount) return nullptr;
  return op_name(op_at(index));
}

}  // extern "C"
