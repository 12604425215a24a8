package mixp_test

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"mixp.dev/mixp"
)

func noErr(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func newSession(t *testing.T) *mixp.Session {
	t.Helper()
	s, err := mixp.NewSession(mixp.SessionOptions{Seed: 1, Threads: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// ok(f())(t) is f's value, failing the test on f's error (Go passes a
// multi-value call only as a function's sole argument).
func ok[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
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
	if !strings.Contains(mixp.BuildInfo(), mixp.Version()) {
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
	x := ok(mixp.FromFloat32(s, []float32{1, 2, 3, 4, 5, 6}, 2, 3))(t)
	defer x.Close()
	if sh := ok(x.Shape())(t); len(sh) != 2 || sh[0] != 2 || sh[1] != 3 || x.Numel() != 6 || x.DType() != mixp.F32 {
		t.Fatalf("shape %v numel %d dtype %v", sh, x.Numel(), x.DType())
	}
	h := ok(x.Cast(mixp.F16))(t)
	defer h.Close()
	if v := ok(h.Float32s())(t); v[5] != 6 {
		t.Fatalf("f16 round trip %v", v)
	}
	y := ok(x.Transpose(0, 1))(t)
	p := ok(x.Matmul(y))(t) // [2,3] x [3,2]
	if v := ok(p.Float32s())(t); v[0] != 14 || v[1] != 32 || v[3] != 77 {
		t.Fatalf("matmul %v", v)
	}
	sum := ok(x.Sum(false))(t)
	if v := ok(sum.Item())(t); v != 21 {
		t.Fatalf("sum %v", v)
	}
	parts := ok(x.Split(1, 1, 2))(t)
	if sh := ok(parts[1].Shape())(t); len(parts) != 2 || sh[1] != 2 {
		t.Fatalf("split %v", sh)
	}
	c := ok(mixp.Cat(parts, 1))(t)
	if v := ok(c.Float32s())(t); v[4] != 5 {
		t.Fatalf("cat %v", v)
	}
	z := ok(mixp.Zeros(s, mixp.BF16, 4))(t)
	if v := ok(z.Float32s())(t); len(v) != 4 || v[3] != 0 {
		t.Fatalf("zeros %v", v)
	}
	r := ok(mixp.Randn(s, mixp.F32, 1000))(t)
	m := ok(r.Mean(false))(t)
	if v := ok(m.Item())(t); math.Abs(v) > 0.2 {
		t.Fatalf("randn mean %v", v)
	}
	mixp.CloseAll(y, p, sum, c, z, r, m, parts[0], parts[1])
}

// The activations, scalar ops, views and products added to the Go layer
// with the op table's coverage check, against hand-computed values.
func TestMoreOps(t *testing.T) {
	s := newSession(t)
	x := ok(mixp.FromFloat32(s, []float32{-4, -1, 0, 2, 4, 0.5}, 2, 3))(t)
	defer x.Close()
	want := func(name string, got *mixp.Tensor, w ...float32) {
		t.Helper()
		defer got.Close()
		v := ok(got.Float32s())(t)
		for i := range w {
			if math.Abs(float64(v[i]-w[i])) > 1e-6 {
				t.Fatalf("%s: got %v, want %v", name, v, w)
			}
		}
	}
	want("hardswish", ok(x.Hardswish())(t), 0, -1.0/3, 0, 5.0/3, 4, 0.5*3.5/6)
	want("hardsigmoid", ok(x.Hardsigmoid())(t), 0, 2.0/6, 0.5, 5.0/6, 1, 3.5/6)
	// gelu_tanh in float32 (a few roundings of the tanh formula): relative 1e-5.
	gt := ok(x.GeluTanh())(t)
	for i, v := range ok(gt.Float32s())(t) {
		in := []float64{-4, -1, 0, 2, 4, 0.5}[i]
		w := 0.5 * in * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(in+0.044715*in*in*in)))
		if math.Abs(float64(v)-w) > 1e-5*math.Abs(w)+1e-7 {
			t.Fatalf("gelu_tanh(%v): got %v, want %v", in, v, w)
		}
	}
	gt.Close()
	want("rsub", ok(x.RsubScalar(1))(t), 5, 2, 1, -1, -3, 0.5)
	want("rdiv", ok(x.RdivScalar(2))(t), -0.5, -2, float32(math.Inf(1)), 1, 0.5, 4)
	xt := ok(x.Permute(1, 0))(t)
	defer xt.Close()
	want("permute", ok(xt.Contiguous())(t), -4, 2, -1, 4, 0, 0.5)
	v, i, err := x.Max(1, false)
	noErr(t, err)
	want("max values", v, 0, 4)
	want("max indices", i, 2, 1)
	a := ok(mixp.FromFloat32(s, []float32{1, 2, 3, 4}, 1, 2, 2))(t)
	defer a.Close()
	want("bmm", ok(mixp.Bmm(a, a))(t), 7, 10, 15, 22)
	want("pad", ok(x.Pad(9, 1, 0))(t), 9, -4, -1, 0, 9, 2, 4, 0.5)
	idx := ok(mixp.FromInt64(s, []int64{1, 0}, 2))(t)
	defer idx.Close()
	want("embedding", ok(mixp.Embedding(x, idx, -1))(t), 2, 4, 0.5, -4, -1, 0)
	ln := ok(mixp.LayerNorm(a, 1, nil, nil, 1e-5))(t)
	z := float32(0.5 / math.Sqrt(0.25+1e-5))
	want("layer_norm", ln, -z, z, -z, z)
	gn := ok(mixp.GroupNorm(a, 1, nil, nil, 1e-5))(t)
	defer gn.Close()
	attn := ok(mixp.ScaledDotProductAttention(a, a, a, true, 0, 0))(t)
	want("sdpa (causal: the first row sees itself only)", attn, 1, 2)
}

func TestAutograd(t *testing.T) {
	s := newSession(t)
	w := ok(mixp.FromFloat32(s, []float32{1, -2, 3}, 3))(t)
	noErr(t, w.SetRequiresGrad(true))
	sq := ok(w.Mul(w))(t)
	loss := ok(sq.Sum(false))(t)
	noErr(t, loss.Backward())
	g := ok(w.Grad())(t)
	if v := ok(g.Float32s())(t); v[0] != 2 || v[1] != -4 || v[2] != 6 {
		t.Fatalf("grad of sum(w^2) = %v, want 2w", v)
	}
	noErr(t, w.ZeroGrad())
	if g2 := ok(w.Grad())(t); g2 != nil {
		t.Fatal("grad after ZeroGrad")
	}
	d := ok(sq.Detach())(t)
	if d.RequiresGrad() {
		t.Fatal("detached tensor requires grad")
	}
	mixp.CloseAll(w, sq, loss, g, d)
}

func TestNonfiniteGrads(t *testing.T) {
	s := newSession(t)
	a := ok(mixp.FromFloat32(s, []float32{1, 2}, 2))(t)
	b := ok(mixp.FromFloat32(s, []float32{3}, 1))(t)
	noErr(t, a.SetRequiresGrad(true))
	noErr(t, b.SetRequiresGrad(true))
	opt := ok(mixp.NewOptimizer(s, []*mixp.Tensor{a, b}, mixp.DefaultOptimizerOptions(mixp.SGD)))(t)
	x := ok(mixp.FromFloat32(s, []float32{float32(math.Inf(1)), 1}, 2))(t)
	ax := ok(a.Mul(x))(t)
	loss := ok(ax.Sum(false))(t)
	bs := ok(b.Sum(false))(t)
	both := ok(loss.Add(bs))(t)
	noErr(t, both.Backward())
	found := ok(opt.NonfiniteGrads())(t)
	if len(found) != 1 || found[0] != 0 {
		t.Fatalf("NonfiniteGrads = %v, want [0]", found)
	}
	mixp.CloseAll(a, b, x, ax, loss, bs, both)
	noErr(t, opt.Close())
}

func TestAutocast(t *testing.T) {
	s := newSession(t)
	a := ok(mixp.Randn(s, mixp.F32, 4, 8))(t)
	b := ok(mixp.Randn(s, mixp.F32, 8, 2))(t)
	region := ok(s.Autocast(mixp.AutocastOptions{Level: mixp.O1, DType: mixp.F16}))(t)
	p := ok(a.Matmul(b))(t)
	sm := ok(p.Softmax(1))(t)
	noErr(t, region.Close())
	noErr(t, region.Close()) // a second Close does nothing
	if p.DType() != mixp.F16 || sm.DType() != mixp.F32 {
		t.Fatalf("O1: matmul %v (want f16), softmax %v (want f32)", p.DType(), sm.DType())
	}
	q := ok(a.Matmul(b))(t)
	if q.DType() != mixp.F32 {
		t.Fatalf("after the region: %v", q.DType())
	}
	// custom lists reach the C API through the helper
	region = ok(s.Autocast(mixp.AutocastOptions{Level: mixp.O1, Black: []string{"matmul"}}))(t)
	f := ok(a.Matmul(b))(t)
	noErr(t, region.Close())
	if f.DType() != mixp.F32 {
		t.Fatalf("black-listed matmul ran in %v", f.DType())
	}
	// OD: only the low-precision list runs in f16
	region = ok(s.Autocast(mixp.AutocastOptions{Level: mixp.OD, DType: mixp.F16}))(t)
	odMM := ok(a.Matmul(b))(t)
	odRelu := ok(odMM.Relu())(t)
	noErr(t, region.Close())
	if odMM.DType() != mixp.F16 || odRelu.DType() != mixp.F32 {
		t.Fatalf("OD: matmul %v (want f16), relu %v (want f32)", odMM.DType(), odRelu.DType())
	}
	mixp.CloseAll(odMM, odRelu)
	// O2 with UsePromote: an F32 input keeps relu in fp32
	region = ok(s.Autocast(mixp.AutocastOptions{Level: mixp.O2, DType: mixp.F16, UsePromote: true}))(t)
	promoted := ok(a.Relu())(t)
	noErr(t, region.Close())
	if promoted.DType() != mixp.F32 {
		t.Fatalf("O2 use_promote: relu of f32 ran in %v", promoted.DType())
	}
	mixp.CloseAll(promoted)
	// a policy line
	region = ok(s.AutocastPolicy("OD f16 white=relu"))(t)
	lined := ok(a.Relu())(t)
	noErr(t, region.Close())
	if lined.DType() != mixp.F16 {
		t.Fatalf("policy line: white-listed relu ran in %v", lined.DType())
	}
	mixp.CloseAll(lined)
	_, perr := s.AutocastPolicy("O3")
	wantErr(t, perr, mixp.StatusInvalidArgument, "O3")
	_, err := s.Autocast(mixp.AutocastOptions{Level: mixp.O1, White: []string{"no_such_op"}})
	wantErr(t, err, mixp.StatusInvalidArgument, "no_such_op")
	_, err = s.Autocast(mixp.AutocastOptions{Level: mixp.O1, DType: mixp.I32})
	wantErr(t, err, mixp.StatusDType, "i32")
	mixp.CloseAll(a, b, p, sm, q, f)
}

func TestOptimizerAndScaler(t *testing.T) {
	s := newSession(t)
	lin := ok(mixp.NewLinear(s, 4, 2, true, mixp.F32))(t)
	defer lin.Close()
	params := ok(lin.Parameters())(t)
	if names := lin.ParameterNames(); len(params) != 2 || names[0] != "weight" || names[1] != "bias" {
		t.Fatalf("parameters %d %v", len(params), names)
	}
	o := mixp.DefaultOptimizerOptions(mixp.AdamW)
	if o.LR != 1e-3 || o.WeightDecay != 0.01 {
		t.Fatalf("AdamW defaults %+v", o)
	}
	opt := ok(mixp.NewOptimizer(s, params, o))(t)
	defer opt.Close()
	scaler := ok(mixp.NewGradScaler(s, func() mixp.ScalerOptions {
		so := mixp.DefaultScalerOptions()
		so.Mode = mixp.ScalerDynamic
		return so
	}()))(t)
	defer scaler.Close()
	if v := ok(scaler.ScaleValue())(t); v != 65536 {
		t.Fatalf("initial scale %v", v)
	}
	x := ok(mixp.Randn(s, mixp.F32, 8, 4))(t)
	y := ok(mixp.FromInt64(s, []int64{0, 1, 0, 1, 0, 1, 0, 1}, 8))(t)
	before := ok(params[0].Float32s())(t)
	logits := ok(lin.Forward(x))(t)
	loss := ok(mixp.CrossEntropy(logits, y, mixp.Mean))(t)
	scaled := ok(scaler.Scale(loss))(t)
	noErr(t, opt.ZeroGrad())
	noErr(t, scaled.Backward())
	noErr(t, scaler.Unscale(opt))
	// misuse: unscale twice in one step is a StateException-like error
	wantErr(t, scaler.Unscale(opt), mixp.StatusState, "unscale")
	norm := ok(mixp.ClipGradNorm(opt, 1.0))(t)
	if !(norm > 0) {
		t.Fatalf("grad norm %v", norm)
	}
	noErr(t, scaler.Step(opt))
	noErr(t, scaler.Update())
	if inf := ok(scaler.FoundInf())(t); inf || opt.StepCount() != 1 {
		t.Fatalf("found inf %v steps %d", inf, opt.StepCount())
	}
	after := ok(params[0].Float32s())(t)
	if before[0] == after[0] {
		t.Fatal("the step did not change the weight")
	}
	state := ok(scaler.SaveState())(t)
	noErr(t, scaler.LoadState(state))
	wantErr(t, scaler.LoadState(state[:3]), mixp.StatusCorrupt)
	noErr(t, opt.SetLR(0.5))
	if lr := ok(opt.LR())(t); lr != 0.5 {
		t.Fatalf("lr %v", lr)
	}
	mixp.CloseAll(x, y, logits, loss, scaled)
	mixp.CloseAll(params...)
}

func TestModelZooAndData(t *testing.T) {
	s := newSession(t)
	m := ok(mixp.NewModel(s, "cnn in_channels=1 classes=10 width=4 blocks=1 image_size=8 hidden=8"))(t)
	defer m.Close()
	if m.NumParameterElements() <= 0 {
		t.Fatal("no parameters")
	}
	data := ok(mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: 20, Height: 8, Width: 8}))(t)
	defer data.Close()
	if data.Len() != 20 || data.NumClasses() != 10 {
		t.Fatalf("len %d classes %d", data.Len(), data.NumClasses())
	}
	sub := ok(data.Subset(5, 10))(t)
	defer sub.Close()
	loader := ok(mixp.NewLoader(sub, mixp.LoaderOptions{BatchSize: 4, NoShuffle: true}))(t)
	defer loader.Close()
	if loader.NumBatches() != 3 {
		t.Fatalf("batches %d", loader.NumBatches())
	}
	seen := int64(0)
	noErr(t, m.SetTraining(false))
	for b := ok(loader.Next())(t); b != nil; b = ok(loader.Next())(t) {
		out := ok(m.Forward(b.X))(t)
		if sh := ok(out.Shape())(t); sh[1] != 10 {
			t.Fatalf("cnn output %v", sh)
		}
		n := ok(b.Y.Shape())(t)
		seen += n[0]
		mixp.CloseAll(out)
		b.Close()
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
	a := ok(mixp.Zeros(s, mixp.F32, 2, 3))(t)
	b := ok(mixp.Zeros(s, mixp.F32, 4, 5))(t)
	_, err := a.Matmul(b)
	wantErr(t, err, mixp.StatusShape, "mixp_matmul")
	if !errors.Is(err, mixp.ErrShape) || errors.Is(err, mixp.ErrDType) {
		t.Fatal("errors.Is does not match by status")
	}
	idx := ok(mixp.Zeros(s, mixp.I64, 2, 3))(t)
	_, err = idx.Exp()
	wantErr(t, err, mixp.StatusDType, "mixp_exp")
	_, err = mixp.FromBytes(s, make([]byte, 7), mixp.F32, 2)
	wantErr(t, err, mixp.StatusInvalidArgument, "nbytes")
	_, err = a.Reshape(7)
	wantErr(t, err, mixp.StatusShape)

	// use after Close: NULL reaches mixp, which says which argument
	noErr(t, a.Close())
	noErr(t, a.Close())
	_, err = a.Add(b)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_add")
	_, err = a.Shape()
	wantErr(t, err, mixp.StatusInvalidArgument)
	_, err = a.Float32s()
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_tensor_to_host")
	closedLin := ok(mixp.NewLinear(s, 2, 2, true, mixp.F32))(t)
	noErr(t, closedLin.Close())
	_, err = closedLin.Parameters()
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_module_parameter")
	if closedLin.ParameterNames() != nil || closedLin.NumParameterElements() >= 0 {
		t.Error("a closed module reports parameters")
	}
	_, err = closedLin.Forward(b)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_module_forward")
	var nilT *mixp.Tensor
	_, err = nilT.Relu()
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_relu")
	_, err = mixp.NewOptimizer(s, nil, mixp.DefaultOptimizerOptions(mixp.SGD))
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_optimizer_create")
	lin := ok(mixp.NewLinear(s, 2, 2, false, mixp.F32))(t)
	params := ok(lin.Parameters())(t)
	opt := ok(mixp.NewOptimizer(s, params, mixp.DefaultOptimizerOptions(mixp.SGD)))(t)
	noErr(t, opt.Close())
	wantErr(t, opt.Step(), mixp.StatusInvalidArgument, "mixp_optimizer_step")
	s2 := ok(mixp.NewSession(mixp.SessionOptions{}))(t)
	noErr(t, s2.Close())
	_, err = mixp.Zeros(s2, mixp.F32, 1)
	wantErr(t, err, mixp.StatusInvalidArgument, "session")
	mixp.CloseAll(b, idx)
	mixp.CloseAll(params...)
	noErr(t, lin.Close())
}

// Wrappers that are never closed are freed by their finalizers.
func TestFinalizersFreeMemory(t *testing.T) {
	s := newSession(t)
	base := ok(s.Memory())(t).Current
	for i := 0; i < 50; i++ {
		if _, err := mixp.Zeros(s, mixp.F32, 256, 256); err != nil {
			t.Fatal(err)
		}
	}
	if ok(s.Memory())(t).Current < base+256*256*4 {
		t.Fatal("the tensors were not allocated")
	}
	// Finalizers run on their own goroutine after a GC: give them up to 2 s.
	for i := 0; i < 200 && ok(s.Memory())(t).Current > base; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	if cur := ok(s.Memory())(t).Current; cur > base {
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
				b, _ := mixp.Zeros(s, mixp.F32, 4, 5)
				_, err := a.Matmul(b)
				var e *mixp.Error
				want := "a is [" + strconv.Itoa(g+1) + ",3]"
				if !errors.As(err, &e) || e.Status != mixp.StatusShape || !strings.Contains(e.Message, want) {
					errs <- fmt.Errorf("goroutine %d: got %v, want a shape error naming %s", g, err, want)
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

// SGD steps of 2^-12 on BF16 weights at 1.0: lost to nearest rounding,
// kept on average with stochastic rounding (mean 1 - 2^-8 after 16 steps).
func TestOptimizerStochasticRounding(t *testing.T) {
	run := func(stochastic bool) float64 {
		s := newSession(t)
		w := ok(mixp.Ones(s, mixp.BF16, 4096))(t)
		defer w.Close()
		if err := w.SetRequiresGrad(true); err != nil {
			t.Fatal(err)
		}
		g := ok(mixp.Full(s, mixp.BF16, 1.0/4096, 4096))(t)
		defer g.Close()
		o := mixp.DefaultOptimizerOptions(mixp.SGD)
		o.LR = 1
		o.StochasticRounding = stochastic
		o.StateDType = mixp.BF16
		opt := ok(mixp.NewOptimizer(s, []*mixp.Tensor{w}, o))(t)
		defer opt.Close()
		for i := 0; i < 16; i++ {
			if err := opt.ZeroGrad(); err != nil {
				t.Fatal(err)
			}
			wg := ok(w.Mul(g))(t)
			loss := ok(wg.Sum(false))(t)
			if err := loss.Backward(); err != nil {
				t.Fatal(err)
			}
			wg.Close()
			loss.Close()
			if err := opt.Step(); err != nil {
				t.Fatal(err)
			}
		}
		v := ok(w.Float32s())(t)
		mean := 0.0
		for _, x := range v {
			mean += float64(x) / float64(len(v))
		}
		return mean
	}
	if m := run(false); m != 1 {
		t.Fatalf("nearest rounding moved the weights: mean %v", m)
	}
	if m := run(true); math.Abs(m-(1-1.0/256)) >= 1.0/2048 {
		t.Fatalf("stochastic rounding: mean %v, want %v", m, 1-1.0/256)
	}
	bad := mixp.DefaultOptimizerOptions(mixp.Adam)
	bad.StateDType = mixp.F16
	s := newSession(t)
	w := ok(mixp.Ones(s, mixp.F32, 2))(t)
	defer w.Close()
	if err := w.SetRequiresGrad(true); err != nil {
		t.Fatal(err)
	}
	if _, err := mixp.NewOptimizer(s, []*mixp.Tensor{w}, bad); err == nil || !strings.Contains(err.Error(), "state_dtype") {
		t.Fatalf("state_dtype F16 accepted: %v", err)
	}
}
