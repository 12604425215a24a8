package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"time"

	"mixp.dev/mixp"
)

// JobRequest is the body of POST /jobs.
type JobRequest struct {
	Model   string `json:"model"`   // "mlp", "cnn" or a full zoo config ("mlp in=784 hidden=64 classes=10")
	AMP     string `json:"amp"`     // "O0", "O1" (default) or "O2"
	DType   string `json:"dtype"`   // "f16" (default) or "bf16": the low-precision type
	Epochs  int    `json:"epochs"`  // default 1
	Samples int64  `json:"samples"` // synthetic 1x28x28 samples, default 2048
	Batch   int64  `json:"batch"`   // default 64
	Seed    uint64 `json:"seed"`    // default 1
	Threads int    `json:"threads"` // CPU threads of the job's session, default 1
}

// JobStatus is what GET /jobs/{id} reports.
type JobStatus struct {
	ID            int     `json:"id"`
	State         string  `json:"state"` // queued, running, done, failed, cancelled
	Model         string  `json:"model"`
	AMP           string  `json:"amp"`
	Epoch         int     `json:"epoch"`
	Step          int64   `json:"step"`
	Loss          float64 `json:"loss"`
	LossScale     float64 `json:"loss_scale"`
	SamplesPerSec float64 `json:"samples_per_sec"`
	Error         string  `json:"error,omitempty"`
}

type job struct {
	mu     sync.Mutex
	st     JobStatus
	cancel context.CancelFunc
	done   chan struct{}
}

func (j *job) status() JobStatus {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.st
}

func (j *job) update(f func(*JobStatus)) {
	j.mu.Lock()
	f(&j.st)
	j.mu.Unlock()
}

// normalise fills defaults and rejects what the service cannot run; the
// model config itself is checked by mixp when the job starts.
func (r *JobRequest) normalise() (config string, level mixp.AMPLevel, dtype mixp.DType, err error) {
	switch strings.ToUpper(r.AMP) {
	case "", "O1":
		level, r.AMP = mixp.O1, "O1"
	case "O0":
		level, r.AMP = mixp.O0, "O0"
	case "O2":
		level, r.AMP = mixp.O2, "O2"
	default:
		return "", 0, 0, fmt.Errorf("amp must be O0, O1 or O2, got %q", r.AMP)
	}
	switch r.DType {
	case "", "f16":
		dtype = mixp.F16
	case "bf16":
		dtype = mixp.BF16
	default:
		return "", 0, 0, fmt.Errorf("dtype must be f16 or bf16, got %q", r.DType)
	}
	switch {
	case r.Model == "" || r.Model == "mlp":
		r.Model, config = "mlp", "mlp in=784 hidden=128 classes=10"
	case r.Model == "cnn":
		config = "cnn in_channels=1 classes=10 width=8 blocks=2 image_size=28 hidden=32"
	default:
		config = r.Model
	}
	if r.Epochs == 0 {
		r.Epochs = 1
	}
	if r.Samples == 0 {
		r.Samples = 2048
	}
	if r.Batch == 0 {
		r.Batch = 64
	}
	if r.Seed == 0 {
		r.Seed = 1
	}
	if r.Threads == 0 {
		r.Threads = 1
	}
	if r.Epochs < 0 || r.Samples < 0 || r.Batch < 0 || r.Threads < 0 {
		return "", 0, 0, errors.New("epochs, samples, batch and threads must not be negative")
	}
	return config, level, dtype, nil
}

// train runs one job on its own session: sessions are single-goroutine
// objects, and the job's goroutine is the only one touching them. It returns
// ctx.Err() when cancelled between two steps.
func train(ctx context.Context, r JobRequest, config string, level mixp.AMPLevel, dtype mixp.DType, j *job) error {
	s, err := mixp.NewSession(mixp.SessionOptions{Seed: r.Seed, Threads: r.Threads})
	if err != nil {
		return err
	}
	defer s.Close()
	data, err := mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: r.Samples, Seed: r.Seed})
	if err != nil {
		return err
	}
	defer data.Close()
	loader, err := mixp.NewLoader(data, mixp.LoaderOptions{BatchSize: r.Batch, Seed: r.Seed})
	if err != nil {
		return err
	}
	defer loader.Close()
	model, err := mixp.NewModel(s, config)
	if err != nil {
		return err
	}
	defer model.Close()
	params, err := model.Parameters()
	if err != nil {
		return err
	}
	opt, err := mixp.NewOptimizer(s, params, mixp.DefaultOptimizerOptions(mixp.AdamW))
	mixp.CloseAll(params...) // the optimizer holds its own references
	if err != nil {
		return err
	}
	defer opt.Close()
	if level == mixp.O2 {
		if err := mixp.Decorate(model, opt, dtype); err != nil {
			return err
		}
	}
	so := mixp.DefaultScalerOptions()
	so.Mode = mixp.ScalerDynamic
	if level == mixp.O0 || dtype == mixp.BF16 {
		so.Mode = mixp.ScalerDisabled // bf16 has fp32's range: nothing to scale
	}
	scaler, err := mixp.NewGradScaler(s, so)
	if err != nil {
		return err
	}
	defer scaler.Close()

	start := time.Now()
	var samples int64
	for epoch := 1; epoch <= r.Epochs; epoch++ {
		j.update(func(st *JobStatus) { st.Epoch = epoch })
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			b, err := loader.Next()
			if err != nil {
				return err
			}
			if b == nil {
				break
			}
			n := b.X.Numel() / 784
			loss, err := step(s, model, opt, scaler, level, dtype, b)
			if err != nil {
				return err
			}
			scale, err := scaler.ScaleValue()
			if err != nil {
				return err
			}
			samples += n
			rate := float64(samples) / time.Since(start).Seconds()
			j.update(func(st *JobStatus) {
				st.Step++
				st.Loss, st.LossScale, st.SamplesPerSec = loss, scale, rate
			})
		}
	}
	return nil
}

func step(s *mixp.Session, model *mixp.Module, opt *mixp.Optimizer, scaler *mixp.GradScaler,
	level mixp.AMPLevel, dtype mixp.DType, b *mixp.Batch) (float64, error) {
	defer b.Close()
	region, err := s.Autocast(mixp.AutocastOptions{Level: level, DType: dtype})
	if err != nil {
		return 0, err
	}
	logits, err := model.Forward(b.X)
	var loss *mixp.Tensor
	if err == nil {
		loss, err = mixp.CrossEntropy(logits, b.Y, mixp.Mean)
	}
	if cerr := region.Close(); err == nil {
		err = cerr
	}
	defer mixp.CloseAll(logits, loss)
	if err != nil {
		return 0, err
	}
	if err := opt.ZeroGrad(); err != nil {
		return 0, err
	}
	scaled, err := scaler.Scale(loss)
	if err != nil {
		return 0, err
	}
	defer scaled.Close()
	if err := scaled.Backward(); err != nil {
		return 0, err
	}
	if err := scaler.Step(opt); err != nil {
		return 0, err
	}
	if err := scaler.Update(); err != nil {
		return 0, err
	}
	v, err := loss.Item()
	if err == nil && math.IsNaN(v) {
		return v, errors.New("the loss is NaN")
	}
	return v, err
}
