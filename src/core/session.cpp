#include "core/session.hpp"

#include <omp.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "amp/autocast.hpp"
#include "backend/cpu/cpu_backend.hpp"
#include "backend/loader.hpp"
#include "core/error.hpp"

mixp_session::~mixp_session() { magic = 0; }

void mixp_session::log(mixp_log_level level, const std::string &message) const noexcept {
  if (log_fn) {
    log_fn(log_user, level, message.c_str());
  } else if (level >= MIXP_LOG_WARNING) {
    std::fprintf(stderr, "mixp: warning: %s\n", message.c_str());
  }
}

void mixp_session::note_alloc(uint64_t n) noexcept {
  uint64_t now = mem_current.fetch_add(n, std::memory_order_relaxed) + n;
  uint64_t peak = mem_peak.load(std::memory_order_relaxed);
  while (now > peak && !mem_peak.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

namespace mixp {

Session *check_session(const mixp_session *s, const char *fn, const char *arg) {
  if (!s) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (s->magic != mixp_session::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is not a valid mixp_session (destroyed?)");
  if (s->closed)
    fail(MIXP_ERR_STATE, fn, ": ", arg, " was destroyed; its tensors can only be read and released");
  return const_cast<Session *>(s);
}

void apply_threads(const Session *s) noexcept {
  if (omp_get_max_threads() != s->num_threads) omp_set_num_threads(s->num_threads);
}

 bool tf32_enabled(const Session *s) noexcept {
  const char *env = std::getenv("MIXP_TF32_OVERRIDE");
  if (env && std::strcmp(env, "0") == 0) return false;
  if (env && std::strcmp(env, "1") == 0) return true;
  return s->allow_tf32;
}

namespace {

// Parses "cuda" / "cuda:N"; returns false when `dev` is not of that form.
bool parse_cuda(const std::string &dev, int *index) {
  if (dev == "cuda") {
    *index = 0;
    return true;
  }
  if (dev.rfind("cuda:", 0) != 0 || dev.size() == 5 || dev.size() > 9) return false;
  int v = 0;
  for (size_t i = 5; i < dev.size(); ++i) {
    if (!std::isdigit(static_cast<unsigned char>(dev[i]))) return false;
    v = v * 10 + (dev[i] - '0');
  }
  *index = v;
  return true;
}

}  // namespace

SessionRef make_session(const mixp_session_options &o) {
  const char *fn = "mixp_session_create";
  if (o.check_numerics != MIXP_NUMERICS_OFF && o.check_numerics != MIXP_NUMERICS_WARN &&
      o.check_numerics != MIXP_NUMERICS_ERROR)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": check_numerics is ", int(o.check_numerics),
         " (expected MIXP_NUMERICS_OFF, _WARN or _ERROR)");
  if (o.num_threads < 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": num_threads must be >= 0 (0 = all cores), got ", o.num_threads);
  std::string dev = o.device ? o.device : "cpu";
  int cuda_index = -1;
  std::string note;
  std::unique_ptr<Backend> backend;
  std::string name = "cpu";
  if (dev == "cpu") {
  } else if (dev == "auto") {
    try {
      std::string desc;
      backend = create_cuda_backend(0, &desc);
      name = "cuda:0";
      note = "device 'auto': using cuda:0 (" + desc + ")";
    } catch (const Error &e) {
      note = std::string("device 'auto': cuda is unavailable, using cpu: ") + e.what();
    }
  } else if (parse_cuda(dev, &cuda_index)) {
    std::string desc;
    try {
      backend = create_cuda_backend(cuda_index, &desc);
    } catch (const Error &e) {
      fail(e.status(), fn, ": device '", dev, "' is unavailable: ", e.what());
    }
    name = "cuda:" + std::to_string(cuda_index);
    note = desc;
  } else {
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": unknown device '", dev,
         "' (expected \"cpu\", \"cuda\", \"cuda:N\" or \"auto\")");
  }
  if (!backend) backend = std::make_unique<CpuBackend>();

  SessionRef s = SessionRef::adopt(new mixp_session());
  s->device = name;
  s->device_note = note;
  s->seed = o.seed;
  s->num_threads = o.num_threads > 0 ? o.num_threads : omp_get_num_procs();
  s->backend = std::move(backend);
  s->allow_tf32 = o.allow_tf32 != 0;
  s->numerics = o.check_numerics;
  if (!note.empty()) s->log(MIXP_LOG_INFO, note);
  return s;
}

}  // namespace mixp
