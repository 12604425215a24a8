package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// Profile is what the profiler recorded between Session.ProfileBegin and
// Session.ProfileEnd: every op the session ran, with its input shapes and
// dtypes, host time and device time (CUDA events on a GPU, the wall clock
// on the CPU). Close it when done (a finalizer frees it otherwise).
type Profile struct{ h handle }

func (p *Profile) hdl() *handle { return &p.h }

func (p *Profile) p() uintptr {
	if p == nil {
		return 0
	}
	return p.h.ptr
}

// ProfileRow is one op in one pass over all its calls, times in milliseconds;
// Self* leave out the time of the recorded ops nested in its calls.
type ProfileRow struct {
	Op                                         string
	Backward                                   bool
	Calls                                      int64
	HostMs, DeviceMs, SelfHostMs, SelfDeviceMs float64
}

// ProfileBegin starts recording the session's ops (one profile at a time).
func (s *Session) ProfileBegin() error {
	err := check(raw.Mixp_profile_begin(s.p()))
	runtime.KeepAlive(s)
	return err
}

// ProfileEnd stops recording and returns the profile.
func (s *Session) ProfileEnd() (*Profile, error) {
	var out uintptr
	err := check(raw.Mixp_profile_end(s.p(), &out))
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	p := &Profile{}
	track(p, out, raw.Mixp_profile_destroy)
	return p, nil
}

// Close frees the profile.
func (p *Profile) Close() error {
	if p != nil {
		p.h.close()
	}
	return nil
}

// Len is the number of recorded op calls, or -1 after Close.
func (p *Profile) Len() int64 {
	n := raw.Mixp_profile_length(p.p())
	runtime.KeepAlive(p)
	return n
}

// Rows is the summary, largest self device time first.
func (p *Profile) Rows() ([]ProfileRow, error) {
	n := raw.Mixp_profile_summary_rows(p.p())
	r := raw.NewMixp_profile_row()
	defer raw.DeleteMixp_profile_row(r)
	var rows []ProfileRow
	for i := int64(0); i < n; i++ {
		if err := check(raw.Mixp_profile_summary_get(p.p(), i, r)); err != nil {
			runtime.KeepAlive(p)
			return nil, err
		}
		rows = append(rows, ProfileRow{Op: r.GetOp(), Backward: r.GetBackward() != 0, Calls: r.GetCalls(),
			HostMs: r.GetHost_ms(), DeviceMs: r.GetDevice_ms(), SelfHostMs: r.GetSelf_host_ms(),
			SelfDeviceMs: r.GetSelf_device_ms()})
	}
	runtime.KeepAlive(p)
	return rows, nil
}

// Report is the summary as a table (maxRows <= 0: every row).
func (p *Profile) Report(maxRows int) string {
	s := raw.Mixp_profile_report(p.p(), maxRows)
	runtime.KeepAlive(p)
	return s
}

// WriteTrace writes the Chrome trace event file (chrome://tracing, Perfetto).
func (p *Profile) WriteTrace(path string) error {
	err := check(raw.Mixp_profile_write_trace(p.p(), path))
	runtime.KeepAlive(p)
	return err
}
