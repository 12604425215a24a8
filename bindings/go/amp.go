package mixp

import (
	"math"
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// AMPLevel is the autocast level.
type AMPLevel int

// Autocast levels: O0 (off), O1 (per-op lists), O2 (almost all in low
// precision), OD (Paddle's: only GEMM-like ops in low precision, the rest fp32).
const (
	O0 AMPLevel = 0
	O1 AMPLevel = 1
	O2 AMPLevel = 2
	OD AMPLevel = 3
)

// AutocastOptions configure an autocast region: set Level (its zero value
// is O0, autocast off) and DType; a zero DType (F32) picks mixp's default
// low dtype, BF16.
type AutocastOptions struct {
	Level    AMPLevel
	DType    DType    // F16 or BF16; F32 (the zero value) picks BF16
	Disabled bool     // run everything in fp32 inside the region
	NoCache  bool     // do not cache low-precision copies of parameters
	White    []string // op names forced to low precision
	Black    []string // op names forced to fp32
	// O2 only (Paddle's use_promote): an op off the low-precision list with
	// an F32 input runs in fp32.
	UsePromote bool
}

// AutocastRegion is an open autocast region; Close ends it. Regions nest
// and must be closed in reverse order (defer region.Close()).
type AutocastRegion struct {
	s      *Session
	closed bool
}

// Autocast opens an autocast region on the session.
func (s *Session) Autocast(o AutocastOptions) (*AutocastRegion, error) {
	r := raw.NewMixp_autocast_options()
	defer raw.DeleteMixp_autocast_options(r)
	r.SetLevel(raw.Mixp_amp_level(o.Level))
	if o.DType != F32 {
		r.SetDtype(raw.Mixp_dtype(o.DType))
	}
	r.SetEnabled(b2i(!o.Disabled))
	r.SetCache_enabled(b2i(!o.NoCache))
	r.SetUse_promote(b2i(o.UsePromote))
	err := check(raw.Mixp_swig_autocast_push(s.p(), r, raw.JoinNames(o.White), raw.JoinNames(o.Black)))
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	return &AutocastRegion{s: s}, nil
}

// AutocastPolicy opens the region a policy line describes, e.g.
// "O2 bf16 black=softmax,layer_norm promote=1" (mixp_autocast_push_policy).
func (s *Session) AutocastPolicy(policy string) (*AutocastRegion, error) {
	err := check(raw.Mixp_autocast_push_policy(s.p(), policy))
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	return &AutocastRegion{s: s}, nil
}

// Close ends the region (a second Close does nothing).
func (a *AutocastRegion) Close() error {
	if a == nil || a.closed {
		return nil
	}
	a.closed = true
	err := check(raw.Mixp_autocast_pop(a.s.p()))
	runtime.KeepAlive(a.s)
	return err
}

// ScalerMode selects the GradScaler algorithm.
type ScalerMode int

// Scaler modes. Auto is resolved when the scaler is created: disabled inside
// a BF16 autocast region, dynamic otherwise.
const (
	ScalerAuto     ScalerMode = 0
	ScalerDynamic  ScalerMode = 1
	ScalerStatic   ScalerMode = 2
	ScalerDisabled ScalerMode = 3
)

// ScalerOptions configure a GradScaler; start from DefaultScalerOptions.
type ScalerOptions struct {
	Mode                                   ScalerMode
	InitScale, GrowthFactor, BackoffFactor float64
	GrowthInterval, DecrEveryN, Hysteresis int64
	MinScale, MaxScale                     float64
}

// DefaultScalerOptions are PyTorch's GradScaler defaults (2^16, x2 every
// 2000 clean steps, x0.5 on overflow).
func DefaultScalerOptions() ScalerOptions {
	r := raw.NewMixp_grad_scaler_options()
	defer raw.DeleteMixp_grad_scaler_options(r)
	return ScalerOptions{
		Mode: ScalerMode(r.GetMode()), InitScale: r.GetInit_scale(), GrowthFactor: r.GetGrowth_factor(),
		BackoffFactor: r.GetBackoff_factor(), GrowthInterval: r.GetGrowth_interval(),
		DecrEveryN: r.GetDecr_every_n_nan_or_inf(), Hysteresis: r.GetHysteresis(),
		MinScale: r.GetMin_scale(), MaxScale: r.GetMax_scale(),
	}
}

// GradScaler scales the loss and unscales gradients for fp16 training.
type GradScaler struct{ h handle }

func (g *GradScaler) hdl() *handle { return &g.h }

func (g *GradScaler) p() uintptr {
	if g == nil {
		return 0
	}
	return g.h.ptr
}

// NewGradScaler creates a scaler.
func NewGradScaler(s *Session, o ScalerOptions) (*GradScaler, error) {
	r := raw.NewMixp_grad_scaler_options()
	defer raw.DeleteMixp_grad_scaler_options(r)
	r.SetMode(raw.Mixp_scaler_mode(o.Mode))
	r.SetInit_scale(o.InitScale)
	r.SetGrowth_factor(o.GrowthFactor)
	r.SetBackoff_factor(o.BackoffFactor)
	r.SetGrowth_interval(o.GrowthInterval)
	r.SetDecr_every_n_nan_or_inf(o.DecrEveryN)
	r.SetHysteresis(o.Hysteresis)
	r.SetMin_scale(o.MinScale)
	r.SetMax_scale(o.MaxScale)
	var out uintptr
	err := check(raw.Mixp_grad_scaler_create(s.p(), r, &out))
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	g := &GradScaler{}
	track(g, out, raw.Mixp_grad_scaler_destroy)
	return g, nil
}

// Close destroys the scaler.
func (g *GradScaler) Close() error {
	if g != nil {
		g.h.close()
	}
	return nil
}

// Scale is loss * scale (recorded by autograd).
func (g *GradScaler) Scale(loss *Tensor) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return raw.Mixp_grad_scaler_scale(g.p(), loss.p(), out) }, g, loss)
}

func (g *GradScaler) withOpt(o *Optimizer, f func(uintptr, uintptr) raw.Status) error {
	err := check(f(g.p(), o.p()))
	runtime.KeepAlive(g)
	runtime.KeepAlive(o)
	return err
}

// Unscale divides o's gradients by the scale (once per step, before clipping).
func (g *GradScaler) Unscale(o *Optimizer) error { return g.withOpt(o, raw.Mixp_grad_scaler_unscale) }

// Step unscales (unless done) and steps o, skipping the update on overflow.
func (g *GradScaler) Step(o *Optimizer) error { return g.withOpt(o, raw.Mixp_grad_scaler_step) }

// Update ends the iteration: grows or backs off the scale.
func (g *GradScaler) Update() error {
	err := check(raw.Mixp_grad_scaler_update(g.p()))
	runtime.KeepAlive(g)
	return err
}

// Scale value now.
func (g *GradScaler) ScaleValue() (float64, error) {
	var v float64
	err := check(raw.Mixp_grad_scaler_get_scale(g.p(), &v))
	runtime.KeepAlive(g)
	return v, err
}

// FoundInf reports whether the last unscale found an Inf/NaN gradient.
func (g *GradScaler) FoundInf() (bool, error) {
	var v int32
	err := check(raw.Mixp_grad_scaler_found_inf(g.p(), &v))
	runtime.KeepAlive(g)
	return v != 0, err
}

// SaveState serialises the scaler's state (scale, trackers).
func (g *GradScaler) SaveState() ([]byte, error) {
	var n uint64
	if err := check(raw.Mixp_grad_scaler_state_size(g.p(), &n)); err != nil {
		return nil, err
	}
	buf := make([]byte, n)
	var written uint64
	err := check(raw.Mixp_grad_scaler_save_state(g.p(), buf, &written))
	runtime.KeepAlive(g)
	if err != nil {
		return nil, err
	}
	return buf[:written], nil
}

// LoadState restores a state written by SaveState.
func (g *GradScaler) LoadState(state []byte) error {
	err := check(raw.Mixp_grad_scaler_load_state(g.p(), state))
	runtime.KeepAlive(g)
	return err
}

// ClipGradNorm scales o's gradients so that their global L2 norm is at most
// maxNorm, and returns the norm before clipping.
func ClipGradNorm(o *Optimizer, maxNorm float64) (float64, error) {
	var out uintptr
	err := check(raw.Mixp_clip_grad_norm(o.p(), maxNorm, &out))
	runtime.KeepAlive(o)
	if err != nil {
		return math.NaN(), err
	}
	t := newTensor(out)
	defer t.Close()
	return t.Item()
}

// Decorate casts model's parameters to dtype for O2 training, giving
// optimizer fp32 master weights (fetch Parameters() again afterwards).
func Decorate(model *Module, o *Optimizer, dtype DType) error {
	r := raw.NewMixp_decorate_options()
	defer raw.DeleteMixp_decorate_options(r)
	if dtype != F32 {
		r.SetDtype(raw.Mixp_dtype(dtype))
	}
	err := check(raw.Mixp_amp_decorate(model.p(), o.p(), r))
	runtime.KeepAlive(model)
	runtime.KeepAlive(o)
	return err
}
