// Collectives on tensors. A tensor of a device backend with collectives
// (NCCL) is reduced there, on the backend's queue; a CPU tensor goes through
// the host transport, reduced by the algorithm below. Either way the values
// are staged in a reduction dtype (fp32 for halves, so a sum rounds once)
// and every rank receives bit-identical results.
#include "dist/dist.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "backend/backend.hpp"
#include "core/error.hpp"
#include "cpu/simd.hpp"
#include "autograd/node.hpp"
#include "dist/grad_sync.hpp"
#include "ops/ops.hpp"

mixp_dist::~mixp_dist() {
  magic = 0;
  if (session && session->leaf_grad_observer == sync.get()) session->leaf_grad_observer = nullptr;
  sync.reset();  // before the clique goes: its buckets may still be reduced
  if (clique && session && session->backend) clique->clique_leave();
  if (session && session->dist == this) session->dist = nullptr;
  if (session) session->dist_rank = -1;
}

namespace mixp::dist {
namespace {

// The dtype values are reduced in: halves widen to fp32 (rounded once at the
// end), BOOL to I32 (a sum is then "any").
DType reduce_dtype(DType d) {
  switch (d) {
    case MIXP_F16:
    case MIXP_BF16: return MIXP_F32;
    case MIXP_BOOL: return MIXP_I32;
    default: return d;
  }
}

// Host reduction of each element position over `world` blocks, rank 0
// first. Floats: a weighted sum (weights[r] per rank, or null for 1; the
// data-parallel gradient average in one pass) accumulated in double, so that
// fp32 values round once; integers wrap. The sum runs rank by rank over
// tiles, unit-stride, in the multi-versioned kernels: each element still
// adds its ranks in order, so every version gives the same bits.
template <class T>
void sum_blocks(const T *blocks, int world, int64_t stride, int64_t n, const double *weights, T *out) {
  constexpr int64_t kTile = 1024;
  const int64_t tiles = (n + kTile - 1) / kTile;
#pragma omp parallel for schedule(static) if (n * world >= (int64_t(1) << 16))
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t i0 = t * kTile, m = std::min(kTile, n - i0);
    cpu::run_kernel([&]() MIXP_KERNEL_BODY {
      double acc[kTile];
      for (int64_t i = 0; i < m; ++i) acc[i] = 0.0;
      for (int r = 0; r < world; ++r) {
        const double w = weights ? weights[r] : 1.0;
        const T *b = blocks + r * stride + i0;
        for (int64_t i = 0; i < m; ++i) acc[i] += w * double(b[i]);
      }
      for (int64_t i = 0; i < m; ++i) out[i0 + i] = T(acc[i]);
    });
  }
}

template <class T>
void reduce_blocks(const T *blocks, int world, int64_t stride, int64_t n, CollectiveOp op,
                   const double *weights, T *out) {
  if constexpr (std::is_floating_point_v<T>) {
    if (op == CollectiveOp::Sum) return sum_blocks(blocks, world, stride, n, weights, out);
  }
#pragma omp parallel for schedule(static) if (n * world >= (int64_t(1) << 16))
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      T m = blocks[i];  // MAX: NaN wins
      for (int r = 1; r < world && !std::isnan(m); ++r) {
        const T v = blocks[r * stride + i];
        if (std::isnan(v) || v > m) m = v;
      }
      out[i] = m;
    } else {
      using U = std::make_unsigned_t<T>;
      if (op == CollectiveOp::Sum) {
        U acc = 0;
        for (int r = 0; r < world; ++r) acc = U(acc + U(blocks[r * stride + i]));
        out[i] = T(acc);
      } else {
        T m = blocks[i];
        for (int r = 1; r < world; ++r) m = std::max(m, blocks[r * stride + i]);
        out[i] = m;
      }
    }
  }
}

// All-reduce of n contiguous host elements in place: each rank owns one
// chunk, receives every rank's piece of it (all_to_all), reduces them in
// rank order and hands the result to all (all_gather). As much traffic as a
// ring all-reduce, and the order of the sum is fixed whatever MPI chooses.
// When `data` has room for world chunks (capacity elements, the tail beyond
// n zeroed) it is sent and received in place; otherwise through scratch.
void host_all_reduce(Dist &d, void *data, DType dt, int64_t n, int64_t capacity, CollectiveOp op,
                     const double *weights) {
  HostTransport &h = *d.host;
  const int W = h.world();
  const size_t es = dtype_size(dt);
  const int64_t chunk = (n + W - 1) / W;
  const size_t block = size_t(chunk) * es, total = block * size_t(W);
  // Scratch kept by the communicator: a step's buckets reuse it.
  std::vector<unsigned char> &stage = d.scratch[0], &recv = d.scratch[1], &mine = d.scratch[2];
  if (recv.size() < total) recv.resize(total);
  if (mine.size() < block) mine.resize(block);
  unsigned char *send = static_cast<unsigned char *>(data);
  if (capacity < chunk * W) {
    if (stage.size() < total) stage.resize(total);
    std::memcpy(stage.data(), data, size_t(n) * es);
    std::memset(stage.data() + size_t(n) * es, 0, total - size_t(n) * es);  // the last chunk's padding
    send = stage.data();
  }
  h.all_to_all(send, recv.data(), block);
  auto run = [&](auto tag) {
    using T = decltype(tag);
    reduce_blocks(reinterpret_cast<const T *>(recv.data()), W, chunk, chunk, op, weights,
                  reinterpret_cast<T *>(mine.data()));
  };
  switch (dt) {
    case MIXP_F32: run(float{}); break;
    case MIXP_F64: run(double{}); break;
    case MIXP_I32: run(int32_t{}); break;
    case MIXP_I64: run(int64_t{}); break;
    case MIXP_U8: run(uint8_t{}); break;
    default: fail(MIXP_ERR_INTERNAL, "host_all_reduce: dtype ", dtype_name(dt));
  }
  h.all_gather(mine.data(), send, block);
  if (send != data) std::memcpy(data, send, size_t(n) * es);
}

}  // namespace

Dist *check_dist(const mixp_dist *d, const char *fn, const char *arg) {
  if (!d) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (d->magic != mixp_dist::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg,
         " is not a live mixp_dist (destroyed, or not a communicator handle)");
  return const_cast<Dist *>(d);
}

std::unique_ptr<Dist> create(Session *s, const mixp_dist_options &o, const char *fn) {
  if (s->dist)
    fail(MIXP_ERR_STATE, fn, ": the session already has a communicator (destroy it first)");
  Backend &be = *s->backend;
  DeviceCollectives *coll = be.collectives();
  // The host transport reads and writes tensors in host memory: only the
  // CPU's may go that way without device collectives (checked before MPI
  // starts, so that the refusal changes nothing).
  if (!coll && s->device != "cpu")
    fail(MIXP_ERR_UNSUPPORTED, fn, ": ", s->device, " tensors need device collectives, which the ",
         be.name(), " backend does not have (only cpu tensors go through the host transport)");
  auto d = std::make_unique<Dist>();
  d->session = SessionRef::share(s);
  d->bucket_bytes = o.bucket_bytes;
  d->host = o.transport == MIXP_DIST_SINGLE ? single_process_transport() : mpi_transport();
  d->description = d->host->describe();
  if (coll) {
    unsigned char id[kCliqueIdBytes] = {0};
    if (d->rank() == 0) coll->clique_id(id);
    d->host->broadcast(id, sizeof id, 0);
    const char *what = coll->clique_join(id, d->world(), d->rank());
    d->clique = coll;
    d->description += str("; ", be.name(), " tensors through ", what);
  }
  s->dist = d.get();
  s->dist_rank = d->rank();
  return d;
}

void reduce_buffer(Dist &d, Tensor &buf, CollectiveOp op, int64_t n, const double *weights,
                   bool overlap) {
  if (n == 0) return;
  Session *s = d.session.get();
  if (d.clique) {
    View v = view_of(buf);
    if (weights) {
      // NCCL only sums: scale this rank's part first.
      s->backend->unary(UnaryOp::MulScalar, v, v, weights[d.rank()]);
    }
    v.ndim = 1;
    v.shape[0] = n;
    v.strides[0] = 1;
    if (overlap) d.clique->all_reduce_overlapped(v, op);
    else d.clique->all_reduce(v, op);
  } else {
    apply_threads(s);
    host_all_reduce(d, buf.data(), buf.dtype, n, buf.numel(), op, weights);
  }
}

View packed_view(const Tensor &flat, int64_t start, const Tensor &like) {
  View v = view_of(like);
  v.data = static_cast<char *>(flat.data()) + start * int64_t(flat.elem_size());
  v.dtype = flat.dtype;
  int64_t stride = 1;
  for (int i = like.ndim - 1; i >= 0; --i) {
    v.strides[i] = stride;
    stride *= like.shape[i];
  }
  return v;
}

View flat_range(const Tensor &flat, int64_t start, int64_t n) {
  View v = view_of(flat);
  v.data = static_cast<char *>(flat.data()) + start * int64_t(flat.elem_size());
  v.ndim = 1;
  v.shape[0] = n;
  v.strides[0] = 1;
  return v;
}

// all_reduce and broadcast work on a copy (in the reduction dtype, in whole
// per-rank chunks so that the host transport reduces it in place) and write
// the tensor only once the collective succeeded.
void all_reduce(Dist &d, Tensor &t, mixp_reduce_op op) {
  const int64_t n = t.numel(), w = d.world();
  if (n == 0) return;
  Session *s = d.session.get();
  OpScope scope(OpId::dist_collective, s);
  const int64_t padded = d.clique ? n : (n + w - 1) / w * w;
  TensorPtr buf = empty(s, reduce_dtype(t.dtype), Shape{padded});
  Backend &be = *s->backend;
  apply_threads(s);
  const View packed = packed_view(*buf, 0, t);
  be.copy(view_of(t), packed);
  if (padded > n) be.fill(flat_range(*buf, n, padded - n), 0.0);
  reduce_buffer(d, *buf, op == MIXP_REDUCE_MAX ? CollectiveOp::Max : CollectiveOp::Sum, n, nullptr);
  if (op == MIXP_REDUCE_AVG) {
    const View head = flat_range(*buf, 0, n);
    be.unary(UnaryOp::MulScalar, head, head, 1.0 / double(w));
  }
  be.copy(packed, view_of(t));
}

void broadcast(Dist &d, Tensor &t, int root) {
  const int64_t n = t.numel();
  if (n == 0) return;
  Session *s = d.session.get();
  OpScope scope(OpId::dist_collective, s);
  TensorPtr buf = empty(s, t.dtype, Shape{n});
  Backend &be = *s->backend;
  const View packed = packed_view(*buf, 0, t);
  be.copy(view_of(t), packed);
  if (d.clique) d.clique->broadcast(flat_range(*buf, 0, n), root);
  else d.host->broadcast(buf->data(), size_t(n) * buf->elem_size(), root);
  be.copy(packed, view_of(t));
}

TensorPtr all_gather(Dist &d, const Tensor &t) {
  Session *s = d.session.get();
  OpScope scope(OpId::dist_collective, s);
  NoGradGuard no_grad(s);
  TensorPtr in = contiguous(TensorPtr::share(const_cast<Tensor *>(&t)));
  Shape shape;
  shape.ndim = t.ndim + 1;
  shape[0] = d.world();
  for (int i = 0; i < t.ndim; ++i) shape[i + 1] = t.shape[i];
  TensorPtr out = empty(s, t.dtype, shape);
  if (in->numel() > 0) {
    if (d.clique) d.clique->all_gather(view_of(*in), view_of(*out));
    else d.host->all_gather(in->data(), out->data(), size_t(in->numel()) * in->elem_size());
  }
  return out;
}


}  // namespace mixp::dist
