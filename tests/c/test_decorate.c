/* O2 decorate: parameter dtypes after decoration, fp32 masters that keep the
 * updates a half parameter cannot hold, master_grad's F32 gradients, a
 * decorated model training under a scaler, and every misuse (each failing
 * call must change nothing). */
#include "test_util.h"

static mixp_module *linear(mixp_session *s, int64_t in, int64_t out, int bias, mixp_dtype dt) {
  mixp_module *m = NULL;
  MT_OK(mixp_linear_create(s, in, out, bias, dt, &m));
  return m;
}

static mixp_optimizer *optimizer_over(mixp_module *m, mixp_optimizer_kind kind, double lr) {
  const int n = mixp_module_num_parameters(m);
  mixp_tensor *params[8];
  for (int i = 0; i < n; ++i) MT_OK(mixp_module_parameter(m, i, &params[i]));
  mixp_optimizer_options o;
  mixp_optimizer_options_init(&o, kind);
  o.lr = lr;
  o.weight_decay = 0.0;
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(mixp_tensor_session(params[0]), params, n, &o, &opt));
  for (int i = 0; i < n; ++i) mixp_tensor_release(params[i]);
  return opt;
}

static mixp_tensor *param_at(const mixp_module *m, int i) {
  mixp_tensor *p = NULL;
  MT_OK(mixp_module_parameter(m, i, &p));
  return p;
}

static mixp_dtype dtype_at(const mixp_module *m, int i) {
  mixp_tensor *p = param_at(m, i);
  mixp_dtype d = mixp_tensor_dtype(p);
  mixp_tensor_release(p);
  return d;
}

/* Accumulates g (given in p's dtype) into p.grad: backward of sum(p * g). */
static void add_grad(mixp_tensor *p, double g) {
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_tensor_shape(p, shape, MIXP_MAX_DIMS, &nd));
  mixp_tensor *gt = NULL, *prod = NULL, *loss = NULL;
  MT_OK(mixp_tensor_full(mixp_tensor_session(p), mixp_tensor_dtype(p), shape, nd, g, &gt));
  MT_OK(mixp_mul(p, gt, &prod));
  MT_OK(mixp_sum(prod, NULL, 0, 0, &loss));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor_release(loss);
  mixp_tensor_release(prod);
  mixp_tensor_release(gt);
}

/* Sets a parameter's values to v everywhere (outside autograd). */
static void fill_param(mixp_tensor *p, double v) {
  mixp_session *s = mixp_tensor_session(p);
  int64_t shape[MIXP_MAX_DIMS];
  int nd = 0;
  MT_OK(mixp_tensor_shape(p, shape, MIXP_MAX_DIMS, &nd));
  mixp_tensor *src = NULL;
  MT_OK(mixp_tensor_full(s, mixp_tensor_dtype(p), shape, nd, v, &src));
  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_tensor_copy_(p, src));
  MT_OK(mixp_no_grad_end(s));
  mixp_tensor_release(src);
}

static void test_dtypes_after_decorate(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const mixp_dtype dts[2] = {MIXP_F16, MIXP_BF16};
  for (int k = 0; k < 2; ++k) {
    mixp_module *m = linear(s, 5, 3, 1, MIXP_F32);
    mixp_optimizer *opt = optimizer_over(m, MIXP_OPTIM_ADAMW, 1e-3);
    mixp_tensor *old[2] = {param_at(m, 0), param_at(m, 1)};
    mixp_decorate_options o;
    mixp_decorate_options_init(&o);
    o.dtype = dts[k];
    MT_OK(mixp_amp_decorate(m, opt, &o));
    for (int i = 0; i < 2; ++i) {
      mixp_tensor *p = param_at(m, i);
      assert_int_equal(mixp_tensor_dtype(p), dts[k]);
      assert_int_equal(mixp_tensor_is_leaf(p), 1);
      assert_int_equal(mixp_tensor_requires_grad(p), 1);
      assert_ptr_not_equal(p, old[i]);
      /* The old handle still holds the fp32 values; the new one their rounding. */
      assert_int_equal(mixp_tensor_dtype(old[i]), MIXP_F32);
      mixp_tensor *rounded = NULL;
      MT_OK(mixp_cast(old[i], dts[k], &rounded));
      const int64_t n = mixp_tensor_numel(p);
      double *a = mt_values(p), *b = mt_values(rounded);
      mt_assert_close(a, b, n, 0.0, 0.0);
      free(a);
      free(b);
      mixp_tensor_release(rounded);
      mixp_tensor_release(p);
      mixp_tensor_release(old[i]);
    }
    assert_string_equal(mixp_module_parameter_name(m, 0), "weight");
    mixp_optimizer_destroy(opt);
    mixp_module_destroy(m);
  }
  /* Without an optimizer only the model is cast; F64 parameters stay. */
  mixp_module *m = linear(s, 2, 2, 0, MIXP_F32);
  MT_OK(mixp_amp_decorate(m, NULL, NULL));
  assert_int_equal(dtype_at(m, 0), MIXP_F16);
  mixp_module_destroy(m);
  m = linear(s, 2, 2, 1, MIXP_F64);
  MT_OK(mixp_amp_decorate(m, NULL, NULL));
  assert_int_equal(dtype_at(m, 0), MIXP_F64);
  assert_int_equal(dtype_at(m, 1), MIXP_F64);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* w = 1, g = 1 for 10 SGD steps with lr below half an ulp just under 1
 * (fp16: 1e-4 < 2^-12, bf16: 1e-3 < 2^-9), so a pure-half parameter never
 * moves, while the fp32 master accumulates 1 - 10 lr and the parameter shows
 * its rounding. */
static double small_lr(mixp_dtype dt) { return dt == MIXP_F16 ? 1e-4 : 1e-3; }

static void run_small_updates(int master_weights, mixp_dtype dt, double *final_value) {
  mixp_session *s = mt_session();
  mixp_module *m = linear(s, 1, 4, 0, MIXP_F32);
  mixp_tensor *w = param_at(m, 0);
  fill_param(w, 1.0);
  mixp_tensor_release(w);
  mixp_optimizer *opt = optimizer_over(m, MIXP_OPTIM_SGD, small_lr(dt));
  mixp_decorate_options o;
  mixp_decorate_options_init(&o);
  o.dtype = dt;
  o.master_weights = master_weights;
  MT_OK(mixp_amp_decorate(m, opt, &o));
  w = param_at(m, 0);
  for (int k = 0; k < 10; ++k) {
    MT_OK(mixp_optimizer_zero_grad(opt));
    add_grad(w, 1.0);
    mixp_tensor *g = NULL;
    MT_OK(mixp_tensor_grad(w, &g));
    assert_int_equal(mixp_tensor_dtype(g), dt); /* master_grad off */
    mixp_tensor_release(g);
    MT_OK(mixp_optimizer_step(opt));
  }
  double *v = mt_values(w);
  for (int i = 1; i < 4; ++i) assert_true(v[i] == v[0]);
  *final_value = v[0];
  free(v);
  mixp_tensor_release(w);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

static void test_master_weights_keep_small_updates(void **state) {
  (void)state;
  const mixp_dtype dts[2] = {MIXP_F16, MIXP_BF16};
  for (int k = 0; k < 2; ++k) {
    float master = 1.0f;
    for (int i = 0; i < 10; ++i) master = master - (float)small_lr(dts[k]) * 1.0f;
    /* The expected parameter: the master rounded to the half type. */
    mixp_session *s = mt_session();
    const double mv = master;
    const int64_t shape[1] = {1};
    mixp_tensor *t = mt_tensor(s, dts[k], &mv, shape, 1);
    double want = 0;
    MT_OK(mixp_tensor_item(t, &want));
    mixp_tensor_release(t);
    mixp_session_destroy(s);

    double with = 0, without = 0;
    run_small_updates(1, dts[k], &with);
    run_small_updates(0, dts[k], &without);
    assert_true(without == 1.0);
    assert_true(with == want);
    assert_true(with < 1.0);
  }
}

static void test_master_grad_keeps_f32_grads(void **state) {
  (void)state;
  /* 2048 + 1: F32 holds 2049, F16 rounds the accumulated sum to 2048. */
  for (int mg = 0; mg < 2; ++mg) {
    mixp_session *s = mt_session();
    mixp_module *m = linear(s, 1, 2, 0, MIXP_F32);
    mixp_optimizer *opt = optimizer_over(m, MIXP_OPTIM_SGD, 0.0);
    mixp_decorate_options o;
    mixp_decorate_options_init(&o);
    o.master_grad = mg;
    MT_OK(mixp_amp_decorate(m, opt, &o));
    mixp_tensor *w = param_at(m, 0);
    assert_int_equal(mixp_tensor_dtype(w), MIXP_F16);
    add_grad(w, 2048.0);
    add_grad(w, 1.0);
    mixp_tensor *g = NULL;
    MT_OK(mixp_tensor_grad(w, &g));
    assert_int_equal(mixp_tensor_dtype(g), mg ? MIXP_F32 : MIXP_F16);
    double *v = mt_values(g);
    assert_true(v[0] == (mg ? 2049.0 : 2048.0));
    free(v);
    mixp_tensor_release(g);
    MT_OK(mixp_optimizer_step(opt)); /* F32 grads feed the master directly */
    mixp_tensor_release(w);
    mixp_optimizer_destroy(opt);
    mixp_module_destroy(m);
    mixp_session_destroy(s);
  }
}

/* A decorated model trains under a scaler (fp16 forward/backward, fp32
 * masters and moments). */
static void test_decorated_training(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = linear(s, 6, 2, 1, MIXP_F32);
  mixp_optimizer *opt = optimizer_over(m, MIXP_OPTIM_ADAM, 2e-2);
  MT_OK(mixp_amp_decorate(m, opt, NULL));
  mixp_grad_scaler *g = NULL;
  MT_OK(mixp_grad_scaler_create(s, NULL, &g));
  double xv[32 * 6], yv[32 * 2];
  mt_fill(xv, 32 * 6, -1, 1, 3);
  for (int i = 0; i < 32; ++i) { /* a linear target */
    yv[2 * i] = 0.5 * xv[6 * i] - xv[6 * i + 1];
    yv[2 * i + 1] = 0.25 * xv[6 * i + 2] + 0.1;
  }
  const int64_t xs[2] = {32, 6}, ys[2] = {32, 2};
  mixp_tensor *x = mt_tensor(s, MIXP_F16, xv, xs, 2), *y = mt_tensor(s, MIXP_F16, yv, ys, 2);
  double first = 0, last = 0;
  for (int it = 0; it < 150; ++it) {
    mixp_tensor *out = NULL, *loss = NULL, *scaled = NULL;
    MT_OK(mixp_optimizer_zero_grad(opt));
    MT_OK(mixp_module_forward(m, x, &out));
    assert_int_equal(mixp_tensor_dtype(out), MIXP_F16);
    MT_OK(mixp_mse_loss(out, y, MIXP_REDUCTION_MEAN, &loss));
    MT_OK(mixp_grad_scaler_scale(g, loss, &scaled));
    MT_OK(mixp_backward(scaled, NULL));
    MT_OK(mixp_grad_scaler_step(g, opt));
    MT_OK(mixp_grad_scaler_update(g));
    MT_OK(mixp_tensor_item(loss, it == 0 ? &first : &last));
    mixp_tensor_release(scaled);
    mixp_tensor_release(loss);
    mixp_tensor_release(out);
  }
  assert_true(last < 0.05 * first);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_grad_scaler_destroy(g);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* One optimizer over two modules, decorated one module at a time: both get
 * half parameters with fp32 masters, and the masters carry the updates. */
static void test_two_modules_one_optimizer(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *a = linear(s, 4, 3, 1, MIXP_F32), *b = linear(s, 3, 2, 1, MIXP_F32);
  mixp_tensor *params[4] = {param_at(a, 0), param_at(a, 1), param_at(b, 0), param_at(b, 1)};
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  oo.lr = 1e-3;
  mixp_optimizer *opt = NULL;
  MT_OK(mixp_optimizer_create(s, params, 4, &oo, &opt));
  for (int i = 0; i < 4; ++i) fill_param(params[i], 1.0);
  mixp_decorate_options o;
  mixp_decorate_options_init(&o);
  o.dtype = MIXP_BF16;
  MT_OK(mixp_amp_decorate(a, opt, &o));
  assert_int_equal(dtype_at(a, 0), MIXP_BF16);
  assert_int_equal(dtype_at(b, 0), MIXP_F32); /* b untouched until its own call */
  MT_OK(mixp_amp_decorate(b, opt, &o));
  assert_int_equal(dtype_at(b, 0), MIXP_BF16);
  /* 1 - 1e-3 rounds back to 1 in bf16; ten such steps (0.99) only survive in the masters. */
  for (int step = 0; step < 10; ++step) {
    for (int m = 0; m < 2; ++m)
      for (int i = 0; i < 2; ++i) {
        mixp_tensor *p = param_at(m ? b : a, i);
        add_grad(p, 1.0);
        mixp_tensor_release(p);
      }
    MT_OK(mixp_optimizer_step(opt));
    MT_OK(mixp_optimizer_zero_grad(opt));
  }
  mixp_tensor *pb = param_at(b, 0);
  double *v = mt_values(pb);
  assert_true(v[0] < 1.0 && v[0] > 0.98); /* 0.99 rounded to bf16: 0.98828125 */
  free(v);
  mixp_tensor_release(pb);
  for (int i = 0; i < 4; ++i) mixp_tensor_release(params[i]);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(a);
  mixp_module_destroy(b);
  mixp_session_destroy(s);
}

static void test_decorate_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session(), *s2 = mt_session();
  mixp_module *m = linear(s, 3, 2, 1, MIXP_F32);
  mixp_decorate_options o;

  MT_FAILS(mixp_amp_decorate(NULL, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "model is NULL");
  uint64_t junk[16] = {0}; /* not an optimizer */
  MT_FAILS(mixp_amp_decorate(m, (mixp_optimizer *)junk, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "not a live optimizer");
#define BAD(field, value, status, needle)                      \
  do {                                                         \
    mixp_decorate_options_init(&o);                            \
    o.field = value;                                           \
    MT_FAILS(mixp_amp_decorate(m, NULL, &o), status, needle);  \
  } while (0)
  BAD(struct_size, 4, MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  BAD(dtype, MIXP_F32, MIXP_ERR_DTYPE, "MIXP_F16 or MIXP_BF16, got f32");
  BAD(dtype, MIXP_I32, MIXP_ERR_DTYPE, "got i32");
  BAD(dtype, (mixp_dtype)42, MIXP_ERR_INVALID_ARGUMENT, "options->dtype is 42");
  BAD(master_weights, 2, MIXP_ERR_INVALID_ARGUMENT, "master_weights");
  BAD(master_grad, -1, MIXP_ERR_INVALID_ARGUMENT, "master_grad");
  BAD(keep_norm_fp32, 7, MIXP_ERR_INVALID_ARGUMENT, "keep_norm_fp32");
#undef BAD
  assert_int_equal(dtype_at(m, 0), MIXP_F32);

  /* An optimizer over a parameter that is not the model's. */
  const double v[2] = {1, 2};
  const int64_t shape[1] = {2};
  mixp_tensor *foreign = mt_tensor(s, MIXP_F32, v, shape, 1);
  MT_OK(mixp_tensor_set_requires_grad(foreign, 1));
  mixp_tensor *params[3] = {param_at(m, 0), param_at(m, 1), foreign};
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  mixp_optimizer *bad = NULL;
  MT_OK(mixp_optimizer_create(s, params, 3, &oo, &bad));
  /* An optimizer over none of the model's parameters. */
  mixp_optimizer *unrelated = NULL;
  MT_OK(mixp_optimizer_create(s, &foreign, 1, &oo, &unrelated));
  MT_FAILS(mixp_amp_decorate(m, unrelated, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "holds none of the model's parameters");
  assert_int_equal(dtype_at(m, 0), MIXP_F32); /* nothing changed */
  assert_int_equal(dtype_at(m, 1), MIXP_F32);
  mixp_optimizer_destroy(unrelated);
  mixp_optimizer_destroy(bad);

  /* An optimizer that already stepped. */
  mixp_optimizer *stepped = NULL;
  MT_OK(mixp_optimizer_create(s, params, 2, &oo, &stepped));
  add_grad(params[0], 1.0);
  MT_OK(mixp_optimizer_step(stepped));
  MT_FAILS(mixp_amp_decorate(m, stepped, NULL), MIXP_ERR_STATE, "already stepped");
  assert_int_equal(dtype_at(m, 0), MIXP_F32);
  mixp_optimizer_destroy(stepped);

  /* An optimizer of another session. */
  mixp_module *m2 = linear(s2, 3, 2, 1, MIXP_F32);
  mixp_optimizer *other = optimizer_over(m2, MIXP_OPTIM_SGD, 0.1);
  MT_FAILS(mixp_amp_decorate(m, other, NULL), MIXP_ERR_DEVICE, "different session");
  assert_int_equal(dtype_at(m, 0), MIXP_F32);

  /* Decorated once: a second decoration of the model is refused. */
  mixp_optimizer *good = NULL;
  MT_OK(mixp_optimizer_create(s, params, 2, &oo, &good));
  MT_OK(mixp_amp_decorate(m, good, NULL));
  MT_FAILS(mixp_amp_decorate(m, NULL, NULL), MIXP_ERR_STATE, "already decorated");
  mixp_module *m3 = linear(s, 3, 2, 1, MIXP_F32);
  MT_FAILS(mixp_amp_decorate(m3, good, NULL), MIXP_ERR_INVALID_ARGUMENT, "holds none of the model's parameters");
  assert_int_equal(dtype_at(m3, 0), MIXP_F32);
  assert_int_equal(dtype_at(m, 0), MIXP_F16);

  /* A closed session. */
  mixp_session_destroy(s2);
  MT_FAILS(mixp_amp_decorate(m2, NULL, NULL), MIXP_ERR_STATE, "session was destroyed");

  /* options_init defaults. */
  mixp_decorate_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.dtype, MIXP_F16);
  assert_int_equal(o.master_weights, 1);
  assert_int_equal(o.master_grad, 0);
  assert_int_equal(o.keep_norm_fp32, 1);
  mixp_decorate_options_init(NULL);

  for (int i = 0; i < 3; ++i) mixp_tensor_release(params[i]);
  mixp_optimizer_destroy(good);
  mixp_optimizer_destroy(other);
  mixp_module_destroy(m3);
  mixp_module_destroy(m2);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_dtypes_after_decorate),
      cmocka_unit_test(test_master_weights_keep_small_updates),
      cmocka_unit_test(test_master_grad_keeps_f32_grads),
      cmocka_unit_test(test_decorated_training),
      cmocka_unit_test(test_two_modules_one_optimizer),
      cmocka_unit_test(test_decorate_misuse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
