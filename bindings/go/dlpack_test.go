package mixp_test

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"unsafe"

	"mixp.dev/mixp"
	"mixp.dev/mixp/internal/dlpacktest"
)

// A tensor made by a foreign producer (column-major, so strides matter) is
// read in place, shares its memory, and is handed back to its producer's
// deleter exactly once, when the last mixp reference goes.
func TestDLPackFromForeignProducer(t *testing.T) {
	s := newSession(t)
	vals := []float32{1, 2, 3, 4, 5, 6}
	before := dlpacktest.Deletes()
	p := dlpacktest.NewLegacy(2, 3, vals, true, 1)
	x := ok(mixp.FromDLPack(s, p))(t)
	if got := ok(x.Shape())(t); !reflect.DeepEqual(got, []int64{2, 3}) {
		t.Fatalf("shape %v", got)
	}
	if got := ok(x.Float32s())(t); !reflect.DeepEqual(got, vals) {
		t.Fatalf("values %v, want %v", got, vals)
	}
	dlpacktest.SetLegacy(p, 1, 2, 60) // the producer writes; mixp sees it
	if got := ok(x.Float32s())(t); got[5] != 60 {
		t.Fatalf("no shared memory: %v", got)
	}
	sq := ok(x.Mul(x))(t) // reads the producer's memory in place
	if dlpacktest.Deletes() != before {
		t.Fatal("deleter ran while mixp still holds the tensor")
	}
	noErr(t, x.Close())
	if got := dlpacktest.Deletes() - before; got != 1 {
		t.Fatalf("deleter ran %d times after the last reference, want 1", got)
	}
	sq.Close()

	// DLPack >= 1.0, and its read-only flag, which mixp refuses (its
	// tensors are writable): the failed call takes nothing.
	v := dlpacktest.NewVersioned(1, 2, []float32{7, 8}, false)
	y := ok(mixp.FromDLPackVersioned(s, v))(t)
	if got := ok(y.Float32s())(t); !reflect.DeepEqual(got, []float32{7, 8}) {
		t.Fatalf("versioned values %v", got)
	}
	y.Close()
	ro := dlpacktest.NewVersioned(1, 2, []float32{7, 8}, true)
	n := dlpacktest.Deletes()
	_, err := mixp.FromDLPackVersioned(s, ro)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_tensor_from_dlpack_versioned")
	if dlpacktest.Deletes() != n {
		t.Fatal("a refused tensor was deleted")
	}
	mixp.ReleaseDLPackVersioned(ro)
	if dlpacktest.Deletes() != n+1 {
		t.Fatal("ReleaseDLPackVersioned did not call the deleter")
	}
}

// A mixp tensor handed to a foreign consumer: its layout as dlpack.h says,
// writes seen both ways, alive after mixp's handle is closed until the
// consumer calls the deleter.
func TestDLPackToForeignConsumer(t *testing.T) {
	s := newSession(t)
	x := ok(mixp.FromFloat32(s, []float32{1, 2, 3, 4, 5, 6}, 2, 3))(t)
	p := ok(x.ToDLPack())(t)
	m := dlpacktest.ReadLegacy(p)
	want := dlpacktest.Matrix{Device: 1, DTypeCode: 2, Bits: 32, Lanes: 1,
		Shape: []int64{2, 3}, Values: []float32{1, 2, 3, 4, 5, 6}}
	if !reflect.DeepEqual(m, want) {
		t.Fatalf("consumer reads %+v, want %+v", m, want)
	}
	dlpacktest.SetLegacy(p, 0, 0, -1)
	if got := ok(x.Float32s())(t); got[0] != -1 {
		t.Fatalf("consumer's write not seen: %v", got)
	}
	noErr(t, x.Close())
	if got := dlpacktest.ReadLegacy(p).Values; got[0] != -1 || got[5] != 6 {
		t.Fatalf("memory not kept alive for the consumer: %v", got)
	}
	dlpacktest.ConsumeLegacy(p)

	y := ok(mixp.FromFloat32(s, []float32{3, 4}, 1, 2))(t)
	defer y.Close()
	v := ok(y.ToDLPackVersioned())(t)
	mv := dlpacktest.ReadVersioned(v)
	if mv.Major != 1 || mv.Flags != 0 || !reflect.DeepEqual(mv.Values, []float32{3, 4}) {
		t.Fatalf("versioned export %+v", mv)
	}
	dlpacktest.ConsumeVersioned(v)

	// Round trip between two sessions: the second imports what the first
	// exported, no copy.
	s2 := newSession(t)
	q := ok(y.ToDLPack())(t)
	z := ok(mixp.FromDLPack(s2, q))(t)
	defer z.Close()
	if got := ok(z.Float32s())(t); !reflect.DeepEqual(got, []float32{3, 4}) {
		t.Fatalf("round trip %v", got)
	}
}

func TestDLPackMisuse(t *testing.T) {
	s := newSession(t)
	_, err := mixp.FromDLPack(s, nil)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_tensor_from_dlpack", "managed")
	_, err = mixp.FromDLPack(nil, nil)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_tensor_from_dlpack")
	// Two lanes: an element type mixp does not have; nothing is taken.
	p := dlpacktest.NewLegacy(1, 2, []float32{1, 2}, false, 2)
	n := dlpacktest.Deletes()
	_, err = mixp.FromDLPack(s, p)
	wantErr(t, err, mixp.StatusDType, "mixp_tensor_from_dlpack")
	if dlpacktest.Deletes() != n {
		t.Fatal("a refused tensor was deleted")
	}
	mixp.ReleaseDLPack(p)
	if dlpacktest.Deletes() != n+1 {
		t.Fatal("ReleaseDLPack did not call the deleter")
	}
	mixp.ReleaseDLPack(nil) // no-op
	mixp.ReleaseDLPackVersioned(nil)

	x := ok(mixp.FromFloat32(s, []float32{1}, 1))(t)
	x.Close()
	_, err = x.ToDLPack()
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_tensor_to_dlpack")
	_, err = x.ToDLPackVersioned()
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_tensor_to_dlpack_versioned")
	var none unsafe.Pointer
	_, err = mixp.FromDLPackVersioned(s, none)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_tensor_from_dlpack_versioned")
}

const hfZoo = "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6 gelu=tanh"

func gptLogits(t *testing.T, s *mixp.Session, m *mixp.Module) []float32 {
	t.Helper()
	tokens := ok(mixp.FromInt64(s, []int64{1, 5, 12, 0, 7, 3}, 1, 6))(t)
	defer tokens.Close()
	y := ok(m.Forward(tokens))(t)
	defer y.Close()
	return ok(y.Float32s())(t)
}

// Export to the Hugging Face GPT-2 layout and import into a model of other
// random weights: the logits come back bit for bit.
func TestHFGPT2RoundTrip(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpt2")
	s := newSession(t)
	a := ok(mixp.NewModel(s, hfZoo))(t)
	defer a.Close()
	noErr(t, a.SaveHFGPT2(dir, mixp.F32, nil))
	for _, f := range []string{"model.safetensors", "config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("export wrote no %s: %v", f, err)
		}
	}
	s2, err := mixp.NewSession(mixp.SessionOptions{Seed: 2, Threads: 1})
	noErr(t, err)
	defer s2.Close()
	b := ok(mixp.NewModel(s2, hfZoo))(t)
	defer b.Close()
	params := ok(b.Parameters())(t)
	opt := ok(mixp.NewOptimizer(s2, params, mixp.DefaultOptimizerOptions(mixp.AdamW)))(t)
	defer opt.Close()
	mixp.CloseAll(params...)
	if reflect.DeepEqual(gptLogits(t, s, a), gptLogits(t, s2, b)) {
		t.Fatal("two seeds gave the same model: the test would prove nothing")
	}
	noErr(t, b.LoadHFGPT2(dir, opt))
	if !reflect.DeepEqual(gptLogits(t, s, a), gptLogits(t, s2, b)) {
		t.Fatal("imported model's logits differ from the exported model's")
	}
}

func TestHFGPT2Misuse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "gpt2")
	s := newSession(t)
	a := ok(mixp.NewModel(s, hfZoo))(t)
	defer a.Close()
	noErr(t, a.SaveHFGPT2(dir, mixp.BF16, nil))
	erf := ok(mixp.NewModel(s, "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6"))(t)
	defer erf.Close()
	wantErr(t, erf.LoadHFGPT2(dir, nil), mixp.StatusInvalidArgument, "mixp_model_load_hf_gpt2", "gelu")
	wider := ok(mixp.NewModel(s, "gpt n_layer=2 n_head=2 n_embd=16 vocab=13 block_size=6 gelu=tanh"))(t)
	defer wider.Close()
	wantErr(t, wider.LoadHFGPT2(dir, nil), mixp.StatusShape, "mixp_model_load_hf_gpt2")
	wantErr(t, a.LoadHFGPT2(filepath.Join(dir, "missing"), nil), mixp.StatusIO, "mixp_model_load_hf_gpt2")
	wantErr(t, a.SaveHFGPT2(dir, mixp.I64, nil), mixp.StatusDType, "mixp_model_save_hf_gpt2")
	var closed *mixp.Module
	wantErr(t, closed.LoadHFGPT2(dir, nil), mixp.StatusInvalidArgument, "mixp_model_load_hf_gpt2")
}
