// Session shims.
#include <algorithm>
#include <cstddef>
#include <cstring>

#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "autocast/autocast.hpp"
#include "backend/backend.hpp"
#include "backend/capabilities.hpp"
#include "device/device.hpp"
#include "graph/graph.hpp"
#include "core/op_table.hpp"
#include "core/options.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_session_options_init_sized(mixp_session_options *o, size_t size) {
  static const mixp_session_options defaults = defaults_of<mixp_session_options>([](mixp_session_options &d) {
    d.struct_size = sizeof d;
    d.device = "cpu";
    d.seed = 0;
    d.num_threads = 0;
    d.allow_tf32 = 0;
    d.check_numerics = MIXP_NUMERICS_OFF;
    d.cudnn_benchmark = 0;
    d.cudnn_deterministic = 1;  // bitwise-reproducible runs, as before 0.9
  });
  return init_options_sized(o, size, defaults, "mixp_session_options_init_sized");
}

mixp_status mixp_session_create(const mixp_session_options *options, mixp_session **out) {
  return guard("mixp_session_create", [&] {
    check_out(out, "mixp_session_create");
    mixp_session_options o;
    mixp_session_options_init(&o);
    if (options) {
      // An older caller's smaller struct: take the fields it has, defaults for the rest.
      if (options->struct_size < offsetof(mixp_session_options, num_threads) + sizeof(int) ||
          options->struct_size > sizeof(mixp_session_options) * 4)
        fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_session_create: options->struct_size is ", options->struct_size,
             "; fill options with mixp_session_options_init()");
      // Copy what the caller's (possibly older, smaller) struct holds. A 0.8
      // struct's last 4 of its 40 bytes are tail padding where 0.9 put
      // cudnn_benchmark: not the caller's value, so not read.
      const size_t held = options->struct_size >= sizeof o
                              ? sizeof o
                              : std::min<size_t>(options->struct_size, offsetof(mixp_session_options, cudnn_benchmark));
      std::memcpy(&o, options, held);
      o.struct_size = sizeof o;
    }
    check_session_options(o, "mixp_session_create");
    OpenedDevice dev = open_device(o.device, "mixp_session_create");
    SessionRef s = make_session(o, std::move(dev.backend), std::move(dev.name), std::move(dev.note));
    *out = s.release();
  });
}

void mixp_session_destroy(mixp_session *session) {
  if (!session || session->magic != mixp_session::kMagic || session->closed) return;
  session->closed = true;
  graph::abort(session);  // the real backend back; the capture's memory freed
  // An open checkpoint region and an open autocast region's cast cache hold
  // tensors, which hold the session: a host that destroys the session inside
  // them would leak it (found by fuzz_api under LeakSanitizer).
  session->checkpoint.reset();
  autocast::clear_cache(session);
  RefTraits<mixp_session>::dec(session);
}

const char *mixp_session_device(const mixp_session *s) {
  return (s && s->magic == mixp_session::kMagic) ? s->device.c_str() : "";
}

const char *mixp_session_device_note(const mixp_session *s) {
  return (s && s->magic == mixp_session::kMagic) ? s->device_note.c_str() : "";
}

int mixp_session_num_threads(const mixp_session *s) {
  return (s && s->magic == mixp_session::kMagic) ? s->num_threads : 0;
}

mixp_status mixp_session_set_seed(mixp_session *session, uint64_t seed) {
  return guard("mixp_session_set_seed", [&] {
    Session *s = check_session(session, "mixp_session_set_seed");
    s->seed = seed;
    s->rng_offset = 0;
  });
}

mixp_status mixp_no_grad_begin(mixp_session *session) {
  return guard("mixp_no_grad_begin", [&] {
    check_session(session, "mixp_no_grad_begin")->grad_mode_stack.push_back(false);
  });
}

mixp_status mixp_no_grad_end(mixp_session *session) {
  return guard("mixp_no_grad_end", [&] {
    Session *s = check_session(session, "mixp_no_grad_end");
    if (s->grad_mode_stack.empty())
      fail(MIXP_ERR_STATE, "mixp_no_grad_end: no no-grad region is open (unbalanced mixp_no_grad_begin/end)");
    s->grad_mode_stack.pop_back();
  });
}

int mixp_grad_enabled(const mixp_session *s) {
  return (s && s->magic == mixp_session::kMagic && s->grad_enabled()) ? 1 : 0;
}

mixp_status mixp_session_set_tf32(mixp_session *session, int allow) {
  return guard("mixp_session_set_tf32", [&] { check_session(session, "mixp_session_set_tf32")->allow_tf32 = allow != 0; });
}

int mixp_session_tf32(const mixp_session *s) {
  return (s && s->magic == mixp_session::kMagic && tf32_enabled(s)) ? 1 : 0;
}

mixp_status mixp_session_set_cudnn(mixp_session *session, int benchmark, int deterministic) {
  const char *fn = "mixp_session_set_cudnn";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (benchmark != 0 && benchmark != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": benchmark must be 0 or 1, got ", benchmark);
    if (deterministic != 0 && deterministic != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": deterministic must be 0 or 1, got ", deterministic);
    s->cudnn_benchmark = benchmark != 0;
    s->cudnn_deterministic = deterministic != 0;
  });
}

mixp_status mixp_session_cudnn(const mixp_session *session, int *benchmark, int *deterministic) {
  const char *fn = "mixp_session_cudnn";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(benchmark, fn, "benchmark");
    check_out(deterministic, fn, "deterministic");
    *benchmark = cudnn_benchmark(s) ? 1 : 0;
    *deterministic = cudnn_deterministic(s) ? 1 : 0;
  });
}

mixp_status mixp_session_set_numerics_check(mixp_session *session, mixp_numerics_mode mode) {
  const char *fn = "mixp_session_set_numerics_check";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (mode != MIXP_NUMERICS_OFF && mode != MIXP_NUMERICS_WARN && mode != MIXP_NUMERICS_ERROR)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": mode is ", int(mode), " (expected MIXP_NUMERICS_OFF, _WARN or _ERROR)");
    s->numerics = mode;
    s->numerics_report.clear();
    s->numerics_warnings = 0;
  });
}

mixp_status mixp_numerics_options_init_sized(mixp_numerics_options *o, size_t size) {
  static const mixp_numerics_options defaults = defaults_of<mixp_numerics_options>([](mixp_numerics_options &d) {
    d.struct_size = sizeof d;
    d.mode = MIXP_NUMERICS_OFF;
    d.start_step = 0;
    d.end_step = -1;
  });
  return init_options_sized(o, size, defaults, "mixp_numerics_options_init_sized");
}

mixp_status mixp_session_set_numerics_options(mixp_session *session, const mixp_numerics_options *options) {
  const char *fn = "mixp_session_set_numerics_options";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    if (!options) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options is NULL");
    const mixp_numerics_options &o = *options;
    check_struct_size(o, fn, "options", "fill options with mixp_numerics_options_init()");
    if (o.mode != MIXP_NUMERICS_OFF && o.mode != MIXP_NUMERICS_WARN && o.mode != MIXP_NUMERICS_ERROR)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->mode is ", int(o.mode),
           " (expected MIXP_NUMERICS_OFF, _WARN or _ERROR)");
    auto names = [&](const char *const *list, int n, const char *field, const char *count) {
      if (n < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", count, " is negative (", n, ")");
      if (n > 0 && !list) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, " is NULL but ", count, " is ", n);
      std::vector<std::string> out;
      for (int i = 0; i < n; ++i) {
        if (!list[i] || !*list[i]) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, "[", i, "] is NULL or empty");
        if (op_index(list[i]) < 0)
          fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->", field, "[", i, "] names unknown op '", list[i],
               "' (mixp_op_name() lists the ops)");
        out.emplace_back(list[i]);
      }
      return out;
    };
    Session::NumericsFilter f;
    f.include = names(o.include_ops, o.n_include, "include_ops", "n_include");
    f.exclude = names(o.exclude_ops, o.n_exclude, "exclude_ops", "n_exclude");
    if (o.start_step < 0) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->start_step is negative (", o.start_step, ")");
    if (o.end_step != -1 && o.end_step < o.start_step)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->end_step is ", o.end_step, ", expected -1 or >= start_step (",
           o.start_step, ")");
    if (o.fp16_overflow != 0 && o.fp16_overflow != 1)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->fp16_overflow must be 0 or 1, got ", o.fp16_overflow);
    f.start_step = o.start_step;
    f.end_step = o.end_step;
    f.fp16_overflow = o.fp16_overflow != 0;
    s->numerics = o.mode;
    s->numerics_filter = std::move(f);
    s->numerics_step = 0;
    s->numerics_report.clear();
    s->numerics_warnings = 0;
  });
}

const char *mixp_session_numerics_report(const mixp_session *s) {
  return (s && s->magic == mixp_session::kMagic) ? s->numerics_report.c_str() : "";
}

mixp_status mixp_session_set_log_callback(mixp_session *session, mixp_log_fn fn, void *user_data) {
  return guard("mixp_session_set_log_callback", [&] {
    Session *s = check_session(session, "mixp_session_set_log_callback");
    s->log_fn = fn;
    s->log_user = user_data;
  });
}

mixp_status mixp_memory_stats_get(const mixp_session *session, mixp_memory_stats *stats) {
  return guard("mixp_memory_stats_get", [&] {
    Session *s = check_session(session, "mixp_memory_stats_get");
    check_out(stats, "mixp_memory_stats_get", "stats");
    if (stats->struct_size < offsetof(mixp_memory_stats, peak_bytes) + sizeof(uint64_t))
      fail(MIXP_ERR_INVALID_ARGUMENT, "mixp_memory_stats_get: stats->struct_size is ", stats->struct_size,
           "; set it to sizeof(mixp_memory_stats)");
    mixp_memory_stats all{};
    all.current_bytes = s->mem_current.load();
    all.peak_bytes = s->mem_peak.load();
    // The device's own figures where its backend keeps them (a cuda pool);
    // elsewhere the tensors are all the session holds that it can count.
    DeviceMemory m{all.current_bytes, all.peak_bytes, all.current_bytes, all.peak_bytes};
    if (DeviceMemoryStats *dev = s->backend->memory_stats()) (void)dev->device_memory(&m);
    all.device_bytes = m.used;
    all.device_peak_bytes = m.used_peak;
    all.reserved_bytes = m.reserved;
    all.reserved_peak_bytes = m.reserved_peak;
    all.graph_bytes = s->graphs.held_bytes();
    write_answer(stats, all);  // a 0.6 caller's struct ends at peak_bytes
  });
}

mixp_status mixp_memory_stats_reset_peak(mixp_session *session) {
  return guard("mixp_memory_stats_reset_peak", [&] {
    Session *s = check_session(session, "mixp_memory_stats_reset_peak");
    s->mem_peak.store(s->mem_current.load());
    if (DeviceMemoryStats *dev = s->backend->memory_stats()) dev->reset_device_memory_peak();
  });
}

mixp_status mixp_session_host_syncs(const mixp_session *session, uint64_t *count) {
  return guard("mixp_session_host_syncs", [&] {
    Session *s = check_session(session, "mixp_session_host_syncs");
    check_out(count, "mixp_session_host_syncs", "count");
    *count = s->backend->host_syncs();
  });
}

}  // extern "C"
