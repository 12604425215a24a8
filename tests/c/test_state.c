/* Training-state files: exact resume (N steps, save, load into fresh
 * objects, M more steps == N + M steps straight, bit for bit) under fp32 and
 * under O2 bf16/f16 with a dynamic GradScaler; the round trip of every kind
 * of object; metadata; weight import. Damaged files: test_state_corrupt.c. */
#include "test_state_util.h"

enum { N_STEPS = 6, M_STEPS = 9 };

static void check_resume_exact(int amp, mixp_dtype dtype) {
  char path[512];
  st_path(path, sizeof path, "resume.safetensors");
  /* Straight: N steps, save, M more. Saving changes nothing in the run. */
  st_run a;
  st_build(&a, 7, amp, dtype);
  double loss_a[M_STEPS];
  for (int i = 0; i < N_STEPS; ++i) st_step(&a);
  mixp_state_spec spec;
  st_spec(&a, &spec);
  spec.step = N_STEPS;
  spec.user_metadata = "{\"model\":\"mlp\"}";
  MT_OK(mixp_state_save(a.s, path, &spec));
  size_t n_saved = 0;
  unsigned char *saved = st_param_bytes(a.model, &n_saved);
  for (int i = 0; i < M_STEPS; ++i) loss_a[i] = st_step(&a);

  /* Resumed: objects built with another seed (other initial weights, other
   * shuffle, other dropout stream), then loaded. */
  st_run b;
  st_build(&b, 99, amp, dtype);
  st_spec(&b, &spec);
  int64_t step = -1;
  MT_OK(mixp_state_load(b.s, path, &spec, &step));
  assert_int_equal(step, N_STEPS);
  assert_int_equal(mixp_optimizer_step_count(b.opt), N_STEPS);
  for (int i = 0; i < M_STEPS; ++i) {
    double lb = st_step(&b);
    if (memcmp(&lb, &loss_a[i], sizeof lb) != 0) {
      print_error("step %d after resume: loss %.17g, straight run %.17g\n", N_STEPS + i, lb, loss_a[i]);
      fail();
    }
  }
  size_t na = 0, nb = 0;
  unsigned char *pa = st_param_bytes(a.model, &na), *pb = st_param_bytes(b.model, &nb);
  assert_int_equal(na, nb);
  assert_memory_equal(pa, pb, na);
  /* The M steps trained (not all skipped by the scaler). */
  assert_int_equal(n_saved, na);
  assert_true(memcmp(saved, pa, na) != 0);
  free(saved);
  double sa = 0, sb = 0;
  MT_OK(mixp_grad_scaler_get_scale(a.scaler, &sa));
  MT_OK(mixp_grad_scaler_get_scale(b.scaler, &sb));
  assert_true(sa == sb);
  assert_int_equal(mixp_loader_epoch(a.loader), mixp_loader_epoch(b.loader));
  assert_true(mixp_loader_epoch(a.loader) >= 1); /* the run crossed an epoch */
  double lra = 0, lrb = 0;
  MT_OK(mixp_optimizer_get_lr(a.opt, &lra));
  MT_OK(mixp_optimizer_get_lr(b.opt, &lrb));
  assert_true(lra == lrb);
  free(pa);
  free(pb);
  st_destroy(&a);
  st_destroy(&b);
  unlink(path);
}

static void test_resume_exact_fp32(void **state) {
  (void)state;
  check_resume_exact(0, MIXP_F32);
}

static void test_resume_exact_o2_bf16_dynamic_scaler(void **state) {
  (void)state;
  check_resume_exact(1, MIXP_BF16);
}

static void test_resume_exact_o2_f16_dynamic_scaler(void **state) {
  (void)state;
  check_resume_exact(1, MIXP_F16);
}

/* The saved parameter of a decorated model is its fp32 master, not the
 * rounded half value: loading it into an fp32 model gives the master. */
static void test_o2_saves_fp32_masters(void **state) {
  (void)state;
  char path[512];
  st_path(path, sizeof path, "masters.safetensors");
  st_run a;
  st_build(&a, 3, 1, MIXP_BF16);
  for (int i = 0; i < 4; ++i) st_step(&a);
  mixp_state_spec spec;
  mixp_state_spec_init(&spec);
  spec.modules = &a.model;
  spec.num_modules = 1;
  spec.optimizers = &a.opt;
  spec.num_optimizers = 1;
  MT_OK(mixp_state_save(a.s, path, &spec));
  /* <doc:load-weights> */
  mixp_module *plain = NULL;
  MT_OK(mixp_model_create(a.s, "mlp in=36 hidden=24,12 classes=4 dropout=0.2", &plain));
  MT_OK(mixp_module_load_safetensors(plain, NULL /* or the optimizer */, path, 1 /* strict */));
  /* </doc:load-weights> */
  mixp_tensor *pw = NULL, *hw = NULL;
  MT_OK(mixp_module_parameter(plain, 0, &pw));
  MT_OK(mixp_module_parameter(a.model, 0, &hw));
  assert_int_equal(mixp_tensor_dtype(pw), MIXP_F32);
  assert_int_equal(mixp_tensor_dtype(hw), MIXP_BF16);
  int64_t n = mixp_tensor_numel(pw);
  double *master = mt_values(pw), *half = mt_values(hw);
  int differ = 0;
  for (int64_t i = 0; i < n; ++i) {
    /* The half parameter is the master rounded to bf16. */
    mixp_tensor *one = NULL, *r = NULL;
    int64_t sh[1] = {1};
    MT_OK(mixp_tensor_from_host(a.s, &master[i], sizeof(double), MIXP_F64, sh, 1, &one));
    MT_OK(mixp_cast(one, MIXP_BF16, &r));
    double rv = 0;
    MT_OK(mixp_tensor_item(r, &rv));
    assert_true(rv == half[i]);
    differ += master[i] != half[i];
    mixp_tensor_release(r);
    mixp_tensor_release(one);
  }
  assert_true(differ > 0); /* the masters hold what bf16 cannot */
  free(master);
  free(half);
  mixp_tensor_release(pw);
  mixp_tensor_release(hw);
  mixp_module_destroy(plain);
  st_destroy(&a);
  unlink(path);
}

/* Buffers (batch norm running statistics, I64 num_batches_tracked), extra
 * tensors, SGD momentum and the session RNG round-trip. */
static void test_roundtrip_buffers_tensors_sgd_rng(void **state) {
  (void)state;
  char path[512];
  st_path(path, sizeof path, "bn.safetensors");
  mixp_session *s = mt_session();
  mixp_module *bn = NULL, *bn2 = NULL;
  MT_OK(mixp_batchnorm2d_create(s, 3, 1e-5, 0.1, 1, MIXP_F32, &bn));
  MT_OK(mixp_batchnorm2d_create(s, 3, 1e-5, 0.1, 1, MIXP_F32, &bn2));
  int64_t xs[4] = {2, 3, 2, 2};
  mixp_tensor *x = NULL, *y = NULL;
  MT_OK(mixp_tensor_randn(s, MIXP_F32, xs, 4, &x));
  MT_OK(mixp_module_forward(bn, x, &y)); /* updates the running statistics */
  double v[5] = {1, 2, 3, 4, 5};
  mixp_tensor *w = mt_param(s, MIXP_F32, v, 5), *w2 = mt_param(s, MIXP_F32, v, 5);
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_SGD);
  oo.momentum = 0.9;
  oo.nesterov = 1;
  mixp_optimizer *opt = NULL, *opt2 = NULL;
  MT_OK(mixp_optimizer_create(s, &w, 1, &oo, &opt));
  oo.momentum = 0.5; /* restored from the file */
  oo.nesterov = 0;
  MT_OK(mixp_optimizer_create(s, &w2, 1, &oo, &opt2));
  for (int k = 0; k < 2; ++k) {
    mixp_tensor *sq = NULL, *l = NULL;
    MT_OK(mixp_mul(w, w, &sq));
    MT_OK(mixp_sum(sq, NULL, 0, 0, &l));
    MT_OK(mixp_backward(l, NULL));
    MT_OK(mixp_optimizer_step(opt));
    MT_OK(mixp_optimizer_zero_grad(opt));
    mixp_tensor_release(l);
    mixp_tensor_release(sq);
  }
  mixp_state_spec spec;
  mixp_state_spec_init(&spec);
  const char *name = "w";
  spec.modules = &bn;
  spec.num_modules = 1;
  spec.tensors = &w;
  spec.tensor_names = &name;
  spec.num_tensors = 1;
  spec.optimizers = &opt;
  spec.num_optimizers = 1;
  spec.step = 42;
  MT_OK(mixp_state_save(s, path, &spec));
  /* Draws after the save: the RNG must come back to this point. */
  mixp_tensor *r1 = NULL, *r2 = NULL;
  MT_OK(mixp_tensor_rand(s, MIXP_F32, xs, 1, &r1));

  spec.modules = &bn2;
  spec.tensors = &w2;
  spec.optimizers = &opt2;
  int64_t step = 0;
  MT_OK(mixp_session_set_seed(s, 555));
  MT_OK(mixp_state_load(s, path, &spec, &step));
  assert_int_equal(step, 42);
  MT_OK(mixp_tensor_rand(s, MIXP_F32, xs, 1, &r2));
  double *a1 = mt_values(r1), *a2 = mt_values(r2);
  assert_memory_equal(a1, a2, 2 * sizeof(double));
  for (int i = 0; i < mixp_module_num_buffers(bn); ++i) {
    mixp_tensor *b1 = NULL, *b2 = NULL;
    MT_OK(mixp_module_buffer(bn, i, &b1));
    MT_OK(mixp_module_buffer(bn2, i, &b2));
    assert_int_equal(mixp_tensor_dtype(b1), mixp_tensor_dtype(b2));
    size_t nb = (size_t)mixp_tensor_numel(b1) * mixp_dtype_size(mixp_tensor_dtype(b1));
    unsigned char h1[64], h2[64];
    MT_OK(mixp_tensor_to_host(b1, h1, nb));
    MT_OK(mixp_tensor_to_host(b2, h2, nb));
    assert_memory_equal(h1, h2, nb);
    mixp_tensor_release(b1);
    mixp_tensor_release(b2);
  }
  /* One more identical step on both: momentum buffers, nesterov and the
   * step count came back. */
  mixp_tensor *ws[2] = {w, w2};
  mixp_optimizer *os[2] = {opt, opt2};
  for (int k = 0; k < 2; ++k) {
    mixp_tensor *sq = NULL, *l = NULL;
    MT_OK(mixp_mul(ws[k], ws[k], &sq));
    MT_OK(mixp_sum(sq, NULL, 0, 0, &l));
    MT_OK(mixp_backward(l, NULL));
    MT_OK(mixp_optimizer_step(os[k]));
    mixp_tensor_release(l);
    mixp_tensor_release(sq);
  }
  double *v1 = mt_values(w), *v2 = mt_values(w2);
  assert_memory_equal(v1, v2, 5 * sizeof(double));
  assert_int_equal(mixp_optimizer_step_count(opt2), 3);
  free(v1);
  free(v2);
  free(a1);
  free(a2);
  mixp_tensor_release(r1);
  mixp_tensor_release(r2);
  mixp_optimizer_destroy(opt);
  mixp_optimizer_destroy(opt2);
  mixp_tensor_release(w);
  mixp_tensor_release(w2);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  mixp_module_destroy(bn);
  mixp_module_destroy(bn2);
  mixp_session_destroy(s);
  unlink(path);
}

static void test_metadata(void **state) {
  (void)state;
  char path[512];
  st_path(path, sizeof path, "meta.safetensors");
  mixp_session *s = mt_session();
  mixp_state_spec spec;
  mixp_state_spec_init(&spec);
  spec.user_metadata = "{\"model\":\"mlp \\\"quoted\\\"\",\"amp\":\"O2 bf16\"}\n\ttab";
  MT_OK(mixp_state_save(s, path, &spec));
  size_t len = 0;
  MT_OK(mixp_state_read_metadata(path, "user", NULL, 0, &len));
  assert_int_equal(len, strlen(spec.user_metadata));
  char buf[256];
  MT_OK(mixp_state_read_metadata(path, "user", buf, sizeof buf, &len));
  assert_string_equal(buf, spec.user_metadata);
  MT_OK(mixp_state_read_metadata(path, "mixp_version", buf, sizeof buf, &len));
  assert_string_equal(buf, mixp_version());
  MT_OK(mixp_state_read_metadata(path, "format", buf, sizeof buf, &len));
  assert_string_equal(buf, "mixp.state");
  /* Misuse. */
  MT_FAILS(mixp_state_read_metadata(path, "user", buf, 4, &len), MIXP_ERR_INVALID_ARGUMENT,
           "too small");
  MT_FAILS(mixp_state_read_metadata(path, "nope", buf, sizeof buf, &len), MIXP_ERR_INVALID_ARGUMENT,
           "no metadata entry 'nope'");
  MT_FAILS(mixp_state_read_metadata(NULL, "user", buf, sizeof buf, &len), MIXP_ERR_INVALID_ARGUMENT,
           "path is NULL");
  MT_FAILS(mixp_state_read_metadata(path, NULL, buf, sizeof buf, &len), MIXP_ERR_INVALID_ARGUMENT,
           "key is NULL");
  MT_FAILS(mixp_state_read_metadata(path, "user", buf, sizeof buf, NULL), MIXP_ERR_INVALID_ARGUMENT,
           "length is NULL");
  MT_FAILS(mixp_state_read_metadata(path, "user", NULL, 8, &len), MIXP_ERR_INVALID_ARGUMENT,
           "buf is NULL");
  MT_FAILS(mixp_state_read_metadata("/nonexistent/x.safetensors", "user", buf, sizeof buf, &len),
           MIXP_ERR_IO, "cannot open");
  mixp_session_destroy(s);
  unlink(path);
}

/* Weight import across dtypes: an F64 model's file into F32, F16 and BF16
 * models (values cast), and strict/non-strict name matching. */
static void test_load_safetensors_weights(void **state) {
  (void)state;
  char path[512];
  st_path(path, sizeof path, "weights.safetensors");
  mixp_session *s = mt_session();
  mixp_module *src = NULL;
  MT_OK(mixp_linear_create(s, 3, 2, 1, MIXP_F64, &src));
  mixp_state_spec spec;
  mixp_state_spec_init(&spec);
  spec.modules = &src;
  spec.num_modules = 1;
  MT_OK(mixp_state_save(s, path, &spec));
  mixp_tensor *sw = NULL;
  MT_OK(mixp_module_parameter(src, 0, &sw));
  double *want = mt_values(sw);
  const mixp_dtype dts[3] = {MIXP_F32, MIXP_F16, MIXP_BF16};
  for (int k = 0; k < 3; ++k) {
    mixp_module *dst = NULL;
    MT_OK(mixp_linear_create(s, 3, 2, 1, dts[k], &dst));
    MT_OK(mixp_module_load_safetensors(dst, NULL, path, 1));
    mixp_tensor *dw = NULL, *cast = NULL;
    MT_OK(mixp_module_parameter(dst, 0, &dw));
    MT_OK(mixp_cast(sw, dts[k], &cast));
    double *got = mt_values(dw), *exp = mt_values(cast);
    assert_memory_equal(got, exp, 6 * sizeof(double));
    free(got);
    free(exp);
    mixp_tensor_release(cast);
    mixp_tensor_release(dw);
    mixp_module_destroy(dst);
  }
  /* A model without a bias: strict refuses the extra "bias", non-strict
   * loads the weight. */
  mixp_module *nobias = NULL;
  MT_OK(mixp_linear_create(s, 3, 2, 0, MIXP_F32, &nobias));
  MT_FAILS(mixp_module_load_safetensors(nobias, NULL, path, 1), MIXP_ERR_SHAPE, "'bias'");
  MT_OK(mixp_module_load_safetensors(nobias, NULL, path, 0));
  /* A model of another shape. */
  mixp_module *wide = NULL;
  MT_OK(mixp_linear_create(s, 4, 2, 1, MIXP_F32, &wide));
  MT_FAILS(mixp_module_load_safetensors(wide, NULL, path, 0), MIXP_ERR_SHAPE, "tensor 'weight' has shape [2,3]");
  /* Misuse. */
  MT_FAILS(mixp_module_load_safetensors(NULL, NULL, path, 1), MIXP_ERR_INVALID_ARGUMENT, "module is NULL");
  MT_FAILS(mixp_module_load_safetensors(wide, NULL, NULL, 1), MIXP_ERR_INVALID_ARGUMENT, "path is NULL");
  MT_FAILS(mixp_module_load_safetensors(wide, NULL, path, 2), MIXP_ERR_INVALID_ARGUMENT, "strict must be 0 or 1");
  MT_FAILS(mixp_module_load_safetensors(wide, NULL, "/nonexistent/w.safetensors", 1), MIXP_ERR_IO,
           "cannot open");
  mixp_session *other = mt_session();
  double v[1] = {1};
  mixp_tensor *op = mt_param(other, MIXP_F32, v, 1);
  mixp_optimizer *oopt = mt_sgd(other, &op, 1, 0.1);
  MT_FAILS(mixp_module_load_safetensors(wide, oopt, path, 1), MIXP_ERR_DEVICE, "different session");
  mixp_optimizer_destroy(oopt);
  mixp_tensor_release(op);
  mixp_session_destroy(other);
  free(want);
  mixp_tensor_release(sw);
  mixp_module_destroy(wide);
  mixp_module_destroy(nobias);
  mixp_module_destroy(src);
  mixp_session_destroy(s);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resume_exact_fp32),
      cmocka_unit_test(test_resume_exact_o2_bf16_dynamic_scaler),
      cmocka_unit_test(test_resume_exact_o2_f16_dynamic_scaler),
      cmocka_unit_test(test_o2_saves_fp32_masters),
      cmocka_unit_test(test_roundtrip_buffers_tensors_sgd_rng),
      cmocka_unit_test(test_metadata),
      cmocka_unit_test(test_load_safetensors_weights),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
