package mixp_test

import (
	"reflect"
	"testing"

	"mixp.dev/mixp"
)

// graphRig is a linear layer trained with SGD on one static input.
type graphRig struct {
	s      *mixp.Session
	lin    *mixp.Module
	params []*mixp.Tensor
	opt    *mixp.Optimizer
	x      *mixp.Tensor
}

func newGraphRig(t *testing.T) *graphRig {
	s := newSession(t)
	lin := ok(mixp.NewLinear(s, 3, 2, true, mixp.F32))(t)
	params := ok(lin.Parameters())(t)
	opt := ok(mixp.NewOptimizer(s, params, mixp.DefaultOptimizerOptions(mixp.SGD)))(t)
	return &graphRig{s, lin, params, opt, ok(mixp.Zeros(s, mixp.F32, 4, 3))(t)}
}

func (r *graphRig) step(t *testing.T) *mixp.Tensor {
	noErr(t, r.opt.ZeroGrad())
	y := ok(r.lin.Forward(r.x))(t)
	sq := ok(y.Mul(y))(t)
	loss := ok(sq.Sum(false))(t)
	noErr(t, loss.Backward())
	noErr(t, r.opt.Step())
	mixp.CloseAll(y, sq)
	return loss
}

func (r *graphRig) refill(t *testing.T) {
	src := ok(mixp.Randn(r.s, mixp.F32, 4, 3))(t)
	defer src.Close()
	noErr(t, r.x.CopyFrom(src))
}

// A step captured once and replayed is bitwise the eager step.
func TestGraphReplayMatchesEager(t *testing.T) {
	e, g := newGraphRig(t), newGraphRig(t)
	var graph *mixp.Graph
	var gloss *mixp.Tensor
	for step := 0; step < 4; step++ {
		e.refill(t)
		g.refill(t)
		eloss := e.step(t)
		switch step {
		case 0:
			g.step(t).Close()
		case 1:
			noErr(t, g.s.GraphCaptureBegin())
			gloss = g.step(t)
			_, err := gloss.Item()
			wantErr(t, err, mixp.StatusState, "mixp_tensor_item", "captured")
			graph = ok(g.s.GraphCaptureEnd())(t)
		default:
			noErr(t, graph.Replay())
		}
		if gloss != nil {
			if a, b := ok(eloss.Item())(t), ok(gloss.Item())(t); a != b {
				t.Errorf("step %d: loss %v eager, %v replayed", step, a, b)
			}
		}
		for i := range e.params {
			if a, b := ok(e.params[i].Float32s())(t), ok(g.params[i].Float32s())(t); !reflect.DeepEqual(a, b) {
				t.Errorf("step %d: parameter %d differs", step, i)
			}
		}
		eloss.Close()
	}
	noErr(t, graph.Close())
	wantErr(t, g.s.GraphCaptureAbort(), mixp.StatusState, "not capturing")
}
