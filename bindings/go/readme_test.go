package mixp_test

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strings"
	"testing"

	"mixp.dev/mixp"
)

// readmeTrain is the README's Go training loop: the lines between the
// markers are compared with README.md by TestReadmeGoSnippet.
func readmeTrain() {
	// README:begin
	s := mixp.Must(mixp.NewSession(mixp.SessionOptions{Seed: 1}))
	data := mixp.Must(mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: 1024}))
	model := mixp.Must(mixp.NewModel(s, "mlp in=784 hidden=64 classes=10"))
	opt := mixp.Must(mixp.NewOptimizer(s, mixp.Must(model.Parameters()), mixp.DefaultOptimizerOptions(mixp.AdamW)))
	loader := mixp.Must(mixp.NewLoader(data, mixp.LoaderOptions{BatchSize: 64}))
	for epoch := 1; epoch <= 3; epoch++ {
		sum := 0.0
		for b := mixp.Must(loader.Next()); b != nil; b = mixp.Must(loader.Next()) {
			logits := mixp.Must(model.Forward(b.X))
			loss := mixp.Must(mixp.CrossEntropy(logits, b.Y, mixp.Mean))
			sum += mixp.Must(opt.Minimize(loss)) // ZeroGrad, Backward, Step
			mixp.CloseAll(b.X, b.Y, logits, loss)
		}
		fmt.Printf("epoch %d: mean loss %.4f\n", epoch, sum/float64(loader.NumBatches()))
	}
	// README:end
}

func snippetBetweenMarkers(t *testing.T, path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	in := false
	for _, l := range strings.Split(string(b), "\n") {
		switch strings.TrimSpace(l) {
		case "// README:begin":
			in = true
		case "// README:end":
			return lines
		default:
			if in {
				lines = append(lines, strings.TrimPrefix(l, "\t"))
			}
		}
	}
	t.Fatalf("%s: no README markers", path)
	return nil
}

// The ```go block of README.md's Go section must be the tested loop above.
func TestReadmeGoSnippet(t *testing.T) {
	readme := os.Getenv("MIXP_README")
	if readme == "" {
		readme = "../../README.md"
	}
	b, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	want := snippetBetweenMarkers(t, "readme_test.go")
	if len(want) > 15 {
		t.Errorf("the README loop has %d lines, the issue allows 15", len(want))
	}
	sec := strings.Index(string(b), "\n## Go\n")
	if sec < 0 {
		t.Fatal("README.md has no '## Go' section")
	}
	rest := string(b)[sec:]
	start := strings.Index(rest, "```go\n")
	if start < 0 {
		t.Fatal("README.md's Go section has no ```go block")
	}
	rest = rest[start+len("```go\n"):]
	got := strings.Split(strings.TrimRight(rest[:strings.Index(rest, "```")], "\n"), "\n")
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("README.md's Go loop differs from readme_test.go:\n--- README\n%s\n--- test\n%s",
			strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The README loop runs and its mean loss falls epoch after epoch.
func TestReadmeGoLoopTrains(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	done := make(chan []string)
	go func() {
		var out []string
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		io.Copy(io.Discard, r)
		done <- out
	}()
	func() {
		defer func() { os.Stdout = stdout; w.Close() }()
		readmeTrain()
	}()
	lines := <-done
	if len(lines) != 3 {
		t.Fatalf("want 3 epoch lines, got %q", lines)
	}
	prev := 1e9
	for i, l := range lines {
		var e int
		var loss float64
		if _, err := fmt.Sscanf(l, "epoch %d: mean loss %f", &e, &loss); err != nil || e != i+1 {
			t.Fatalf("line %q: %v", l, err)
		}
		if !(loss < prev) {
			t.Errorf("epoch %d: mean loss %.4f did not fall below %.4f", e, loss, prev)
		}
		prev = loss
	}
}
