/* --graph: the training step captured once and replayed (mixp_graph_*).
 * The first step runs eagerly (it warms up the optimizer's state); the
 * second is captured on static input tensors, and every later batch of the
 * same shape is copied into them and replayed. A batch of another shape (the
 * short last batch of an epoch) runs eagerly. The step reads nothing on the
 * host while captured: the loss is read after it, from the tensor the
 * replays rewrite. */
#include <string.h>

#include "mixp-train.h"

static int same_shape(const mixp_tensor *a, const mixp_tensor *b) {
  if (mixp_tensor_dtype(a) != mixp_tensor_dtype(b) || mixp_tensor_ndim(a) != mixp_tensor_ndim(b)) return 0;
  for (int i = 0; i < mixp_tensor_ndim(a); ++i)
    if (mixp_tensor_dim(a, i) != mixp_tensor_dim(b, i)) return 0;
  return 1;
}

static mixp_tensor *zeros_like(mixp_session *s, const mixp_tensor *x) {
  int64_t shape[8];
  const int nd = mixp_tensor_ndim(x);
  for (int i = 0; i < nd && i < 8; ++i) shape[i] = mixp_tensor_dim(x, i);
  mixp_tensor *z = NULL;
  CHECK(mixp_tensor_zeros(s, mixp_tensor_dtype(x), shape, nd, &z));
  return z;
}

/* train_step's step without its host reads; returns the loss (owned). */
static mixp_tensor *capturable_step(trainer *t, const mixp_tensor *x, const mixp_tensor *y) {
  CHECK(mixp_optimizer_zero_grad(t->opt));
  if (t->amp_on) CHECK(mixp_autocast_push(t->s, &t->autocast));
  mixp_tensor *logits = model_forward(t->m, x);
  mixp_tensor *loss = model_loss(t->m, logits, y, 1);
  if (t->amp_on) CHECK(mixp_autocast_pop(t->s));
  mixp_tensor *scaled = NULL;
  CHECK(mixp_grad_scaler_scale(t->scaler, loss, &scaled));
  CHECK(mixp_backward(scaled, NULL));
  if (t->a->clip_norm > 0) {
    CHECK(mixp_grad_scaler_unscale(t->scaler, t->opt));
    CHECK(mixp_clip_grad_norm(t->opt, t->a->clip_norm, NULL));
  }
  CHECK(mixp_grad_scaler_step(t->scaler, t->opt));
  CHECK(mixp_grad_scaler_update(t->scaler));
  mixp_tensor_release(scaled);
  mixp_tensor_release(logits);
  return loss;
}

int graph_step(trainer *t, const mixp_tensor *x, const mixp_tensor *y, double *loss) {
  graph_run *g = &t->graph;
  if (t->p.steps == 0) return 0; /* the eager warm-up step */
  if (g->graph && (!same_shape(x, g->x) || !same_shape(y, g->y))) return 0;
  if (!g->x) {
    g->x = zeros_like(t->s, x);
    g->y = zeros_like(t->s, y);
  }
  /* <doc:graph> */
  CHECK(mixp_tensor_copy_(g->x, x)); /* refill the static inputs in place */
  CHECK(mixp_tensor_copy_(g->y, y));
  if (!g->graph) {
    CHECK(mixp_graph_capture_begin(t->s));
    g->loss = capturable_step(t, g->x, g->y); /* runs, and is recorded */
    CHECK(mixp_graph_capture_end(t->s, &g->graph));
  } else {
    CHECK(mixp_graph_replay(g->graph)); /* rewrites g->loss, the gradients, ... */
  }
  CHECK(mixp_tensor_item(g->loss, loss)); /* host reads after the step, not in it */
  /* </doc:graph> */
  return 1;
}

void graph_release(trainer *t) {
  graph_run *g = &t->graph;
  mixp_graph_destroy(g->graph);
  mixp_tensor_release(g->x);
  mixp_tensor_release(g->y);
  mixp_tensor_release(g->loss);
  memset(g, 0, sizeof *g);
}
