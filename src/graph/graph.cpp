// Capture, replay and the graph's memory (see graph.hpp).
#include "graph/graph.hpp"

#include <algorithm>

#include "core/error.hpp"

mixp_graph::~mixp_graph() {
  magic = 0;
  for (const mixp::GraphMemory::Block &b : session->graphs.remove(&rec.memory))
    session->backend->deallocate(b.p, b.n);
}

namespace mixp::graph {
namespace {

Recorder *recorder_of(Session *s) noexcept { return static_cast<Recorder *>(s->capture); }

// Ends the recording: the real backend is the session's again.
Recording stop(Session *s) {
  Recording r;
  std::unique_ptr<Backend> rec = std::move(s->backend);
  s->backend = recorder_of(s)->finish(&r);
  s->capture = nullptr;
  return r;
}

void free_released(Session *s, const Recording &r) noexcept {
  for (const GraphMemory::Block &b : r.memory.blocks)
    if (!b.held) s->backend->deallocate(b.p, b.n);
}

// A block made before the capture, released during it, that a call used.
bool uses_released_input(const Recording &r) {
  const GraphMemory &m = r.memory;
  for (const char *p : r.released_inputs) {
    auto b = std::lower_bound(m.blocks.begin(), m.blocks.end(), p,
                              [](const GraphMemory::Block &x, const char *q) { return x.p < q; });
    auto t = std::lower_bound(m.touched.begin(), m.touched.end(), p);
    if (t != m.touched.end() && *t < p + b->n) return true;
  }
  return false;
}

}  // namespace

Graph *check_graph(const mixp_graph *g, const char *fn, const char *arg) {
  if (!g) fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is NULL");
  if (g->magic != Graph::kMagic)
    fail(MIXP_ERR_INVALID_ARGUMENT, fn, ": ", arg, " is not a live mixp_graph (destroyed?)");
  return const_cast<Graph *>(g);
}

void begin(Session *s, const char *fn) {
  if (s->capture) fail(MIXP_ERR_STATE, fn, ": the session is capturing a step already (call mixp_graph_capture_end first)");
  if (s->device != "cpu")
    fail(MIXP_ERR_UNSUPPORTED, fn, ": device ", s->device,
         " cannot capture a step yet: only the cpu records and replays one (CUDA graph capture is not implemented)");
  if (s->dist) fail(MIXP_ERR_UNSUPPORTED, fn, ": the session has a communicator; data-parallel steps cannot be captured");
  if (s->numerics != MIXP_NUMERICS_OFF)
    fail(MIXP_ERR_STATE, fn, ": the numerics checker is on (it reads every op's output on the host); turn it off to capture");
  if (s->trace) fail(MIXP_ERR_STATE, fn, ": an op trace is being recorded (it reads values on the host); end it first");
  if (s->backward_depth > 0 || s->checkpoint)
    fail(MIXP_ERR_STATE, fn, ": called inside a backward pass or a checkpoint region");
  auto rec = std::make_unique<Recorder>(std::move(s->backend), s->seed, s->rng_offset);
  s->capture = rec.get();
  s->backend = std::move(rec);
}

Graph *end(Session *s, const char *fn) {
  if (!s->capture)
    fail(MIXP_ERR_STATE, fn, ": the session is not capturing a step (call mixp_graph_capture_begin on it first)");
  auto g = std::make_unique<Graph>();  // before anything changes
  Recorder &r = *recorder_of(s);
  g->session = SessionRef::share(s);
  g->rng_begin = r.rng_begin();
  g->rng_used = s->rng_offset - r.rng_begin();
  g->seed = r.seed();
  g->rec = stop(s);
  if (uses_released_input(g->rec)) {
    free_released(s, g->rec);
    g->rec = Recording{};
    fail(MIXP_ERR_STATE, fn,
         ": the captured step used a tensor made before the capture and released it during the capture (a gradient "
         "accumulated into: call mixp_optimizer_zero_grad in the step; an input released before the end?); a replay "
         "would read a value that is gone, so the capture was aborted");
  }
  s->graphs.add(&g->rec.memory);
  return g.release();
}

void abort(Session *s) noexcept {
  if (!s->capture) return;
  try {
    Recording r = stop(s);
    free_released(s, r);
  } catch (...) {
  }
}

void replay(Graph &g, const char *fn) {
  Session *s = check_session(g.session.get(), fn, "the graph's session");
  if (s->capture) fail(MIXP_ERR_STATE, fn, ": the session is capturing a step; end the capture first");
  const std::string stale = s->graphs.stale(g.rec.memory);
  if (!stale.empty()) fail(MIXP_ERR_STATE, fn, ": ", stale, "; capture the step again");
  for (const Recording::Owner &o : g.rec.owners)
    if (o.alive.expired()) fail(MIXP_ERR_STATE, fn, ": ", o.what, " the captured step uses was destroyed");
  apply_threads(s);
  const Replay r{s->rng_offset - g.rng_begin, g.seed, s->seed};
  Backend &be = *s->backend;
  for (const Call &c : g.rec.calls) c(be, r);
  s->rng_offset += g.rng_used;
}

}  // namespace mixp::graph
