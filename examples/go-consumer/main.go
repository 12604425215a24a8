// Trains a small MLP on synthetic data with bf16 autocast through an
// installed mixp, and prints the first and last epoch's mean loss.
package main

import (
	"fmt"
	"os"

	"mixp.dev/mixp"
)

func main() {
	s := mixp.Must(mixp.NewSession(mixp.SessionOptions{Seed: 1}))
	defer s.Close()
	data := mixp.Must(mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: 1024}))
	model := mixp.Must(mixp.NewModel(s, "mlp in=784 hidden=64 classes=10"))
	opt := mixp.Must(mixp.NewOptimizer(s, mixp.Must(model.Parameters()), mixp.DefaultOptimizerOptions(mixp.AdamW)))
	loader := mixp.Must(mixp.NewLoader(data, mixp.LoaderOptions{BatchSize: 64}))
	var first, last float64
	for epoch := 1; epoch <= 3; epoch++ {
		sum := 0.0
		for b := mixp.Must(loader.Next()); b != nil; b = mixp.Must(loader.Next()) {
			logits := mixp.Must(model.Forward(b.X))
			loss := mixp.Must(mixp.CrossEntropy(logits, b.Y, mixp.Mean))
			sum += mixp.Must(opt.Minimize(loss))
			mixp.CloseAll(b.X, b.Y, logits, loss)
		}
		mean := sum / float64(loader.NumBatches())
		if epoch == 1 {
			first = mean
		}
		last = mean
	}
	fmt.Printf("mixp %s from Go: mean loss %.4f -> %.4f\n", mixp.Version(), first, last)
	if !(last < first) {
		fmt.Fprintln(os.Stderr, "the loss did not fall")
		os.Exit(1)
	}
}
