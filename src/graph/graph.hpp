// mixp_graph: a training step captured once (mixp_graph_capture_begin ..
// _end) and replayed (mixp_graph_replay). The CPU records the step's
// backend calls (recorder.hpp) and replays them on the same memory; the
// graph owns the memory the step allocated or released (core/graph_memory.hpp).
#pragma once
#include <cstdint>

#include "core/session.hpp"
#include "graph/recorder.hpp"

struct mixp_graph {
  static constexpr uint32_t kMagic = 0x47524148u;  // "GRAH"
  uint32_t magic = kMagic;
  mixp::SessionRef session;
  mixp::graph::Recording rec;
  uint64_t rng_begin = 0;  // the session's Philox offset when the capture began
  uint64_t rng_used = 0;   // counters the step drew
  uint64_t seed = 0;       // the session's seed then

  ~mixp_graph();
};

namespace mixp::graph {

using Graph = mixp_graph;

// Validates a graph handle from the C API (non-NULL, live magic).
Graph *check_graph(const mixp_graph *g, const char *fn, const char *arg = "graph");

// The session's backend becomes a recorder. MIXP_ERR_STATE when the session
// captures already or cannot be captured now (numerics checker, op trace,
// inside backward or a checkpoint region), MIXP_ERR_UNSUPPORTED for a device
// or a communicator the capture does not cover.
void begin(Session *s, const char *fn);
// Ends the capture and returns the graph (the caller owns it). MIXP_ERR_STATE
// when the session is not capturing, or when the step used a tensor made
// before the capture and released it during the capture (the capture is then
// aborted: a replay would read a value that is gone).
Graph *end(Session *s, const char *fn);
// Ends the capture without a graph (no-op when the session is not
// capturing): the real backend is back, the memory released during the
// capture is freed; tensors made during it stay valid.
void abort(Session *s) noexcept;
// Runs the recorded calls again, after checking that everything they use
// is still there; advances the session's Philox offset as the step did.
void replay(Graph &g, const char *fn);

}  // namespace mixp::graph
