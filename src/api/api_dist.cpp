// C shims of data-parallel training (src/dist/).
#include <cstdlib>
#include <string>
#include <utility>

#include "api/api_common.hpp"
#include "api/options_init.hpp"
#include "dist/dist.hpp"
#include "nn/module.hpp"
#include "optim/optimizer.hpp"

using namespace mixp;
using mixp::dist::Dist;

namespace {

void check_same_session(const Dist &d, const mixp_session *s, const char *fn, const char *arg) {
  if (s != d.session.get())
    fail(MIXP_ERR_DEVICE, fn, ": ", arg, " belongs to another session than the communicator");
}

Tensor *check_tensor_of(const Dist &d, const mixp_tensor *t, const char *fn, const char *arg) {
  Tensor *x = check_tensor(t, fn, arg);
  check_same_session(d, x->session.get(), fn, arg);
  return x;
}

// The arguments of the gradient-averaging calls.
std::pair<Dist *, Optimizer *> check_gradient_args(mixp_dist *dist, mixp_optimizer *optimizer,
                                                   int64_t local_samples, const char *fn) {
  Dist *d = dist::check_dist(dist, fn);
  Optimizer *o = check_optimizer(optimizer, fn);
  check_same_session(*d, o->session.get(), fn, "optimizer");
  if (local_samples < 0)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": local_samples must be >= 0 (0: plain average), got ",
         local_samples);
  return {d, o};
}

}  // namespace

extern "C" {

mixp_status mixp_dist_options_init_sized(mixp_dist_options *options, size_t size) {
  static const mixp_dist_options defaults = defaults_of<mixp_dist_options>([](mixp_dist_options &d) {
    d.struct_size = sizeof d;
    d.transport = MIXP_DIST_MPI;
    d.bucket_bytes = int64_t(25) << 20;
  });
  return init_options_sized(options, size, defaults, "mixp_dist_options_init_sized");
}

int mixp_dist_env_local_rank(void) {
  for (const char *name : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "LOCAL_RANK"}) {
    const char *v = std::getenv(name);
    if (!v || !*v) continue;
    char *end = nullptr;
    const long r = std::strtol(v, &end, 10);
    if (*end == 0 && r >= 0 && r < (1L << 20)) return int(r);
  }
  return 0;
}

mixp_status mixp_dist_create(mixp_session *session, const mixp_dist_options *options,
                             mixp_dist **out) {
  static const char *fn = "mixp_dist_create";
  return guard(fn, [&] {
    Session *s = check_session(session, fn);
    check_out(out, fn);
    const mixp_dist_options o = read_options(options, mixp_dist_options_init, fn, "mixp_dist_options_init");
    if (o.transport != MIXP_DIST_MPI && o.transport != MIXP_DIST_SINGLE)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->transport must be MIXP_DIST_MPI (0) or MIXP_DIST_SINGLE (1), got ",
           int(o.transport));
    if (o.bucket_bytes < 1 || o.bucket_bytes > (int64_t(1) << 40))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": options->bucket_bytes must be in [1, 2^40], got ",
           o.bucket_bytes);
    *out = dist::create(s, o, fn).release();
  });
}

void mixp_dist_destroy(mixp_dist *dist) {
  if (dist && dist->magic == mixp_dist::kMagic) delete dist;
}

int mixp_dist_rank(const mixp_dist *dist) {
  return dist && dist->magic == mixp_dist::kMagic ? dist->rank() : -1;
}

int mixp_dist_world_size(const mixp_dist *dist) {
  return dist && dist->magic == mixp_dist::kMagic ? dist->world() : -1;
}

int mixp_dist_local_rank(const mixp_dist *dist) {
  return dist && dist->magic == mixp_dist::kMagic ? dist->host->local_rank() : -1;
}

const char *mixp_dist_describe(const mixp_dist *dist) {
  return dist && dist->magic == mixp_dist::kMagic ? dist->description.c_str() : "";
}

mixp_status mixp_dist_all_reduce(mixp_dist *dist, mixp_tensor *tensor, mixp_reduce_op op) {
  static const char *fn = "mixp_dist_all_reduce";
  return guard(fn, [&] {
    Dist *d = dist::check_dist(dist, fn);
    Tensor *t = check_tensor_of(*d, tensor, fn, "tensor");
    if (op != MIXP_REDUCE_SUM && op != MIXP_REDUCE_AVG && op != MIXP_REDUCE_MAX)
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": op must be MIXP_REDUCE_SUM, _AVG or _MAX, got ", int(op));
    if (is_fp8(t->dtype))
      fail(MIXP_ERR_DTYPE, fn, ": tensor has dtype ", dtype_name(t->dtype),
           ", a storage type that all_reduce has no kernel for (cast it with mixp_cast)");
    if (op == MIXP_REDUCE_AVG && !is_float(t->dtype))
      fail(MIXP_ERR_DTYPE, fn, ": MIXP_REDUCE_AVG needs a float tensor, got ", dtype_name(t->dtype));
    if (op == MIXP_REDUCE_SUM && t->dtype == MIXP_BOOL)
      fail(MIXP_ERR_DTYPE, fn, ": MIXP_REDUCE_SUM of a bool tensor; use MIXP_REDUCE_MAX (any)");
    dist::all_reduce(*d, *t, op);
  });
}

mixp_status mixp_dist_broadcast(mixp_dist *dist, mixp_tensor *tensor, int root) {
  static const char *fn = "mixp_dist_broadcast";
  return guard(fn, [&] {
    Dist *d = dist::check_dist(dist, fn);
    Tensor *t = check_tensor_of(*d, tensor, fn, "tensor");
    if (root < 0 || root >= d->world())
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": root must be in [0, ", d->world(), "), got ", root);
    dist::broadcast(*d, *t, root);
  });
}

mixp_status mixp_dist_all_gather(mixp_dist *dist, const mixp_tensor *tensor, mixp_tensor **out) {
  static const char *fn = "mixp_dist_all_gather";
  return guard(fn, [&] {
    Dist *d = dist::check_dist(dist, fn);
    Tensor *t = check_tensor_of(*d, tensor, fn, "tensor");
    check_out(out, fn);
    if (t->ndim >= MIXP_MAX_DIMS)
      fail(MIXP_ERR_SHAPE, fn, ": tensor has ", t->ndim, " dimensions; the result needs one more and at most ",
           MIXP_MAX_DIMS, " are allowed");
    give(out, dist::all_gather(*d, *t));
  });
}

mixp_status mixp_dist_barrier(mixp_dist *dist) {
  static const char *fn = "mixp_dist_barrier";
  return guard(fn, [&] { dist::check_dist(dist, fn)->host->barrier(); });
}

mixp_status mixp_dist_broadcast_module(mixp_dist *dist, mixp_module *module) {
  static const char *fn = "mixp_dist_broadcast_module";
  return guard(fn, [&] {
    Dist *d = dist::check_dist(dist, fn);
    Module *m = check_module(module, fn);
    check_same_session(*d, m->session(), fn, "module");
    dist::broadcast_module(*d, *m);
  });
}

mixp_status mixp_dist_average_gradients(mixp_dist *dist, mixp_optimizer *optimizer,
                                        int64_t local_samples) {
  static const char *fn = "mixp_dist_average_gradients";
  return guard(fn, [&] {
    auto [d, o] = check_gradient_args(dist, optimizer, local_samples, fn);
    dist::average_gradients(*d, *o, local_samples, fn);
  });
}

mixp_status mixp_dist_prepare_gradients(mixp_dist *dist, mixp_optimizer *optimizer,
                                        int64_t local_samples) {
  static const char *fn = "mixp_dist_prepare_gradients";
  return guard(fn, [&] {
    auto [d, o] = check_gradient_args(dist, optimizer, local_samples, fn);
    dist::prepare_gradients(*d, *o, local_samples, fn);
  });
}

mixp_status mixp_dist_get_stats(const mixp_dist *dist, mixp_dist_stats *stats) {
  static const char *fn = "mixp_dist_get_stats";
  return guard(fn, [&] {
    const Dist *d = dist::check_dist(dist, fn);
    check_out(stats, fn, "stats");
    if (stats->struct_size < sizeof(mixp_dist_stats))
      fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": stats->struct_size is ", stats->struct_size,
           "; set it to sizeof(mixp_dist_stats)");
    write_answer(stats, d->stats);
  });
}

}  // extern "C"
