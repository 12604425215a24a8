package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// Graph is a training step captured once (Session.GraphCaptureBegin ..
// Session.GraphCaptureEnd) and replayed on the same tensors, bitwise as an
// eager step (see the AMP guide, "Captured steps"). Close it when done (a
// finalizer frees it otherwise).
type Graph struct{ h handle }

func (g *Graph) hdl() *handle { return &g.h }

func (g *Graph) p() uintptr {
	if g == nil {
		return 0
	}
	return g.h.ptr
}

// GraphCaptureBegin starts capturing the step the session runs next.
func (s *Session) GraphCaptureBegin() error {
	err := check(raw.Mixp_graph_capture_begin(s.p()))
	runtime.KeepAlive(s)
	return err
}

// GraphCaptureEnd ends the capture and returns the captured step.
func (s *Session) GraphCaptureEnd() (*Graph, error) {
	var out uintptr
	err := check(raw.Mixp_graph_capture_end(s.p(), &out))
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	g := &Graph{}
	track(g, out, raw.Mixp_graph_destroy)
	return g, nil
}

// GraphCaptureAbort ends the capture without a graph.
func (s *Session) GraphCaptureAbort() error {
	err := check(raw.Mixp_graph_capture_abort(s.p()))
	runtime.KeepAlive(s)
	return err
}

// Replay runs the captured step again.
func (g *Graph) Replay() error {
	err := check(raw.Mixp_graph_replay(g.p()))
	runtime.KeepAlive(g)
	return err
}

// Close frees the graph.
func (g *Graph) Close() error {
	if g != nil {
		g.h.close()
	}
	return nil
}
