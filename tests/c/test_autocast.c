/* Autocast: the output dtype of every registered op under O0/O1/O2 with f16
 * and bf16 regions, custom white/black lists, nesting, the policy query,
 * gradients through autocast casts, the cast cache, and misuse.
 *
 * The expected category of each op is written down here, independently of
 * the library's registry (mapped from PyTorch's CUDA autocast lists), and
 * the test fails when an op is registered that this table does not know. */
#include "op_rows.h"
#include "test_util.h"

/* ---- the op table --------------------------------------------------------------- */

typedef enum { K_LOWER, K_FP32, K_PROMOTE, K_OTHER, K_NEUTRAL } kind;

typedef struct op_entry {
  const char *name;
  kind k;
  int nf;       /* float inputs */
  int internal; /* registered, but only reachable from inside other ops */
} op_entry;

static const op_entry OPS[] = {
    {"matmul", K_LOWER, 2, 0},       {"bmm", K_LOWER, 2, 0},
    {"conv2d", K_LOWER, 3, 0},       {"max_pool2d", K_OTHER, 1, 0},
    {"avg_pool2d", K_OTHER, 1, 0},   {"adaptive_avg_pool2d", K_OTHER, 1, 0},
    {"linear", K_LOWER, 3, 0},       {"exp", K_FP32, 1, 0},
    {"log", K_FP32, 1, 0},           {"pow", K_FP32, 1, 0},
    {"rdiv_scalar", K_FP32, 1, 0},   {"softmax", K_FP32, 1, 0},
    {"log_softmax", K_FP32, 1, 0},   {"sum", K_FP32, 1, 0},
    {"mean", K_FP32, 1, 0},          {"cross_entropy", K_FP32, 1, 0},
    {"mse_loss", K_FP32, 2, 0},      {"add", K_PROMOTE, 2, 0},
    {"sub", K_PROMOTE, 2, 0},        {"mul", K_PROMOTE, 2, 0},
    {"div", K_PROMOTE, 2, 0},        {"cat", K_PROMOTE, 2, 0},
    {"neg", K_OTHER, 1, 0},          {"sqrt", K_OTHER, 1, 0},
    {"relu", K_OTHER, 1, 0},         {"gelu", K_OTHER, 1, 0},
    {"gelu_tanh", K_OTHER, 1, 0},
    {"sigmoid", K_OTHER, 1, 0},      {"tanh", K_OTHER, 1, 0},
    {"add_scalar", K_OTHER, 1, 0},   {"mul_scalar", K_OTHER, 1, 0},
    {"rsub_scalar", K_OTHER, 1, 0},  {"dropout", K_OTHER, 1, 0},
    {"max", K_OTHER, 1, 0},          {"argmax", K_NEUTRAL, 1, 0},
    {"cast", K_NEUTRAL, 1, 0},       {"contiguous", K_NEUTRAL, 1, 0},
    {"reshape", K_NEUTRAL, 1, 0},    {"transpose", K_NEUTRAL, 1, 0},
    {"permute", K_NEUTRAL, 1, 0},    {"slice", K_NEUTRAL, 1, 0},
    {"batch_norm", K_OTHER, 3, 0},   {"layer_norm", K_FP32, 3, 0},
    {"group_norm", K_FP32, 3, 0},    {"hardswish", K_OTHER, 1, 0},
    {"hardsigmoid", K_OTHER, 1, 0},  {"silu", K_OTHER, 1, 0},
    {"embedding", K_OTHER, 1, 0},    {"pad", K_OTHER, 1, 0},
    {"scaled_dot_product_attention", K_LOWER, 3, 0},
    {"split", K_NEUTRAL, 1, 0},      {"flatten", K_NEUTRAL, 1, 0},
    /* fp8 operands (no float input autocast could cast): its output dtype is
     * the caller's out_dtype, checked in test_fp8_matmul.c. */
    {"scaled_matmul", K_NEUTRAL, 0, 1},
};
#define N_OPS ((int)(sizeof OPS / sizeof OPS[0]))

static const op_entry *find_op(const char *name) {
  for (int i = 0; i < N_OPS; ++i)
    if (strcmp(OPS[i].name, name) == 0) return &OPS[i];
  return NULL;
}

/* Float input i of op `name` with dtype dt (positive values: log, sqrt and
 * pow are defined; a transposed input for contiguous so that it copies). */
static mixp_tensor *make_input(mixp_session *s, const char *name, int i, mixp_dtype dt) {
  double v[12];
  mt_fill(v, 12, 0.5, 1.5, (uint64_t)(7 + i));
  int64_t shape[4] = {2, 3, 0, 0};
  int nd = 2;
  if (strcmp(name, "matmul") == 0 && i == 1) shape[0] = 3, shape[1] = 2;
  if (strcmp(name, "bmm") == 0) {
    nd = 3;
    shape[0] = 2, shape[1] = i ? 3 : 2, shape[2] = i ? 2 : 3;
  }
  if (strcmp(name, "linear") == 0 && i == 1) shape[0] = 4;
  if (strcmp(name, "linear") == 0 && i == 2) shape[0] = 4, nd = 1;
  if (strcmp(name, "conv2d") == 0 || strstr(name, "pool2d") != NULL) {
    /* x [1,2,2,3], weight [2,2,1,1], bias [2]. */
    nd = 4;
    shape[0] = 1, shape[1] = 2, shape[2] = 2, shape[3] = 3;
    if (i == 1) shape[0] = 2, shape[2] = 1, shape[3] = 1;
    if (i == 2) shape[0] = 2, nd = 1;
  }
  if (strstr(name, "_norm") != NULL && i > 0) shape[0] = 3, nd = 1; /* weight, bias [3] */
  mixp_tensor *t = mt_tensor(s, dt, v, shape, nd);
  if (strcmp(name, "contiguous") == 0) {
    mixp_tensor *tt = NULL;
    MT_OK(mixp_transpose(t, 0, 1, &tt));
    mixp_tensor_release(t);
    t = tt;
  }
  return t;
}

/* Calls op `name` through its public function. The single result (the
 * values of max) goes to *out. */
static mixp_status run_op(mixp_session *s, const char *name, mixp_tensor *const *in,
                          mixp_tensor **out) {
  mixp_tensor *x = in[0];
  if (strcmp(name, "matmul") == 0) return mixp_matmul(in[0], in[1], out);
  if (strcmp(name, "bmm") == 0) return mixp_bmm(in[0], in[1], out);
  if (strcmp(name, "linear") == 0) return mixp_linear(in[0], in[1], in[2], out);
  if (strcmp(name, "conv2d") == 0) return mixp_conv2d(in[0], in[1], in[2], NULL, out);
  if (strcmp(name, "max_pool2d") == 0) return mixp_max_pool2d(x, NULL, out);
  if (strcmp(name, "avg_pool2d") == 0) return mixp_avg_pool2d(x, NULL, out);
  if (strcmp(name, "adaptive_avg_pool2d") == 0)
    return mixp_adaptive_avg_pool2d(x, 1, 1, MIXP_NCHW, out);
  if (strcmp(name, "batch_norm") == 0)
    return mixp_batch_norm(in[0], in[1], in[2], NULL, NULL, 1, 0.1, 1e-5, MIXP_NCHW, out);
  if (strcmp(name, "layer_norm") == 0) return mixp_layer_norm(in[0], 1, in[1], in[2], 1e-5, out);
  if (strcmp(name, "group_norm") == 0) return mixp_group_norm(in[0], 3, in[1], in[2], 1e-5, out);
  if (strcmp(name, "hardswish") == 0) return mixp_hardswish(x, out);
  if (strcmp(name, "hardsigmoid") == 0) return mixp_hardsigmoid(x, out);
  if (strcmp(name, "silu") == 0) return mixp_silu(x, out);
  if (strcmp(name, "embedding") == 0) {
    const int64_t iv[3] = {1, 0, 1}, is[1] = {3};
    mixp_tensor *idx = NULL;
    MT_OK(mixp_tensor_from_host(s, iv, sizeof iv, MIXP_I64, is, 1, &idx));
    mixp_status st = mixp_embedding(x, idx, -1, out);
    mixp_tensor_release(idx);
    return st;
  }
  if (strcmp(name, "pad") == 0) {
    const int64_t p[4] = {1, 0, -1, 2};
    return mixp_pad(x, p, 4, 0.0, out);
  }
  if (strcmp(name, "scaled_dot_product_attention") == 0)
    return mixp_scaled_dot_product_attention(in[0], in[1], in[2], 1, 0.0, 0.0, out);
  if (strcmp(name, "split") == 0) {
    const int64_t sz[2] = {1, 2};
    mixp_tensor *pieces[2] = {NULL, NULL};
    mixp_status st = mixp_split(x, sz, 2, 1, pieces);
    *out = pieces[0];
    mixp_tensor_release(pieces[1]);
    return st;
  }
  if (strcmp(name, "flatten") == 0) return mixp_flatten(x, 0, -1, out);
  if (strcmp(name, "exp") == 0) return mixp_exp(x, out);
  if (strcmp(name, "log") == 0) return mixp_log(x, out);
  if (strcmp(name, "pow") == 0) return mixp_pow(x, 2.0, out);
  if (strcmp(name, "rdiv_scalar") == 0) return mixp_rdiv_scalar(x, 1.0, out);
  if (strcmp(name, "softmax") == 0) return mixp_softmax(x, -1, out);
  if (strcmp(name, "log_softmax") == 0) return mixp_log_softmax(x, -1, out);
  if (strcmp(name, "sum") == 0) return mixp_sum(x, NULL, 0, 0, out);
  if (strcmp(name, "mean") == 0) {
    const int d = 1;
    return mixp_mean(x, &d, 1, 0, out);
  }
  if (strcmp(name, "cross_entropy") == 0) {
    const int64_t tv[2] = {2, 0}, ts[1] = {2};
    mixp_tensor *tgt = NULL;
    MT_OK(mixp_tensor_from_host(s, tv, sizeof tv, MIXP_I64, ts, 1, &tgt));
    mixp_status st = mixp_cross_entropy(x, tgt, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, out);
    mixp_tensor_release(tgt);
    return st;
  }
  if (strcmp(name, "mse_loss") == 0) return mixp_mse_loss(in[0], in[1], MIXP_REDUCTION_MEAN, out);
  if (strcmp(name, "add") == 0) return mixp_add(in[0], in[1], out);
  if (strcmp(name, "sub") == 0) return mixp_sub(in[0], in[1], out);
  if (strcmp(name, "mul") == 0) return mixp_mul(in[0], in[1], out);
  if (strcmp(name, "div") == 0) return mixp_div(in[0], in[1], out);
  if (strcmp(name, "cat") == 0) return mixp_cat((const mixp_tensor *const *)in, 2, 0, out);
  if (strcmp(name, "neg") == 0) return mixp_neg(x, out);
  if (strcmp(name, "sqrt") == 0) return mixp_sqrt(x, out);
  if (strcmp(name, "relu") == 0) return mixp_relu(x, out);
  if (strcmp(name, "gelu") == 0) return mixp_gelu(x, MIXP_GELU_ERF, out);
  if (strcmp(name, "sigmoid") == 0) return mixp_sigmoid(x, out);
  if (strcmp(name, "tanh") == 0) return mixp_tanh(x, out);
  if (strcmp(name, "add_scalar") == 0) return mixp_add_scalar(x, 1.5, out);
  if (strcmp(name, "mul_scalar") == 0) return mixp_mul_scalar(x, 1.5, out);
  if (strcmp(name, "rsub_scalar") == 0) return mixp_rsub_scalar(x, 1.5, out);
  if (strcmp(name, "dropout") == 0) return mixp_dropout(x, 0.5, 1, out);
  if (strcmp(name, "max") == 0) {
    mixp_tensor *idx = NULL;
    mixp_status st = mixp_max(x, 1, 0, out, &idx);
    mixp_tensor_release(idx);
    return st;
  }
  if (strcmp(name, "argmax") == 0) return mixp_argmax(x, 1, 0, out);
  if (strcmp(name, "cast") == 0) return mixp_cast(x, mixp_tensor_dtype(x), out);
  if (strcmp(name, "contiguous") == 0) return mixp_contiguous(x, out);
  if (strcmp(name, "reshape") == 0) {
    const int64_t sh[2] = {3, -1};
    return mixp_reshape(x, sh, 2, out);
  }
  if (strcmp(name, "transpose") == 0) return mixp_transpose(x, 0, 1, out);
  if (strcmp(name, "permute") == 0) {
    const int p[2] = {1, 0};
    return mixp_permute(x, p, 2, out);
  }
  if (strcmp(name, "slice") == 0) return mixp_slice(x, 1, 0, 2, 1, out);
  for (int r = 0; r < MT_UNARY_ROWS; ++r) /* the other unary rows of the op table */
    if (strcmp(name, mt_unary_rows[r].name) == 0 && (mt_unary_rows[r].x || mt_unary_rows[r].xs))
      return mt_unary_row_call(&mt_unary_rows[r], x, 1.5, NULL, out);
  print_error("run_op: no public call for op '%s'\n", name);
  fail();
  return MIXP_ERR_INTERNAL;
}

/* The output dtype the spec demands. `enabled` = 0 or level O0: no casts. */
static mixp_dtype expected(const op_entry *op, int active, mixp_amp_level level, mixp_dtype low,
                           const mixp_dtype *in) {
  if (strcmp(op->name, "argmax") == 0) return MIXP_I64;
  int all_same = 1, any_f64 = 0;
  for (int i = 0; i < op->nf; ++i) {
    if (in[i] != in[0]) all_same = 0;
    if (in[i] == MIXP_F64) any_f64 = 1;
  }
  if (any_f64 || !active || level == MIXP_AMP_O0 || op->k == K_NEUTRAL) return in[0];
  if (level == MIXP_AMP_OD) return op->k == K_LOWER ? low : MIXP_F32; /* only the low list is low */
  switch (op->k) {
    case K_LOWER: return low;
    case K_FP32: return MIXP_F32;
    case K_PROMOTE:
      if (level == MIXP_AMP_O2) return low;
      return all_same ? in[0] : MIXP_F32;
    case K_OTHER: return level == MIXP_AMP_O2 ? low : in[0];
    case K_NEUTRAL: break;
  }
  return in[0];
}

/* Runs op with inputs of dtypes `in` and checks that the output is `want`. */
static void check_op_gives(mixp_session *s, const op_entry *op, mixp_amp_level level, mixp_dtype low,
                           const mixp_dtype *in, mixp_dtype want) {
  mixp_tensor *ts[3] = {0};
  for (int i = 0; i < op->nf; ++i) ts[i] = make_input(s, op->name, i, in[i]);
  mixp_tensor *out = NULL;
  mixp_status st = run_op(s, op->name, ts, &out);
  if (st != MIXP_OK) {
    print_error("op %s (level O%d, low %s, inputs %s/%s/%s) failed: %s\n", op->name, (int)level,
                mixp_dtype_name(low), mixp_dtype_name(in[0]), mixp_dtype_name(in[op->nf > 1]),
                mixp_dtype_name(in[op->nf > 2 ? 2 : 0]), mixp_last_error());
    fail();
  }
  if (mixp_tensor_dtype(out) != want) {
    print_error("op %s (O%d, region %s, inputs %s/%s/%s): output %s, expected %s\n", op->name,
                (int)level, mixp_dtype_name(low), mixp_dtype_name(in[0]),
                mixp_dtype_name(in[op->nf > 1]), mixp_dtype_name(in[op->nf > 2 ? 2 : 0]),
                mixp_dtype_name(mixp_tensor_dtype(out)), mixp_dtype_name(want));
    fail();
  }
  /* Inputs are never changed by autocast (it casts copies). */
  for (int i = 0; i < op->nf; ++i) assert_int_equal(mixp_tensor_dtype(ts[i]), in[i]);
  mixp_tensor_release(out);
  for (int i = 0; i < op->nf; ++i) mixp_tensor_release(ts[i]);
}

static void push(mixp_session *s, int enabled, mixp_amp_level level, mixp_dtype dt) {
  mixp_autocast_options o;
  mixp_autocast_options_init(&o);
  o.enabled = enabled;
  o.level = level;
  o.dtype = dt;
  MT_OK(mixp_autocast_push(s, &o));
}

/* Runs op with inputs of dtypes `in` and checks the output dtype. */
static void check_op(mixp_session *s, const op_entry *op, int active, mixp_amp_level level,
                     mixp_dtype low, const mixp_dtype *in) {
  check_op_gives(s, op, level, low, in, expected(op, active, level, low, in));
}

/* ---- registry ------------------------------------------------------------------- */

static void test_registry_matches_table(void **state) {
  (void)state;
  const int n = mixp_op_count();
  assert_int_equal(n, N_OPS);
  for (int i = 0; i < n; ++i) {
    const char *name = mixp_op_name(i);
    assert_non_null(name);
    if (!find_op(name)) {
      print_error("op '%s' is registered but this test does not know it\n", name);
      fail();
    }
    for (int j = 0; j < i; ++j) assert_string_not_equal(mixp_op_name(j), name);
    assert_ptr_equal(mixp_op_name(i), name); /* static, stable */
  }
  assert_null(mixp_op_name(-1));
  assert_null(mixp_op_name(n));
  assert_null(mixp_op_name(1 << 30));
}

/* ---- output dtypes of every op ---------------------------------------------------- */

static const mixp_dtype LOWS[2] = {MIXP_F16, MIXP_BF16};

/* Every op outside any region keeps its inputs' dtype. */
static void test_every_op_without_region(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const mixp_dtype dts[4] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64};
  for (int i = 0; i < N_OPS; ++i) {
    if (OPS[i].internal) continue;
    for (int d = 0; d < 4; ++d) {
      const mixp_dtype in[3] = {dts[d], dts[d], dts[d]};
      check_op(s, &OPS[i], 0, MIXP_AMP_O0, MIXP_BF16, in);
    }
  }
  mixp_session_destroy(s);
}

/* Every op, O0/O1/O2 x f16/bf16, with uniform inputs of each float dtype. */
static void test_every_op_uniform_inputs(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const mixp_dtype dts[4] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64};
  for (int lv = 0; lv <= MIXP_AMP_OD; ++lv)
    for (int l = 0; l < 2; ++l) {
      push(s, 1, (mixp_amp_level)lv, LOWS[l]);
      for (int i = 0; i < N_OPS; ++i) {
        if (OPS[i].internal) continue;
        for (int d = 0; d < 4; ++d) {
          const mixp_dtype in[3] = {dts[d], dts[d], dts[d]};
          check_op(s, &OPS[i], 1, (mixp_amp_level)lv, LOWS[l], in);
        }
      }
      MT_OK(mixp_autocast_pop(s));
    }
  mixp_session_destroy(s);
}

/* Ops that take F32/F16/BF16 inputs in any mix themselves (batch_norm:
 * half data with fp32 parameters, as cuDNN), so O0 does not reject it. */
static int mixes_dtypes(const char *name) { return strcmp(name, "batch_norm") == 0; }

/* Ops with several float inputs, given F32 mixed with a low dtype (either
 * order), or f16 mixed with bf16. Under O0 nothing is cast, so the op
 * itself rejects the mix (unless it takes mixes). */
static void test_every_op_mixed_inputs(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int lv = 0; lv <= MIXP_AMP_OD; ++lv)
    for (int l = 0; l < 2; ++l) {
      const mixp_dtype low = LOWS[l], other = LOWS[1 - l];
      const mixp_dtype mixes[4][3] = {{MIXP_F32, low, low},
                                      {low, MIXP_F32, MIXP_F32},
                                      {low, other, low},
                                      {MIXP_F32, MIXP_F32, low}};
      push(s, 1, (mixp_amp_level)lv, low);
      for (int i = 0; i < N_OPS; ++i) {
        if (OPS[i].nf < 2) continue;
        for (int m = 0; m < 4; ++m) {
          if (OPS[i].nf == 2 && m == 3) continue;
          if (lv == MIXP_AMP_O0 && !mixes_dtypes(OPS[i].name)) {
            mixp_tensor *ts[3] = {0}, *out = NULL;
            for (int k = 0; k < OPS[i].nf; ++k) ts[k] = make_input(s, OPS[i].name, k, mixes[m][k]);
            MT_FAILS(run_op(s, OPS[i].name, ts, &out), MIXP_ERR_DTYPE, "dtype");
            assert_null(out);
            for (int k = 0; k < OPS[i].nf; ++k) mixp_tensor_release(ts[k]);
          } else {
            check_op(s, &OPS[i], 1, (mixp_amp_level)lv, low, mixes[m]);
          }
        }
      }
      MT_OK(mixp_autocast_pop(s));
    }
  mixp_session_destroy(s);
}

/* F64 is never cast, not even next to a castable input: the op then sees
 * the mix and rejects it. */
static void test_f64_never_cast(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int lv = 1; lv <= MIXP_AMP_OD; ++lv) {
    push(s, 1, (mixp_amp_level)lv, MIXP_BF16);
    mixp_tensor *a = make_input(s, "matmul", 0, MIXP_F64), *b = make_input(s, "matmul", 1, MIXP_F32);
    mixp_tensor *out = NULL;
    MT_FAILS(mixp_matmul(a, b, &out), MIXP_ERR_DTYPE, "f64");
    assert_null(out);
    mixp_tensor *c = make_input(s, "add", 0, MIXP_F64), *d = make_input(s, "add", 1, MIXP_F32);
    MT_FAILS(mixp_add(c, d, &out), MIXP_ERR_DTYPE, "f64");
    assert_null(out);
    mixp_tensor_release(a);
    mixp_tensor_release(b);
    mixp_tensor_release(c);
    mixp_tensor_release(d);
    MT_OK(mixp_autocast_pop(s));
  }
  mixp_session_destroy(s);
}

/* ---- the policy query ------------------------------------------------------------- */

static void expect_policy(mixp_session *s, const char *name, mixp_cast_policy cast,
                          mixp_dtype dtype) {
  mixp_autocast_policy_info p;
  memset(&p, 0x7f, sizeof p);
  p.struct_size = sizeof p;
  MT_OK(mixp_autocast_policy(s, name, &p));
  if (p.cast != cast || p.dtype != dtype) {
    print_error("policy of %s: cast %d dtype %s, expected cast %d dtype %s\n", name, (int)p.cast,
                mixp_dtype_name(p.dtype), (int)cast, mixp_dtype_name(dtype));
    fail();
  }
}

/* O2 with use_promote (Paddle's): an op off the low-precision list runs in
 * fp32 when any float input is F32, else in the region's dtype (a half
 * input of the other kind is cast to it); the low list stays low, the fp32
 * list fp32. Off by default; a 0.2-sized options struct reads it as off. */
static void test_o2_use_promote(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  for (int l = 0; l < 2; ++l) {
    const mixp_dtype low = LOWS[l], other = LOWS[1 - l];
    mixp_autocast_options o;
    mixp_autocast_options_init(&o);
    assert_int_equal(o.use_promote, 0);
    o.level = MIXP_AMP_O2;
    o.dtype = low;
    o.use_promote = 1;
    MT_OK(mixp_autocast_push(s, &o));
    expect_policy(s, "relu", MIXP_CAST_PROMOTE, MIXP_F32);
    expect_policy(s, "add", MIXP_CAST_PROMOTE, MIXP_F32);
    expect_policy(s, "matmul", MIXP_CAST_LOWER, low);
    expect_policy(s, "softmax", MIXP_CAST_FP32, MIXP_F32);
    const mixp_dtype mixes[4][3] = {
        {low, low, low}, {MIXP_F32, low, low}, {low, MIXP_F32, MIXP_F32}, {other, other, other}};
    for (int i = 0; i < N_OPS; ++i) {
      const op_entry *op = &OPS[i];
      if (op->k == K_NEUTRAL) continue;
      for (int m = 0; m < 4; ++m) {
        /* batch_norm is decided by its data alone (Paddle's rule for norms):
         * the fp32 parameters O2 keeps do not hold it in fp32. */
        const int decided_by = strcmp(op->name, "batch_norm") == 0 ? 1 : op->nf;
        int any_f32 = 0;
        for (int k = 0; k < decided_by; ++k) any_f32 |= mixes[m][k] == MIXP_F32;
        mixp_dtype want = op->k == K_LOWER ? low : op->k == K_FP32 || any_f32 ? MIXP_F32 : low;
        check_op_gives(s, op, MIXP_AMP_O2, low, mixes[m], want);
      }
    }
    MT_OK(mixp_autocast_pop(s));
  }
  /* A struct of 0.2's size (without use_promote) is accepted: promote off. */
  mixp_autocast_options o;
  mixp_autocast_options_init(&o);
  o.level = MIXP_AMP_O2;
  o.use_promote = 1; /* beyond struct_size: not read */
  o.struct_size = (uint32_t)offsetof(mixp_autocast_options, use_promote);
  MT_OK(mixp_autocast_push(s, &o));
  expect_policy(s, "relu", MIXP_CAST_LOWER, MIXP_BF16);
  MT_OK(mixp_autocast_pop(s));
  o.struct_size = (uint32_t)offsetof(mixp_autocast_options, use_promote) - 4;
  MT_FAILS(mixp_autocast_push(s, &o), MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  mixp_session_destroy(s);
}

/* One line of text opens the same region as the options struct. */
static void test_push_policy_string(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  MT_OK(mixp_autocast_push_policy(s, "O2 bf16 black=softmax,layer_norm promote=1"));
  expect_policy(s, "softmax", MIXP_CAST_FP32, MIXP_F32);
  expect_policy(s, "layer_norm", MIXP_CAST_FP32, MIXP_F32);
  expect_policy(s, "relu", MIXP_CAST_PROMOTE, MIXP_F32);
  expect_policy(s, "matmul", MIXP_CAST_LOWER, MIXP_BF16);
  MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_autocast_push_policy(s, "")); /* the defaults: O1 bf16 */
  expect_policy(s, "relu", MIXP_CAST_NONE, MIXP_F32);
  expect_policy(s, "matmul", MIXP_CAST_LOWER, MIXP_BF16);
  MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_autocast_push_policy(s, "  fp16\tOD  white=relu,add cache=0 "));
  expect_policy(s, "relu", MIXP_CAST_LOWER, MIXP_F16);
  expect_policy(s, "add", MIXP_CAST_LOWER, MIXP_F16);
  expect_policy(s, "sub", MIXP_CAST_FP32, MIXP_F32);
  MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_autocast_push_policy(s, "O2 enabled=0"));
  expect_policy(s, "matmul", MIXP_CAST_NONE, MIXP_F32);
  MT_OK(mixp_autocast_pop(s));
  /* Misuse: each names the word, and no region is left open. */
  const struct {
    const char *text, *needle;
  } bad[] = {{"O3", "'O3'"},          {"bf16 white=", "'white='"},
             {"promote=2", "0 or 1"}, {"colour=1", "unknown key 'colour'"},
             {"white=relu,,add", "empty op name"}, {"white=no_such_op", "no_such_op"},
             {"white=exp black=exp", "both"},      {"O1 f32", "'f32'"}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; ++i) {
    MT_FAILS(mixp_autocast_push_policy(s, bad[i].text), MIXP_ERR_INVALID_ARGUMENT, bad[i].needle);
    MT_FAILS(mixp_autocast_pop(s), MIXP_ERR_STATE, "no autocast region");
  }
  MT_FAILS(mixp_autocast_push_policy(s, NULL), MIXP_ERR_INVALID_ARGUMENT, "policy is NULL");
  MT_FAILS(mixp_autocast_push_policy(NULL, "O1"), MIXP_ERR_INVALID_ARGUMENT, "session");
  mixp_session_destroy(s);
}

static void test_policy_every_op_and_level(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  /* No region: nothing is cast. */
  for (int i = 0; i < N_OPS; ++i) expect_policy(s, OPS[i].name, MIXP_CAST_NONE, MIXP_F32);
  for (int enabled = 0; enabled <= 1; ++enabled)
    for (int lv = 0; lv <= MIXP_AMP_OD; ++lv)
      for (int l = 0; l < 2; ++l) {
        const mixp_dtype low = LOWS[l];
        push(s, enabled, (mixp_amp_level)lv, low);
        for (int i = 0; i < N_OPS; ++i) {
          mixp_cast_policy c = MIXP_CAST_NONE;
          mixp_dtype d = MIXP_F32;
          if (enabled && lv != MIXP_AMP_O0) {
            switch (OPS[i].k) {
              case K_LOWER: c = MIXP_CAST_LOWER, d = low; break;
              case K_FP32: c = MIXP_CAST_FP32; break;
              case K_PROMOTE:
                if (lv == MIXP_AMP_O2) c = MIXP_CAST_LOWER, d = low;
                else if (lv == MIXP_AMP_OD) c = MIXP_CAST_FP32;
                else c = MIXP_CAST_PROMOTE;
                break;
              case K_OTHER:
                if (lv == MIXP_AMP_O2) c = MIXP_CAST_LOWER, d = low;
                else if (lv == MIXP_AMP_OD) c = MIXP_CAST_FP32;
                break;
              case K_NEUTRAL: break;
            }
          }
          expect_policy(s, OPS[i].name, c, d);
        }
        MT_OK(mixp_autocast_pop(s));
      }
  for (int i = 0; i < N_OPS; ++i) expect_policy(s, OPS[i].name, MIXP_CAST_NONE, MIXP_F32);
  mixp_session_destroy(s);
}

static void test_policy_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_autocast_policy_info p;
  memset(&p, 0, sizeof p);
  p.struct_size = sizeof p;
  p.cast = (mixp_cast_policy)77;
  MT_FAILS(mixp_autocast_policy(NULL, "matmul", &p), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  MT_FAILS(mixp_autocast_policy(s, NULL, &p), MIXP_ERR_INVALID_ARGUMENT, "op_name is NULL");
  MT_FAILS(mixp_autocast_policy(s, "matmul", NULL), MIXP_ERR_INVALID_ARGUMENT, "policy is NULL");
  MT_FAILS(mixp_autocast_policy(s, "conv3d", &p), MIXP_ERR_INVALID_ARGUMENT, "unknown op 'conv3d'");
  MT_FAILS(mixp_autocast_policy(s, "", &p), MIXP_ERR_INVALID_ARGUMENT, "unknown op ''");
  MT_FAILS(mixp_autocast_policy(s, "MATMUL", &p), MIXP_ERR_INVALID_ARGUMENT, "unknown op 'MATMUL'");
  assert_int_equal(p.cast, 77); /* untouched on failure */
  p.struct_size = 0;
  MT_FAILS(mixp_autocast_policy(s, "matmul", &p), MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  assert_int_equal(p.cast, 77);
  mixp_session_destroy(s);
}

/* ---- custom lists ------------------------------------------------------------------- */

static void test_custom_white_list(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *white[3] = {"exp", "relu", "add"};
  for (int lv = 1; lv <= MIXP_AMP_OD; ++lv)
    for (int l = 0; l < 2; ++l) {
      mixp_autocast_options o;
      mixp_autocast_options_init(&o);
      o.level = (mixp_amp_level)lv;
      o.dtype = LOWS[l];
      o.custom_white_list = white;
      o.n_custom_white = 3;
      MT_OK(mixp_autocast_push(s, &o));
      expect_policy(s, "exp", MIXP_CAST_LOWER, LOWS[l]);
      expect_policy(s, "relu", MIXP_CAST_LOWER, LOWS[l]);
      expect_policy(s, "add", MIXP_CAST_LOWER, LOWS[l]);
      expect_policy(s, "log", MIXP_CAST_FP32, MIXP_F32); /* the rest keep their defaults */
      const mixp_dtype f32[3] = {MIXP_F32, MIXP_F32, MIXP_F32};
      const op_entry low_exp = {"exp", K_LOWER, 1, 0}, low_relu = {"relu", K_LOWER, 1, 0},
                     low_add = {"add", K_LOWER, 2, 0};
      check_op(s, &low_exp, 1, (mixp_amp_level)lv, LOWS[l], f32);
      check_op(s, &low_relu, 1, (mixp_amp_level)lv, LOWS[l], f32);
      check_op(s, &low_add, 1, (mixp_amp_level)lv, LOWS[l], f32);
      /* A low-precision exp gives the low-precision result. */
      mixp_tensor *x = make_input(s, "exp", 0, MIXP_F32), *y = NULL;
      MT_OK(mixp_exp(x, &y));
      double *xv = mt_values(x), *yv = mt_values(y);
      for (int i = 0; i < 6; ++i) {
        double want = exp(xv[i]);
        assert_true(fabs(yv[i] - want) <= (LOWS[l] == MIXP_BF16 ? 1.6e-2 : 2e-3) * want);
      }
      free(xv);
      free(yv);
      mixp_tensor_release(x);
      mixp_tensor_release(y);
      MT_OK(mixp_autocast_pop(s));
    }
  /* The same name twice in one list is fine. */
  const char *twice[2] = {"exp", "exp"};
  mixp_autocast_options o;
  mixp_autocast_options_init(&o);
  o.custom_white_list = twice;
  o.n_custom_white = 2;
  MT_OK(mixp_autocast_push(s, &o));
  expect_policy(s, "exp", MIXP_CAST_LOWER, MIXP_BF16);
  MT_OK(mixp_autocast_pop(s));
  mixp_session_destroy(s);
}

static void test_custom_black_list(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *black[3] = {"matmul", "add", "relu"};
  for (int lv = 1; lv <= MIXP_AMP_OD; ++lv)
    for (int l = 0; l < 2; ++l) {
      mixp_autocast_options o;
      mixp_autocast_options_init(&o);
      o.level = (mixp_amp_level)lv;
      o.dtype = LOWS[l];
      o.custom_black_list = black;
      o.n_custom_black = 3;
      MT_OK(mixp_autocast_push(s, &o));
      for (int i = 0; i < 3; ++i) expect_policy(s, black[i], MIXP_CAST_FP32, MIXP_F32);
      expect_policy(s, "bmm", MIXP_CAST_LOWER, LOWS[l]);
      const op_entry f_mm = {"matmul", K_FP32, 2, 0}, f_add = {"add", K_FP32, 2, 0},
                     f_relu = {"relu", K_FP32, 1, 0};
      const mixp_dtype f32[3] = {MIXP_F32, MIXP_F32, MIXP_F32};
      const mixp_dtype low[3] = {LOWS[l], LOWS[l], LOWS[l]};
      const mixp_dtype mix[3] = {LOWS[l], MIXP_F32, MIXP_F32};
      check_op(s, &f_mm, 1, (mixp_amp_level)lv, LOWS[l], f32);
      check_op(s, &f_mm, 1, (mixp_amp_level)lv, LOWS[l], low);
      check_op(s, &f_mm, 1, (mixp_amp_level)lv, LOWS[l], mix);
      check_op(s, &f_add, 1, (mixp_amp_level)lv, LOWS[l], low);
      check_op(s, &f_relu, 1, (mixp_amp_level)lv, LOWS[l], low);
      MT_OK(mixp_autocast_pop(s));
    }
  mixp_session_destroy(s);
}

/* Custom lists of a disabled or O0 region change nothing. */
static void test_custom_lists_inactive_region(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const char *white[1] = {"exp"}, *black[1] = {"matmul"};
  for (int k = 0; k < 2; ++k) {
    mixp_autocast_options o;
    mixp_autocast_options_init(&o);
    if (k == 0) o.enabled = 0;
    else o.level = MIXP_AMP_O0;
    o.custom_white_list = white;
    o.n_custom_white = 1;
    o.custom_black_list = black;
    o.n_custom_black = 1;
    MT_OK(mixp_autocast_push(s, &o));
    expect_policy(s, "exp", MIXP_CAST_NONE, MIXP_F32);
    expect_policy(s, "matmul", MIXP_CAST_NONE, MIXP_F32);
    const mixp_dtype low[3] = {MIXP_BF16, MIXP_BF16, MIXP_BF16};
    check_op(s, find_op("matmul"), 0, MIXP_AMP_O0, MIXP_BF16, low);
    MT_OK(mixp_autocast_pop(s));
  }
  mixp_session_destroy(s);
}

/* ---- push/pop and their misuse ------------------------------------------------------ */

static void test_options_init_defaults(void **state) {
  (void)state;
  mixp_autocast_options o;
  memset(&o, 0x5a, sizeof o);
  mixp_autocast_options_init(&o);
  assert_int_equal(o.struct_size, sizeof o);
  assert_int_equal(o.enabled, 1);
  assert_int_equal(o.dtype, MIXP_BF16);
  assert_int_equal(o.level, MIXP_AMP_O1);
  assert_int_equal(o.cache_enabled, 1);
  assert_null(o.custom_white_list);
  assert_null(o.custom_black_list);
  assert_int_equal(o.n_custom_white, 0);
  assert_int_equal(o.n_custom_black, 0);
  mixp_autocast_options_init(NULL); /* harmless */

  /* NULL options: the defaults (O1, bf16). */
  mixp_session *s = mt_session();
  MT_OK(mixp_autocast_push(s, NULL));
  expect_policy(s, "matmul", MIXP_CAST_LOWER, MIXP_BF16);
  expect_policy(s, "add", MIXP_CAST_PROMOTE, MIXP_F32);
  MT_OK(mixp_autocast_pop(s));
  mixp_session_destroy(s);
}

/* A failed push opens no region. */
static void expect_push_fails(mixp_session *s, const mixp_autocast_options *o, mixp_status st,
                              const char *needle) {
  MT_FAILS(mixp_autocast_push(s, o), st, needle);
  expect_policy(s, "matmul", MIXP_CAST_NONE, MIXP_F32);
  MT_FAILS(mixp_autocast_pop(s), MIXP_ERR_STATE, "no autocast region is open");
}

static void test_push_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_autocast_options o;
  mixp_autocast_options_init(&o);
  MT_FAILS(mixp_autocast_push(NULL, &o), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");

  o.struct_size = 4;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  o.struct_size = sizeof o + 8;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "struct_size");

  const int bad_levels[3] = {-1, 4, 1000};
  for (int i = 0; i < 3; ++i) {
    mixp_autocast_options_init(&o);
    o.level = (mixp_amp_level)bad_levels[i];
    expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "options->level");
  }
  const int bad_dtypes[5] = {MIXP_F32, MIXP_F64, MIXP_I32, MIXP_BOOL, 99};
  for (int i = 0; i < 5; ++i) {
    mixp_autocast_options_init(&o);
    o.dtype = (mixp_dtype)bad_dtypes[i];
    expect_push_fails(s, &o, MIXP_ERR_DTYPE, "options->dtype");
  }
  /* A disabled region still validates its options. */
  mixp_autocast_options_init(&o);
  o.enabled = 0;
  o.dtype = MIXP_F32;
  expect_push_fails(s, &o, MIXP_ERR_DTYPE, "options->dtype");

  const char *unknown[2] = {"exp", "conv3d"};
  mixp_autocast_options_init(&o);
  o.custom_white_list = unknown;
  o.n_custom_white = 2;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "unknown op 'conv3d'");
  mixp_autocast_options_init(&o);
  o.custom_black_list = unknown;
  o.n_custom_black = 2;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "unknown op 'conv3d'");
  MT_FAILS(mixp_autocast_push(s, &o), MIXP_ERR_INVALID_ARGUMENT, "custom_black_list[1]");

  mixp_autocast_options_init(&o);
  o.n_custom_white = 1;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "custom_white_list is NULL");
  mixp_autocast_options_init(&o);
  o.n_custom_black = 2;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "custom_black_list is NULL");
  mixp_autocast_options_init(&o);
  o.custom_white_list = unknown;
  o.n_custom_white = -1;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "negative");
  const char *with_null[2] = {"exp", NULL};
  mixp_autocast_options_init(&o);
  o.custom_white_list = with_null;
  o.n_custom_white = 2;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "custom_white_list[1] is NULL");

  /* Neutral ops only move data: they cannot be listed. */
  const char *neutral[2] = {"exp", "reshape"};
  mixp_autocast_options_init(&o);
  o.custom_white_list = neutral;
  o.n_custom_white = 2;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "'reshape'");
  const char *neutral2[1] = {"cast"};
  mixp_autocast_options_init(&o);
  o.custom_black_list = neutral2;
  o.n_custom_black = 1;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "never cast");

  /* An op in both lists. */
  const char *white[2] = {"exp", "matmul"}, *black[2] = {"log", "matmul"};
  mixp_autocast_options_init(&o);
  o.custom_white_list = white;
  o.n_custom_white = 2;
  o.custom_black_list = black;
  o.n_custom_black = 2;
  expect_push_fails(s, &o, MIXP_ERR_INVALID_ARGUMENT, "'matmul'");
  MT_FAILS(mixp_autocast_push(s, &o), MIXP_ERR_INVALID_ARGUMENT, "both");

  /* A failed push inside a region leaves the outer region as it was. */
  push(s, 1, MIXP_AMP_O2, MIXP_F16);
  MT_FAILS(mixp_autocast_push(s, &o), MIXP_ERR_INVALID_ARGUMENT, "both");
  expect_policy(s, "add", MIXP_CAST_LOWER, MIXP_F16);
  MT_OK(mixp_autocast_pop(s));
  MT_FAILS(mixp_autocast_pop(s), MIXP_ERR_STATE, "no autocast region is open");

  MT_FAILS(mixp_autocast_pop(NULL), MIXP_ERR_INVALID_ARGUMENT, "session is NULL");
  mixp_session_destroy(s);
}

/* ---- nesting ---------------------------------------------------------------------- */

static mixp_dtype run_dtype(mixp_session *s, const char *name, mixp_dtype in) {
  mixp_tensor *ts[3] = {0}, *out = NULL;
  const op_entry *op = find_op(name);
  for (int i = 0; i < op->nf; ++i) ts[i] = make_input(s, name, i, in);
  MT_OK(run_op(s, name, ts, &out));
  mixp_dtype d = mixp_tensor_dtype(out);
  mixp_tensor_release(out);
  for (int i = 0; i < op->nf; ++i) mixp_tensor_release(ts[i]);
  return d;
}

static void test_nesting(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  assert_int_equal(run_dtype(s, "matmul", MIXP_F32), MIXP_BF16);
  assert_int_equal(run_dtype(s, "add", MIXP_F32), MIXP_F32);

  /* A disabled inner region: F32 stays F32, low inputs stay low. */
  push(s, 0, MIXP_AMP_O1, MIXP_BF16);
  assert_int_equal(run_dtype(s, "matmul", MIXP_F32), MIXP_F32);
  assert_int_equal(run_dtype(s, "exp", MIXP_BF16), MIXP_BF16);
  expect_policy(s, "matmul", MIXP_CAST_NONE, MIXP_F32);
  /* ... and an enabled one inside it. */
  push(s, 1, MIXP_AMP_O2, MIXP_F16);
  assert_int_equal(run_dtype(s, "add", MIXP_F32), MIXP_F16);
  assert_int_equal(run_dtype(s, "matmul", MIXP_BF16), MIXP_F16);
  assert_int_equal(run_dtype(s, "exp", MIXP_F16), MIXP_F32);
  MT_OK(mixp_autocast_pop(s));
  assert_int_equal(run_dtype(s, "matmul", MIXP_F32), MIXP_F32);
  MT_OK(mixp_autocast_pop(s));

  /* Back in the outer region, exactly as before. */
  assert_int_equal(run_dtype(s, "matmul", MIXP_F32), MIXP_BF16);
  assert_int_equal(run_dtype(s, "exp", MIXP_BF16), MIXP_F32);
  expect_policy(s, "add", MIXP_CAST_PROMOTE, MIXP_F32);

  /* An O2 region inside O1 and back. */
  push(s, 1, MIXP_AMP_O2, MIXP_F16);
  expect_policy(s, "relu", MIXP_CAST_LOWER, MIXP_F16);
  MT_OK(mixp_autocast_pop(s));
  expect_policy(s, "relu", MIXP_CAST_NONE, MIXP_F32);
  MT_OK(mixp_autocast_pop(s));

  assert_int_equal(run_dtype(s, "matmul", MIXP_F32), MIXP_F32);
  MT_FAILS(mixp_autocast_pop(s), MIXP_ERR_STATE, "no autocast region is open");

  /* Regions are per session. */
  mixp_session *s2 = mt_session();
  push(s, 1, MIXP_AMP_O1, MIXP_F16);
  assert_int_equal(run_dtype(s2, "matmul", MIXP_F32), MIXP_F32);
  expect_policy(s2, "matmul", MIXP_CAST_NONE, MIXP_F32);
  MT_FAILS(mixp_autocast_pop(s2), MIXP_ERR_STATE, "no autocast region is open");
  MT_OK(mixp_autocast_pop(s));
  mixp_session_destroy(s2);
  mixp_session_destroy(s);
}

/* ---- gradients through autocast casts ---------------------------------------------- */

static mixp_tensor *leaf(mixp_session *s, const double *v, const int64_t *shape, int nd) {
  mixp_tensor *t = mt_tensor(s, MIXP_F32, v, shape, nd);
  MT_OK(mixp_tensor_set_requires_grad(t, 1));
  return t;
}

static double *grad_values(const mixp_tensor *t, mixp_dtype want_dtype) {
  mixp_tensor *g = NULL;
  MT_OK(mixp_tensor_grad(t, &g));
  assert_non_null(g);
  assert_int_equal(mixp_tensor_dtype(g), want_dtype);
  double *v = mt_values(g);
  mixp_tensor_release(g);
  return v;
}

/* loss = mse(tanh(x W^T + b) * 2 - 1... ) over a small MLP piece; run with a
 * region of the given level/dtype (level < 0: no region). */
static void mlp_grads(mixp_session *s, int level, mixp_dtype low, double *gw, double *gb,
                      double *gx, double *loss_out) {
  double wv[12], bv[4], xv[6], tv[8];
  mt_fill(wv, 12, -1, 1, 1);
  mt_fill(bv, 4, -1, 1, 2);
  mt_fill(xv, 6, -1, 1, 3);
  mt_fill(tv, 8, -1, 1, 4);
  const int64_t ws[2] = {4, 3}, bs[1] = {4}, xs[2] = {2, 3}, ts[2] = {2, 4};
  mixp_tensor *w = leaf(s, wv, ws, 2), *b = leaf(s, bv, bs, 1), *x = leaf(s, xv, xs, 2);
  mixp_tensor *t = mt_tensor(s, MIXP_F32, tv, ts, 2);
  if (level >= 0) push(s, 1, (mixp_amp_level)level, low);
  mixp_tensor *y = NULL, *h = NULL, *loss = NULL;
  MT_OK(mixp_linear(x, w, b, &y));
  MT_OK(mixp_tanh(y, &h));
  MT_OK(mixp_mse_loss(h, t, MIXP_REDUCTION_SUM, &loss));
  if (level >= 1) {
    assert_int_equal(mixp_tensor_dtype(y), low);
    /* tanh is off the low-precision list: OD runs it in fp32. */
    assert_int_equal(mixp_tensor_dtype(h), level == MIXP_AMP_OD ? MIXP_F32 : low);
  }
  assert_int_equal(mixp_tensor_dtype(loss), MIXP_F32);
  if (level >= 0) MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_tensor_item(loss, loss_out));
  double *g = grad_values(w, MIXP_F32);
  memcpy(gw, g, 12 * sizeof(double));
  free(g);
  g = grad_values(b, MIXP_F32);
  memcpy(gb, g, 4 * sizeof(double));
  free(g);
  g = grad_values(x, MIXP_F32);
  memcpy(gx, g, 6 * sizeof(double));
  free(g);
  mixp_tensor *tensors[7] = {w, b, x, t, y, h, loss};
  for (int i = 0; i < 7; ++i) mixp_tensor_release(tensors[i]);
}

static void test_gradients_through_casts(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  double rw[12], rb[4], rx[6], rl;
  mlp_grads(s, -1, MIXP_F32, rw, rb, rx, &rl);
  for (int lv = 1; lv <= MIXP_AMP_OD; ++lv)
    for (int l = 0; l < 2; ++l) {
      double gw[12], gb[4], gx[6], gl;
      mlp_grads(s, lv, LOWS[l], gw, gb, gx, &gl);
      /* bf16 keeps 8 bits, f16 11: a few rounding steps on values of order 1. */
      const double tol = LOWS[l] == MIXP_BF16 ? 6e-2 : 1e-2;
      mt_assert_close(gw, rw, 12, tol, tol);
      mt_assert_close(gb, rb, 4, tol, tol);
      mt_assert_close(gx, rx, 6, tol, tol);
      assert_true(fabs(gl - rl) <= tol * (1 + fabs(rl)));
    }
  /* O0 is the fp32 run exactly. */
  double gw[12], gb[4], gx[6], gl;
  mlp_grads(s, 0, MIXP_BF16, gw, gb, gx, &gl);
  mt_assert_close(gw, rw, 12, 0, 0);
  mt_assert_close(gb, rb, 4, 0, 0);
  mt_assert_close(gx, rx, 6, 0, 0);
  mixp_session_destroy(s);
}

/* Under autocast, cross_entropy reads half logits as they are (its kernels
 * compute in fp32 from any float logits) instead of casting them to F32
 * first: the loss and the logits' gradient are the bits of the explicit
 * cast path, for each reduction, ignored rows and label smoothing, and no
 * cast op runs. */
static void test_cross_entropy_reads_half_logits(void **state) {
  (void)state;
  enum { N = 7, C = 37 };
  const int64_t ls[2] = {N, C}, ts[1] = {N};
  const int64_t tv[N] = {0, 36, 5, -100, 12, 12, 30};
  double lv[N * C];
  mt_fill(lv, N * C, -6.0, 6.0, 77);
  const mixp_dtype halves[2] = {MIXP_BF16, MIXP_F16};
  const mixp_reduction reds[3] = {MIXP_REDUCTION_MEAN, MIXP_REDUCTION_SUM, MIXP_REDUCTION_NONE};
  for (int h = 0; h < 2; ++h)
    for (int r = 0; r < 3; ++r)
      for (int smooth = 0; smooth < 2; ++smooth) {
        mixp_session *s = mt_session();
        mixp_tensor *tgt = NULL;
        MT_OK(mixp_tensor_from_host(s, tv, sizeof tv, MIXP_I64, ts, 1, &tgt));
        mixp_cross_entropy_options o;
        mixp_cross_entropy_options_init(&o);
        o.reduction = reds[r];
        o.label_smoothing = smooth ? 0.1 : 0.0;
        double *loss_v[2], *grad_v[2];
        for (int path = 0; path < 2; ++path) { /* 0: autocast reads the half logits; 1: explicit cast */
          mixp_tensor *logits = mt_tensor(s, halves[h], lv, ls, 2), *wide = NULL, *loss = NULL, *g = NULL;
          MT_OK(mixp_tensor_set_requires_grad(logits, 1));
          if (path == 0) {
            MT_OK(mixp_session_op_stats_start(s));
            push(s, 1, MIXP_AMP_O1, halves[h]);
            MT_OK(mixp_cross_entropy_ex(logits, tgt, &o, &loss));
            MT_OK(mixp_autocast_pop(s));
            MT_OK(mixp_session_op_stats_stop(s));
            int64_t casts = -1;
            MT_OK(mixp_session_op_stats_count(s, "cast", 0, MIXP_F32, &casts));
            assert_int_equal(casts, 0);
          } else {
            MT_OK(mixp_cast(logits, MIXP_F32, &wide));
            MT_OK(mixp_cross_entropy_ex(wide, tgt, &o, &loss));
          }
          assert_int_equal(mixp_tensor_dtype(loss), MIXP_F32);
          if (r == 2) {
            mixp_tensor *total = NULL;
            MT_OK(mixp_sum(loss, NULL, 0, 0, &total));
            MT_OK(mixp_backward(total, NULL));
            mixp_tensor_release(total);
          } else {
            MT_OK(mixp_backward(loss, NULL));
          }
          MT_OK(mixp_tensor_grad(logits, &g));
          assert_int_equal(mixp_tensor_dtype(g), halves[h]);
          loss_v[path] = mt_values(loss);
          grad_v[path] = mt_values(g);
          mixp_tensor *all[4] = {logits, wide, loss, g};
          for (int i = 0; i < 4; ++i) mixp_tensor_release(all[i]);
        }
        const int64_t nl = r == 2 ? N : 1;
        assert_memory_equal(loss_v[0], loss_v[1], (size_t)nl * sizeof(double));
        assert_memory_equal(grad_v[0], grad_v[1], (size_t)N * C * sizeof(double));
        for (int p = 0; p < 2; ++p) {
          free(loss_v[p]);
          free(grad_v[p]);
        }
        mixp_tensor_release(tgt);
        mixp_session_destroy(s);
      }
}

/* Linear layer + cross-entropy under O1 bf16: bf16 logits, F32 loss, F32
 * gradients for the F32 parameters. */
static void test_linear_cross_entropy_o1_bf16(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_module *m = NULL;
  MT_OK(mixp_linear_create(s, 4, 3, 1, MIXP_F32, &m));
  const int64_t xs[2] = {5, 4}, ts[1] = {5};
  mixp_tensor *x = NULL, *tgt = NULL;
  MT_OK(mixp_tensor_randn(s, MIXP_F32, xs, 2, &x));
  const int64_t tv[5] = {0, 2, 1, 1, 0};
  MT_OK(mixp_tensor_from_host(s, tv, sizeof tv, MIXP_I64, ts, 1, &tgt));

  /* The fp32 reference. */
  mixp_tensor *logits = NULL, *loss = NULL;
  MT_OK(mixp_module_forward(m, x, &logits));
  MT_OK(mixp_cross_entropy(logits, tgt, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  MT_OK(mixp_backward(loss, NULL));
  double ref_loss;
  MT_OK(mixp_tensor_item(loss, &ref_loss));
  mixp_tensor *w = NULL, *b = NULL;
  MT_OK(mixp_module_parameter(m, 0, &w));
  MT_OK(mixp_module_parameter(m, 1, &b));
  double *rw = grad_values(w, MIXP_F32), *rb = grad_values(b, MIXP_F32);
  MT_OK(mixp_tensor_zero_grad(w));
  MT_OK(mixp_tensor_zero_grad(b));
  mixp_tensor_release(logits);
  mixp_tensor_release(loss);

  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  MT_OK(mixp_module_forward(m, x, &logits));
  assert_int_equal(mixp_tensor_dtype(logits), MIXP_BF16);
  MT_OK(mixp_cross_entropy(logits, tgt, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  assert_int_equal(mixp_tensor_dtype(loss), MIXP_F32);
  MT_OK(mixp_autocast_pop(s));
  MT_OK(mixp_backward(loss, NULL));
  double l;
  MT_OK(mixp_tensor_item(loss, &l));
  assert_true(fabs(l - ref_loss) <= 3e-2 * (1 + fabs(ref_loss)));
  assert_int_equal(mixp_tensor_dtype(w), MIXP_F32);
  double *gw = grad_values(w, MIXP_F32), *gb = grad_values(b, MIXP_F32);
  mt_assert_close(gw, rw, 12, 3e-2, 5e-2);
  mt_assert_close(gb, rb, 3, 3e-2, 5e-2);
  free(rw);
  free(rb);
  free(gw);
  free(gb);
  mixp_tensor *all[6] = {x, tgt, logits, loss, w, b};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(all[i]);
  mixp_module_destroy(m);
  mixp_session_destroy(s);
}

/* ---- the cast cache ----------------------------------------------------------------- */

static uint64_t mem_now(mixp_session *s) {
  mixp_memory_stats st;
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  return st.current_bytes;
}

static uint64_t mem_peak(mixp_session *s) {
  mixp_memory_stats st;
  st.struct_size = sizeof st;
  MT_OK(mixp_memory_stats_get(s, &st));
  return st.peak_bytes;
}

#define CN 64 /* W is [CN, CN] F32: its bf16 copy takes CN*CN*2 bytes */
#define CAST_BYTES ((uint64_t)CN * CN * 2)

typedef struct cache_probe {
  uint64_t kept[2];  /* current bytes added by use 1 and use 2 (outputs held) */
  uint64_t transient[2]; /* peak above the start of each use */
  uint64_t released_before_pop; /* current bytes above baseline once outputs are gone */
  uint64_t after_pop;           /* current bytes above baseline after the pop */
} cache_probe;

/* Uses `w` (or a tensor derived from it by `derive`) twice as a matmul
 * operand inside one region and measures the session's memory. */
static cache_probe probe_cache(mixp_session *s, mixp_tensor *w, int cache_enabled, int no_grad) {
  double xv[CN];
  mt_fill(xv, CN, -1, 1, 5);
  const int64_t xs[2] = {1, CN};
  mixp_tensor *x = mt_tensor(s, MIXP_BF16, xv, xs, 2);
  cache_probe p;
  const uint64_t base = mem_now(s);
  mixp_autocast_options o;
  mixp_autocast_options_init(&o);
  o.cache_enabled = cache_enabled;
  MT_OK(mixp_autocast_push(s, &o));
  if (no_grad) MT_OK(mixp_no_grad_begin(s));
  mixp_tensor *y[2] = {0};
  uint64_t before = base;
  for (int i = 0; i < 2; ++i) {
    MT_OK(mixp_memory_stats_reset_peak(s));
    MT_OK(mixp_matmul(x, w, &y[i]));
    assert_int_equal(mixp_tensor_dtype(y[i]), MIXP_BF16);
    const uint64_t now = mem_now(s);
    p.kept[i] = now - before;
    p.transient[i] = mem_peak(s) - before;
    before = now;
  }
  if (no_grad) MT_OK(mixp_no_grad_end(s));
  mixp_tensor_release(y[0]);
  mixp_tensor_release(y[1]);
  p.released_before_pop = mem_now(s) - base;
  MT_OK(mixp_autocast_pop(s));
  p.after_pop = mem_now(s) - base;
  mixp_tensor_release(x);
  return p;
}

static mixp_tensor *param64(mixp_session *s) {
  double *v = malloc(CN * CN * sizeof(double));
  mt_fill(v, CN * CN, -1, 1, 6);
  const int64_t shape[2] = {CN, CN};
  mixp_tensor *w = leaf(s, v, shape, 2);
  free(v);
  return w;
}

static void test_cache_parameter_cast_once(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *w = param64(s);
  cache_probe p = probe_cache(s, w, 1, 0);
  /* The first use casts W and keeps the copy; the second reuses it. */
  assert_true(p.kept[0] >= p.kept[1] + CAST_BYTES);
  assert_true(p.transient[1] < CAST_BYTES);
  /* The cache holds the copy until the outermost pop. */
  assert_int_equal(p.released_before_pop, CAST_BYTES);
  assert_int_equal(p.after_pop, 0);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

/* Nothing is cached with cache_enabled = 0, in no-grad regions, for views
 * and for non-leaf tensors: every use casts. */
static void expect_uncached(cache_probe p) {
  assert_int_equal(p.kept[0], p.kept[1]);
  assert_int_equal(p.transient[0], p.transient[1]);
  assert_true(p.transient[1] >= CAST_BYTES);
  assert_int_equal(p.released_before_pop, 0);
  assert_int_equal(p.after_pop, 0);
}

static void test_cache_not_used(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *w = param64(s);
  expect_uncached(probe_cache(s, w, 0, 0));
  expect_uncached(probe_cache(s, w, 1, 1));
  /* A parameter that does not require grad is no parameter. */
  MT_OK(mixp_tensor_set_requires_grad(w, 0));
  expect_uncached(probe_cache(s, w, 1, 0));
  MT_OK(mixp_tensor_set_requires_grad(w, 1));
  /* A view of a parameter. */
  mixp_tensor *v = NULL;
  MT_OK(mixp_slice(w, 0, 0, CN, 1, &v));
  expect_uncached(probe_cache(s, v, 1, 0));
  mixp_tensor_release(v);
  /* A non-leaf. */
  mixp_tensor *nl = NULL;
  MT_OK(mixp_mul_scalar(w, 1.0, &nl));
  assert_int_equal(mixp_tensor_is_leaf(nl), 0);
  expect_uncached(probe_cache(s, nl, 1, 0));
  mixp_tensor_release(nl);
  /* Still cached in the normal case. */
  cache_probe p = probe_cache(s, w, 1, 0);
  assert_int_equal(p.released_before_pop, CAST_BYTES);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

/* The cache lives until the OUTERMOST region pops: an inner pop keeps it. */
static void test_cache_cleared_by_outermost_pop(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *w = param64(s);
  const uint64_t base = mem_now(s);
  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  double xv[CN];
  mt_fill(xv, CN, -1, 1, 5);
  const int64_t xs[2] = {1, CN};
  mixp_tensor *x = mt_tensor(s, MIXP_BF16, xv, xs, 2);
  const uint64_t with_x = mem_now(s) - base;
  mixp_tensor *y = NULL;
  MT_OK(mixp_matmul(x, w, &y));
  mixp_tensor_release(y);
  MT_OK(mixp_autocast_pop(s));
  assert_int_equal(mem_now(s) - base, with_x + CAST_BYTES);
  MT_OK(mixp_autocast_pop(s));
  assert_int_equal(mem_now(s) - base, with_x);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

/* Destroying the session inside a region whose cache holds a cast copy
 * frees everything: the cache's tensors hold the session, so it used to
 * leak (LeakSanitizer fails this under the sanitizer CTest). The last
 * reference, the user's tensor, goes after the destroy. */
static void test_cache_freed_when_session_destroyed_in_region(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_tensor *w = param64(s);
  double xv[CN];
  mt_fill(xv, CN, -1, 1, 5);
  const int64_t xs[2] = {1, CN};
  mixp_tensor *x = mt_tensor(s, MIXP_BF16, xv, xs, 2);
  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  mixp_tensor *y = NULL;
  MT_OK(mixp_matmul(x, w, &y));
  mixp_tensor_release(y);
  mixp_tensor_release(x);
  mixp_session_destroy(s);
  /* The tensor outlives its session and can still be read. */
  assert_int_equal(mixp_tensor_dtype(w), MIXP_F32);
  mixp_tensor_release(w);
}

/* A parameter changed in place between regions is cast afresh. */
static void test_cache_recast_after_update(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double wa[4] = {1, 2, 3, 4}, wb[4] = {10, 20, 30, 40}, ones[2] = {1, 1};
  const int64_t ws[2] = {2, 2}, xs[2] = {1, 2};
  mixp_tensor *w = leaf(s, wa, ws, 2), *x = mt_tensor(s, MIXP_BF16, ones, xs, 2);
  mixp_tensor *nw = mt_tensor(s, MIXP_F32, wb, ws, 2), *y = NULL;
  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  MT_OK(mixp_matmul(x, w, &y));
  double *v = mt_values(y);
  assert_true(v[0] == 4 && v[1] == 6);
  free(v);
  mixp_tensor_release(y);
  MT_OK(mixp_autocast_pop(s));

  MT_OK(mixp_no_grad_begin(s));
  MT_OK(mixp_tensor_copy_(w, nw));
  MT_OK(mixp_no_grad_end(s));

  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  MT_OK(mixp_matmul(x, w, &y));
  v = mt_values(y);
  assert_true(v[0] == 40 && v[1] == 60);
  free(v);
  mixp_tensor_release(y);
  MT_OK(mixp_autocast_pop(s));
  mixp_tensor_release(nw);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

/* Two forward/backward passes inside one region (gradient accumulation):
 * the second pass reuses the cached copy, whose cast was part of the first
 * (freed) graph; the gradients must still add up. */
static void test_cache_two_backwards_in_one_region(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const double wa[4] = {1, 2, 3, 4}, xv[2] = {1, 2};
  const int64_t ws[2] = {2, 2}, xs[2] = {1, 2};
  mixp_tensor *w = leaf(s, wa, ws, 2), *x = mt_tensor(s, MIXP_BF16, xv, xs, 2);
  push(s, 1, MIXP_AMP_O1, MIXP_BF16);
  for (int it = 0; it < 2; ++it) {
    mixp_tensor *y = NULL, *loss = NULL;
    MT_OK(mixp_matmul(x, w, &y));
    MT_OK(mixp_sum(y, NULL, 0, 0, &loss));
    MT_OK(mixp_backward(loss, NULL));
    mixp_tensor_release(y);
    mixp_tensor_release(loss);
  }
  MT_OK(mixp_autocast_pop(s));
  /* d sum(x W) / dW[i][j] = x[i], twice. */
  double *g = grad_values(w, MIXP_F32);
  const double want[4] = {2, 2, 4, 4};
  mt_assert_close(g, want, 4, 0, 0);
  free(g);
  mixp_tensor_release(x);
  mixp_tensor_release(w);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_matches_table),
      cmocka_unit_test(test_every_op_without_region),
      cmocka_unit_test(test_every_op_uniform_inputs),
      cmocka_unit_test(test_every_op_mixed_inputs),
      cmocka_unit_test(test_o2_use_promote),
      cmocka_unit_test(test_push_policy_string),
      cmocka_unit_test(test_f64_never_cast),
      cmocka_unit_test(test_policy_every_op_and_level),
      cmocka_unit_test(test_policy_misuse),
      cmocka_unit_test(test_custom_white_list),
      cmocka_unit_test(test_custom_black_list),
      cmocka_unit_test(test_custom_lists_inactive_region),
      cmocka_unit_test(test_options_init_defaults),
      cmocka_unit_test(test_push_misuse),
      cmocka_unit_test(test_nesting),
      cmocka_unit_test(test_gradients_through_casts),
      cmocka_unit_test(test_linear_cross_entropy_o1_bf16),
      cmocka_unit_test(test_cross_entropy_reads_half_logits),
      cmocka_unit_test(test_cache_parameter_cast_once),
      cmocka_unit_test(test_cache_not_used),
      cmocka_unit_test(test_cache_cleared_by_outermost_pop),
      cmocka_unit_test(test_cache_freed_when_session_destroyed_in_region),
      cmocka_unit_test(test_cache_recast_after_update),
      cmocka_unit_test(test_cache_two_backwards_in_one_region),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
