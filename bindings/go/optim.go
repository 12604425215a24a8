package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// OptimizerKind selects the algorithm.
type OptimizerKind int

// The optimizers of mixp.h.
const (
	SGD   OptimizerKind = 0
	Adam  OptimizerKind = 1
	AdamW OptimizerKind = 2
)

// OptimizerOptions are the hyper-parameters; start from DefaultOptimizerOptions.
type OptimizerOptions struct {
	Kind                    OptimizerKind
	LR                      float64
	Momentum, Dampening     float64
	Nesterov                bool
	WeightDecay             float64
	Beta1, Beta2, Eps       float64
	WarmupCosine            bool // warmup + cosine schedule instead of a constant LR
	WarmupSteps, TotalSteps int64
	MinLR                   float64
	// StateDType stores the moments / momentum as F32 (default) or BF16
	// (half the memory).
	StateDType DType
	// StochasticRounding writes BF16 parameters kept without fp32 masters
	// with stochastic rounding, so updates below half a bf16 step survive.
	StochasticRounding bool
}

// DefaultOptimizerOptions are mixp's defaults for kind (AdamW: lr 1e-3,
// weight decay 0.01, betas 0.9/0.999, eps 1e-8).
func DefaultOptimizerOptions(kind OptimizerKind) OptimizerOptions {
	r := raw.NewMixp_optimizer_options(raw.Mixp_optimizer_kind(kind))
	defer raw.DeleteMixp_optimizer_options(r)
	return OptimizerOptions{
		Kind: kind, LR: r.GetLr(), Momentum: r.GetMomentum(), Dampening: r.GetDampening(),
		Nesterov: r.GetNesterov() != 0, WeightDecay: r.GetWeight_decay(),
		Beta1: r.GetBeta1(), Beta2: r.GetBeta2(), Eps: r.GetEps(),
		WarmupCosine: r.GetSchedule() == raw.MIXP_LR_WARMUP_COSINE,
		WarmupSteps:  r.GetWarmup_steps(), TotalSteps: r.GetTotal_steps(), MinLR: r.GetMin_lr(),
		StateDType: DType(r.GetState_dtype()), StochasticRounding: r.GetStochastic_rounding() != 0,
	}
}

func (o OptimizerOptions) toRaw() raw.Mixp_optimizer_options {
	r := raw.NewMixp_optimizer_options(raw.Mixp_optimizer_kind(o.Kind))
	r.SetLr(o.LR)
	r.SetMomentum(o.Momentum)
	r.SetDampening(o.Dampening)
	r.SetNesterov(b2i(o.Nesterov))
	r.SetWeight_decay(o.WeightDecay)
	r.SetBeta1(o.Beta1)
	r.SetBeta2(o.Beta2)
	r.SetEps(o.Eps)
	if o.WarmupCosine {
		r.SetSchedule(raw.MIXP_LR_WARMUP_COSINE)
	} else {
		r.SetSchedule(raw.MIXP_LR_CONSTANT)
	}
	r.SetWarmup_steps(o.WarmupSteps)
	r.SetTotal_steps(o.TotalSteps)
	r.SetMin_lr(o.MinLR)
	r.SetState_dtype(raw.Mixp_dtype(o.StateDType))
	r.SetStochastic_rounding(b2i(o.StochasticRounding))
	return r
}

// Optimizer updates a set of parameters from their gradients.
type Optimizer struct{ h handle }

func (o *Optimizer) hdl() *handle { return &o.h }

func (o *Optimizer) p() uintptr {
	if o == nil {
		return 0
	}
	return o.h.ptr
}

// NewOptimizer creates an optimizer over params (it holds its own references).
func NewOptimizer(s *Session, params []*Tensor, opts OptimizerOptions) (*Optimizer, error) {
	r := opts.toRaw()
	defer raw.DeleteMixp_optimizer_options(r)
	var out uintptr
	err := check(raw.Mixp_optimizer_create(s.p(), ptrs(params), r, &out))
	runtime.KeepAlive(s)
	runtime.KeepAlive(params)
	if err != nil {
		return nil, err
	}
	o := &Optimizer{}
	track(o, out, raw.Mixp_optimizer_destroy)
	return o, nil
}

// Close destroys the optimizer.
func (o *Optimizer) Close() error {
	if o != nil {
		o.h.close()
	}
	return nil
}

func (o *Optimizer) call(f func(uintptr) raw.Status) error {
	err := check(f(o.p()))
	runtime.KeepAlive(o)
	return err
}

// Step applies one update.
func (o *Optimizer) Step() error { return o.call(raw.Mixp_optimizer_step) }

// ZeroGrad drops the parameters' gradients.
func (o *Optimizer) ZeroGrad() error { return o.call(raw.Mixp_optimizer_zero_grad) }

// Minimize is one plain training step on a scalar loss: ZeroGrad,
// loss.Backward, Step. It returns the loss value.
func (o *Optimizer) Minimize(loss *Tensor) (float64, error) {
	if err := o.ZeroGrad(); err != nil {
		return 0, err
	}
	if err := loss.Backward(); err != nil {
		return 0, err
	}
	if err := o.Step(); err != nil {
		return 0, err
	}
	return loss.Item()
}

// LR is the learning rate of the next step.
func (o *Optimizer) LR() (float64, error) {
	var lr float64
	err := o.call(func(p uintptr) raw.Status { return raw.Mixp_optimizer_get_lr(p, &lr) })
	return lr, err
}

// SetLR sets the base learning rate.
func (o *Optimizer) SetLR(lr float64) error {
	return o.call(func(p uintptr) raw.Status { return raw.Mixp_optimizer_set_lr(p, lr) })
}

// NonfiniteGrads lists the parameters (indices in the order given to
// NewOptimizer) whose gradient holds NaN or Inf now: what overflowed on a
// step the scaler skipped. It scans the gradients (waits for the device).
func (o *Optimizer) NonfiniteGrads() ([]int, error) {
	var found []int
	for {
		var i int32
		err := check(raw.Mixp_swig_optimizer_nonfinite_grad(o.p(), len(found), &i))
		runtime.KeepAlive(o)
		if err != nil {
			return nil, err
		}
		if i < 0 {
			return found, nil
		}
		found = append(found, int(i))
	}
}

// StepCount is the number of steps taken (skipped AMP steps included).
func (o *Optimizer) StepCount() int64 {
	n := raw.Mixp_optimizer_step_count(o.p())
	runtime.KeepAlive(o)
	return n
}
