/* CPU-vs-CUDA parity of the library-backed ops (cuBLASLt GEMMs: matmul,
 * transposed operands, bmm, linear with its fused bias; cuDNN convolutions:
 * NCHW, NHWC, depthwise), forward and backward through autograd; 50-step MLP
 * training runs (fp32 AdamW, and f16 autocast + GradScaler + clipping) that
 * must produce the same losses step by step; a model's GradScaler step that
 * never waits on the device; out-of-memory as a recoverable error. The
 * element-wise, reduction, norm, pooling and random kernels have their own
 * parity suite (test_cuda_parity_ops.c). Without a CUDA device the suite
 * exits with 77 (CTest: skipped).
 *
 * Tolerances. The two devices sum the K products of every output element in
 * different orders (cuBLASLt/cuDNN tiles vs oneDNN/OpenMP blocks), in fp32
 * for every float type but F64. A fixed atol/rtol cannot bound that: the
 * error of a sum grows with K and with the size of its terms, not of the
 * result (cancellation). So each output element i of a product is checked
 * against
 *   |gpu - cpu| <= 4 sqrt(K) u_acc M_i + atol + rtol |cpu|
 * where M_i = sum_k |a_ik| |b_kj| (the same op run in F64 on |inputs|, and
 * its backward on |r|, which gives the terms of each gradient's sum: the
 * ops are bilinear), u_acc = 2^-24 (2^-53 for F64), sqrt(K) the typical
 * growth of rounding errors that do not all share a sign (the worst case,
 * K, never happens on random data; 4 is the margin), and atol/rtol cover the
 * final rounding to the output type:
 *   F64   atol 1e-300, rtol 2^-51
 *   F32   atol 1e-30,  rtol 2^-22   (one ulp on each side; TF32 off)
 *   F16   atol 2e-3,   rtol 4e-3    (~8 u = 4 ulps, u = 2^-11)
 *   BF16  atol 1.6e-2, rtol 3.2e-2  (~8 u = 4 ulps, u = 2^-8)
 * The training losses: the F32 run uses SGD with momentum, whose update is
 * Lipschitz in the gradient, so the two runs' rounding differences stay at
 * the level of u and rtol 1e-4 per step holds (Adam divides by sqrt(v): a
 * gradient component near zero turns a rounding difference into an update
 * of full size lr, so an fp32 AdamW comparison drifts by chance; the fused
 * AdamW kernel has its own parity test in test_cuda_parity_ops.c). The F16
 * autocast + GradScaler + clipping + AdamW run compares with rtol 2e-2 (the
 * half rounding of activations drifts over 50 steps). */
#include "test_util.h"

static mixp_session *g_cpu, *g_gpu;
static int g_harness_check; /* both sides on the CPU: see main() */

/* Tests of what only a device does (host syncs, deferred errors, device
 * memory) have nothing to check in a harness check. */
static void device_only(void) {
  if (g_harness_check) skip();
}

typedef struct tol {
  double atol, rtol;
} tol;

static tol tol_of(mixp_dtype dt) {
  switch (dt) {
    case MIXP_F64: return (tol){1e-300, 0x1p-51};
    case MIXP_F16: return (tol){2e-3, 4e-3};
    case MIXP_BF16: return (tol){1.6e-2, 3.2e-2};
    default: return (tol){1e-30, 0x1p-22};
  }
}

/* The accumulation's unit roundoff: fp32 for every float type but F64. */
static double acc_roundoff(mixp_dtype dt) { return dt == MIXP_F64 ? 0x1p-53 : 0x1p-24; }

static mixp_session *open_dev(const char *dev) {
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.device = dev;
  o.seed = 1234;
  o.num_threads = 2;
  mixp_session *s = NULL;
  if (mixp_session_create(&o, &s) != MIXP_OK) return NULL;
  return s;
}

/* Compares two tensors (any float/int dtype) elementwise as doubles. With
 * `mag` (the F64 tensor of each element's sum of |terms|), the bound also
 * allows 4 sqrt(k) u_acc mag[i] for the different summation orders. */
static void expect_close(const char *what, const mixp_tensor *c, const mixp_tensor *g, tol t,
                         const mixp_tensor *mag, int64_t k) {
  assert_int_equal(mixp_tensor_dtype(c), mixp_tensor_dtype(g));
  int64_t n = mixp_tensor_numel(c);
  assert_int_equal(n, mixp_tensor_numel(g));
  double *vc = mt_values(c), *vg = mt_values(g), *vm = mag ? mt_values(mag) : NULL;
  if (mag) assert_int_equal(n, mixp_tensor_numel(mag));
  const double sum_tol = mag ? 4.0 * sqrt((double)k) * acc_roundoff(mixp_tensor_dtype(c)) : 0.0;
  for (int64_t i = 0; i < n; ++i) {
    double d = fabs(vc[i] - vg[i]);
    double bound = t.atol + t.rtol * fabs(vc[i]) + (vm ? sum_tol * vm[i] : 0.0);
    if (!(d <= bound) && !(isnan(vc[i]) && isnan(vg[i])) && !(vc[i] == vg[i])) {
      print_error("%s: element %lld: cpu %.9g cuda %.9g, |diff| %.3g > bound %.3g (atol %g rtol %g%s%.3g)\n",
                  what, (long long)i, vc[i], vg[i], d, bound, t.atol, t.rtol,
                  vm ? ", sum of |terms| " : "", vm ? vm[i] : 0.0);
      free(vc);
      free(vg);
      free(vm);
      fail();
    }
  }
  free(vc);
  free(vg);
  free(vm);
}

/* ---- the op harness --------------------------------------------------------- */

enum { MAXIN = 5 };
typedef struct input {
  int ndim;
  int64_t shape[4];
  int kind;  /* 0: float of the tested dtype, 1: i64 labels in [0, hi), 2: f32 always */
  double lo, hi;
  int grad;  /* requires grad */
} input;

typedef mixp_status (*op_fn)(mixp_tensor *const *in, mixp_tensor **out);

static mixp_tensor *make_input(mixp_session *s, const input *in, mixp_dtype dt, uint64_t seed) {
  int64_t n = 1;
  for (int i = 0; i < in->ndim; ++i) n *= in->shape[i];
  double *v = malloc((size_t)(n ? n : 1) * sizeof(double));
  mt_fill(v, n, in->lo, in->hi, seed);
  mixp_dtype want = in->kind == 1 ? MIXP_I64 : in->kind == 2 ? MIXP_F32 : dt;
  if (in->kind == 1)
    for (int64_t i = 0; i < n; ++i) v[i] = floor(v[i]);
  mixp_tensor *t = mt_tensor(s, want, v, in->shape, in->ndim);
  free(v);
  if (in->grad) MT_OK(mixp_tensor_set_requires_grad(t, 1));
  return t;
}

/* The input's stored values, in magnitude, as an F64 cpu tensor that
 * requires grad: the operand of the op's sum-of-|terms| run. */
static mixp_tensor *abs_f64(const mixp_tensor *t) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_tensor_shape(t, shape, MIXP_MAX_DIMS, &nd));
  double *v = mt_values(t);
  for (int64_t i = 0; i < mixp_tensor_numel(t); ++i) v[i] = fabs(v[i]);
  mixp_tensor *a = mt_tensor(g_cpu, MIXP_F64, v, shape, nd);
  free(v);
  MT_OK(mixp_tensor_set_requires_grad(a, 1));
  return a;
}

/* loss = sum(out * r); backward. */
static void backward_against(mixp_tensor *out, mixp_tensor *r) {
  mixp_tensor *p = NULL, *l = NULL;
  MT_OK(mixp_mul(out, r, &p));
  MT_OK(mixp_sum(p, NULL, 0, 0, &l));
  MT_OK(mixp_backward(l, NULL));
  mixp_tensor_release(p);
  mixp_tensor_release(l);
}

/* Runs a bilinear op (a product: matmul, linear, convolution) on both
 * devices; compares the output, then the gradients of every input that
 * requires one under loss = sum(out * r) for a fixed random r. k is the
 * longest sum among the output and the gradients (see the bound at the
 * top); the sums of |terms| come from the op in F64 on |inputs| and its
 * backward against |r|. */
static void check_op(const char *name, op_fn op, const input *ins, int nin, mixp_dtype dt,
                     int64_t k) {
  mixp_tensor *ic[MAXIN], *ig[MAXIN], *im[MAXIN], *oc = NULL, *og = NULL, *om = NULL;
  for (int i = 0; i < nin; ++i) {
    ic[i] = make_input(g_cpu, &ins[i], dt, 100 + (uint64_t)i);
    ig[i] = make_input(g_gpu, &ins[i], dt, 100 + (uint64_t)i);
    im[i] = abs_f64(ic[i]);
  }
  MT_OK(op(ic, &oc));
  MT_OK(op(ig, &og));
  MT_OK(op(im, &om));
  char what[96];
  snprintf(what, sizeof what, "%s %s forward", name, mixp_dtype_name(dt));
  mixp_dtype odt = mixp_tensor_dtype(oc);
  expect_close(what, oc, og, tol_of(odt), om, k);

  int any_grad = 0;
  for (int i = 0; i < nin; ++i) any_grad |= ins[i].grad;
  if (any_grad) {
    int64_t shape[MIXP_MAX_DIMS];
    int nd = 0;
    MT_OK(mixp_tensor_shape(oc, shape, MIXP_MAX_DIMS, &nd));
    input rin = {nd, {0}, 0, -1.0, 1.0, 0};
    for (int d = 0; d < nd && d < 4; ++d) rin.shape[d] = shape[d];
    if (nd > 4) fail();
    mixp_tensor *rc = make_input(g_cpu, &rin, odt, 999), *rg = make_input(g_gpu, &rin, odt, 999);
    mixp_tensor *rm = abs_f64(rc);
    MT_OK(mixp_tensor_set_requires_grad(rm, 0));
    backward_against(oc, rc);
    backward_against(og, rg);
    backward_against(om, rm);
    mixp_tensor_release(rc);
    mixp_tensor_release(rg);
    mixp_tensor_release(rm);
    for (int i = 0; i < nin; ++i) {
      if (!ins[i].grad) continue;
      mixp_tensor *gc = NULL, *gg = NULL, *gm = NULL;
      MT_OK(mixp_tensor_grad(ic[i], &gc));
      MT_OK(mixp_tensor_grad(ig[i], &gg));
      MT_OK(mixp_tensor_grad(im[i], &gm));
      assert_non_null(gc);
      assert_non_null(gg);
      assert_non_null(gm);
      snprintf(what, sizeof what, "%s %s grad of input %d", name, mixp_dtype_name(dt), i);
      expect_close(what, gc, gg, tol_of(mixp_tensor_dtype(gc)), gm, k);
      mixp_tensor_release(gc);
      mixp_tensor_release(gg);
      mixp_tensor_release(gm);
    }
  }
  mixp_tensor_release(oc);
  mixp_tensor_release(og);
  mixp_tensor_release(om);
  for (int i = 0; i < nin; ++i) {
    mixp_tensor_release(ic[i]);
    mixp_tensor_release(ig[i]);
    mixp_tensor_release(im[i]);
  }
}

static const mixp_dtype kFloat[] = {MIXP_F32, MIXP_F16, MIXP_BF16};
#define FOR_DTYPES(dt) for (int di_ = 0; di_ < 3 && ((dt) = kFloat[di_], 1); ++di_)
#define IN2(a, b) {2, {a, b}, 0, -1.0, 1.0, 1}
#define IN3(a, b, c) {3, {a, b, c}, 0, -1.0, 1.0, 1}
#define IN4(a, b, c, d) {4, {a, b, c, d}, 0, -1.0, 1.0, 1}

/* ---- ops ---------------------------------------------------------------------- */

static mixp_status op_matmul(mixp_tensor *const *in, mixp_tensor **out) { return mixp_matmul(in[0], in[1], out); }
static mixp_status op_matmul_bt(mixp_tensor *const *in, mixp_tensor **out) {
  mixp_tensor *bt = NULL;
  mixp_status st = mixp_transpose(in[1], 0, 1, &bt);
  if (st == MIXP_OK) st = mixp_matmul(in[0], bt, out);
  mixp_tensor_release(bt);
  return st;
}
static mixp_status op_bmm(mixp_tensor *const *in, mixp_tensor **out) { return mixp_bmm(in[0], in[1], out); }
static mixp_status op_linear(mixp_tensor *const *in, mixp_tensor **out) { return mixp_linear(in[0], in[1], in[2], out); }
/* The bias is a view one element into a longer vector: its address is not
 * 16-byte aligned, which cuBLASLt's fused bias epilogue cannot read. */
static mixp_status op_linear_offset_bias(mixp_tensor *const *in, mixp_tensor **out) {
  mixp_tensor *b = NULL;
  mixp_status st = mixp_slice(in[2], 0, 1, mixp_tensor_numel(in[2]), 1, &b);
  if (st == MIXP_OK) st = mixp_linear(in[0], in[1], b, out);
  mixp_tensor_release(b);
  return st;
}

static void test_gemm(void **state) {
  (void)state;
  mixp_dtype dt;
  FOR_DTYPES(dt) {
    const input mm[] = {IN2(33, 65), IN2(65, 17)};
    check_op("matmul", op_matmul, mm, 2, dt, 65);
    const input mmt[] = {IN2(40, 24), IN2(16, 24)};
    check_op("matmul(a, b^T)", op_matmul_bt, mmt, 2, dt, 40);
    const input bm[] = {IN3(3, 8, 16), IN3(3, 16, 5)};
    check_op("bmm", op_bmm, bm, 2, dt, 16);
    const input lin[] = {IN2(64, 96), IN2(48, 96), {1, {48}, 0, -1.0, 1.0, 1}};
    check_op("linear+bias", op_linear, lin, 3, dt, 97);
    const input lin_view[] = {IN2(64, 96), IN2(48, 96), {1, {49}, 0, -1.0, 1.0, 1}};
    check_op("linear+bias view at +1 element", op_linear_offset_bias, lin_view, 3, dt, 97);
    const input big[] = {IN2(256, 512), IN2(512, 128)};
    check_op("matmul 256x512x128", op_matmul, big, 2, dt, 512);
  }
}

static mixp_layout g_layout = MIXP_NCHW;
static mixp_status op_conv(mixp_tensor *const *in, mixp_tensor **out) {
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.stride_h = o.stride_w = 2;
  o.pad_h = o.pad_w = 1;
  o.layout = g_layout;
  return mixp_conv2d(in[0], in[1], in[2], &o, out);
}
static mixp_status op_conv_dw(mixp_tensor *const *in, mixp_tensor **out) {
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.pad_h = o.pad_w = 1;
  o.groups = 8;
  return mixp_conv2d(in[0], in[1], NULL, &o, out);
}
static void test_conv2d(void **state) {
  (void)state;
  mixp_dtype dt;
  FOR_DTYPES(dt) {
    const input conv[] = {IN4(2, 8, 15, 13), IN4(16, 8, 3, 3), {1, {16}, 0, -1.0, 1.0, 1}};
    g_layout = MIXP_NCHW;
    check_op("conv2d nchw", op_conv, conv, 3, dt, 2 * 8 * 7);
    const input conv_nhwc[] = {IN4(2, 15, 13, 8), IN4(16, 8, 3, 3), {1, {16}, 0, -1.0, 1.0, 1}};
    g_layout = MIXP_NHWC;
    check_op("conv2d nhwc", op_conv, conv_nhwc, 3, dt, 2 * 8 * 7);
    g_layout = MIXP_NCHW;
    const input dw[] = {IN4(2, 8, 9, 9), IN4(8, 1, 3, 3)};
    check_op("conv2d depthwise", op_conv_dw, dw, 2, dt, 2 * 9 * 9);
  }
}

/* The bound's premise, checked on any machine: one device's F32 product
 * alone stays within half the two-sided bound of the exact (F64) result of
 * the same stored inputs, for the GEMM and the convolution above. */
static void one_side_within_half_bound(const char *name, op_fn op, const input *ins, int nin,
                                       int64_t k) {
  mixp_tensor *i32[MAXIN], *i64[MAXIN], *im[MAXIN], *o32 = NULL, *o64 = NULL, *om = NULL;
  for (int i = 0; i < nin; ++i) {
    i32[i] = make_input(g_cpu, &ins[i], MIXP_F32, 100 + (uint64_t)i);
    double *v = mt_values(i32[i]);
    i64[i] = mt_tensor(g_cpu, MIXP_F64, v, ins[i].shape, ins[i].ndim);
    free(v);
    im[i] = abs_f64(i32[i]);
  }
  MT_OK(op(i32, &o32));
  MT_OK(op(i64, &o64));
  MT_OK(op(im, &om));
  const int64_t n = mixp_tensor_numel(o32);
  double *v32 = mt_values(o32), *v64 = mt_values(o64), *vm = mt_values(om);
  const tol t = tol_of(MIXP_F32);
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double half_bound = 0.5 * (t.atol + t.rtol * fabs(v64[i]) +
                                     4.0 * sqrt((double)k) * acc_roundoff(MIXP_F32) * vm[i]);
    const double r = fabs(v32[i] - v64[i]) / half_bound;
    if (r > worst) worst = r;
  }
  printf("%s: the F32 error uses %.0f%% of half the bound at most\n", name, 100.0 * worst);
  assert_true(worst <= 1.0);
  free(v32);
  free(v64);
  free(vm);
  mixp_tensor_release(o32);
  mixp_tensor_release(o64);
  mixp_tensor_release(om);
  for (int i = 0; i < nin; ++i) {
    mixp_tensor_release(i32[i]);
    mixp_tensor_release(i64[i]);
    mixp_tensor_release(im[i]);
  }
}

static void test_bound_covers_one_device(void **state) {
  (void)state;
  const input big[] = {IN2(256, 512), IN2(512, 128)};
  one_side_within_half_bound("matmul 256x512x128", op_matmul, big, 2, 512);
  const input deep[] = {IN2(16, 4096), IN2(4096, 16)};
  one_side_within_half_bound("matmul 16x4096x16", op_matmul, deep, 2, 4096);
  const input conv[] = {IN4(2, 8, 15, 13), IN4(16, 8, 3, 3), {1, {16}, 0, -1.0, 1.0, 1}};
  g_layout = MIXP_NCHW;
  one_side_within_half_bound("conv2d nchw", op_conv, conv, 3, 8 * 9 + 1);
}

/* ---- training parity and host syncs ------------------------------------------------ */

enum { IN = 784, HID = 64, CLASSES = 10, BATCH = 64, STEPS = 50 };

typedef struct run {
  mixp_session *s;
  mixp_module *l1, *l2;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler;
  mixp_dataset *data;
  mixp_loader *loader;
  mixp_tensor *params[4];
} run;

static void run_init(run *r, mixp_session *s, int amp) {
  memset(r, 0, sizeof *r);
  r->s = s;
  mixp_synthetic_options sy;
  mixp_synthetic_options_init(&sy);
  sy.num_samples = 1024;
  sy.seed = 5;
  MT_OK(mixp_dataset_synthetic(s, &sy, &r->data));
  MT_OK(mixp_linear_create(s, IN, HID, 1, MIXP_F32, &r->l1));
  MT_OK(mixp_linear_create(s, HID, CLASSES, 1, MIXP_F32, &r->l2));
  for (int i = 0; i < 4; ++i) MT_OK(mixp_module_parameter(i < 2 ? r->l1 : r->l2, i % 2, &r->params[i]));
  /* fp32: SGD with momentum (see the top of the file for why not AdamW). */
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, amp ? MIXP_OPTIM_ADAMW : MIXP_OPTIM_SGD);
  if (amp) {
    oo.lr = 2e-3;
  } else {
    oo.lr = 0.05;
    oo.momentum = 0.9;
    oo.weight_decay = 1e-4;
  }
  MT_OK(mixp_optimizer_create(s, r->params, 4, &oo, &r->opt));
  if (amp) {
    mixp_grad_scaler_options go;
    mixp_grad_scaler_options_init(&go);
    go.init_scale = 1024.0;
    go.growth_interval = 10; /* exercise growth within the run */
    MT_OK(mixp_grad_scaler_create(s, &go, &r->scaler));
  }
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = BATCH;
  lo.seed = 9;
  lo.mean = 0.5;
  lo.std = 0.5;
  MT_OK(mixp_loader_create(r->data, &lo, &r->loader));
}

static void run_free(run *r) {
  for (int i = 0; i < 4; ++i) mixp_tensor_release(r->params[i]);
  mixp_loader_destroy(r->loader);
  mixp_dataset_destroy(r->data);
  mixp_grad_scaler_destroy(r->scaler);
  mixp_optimizer_destroy(r->opt);
  mixp_module_destroy(r->l1);
  mixp_module_destroy(r->l2);
}

/* Gives the cuda run the cpu run's initial weights (the initialisers draw
 * from the same Philox stream, but a copy makes the test independent of
 * transcendental rounding in the normal sampler). */
static void copy_params(run *dst, const run *src) {
  MT_OK(mixp_no_grad_begin(dst->s));
  for (int i = 0; i < 4; ++i) {
    double *v = mt_values(src->params[i]);
    int64_t shape[MIXP_MAX_DIMS];
    int nd = 0;
    MT_OK(mixp_tensor_shape(src->params[i], shape, MIXP_MAX_DIMS, &nd));
    mixp_tensor *t = mt_tensor(dst->s, MIXP_F32, v, shape, nd);
    MT_OK(mixp_tensor_copy_(dst->params[i], t));
    mixp_tensor_release(t);
    free(v);
  }
  MT_OK(mixp_no_grad_end(dst->s));
}

/* The GradScaler half of an AMP step after zero_grad: scale, backward,
 * unscale, clip to norm 1, step, update. */
static void scaler_step(mixp_optimizer *opt, mixp_grad_scaler *scaler, const mixp_tensor *loss) {
  mixp_tensor *scaled = NULL, *norm = NULL;
  MT_OK(mixp_grad_scaler_scale(scaler, loss, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  MT_OK(mixp_grad_scaler_unscale(scaler, opt));
  MT_OK(mixp_clip_grad_norm(opt, 1.0, &norm));
  MT_OK(mixp_grad_scaler_step(scaler, opt));
  MT_OK(mixp_grad_scaler_update(scaler));
  mixp_tensor_release(scaled);
  mixp_tensor_release(norm);
}

/* One step; *loss_out (if not NULL) receives the loss tensor. With
 * `amp`, f16 autocast + GradScaler + clipping. */
static void step(run *r, int amp, mixp_tensor **loss_out) {
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = mixp_loader_next(r->loader, &x, &y);
  if (st == MIXP_DONE) st = mixp_loader_next(r->loader, &x, &y); /* next epoch */
  MT_OK(st);
  const int64_t flat[2] = {-1, IN};
  mixp_tensor *f = NULL, *h = NULL, *a = NULL, *logits = NULL, *loss = NULL;
  if (amp) {
    mixp_autocast_options ao;
    mixp_autocast_options_init(&ao);
    ao.dtype = MIXP_F16;
    MT_OK(mixp_autocast_push(r->s, &ao));
  }
  MT_OK(mixp_reshape(x, flat, 2, &f));
  MT_OK(mixp_module_forward(r->l1, f, &h));
  MT_OK(mixp_relu(h, &a));
  MT_OK(mixp_module_forward(r->l2, a, &logits));
  MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
  if (amp) MT_OK(mixp_autocast_pop(r->s));
  MT_OK(mixp_optimizer_zero_grad(r->opt));
  if (amp) {
    scaler_step(r->opt, r->scaler, loss);
  } else {
    MT_OK(mixp_backward(loss, NULL));
    MT_OK(mixp_optimizer_step(r->opt));
  }
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_tensor_release(f);
  mixp_tensor_release(h);
  mixp_tensor_release(a);
  mixp_tensor_release(logits);
  if (loss_out) *loss_out = loss;
  else mixp_tensor_release(loss);
}

static void train_parity(int amp) {
  run c, g;
  run_init(&c, g_cpu, amp);
  run_init(&g, g_gpu, amp);
  copy_params(&g, &c);
  const double rtol = amp ? 2e-2 : 1e-4;
  for (int i = 0; i < STEPS; ++i) {
    mixp_tensor *lc = NULL, *lg = NULL;
    step(&c, amp, &lc);
    step(&g, amp, &lg);
    double vc = 0, vg = 0;
    MT_OK(mixp_tensor_item(lc, &vc));
    MT_OK(mixp_tensor_item(lg, &vg));
    if (!(fabs(vc - vg) <= 1e-6 + rtol * fabs(vc))) {
      print_error("step %d: cpu loss %.9g, cuda loss %.9g (rtol %g)\n", i, vc, vg, rtol);
      fail();
    }
    mixp_tensor_release(lc);
    mixp_tensor_release(lg);
  }
  if (amp) {
    double sc = 0, sg = 0;
    MT_OK(mixp_grad_scaler_get_scale(c.scaler, &sc));
    MT_OK(mixp_grad_scaler_get_scale(g.scaler, &sg));
    assert_true(sc == sg); /* same overflow/growth decisions */
  }
  run_free(&c);
  run_free(&g);
}

static void test_train_fp32(void **state) {
  (void)state;
  train_parity(0);
}

static void test_train_f16_grad_scaler(void **state) {
  (void)state;
  train_parity(1);
}

/* A whole training step -- forward with cross_entropy, scale -> backward ->
 * unscale -> clip -> step -> update -- never waits for the GPU: the targets
 * are validated and counted on the device, the found-inf flag, the scale
 * and the clip coefficient stay there. (The window opens after the loader
 * has uploaded the batch.) */
static void test_grad_scaler_step_is_sync_free(void **state) {
  (void)state;
  device_only();
  run g;
  run_init(&g, g_gpu, 1);
  for (int i = 0; i < 3; ++i) step(&g, 1, NULL); /* warm-up: plans, pools */
  for (int i = 0; i < 5; ++i) {
    mixp_tensor *x = NULL, *y = NULL, *f = NULL, *h = NULL, *a = NULL, *logits = NULL,
                *loss = NULL;
    mixp_status st = mixp_loader_next(g.loader, &x, &y);
    if (st == MIXP_DONE) st = mixp_loader_next(g.loader, &x, &y);
    MT_OK(st);
    uint64_t before = 0, after = 0;
    MT_OK(mixp_session_host_syncs(g.s, &before));
    const int64_t flat[2] = {-1, IN};
    mixp_autocast_options ao;
    mixp_autocast_options_init(&ao);
    ao.dtype = MIXP_F16;
    MT_OK(mixp_autocast_push(g.s, &ao));
    MT_OK(mixp_reshape(x, flat, 2, &f));
    MT_OK(mixp_module_forward(g.l1, f, &h));
    MT_OK(mixp_relu(h, &a));
    MT_OK(mixp_module_forward(g.l2, a, &logits));
    MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
    MT_OK(mixp_autocast_pop(g.s));
    MT_OK(mixp_optimizer_zero_grad(g.opt));
    scaler_step(g.opt, g.scaler, loss);
    MT_OK(mixp_session_host_syncs(g.s, &after));
    if (after != before) {
      print_error("step %d: %llu host syncs during forward/scale/backward/unscale/clip/step/update\n", i,
                  (unsigned long long)(after - before));
      fail();
    }
    /* Asking for a value is a sync, and is counted. */
    double v = 0;
    MT_OK(mixp_tensor_item(loss, &v));
    MT_OK(mixp_session_host_syncs(g.s, &after));
    assert_true(after > before);
    mixp_tensor *ts[] = {x, y, f, h, a, logits, loss};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; ++k) mixp_tensor_release(ts[k]);
  }
  run_free(&g);
}

/* After warm-up (step >= 2: the first steps may wait for a staging slot or
 * build plans), a training step must not have waited for the device. */
static void expect_no_wait(mixp_session *s, uint64_t before, int step, const char *model) {
  uint64_t after = 0;
  MT_OK(mixp_session_host_syncs(s, &after));
  if (step >= 2 && after != before) {
    print_error("step %d: %llu host syncs in %s training step\n", step,
                (unsigned long long)(after - before), model);
    fail();
  }
}

/* The same for a model whose forward starts with an embedding: its indices
 * are validated on the device too, and max's backward scatters there. */
static void test_embedding_step_is_sync_free(void **state) {
  (void)state;
  enum { V = 50, D = 16, B = 8, T = 4, K = 10 };
  mixp_session *s = g_gpu;
  mixp_module *emb = NULL, *lin = NULL;
  MT_OK(mixp_embedding_create(s, V, D, -1, MIXP_F32, &emb));
  MT_OK(mixp_linear_create(s, D, K, 1, MIXP_F32, &lin));
  mixp_tensor *params[3];
  MT_OK(mixp_module_parameter(emb, 0, &params[0]));
  MT_OK(mixp_module_parameter(lin, 0, &params[1]));
  MT_OK(mixp_module_parameter(lin, 1, &params[2]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, params, 3, &oo, &opt));
  mixp_grad_scaler_options go;
  mixp_grad_scaler_options_init(&go);
  mixp_grad_scaler *scaler = NULL;
  MT_OK(mixp_grad_scaler_create(s, &go, &scaler));
  for (int it = 0; it < 6; ++it) {
    int64_t tok[B * T], tgt[B];
    for (int i = 0; i < B * T; ++i) tok[i] = (i * 7 + it * 3) % V;
    for (int i = 0; i < B; ++i) tgt[i] = (i + it) % K;
    const int64_t tshape[2] = {B, T}, yshape[1] = {B};
    mixp_tensor *x = NULL, *y = NULL, *e = NULL, *pooled = NULL, *logits = NULL, *loss = NULL;
    MT_OK(mixp_tensor_from_host(s, tok, sizeof tok, MIXP_I64, tshape, 2, &x));
    MT_OK(mixp_tensor_from_host(s, tgt, sizeof tgt, MIXP_I64, yshape, 1, &y));
    uint64_t before = 0;
    MT_OK(mixp_session_host_syncs(s, &before));
    mixp_autocast_options ao;
    mixp_autocast_options_init(&ao);
    ao.dtype = MIXP_F16;
    MT_OK(mixp_autocast_push(s, &ao));
    MT_OK(mixp_module_forward(emb, x, &e));
    MT_OK(mixp_max(e, 1, 0, &pooled, NULL)); /* max-pool over the tokens */
    MT_OK(mixp_module_forward(lin, pooled, &logits));
    MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
    MT_OK(mixp_autocast_pop(s));
    MT_OK(mixp_optimizer_zero_grad(opt));
    scaler_step(opt, scaler, loss);
    expect_no_wait(s, before, it, "an embedding model's");
    double v = 0;
    MT_OK(mixp_tensor_item(loss, &v));
    assert_false(isnan(v));
    mixp_tensor *ts[] = {x, y, e, pooled, logits, loss};
    for (size_t k = 0; k < sizeof ts / sizeof *ts; ++k) mixp_tensor_release(ts[k]);
  }
  for (int i = 0; i < 3; ++i) mixp_tensor_release(params[i]);
  mixp_grad_scaler_destroy(scaler);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(emb);
  mixp_module_destroy(lin);
}

/* A zoo model with every parameter under one optimizer and a GradScaler. */
enum { RIG_MAXP = 128 };
typedef struct zoo_rig {
  mixp_session *s;
  mixp_module *m;
  mixp_tensor *params[RIG_MAXP];
  int np;
  mixp_optimizer *opt;
  mixp_grad_scaler *scaler;
} zoo_rig;

static zoo_rig zoo_rig_make(mixp_session *s, const char *config, const mixp_optimizer_options *oo) {
  zoo_rig r = {s, NULL, {NULL}, 0, NULL, NULL};
  MT_OK(mixp_model_create(s, config, &r.m));
  r.np = mixp_module_num_parameters(r.m);
  assert_true(r.np > 0 && r.np <= RIG_MAXP);
  for (int i = 0; i < r.np; ++i) MT_OK(mixp_module_parameter(r.m, i, &r.params[i]));
  MT_OK(mixp_optimizer_create(s, r.params, r.np, oo, &r.opt));
  mixp_grad_scaler_options go;
  mixp_grad_scaler_options_init(&go);
  MT_OK(mixp_grad_scaler_create(s, &go, &r.scaler));
  return r;
}

static void zoo_rig_free(zoo_rig *r) {
  for (int i = 0; i < r->np; ++i) mixp_tensor_release(r->params[i]);
  mixp_grad_scaler_destroy(r->scaler);
  mixp_optimizer_destroy(r->opt);
  mixp_module_destroy(r->m);
}

/* One training step of r under `dt` autocast: forward, cross-entropy (of
 * the logits reshaped to `flat` when given), the GradScaler's step; it must
 * not wait for the device after warm-up (expect_no_wait). x and y are the
 * caller's. */
static void zoo_rig_step(zoo_rig *r, mixp_tensor *x, mixp_tensor *y, mixp_dtype dt, const int64_t *flat, int it,
                         const char *what) {
  mixp_tensor *logits = NULL, *l2 = NULL, *loss = NULL;
  uint64_t before = 0;
  MT_OK(mixp_session_host_syncs(r->s, &before));
  mixp_autocast_options ao;
  mixp_autocast_options_init(&ao);
  ao.dtype = dt;
  MT_OK(mixp_autocast_push(r->s, &ao));
  MT_OK(mixp_module_forward(r->m, x, &logits));
  if (flat) MT_OK(mixp_reshape(logits, flat, 2, &l2));
  MT_OK(mixp_cross_entropy(flat ? l2 : logits, y, MIXP_REDUCTION_MEAN, -100, &loss));
  MT_OK(mixp_autocast_pop(r->s));
  MT_OK(mixp_optimizer_zero_grad(r->opt));
  scaler_step(r->opt, r->scaler, loss);
  expect_no_wait(r->s, before, it, what);
  double v = 0;
  MT_OK(mixp_tensor_item(loss, &v));
  assert_true(isfinite(v));
  mixp_tensor_release(logits);
  mixp_tensor_release(l2);
  mixp_tensor_release(loss);
}

/* The same for a transformer: causal self-attention (its mask is built on
 * the device), layer norm, GELU, dropout, a tied embedding; bf16 autocast. */
static void test_gpt_step_is_sync_free(void **state) {
  (void)state;
  enum { V = 50, B = 4, T = 16 };
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  zoo_rig r = zoo_rig_make(g_gpu, "gpt n_layer=2 n_head=2 n_embd=32 vocab=50 block_size=16 dropout=0.1", &oo);
  for (int it = 0; it < 6; ++it) {
    int64_t tok[B * T], tgt[B * T];
    for (int i = 0; i < B * T; ++i) {
      tok[i] = (i * 7 + it * 3) % V;
      tgt[i] = (i * 11 + it) % V;
    }
    const int64_t tshape[2] = {B, T}, yshape[1] = {B * T}, flat[2] = {B * T, V};
    mixp_tensor *x = NULL, *y = NULL;
    MT_OK(mixp_tensor_from_host(r.s, tok, sizeof tok, MIXP_I64, tshape, 2, &x));
    MT_OK(mixp_tensor_from_host(r.s, tgt, sizeof tgt, MIXP_I64, yshape, 1, &y));
    zoo_rig_step(&r, x, y, MIXP_BF16, flat, it, "a GPT");
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  zoo_rig_free(&r);
}

/* The same for a conv net with batch norm in training mode (running
 * statistics and num_batches_tracked advance on the device), in both
 * layouts; f16 autocast with a GradScaler, as ResNet-50 O1 runs. A host
 * read per batch-norm layer once cost 53 waits a ResNet-50 step. */
static void resnet_step_is_sync_free(const char *config) {
  enum { B = 4, C = 3, H = 32, W = 32, K = 10 };
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  oo.momentum = 0.9;
  zoo_rig r = zoo_rig_make(g_gpu, config, &oo);
  static float img[B * C * H * W];
  for (int it = 0; it < 5; ++it) {
    for (int i = 0; i < B * C * H * W; ++i) img[i] = (float)((i * 13 + it * 7) % 17) / 17.0f - 0.5f;
    int64_t tgt[B];
    for (int i = 0; i < B; ++i) tgt[i] = (i * 3 + it) % K;
    const int64_t xshape[4] = {B, C, H, W}, yshape[1] = {B};
    mixp_tensor *x = NULL, *y = NULL;
    MT_OK(mixp_tensor_from_host(r.s, img, sizeof img, MIXP_F32, xshape, 4, &x));
    MT_OK(mixp_tensor_from_host(r.s, tgt, sizeof tgt, MIXP_I64, yshape, 1, &y));
    zoo_rig_step(&r, x, y, MIXP_F16, NULL, it, config);
    mixp_tensor_release(x);
    mixp_tensor_release(y);
  }
  /* Five training forwards, counted on the device. */
  int counted = 0;
  for (int i = 0; i < mixp_module_num_buffers(r.m); ++i) {
    const char *name = mixp_module_buffer_name(r.m, i);
    const size_t len = strlen(name), tail = strlen("num_batches_tracked");
    if (len < tail || strcmp(name + len - tail, "num_batches_tracked")) continue;
    mixp_tensor *count = NULL;
    MT_OK(mixp_module_buffer(r.m, i, &count));
    int64_t n = -1;
    MT_OK(mixp_tensor_to_host(count, &n, sizeof n));
    assert_int_equal(n, 5);
    mixp_tensor_release(count);
    ++counted;
  }
  assert_true(counted > 0);
  zoo_rig_free(&r);
}

static void test_resnet_step_is_sync_free(void **state) {
  (void)state;
  resnet_step_is_sync_free("resnet18 classes=10 width=8 channels_last=0");
  resnet_step_is_sync_free("resnet18 classes=10 width=8 channels_last=1");
}

/* Deferred validation: a bad target or index does not fail its op on the
 * device (that would need a sync); the next call that waits for the device
 * fails with MIXP_ERR_INVALID_ARGUMENT naming the first bad (op, position,
 * value) in stream order, writes nothing, and the session goes on. The
 * offending kernels read nothing out of bounds: a NaN loss, zero rows. */
static void test_deferred_index_error(void **state) {
  (void)state;
  device_only();
  mixp_session *s = g_gpu;
  const int64_t lshape[2] = {16, 10}, tshape[1] = {16}, wshape[2] = {6, 3}, ishape[1] = {4};
  float logits_h[160], w_h[18];
  for (int i = 0; i < 160; ++i) logits_h[i] = (float)((i * 37) % 11) / 11.0f;
  for (int i = 0; i < 18; ++i) w_h[i] = (float)i;
  int64_t tgt[16];
  for (int i = 0; i < 16; ++i) tgt[i] = i % 10;
  tgt[12] = 57;
  tgt[14] = -3; /* a later bad one: the first is reported */
  const int64_t idx[4] = {0, 5, 9, 1};
  mixp_tensor *logits = NULL, *t = NULL, *w = NULL, *ix = NULL, *loss = NULL, *rows = NULL;
  MT_OK(mixp_tensor_from_host(s, logits_h, sizeof logits_h, MIXP_F32, lshape, 2, &logits));
  MT_OK(mixp_tensor_from_host(s, tgt, sizeof tgt, MIXP_I64, tshape, 1, &t));
  MT_OK(mixp_tensor_from_host(s, w_h, sizeof w_h, MIXP_F32, wshape, 2, &w));
  MT_OK(mixp_tensor_from_host(s, idx, sizeof idx, MIXP_I64, ishape, 1, &ix));
  int64_t settle[16];
  MT_OK(mixp_tensor_to_host(t, settle, sizeof settle)); /* the uploads are done */
  double v = 0;
  uint64_t before = 0, after = 0;
  MT_OK(mixp_session_host_syncs(s, &before));
  MT_OK(mixp_cross_entropy(logits, t, MIXP_REDUCTION_MEAN, -100, &loss));
  MT_OK(mixp_embedding(w, ix, -1, &rows));
  MT_OK(mixp_session_host_syncs(s, &after));
  assert_true(after == before); /* neither op waited */
  v = 42.0;
  MT_FAILS(mixp_tensor_item(loss, &v), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_cross_entropy: target[12] = 57 is out of range [0, 10)");
  assert_non_null(strstr(mixp_last_error(), "(detected on the device)"));
  assert_true(v == 42.0); /* nothing written */
  /* Reported once: the embedding's bad index was queued after the first
   * error in stream order, so it is not reported. */
  MT_OK(mixp_tensor_item(loss, &v));
  assert_true(isnan(v));
  float out_h[12];
  MT_OK(mixp_tensor_to_host(rows, out_h, sizeof out_h));
  for (int j = 0; j < 3; ++j) {
    assert_true(out_h[3 + j] == w_h[15 + j]); /* row 5 */
    assert_true(out_h[6 + j] == 0.0f);        /* index 9: a zero row */
  }
  /* Alone, the embedding's error is the one reported. */
  mixp_tensor_release(rows);
  rows = NULL;
  MT_OK(mixp_embedding(w, ix, -1, &rows));
  MT_FAILS(mixp_tensor_to_host(rows, out_h, sizeof out_h), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_embedding: indices[2] = 9 is out of range [0, 6)");
  MT_OK(mixp_tensor_to_host(rows, out_h, sizeof out_h));
  mixp_tensor *ts[] = {logits, t, w, ix, loss, rows};
  for (size_t k = 0; k < sizeof ts / sizeof *ts; ++k) mixp_tensor_release(ts[k]);
}

/* Sizes past 2^31 (int32) on the device: a GEMM whose K is 2^31 + 64 (only
 * the last 64 products are 1, so the exact sum is 64 and a K cut to 32 bits
 * shows), and a convolution whose batch holds 2^31 + 2^16 elements (cuDNN's
 * int descriptors: it runs in pieces; the last image, in the last piece, is
 * compared with the CPU). About 8 GiB of device memory each. */
static void test_sizes_past_int32(void **state) {
  (void)state;
  device_only();
  const int64_t k = (INT64_C(1) << 31) + 64;
  const int64_t xs[2] = {1, k}, ws[2] = {k, 1}, ones_shape[2] = {1, 64};
  mixp_tensor *x = NULL, *w = NULL, *tail = NULL, *ones = NULL, *y = NULL;
  MT_OK(mixp_tensor_zeros(g_gpu, MIXP_BF16, xs, 2, &x));
  MT_OK(mixp_tensor_full(g_gpu, MIXP_BF16, ws, 2, 1.0, &w));
  MT_OK(mixp_slice(x, 1, k - 64, k, 1, &tail));
  MT_OK(mixp_tensor_full(g_gpu, MIXP_BF16, ones_shape, 2, 1.0, &ones));
  MT_OK(mixp_tensor_copy_(tail, ones));
  MT_OK(mixp_matmul(x, w, &y));
  double v = 0;
  MT_OK(mixp_tensor_item(y, &v));
  assert_true(v == 64.0);
  mixp_tensor *ts[] = {x, w, tail, ones, y};
  for (size_t i = 0; i < sizeof ts / sizeof *ts; ++i) mixp_tensor_release(ts[i]);

  enum { H = 256, W = 256 };
  const int64_t n = (INT64_C(1) << 31) / (H * W) + 1; /* 2^31 + 2^16 elements */
  const int64_t bx[4] = {n, 1, H, W}, kw[4] = {1, 1, 3, 3};
  mixp_tensor *big = NULL, *filt = NULL, *out = NULL, *last = NULL, *cx = NULL, *cw = NULL,
              *cy = NULL;
  MT_OK(mixp_tensor_rand(g_gpu, MIXP_F16, bx, 4, &big));
  MT_OK(mixp_tensor_rand(g_gpu, MIXP_F16, kw, 4, &filt));
  mixp_conv2d_options o;
  mixp_conv2d_options_init(&o);
  o.pad_h = o.pad_w = 1;
  MT_OK(mixp_conv2d(big, filt, NULL, &o, &out));
  /* The last image and its output, on the CPU. */
  MT_OK(mixp_slice(big, 0, n - 1, n, 1, &last));
  double *lv = mt_values(last), *fv = mt_values(filt);
  const int64_t one[4] = {1, 1, H, W};
  cx = mt_tensor(g_cpu, MIXP_F16, lv, one, 4);
  cw = mt_tensor(g_cpu, MIXP_F16, fv, kw, 4);
  MT_OK(mixp_conv2d(cx, cw, NULL, &o, &cy));
  mixp_tensor *gy_last = NULL;
  MT_OK(mixp_slice(out, 0, n - 1, n, 1, &gy_last));
  double *want = mt_values(cy), *got = mt_values(gy_last);
  for (int64_t i = 0; i < H * W; ++i)
    if (!(fabs(want[i] - got[i]) <= 4e-3 + 4e-3 * fabs(want[i]))) {
      print_error("conv2d past 2^31 elements: last image element %lld: cpu %g cuda %g\n",
                  (long long)i, want[i], got[i]);
      fail();
    }
  free(lv);
  free(fv);
  free(want);
  free(got);
  mixp_tensor *cs[] = {big, filt, out, last, cx, cw, cy, gy_last};
  for (size_t i = 0; i < sizeof cs / sizeof *cs; ++i) mixp_tensor_release(cs[i]);
}

/* A host->device upload of 64 MiB goes through the pinned staging ring in
 * pieces: the data arrives whole, and the host buffer may be overwritten as
 * soon as the call returns. */
static void test_large_upload_is_staged(void **state) {
  (void)state;
  device_only();
  const int64_t n = INT64_C(16) << 20; /* 16 Mi floats */
  float *h = malloc((size_t)n * sizeof(float));
  assert_non_null(h);
  for (int64_t i = 0; i < n; ++i) h[i] = (float)(i % 1000003);
  mixp_tensor *t = NULL;
  const int64_t shape[1] = {n};
  MT_OK(mixp_tensor_from_host(g_gpu, h, (size_t)n * sizeof(float), MIXP_F32, shape, 1, &t));
  for (int64_t i = 0; i < n; ++i) h[i] = -1.0f; /* the source is free again */
  MT_OK(mixp_tensor_to_host(t, h, (size_t)n * sizeof(float)));
  for (int64_t i = 0; i < n; ++i)
    if (h[i] != (float)(i % 1000003)) {
      print_error("element %lld: got %g\n", (long long)i, (double)h[i]);
      fail();
    }
  free(h);
  mixp_tensor_release(t);
}

/* Out of memory is an error the session survives. */
static void test_out_of_memory_is_recoverable(void **state) {
  (void)state;
  device_only();
  int64_t huge[2] = {1 << 20, 1 << 20}; /* 4 TiB of f32 */
  mixp_tensor *t = NULL;
  MT_FAILS(mixp_tensor_zeros(g_gpu, MIXP_F32, huge, 2, &t), MIXP_ERR_OUT_OF_MEMORY, "out of memory");
  assert_null(t);
  int64_t small[1] = {1000};
  MT_OK(mixp_tensor_ones(g_gpu, MIXP_F32, small, 1, &t));
  mixp_tensor *s = NULL;
  MT_OK(mixp_sum(t, NULL, 0, 0, &s));
  double v = 0;
  MT_OK(mixp_tensor_item(s, &v));
  assert_true(v == 1000.0);
  mixp_tensor_release(s);
  mixp_tensor_release(t);
  /* The pool's statistics follow the allocations. */
  mixp_memory_stats m;
  memset(&m, 0, sizeof m);
  m.struct_size = sizeof m;
  MT_OK(mixp_memory_stats_get(g_gpu, &m));
  assert_true(m.peak_bytes >= m.current_bytes);
  assert_true(m.peak_bytes >= 4000);
}

static void test_borrow_host_refused(void **state) {
  (void)state;
  device_only();
  float buf[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  mixp_tensor *t = NULL;
  MT_FAILS(mixp_tensor_borrow_host(g_gpu, buf, sizeof buf, MIXP_F32, shape, 1, NULL, NULL, &t),
           MIXP_ERR_DEVICE, "host memory can only be borrowed by a cpu session");
  assert_null(t);
}

int main(void) {
  /* MIXP_PARITY_HARNESS_CHECK=1 runs the "GPU" side on a second CPU session:
   * a check of this file's own logic (shapes, calls, comparisons) on
   * machines without a GPU, so a GPU run is not spent finding test bugs. */
  const char *harness = getenv("MIXP_PARITY_HARNESS_CHECK");
  g_harness_check = harness && strcmp(harness, "1") == 0;
  if (g_harness_check) printf("harness check: both sides run on the CPU\n");
  g_gpu = open_dev(g_harness_check ? "cpu" : "cuda");
  if (!g_gpu) {
    /* Only a missing device (no plugin, driver or GPU) is a skip. */
    printf("SKIPPED: no CUDA session: %s\n", mixp_last_error());
    return mixp_last_status() == MIXP_ERR_DEVICE ? 77 : 1;
  }
  g_cpu = open_dev("cpu");
  if (!g_cpu) return 1;
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_gemm),
      cmocka_unit_test(test_conv2d),
      cmocka_unit_test(test_bound_covers_one_device),
      cmocka_unit_test(test_train_fp32),
      cmocka_unit_test(test_train_f16_grad_scaler),
      cmocka_unit_test(test_grad_scaler_step_is_sync_free),
      cmocka_unit_test(test_embedding_step_is_sync_free),
      cmocka_unit_test(test_gpt_step_is_sync_free),
      cmocka_unit_test(test_resnet_step_is_sync_free),
      cmocka_unit_test(test_deferred_index_error),
      cmocka_unit_test(test_out_of_memory_is_recoverable),
      cmocka_unit_test(test_sizes_past_int32),
      cmocka_unit_test(test_large_upload_is_staged),
      cmocka_unit_test(test_borrow_host_refused),
  };
  int rc = cmocka_run_group_tests(tests, NULL, NULL);
  mixp_session_destroy(g_cpu);
  mixp_session_destroy(g_gpu);
  return rc;
}
