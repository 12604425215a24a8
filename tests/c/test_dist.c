/* Data-parallel training (mixp_dist_*): collectives, sharded loading, the
 * gradient average, and ranks that agree on overflow. The same suite runs
 * as one process (CTest test_dist: MIXP_DIST_SINGLE; cuda_test_dist: NCCL
 * with one rank on a GPU) and under `mpirun -np 2|3` (test_dist_mpi_np*:
 * MIXP_DIST_MPI), where every rank runs every test in the same order: a
 * test is collective, and its expectations hold for any world size.
 *
 * MIXP_TEST_DIST_TRANSPORT=mpi|single picks the transport (default: mpi
 * when an MPI launcher started the process, else single). */
#include <limits.h>
#include <stdint.h>
#include <unistd.h>

#include "test_util.h"

/* A communicator of the whole run: MPI is finalised when the last one is
 * destroyed and cannot start again, so this one outlives every test's. */
static mixp_session *g_keeper_session;
static mixp_dist *g_keeper;

static mixp_dist_transport transport(void) {
  const char *t = getenv("MIXP_TEST_DIST_TRANSPORT");
  if (t && strcmp(t, "mpi") == 0) return MIXP_DIST_MPI;
  if (t && strcmp(t, "single") == 0) return MIXP_DIST_SINGLE;
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ? MIXP_DIST_MPI : MIXP_DIST_SINGLE;
}

/* bucket_bytes 0: the default. */
static mixp_dist *make_dist_buckets(mixp_session *s, int64_t bucket_bytes) {
  mixp_dist_options o;
  mixp_dist_options_init(&o);
  o.transport = transport();
  if (bucket_bytes > 0) o.bucket_bytes = bucket_bytes;
  mixp_dist *d = NULL;
  MT_OK(mixp_dist_create(s, &o, &d));
  return d;
}

static mixp_dist *make_dist(mixp_session *s) { return make_dist_buckets(s, 0); }

static int setup(void **state) {
  (void)state;
  mixp_session_options o;
  mixp_session_options_init(&o);
  o.num_threads = 1;
  if (mixp_session_create(&o, &g_keeper_session) != MIXP_OK) return -1;
  mixp_dist_options d;
  mixp_dist_options_init(&d);
  d.transport = transport();
  if (mixp_dist_create(g_keeper_session, &d, &g_keeper) != MIXP_OK) {
    fprintf(stderr, "test_dist: %s\n", mixp_last_error());
    return -1;
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  mixp_dist_destroy(g_keeper);
  mixp_session_destroy(g_keeper_session);
  return 0;
}

static int expected_world(void) {
  const char *w = getenv("OMPI_COMM_WORLD_SIZE");
  return transport() == MIXP_DIST_MPI && w ? atoi(w) : 1;
}

/* Asserts that every rank holds the same bytes in t (all_gather, then each
 * rank's row against rank 0's). */
static void assert_same_on_every_rank(mixp_dist *d, const mixp_tensor *t, const char *what) {
  mixp_tensor *all = NULL;
  MT_OK(mixp_dist_all_gather(d, t, &all));
  const int w = mixp_dist_world_size(d);
  const size_t row = (size_t)mixp_tensor_numel(t) * mixp_dtype_size(mixp_tensor_dtype(t));
  unsigned char *buf = malloc(row * (size_t)w + 1);
  MT_OK(mixp_tensor_to_host(all, buf, row * (size_t)w));
  for (int r = 1; r < w; ++r)
    if (memcmp(buf, buf + row * (size_t)r, row) != 0) {
      print_error("%s differs between rank 0 and rank %d (seen from rank %d)\n", what, r,
                  mixp_dist_rank(d));
      fail();
    }
  free(buf);
  mixp_tensor_release(all);
}

static void test_world(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  const int w = mixp_dist_world_size(d), r = mixp_dist_rank(d);
  assert_int_equal(w, expected_world());
  assert_true(r >= 0 && r < w);
  assert_true(mixp_dist_local_rank(d) >= 0 && mixp_dist_local_rank(d) < w);
  assert_true(strlen(mixp_dist_describe(d)) > 0);
  if (!mt_on_cpu()) assert_non_null(strstr(mixp_dist_describe(d), "NCCL"));
  /* The CPU backend has no device collectives: no clique is joined and its
   * tensors go through the host transport (the documented fallback). */
  if (mt_on_cpu()) assert_null(strstr(mixp_dist_describe(d), "tensors through"));
  if (transport() == MIXP_DIST_MPI) {
    assert_non_null(strstr(mixp_dist_describe(d), "MPI"));
    const char *lr = getenv("OMPI_COMM_WORLD_LOCAL_RANK");
    if (lr) assert_int_equal(mixp_dist_env_local_rank(), atoi(lr));
  }
  MT_OK(mixp_dist_barrier(d));
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

/* Rank r holds base + r + i at position i: small integers, exact in every
 * dtype, so sums, maxima and averages have exact expected values. */
static void check_reduce(mixp_session *s, mixp_dist *d, mixp_dtype dt, mixp_reduce_op op,
                         int transposed) {
  const int w = mixp_dist_world_size(d), r = mixp_dist_rank(d);
  const int64_t shape[2] = {2, 3};
  double v[6], want[6];
  for (int i = 0; i < 6; ++i) {
    v[i] = dt == MIXP_BOOL ? (double)((r + i) % 2) : 1.0 + r + i;
    double sum = 0, max = -1e300;
    for (int k = 0; k < w; ++k) {
      const double x = dt == MIXP_BOOL ? (double)((k + i) % 2) : 1.0 + k + i;
      sum += x;
      if (x > max) max = x;
    }
    want[i] = op == MIXP_REDUCE_SUM ? sum : op == MIXP_REDUCE_MAX ? max : sum / w;
  }
  mixp_tensor *t = mt_tensor(s, dt, v, shape, 2), *view = NULL;
  if (transposed) MT_OK(mixp_transpose(t, 0, 1, &view)); /* strided: written in place through it */
  MT_OK(mixp_dist_all_reduce(d, transposed ? view : t, op));
  double *got = mt_values(t);
  mt_assert_close(got, want, 6, 0.0, 0.0);
  free(got);
  mixp_tensor_release(view);
  mixp_tensor_release(t);
}

static void test_all_reduce_values(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  const mixp_dtype floats[] = {MIXP_F32, MIXP_F16, MIXP_BF16, MIXP_F64};
  const mixp_dtype ints[] = {MIXP_I32, MIXP_I64, MIXP_U8};
  for (int k = 0; k < 4; ++k)
    for (int op = 0; op < 3; ++op)
      for (int tr = 0; tr < 2; ++tr) check_reduce(s, d, floats[k], (mixp_reduce_op)op, tr);
  for (int k = 0; k < 3; ++k) {
    check_reduce(s, d, ints[k], MIXP_REDUCE_SUM, k == 0);
    check_reduce(s, d, ints[k], MIXP_REDUCE_MAX, 0);
  }
  check_reduce(s, d, MIXP_BOOL, MIXP_REDUCE_MAX, 1);
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

/* A long sum of unrelated fp32 values: the result is bit-identical on every
 * rank, and on the host path it is each element's sum in double, in rank
 * order, rounded once. */
static void test_all_reduce_large_is_identical(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  const int w = mixp_dist_world_size(d), r = mixp_dist_rank(d);
  enum { N = 100003 }; /* not a multiple of any world size here */
  double *mine = malloc(N * sizeof(double)), *other = malloc(N * sizeof(double));
  double *want = calloc(N, sizeof(double));
  for (int k = 0; k < w; ++k) {
    mt_fill(other, N, -1000.0, 1000.0, 40 + (uint64_t)k);
    for (int i = 0; i < N; ++i) {
      other[i] = (double)(float)other[i];
      want[i] += other[i];
    }
    if (k == r) memcpy(mine, other, N * sizeof(double));
  }
  const int64_t shape[1] = {N};
  mixp_tensor *t = mt_tensor(s, MIXP_F32, mine, shape, 1);
  MT_OK(mixp_dist_all_reduce(d, t, MIXP_REDUCE_SUM));
  assert_same_on_every_rank(d, t, "the sum");
  double *got = mt_values(t);
  if (mt_on_cpu()) {
    for (int i = 0; i < N; ++i) want[i] = (double)(float)want[i];
    mt_assert_close(got, want, N, 0.0, 0.0);
  } else {
    mt_assert_close(got, want, N, 1e-3, 1e-6); /* NCCL sums in fp32 in ring order */
  }
  free(got);
  free(mine);
  free(other);
  free(want);
  mixp_tensor_release(t);
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

static void test_broadcast_and_gather(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  const int w = mixp_dist_world_size(d), r = mixp_dist_rank(d), root = w - 1;
  const int64_t shape[2] = {2, 3};
  double v[6], want[6];
  for (int i = 0; i < 6; ++i) {
    v[i] = 10.0 * r + i;
    want[i] = 10.0 * root + i;
  }
  const mixp_dtype dts[] = {MIXP_F32, MIXP_BF16, MIXP_I64};
  for (int k = 0; k < 3; ++k) {
    mixp_tensor *t = mt_tensor(s, dts[k], v, shape, 2), *view = NULL;
    MT_OK(mixp_transpose(t, 0, 1, &view));
    MT_OK(mixp_dist_broadcast(d, view, root));
    double *got = mt_values(t);
    mt_assert_close(got, want, 6, 0.0, 0.0);
    free(got);
    mixp_tensor_release(view);
    mixp_tensor_release(t);
  }
  /* all_gather: [world, 2, 3], rank k's values at index k */
  mixp_tensor *t = mt_tensor(s, MIXP_F32, v, shape, 2), *all = NULL;
  MT_OK(mixp_dist_all_gather(d, t, &all));
  assert_int_equal(mixp_tensor_ndim(all), 3);
  assert_int_equal(mixp_tensor_dim(all, 0), w);
  double *got = mt_values(all);
  for (int k = 0; k < w; ++k)
    for (int i = 0; i < 6; ++i) assert_true(got[k * 6 + i] == 10.0 * k + i);
  free(got);
  mixp_tensor_release(all);
  mixp_tensor_release(t);
  MT_OK(mixp_dist_barrier(d));
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

/* ---- data parallelism: the same global batch on one process and on N -------
 * Each rank trains two replicas of a small MLP from the same start: the
 * reference on the whole global batch (as one process would) and the
 * data-parallel one on its shard, averaging gradients. Their losses must
 * agree for 50 steps within a tolerance for fp32 summation order (the only
 * difference: per-rank partial sums), and the data-parallel parameters must
 * be bit-identical on every rank after every step. */
enum { IN = 784, HIDDEN = 32, CLASSES = 10, BATCH = 16 };

typedef struct replica {
  mixp_module *l1, *l2;
  mixp_optimizer *opt;
  mixp_loader *loader;
  mixp_tensor *params[4];
} replica;

static void replica_init(replica *m, mixp_session *s, mixp_dataset *data, int64_t batch,
                         int shard, int shards) {
  MT_OK(mixp_session_set_seed(s, 77)); /* same initial weights for both replicas */
  MT_OK(mixp_linear_create(s, IN, HIDDEN, 1, MIXP_F32, &m->l1));
  MT_OK(mixp_linear_create(s, HIDDEN, CLASSES, 1, MIXP_F32, &m->l2));
  for (int i = 0; i < 4; ++i) MT_OK(mixp_module_parameter(i < 2 ? m->l1 : m->l2, i % 2, &m->params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  oo.lr = 2e-3;
  MT_OK(mixp_optimizer_create(s, m->params, 4, &oo, &m->opt));
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = batch;
  lo.seed = 9;
  lo.mean = 0.5;
  lo.std = 0.5;
  lo.shard_index = shard;
  lo.shard_count = shards;
  MT_OK(mixp_loader_create(data, &lo, &m->loader));
}

static void replica_free(replica *m) {
  for (int i = 0; i < 4; ++i) mixp_tensor_release(m->params[i]);
  mixp_loader_destroy(m->loader);
  mixp_optimizer_destroy(m->opt);
  mixp_module_destroy(m->l1);
  mixp_module_destroy(m->l2);
}

/* Forward and backward of the next batch; returns the mean loss tensor
 * (owned) and the batch size. */
static mixp_tensor *replica_backward_prepared(replica *m, mixp_dist *prepare, int64_t *samples);
static mixp_tensor *replica_backward(replica *m, int64_t *samples) {
  return replica_backward_prepared(m, NULL, samples);
}

/* ... with mixp_dist_prepare_gradients(prepare, ...) right before backward
 * when prepare is not NULL. */
static mixp_tensor *replica_backward_prepared(replica *m, mixp_dist *prepare, int64_t *samples) {
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = mixp_loader_next(m->loader, &x, &y);
  if (st == MIXP_DONE) st = mixp_loader_next(m->loader, &x, &y);
  MT_OK(st);
  const int64_t flat[2] = {-1, IN};
  mixp_tensor *f = NULL, *h = NULL, *a = NULL, *logits = NULL, *loss = NULL;
  MT_OK(mixp_reshape(x, flat, 2, &f));
  MT_OK(mixp_module_forward(m->l1, f, &h));
  MT_OK(mixp_relu(h, &a));
  MT_OK(mixp_module_forward(m->l2, a, &logits));
  MT_OK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
  MT_OK(mixp_optimizer_zero_grad(m->opt));
  *samples = mixp_tensor_dim(y, 0);
  if (prepare) MT_OK(mixp_dist_prepare_gradients(prepare, m->opt, *samples));
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor *ts[] = {x, y, f, h, a, logits};
  for (int i = 0; i < 6; ++i) mixp_tensor_release(ts[i]);
  return loss;
}

static void test_data_parallel_equals_one_process(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  const int w = mixp_dist_world_size(d), r = mixp_dist_rank(d);
  mixp_synthetic_options sy;
  mixp_synthetic_options_init(&sy);
  sy.num_samples = 1000; /* 1000 % (16 w) leaves an uneven last batch */
  sy.seed = 5;
  mixp_dataset *data = NULL;
  MT_OK(mixp_dataset_synthetic(s, &sy, &data));
  replica ref, dp;
  replica_init(&ref, s, data, (int64_t)BATCH * w, 0, 1);
  replica_init(&dp, s, data, BATCH, r, w);
  MT_OK(mixp_dist_broadcast_module(d, dp.l1));
  MT_OK(mixp_dist_broadcast_module(d, dp.l2));
  assert_int_equal(mixp_loader_num_batches(dp.loader), mixp_loader_num_batches(ref.loader));
  double worst = 0.0, first = 0.0, last = 0.0;
  for (int step = 0; step < 50; ++step) {
    int64_t n_ref = 0, n_dp = 0;
    mixp_tensor *loss_ref = replica_backward(&ref, &n_ref);
    MT_OK(mixp_optimizer_step(ref.opt));
    mixp_tensor *loss_dp = replica_backward(&dp, &n_dp);
    MT_OK(mixp_dist_average_gradients(d, dp.opt, n_dp));
    MT_OK(mixp_optimizer_step(dp.opt));
    /* The global loss: the ranks' losses weighed by their samples. */
    mixp_tensor *weighted = NULL;
    MT_OK(mixp_mul_scalar(loss_dp, (double)n_dp / (double)n_ref, &weighted));
    MT_OK(mixp_dist_all_reduce(d, weighted, MIXP_REDUCE_SUM));
    double a = 0, b = 0;
    MT_OK(mixp_tensor_item(loss_ref, &a));
    MT_OK(mixp_tensor_item(weighted, &b));
    const double rel = fabs(a - b) / fabs(a);
    if (rel > worst) worst = rel;
    if (!(rel <= 1e-4)) {
      print_error("step %d: one process %.9g, %d ranks %.9g (relative %.3g > 1e-4)\n", step, a, w, b, rel);
      fail();
    }
    if (step == 0) first = a;
    last = a;
    for (int i = 0; i < 4; ++i) assert_same_on_every_rank(d, dp.params[i], "a parameter");
    mixp_tensor_release(weighted);
    mixp_tensor_release(loss_ref);
    mixp_tensor_release(loss_dp);
  }
  assert_true(last < 0.5 * first); /* it trained */
  if (r == 0) print_message("data parallel over %d ranks: worst relative loss difference %.3g\n", w, worst);
  replica_free(&ref);
  replica_free(&dp);
  mixp_dataset_destroy(data);
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

/* ---- averaging during backward (mixp_dist_prepare_gradients) ------------------
 * Buckets of 64 bytes: the MLP's four parameters make three buckets, planned
 * from the last layer back. Armed before backward, every bucket is launched
 * inside it (all four gradients are final by its end), and the averages are
 * the same bits as those taken after backward: two replicas, one of each,
 * stay bit-identical for 20 steps. A world of one on the host transport has
 * no buckets (the average is the gradient); through NCCL even one rank
 * reduces them. */
static mixp_dist_stats dist_stats(const mixp_dist *d) {
  mixp_dist_stats st;
  memset(&st, 0xff, sizeof st);
  st.struct_size = sizeof st;
  MT_OK(mixp_dist_get_stats(d, &st));
  return st;
}

static int has_buckets(mixp_dist *d) {
  return mixp_dist_world_size(d) > 1 || !mt_on_cpu();
}

static void test_prepare_overlaps_and_matches(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist_buckets(s, 64);
  const int w = mixp_dist_world_size(d), r = mixp_dist_rank(d);
  mixp_synthetic_options sy;
  mixp_synthetic_options_init(&sy);
  sy.num_samples = 1000;
  sy.seed = 5;
  mixp_dataset *data = NULL;
  MT_OK(mixp_dataset_synthetic(s, &sy, &data));
  replica after, during;
  replica_init(&after, s, data, BATCH, r, w);
  replica_init(&during, s, data, BATCH, r, w);
  const mixp_dist_stats st0 = dist_stats(d);
  assert_int_equal(st0.gradient_averages, 0);
  assert_int_equal(st0.buckets, 0);
  assert_int_equal(st0.buckets_in_backward, 0);
  assert_int_equal(st0.bytes, 0);
  const int64_t param_bytes = (IN * HIDDEN + HIDDEN + HIDDEN * CLASSES + CLASSES) * 4;
  for (int step = 0; step < 20; ++step) {
    int64_t n_after = 0, n_during = 0;
    mixp_tensor *l1 = replica_backward(&after, &n_after);
    MT_OK(mixp_dist_average_gradients(d, after.opt, n_after));
    MT_OK(mixp_optimizer_step(after.opt));
    const mixp_dist_stats before = dist_stats(d);
    mixp_tensor *l2 = replica_backward_prepared(&during, d, &n_during);
    const mixp_dist_stats mid = dist_stats(d);
    MT_OK(mixp_dist_average_gradients(d, during.opt, n_during));
    const mixp_dist_stats end = dist_stats(d);
    MT_OK(mixp_optimizer_step(during.opt));
    assert_int_equal(n_after, n_during);
    assert_int_equal(end.gradient_averages, before.gradient_averages + 1);
    if (has_buckets(d)) {
      /* All three buckets were reduced inside backward, none after it. */
      assert_int_equal(mid.buckets - before.buckets, 3);
      assert_int_equal(mid.buckets_in_backward - before.buckets_in_backward, 3);
      assert_int_equal(end.buckets, mid.buckets);
      assert_int_equal(end.bytes - before.bytes, param_bytes);
    } else {
      assert_int_equal(end.buckets, 0);
      assert_int_equal(end.buckets_in_backward, 0);
    }
    for (int i = 0; i < 4; ++i) {
      double *a = mt_values(after.params[i]), *b = mt_values(during.params[i]);
      const int64_t n = mixp_tensor_numel(after.params[i]);
      if (memcmp(a, b, (size_t)n * sizeof *a) != 0) {
        print_error("step %d: parameter %d differs between averaging after and during backward\n", step, i);
        fail();
      }
      free(a);
      free(b);
      assert_same_on_every_rank(d, during.params[i], "a parameter");
    }
    mixp_tensor_release(l1);
    mixp_tensor_release(l2);
  }
  replica_free(&after);
  replica_free(&during);
  mixp_dataset_destroy(data);
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

/* sum(w * [1, 2, 3, 4]) for a 4-element w (owned). */
static mixp_tensor *dot_loss(mixp_session *s, mixp_tensor *w) {
  const double xv[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, shape, 1), *p = NULL, *loss = NULL;
  MT_OK(mixp_mul(w, x, &p));
  MT_OK(mixp_sum(p, NULL, 0, 0, &loss));
  mixp_tensor_release(x);
  mixp_tensor_release(p);
  return loss;
}

/* One step of dot_loss(used) with an optimizer over `used` and a parameter
 * that gets no gradient; averaged after backward, or during it (prepare). */
static void unused_step(mixp_session *s, mixp_dist *d, mixp_tensor *used, mixp_optimizer *opt, int prepare) {
  mixp_tensor *loss = dot_loss(s, used);
  MT_OK(mixp_optimizer_zero_grad(opt));
  if (prepare) MT_OK(mixp_dist_prepare_gradients(d, opt, 0));
  MT_OK(mixp_backward(loss, NULL));
  MT_OK(mixp_dist_average_gradients(d, opt, 0));
  mixp_tensor_release(loss);
}

/* Buckets are launched in their planned order only (the same collectives in
 * the same order on every rank): a bucket whose gradient backward never
 * makes holds back every bucket planned after it until the average, which
 * counts the missing gradient as zeros. */
static void test_prepare_keeps_bucket_order(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist_buckets(s, 1);
  const double wv[4] = {0.5, -0.25, 0.125, 1.0}, zeros[4] = {0, 0, 0, 0};
  for (int unused_first = 0; unused_first < 2; ++unused_first) {
    mixp_tensor *used = mt_param(s, MIXP_F32, wv, 4), *unused = mt_param(s, MIXP_F32, wv, 4);
    /* Slots are planned last to first: the slot-0 parameter's bucket comes last. */
    mixp_tensor *params[2] = {unused_first ? unused : used, unused_first ? used : unused};
    mixp_optimizer *opt = mt_sgd(s, params, 2, 0.01);
    unused_step(s, d, used, opt, 0);
    double *want = mt_grad_values(used);
    const mixp_dist_stats before = dist_stats(d);
    unused_step(s, d, used, opt, 1);
    const mixp_dist_stats end = dist_stats(d);
    double *got = mt_grad_values(used), *z = mt_grad_values(unused);
    mt_assert_close(got, want, 4, 0.0, 0.0);
    mt_assert_close(z, zeros, 4, 0.0, 0.0);
    if (has_buckets(d)) {
      assert_int_equal(end.buckets - before.buckets, 2);
      /* unused in slot 0: its bucket is last, the used one goes in backward;
       * unused in slot 1: its bucket is first and holds the other back. */
      assert_int_equal(end.buckets_in_backward - before.buckets_in_backward, unused_first ? 1 : 0);
    }
    free(want);
    free(got);
    free(z);
    mixp_optimizer_destroy(opt);
    mixp_tensor_release(used);
    mixp_tensor_release(unused);
  }
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

/* The plan's misuse: arguments, a mismatched average (the plan stays), a
 * gradient replaced after backward packed it (the average fails, the plan is
 * dropped), a plan replaced before any backward, absurd sample counts. */
static void test_prepare_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session(), *other = mt_session();
  mixp_dist *d = make_dist_buckets(s, 1);
  const double wv[4] = {0.5, -0.25, 0.125, 1.0};
  mixp_tensor *w = mt_param(s, MIXP_F32, wv, 4), *wo = mt_param(other, MIXP_F32, wv, 4);
  mixp_optimizer *opt = mt_sgd(s, &w, 1, 0.01), *opt_other = mt_sgd(other, &wo, 1, 0.01);
  MT_FAILS(mixp_dist_prepare_gradients(NULL, opt, 0), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_dist_prepare_gradients: dist");
  MT_FAILS(mixp_dist_prepare_gradients(d, NULL, 0), MIXP_ERR_INVALID_ARGUMENT,
           "mixp_dist_prepare_gradients: optimizer");
  MT_FAILS(mixp_dist_prepare_gradients(d, opt_other, 0), MIXP_ERR_DEVICE, "another session");
  const int64_t negative[] = {-1, INT64_MIN};
  for (int k = 0; k < 2; ++k)
    MT_FAILS(mixp_dist_prepare_gradients(d, opt, negative[k]), MIXP_ERR_INVALID_ARGUMENT, "local_samples");
  /* Absurd but valid sample counts: the weights stay finite (1/world each). */
  const int64_t huge[] = {(int64_t)1 << 62, INT64_MAX};
  for (int k = 0; k < 2; ++k) {
    unused_step(s, d, w, opt, 0); /* a reference gradient */
    double *want = mt_grad_values(w);
    MT_OK(mixp_optimizer_zero_grad(opt));
    mixp_tensor *loss = dot_loss(s, w);
    MT_OK(mixp_dist_prepare_gradients(d, opt, huge[k]));
    MT_OK(mixp_backward(loss, NULL));
    /* another count than the plan's: refused, and the plan stays */
    MT_FAILS(mixp_dist_average_gradients(d, opt, 3), MIXP_ERR_INVALID_ARGUMENT, "local_samples");
    MT_OK(mixp_dist_average_gradients(d, opt, huge[k]));
    double *got = mt_grad_values(w);
    mt_assert_close(got, want, 4, 0.0, 0.0);
    free(want);
    free(got);
    mixp_tensor_release(loss);
  }
  /* A gradient replaced after backward packed it. */
  {
    mixp_tensor *loss = dot_loss(s, w);
    MT_OK(mixp_optimizer_zero_grad(opt));
    MT_OK(mixp_dist_prepare_gradients(d, opt, 0));
    MT_OK(mixp_backward(loss, NULL));
    MT_OK(mixp_optimizer_zero_grad(opt));
    mixp_tensor *g = (mixp_tensor *)0x1;
    if (has_buckets(d)) {
      MT_FAILS(mixp_dist_average_gradients(d, opt, 0), MIXP_ERR_STATE, "was replaced after the backward pass");
      MT_OK(mixp_tensor_grad(w, &g));
      assert_null(g); /* the failed average wrote nothing */
    } else {
      /* No buckets, nothing packed: the average is the (missing) gradient. */
      MT_OK(mixp_dist_average_gradients(d, opt, 0));
      MT_OK(mixp_tensor_grad(w, &g));
      assert_non_null(g);
      mixp_tensor_release(g);
    }
    mixp_tensor_release(loss);
  }
  /* The plan was dropped: a plain step works again; so do a plan replaced
   * before its backward and a plan no backward took. */
  unused_step(s, d, w, opt, 0);
  MT_OK(mixp_dist_prepare_gradients(d, opt, 0));
  unused_step(s, d, w, opt, 1);
  MT_OK(mixp_dist_prepare_gradients(d, opt, 0));
  MT_OK(mixp_dist_average_gradients(d, opt, 0));
  /* stats */
  mixp_dist_stats st;
  st.struct_size = sizeof st;
  MT_FAILS(mixp_dist_get_stats(NULL, &st), MIXP_ERR_INVALID_ARGUMENT, "mixp_dist_get_stats: dist");
  MT_FAILS(mixp_dist_get_stats(d, NULL), MIXP_ERR_INVALID_ARGUMENT, "stats");
  st.struct_size = 4;
  MT_FAILS(mixp_dist_get_stats(d, &st), MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  /* A communicator destroyed with a plan armed leaves the session clean. */
  MT_OK(mixp_dist_prepare_gradients(d, opt, 0));
  mixp_dist_destroy(d);
  mixp_tensor *loss = dot_loss(s, w);
  MT_OK(mixp_backward(loss, NULL));
  mixp_tensor_release(loss);
  mixp_optimizer_destroy(opt);
  mixp_optimizer_destroy(opt_other);
  mixp_tensor_release(w);
  mixp_tensor_release(wo);
  mixp_session_destroy(other);
  mixp_session_destroy(s);
}

/* ---- overflow on one rank ---------------------------------------------------- */
/* One scaled fp16-style step of loss = sum(w * x): the last rank's gradient
 * (or loss) is poisoned with Inf when `poison` says so. */
static void scaled_step(mixp_session *s, mixp_dist *d, mixp_tensor *w, mixp_optimizer *opt,
                        mixp_grad_scaler *sc, int poison_grad, int poison_loss) {
  const int last = mixp_dist_rank(d) == mixp_dist_world_size(d) - 1;
  const double xv[4] = {1, 2, 3, 4};
  const int64_t shape[1] = {4};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, xv, shape, 1), *p = NULL, *loss = NULL, *scaled = NULL;
  MT_OK(mixp_mul(w, x, &p));
  MT_OK(mixp_sum(p, NULL, 0, 0, &loss));
  if (poison_loss && last) {
    mixp_tensor *inf_loss = NULL;
    MT_OK(mixp_mul_scalar(loss, INFINITY, &inf_loss));
    mixp_tensor_release(loss);
    loss = inf_loss;
  }
  MT_OK(mixp_optimizer_zero_grad(opt));
  MT_OK(mixp_grad_scaler_scale(sc, loss, &scaled));
  MT_OK(mixp_backward(scaled, NULL));
  MT_OK(mixp_dist_average_gradients(d, opt, 0));
  if (poison_grad && last) {
    /* After the average: only this rank sees the overflow. */
    mixp_tensor *g = NULL;
    MT_OK(mixp_tensor_grad(w, &g));
    const double bad[4] = {1, INFINITY, 1, 1};
    mixp_tensor *b = mt_tensor(s, MIXP_F32, bad, shape, 1);
    MT_OK(mixp_tensor_copy_(g, b));
    mixp_tensor_release(b);
    mixp_tensor_release(g);
  }
  MT_OK(mixp_grad_scaler_unscale(sc, opt));
  mixp_tensor *norm = NULL;
  MT_OK(mixp_clip_grad_norm(opt, 1e6, &norm));
  MT_OK(mixp_grad_scaler_step(sc, opt));
  MT_OK(mixp_grad_scaler_update(sc));
  mixp_tensor *ts[] = {x, p, loss, scaled, norm};
  for (int i = 0; i < 5; ++i) mixp_tensor_release(ts[i]);
}

static void test_overflow_on_one_rank_skips_on_all(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  const double wv[4] = {0.5, -0.25, 0.125, 1.0};
  mixp_tensor *w = mt_param(s, MIXP_F32, wv, 4);
  mixp_optimizer *opt = mt_sgd(s, &w, 1, 0.01);
  mixp_grad_scaler_options so;
  mixp_grad_scaler_options_init(&so);
  so.mode = MIXP_SCALER_DYNAMIC;
  so.init_scale = 1024;
  mixp_grad_scaler *sc = NULL;
  MT_OK(mixp_grad_scaler_create(s, &so, &sc));
  /* 1: Inf in one rank's gradient after the average -> every rank skips. */
  scaled_step(s, d, w, opt, sc, 1, 0);
  double *now = mt_values(w);
  mt_assert_close(now, wv, 4, 0.0, 0.0);
  free(now);
  double scale = 0;
  int64_t skipped = 0;
  MT_OK(mixp_grad_scaler_get_scale(sc, &scale));
  MT_OK(mixp_grad_scaler_skipped_steps(sc, &skipped));
  assert_true(scale == 512.0);
  assert_int_equal(skipped, 1);
  /* 2: Inf in one rank's loss -> the average carries it to every rank. */
  scaled_step(s, d, w, opt, sc, 0, 1);
  now = mt_values(w);
  mt_assert_close(now, wv, 4, 0.0, 0.0);
  free(now);
  MT_OK(mixp_grad_scaler_get_scale(sc, &scale));
  assert_true(scale == 256.0);
  /* 3: a clean step moves every rank's weights the same way. */
  scaled_step(s, d, w, opt, sc, 0, 0);
  now = mt_values(w);
  assert_true(fabs(now[0] - (0.5 - 0.01 * 1.0)) < 1e-6);
  free(now);
  assert_same_on_every_rank(d, w, "the weights");
  mixp_tensor *sc_t = NULL;
  MT_OK(mixp_grad_scaler_get_scale(sc, &scale));
  const int64_t one[1] = {1};
  sc_t = mt_tensor(s, MIXP_F64, &scale, one, 1);
  assert_same_on_every_rank(d, sc_t, "the loss scale");
  mixp_tensor_release(sc_t);
  mixp_grad_scaler_destroy(sc);
  mixp_optimizer_destroy(opt);
  mixp_tensor_release(w);
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

/* ---- sharded loading ----------------------------------------------------------
 * An IDX dataset whose sample i carries i in its first two pixels, so that a
 * batch says which samples it holds. */
static void put_be32(FILE *f, uint32_t v) {
  const unsigned char b[4] = {(unsigned char)(v >> 24), (unsigned char)(v >> 16), (unsigned char)(v >> 8),
                              (unsigned char)v};
  fwrite(b, 1, 4, f);
}

static mixp_dataset *numbered_dataset(mixp_session *s, int n, int tag) {
  char img[256], lab[256];
  snprintf(img, sizeof img, "/tmp/mixp_test_dist_%d_%d_%d-images", (int)getpid(), tag, n);
  snprintf(lab, sizeof lab, "/tmp/mixp_test_dist_%d_%d_%d-labels", (int)getpid(), tag, n);
  FILE *fi = fopen(img, "wb"), *fl = fopen(lab, "wb");
  assert_non_null(fi);
  assert_non_null(fl);
  put_be32(fi, 0x803);
  put_be32(fi, (uint32_t)n);
  put_be32(fi, 2);
  put_be32(fi, 2);
  put_be32(fl, 0x801);
  put_be32(fl, (uint32_t)n);
  for (int i = 0; i < n; ++i) {
    const unsigned char px[4] = {(unsigned char)(i % 256), (unsigned char)(i / 256), 0, 0};
    fwrite(px, 1, 4, fi);
    fputc(i % 10, fl);
  }
  fclose(fi);
  fclose(fl);
  mixp_dataset *d = NULL;
  MT_OK(mixp_dataset_idx_open(s, img, lab, &d));
  remove(img);
  remove(lab);
  return d;
}

static mixp_loader *numbered_loader(mixp_dataset *data, int64_t batch, int shard, int shards) {
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = batch;
  lo.seed = 3;
  lo.scale = 1.0; /* pixels as they are */
  lo.dtype = MIXP_F64;
  lo.shard_index = shard;
  lo.shard_count = shards;
  mixp_loader *l = NULL;
  MT_OK(mixp_loader_create(data, &lo, &l));
  return l;
}

/* The sample ids of the next batch (count in *n); 0 at the end of an epoch. */
static int next_ids(mixp_loader *l, int64_t *ids, int64_t *n) {
  mixp_tensor *x = NULL, *y = NULL;
  mixp_status st = mixp_loader_next(l, &x, &y);
  if (st == MIXP_DONE) return 0;
  MT_OK(st);
  *n = mixp_tensor_dim(x, 0);
  double *v = mt_values(x);
  for (int64_t i = 0; i < *n; ++i) ids[i] = (int64_t)v[i * 4] + 256 * (int64_t)v[i * 4 + 1];
  free(v);
  mixp_tensor_release(x);
  mixp_tensor_release(y);
  return 1;
}

/* Shard `shard` of `shards` over two epochs of n samples: each global batch
 * is the next stretch of the unsharded epoch order, cut into contiguous
 * parts whose sizes differ by at most one; batch counts equal
 * mixp_loader_num_batches. `part_of(g)` must return the sizes of every
 * shard's part of global batch g (all of them, for the offsets). */
typedef struct shard_walk {
  int64_t ids[2][4096];   /* per epoch: this shard's ids, in order */
  int64_t sizes[2][512];  /* per epoch and batch: this shard's batch size */
  int64_t batches[2];
} shard_walk;

static void walk_shard(mixp_dataset *data, int64_t batch, int shard, int shards, shard_walk *out) {
  mixp_loader *l = numbered_loader(data, batch, shard, shards);
  for (int e = 0; e < 2; ++e) {
    int64_t pos = 0, b = 0, n = 0;
    while (next_ids(l, out->ids[e] + pos, &n)) {
      assert_true(n >= 1);
      out->sizes[e][b++] = n;
      pos += n;
    }
    out->batches[e] = b;
    assert_int_equal(b, mixp_loader_num_batches(l));
  }
  mixp_loader_destroy(l);
}

/* Checks the shards of one process against the unsharded order. `walks`
 * holds every shard's walk (index = shard). */
static void check_shards(mixp_dataset *data, int64_t batch, int shards, shard_walk *const *walks) {
  const int64_t n = mixp_dataset_size(data);
  mixp_loader *whole = numbered_loader(data, 1, 0, 1);
  int64_t order[4096];
  for (int e = 0; e < 2; ++e) {
    int64_t k = 0, got = 0;
    while (next_ids(whole, order + k, &got)) k += got;
    assert_int_equal(k, n);
    int64_t pos = 0, taken[4096] = {0};
    for (int64_t b = 0; b < walks[0]->batches[e]; ++b) {
      int64_t global = 0, lo = walks[0]->sizes[e][b], hi = lo;
      for (int r = 0; r < shards; ++r) {
        assert_int_equal(walks[r]->batches[e], walks[0]->batches[e]);
        const int64_t sz = walks[r]->sizes[e][b];
        lo = sz < lo ? sz : lo;
        hi = sz > hi ? sz : hi;
        global += sz;
      }
      assert_true(hi - lo <= 1);
      if (b + 1 < walks[0]->batches[e]) assert_int_equal(global, batch * shards);
      int64_t at = pos;
      for (int r = 0; r < shards; ++r) {
        int64_t start = 0;
        for (int64_t bb = 0; bb < b; ++bb) start += walks[r]->sizes[e][bb];
        for (int64_t i = 0; i < walks[r]->sizes[e][b]; ++i) {
          const int64_t id = walks[r]->ids[e][start + i];
          assert_int_equal(id, order[at++]);
          taken[id]++;
        }
      }
      pos += global;
    }
    assert_int_equal(pos, n);
    for (int64_t i = 0; i < n; ++i) assert_int_equal(taken[i], 1); /* every sample once */
  }
  mixp_loader_destroy(whole);
}

/* In one process: every shard count from 1 to 4 over sizes that leave no
 * remainder, a remainder, and a remainder smaller than the shard count
 * (which joins the batch before it). */
static void test_sharded_loader_in_one_process(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  const int sizes[] = {96, 97, 101, 3};
  static shard_walk walks[4];
  for (int k = 0; k < 4; ++k) {
    mixp_dataset *data = numbered_dataset(s, sizes[k], 0);
    for (int shards = 1; shards <= (sizes[k] < 4 ? sizes[k] : 4); ++shards) {
      shard_walk *w[4];
      for (int r = 0; r < shards; ++r) {
        walk_shard(data, 8, r, shards, &walks[r]);
        w[r] = &walks[r];
      }
      check_shards(data, 8, shards, w);
    }
    mixp_dataset_destroy(data);
  }
  mixp_session_destroy(s);
}

/* Across ranks: each rank walks its own shard; rank 0 gathers the walks. */
static void test_sharded_loader_across_ranks(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  const int w = mixp_dist_world_size(d), r = mixp_dist_rank(d);
  static shard_walk mine, all[8];
  assert_true(w <= 8);
  const int sizes[] = {97, 101};
  for (int k = 0; k < 2; ++k) {
    mixp_dataset *data = numbered_dataset(s, sizes[k], r + 1);
    walk_shard(data, 8, r, w, &mine);
    /* The walk travels as I64 [sizeof / 8] through all_gather. */
    const int64_t words = (int64_t)(sizeof mine / sizeof(int64_t));
    mixp_tensor *t = NULL, *g = NULL;
    MT_OK(mixp_tensor_from_host(s, &mine, sizeof mine, MIXP_I64, &words, 1, &t));
    MT_OK(mixp_dist_all_gather(d, t, &g));
    MT_OK(mixp_tensor_to_host(g, all, sizeof mine * (size_t)w));
    shard_walk *walks[8];
    for (int i = 0; i < w; ++i) walks[i] = &all[i];
    check_shards(data, 8, w, walks);
    mixp_tensor_release(t);
    mixp_tensor_release(g);
    mixp_dataset_destroy(data);
  }
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

static void test_loader_shard_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dataset *data = numbered_dataset(s, 3, 9);
  mixp_loader_options lo;
  mixp_loader *l = (mixp_loader *)0x1;
  const int bad_counts[] = {0, -1, (1 << 20) + 1, INT_MAX, INT_MIN};
  for (int k = 0; k < 5; ++k) {
    mixp_loader_options_init(&lo);
    lo.shard_count = bad_counts[k];
    MT_FAILS(mixp_loader_create(data, &lo, &l), MIXP_ERR_INVALID_ARGUMENT, "shard_count");
  }
  const int bad_index[] = {-1, 4, INT_MAX, INT_MIN};
  for (int k = 0; k < 4; ++k) {
    mixp_loader_options_init(&lo);
    lo.shard_count = 4;
    lo.shard_index = bad_index[k];
    MT_FAILS(mixp_loader_create(data, &lo, &l), MIXP_ERR_INVALID_ARGUMENT, "shard_index");
  }
  /* 3 samples cannot give 4 shards a sample each, unless the tail is dropped */
  mixp_loader_options_init(&lo);
  lo.shard_count = 4;
  lo.shard_index = 3;
  MT_FAILS(mixp_loader_create(data, &lo, &l), MIXP_ERR_INVALID_ARGUMENT, "fewer than options->shard_count");
  assert_ptr_equal(l, (mixp_loader *)0x1); /* untouched on failure */
  lo.drop_last = 1;
  MT_OK(mixp_loader_create(data, &lo, &l));
  assert_int_equal(mixp_loader_num_batches(l), 0);
  mixp_loader_destroy(l);
  /* A 0.4-sized struct (before the shard fields) reads as unsharded. */
  mixp_loader_options_init(&lo);
  lo.struct_size = (uint32_t)offsetof(mixp_loader_options, shard_index);
  lo.shard_count = 99; /* beyond the old struct: ignored */
  lo.batch_size = 2;
  MT_OK(mixp_loader_create(data, &lo, &l));
  assert_int_equal(mixp_loader_num_batches(l), 2);
  mixp_loader_destroy(l);
  mixp_dataset_destroy(data);
  mixp_session_destroy(s);
}

/* ---- models, numerics, misuse ------------------------------------------------- */
static void test_broadcast_module(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  MT_OK(mixp_session_set_seed(s, 100 + (uint64_t)mixp_dist_rank(d))); /* different on every rank */
  mixp_module *bn = NULL, *lin = NULL;
  MT_OK(mixp_linear_create(s, 5, 3, 1, MIXP_F32, &lin));
  MT_OK(mixp_batchnorm2d_create(s, 3, 1e-5, 0.1, 1, MIXP_F32, &bn));
  MT_OK(mixp_dist_broadcast_module(d, lin));
  MT_OK(mixp_dist_broadcast_module(d, bn));
  for (int i = 0; i < mixp_module_num_parameters(lin); ++i) {
    mixp_tensor *p = NULL;
    MT_OK(mixp_module_parameter(lin, i, &p));
    assert_same_on_every_rank(d, p, mixp_module_parameter_name(lin, i));
    assert_int_equal(mixp_tensor_requires_grad(p), 1);
    mixp_tensor_release(p);
  }
  for (int i = 0; i < mixp_module_num_buffers(bn); ++i) {
    mixp_tensor *b = NULL;
    MT_OK(mixp_module_buffer(bn, i, &b));
    assert_same_on_every_rank(d, b, mixp_module_buffer_name(bn, i));
    mixp_tensor_release(b);
  }
  mixp_module_destroy(lin);
  mixp_module_destroy(bn);
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

static void test_numerics_report_names_rank(void **state) {
  (void)state;
  mixp_session *s = mt_session();
  mixp_dist *d = make_dist(s);
  MT_OK(mixp_session_set_numerics_check(s, MIXP_NUMERICS_ERROR));
  const double v[2] = {-1.0, 2.0};
  const int64_t shape[1] = {2};
  mixp_tensor *x = mt_tensor(s, MIXP_F32, v, shape, 1), *y = NULL;
  char want[64];
  snprintf(want, sizeof want, "on rank %d", mixp_dist_rank(d));
  MT_FAILS(mixp_log(x, &y), MIXP_ERR_NUMERIC, want);
  mixp_tensor_release(x);
  mixp_dist_destroy(d);
  /* Without a communicator the report names no rank. */
  x = mt_tensor(s, MIXP_F32, v, shape, 1);
  assert_int_equal(mixp_log(x, &y), MIXP_ERR_NUMERIC);
  assert_null(strstr(mixp_last_error(), "on rank"));
  mixp_tensor_release(x);
  mixp_session_destroy(s);
}

static void test_misuse(void **state) {
  (void)state;
  mixp_session *s = mt_session(), *other = mt_session();
  mixp_dist *d = make_dist(s);
  mixp_dist *out = (mixp_dist *)0x1;
  mixp_dist_options o;
  /* create */
  MT_FAILS(mixp_dist_create(NULL, NULL, &out), MIXP_ERR_INVALID_ARGUMENT, "mixp_dist_create: session");
  MT_FAILS(mixp_dist_create(other, NULL, NULL), MIXP_ERR_INVALID_ARGUMENT, "out");
  MT_FAILS(mixp_dist_create(s, NULL, &out), MIXP_ERR_STATE, "already has a communicator");
  mixp_dist_options_init(&o);
  o.struct_size = 3;
  MT_FAILS(mixp_dist_create(other, &o, &out), MIXP_ERR_INVALID_ARGUMENT, "struct_size");
  mixp_dist_options_init(&o);
  o.transport = (mixp_dist_transport)7;
  MT_FAILS(mixp_dist_create(other, &o, &out), MIXP_ERR_INVALID_ARGUMENT, "transport");
  const int64_t bad_buckets[] = {0, -1, (int64_t)1 << 62, INT64_MAX, INT64_MIN};
  for (int k = 0; k < 5; ++k) {
    mixp_dist_options_init(&o);
    o.bucket_bytes = bad_buckets[k];
    MT_FAILS(mixp_dist_create(other, &o, &out), MIXP_ERR_INVALID_ARGUMENT, "bucket_bytes");
  }
  assert_ptr_equal(out, (mixp_dist *)0x1);
  mixp_dist_options_init(NULL);
  /* queries of NULL */
  assert_int_equal(mixp_dist_rank(NULL), -1);
  assert_int_equal(mixp_dist_world_size(NULL), -1);
  assert_int_equal(mixp_dist_local_rank(NULL), -1);
  assert_string_equal(mixp_dist_describe(NULL), "");
  mixp_dist_destroy(NULL);
  /* collectives */
  const double v[3] = {1, 2, 3};
  const int64_t shape[1] = {3};
  mixp_tensor *t = mt_tensor(s, MIXP_F32, v, shape, 1), *elsewhere = mt_tensor(other, MIXP_F32, v, shape, 1);
  mixp_tensor *ints = mt_tensor(s, MIXP_I32, v, shape, 1), *bools = mt_tensor(s, MIXP_BOOL, v, shape, 1);
  mixp_tensor *g = (mixp_tensor *)0x1;
  MT_FAILS(mixp_dist_all_reduce(NULL, t, MIXP_REDUCE_SUM), MIXP_ERR_INVALID_ARGUMENT, "dist is NULL");
  MT_FAILS(mixp_dist_all_reduce(d, NULL, MIXP_REDUCE_SUM), MIXP_ERR_INVALID_ARGUMENT, "tensor");
  MT_FAILS(mixp_dist_all_reduce(d, elsewhere, MIXP_REDUCE_SUM), MIXP_ERR_DEVICE, "another session");
  MT_FAILS(mixp_dist_all_reduce(d, t, (mixp_reduce_op)3), MIXP_ERR_INVALID_ARGUMENT, "op");
  MT_FAILS(mixp_dist_all_reduce(d, t, (mixp_reduce_op)-1), MIXP_ERR_INVALID_ARGUMENT, "op");
  MT_FAILS(mixp_dist_all_reduce(d, ints, MIXP_REDUCE_AVG), MIXP_ERR_DTYPE, "float");
  MT_FAILS(mixp_dist_all_reduce(d, bools, MIXP_REDUCE_SUM), MIXP_ERR_DTYPE, "bool");
  const int bad_roots[] = {-1, mixp_dist_world_size(d), INT_MAX, INT_MIN};
  for (int k = 0; k < 4; ++k)
    MT_FAILS(mixp_dist_broadcast(d, t, bad_roots[k]), MIXP_ERR_INVALID_ARGUMENT, "root");
  MT_FAILS(mixp_dist_broadcast(d, NULL, 0), MIXP_ERR_INVALID_ARGUMENT, "tensor");
  MT_FAILS(mixp_dist_all_gather(d, t, NULL), MIXP_ERR_INVALID_ARGUMENT, "out");
  MT_FAILS(mixp_dist_all_gather(NULL, t, &g), MIXP_ERR_INVALID_ARGUMENT, "dist");
  const int64_t eight[MIXP_MAX_DIMS] = {1, 1, 1, 1, 1, 1, 1, 1};
  mixp_tensor *deep = NULL;
  MT_OK(mixp_tensor_zeros(s, MIXP_F32, eight, MIXP_MAX_DIMS, &deep));
  MT_FAILS(mixp_dist_all_gather(d, deep, &g), MIXP_ERR_SHAPE, "dimensions");
  assert_ptr_equal(g, (mixp_tensor *)0x1);
  MT_FAILS(mixp_dist_barrier(NULL), MIXP_ERR_INVALID_ARGUMENT, "dist");
  /* the failed calls changed nothing */
  double *now = mt_values(t);
  mt_assert_close(now, v, 3, 0.0, 0.0);
  free(now);
  /* data parallelism */
  mixp_module *lin = NULL;
  MT_OK(mixp_linear_create(other, 2, 2, 1, MIXP_F32, &lin));
  MT_FAILS(mixp_dist_broadcast_module(d, NULL), MIXP_ERR_INVALID_ARGUMENT, "module");
  MT_FAILS(mixp_dist_broadcast_module(d, lin), MIXP_ERR_DEVICE, "another session");
  MT_FAILS(mixp_dist_broadcast_module(NULL, lin), MIXP_ERR_INVALID_ARGUMENT, "dist");
  mixp_tensor *p = mt_param(other, MIXP_F32, v, 3);
  mixp_optimizer *opt_other = mt_sgd(other, &p, 1, 0.1);
  mixp_tensor *q = mt_param(s, MIXP_F32, v, 3);
  mixp_optimizer *opt = mt_sgd(s, &q, 1, 0.1);
  MT_FAILS(mixp_dist_average_gradients(d, NULL, 0), MIXP_ERR_INVALID_ARGUMENT, "optimizer");
  MT_FAILS(mixp_dist_average_gradients(d, opt_other, 0), MIXP_ERR_DEVICE, "another session");
  const int64_t bad_samples[] = {-1, INT64_MIN};
  for (int k = 0; k < 2; ++k)
    MT_FAILS(mixp_dist_average_gradients(d, opt, bad_samples[k]), MIXP_ERR_INVALID_ARGUMENT, "local_samples");
  /* A parameter without a gradient is averaged as zeros and gets one. */
  MT_OK(mixp_dist_average_gradients(d, opt, 0));
  mixp_tensor *grad = NULL;
  MT_OK(mixp_tensor_grad(q, &grad));
  assert_non_null(grad);
  double *gv = mt_values(grad);
  const double zeros[3] = {0, 0, 0};
  mt_assert_close(gv, zeros, 3, 0.0, 0.0);
  free(gv);
  mixp_tensor_release(grad);
  /* A destroyed communicator: its session can take a new one. */
  mixp_dist_destroy(d);
  d = make_dist(s);
  mixp_dist_destroy(d);
  mixp_tensor *ts[] = {t, elsewhere, ints, bools, deep, p, q};
  for (int i = 0; i < 7; ++i) mixp_tensor_release(ts[i]);
  mixp_optimizer_destroy(opt);
  mixp_optimizer_destroy(opt_other);
  mixp_module_destroy(lin);
  mixp_session_destroy(other);
  mixp_session_destroy(s);
}

/* Without MPI (here: a plugin path that is not a plugin), asking for MPI is
 * MIXP_ERR_UNSUPPORTED naming what is missing. Only where this process has
 * not loaded the real plugin already (the single-process runs). */
static void test_mpi_unavailable(void **state) {
  (void)state;
  if (transport() != MIXP_DIST_SINGLE) {
    print_message("[  SKIPPED ] runs in the single-process suite\n");
    skip();
  }
  mixp_session *s = mt_session();
  setenv("MIXP_MPI_PLUGIN", MIXP_TEST_SOURCE_DIR "/tests/c/test_dist.c", 1);
  mixp_dist_options o;
  mixp_dist_options_init(&o);
  mixp_dist *d = (mixp_dist *)0x1;
  mixp_status st = mixp_dist_create(s, &o, &d);
  unsetenv("MIXP_MPI_PLUGIN");
  assert_int_equal(st, MIXP_ERR_UNSUPPORTED);
  assert_non_null(strstr(mixp_last_error(), "mixp_dist_create: MPI transport"));
  assert_non_null(strstr(mixp_last_error(), "cannot be loaded"));
  assert_ptr_equal(d, (mixp_dist *)0x1);
  /* the session is still free for a communicator */
  o.transport = MIXP_DIST_SINGLE;
  MT_OK(mixp_dist_create(s, &o, &d));
  mixp_dist_destroy(d);
  mixp_session_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_world),
      cmocka_unit_test(test_all_reduce_values),
      cmocka_unit_test(test_all_reduce_large_is_identical),
      cmocka_unit_test(test_broadcast_and_gather),
      cmocka_unit_test(test_data_parallel_equals_one_process),
      cmocka_unit_test(test_prepare_overlaps_and_matches),
      cmocka_unit_test(test_prepare_keeps_bucket_order),
      cmocka_unit_test(test_prepare_misuse),
      cmocka_unit_test(test_overflow_on_one_rank_skips_on_all),
      cmocka_unit_test(test_sharded_loader_in_one_process),
      cmocka_unit_test(test_sharded_loader_across_ranks),
      cmocka_unit_test(test_loader_shard_misuse),
      cmocka_unit_test(test_broadcast_module),
      cmocka_unit_test(test_numerics_report_names_rank),
      cmocka_unit_test(test_misuse),
      cmocka_unit_test(test_mpi_unavailable),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
