package mixp_test

import (
	"errors"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"

	"mixp.dev/mixp"
)

func newSession(t *testing.T) *mixp.Session {
	t.Helper()
	s, err := mixp.NewSession(mixp.SessionOptions{Seed: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func ok[T any](t *testing.T, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantErr asserts err is a *mixp.Error of status st whose message (mixp's)
// contains every fragment.
func wantErr(t *testing.T, err error, st mixp.Status, fragments ...string) {
	t.Helper()
	var e *mixp.Error
	if !errors.As(err, &e) {
		t.Fatalf("want a *mixp.Error with status %v, got %v", st, err)
	}
	if e.Status != st {
		t.Fatalf("status %d (%v), want %d (%v): %s", e.Status, e.Status, st, st, e.Message)
	}
	for _, f := range fragments {
		if !strings.Contains(e.Message, f) {
			t.Errorf("message %q does not mention %q", e.Message, f)
		}
	}
}

func TestVersionAndStatus(t *testing.T) {
	if !strings.HasPrefix(mixp.BuildInfo(), "mixp "+mixp.Version()) && !strings.Contains(mixp.BuildInfo(), mixp.Version()) {
		t.Errorf("build info %q does not name version %q", mixp.BuildInfo(), mixp.Version())
	}
	if mixp.StatusShape.String() == mixp.StatusDType.String() || mixp.StatusOK.String() == "unknown status" {
		t.Errorf("status strings: %q %q %q", mixp.StatusShape, mixp.StatusDType, mixp.StatusOK)
	}
}

func TestSession(t *testing.T) {
	s := newSession(t)
	if s.Device() != "cpu" || s.NumThreads() != 1 || !s.GradEnabled() {
		t.Fatalf("device %q threads %d grad %v", s.Device(), s.NumThreads(), s.GradEnabled())
	}
	err := s.NoGrad(func() error {
		if s.GradEnabled() {
			t.Error("grad enabled inside NoGrad")
		}
		return nil
	})
	if err != nil || !s.GradEnabled() {
		t.Fatalf("NoGrad: %v, grad after %v", err, s.GradEnabled())
	}
	_, err = mixp.NewSession(mixp.SessionOptions{Device: "tpu"})
	wantErr(t, err, mixp.StatusInvalidArgument, "tpu")
}

func TestTensorsRoundTrip(t *testing.T) {
	s := newSession(t)
	x := ok(t, mixp.FromFloat32(s, []float32{1, 2, 3, 4, 5, 6}, 2, 3))
	defer x.Close()
	if sh := ok(t, x.Shape()); len(sh) != 2 || sh[0] != 2 || sh[1] != 3 || x.Numel() != 6 || x.DType() != mixp.F32 {
		t.Fatalf("shape %v numel %d dtype %v", sh, x.Numel(), x.DType())
	}
	h := ok(t, x.Cast(mixp.F16))
	defer h.Close()
	if v := ok(t, h.Float32s()); v[5] != 6 {
		t.Fatalf("f16 round trip %v", v)
	}
	y := ok(t, x.Transpose(0, 1))
	p := ok(t, x.Matmul(y)) // [2,3] x [3,2]
	if v := ok(t, p.Float32s()); v[0] != 14 || v[1] != 32 || v[3] != 77 {
		t.Fatalf("matmul %v", v)
	}
	sum := ok(t, x.Sum(false))
	if v := ok(t, sum.Item()); v != 21 {
		t.Fatalf("sum %v", v)
	}
	parts := ok(t, x.Split(1, 1, 2))
	if sh := ok(t, parts[1].Shape()); len(parts) != 2 || sh[1] != 2 {
		t.Fatalf("split %v", sh)
	}
	c := ok(t, mixp.Cat(parts, 1))
	if v := ok(t, c.Float32s()); v[4] != 5 {
		t.Fatalf("cat %v", v)
	}
	z := ok(t, mixp.Zeros(s, mixp.BF16, 4))
	if v := ok(t, z.Float32s()); len(v) != 4 || v[3] != 0 {
		t.Fatalf("zeros %v", v)
	}
	r := ok(t, mixp.Randn(s, mixp.F32, 1000))
	m := ok(t, r.Mean(false))
	if v := ok(t, m.Item()); math.Abs(v) > 0.2 {
		t.Fatalf("randn mean %v", v)
	}
	mixp.CloseAll(y, p, sum, c, z, r, m, parts[0], parts[1])
}

func TestAutograd(t *testing.T) {
	s := newSession(t)
	w := ok(t, mixp.FromFloat32(s, []float32{1, -2, 3}, 3))
	must(w.SetRequiresGrad(true))
	sq := ok(t, w.Mul(w))
	loss := ok(t, sq.Sum(false))
	must(loss.Backward())
	g := ok(t, w.Grad())
	if v := ok(t, g.Float32s()); v[0] != 2 || v[1] != -4 || v[2] != 6 {
		t.Fatalf("grad of sum(w^2) = %v, want 2w", v)
	}
	must(w.ZeroGrad())
	if g2 := ok(t, w.Grad()); g2 != nil {
		t.Fatal("grad after ZeroGrad")
	}
	d := ok(t, sq.Detach())
	if d.RequiresGrad() {
		t.Fatal("detached tensor requires grad")
	}
	mixp.CloseAll(w, sq, loss, g, d)
}

func TestAutocast(t *testing.T) {
	s := newSession(t)
	a := ok(t, mixp.Randn(s, mixp.F32, 4, 8))
	b := ok(t, mixp.Randn(s, mixp.F32, 8, 2))
	region := ok(t, s.Autocast(mixp.AutocastOptions{Level: mixp.O1, DType: mixp.F16}))
	p := ok(t, a.Matmul(b))
	sm := ok(t, p.Softmax(1))
	must(region.Close())
	must(region.Close()) // a second Close does nothing
	if p.DType() != mixp.F16 || sm.DType() != mixp.F32 {
		t.Fatalf("O1: matmul %v (want f16), softmax %v (want f32)", p.DType(), sm.DType())
	}
	q := ok(t, a.Matmul(b))
	if q.DType() != mixp.F32 {
		t.Fatalf("after the region: %v", q.DType())
	}
	// custom lists reach the C API through the helper
	region = ok(t, s.Autocast(mixp.AutocastOptions{Level: mixp.O1, Black: []string{"matmul"}}))
	f := ok(t, a.Matmul(b))
	must(region.Close())
	if f.DType() != mixp.F32 {
		t.Fatalf("black-listed matmul ran in %v", f.DType())
	}
	_, err := s.Autocast(mixp.AutocastOptions{Level: mixp.O1, White: []string{"no_such_op"}})
	wantErr(t, err, mixp.StatusInvalidArgument, "no_such_op")
	_, err = s.Autocast(mixp.AutocastOptions{Level: mixp.O1, DType: mixp.I32})
	wantErr(t, err, mixp.StatusInvalidArgument)
	mixp.CloseAll(a, b, p, sm, q, f)
}

func TestOptimizerAndScaler(t *testing.T) {
	s := newSession(t)
	lin := ok(t, mixp.NewLinear(s, 4, 2, true, mixp.F32))
	defer lin.Close()
	params := ok(t, lin.Parameters())
	if names := lin.ParameterNames(); len(params) != 2 || names[0] != "weight" || names[1] != "bias" {
		t.Fatalf("parameters %d %v", len(params), names)
	}
	o := mixp.DefaultOptimizerOptions(mixp.AdamW)
	if o.LR != 1e-3 || o.WeightDecay != 0.01 {
		t.Fatalf("AdamW defaults %+v", o)
	}
	opt := ok(t, mixp.NewOptimizer(s, params, o))
	defer opt.Close()
	scaler := ok(t, mixp.NewGradScaler(s, func() mixp.ScalerOptions {
		so := mixp.DefaultScalerOptions()
		so.Mode = mixp.ScalerDynamic
		return so
	}()))
	defer scaler.Close()
	if v := ok(t, scaler.ScaleValue()); v != 65536 {
		t.Fatalf("initial scale %v", v)
	}
	x := ok(t, mixp.Randn(s, mixp.F32, 8, 4))
	y := ok(t, mixp.FromInt64(s, []int64{0, 1, 0, 1, 0, 1, 0, 1}, 8))
	before := ok(t, params[0].Float32s())
	logits := ok(t, lin.Forward(x))
	loss := ok(t, mixp.CrossEntropy(logits, y, mixp.Mean))
	scaled := ok(t, scaler.Scale(loss))
	must(opt.ZeroGrad())
	must(scaled.Backward())
	must(scaler.Unscale(opt))
	// misuse: unscale twice in one step is a StateException-like error
	wantErr(t, scaler.Unscale(opt), mixp.StatusState, "unscale")
	norm := ok(t, mixp.ClipGradNorm(opt, 1.0))
	if !(norm > 0) {
		t.Fatalf("grad norm %v", norm)
	}
	must(scaler.Step(opt))
	must(scaler.Update())
	if inf := ok(t, scaler.FoundInf()); inf || opt.StepCount() != 1 {
		t.Fatalf("found inf %v steps %d", inf, opt.StepCount())
	}
	after := ok(t, params[0].Float32s())
	if before[0] == after[0] {
		t.Fatal("the step did not change the weight")
	}
	state := ok(t, scaler.SaveState())
	must(scaler.LoadState(state))
	wantErr(t, scaler.LoadState(state[:3]), mixp.StatusCorrupt)
	must(opt.SetLR(0.5))
	if lr := ok(t, opt.LR()); lr != 0.5 {
		t.Fatalf("lr %v", lr)
	}
	mixp.CloseAll(x, y, logits, loss, scaled)
	mixp.CloseAll(params...)
}

func TestModelZooAndData(t *testing.T) {
	s := newSession(t)
	m := ok(t, mixp.NewModel(s, "cnn in_channels=1 classes=10 width=4 blocks=1 image_size=8 hidden=8"))
	defer m.Close()
	if m.NumParameterElements() <= 0 {
		t.Fatal("no parameters")
	}
	data := ok(t, mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: 20, Height: 8, Width: 8}))
	defer data.Close()
	if data.Len() != 20 || data.NumClasses() != 10 {
		t.Fatalf("len %d classes %d", data.Len(), data.NumClasses())
	}
	sub := ok(t, data.Subset(5, 10))
	defer sub.Close()
	loader := ok(t, mixp.NewLoader(sub, mixp.LoaderOptions{BatchSize: 4, NoShuffle: true}))
	defer loader.Close()
	if loader.NumBatches() != 3 {
		t.Fatalf("batches %d", loader.NumBatches())
	}
	seen := int64(0)
	for x, y, err := loader.Next(); x != nil || err != nil; x, y, err = loader.Next() {
		must(err)
		must(m.SetTraining(false))
		out := ok(t, m.Forward(x))
		if sh := ok(t, out.Shape()); sh[1] != 10 {
			t.Fatalf("cnn output %v", sh)
		}
		n := ok(t, y.Shape())
		seen += n[0]
		mixp.CloseAll(x, y, out)
	}
	if seen != 10 {
		t.Fatalf("one epoch saw %d samples", seen)
	}
	_, err := mixp.NewModel(s, "mlp in=784 bogus=1")
	wantErr(t, err, mixp.StatusInvalidArgument, "bogus")
}

// Misuse from Go: each returns a *mixp.Error carrying mixp's own message.
func TestMisuse(t *testing.T) {
	s := newSession(t)
	a := ok(t, mixp.Zeros(s, mixp.F32, 2, 3))
	b := ok(t, mixp.Zeros(s, mixp.F32, 4, 5))
	_, err := a.Matmul(b)
	wantErr(t, err, mixp.StatusShape, "mixp_matmul")
	if !errors.Is(err, mixp.ErrShape) || errors.Is(err, mixp.ErrDType) {
		t.Fatal("errors.Is does not match by status")
	}
	idx := ok(t, mixp.Zeros(s, mixp.I64, 2, 3))
	_, err = idx.Exp()
	wantErr(t, err, mixp.StatusDType, "mixp_exp")
	_, err = mixp.FromBytes(s, make([]byte, 7), mixp.F32, 2)
	wantErr(t, err, mixp.StatusInvalidArgument, "nbytes")
	_, err = a.Reshape(7)
	wantErr(t, err, mixp.StatusShape)

	// use after Close: NULL reaches mixp, which says which argument
	must(a.Close())
	must(a.Close())
	_, err = a.Add(b)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_add")
	_, err = a.Shape()
	wantErr(t, err, mixp.StatusInvalidArgument)
	var nilT *mixp.Tensor
	_, err = nilT.Relu()
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_relu")
	opt := ok(t, mixp.NewOptimizer(s, nil, mixp.DefaultOptimizerOptions(mixp.SGD)))
	must(opt.Close())
	wantErr(t, opt.Step(), mixp.StatusInvalidArgument, "mixp_optimizer_step")
	s2 := ok(t, mixp.NewSession(mixp.SessionOptions{}))
	must(s2.Close())
	_, err = mixp.Zeros(s2, mixp.F32, 1)
	wantErr(t, err, mixp.StatusInvalidArgument, "session")
	mixp.CloseAll(b, idx)
}

// Wrappers that are never closed are freed by their finalizers.
func TestFinalizersFreeMemory(t *testing.T) {
	s := newSession(t)
	base := ok(t, s.Memory()).Current
	for i := 0; i < 50; i++ {
		if _, err := mixp.Zeros(s, mixp.F32, 256, 256); err != nil {
			t.Fatal(err)
		}
	}
	if ok(t, s.Memory()).Current < base+256*256*4 {
		t.Fatal("the tensors were not allocated")
	}
	for i := 0; i < 20 && ok(t, s.Memory()).Current > base; i++ {
		runtime.GC()
		runtime.Gosched()
	}
	if cur := ok(t, s.Memory()).Current; cur > base {
		t.Fatalf("after GC %d bytes still held (base %d): finalizers did not run", cur, base)
	}
}

// Sessions on goroutines: each error message is the one of its own call,
// although goroutines hop between OS threads.
func TestGoroutines(t *testing.T) {
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			s, err := mixp.NewSession(mixp.SessionOptions{Seed: uint64(g), Threads: 1})
			if err != nil {
				errs <- err
				return
			}
			defer s.Close()
			for i := 0; i < 50; i++ {
				a, _ := mixp.Zeros(s, mixp.F32, int64(g+1), 3)
				b, _ := mixp.Zeros(s, mixp.F32, int64(g+2), 5)
				_, err := a.Matmul(b)
				var e *mixp.Error
				want := "[" + strconv.Itoa(g+1) + ", 3]"
				if !errors.As(err, &e) || e.Status != mixp.StatusShape || !strings.Contains(e.Message, want) {
					errs <- errors.New("goroutine " + strconv.Itoa(g) + ": got " + err.Error() + ", want a shape error naming " + want)
					return
				}
				runtime.Gosched()
				mixp.CloseAll(a, b)
			}
		}(g)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
