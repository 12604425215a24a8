package mixp_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"mixp.dev/mixp"
)

// A profiled step: the rows, the table, the trace file, misuse.
func TestProfile(t *testing.T) {
	s := newSession(t)
	lin := ok(mixp.NewLinear(s, 4, 2, true, mixp.F32))(t)
	defer lin.Close()
	params := ok(lin.Parameters())(t)
	opt := ok(mixp.NewOptimizer(s, params, mixp.DefaultOptimizerOptions(mixp.AdamW)))(t)
	defer opt.Close()
	x := ok(mixp.Randn(s, mixp.F32, 8, 4))(t)
	y := ok(mixp.FromInt64(s, []int64{0, 1, 0, 1, 0, 1, 0, 1}, 8))(t)

	wantErr(t, func() error { _, err := s.ProfileEnd(); return err }(), mixp.StatusState, "mixp_profile_end")
	noErr(t, s.ProfileBegin())
	wantErr(t, s.ProfileBegin(), mixp.StatusState, "already being recorded")
	logits := ok(lin.Forward(x))(t)
	loss := ok(mixp.CrossEntropy(logits, y, mixp.Mean))(t)
	noErr(t, opt.ZeroGrad())
	noErr(t, loss.Backward())
	noErr(t, opt.Step())
	p := ok(s.ProfileEnd())(t)
	defer p.Close()

	if p.Len() < 4 {
		t.Fatalf("%d calls recorded", p.Len())
	}
	rows := ok(p.Rows())(t)
	seen := map[string]int64{}
	for i, r := range rows {
		if i > 0 && r.SelfDeviceMs > rows[i-1].SelfDeviceMs {
			t.Fatalf("rows not sorted by self device time: %+v", rows)
		}
		if r.SelfHostMs > r.HostMs+1e-9 || r.Calls < 1 {
			t.Fatalf("row %+v", r)
		}
		key := r.Op
		if r.Backward {
			key += " (backward)"
		}
		seen[key] = r.Calls
	}
	for _, want := range []string{"linear", "cross_entropy", "backward", "linear (backward)", "optimizer_step"} {
		if seen[want] != 1 {
			t.Fatalf("%q: %d calls, rows %v", want, seen[want], seen)
		}
	}
	if table := p.Report(3); !strings.Contains(table, "more rows)") || !strings.Contains(table, "self dev ms") {
		t.Fatalf("report:\n%s", table)
	}
	path := filepath.Join(t.TempDir(), "step.json")
	noErr(t, p.WriteTrace(path))
	var trace struct {
		TraceEvents []struct {
			Name string  `json:"name"`
			Ph   string  `json:"ph"`
			Ts   float64 `json:"ts"`
			Dur  float64 `json:"dur"`
		} `json:"traceEvents"`
	}
	data := ok(os.ReadFile(path))(t)
	noErr(t, json.Unmarshal(data, &trace))
	complete := 0
	for _, e := range trace.TraceEvents {
		if e.Ph == "X" {
			complete++
		}
	}
	if int64(complete) != p.Len() && int64(complete) != 2*p.Len() {
		t.Fatalf("%d complete events for %d calls", complete, p.Len())
	}
	wantErr(t, p.WriteTrace(""), mixp.StatusInvalidArgument, "path is empty")
	noErr(t, p.Close())
	if p.Len() != -1 {
		t.Fatal("Len after Close")
	}
	m := ok(s.Memory())(t)
	if m.Device < m.Current || m.DevicePeak < m.Device || m.ReservedPeak < m.Reserved {
		t.Fatalf("memory %+v", m)
	}
	mixp.CloseAll(x, y, logits, loss)
	mixp.CloseAll(params...)
}
