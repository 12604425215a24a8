#include "core/session.hpp"

#include <omp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "backend/backend.hpp"
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

bool cudnn_benchmark(const Session *s) noexcept {
  return s->env_cudnn_benchmark >= 0 ? s->env_cudnn_benchmark != 0 : s->cudnn_benchmark;
}

bool cudnn_deterministic(const Session *s) noexcept {
  return s->env_cudnn_deterministic >= 0 ? s->env_cudnn_deterministic != 0 : s->cudnn_deterministic;
}

namespace {

// A 0|1 switch from the environment: -1 when unset or empty; anything else
// than 0 or 1 fails the call, naming the variable (a typo must not silently
// leave determinism or benchmarking at its default).
int env_switch(const char *name, const char *fn) {
  const char *v = std::getenv(name);
  if (!v || !*v) return -1;
  if (std::strcmp(v, "0") == 0) return 0;
  if (std::strcmp(v, "1") == 0) return 1;
  fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": the environment variable ", name, " is '", v, "' (expected 0 or 1)");
}

void check_switch(int v, const char *fn, const char *field) {
  if (v != 0 && v != 1) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", field, " must be 0 or 1, got ", v);
}

}  // namespace

void check_session_options(const mixp_session_options &o, const char *fn) {
  check_switch(o.cudnn_benchmark, fn, "cudnn_benchmark");
  check_switch(o.cudnn_deterministic, fn, "cudnn_deterministic");
  (void)env_switch("MIXP_CUDNN_BENCHMARK", fn);
  (void)env_switch("MIXP_CUDNN_DETERMINISTIC", fn);
  if (o.check_numerics != MIXP_NUMERICS_OFF && o.check_numerics != MIXP_NUMERICS_WARN &&
      o.check_numerics != MIXP_NUMERICS_ERROR)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": check_numerics is ", int(o.check_numerics),
         " (expected MIXP_NUMERICS_OFF, _WARN or _ERROR)");
  if (o.num_threads < 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": num_threads must be >= 0 (0 = all cores), got ", o.num_threads);
}

SessionRef make_session(const mixp_session_options &o, std::unique_ptr<Backend> backend,
                        std::string device, std::string note) {
  SessionRef s = SessionRef::adopt(new mixp_session());
  s->device = std::move(device);
  s->device_note = std::move(note);
  s->seed = o.seed;
  s->num_threads = o.num_threads > 0 ? o.num_threads : omp_get_num_procs();
  s->backend = std::move(backend);
  s->allow_tf32 = o.allow_tf32 != 0;
  s->cudnn_benchmark = o.cudnn_benchmark != 0;
  s->cudnn_deterministic = o.cudnn_deterministic != 0;
  s->env_cudnn_benchmark = env_switch("MIXP_CUDNN_BENCHMARK", "mixp_session_create");
  s->env_cudnn_deterministic = env_switch("MIXP_CUDNN_DETERMINISTIC", "mixp_session_create");
  s->numerics = o.check_numerics;
  if (!s->device_note.empty()) s->log(MIXP_LOG_INFO, s->device_note);
  return s;
}

}  // namespace mixp
