package mixp_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"mixp.dev/mixp"
)

// run is one training setup: everything a state file covers.
type run struct {
	s      *mixp.Session
	data   *mixp.Dataset
	loader *mixp.Loader
	model  *mixp.Module
	params []*mixp.Tensor
	opt    *mixp.Optimizer
	scaler *mixp.GradScaler
}

func newRun(t *testing.T, seed uint64) *run {
	t.Helper()
	s := ok(mixp.NewSession(mixp.SessionOptions{Seed: seed, Threads: 1}))(t)
	r := &run{s: s}
	r.data = ok(mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: 512}))(t)
	r.loader = ok(mixp.NewLoader(r.data, mixp.LoaderOptions{BatchSize: 64, Seed: 3}))(t)
	r.model = ok(mixp.NewModel(s, "mlp hidden=32"))(t)
	r.params = ok(r.model.Parameters())(t)
	r.opt = ok(mixp.NewOptimizer(s, r.params, mixp.DefaultOptimizerOptions(mixp.AdamW)))(t)
	so := mixp.DefaultScalerOptions()
	so.InitScale = 1024
	r.scaler = ok(mixp.NewGradScaler(s, so))(t)
	t.Cleanup(func() {
		mixp.CloseAll(r.params...)
		r.scaler.Close()
		r.opt.Close()
		r.model.Close()
		r.loader.Close()
		r.data.Close()
		s.Close()
	})
	return r
}

func (r *run) objects() mixp.StateObjects {
	return mixp.StateObjects{Model: r.model, Optimizer: r.opt, Scaler: r.scaler, Loader: r.loader}
}

// train runs steps O1 f16 + GradScaler steps and returns the last loss.
func (r *run) train(t *testing.T, steps int) float64 {
	t.Helper()
	last := math.NaN()
	for i := 0; i < steps; i++ {
		b := ok(r.loader.Next())(t)
		if b == nil { // end of an epoch: the next call starts a new one
			b = ok(r.loader.Next())(t)
		}
		region := ok(r.s.Autocast(mixp.AutocastOptions{Level: mixp.O1, DType: mixp.F16}))(t)
		logits := ok(r.model.Forward(b.X))(t)
		loss := ok(mixp.CrossEntropy(logits, b.Y, mixp.Mean))(t)
		noErr(t, region.Close())
		noErr(t, r.opt.ZeroGrad())
		scaled := ok(r.scaler.Scale(loss))(t)
		noErr(t, scaled.Backward())
		noErr(t, r.scaler.Step(r.opt))
		noErr(t, r.scaler.Update())
		last = ok(loss.Item())(t)
		mixp.CloseAll(logits, loss, scaled)
		b.Close()
	}
	return last
}

func TestStateResumesBitForBit(t *testing.T) {
	straight := newRun(t, 1)
	straight.train(t, 5)
	expected := straight.train(t, 7)

	first := newRun(t, 1)
	first.train(t, 5)
	path := filepath.Join(t.TempDir(), "run.safetensors")
	noErr(t, first.s.SaveState(path, first.objects(), 5, `{"run": "test"}`))

	resumed := newRun(t, 99) // another initialisation: everything must come from the file
	if step := ok(resumed.s.LoadState(path, resumed.objects()))(t); step != 5 {
		t.Fatalf("loaded step %d, want 5", step)
	}
	if a, b := ok(resumed.scaler.ScaleValue())(t), ok(first.scaler.ScaleValue())(t); a != b {
		t.Fatalf("scale after load %v, saved %v", a, b)
	}
	got := resumed.train(t, 7)
	if math.Float64bits(got) != math.Float64bits(expected) {
		t.Fatalf("resumed loss %v (%x), uninterrupted %v (%x)", got, math.Float64bits(got),
			expected, math.Float64bits(expected))
	}
}

func paramValues(t *testing.T, ps []*mixp.Tensor) [][]float32 {
	t.Helper()
	out := make([][]float32, len(ps))
	for i, p := range ps {
		out[i] = ok(p.Float32s())(t)
	}
	return out
}

func TestStateDamagedFileChangesNothing(t *testing.T) {
	r := newRun(t, 1)
	dir := t.TempDir()
	path := filepath.Join(dir, "run.safetensors")
	noErr(t, r.s.SaveState(path, r.objects(), 0, ""))
	raw, err := os.ReadFile(path)
	noErr(t, err)
	raw[len(raw)-5] ^= 0x40 // a bit in the last tensor's bytes
	noErr(t, os.WriteFile(path, raw, 0o644))

	other := newRun(t, 7)
	before := paramValues(t, other.params)
	_, err = other.s.LoadState(path, other.objects())
	wantErr(t, err, mixp.StatusCorrupt, "mixp_state_load")
	if !errors.Is(err, mixp.ErrCorrupt) {
		t.Fatal("errors.Is(err, ErrCorrupt) is false")
	}
	if after := paramValues(t, other.params); !reflect.DeepEqual(before, after) {
		t.Fatal("a failed load changed the parameters")
	}

	err = r.s.SaveState(filepath.Join(dir, "no-such-dir", "x.safetensors"), mixp.StateObjects{Model: r.model}, 0, "")
	wantErr(t, err, mixp.StatusIO)

	// a closed object is an error, not silently left out of the file
	closed := ok(mixp.NewLinear(r.s, 2, 2, true, mixp.F32))(t)
	noErr(t, closed.Close())
	err = r.s.SaveState(path, mixp.StateObjects{Model: closed}, 0, "")
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp.SaveState", "model", "closed")
	_, err = r.s.LoadState(path, mixp.StateObjects{Model: closed})
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp.LoadState", "model", "closed")
	var gone mixp.Session
	_, err = gone.LoadState(path, mixp.StateObjects{})
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_state_load")
}
