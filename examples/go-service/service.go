package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"

	"mixp.dev/mixp"
)

// Service runs training jobs in the background and serves their state.
type Service struct {
	mu     sync.Mutex
	jobs   map[int]*job
	nextID int
	ctx    context.Context // cancelled by Close: every job stops
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// NewService is an empty service.
func NewService() *Service {
	ctx, stop := context.WithCancel(context.Background())
	return &Service{jobs: map[int]*job{}, ctx: ctx, stop: stop}
}

// Close cancels every job and waits until their goroutines have released
// their mixp objects.
func (sv *Service) Close() {
	sv.stop()
	sv.wg.Wait()
}

// Handler routes POST /jobs, GET and DELETE /jobs/{id} and GET /metrics.
func (sv *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/jobs", sv.handleJobs)
	mux.HandleFunc("/jobs/", sv.handleJob)
	mux.HandleFunc("/metrics", sv.handleMetrics)
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	body := map[string]any{"error": err.Error()}
	var me *mixp.Error
	if errors.As(err, &me) {
		body["status"] = int(me.Status)
	}
	writeJSON(w, code, body)
}

func (sv *Service) handleJobs(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		writeError(w, http.StatusMethodNotAllowed, errors.New("use POST /jobs"))
		return
	}
	var req JobRequest
	dec := json.NewDecoder(io.LimitReader(r.Body, 1<<16))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		writeError(w, http.StatusBadRequest, fmt.Errorf("bad job request: %w", err))
		return
	}
	config, level, dtype, err := req.normalise()
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	// The model config is validated by mixp itself before the job is accepted,
	// so a bad config is a 400 carrying mixp's message.
	if err := checkModel(config); err != nil {
		writeError(w, http.StatusBadRequest, err)
		return
	}
	sv.mu.Lock()
	if sv.ctx.Err() != nil {
		sv.mu.Unlock()
		writeError(w, http.StatusServiceUnavailable, errors.New("shutting down"))
		return
	}
	sv.nextID++
	ctx, cancel := context.WithCancel(sv.ctx)
	j := &job{cancel: cancel, done: make(chan struct{}),
		st: JobStatus{ID: sv.nextID, State: "running", Model: req.Model, AMP: req.AMP}}
	sv.jobs[j.st.ID] = j
	sv.wg.Add(1)
	sv.mu.Unlock()

	go func() {
		defer sv.wg.Done()
		defer close(j.done)
		err := train(ctx, req, config, level, dtype, j)
		j.update(func(st *JobStatus) {
			switch {
			case err == nil:
				st.State = "done"
			case errors.Is(err, context.Canceled):
				st.State = "cancelled"
			default:
				st.State, st.Error = "failed", err.Error()
			}
		})
		cancel()
	}()
	writeJSON(w, http.StatusCreated, j.status())
}

func checkModel(config string) error {
	s, err := mixp.NewSession(mixp.SessionOptions{Threads: 1})
	if err != nil {
		return err
	}
	defer s.Close()
	m, err := mixp.NewModel(s, config)
	if err != nil {
		return err
	}
	return m.Close()
}

func (sv *Service) lookup(w http.ResponseWriter, r *http.Request) *job {
	id, err := strconv.Atoi(strings.TrimPrefix(r.URL.Path, "/jobs/"))
	sv.mu.Lock()
	j := sv.jobs[id]
	sv.mu.Unlock()
	if err != nil || j == nil {
		writeError(w, http.StatusNotFound, fmt.Errorf("no job %q", strings.TrimPrefix(r.URL.Path, "/jobs/")))
		return nil
	}
	return j
}

func (sv *Service) handleJob(w http.ResponseWriter, r *http.Request) {
	switch r.Method {
	case http.MethodGet:
		if j := sv.lookup(w, r); j != nil {
			writeJSON(w, http.StatusOK, j.status())
		}
	case http.MethodDelete:
		if j := sv.lookup(w, r); j != nil {
			j.cancel()
			<-j.done // the job stops between two steps
			writeJSON(w, http.StatusOK, j.status())
		}
	default:
		w.Header().Set("Allow", "GET, DELETE")
		writeError(w, http.StatusMethodNotAllowed, errors.New("use GET or DELETE /jobs/{id}"))
	}
}

// handleMetrics writes the Prometheus text exposition format (version 0.0.4).
func (sv *Service) handleMetrics(w http.ResponseWriter, r *http.Request) {
	sv.mu.Lock()
	ids := make([]int, 0, len(sv.jobs))
	for id := range sv.jobs {
		ids = append(ids, id)
	}
	jobs := make([]JobStatus, 0, len(ids))
	sort.Ints(ids)
	for _, id := range ids {
		jobs = append(jobs, sv.jobs[id].status())
	}
	sv.mu.Unlock()

	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	states := map[string]int{"running": 0, "done": 0, "failed": 0, "cancelled": 0}
	for _, j := range jobs {
		states[j.State]++
	}
	fmt.Fprintln(w, "# HELP mixp_jobs Training jobs by state.")
	fmt.Fprintln(w, "# TYPE mixp_jobs gauge")
	for _, st := range []string{"running", "done", "failed", "cancelled"} {
		fmt.Fprintf(w, "mixp_jobs{state=%q} %d\n", st, states[st])
	}
	metric := func(name, typ, help string, value func(JobStatus) float64) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, typ)
		for _, j := range jobs {
			fmt.Fprintf(w, "%s{job=\"%d\",model=%q,amp=%q} %s\n", name, j.ID, j.Model, j.AMP,
				strconv.FormatFloat(value(j), 'g', -1, 64))
		}
	}
	metric("mixp_job_steps_total", "counter", "Optimizer steps taken by the job.",
		func(j JobStatus) float64 { return float64(j.Step) })
	metric("mixp_job_loss", "gauge", "Loss of the job's last step.",
		func(j JobStatus) float64 { return j.Loss })
	metric("mixp_job_loss_scale", "gauge", "GradScaler loss scale after the job's last step.",
		func(j JobStatus) float64 { return j.LossScale })
	metric("mixp_job_samples_per_second", "gauge", "Training throughput of the job.",
		func(j JobStatus) float64 { return j.SamplesPerSec })
}
