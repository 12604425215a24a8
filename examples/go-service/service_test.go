package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every request has a deadline and every wait a bounded number of polls.
var client = &http.Client{Timeout: 20 * time.Second}

func do(t *testing.T, method, url string, body any, want int) map[string]any {
	t.Helper()
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	if resp.StatusCode != want {
		t.Fatalf("%s %s: HTTP %d (want %d): %v", method, url, resp.StatusCode, want, out)
	}
	return out
}

// poll GETs the job until cond holds, at most 400 times 50 ms apart.
func poll(t *testing.T, base string, id int, cond func(map[string]any) bool) map[string]any {
	t.Helper()
	var st map[string]any
	for i := 0; i < 400; i++ {
		st = do(t, "GET", fmt.Sprintf("%s/jobs/%d", base, id), nil, http.StatusOK)
		if cond(st) {
			return st
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("job %d: condition not reached, last state %v", id, st)
	return nil
}

func startServer(t *testing.T) (string, context.CancelFunc, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, ln) }()
	return "http://" + ln.Addr().String(), cancel, done
}

var promLine = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*(\{([a-zA-Z_][a-zA-Z0-9_]*="[^"]*",?)*\})? -?[0-9.eE+-]+$|^[a-zA-Z_:][a-zA-Z0-9_:]*(\{.*\})? (NaN|[+-]Inf)$`)

// The service starts, trains a small job to the end, reports it, exposes
// metrics, cancels a long job and shuts down gracefully.
func TestServiceEndToEnd(t *testing.T) {
	base, stop, done := startServer(t)

	// bad requests carry the reason; a bad model config carries mixp's message
	bad := do(t, "POST", base+"/jobs", map[string]any{"model": "mlp in=784 nonsense=1"}, http.StatusBadRequest)
	if msg, _ := bad["error"].(string); !strings.Contains(msg, "mixp_model_create") || bad["status"] != float64(-1) {
		t.Fatalf("bad model: %v", bad)
	}
	do(t, "POST", base+"/jobs", map[string]any{"amp": "O7"}, http.StatusBadRequest)
	do(t, "GET", base+"/jobs/99", nil, http.StatusNotFound)

	// a tiny O1 fp16 job runs to the end
	job := do(t, "POST", base+"/jobs", map[string]any{"model": "mlp", "amp": "O1", "epochs": 2, "samples": 256, "batch": 32}, http.StatusCreated)
	id := int(job["id"].(float64))
	st := poll(t, base, id, func(s map[string]any) bool { return s["state"] != "running" })
	if st["state"] != "done" || st["step"] != float64(16) || st["epoch"] != float64(2) {
		t.Fatalf("finished job: %v", st)
	}
	if loss := st["loss"].(float64); !(loss > 0 && loss < 10) {
		t.Fatalf("loss %v", loss)
	}
	if st["loss_scale"].(float64) < 1 || st["samples_per_sec"].(float64) <= 0 {
		t.Fatalf("scale/throughput: %v", st)
	}

	// a long O2 job is cancelled while it runs
	long := do(t, "POST", base+"/jobs", map[string]any{"model": "mlp", "amp": "O2", "epochs": 100000}, http.StatusCreated)
	lid := int(long["id"].(float64))
	poll(t, base, lid, func(s map[string]any) bool { return s["step"].(float64) >= 2 })
	del := do(t, "DELETE", fmt.Sprintf("%s/jobs/%d", base, lid), nil, http.StatusOK)
	if del["state"] != "cancelled" {
		t.Fatalf("after DELETE: %v", del)
	}

	// metrics: Prometheus text format, one sample per job and metric
	resp, err := client.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Errorf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	samples := map[string]string{}
	for sc.Scan() {
		l := sc.Text()
		if strings.HasPrefix(l, "# HELP ") || strings.HasPrefix(l, "# TYPE ") {
			continue
		}
		if !promLine.MatchString(l) {
			t.Errorf("not a Prometheus sample line: %q", l)
			continue
		}
		i := strings.LastIndexByte(l, ' ')
		samples[l[:i]] = l[i+1:]
	}
	resp.Body.Close()
	want := map[string]string{
		`mixp_jobs{state="done"}`:      "1",
		`mixp_jobs{state="cancelled"}`: "1",
		fmt.Sprintf(`mixp_job_steps_total{job="%d",model="mlp",amp="O1"}`, id): "16",
	}
	for k, v := range want {
		if samples[k] != v {
			t.Errorf("metric %s = %q, want %q", k, samples[k], v)
		}
	}
	if _, ok := samples[fmt.Sprintf(`mixp_job_loss_scale{job="%d",model="mlp",amp="O2"}`, lid)]; !ok {
		t.Errorf("no loss scale sample for the cancelled job: %v", samples)
	}

	// graceful shutdown with a job still running: Run returns, the job is cancelled
	running := do(t, "POST", base+"/jobs", map[string]any{"epochs": 100000}, http.StatusCreated)
	poll(t, base, int(running["id"].(float64)), func(s map[string]any) bool { return s["step"].(float64) >= 1 })
	stop()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the service did not shut down within 30 s")
	}
	if _, err := client.Get(base + "/metrics"); err == nil {
		t.Fatal("the service still answers after shutdown")
	}
}
