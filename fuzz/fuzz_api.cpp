// libFuzzer target: sequences of public API calls. Each input decodes into
// calls on one session, their arguments drawn from a pool of live handles
// (tensors, modules, optimizers, scalers, datasets, loaders), NULL, a tensor
// of a destroyed session, and adversarial numbers (0, -1, 2^31, 2^62,
// INT64_MAX, NaN, +-inf, denormals). Only the public header is used.
//
// Oracles, besides "no crash and no sanitizer report":
//   - a failing call's message begins with the name of the function called;
//   - MIXP_ERR_INTERNAL ("a bug in mixp") is never returned;
//   - out-parameters are untouched when a call fails.
// A violation aborts with the call and the message, so libFuzzer keeps the
// input as a crash reproducer.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <string>
#include <vector>

#include "mixp/mixp.h"
#include "../tests/c/op_rows.h"

namespace {

// ---- reading the input ---------------------------------------------------------

constexpr int64_t kI64[] = {0, 1, 2, 3, 4, 5, 7, -1, -2, -3,
                            INT32_MAX, int64_t(1) << 31, int64_t(1) << 32, int64_t(1) << 40,
                            int64_t(1) << 62, (int64_t(1) << 62) + 3, INT64_MAX, INT64_MIN,
                            INT64_MIN + 1, -(int64_t(1) << 62)};
constexpr int kI32[] = {0, 1, 2, 3, 4, -1, -2, -5, 8, INT32_MAX, INT32_MIN, 1 << 30};
const double kF64[] = {0.0, 1.0, -1.0, 0.5, 2.0, 1e-3, 0.1,
                       std::numeric_limits<double>::quiet_NaN(),
                       std::numeric_limits<double>::infinity(),
                       -std::numeric_limits<double>::infinity(),
                       std::numeric_limits<double>::denorm_min(), -0.0, 1e30, 1e308, -1e308, 65504.0};

struct Input {
  const uint8_t *p;
  size_t n, i = 0;
  bool done() const { return i >= n; }
  uint8_t u8() { return i < n ? p[i++] : 0; }
  // Mostly small values (what a valid call uses), sometimes adversarial.
  int64_t i64() {
    const uint8_t b = u8();
    return b < 160 ? int64_t(b % 7) : kI64[b % (sizeof kI64 / sizeof kI64[0])];
  }
  int i32() {
    const uint8_t b = u8();
    return b < 160 ? int(b % 5) - 1 : kI32[b % (sizeof kI32 / sizeof kI32[0])];
  }
  double f64() { return kF64[u8() % (sizeof kF64 / sizeof kF64[0])]; }
  mixp_dtype dtype() {
    const uint8_t b = u8();
    return b < 240 ? mixp_dtype(b % 8) : mixp_dtype(b % 2 ? 42 : -1);
  }
  uint32_t struct_size(uint32_t good) {
    const uint8_t b = u8();
    if (b < 220) return good;
    const uint32_t odd[] = {0, 1, 3, good - 1, good + 8, 0xffffffffu};
    return odd[b % 6];
  }
};

// ---- the oracles ---------------------------------------------------------------

[[noreturn]] void violation(const char *fn, const char *what) {
  std::fprintf(stderr, "fuzz_api: %s: %s (status %d, message \"%s\")\n", fn, what, int(mixp_last_status()),
               mixp_last_error());
  std::abort();
}

// Checks a status-returning call. `untouched` says whether its outputs
// still hold what they held before the call.
void check(const char *fn, mixp_status st, bool untouched = true) {
  if (st == MIXP_ERR_INTERNAL) violation(fn, "returned MIXP_ERR_INTERNAL");
  if (st >= 0) return;
  const char *msg = mixp_last_error();
  const size_t n = std::strlen(fn);
  if (std::strncmp(msg, fn, n) != 0 || msg[n] != ':') violation(fn, "failed with a message that does not start with its name");
  if (!untouched) violation(fn, "changed an output although it failed");
}

mixp_tensor *const kSentinelT = reinterpret_cast<mixp_tensor *>(uintptr_t(0x7));
mixp_module *const kSentinelM = reinterpret_cast<mixp_module *>(uintptr_t(0x7));

// ---- the world ------------------------------------------------------------------

constexpr int kT = 8, kM = 3, kO = 2, kG = 2, kD = 2, kL = 2;

struct World {
  mixp_session *s = nullptr;
  mixp_tensor *dead = nullptr;  // a tensor whose session was destroyed
  mixp_tensor *t[kT] = {};
  mixp_module *m[kM] = {};
  mixp_optimizer *o[kO] = {};
  mixp_grad_scaler *g[kG] = {};
  mixp_dataset *d[kD] = {};
  mixp_loader *l[kL] = {};
  int releases = 0, borrows = 0;  // borrowed host buffers: callbacks seen / made
  std::vector<std::vector<uint8_t> *> borrowed;

  ~World() {
    for (auto *&x : l) mixp_loader_destroy(x);
    for (auto *&x : d) mixp_dataset_destroy(x);
    for (auto *&x : g) mixp_grad_scaler_destroy(x);
    for (auto *&x : o) mixp_optimizer_destroy(x);
    for (auto *&x : m) mixp_module_destroy(x);
    for (auto *&x : t) mixp_tensor_release(x);
    mixp_tensor_release(dead);
    mixp_session_destroy(s);
    if (releases != borrows) violation("mixp_tensor_borrow_host", "on_release was not called exactly once per borrow");
    for (auto *b : borrowed) delete b;
  }

  // A tensor argument: a slot (possibly empty), NULL, or the dead session's.
  mixp_tensor *tensor(Input &in) {
    const uint8_t k = in.u8() % (kT + 2);
    return k < kT ? t[k] : k == kT ? nullptr : dead;
  }
  mixp_tensor *&slot(Input &in) { return t[in.u8() % kT]; }
  void put(mixp_tensor *&slot_ref, mixp_tensor *v) {
    mixp_tensor_release(slot_ref);
    slot_ref = v;
  }
  mixp_module *module(Input &in) {
    const uint8_t k = in.u8() % (kM + 1);
    return k < kM ? m[k] : nullptr;
  }
  mixp_optimizer *optimizer(Input &in) {
    const uint8_t k = in.u8() % (kO + 1);
    return k < kO ? o[k] : nullptr;
  }
  mixp_grad_scaler *scaler(Input &in) {
    const uint8_t k = in.u8() % (kG + 1);
    return k < kG ? g[k] : nullptr;
  }
  mixp_dataset *dataset(Input &in) {
    const uint8_t k = in.u8() % (kD + 1);
    return k < kD ? d[k] : nullptr;
  }
  mixp_loader *loader(Input &in) {
    const uint8_t k = in.u8() % (kL + 1);
    return k < kL ? l[k] : nullptr;
  }
  mixp_session *session(Input &in) { return in.u8() % 16 == 0 ? nullptr : s; }
};

void on_release(void *user) { ++static_cast<World *>(user)->releases; }

// A shape: ndim from the int pool (usually 0..4), extents from the i64 pool.
struct ShapeArg {
  int ndim = 0;
  int64_t d[8] = {};
  const int64_t *ptr = nullptr;
  void read(Input &in) {
    const uint8_t b = in.u8();
    ndim = b < 200 ? b % 5 : in.i32();
    for (int i = 0; i < 8; ++i) d[i] = in.i64();
    ptr = (b % 37 == 0) ? nullptr : d;
  }
  int64_t numel() const {
    long double n = 1;
    for (int i = 0; i < ndim && i < 8; ++i) n *= (long double)d[i];
    return n > 1e18L ? INT64_MAX : n < -1e18L ? INT64_MIN : int64_t(n);
  }
};

// ---- the calls --------------------------------------------------------------------

using Op = void (*)(World &, Input &);

template <class F>
void out_tensor(World &w, Input &in, const char *fn, F &&call) {
  mixp_tensor *out = kSentinelT;
  mixp_tensor *&dst = w.slot(in);
  const mixp_status st = call(&out);
  check(fn, st, out == kSentinelT);
  if (st == MIXP_OK) w.put(dst, out);
}

#define CALL_T(fn, ...) out_tensor(w, in, #fn, [&](mixp_tensor **o_) { return fn(__VA_ARGS__, o_); })

void op_create(World &w, Input &in) {
  ShapeArg sh;
  sh.read(in);
  const mixp_dtype dt = in.dtype();
  switch (in.u8() % 6) {
    case 0: CALL_T(mixp_tensor_zeros, w.session(in), dt, sh.ptr, sh.ndim); break;
    case 1: CALL_T(mixp_tensor_ones, w.session(in), dt, sh.ptr, sh.ndim); break;
    case 2: CALL_T(mixp_tensor_full, w.session(in), dt, sh.ptr, sh.ndim, in.f64()); break;
    case 3: CALL_T(mixp_tensor_rand, w.session(in), dt, sh.ptr, sh.ndim); break;
    case 4: CALL_T(mixp_tensor_randn, w.session(in), dt, sh.ptr, sh.ndim); break;
    default: CALL_T(mixp_tensor_arange, w.session(in), dt, in.f64(), in.f64() * 7, in.f64()); break;
  }
}

void op_host(World &w, Input &in) {
  ShapeArg sh;
  sh.read(in);
  const mixp_dtype dt = in.dtype();
  // nbytes: the right amount for the shape, or another; a buffer of that
  // size backs it whenever it is small enough to exist.
  const int64_t n = sh.numel();
  const size_t want = n < 0 || n > (int64_t(1) << 56) ? size_t(1) << 60 : size_t(n) * mixp_dtype_size(dt);
  size_t nbytes = in.u8() % 4 ? want : size_t(in.i64());
  const bool real = nbytes <= (1u << 16);
  std::vector<uint8_t> buf(real ? nbytes + 1 : 16, 0x3c);
  switch (in.u8() % 3) {
    case 0: CALL_T(mixp_tensor_from_host, w.session(in), real ? buf.data() : nullptr, nbytes, dt, sh.ptr, sh.ndim); break;
    case 1: {
      if (!real) return;  // a caller's buffer must be as large as it says
      auto *keep = new std::vector<uint8_t>(buf);
      w.borrowed.push_back(keep);
      mixp_tensor *out = kSentinelT;
      mixp_tensor *&dst = w.slot(in);
      const mixp_status st = mixp_tensor_borrow_host(w.session(in), keep->data(), nbytes, dt, sh.ptr, sh.ndim,
                                                     on_release, &w, &out);
      check("mixp_tensor_borrow_host", st, out == kSentinelT);
      if (st == MIXP_OK) {
        ++w.borrows;
        w.put(dst, out);
      }
      break;
    }
    default: {
      mixp_tensor *t = w.tensor(in);
      if (!real) nbytes = buf.size();
      check("mixp_tensor_to_host", mixp_tensor_to_host(t, buf.data(), nbytes));
      break;
    }
  }
}

void op_query(World &w, Input &in) {
  mixp_tensor *t = w.tensor(in);
  (void)mixp_tensor_dtype(t);
  (void)mixp_tensor_ndim(t);
  (void)mixp_tensor_dim(t, in.i32());
  (void)mixp_tensor_stride(t, in.i32());
  (void)mixp_tensor_numel(t);
  (void)mixp_tensor_is_contiguous(t);
  (void)mixp_tensor_session(t);
  (void)mixp_tensor_requires_grad(t);
  (void)mixp_tensor_is_leaf(t);
  int64_t shape[8] = {-9, -9, -9, -9, -9, -9, -9, -9};
  int nd = -9;
  const int cap = in.i32();
  const mixp_status st = mixp_tensor_shape(t, in.u8() % 8 ? shape : nullptr, cap < 0 || cap > 8 ? 8 : cap, &nd);
  check("mixp_tensor_shape", st, nd == -9);
  double v = -7.5;
  const mixp_status st2 = mixp_tensor_item(t, &v);
  check("mixp_tensor_item", st2, v == -7.5);
}

void op_autograd(World &w, Input &in) {
  switch (in.u8() % 6) {
    case 0: check("mixp_tensor_set_requires_grad", mixp_tensor_set_requires_grad(w.tensor(in), in.i32())); break;
    case 1: CALL_T(mixp_tensor_grad, w.tensor(in)); break;
    case 2: check("mixp_tensor_zero_grad", mixp_tensor_zero_grad(w.tensor(in))); break;
    case 3: CALL_T(mixp_tensor_detach, w.tensor(in)); break;
    case 4: check("mixp_backward", mixp_backward(w.tensor(in), w.tensor(in))); break;
    default: check("mixp_tensor_copy_", mixp_tensor_copy_(w.tensor(in), w.tensor(in))); break;
  }
}

void op_view(World &w, Input &in) {
  mixp_tensor *x = w.tensor(in);
  switch (in.u8() % 7) {
    case 0: CALL_T(mixp_cast, x, in.dtype()); break;
    case 1: {
      ShapeArg sh;
      sh.read(in);
      CALL_T(mixp_reshape, x, sh.ptr, sh.ndim);
      break;
    }
    case 2: CALL_T(mixp_transpose, x, in.i32(), in.i32()); break;
    case 3: {
      int dims[8];
      for (int &d : dims) d = in.i32();
      const int nd = in.u8() % 9;
      CALL_T(mixp_permute, x, in.u8() % 9 ? dims : nullptr, nd);
      break;
    }
    case 4: CALL_T(mixp_slice, x, in.i32(), in.i64(), in.i64(), in.i64()); break;
    case 5: CALL_T(mixp_contiguous, x); break;
    default: CALL_T(mixp_flatten, x, in.i32(), in.i32()); break;
  }
}

void op_elementwise(World &w, Input &in) {
  // The op table's elementwise rows (tests/c/op_rows.h, generated from
  // src/core/ops.def), so a new op is fuzzed without an edit here; the two
  // products by hand.
  typedef mixp_status (*Bin)(const mixp_tensor *, const mixp_tensor *, mixp_tensor **);
  static const Bin products[] = {mixp_matmul, mixp_bmm};
  static const char *const product_names[] = {"mixp_matmul", "mixp_bmm"};
  const uint8_t k = in.u8();
  mixp_tensor *a = w.tensor(in);
  switch (k % 5) {
    case 0: {
      const int i = k / 5 % (MT_BINARY_ROWS + 2);
      mixp_tensor *b = w.tensor(in);
      if (i < MT_BINARY_ROWS) {
        const mt_binary_row &row = mt_binary_rows[i];
        out_tensor(w, in, row.c_function, [&](mixp_tensor **o) { return row.f(a, b, o); });
      } else {
        out_tensor(w, in, product_names[i - MT_BINARY_ROWS],
                   [&](mixp_tensor **o) { return products[i - MT_BINARY_ROWS](a, b, o); });
      }
      break;
    }
    case 1:
    case 2: {
      // X rows take the tensor, XS rows a scalar too; Custom rows (gelu,
      // with its approximation argument) are case 3.
      const mt_unary_row &row = mt_unary_rows[k / 5 % MT_UNARY_ROWS];
      const double s = in.f64();
      if (row.x) out_tensor(w, in, row.c_function, [&](mixp_tensor **o) { return row.x(a, o); });
      if (row.xs) out_tensor(w, in, row.c_function, [&](mixp_tensor **o) { return row.xs(a, s, o); });
      break;
    }
    case 3: CALL_T(mixp_gelu, a, mixp_gelu_approx(in.i32())); break;
    default: CALL_T(mixp_linear, a, w.tensor(in), w.tensor(in)); break;
  }
}

void op_reduce(World &w, Input &in) {
  mixp_tensor *x = w.tensor(in);
  int dims[8];
  for (int &d : dims) d = in.i32();
  const int nd = in.u8() % 10 - 1;
  switch (in.u8() % 8) {
    case 0: CALL_T(mixp_sum, x, in.u8() % 9 ? dims : nullptr, nd, in.i32()); break;
    case 1: CALL_T(mixp_mean, x, in.u8() % 9 ? dims : nullptr, nd, in.i32()); break;
    case 2: {
      mixp_tensor *v = kSentinelT, *i = kSentinelT;
      mixp_tensor *&dv = w.slot(in), *&di = w.slot(in);
      const mixp_status st = mixp_max(x, in.i32(), in.i32(), &v, &i);
      check("mixp_max", st, v == kSentinelT && i == kSentinelT);
      if (st == MIXP_OK) {
        if (&dv == &di) {
          mixp_tensor_release(i);
          w.put(dv, v);
        } else {
          w.put(dv, v);
          w.put(di, i);
        }
      }
      break;
    }
    case 3: CALL_T(mixp_argmax, x, in.i32(), in.i32()); break;
    case 4: CALL_T(mixp_softmax, x, in.i32()); break;
    case 5: CALL_T(mixp_log_softmax, x, in.i32()); break;
    case 6: CALL_T(mixp_cross_entropy, x, w.tensor(in), mixp_reduction(in.i32()), in.i64()); break;
    default: CALL_T(mixp_mse_loss, x, w.tensor(in), mixp_reduction(in.i32())); break;
  }
}

void op_nn(World &w, Input &in) {
  mixp_tensor *x = w.tensor(in);
  switch (in.u8() % 12) {
    case 0: CALL_T(mixp_dropout, x, in.f64(), in.i32()); break;
    case 1: {
      const mixp_tensor *ts[4] = {x, w.tensor(in), w.tensor(in), w.tensor(in)};
      CALL_T(mixp_cat, in.u8() % 9 ? ts : nullptr, in.i32() % 5, in.i32());
      break;
    }
    case 2: {
      mixp_conv2d_options o;
      mixp_conv2d_options_init(&o);
      o.struct_size = in.struct_size(sizeof o);
      if (in.u8() % 2) {
        o.stride_h = in.i64(); o.stride_w = in.i64(); o.pad_h = in.i64(); o.pad_w = in.i64();
        o.dilation_h = in.i64(); o.dilation_w = in.i64(); o.groups = in.i64(); o.layout = mixp_layout(in.i32());
      }
      CALL_T(mixp_conv2d, x, w.tensor(in), w.tensor(in), in.u8() % 9 ? &o : nullptr);
      break;
    }
    case 3: {
      mixp_pool2d_options o;
      mixp_pool2d_options_init(&o);
      o.struct_size = in.struct_size(sizeof o);
      o.kernel_h = in.i64(); o.kernel_w = in.i64();
      if (in.u8() % 2) {
        o.stride_h = in.i64(); o.stride_w = in.i64(); o.pad_h = in.i64(); o.pad_w = in.i64();
        o.count_include_pad = in.i32(); o.layout = mixp_layout(in.i32());
      }
      if (in.u8() % 2) CALL_T(mixp_max_pool2d, x, in.u8() % 9 ? &o : nullptr);
      else CALL_T(mixp_avg_pool2d, x, in.u8() % 9 ? &o : nullptr);
      break;
    }
    case 4: CALL_T(mixp_adaptive_avg_pool2d, x, in.i64(), in.i64(), mixp_layout(in.i32())); break;
    case 5:
      CALL_T(mixp_batch_norm, x, w.tensor(in), w.tensor(in), w.tensor(in), w.tensor(in), in.i32(), in.f64(),
             in.f64(), mixp_layout(in.i32()));
      break;
    case 6: CALL_T(mixp_layer_norm, x, in.i32(), w.tensor(in), w.tensor(in), in.f64()); break;
    case 7: CALL_T(mixp_group_norm, x, in.i64(), w.tensor(in), w.tensor(in), in.f64()); break;
    case 8: CALL_T(mixp_embedding, x, w.tensor(in), in.i64()); break;
    case 9:
      CALL_T(mixp_scaled_dot_product_attention, x, w.tensor(in), w.tensor(in), in.i32(), in.f64(), in.f64());
      break;
    case 10: {
      int64_t sizes[4] = {in.i64(), in.i64(), in.i64(), in.i64()};
      const int n = in.i32();
      mixp_tensor *outs[4] = {kSentinelT, kSentinelT, kSentinelT, kSentinelT};
      const int nn = n > 4 ? 4 : n;  // our array holds 4; negative counts go through
      const mixp_status st = mixp_split(x, in.u8() % 9 ? sizes : nullptr, nn, in.i32(), in.u8() % 9 ? outs : nullptr);
      bool untouched = true;
      for (mixp_tensor *o : outs) untouched &= o == kSentinelT;
      check("mixp_split", st, untouched);
      if (st == MIXP_OK)
        for (int i = 0; i < nn; ++i) w.put(w.t[i % kT], outs[i]);
      break;
    }
    default: {
      int64_t pads[8];
      for (int64_t &p : pads) p = in.i64();
      CALL_T(mixp_pad, x, in.u8() % 9 ? pads : nullptr, in.i32() % 9, in.f64());
      break;
    }
  }
}

void op_module(World &w, Input &in) {
  mixp_module *&slot = w.m[in.u8() % kM];
  mixp_module *out = kSentinelM;
  const char *fn = nullptr;
  mixp_status st = MIXP_OK;
  mixp_session *s = w.session(in);
  const mixp_dtype dt = in.u8() % 8 ? MIXP_F32 : in.dtype();
  switch (in.u8() % 7) {
    case 0: fn = "mixp_linear_create"; st = mixp_linear_create(s, in.i64(), in.i64(), in.i32(), dt, &out); break;
    case 1: {
      fn = "mixp_conv2d_create";
      mixp_conv2d_options o;
      mixp_conv2d_options_init(&o);
      o.struct_size = in.struct_size(sizeof o);
      o.groups = in.u8() % 4 ? 1 : in.i64();
      st = mixp_conv2d_create(s, in.i64(), in.i64(), in.i64(), in.i64(), &o, in.i32(), dt, &out);
      break;
    }
    case 2:
      fn = "mixp_batchnorm2d_create";
      st = mixp_batchnorm2d_create(s, in.i64(), in.f64(), in.f64(), in.i32(), dt, &out);
      break;
    case 3: fn = "mixp_layernorm_create"; st = mixp_layernorm_create(s, in.i64(), in.f64(), in.i32(), dt, &out); break;
    case 4:
      fn = "mixp_embedding_create";
      st = mixp_embedding_create(s, in.i64(), in.i64(), in.i64(), dt, &out);
      break;
    case 5:
      fn = "mixp_multihead_attention_create";
      st = mixp_multihead_attention_create(s, in.i64(), in.i64(), in.i32(), in.f64(), in.i32(), dt, &out);
      break;
    default: {
      static const char *const configs[] = {
          "mlp in=8 hidden=4 classes=3", "cnn in_channels=1 classes=2 width=2 image_size=8 hidden=4",
          "gpt n_layer=1 n_head=1 n_embd=4 vocab=5 block_size=4", "mlp in=4611686018427387904 classes=3",
          "mlp in=8 hidden=9223372036854775807", "resnet depth=18 width=-1", "cnn width=1e308", "",
          "mobilenet_v3 size=small width_mult=nan", "gpt n_embd=4 n_head=3"};
      fn = "mixp_model_create";
      st = mixp_model_create(s, in.u8() % 16 ? configs[in.u8() % 10] : nullptr, &out);
      break;
    }
  }
  check(fn, st, out == kSentinelM);
  if (st == MIXP_OK) {
    mixp_module_destroy(slot);
    slot = out;
  }
}

void op_module_use(World &w, Input &in) {
  mixp_module *m = w.module(in);
  (void)mixp_module_num_parameters(m);
  (void)mixp_module_num_buffers(m);
  (void)mixp_module_num_parameter_elements(m);
  (void)mixp_module_parameter_name(m, in.i32());
  (void)mixp_module_buffer_name(m, in.i32());
  switch (in.u8() % 4) {
    case 0: CALL_T(mixp_module_forward, m, w.tensor(in)); break;
    case 1: CALL_T(mixp_module_parameter, m, in.i32()); break;
    case 2: CALL_T(mixp_module_buffer, m, in.i32()); break;
    default: check("mixp_module_set_training", mixp_module_set_training(m, in.i32())); break;
  }
}

void op_optim(World &w, Input &in) {
  switch (in.u8() % 8) {
    case 0: {
      mixp_optimizer_options o;
      mixp_optimizer_options_init(&o, mixp_optimizer_kind(in.u8() % 4 ? in.u8() % 3 : in.i32()));
      o.struct_size = in.struct_size(sizeof o);
      if (in.u8() % 2) {
        o.lr = in.f64(); o.momentum = in.f64(); o.weight_decay = in.f64(); o.beta1 = in.f64();
        o.beta2 = in.f64(); o.eps = in.f64(); o.schedule = mixp_lr_schedule_kind(in.i32());
        o.warmup_steps = in.i64(); o.total_steps = in.i64(); o.min_lr = in.f64(); o.nesterov = in.i32();
        o.dampening = in.f64();
      }
      mixp_tensor *params[4] = {w.tensor(in), w.tensor(in), w.tensor(in), w.tensor(in)};
      mixp_optimizer *out = reinterpret_cast<mixp_optimizer *>(uintptr_t(0x7));
      mixp_optimizer *&slot = w.o[in.u8() % kO];
      const mixp_status st =
          mixp_optimizer_create(w.session(in), in.u8() % 9 ? params : nullptr, in.i32() % 5, in.u8() % 9 ? &o : nullptr, &out);
      check("mixp_optimizer_create", st, out == reinterpret_cast<mixp_optimizer *>(uintptr_t(0x7)));
      if (st == MIXP_OK) {
        mixp_optimizer_destroy(slot);
        slot = out;
      }
      break;
    }
    case 1: check("mixp_optimizer_step", mixp_optimizer_step(w.optimizer(in))); break;
    case 2: check("mixp_optimizer_zero_grad", mixp_optimizer_zero_grad(w.optimizer(in))); break;
    case 3: {
      double lr = -3.25;
      const mixp_status st = mixp_optimizer_get_lr(w.optimizer(in), &lr);
      check("mixp_optimizer_get_lr", st, lr == -3.25);
      check("mixp_optimizer_set_lr", mixp_optimizer_set_lr(w.optimizer(in), in.f64()));
      (void)mixp_optimizer_step_count(w.optimizer(in));
      break;
    }
    case 4: {
      mixp_optimizer_options o;
      mixp_optimizer_options_init(&o, MIXP_OPTIM_ADAMW);
      o.schedule = mixp_lr_schedule_kind(in.i32());
      o.warmup_steps = in.i64(); o.total_steps = in.i64(); o.lr = in.f64(); o.min_lr = in.f64();
      double lr = -3.25;
      const mixp_status st = mixp_lr_schedule_value(&o, in.i64(), &lr);
      check("mixp_lr_schedule_value", st, lr == -3.25);
      break;
    }
    case 5: CALL_T(mixp_clip_grad_norm, w.optimizer(in), in.f64()); break;
    case 6: {
      mixp_decorate_options d;
      mixp_decorate_options_init(&d);
      d.struct_size = in.struct_size(sizeof d);
      d.dtype = in.u8() % 2 ? MIXP_BF16 : in.dtype();
      d.master_weights = in.i32(); d.master_grad = in.i32(); d.keep_norm_fp32 = in.i32();
      check("mixp_amp_decorate", mixp_amp_decorate(w.module(in), w.optimizer(in), in.u8() % 9 ? &d : nullptr));
      break;
    }
    default: {
      mixp_optimizer *&slot = w.o[in.u8() % kO];
      mixp_optimizer_destroy(slot);
      slot = nullptr;
      break;
    }
  }
}

void op_scaler(World &w, Input &in) {
  mixp_grad_scaler *g = w.scaler(in);
  switch (in.u8() % 9) {
    case 0: {
      mixp_grad_scaler_options o;
      mixp_grad_scaler_options_init(&o);
      o.struct_size = in.struct_size(sizeof o);
      if (in.u8() % 2) {
        o.mode = mixp_scaler_mode(in.i32()); o.init_scale = in.f64(); o.growth_factor = in.f64();
        o.backoff_factor = in.f64(); o.growth_interval = in.i64(); o.decr_every_n_nan_or_inf = in.i64();
        o.hysteresis = in.i64(); o.min_scale = in.f64(); o.max_scale = in.f64();
      }
      mixp_grad_scaler *out = reinterpret_cast<mixp_grad_scaler *>(uintptr_t(0x7));
      mixp_grad_scaler *&slot = w.g[in.u8() % kG];
      const mixp_status st = mixp_grad_scaler_create(w.session(in), in.u8() % 9 ? &o : nullptr, &out);
      check("mixp_grad_scaler_create", st, out == reinterpret_cast<mixp_grad_scaler *>(uintptr_t(0x7)));
      if (st == MIXP_OK) {
        mixp_grad_scaler_destroy(slot);
        slot = out;
      }
      break;
    }
    case 1: CALL_T(mixp_grad_scaler_scale, g, w.tensor(in)); break;
    case 2: check("mixp_grad_scaler_unscale", mixp_grad_scaler_unscale(g, w.optimizer(in))); break;
    case 3: check("mixp_grad_scaler_step", mixp_grad_scaler_step(g, w.optimizer(in))); break;
    case 4: check("mixp_grad_scaler_update", mixp_grad_scaler_update(g)); break;
    case 5: check("mixp_grad_scaler_update_to", mixp_grad_scaler_update_to(g, in.f64())); break;
    case 6: {
      double v = -3.25;
      int fi = -3;
      int64_t gt = -3;
      check("mixp_grad_scaler_get_scale", mixp_grad_scaler_get_scale(g, &v), v == -3.25);
      check("mixp_grad_scaler_found_inf", mixp_grad_scaler_found_inf(g, &fi), fi == -3);
      check("mixp_grad_scaler_growth_tracker", mixp_grad_scaler_growth_tracker(g, &gt), gt == -3);
      (void)mixp_grad_scaler_mode(g);
      break;
    }
    case 7: {
      size_t need = 12345, written = 12345;
      const mixp_status st = mixp_grad_scaler_state_size(g, &need);
      check("mixp_grad_scaler_state_size", st, need == 12345);
      std::vector<uint8_t> buf(256, 0);
      const size_t cap = in.u8() % 3 ? buf.size() : size_t(in.u8());
      const mixp_status st2 = mixp_grad_scaler_save_state(g, buf.data(), cap, &written);
      check("mixp_grad_scaler_save_state", st2, written == 12345);
      if (st2 == MIXP_OK && in.u8() % 2) buf[in.u8() % written] ^= uint8_t(1u << (in.u8() % 8));
      check("mixp_grad_scaler_load_state",
            mixp_grad_scaler_load_state(w.scaler(in), buf.data(), st2 == MIXP_OK ? written : cap));
      break;
    }
    default: {
      // Raw bytes from the input as a saved state.
      const size_t n = in.u8();
      std::vector<uint8_t> raw(n);
      for (auto &b : raw) b = in.u8();
      check("mixp_grad_scaler_load_state", mixp_grad_scaler_load_state(g, raw.data(), raw.size()));
      break;
    }
  }
}

void op_session(World &w, Input &in) {
  mixp_session *s = w.session(in);
  switch (in.u8() % 9) {
    case 0: check("mixp_session_set_seed", mixp_session_set_seed(s, uint64_t(in.i64()))); break;
    case 1: check("mixp_no_grad_begin", mixp_no_grad_begin(s)); break;
    case 2: check("mixp_no_grad_end", mixp_no_grad_end(s)); break;
    case 3: check("mixp_session_set_tf32", mixp_session_set_tf32(s, in.i32())); break;
    case 4:
      check("mixp_session_set_numerics_check", mixp_session_set_numerics_check(s, mixp_numerics_mode(in.i32())));
      break;
    case 5: {
      mixp_memory_stats st;
      std::memset(&st, 0x5a, sizeof st);
      st.struct_size = in.struct_size(sizeof st);
      const mixp_memory_stats before = st;
      const mixp_status r = mixp_memory_stats_get(s, &st);
      check("mixp_memory_stats_get", r, std::memcmp(&st, &before, sizeof st) == 0);
      if (r == MIXP_OK && st.current_bytes > (uint64_t(1) << 48))
        violation("mixp_memory_stats_get", "current_bytes is beyond any machine (an uncounted free?)");
      check("mixp_memory_stats_reset_peak", mixp_memory_stats_reset_peak(s));
      uint64_t c = 77;
      check("mixp_session_host_syncs", mixp_session_host_syncs(s, &c), c == 77);
      break;
    }
    case 6: {
      static const char *const names[] = {"matmul", "softmax", "relu", "cast", "nonsense", "", "add"};
      const char *white[2] = {names[in.u8() % 7], names[in.u8() % 7]};
      const char *black[2] = {names[in.u8() % 7], in.u8() % 9 ? names[in.u8() % 7] : nullptr};
      mixp_autocast_options o;
      mixp_autocast_options_init(&o);
      o.struct_size = in.struct_size(sizeof o);
      o.enabled = in.i32(); o.level = mixp_amp_level(in.i32() % 4); o.dtype = in.u8() % 2 ? MIXP_BF16 : in.dtype();
      o.cache_enabled = in.i32();
      o.custom_white_list = in.u8() % 5 ? white : nullptr;
      o.n_custom_white = in.i32() % 3;
      o.custom_black_list = in.u8() % 5 ? black : nullptr;
      o.n_custom_black = in.i32() % 3;
      check("mixp_autocast_push", mixp_autocast_push(s, in.u8() % 9 ? &o : nullptr));
      break;
    }
    case 7: check("mixp_autocast_pop", mixp_autocast_pop(s)); break;
    default: {
      static const char *const names[] = {"matmul", "softmax", "nonsense", "backward", "expand", "gelu"};
      mixp_autocast_policy_info p;
      p.struct_size = in.struct_size(sizeof p);
      p.cast = mixp_cast_policy(99);
      p.dtype = mixp_dtype(99);
      const mixp_status st = mixp_autocast_policy(s, in.u8() % 9 ? names[in.u8() % 6] : nullptr, &p);
      check("mixp_autocast_policy", st, p.cast == mixp_cast_policy(99) && p.dtype == mixp_dtype(99));
      break;
    }
  }
}

void op_checkpoint(World &w, Input &in) {
  mixp_session *s = w.session(in);
  switch (in.u8() % 3) {
    case 0: check("mixp_checkpoint_begin", mixp_checkpoint_begin(s)); break;
    case 1: {
      mixp_tensor *outs[3] = {w.tensor(in), w.tensor(in), w.tensor(in)};
      check("mixp_checkpoint_end", mixp_checkpoint_end(s, in.u8() % 9 ? outs : nullptr, in.i32() % 4));
      break;
    }
    default: check("mixp_checkpoint_abort", mixp_checkpoint_abort(s)); break;
  }
}

void op_data(World &w, Input &in) {
  switch (in.u8() % 7) {
    case 0: {
      mixp_synthetic_options o;
      mixp_synthetic_options_init(&o);
      o.struct_size = in.struct_size(sizeof o);
      o.num_samples = in.u8() % 2 ? 16 : in.i64();
      o.channels = in.u8() % 2 ? 1 : in.i64();
      o.height = in.u8() % 2 ? 4 : in.i64();
      o.width = in.u8() % 2 ? 4 : in.i64();
      o.num_classes = in.u8() % 2 ? 3 : in.i64();
      o.noise = in.u8() % 2 ? 0.1 : in.f64();
      mixp_dataset *out = reinterpret_cast<mixp_dataset *>(uintptr_t(0x7));
      mixp_dataset *&slot = w.d[in.u8() % kD];
      const mixp_status st = mixp_dataset_synthetic(w.session(in), in.u8() % 9 ? &o : nullptr, &out);
      check("mixp_dataset_synthetic", st, out == reinterpret_cast<mixp_dataset *>(uintptr_t(0x7)));
      if (st == MIXP_OK) {
        // A loader keeps its dataset: drop the loaders before the dataset.
        for (auto *&l : w.l) { mixp_loader_destroy(l); l = nullptr; }
        mixp_dataset_destroy(slot);
        slot = out;
      }
      break;
    }
    case 1: {
      mixp_dataset *out = reinterpret_cast<mixp_dataset *>(uintptr_t(0x7));
      const mixp_status st = mixp_dataset_subset(w.dataset(in), in.i64(), in.i64(), &out);
      check("mixp_dataset_subset", st, out == reinterpret_cast<mixp_dataset *>(uintptr_t(0x7)));
      if (st == MIXP_OK) mixp_dataset_destroy(out);
      break;
    }
    case 2: {
      mixp_dataset *ds = w.dataset(in);
      (void)mixp_dataset_size(ds);
      (void)mixp_dataset_num_classes(ds);
      int64_t shape[MIXP_MAX_DIMS];
      int nd = -9;
      check("mixp_dataset_sample_shape", mixp_dataset_sample_shape(ds, shape, &nd), nd == -9);
      break;
    }
    case 3: {
      mixp_loader_options o;
      mixp_loader_options_init(&o);
      o.struct_size = in.struct_size(sizeof o);
      o.batch_size = in.u8() % 2 ? 4 : in.i64();
      o.shuffle = in.i32(); o.drop_last = in.i32(); o.dtype = in.u8() % 2 ? MIXP_F32 : in.dtype();
      o.scale = in.u8() % 2 ? 1.0 : in.f64(); o.mean = in.u8() % 2 ? 0.0 : in.f64(); o.std = in.u8() % 2 ? 1.0 : in.f64();
      mixp_loader *out = reinterpret_cast<mixp_loader *>(uintptr_t(0x7));
      mixp_loader *&slot = w.l[in.u8() % kL];
      const mixp_status st = mixp_loader_create(w.dataset(in), in.u8() % 9 ? &o : nullptr, &out);
      check("mixp_loader_create", st, out == reinterpret_cast<mixp_loader *>(uintptr_t(0x7)));
      if (st == MIXP_OK) {
        mixp_loader_destroy(slot);
        slot = out;
      }
      break;
    }
    case 4: {
      mixp_loader *l = w.loader(in);
      (void)mixp_loader_num_batches(l);
      (void)mixp_loader_epoch(l);
      mixp_tensor *x = kSentinelT, *y = kSentinelT;
      const mixp_status st = mixp_loader_next(l, &x, &y);
      check("mixp_loader_next", st, x == kSentinelT && y == kSentinelT);
      if (st == MIXP_OK) {
        w.put(w.slot(in), x);
        w.put(w.t[(in.u8() + 1) % kT], y);
      }
      break;
    }
    case 5: {
      mixp_dataset *out = reinterpret_cast<mixp_dataset *>(uintptr_t(0x7));
      const mixp_status st = mixp_dataset_idx_open(w.session(in), "/nonexistent/images", in.u8() % 2 ? nullptr : "/dev/null", &out);
      check("mixp_dataset_idx_open", st, out == reinterpret_cast<mixp_dataset *>(uintptr_t(0x7)));
      if (st == MIXP_OK) mixp_dataset_destroy(out);
      break;
    }
    default: {
      char buf[64];
      size_t len = 999;
      const mixp_status st = mixp_state_read_metadata(in.u8() % 2 ? "/nonexistent" : "/dev/null", "user", buf,
                                                      in.u8() % 2 ? sizeof buf : size_t(in.u8() % 4), &len);
      check("mixp_state_read_metadata", st, len == 999);
      break;
    }
  }
}

void op_release(World &w, Input &in) {
  mixp_tensor *&t = w.slot(in);
  if (in.u8() % 3 == 0 && t) {
    (void)mixp_tensor_retain(t);  // and release twice: balanced
    mixp_tensor_release(t);
  }
  mixp_tensor_release(t);
  t = nullptr;
}

constexpr Op kOps[] = {op_create, op_host,  op_query,      op_autograd, op_view,   op_elementwise,
                       op_reduce, op_nn,    op_module,     op_module_use, op_optim, op_scaler,
                       op_session, op_checkpoint, op_data, op_release};

}  // namespace

// Absurd sizes must come back as MIXP_ERR_OUT_OF_MEMORY, not as an ASan
// abort: allocations over 1 GiB fail (run_fuzz.sh sets libFuzzer's own
// malloc limit just above).
extern "C" const char *__asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024";
}

// ASan's operator new reports a failed allocation as a crash even when
// malloc may return NULL, so the library's std::bad_alloc paths (a huge
// but well-formed dataset, say) could not be reached. These replacements
// allocate through ASan's malloc and throw as the standard says; what is
// lost is only ASan's new/delete mismatch check.
void *operator new(size_t n) {
  if (void *p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void *operator new[](size_t n) { return operator new(n); }
void *operator new(size_t n, std::align_val_t a) {
  const size_t al = size_t(a);
  if (void *p = std::aligned_alloc(al, (n + al - 1) / al * al ? (n + al - 1) / al * al : al)) return p;
  throw std::bad_alloc();
}
void *operator new[](size_t n, std::align_val_t a) { return operator new(n, a); }
void *operator new(size_t n, const std::nothrow_t &) noexcept { return std::malloc(n ? n : 1); }
void *operator new[](size_t n, const std::nothrow_t &) noexcept { return std::malloc(n ? n : 1); }
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, size_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, const std::nothrow_t &) noexcept { std::free(p); }
void operator delete[](void *p, const std::nothrow_t &) noexcept { std::free(p); }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  Input in{data, size};
  World w;
  mixp_session_options so;
  mixp_session_options_init(&so);
  so.num_threads = 1;
  so.seed = in.u8();
  if (mixp_session_create(&so, &w.s) != MIXP_OK) violation("mixp_session_create", "a cpu session failed");
  // A tensor that outlives its session: destroyed sessions only refuse work.
  mixp_session *gone = nullptr;
  if (mixp_session_create(&so, &gone) != MIXP_OK) violation("mixp_session_create", "a cpu session failed");
  const int64_t shape[1] = {3};
  if (mixp_tensor_ones(gone, MIXP_F32, shape, 1, &w.dead) != MIXP_OK) violation("mixp_tensor_ones", "failed");
  mixp_session_destroy(gone);
  // Start from a few small tensors so that most calls get somewhere.
  const int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, s4[1] = {4};
  mixp_tensor_rand(w.s, MIXP_F32, s23, 2, &w.t[0]);
  mixp_tensor_rand(w.s, MIXP_F32, s32, 2, &w.t[1]);
  mixp_tensor_zeros(w.s, MIXP_I64, s4, 1, &w.t[2]);
  mixp_tensor_rand(w.s, MIXP_BF16, s23, 2, &w.t[3]);
  for (int steps = 0; !in.done() && steps < 64; ++steps) kOps[in.u8() % (sizeof kOps / sizeof kOps[0])](w, in);
  return 0;
}
