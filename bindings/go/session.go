package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// Session owns a device, a random-number stream, a thread count and the
// grad-mode and autocast stacks. A session and its objects are used by one
// goroutine at a time; distinct sessions run concurrently.
type Session struct{ h handle }

func (s *Session) hdl() *handle { return &s.h }

func (s *Session) p() uintptr {
	if s == nil {
		return 0
	}
	return s.h.ptr
}

// SessionOptions configures NewSession. The zero value means: device "cpu",
// seed 0, all cores.
type SessionOptions struct {
	Device  string // "cpu", "cuda", "cuda:N" or "auto"; "" for "cpu"
	Seed    uint64
	Threads int // 0: all cores
	TF32    bool
}

// NewSession creates a session.
func NewSession(o SessionOptions) (*Session, error) {
	ro := raw.NewMixp_session_options()
	defer raw.DeleteMixp_session_options(ro)
	ro.SetSeed(o.Seed)
	ro.SetNum_threads(o.Threads)
	ro.SetAllow_tf32(b2i(o.TF32))
	var out uintptr
	if err := check(raw.Mixp_swig_session_create(ro, o.Device, &out)); err != nil {
		return nil, err
	}
	s := &Session{}
	track(s, out, raw.Mixp_session_destroy)
	return s, nil
}

// Close destroys the session handle. Tensors and objects still alive stay
// readable and releasable; new operations on them fail with StatusState.
func (s *Session) Close() error {
	if s != nil {
		s.h.close()
	}
	return nil
}

// Device is the device the session runs on, e.g. "cpu".
func (s *Session) Device() string {
	d := raw.Mixp_session_device(s.p())
	runtime.KeepAlive(s)
	return d
}

// NumThreads is the number of CPU threads the session's kernels use.
func (s *Session) NumThreads() int {
	n := raw.Mixp_session_num_threads(s.p())
	runtime.KeepAlive(s)
	return n
}

// SetSeed re-seeds the session's random-number stream.
func (s *Session) SetSeed(seed uint64) error {
	err := check(raw.Mixp_session_set_seed(s.p(), seed))
	runtime.KeepAlive(s)
	return err
}

// NoGrad runs f with gradient recording off (a no-grad region around f).
func (s *Session) NoGrad(f func() error) error {
	if err := check(raw.Mixp_no_grad_begin(s.p())); err != nil {
		return err
	}
	defer func() {
		raw.Mixp_no_grad_end(s.p())
		runtime.KeepAlive(s)
	}()
	return f()
}

// GradEnabled reports whether operations record gradients now.
func (s *Session) GradEnabled() bool {
	e := raw.Mixp_grad_enabled(s.p()) != 0
	runtime.KeepAlive(s)
	return e
}

// MemoryStats are the bytes a session holds now and at their peaks: Current
// and Peak count tensor storage; Device and DevicePeak what the device
// really holds, kernels' scratch and workspaces included (compare with
// PyTorch's max_memory_allocated); Reserved and ReservedPeak what the
// session's memory pool has taken from the device. On the CPU the last four
// repeat the tensor counts.
type MemoryStats struct{ Current, Peak, Device, DevicePeak, Reserved, ReservedPeak uint64 }

// Memory reads the session's tensor-memory statistics.
func (s *Session) Memory() (MemoryStats, error) {
	st := raw.NewMixp_memory_stats()
	defer raw.DeleteMixp_memory_stats(st)
	err := check(raw.Mixp_memory_stats_get(s.p(), st))
	runtime.KeepAlive(s)
	if err != nil {
		return MemoryStats{}, err
	}
	return MemoryStats{Current: st.GetCurrent_bytes(), Peak: st.GetPeak_bytes(),
		Device: st.GetDevice_bytes(), DevicePeak: st.GetDevice_peak_bytes(),
		Reserved: st.GetReserved_bytes(), ReservedPeak: st.GetReserved_peak_bytes()}, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}
