// The cross-language run from Go (see train.c): the same calls through the
// idiomatic package mixp.dev/mixp must give the same final loss, bit for bit.
// Built by bindings/go/CMakeLists.txt as mixp-train-go.
package main

import (
	"fmt"
	"math"
	"os"

	"mixp.dev/mixp"
)

const steps = 200

func run() error {
	s, err := mixp.NewSession(mixp.SessionOptions{Seed: 1, Threads: 2})
	if err != nil {
		return err
	}
	defer s.Close()
	data, err := mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: 4096, Seed: 1})
	if err != nil {
		return err
	}
	defer data.Close()
	loader, err := mixp.NewLoader(data, mixp.LoaderOptions{BatchSize: 64, Seed: 1})
	if err != nil {
		return err
	}
	defer loader.Close()
	model, err := mixp.NewModel(s, "mlp in=784 hidden=256,128 classes=10")
	if err != nil {
		return err
	}
	defer model.Close()
	params, err := model.Parameters()
	if err != nil {
		return err
	}
	defer mixp.CloseAll(params...)
	opt, err := mixp.NewOptimizer(s, params, mixp.DefaultOptimizerOptions(mixp.AdamW))
	if err != nil {
		return err
	}
	defer opt.Close()
	so := mixp.DefaultScalerOptions()
	so.Mode = mixp.ScalerDynamic
	scaler, err := mixp.NewGradScaler(s, so)
	if err != nil {
		return err
	}
	defer scaler.Close()

	last := 0.0
	for step := 0; step < steps; step++ {
		b, err := loader.Next()
		if err == nil && b == nil { // end of an epoch: the next call starts another
			b, err = loader.Next()
		}
		if err != nil {
			return err
		}
		if last, err = trainStep(s, model, opt, scaler, b); err != nil {
			return err
		}
	}
	scale, err := scaler.ScaleValue()
	if err != nil {
		return err
	}
	fmt.Printf("final_loss=%.9g scale=%g\n", last, scale)
	fmt.Printf("final_loss_bits=0x%016x\n", math.Float64bits(last))
	return nil
}

func trainStep(s *mixp.Session, model *mixp.Module, opt *mixp.Optimizer, scaler *mixp.GradScaler, b *mixp.Batch) (float64, error) {
	defer b.Close()
	region, err := s.Autocast(mixp.AutocastOptions{Level: mixp.O1, DType: mixp.BF16})
	if err != nil {
		return 0, err
	}
	logits, err := model.Forward(b.X)
	if err != nil {
		region.Close()
		return 0, err
	}
	defer logits.Close()
	loss, err := mixp.CrossEntropy(logits, b.Y, mixp.Mean)
	if cerr := region.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return 0, err
	}
	defer loss.Close()
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
	return loss.Item()
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
