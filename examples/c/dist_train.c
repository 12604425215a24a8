/* Data-parallel mixed-precision training through the public C API: one
 * process per rank (`mpirun -np 2 ./dist_train`), each training a replica
 * of a zoo MLP in fp16 (O2, fp32 master weights, dynamic loss scale) on its
 * shard of every global batch; the gradients are averaged before every
 * step, so the replicas stay bit-identical, which the program checks at
 * the end. Started without mpirun it is a world of one. Quoted in
 * docs/distributed.md; built as build/tools/mixp-example-dist and run by
 * the test suite under mpirun.
 *   dist_train [cpu|cuda] [checkpoint.safetensors]
 * Build: cc dist_train.c $(pkg-config --cflags --libs mixp) */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <mixp/mixp.h>

/* Every failure names the function, the argument and what was wrong. */
#define CHECK(call)                                                          \
  do {                                                                       \
    mixp_status st_ = (call);                                                \
    if (st_ != MIXP_OK) {                                                    \
      fprintf(stderr, "%s failed (%s): %s\n", #call, mixp_status_string(st_), \
              mixp_last_error());                                            \
      return 1;                                                              \
    }                                                                        \
  } while (0)

/* *same: whether every rank's copy of every parameter equals rank 0's, bit
 * for bit. Returns 0, or 1 when a call fails. */
static int replicas_agree(mixp_dist *d, mixp_module *net, int *same) {
  *same = 1;
  /* <doc:replicas-agree> */
  for (int i = 0; i < mixp_module_num_parameters(net); ++i) {
    mixp_tensor *p, *all;
    CHECK(mixp_module_parameter(net, i, &p));
    CHECK(mixp_dist_all_gather(d, p, &all)); /* [world, shape...]: rank r at index r */
    const size_t bytes = (size_t)mixp_tensor_numel(p) * mixp_dtype_size(mixp_tensor_dtype(p));
    const int world = mixp_dist_world_size(d);
    unsigned char *host = malloc(bytes * (size_t)world);
    if (!host) return 1;
    CHECK(mixp_tensor_to_host(all, host, bytes * (size_t)world));
    for (int r = 1; r < world; ++r) *same &= memcmp(host, host + bytes * (size_t)r, bytes) == 0;
    free(host);
    mixp_tensor_release(all);
    mixp_tensor_release(p);
  }
  /* </doc:replicas-agree> */
  return 0;
}

int main(int argc, char **argv) {
  const int cuda = argc > 1 && strcmp(argv[1], "cuda") == 0;
  const char *checkpoint = argc > 2 ? argv[2] : NULL;

  /* <doc:setup> */
  /* One session per rank; with CUDA, one GPU per rank: the launcher's local
   * rank (its index on this host) picks it, before any session exists. */
  char device[32] = "cpu";
  if (cuda) snprintf(device, sizeof device, "cuda:%d", mixp_dist_env_local_rank());
  mixp_session_options sopt;
  mixp_session_options_init(&sopt);
  sopt.device = device;
  sopt.seed = 1; /* the same seed on every rank (stochastic rounding, dropout) */
  mixp_session *s;
  CHECK(mixp_session_create(&sopt, &s));

  /* Join the ranks of `mpirun -np N` (alone: a world of one). */
  mixp_dist *d;
  CHECK(mixp_dist_create(s, NULL, &d));
  const int rank = mixp_dist_rank(d), world = mixp_dist_world_size(d);
  if (rank == 0) printf("%s\n", mixp_dist_describe(d));

  /* Every rank builds the model, then takes rank 0's weights: before
   * mixp_amp_decorate(), which copies them into the fp32 masters. */
  mixp_module *net;
  CHECK(mixp_model_create(s, "mlp in=784 hidden=64 classes=10", &net));
  CHECK(mixp_dist_broadcast_module(d, net));
  mixp_tensor *params[16];
  const int np = mixp_module_num_parameters(net);
  if (np < 0 || np > 16) return 1;
  for (int i = 0; i < np; ++i) CHECK(mixp_module_parameter(net, i, &params[i]));
  mixp_optimizer_options oo;
  mixp_optimizer_options_init(&oo, MIXP_OPTIM_ADAMW);
  mixp_optimizer *opt;
  CHECK(mixp_optimizer_create(s, params, np, &oo, &opt));
  for (int i = 0; i < np; ++i) mixp_tensor_release(params[i]);
  mixp_decorate_options deco;
  mixp_decorate_options_init(&deco);
  deco.dtype = MIXP_F16; /* fp16 parameters, fp32 masters in the optimizer */
  CHECK(mixp_amp_decorate(net, opt, &deco));

  /* The same dataset and shuffle seed everywhere; each rank's loader yields
   * its contiguous part of every global batch of world * 32 samples. */
  mixp_synthetic_options so;
  mixp_synthetic_options_init(&so);
  so.num_samples = 2000;
  mixp_dataset *train;
  CHECK(mixp_dataset_synthetic(s, &so, &train));
  mixp_loader_options lo;
  mixp_loader_options_init(&lo);
  lo.batch_size = 32; /* per rank */
  lo.seed = 7;
  lo.shard_index = rank;
  lo.shard_count = world;
  mixp_loader *loader;
  CHECK(mixp_loader_create(train, &lo, &loader));
  /* </doc:setup> */

  mixp_autocast_options ac;
  mixp_autocast_options_init(&ac);
  ac.level = MIXP_AMP_O2;
  ac.dtype = MIXP_F16;
  mixp_grad_scaler_options gso;
  mixp_grad_scaler_options_init(&gso);
  gso.mode = MIXP_SCALER_DYNAMIC;
  gso.init_scale = 1e9; /* far too high: the first steps overflow, on every rank at once */
  mixp_grad_scaler *scaler;
  CHECK(mixp_grad_scaler_create(s, &gso, &scaler));

  int skipped = 0;
  for (int epoch = 1; epoch <= 3; ++epoch) {
    mixp_tensor *x, *y;
    double loss_sum = 0, samples = 0;
    while (mixp_loader_next(loader, &x, &y) == MIXP_OK) {
      /* <doc:step> */
      mixp_tensor *logits, *loss, *scaled;
      CHECK(mixp_optimizer_zero_grad(opt));
      CHECK(mixp_autocast_push(s, &ac));
      CHECK(mixp_module_forward(net, x, &logits));
      CHECK(mixp_cross_entropy(logits, y, MIXP_REDUCTION_MEAN, MIXP_IGNORE_INDEX_DEFAULT, &loss));
      CHECK(mixp_autocast_pop(s));
      CHECK(mixp_grad_scaler_scale(scaler, loss, &scaled));
      const int64_t b = mixp_tensor_dim(y, 0);             /* this rank's samples */
      CHECK(mixp_dist_prepare_gradients(d, opt, b));       /* average while backward runs */
      CHECK(mixp_backward(scaled, NULL));                  /* this rank's (scaled) gradients */
      CHECK(mixp_dist_average_gradients(d, opt, b));       /* the global batch's gradients */
      CHECK(mixp_grad_scaler_unscale(scaler, opt));        /* Inf/NaN: skip flag, agreed by MAX */
      CHECK(mixp_clip_grad_norm(opt, 1.0, NULL));          /* same gradients: same norm */
      CHECK(mixp_grad_scaler_step(scaler, opt));           /* every rank steps, or none does */
      CHECK(mixp_grad_scaler_update(scaler));              /* same scale on every rank */
      /* </doc:step> */
      int found_inf;
      CHECK(mixp_grad_scaler_found_inf(scaler, &found_inf));
      skipped += found_inf;
      /* <doc:global-loss> */
      /* The global batch's loss: the ranks' sums of loss * samples, summed. */
      double v[2];
      CHECK(mixp_tensor_item(loss, &v[0]));
      v[0] *= (double)b;
      v[1] = (double)b;
      const int64_t two[1] = {2};
      mixp_tensor *sums;
      CHECK(mixp_tensor_from_host(s, v, sizeof v, MIXP_F64, two, 1, &sums));
      CHECK(mixp_dist_all_reduce(d, sums, MIXP_REDUCE_SUM)); /* same bits on every rank */
      CHECK(mixp_tensor_to_host(sums, v, sizeof v));
      mixp_tensor_release(sums);
      /* </doc:global-loss> */
      loss_sum += v[0], samples += v[1];
      mixp_tensor *tmp[] = {x, y, logits, loss, scaled};
      for (int i = 0; i < 5; ++i) mixp_tensor_release(tmp[i]);
    }
    double scale;
    CHECK(mixp_grad_scaler_get_scale(scaler, &scale));
    if (rank == 0)
      printf("epoch %d: mean loss %.4f over %.0f samples, loss scale %g, skipped steps so far %d\n", epoch,
             loss_sum / samples, samples, scale, skipped);
  }

  if (checkpoint) {
    /* <doc:checkpoint> */
    /* The replicas are identical: rank 0 writes, the others wait for the
     * file (every rank would pass the same spec to mixp_state_load). */
    mixp_state_spec spec;
    mixp_state_spec_init(&spec);
    spec.modules = &net;
    spec.num_modules = 1;
    spec.optimizers = &opt;
    spec.num_optimizers = 1;
    spec.scalers = &scaler;
    spec.num_scalers = 1;
    spec.loaders = &loader;
    spec.num_loaders = 1;
    if (rank == 0) CHECK(mixp_state_save(s, checkpoint, &spec));
    CHECK(mixp_dist_barrier(d));
    /* </doc:checkpoint> */
    if (rank == 0) printf("saved %s\n", checkpoint);
  }

  int same = 0;
  if (replicas_agree(d, net, &same) != 0) return 1;
  if (rank == 0)
    printf("%d rank%s: parameters %s\n", world, world == 1 ? "" : "s", same ? "bit-identical on every rank" : "DIFFER");

  mixp_loader_destroy(loader);
  mixp_grad_scaler_destroy(scaler);
  mixp_optimizer_destroy(opt);
  mixp_module_destroy(net);
  mixp_dataset_destroy(train);
  mixp_dist_destroy(d); /* collective; the last communicator finalises MPI */
  mixp_session_destroy(s);
  return same ? 0 : 1;
}
