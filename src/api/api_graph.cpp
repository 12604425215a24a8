// C shims of the captured-step group (mixp_graph_*): see graph/graph.hpp.
#include "api/api_common.hpp"
#include "graph/graph.hpp"

using namespace mixp;

extern "C" {

mixp_status mixp_graph_capture_begin(mixp_session *session) {
  return guard("mixp_graph_capture_begin", [&] {
    Session *s = check_session(session, "mixp_graph_capture_begin");
    graph::begin(s, "mixp_graph_capture_begin");
  });
}

mixp_status mixp_graph_capture_end(mixp_session *session, mixp_graph **out) {
  return guard("mixp_graph_capture_end", [&] {
    Session *s = check_session(session, "mixp_graph_capture_end");
    check_out(out, "mixp_graph_capture_end");
    *out = graph::end(s, "mixp_graph_capture_end");
  });
}

mixp_status mixp_graph_capture_abort(mixp_session *session) {
  return guard("mixp_graph_capture_abort", [&] {
    Session *s = check_session(session, "mixp_graph_capture_abort");
    if (!s->capture)
      fail(MIXP_ERR_STATE, "mixp_graph_capture_abort: the session is not capturing a step");
    graph::abort(s);
  });
}

mixp_status mixp_graph_replay(mixp_graph *g) {
  return guard("mixp_graph_replay", [&] {
    graph::replay(*graph::check_graph(g, "mixp_graph_replay"), "mixp_graph_replay");
  });
}

void mixp_graph_destroy(mixp_graph *g) {
  if (g && g->magic == mixp_graph::kMagic) delete g;
}

}  // extern "C"
