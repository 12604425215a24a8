package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// StateObjects are the objects a training-state file covers (see
// docs/checkpoints.md). Each may be nil, which leaves it out of the file
// (SaveState) or out of the restore (LoadState); the session's random
// stream is always included.
type StateObjects struct {
	Model     *Module
	Optimizer *Optimizer
	Scaler    *GradScaler
	Loader    *Loader
}

// pointers are the C handles of o. A closed object is an error here rather
// than a NULL: mixp reads NULL as "not listed", so a closed model would
// otherwise be skipped silently instead of failing.
func (o StateObjects) pointers(fn string) (m, opt, sc, l uintptr, err error) {
	closed := func(what string) error {
		return &Error{Status: StatusInvalidArgument, Message: fn + ": the " + what + " is closed"}
	}
	if o.Model != nil {
		if m = o.Model.p(); m == 0 {
			return 0, 0, 0, 0, closed("model")
		}
	}
	if o.Optimizer != nil {
		if opt = o.Optimizer.p(); opt == 0 {
			return 0, 0, 0, 0, closed("optimizer")
		}
	}
	if o.Scaler != nil {
		if sc = o.Scaler.p(); sc == 0 {
			return 0, 0, 0, 0, closed("scaler")
		}
	}
	if o.Loader != nil {
		if l = o.Loader.p(); l == 0 {
			return 0, 0, 0, 0, closed("loader")
		}
	}
	return m, opt, sc, l, nil
}

func (o StateObjects) keepAlive() {
	runtime.KeepAlive(o.Model)
	runtime.KeepAlive(o.Optimizer)
	runtime.KeepAlive(o.Scaler)
	runtime.KeepAlive(o.Loader)
}

// SaveState writes the training state of objs, the session's random stream,
// step and metadata (stored as the metadata entry "user"; "" stores none) to
// path, atomically: path holds the previous file or the complete new one.
func (s *Session) SaveState(path string, objs StateObjects, step int64, metadata string) error {
	m, opt, sc, l, err := objs.pointers("mixp.SaveState")
	if err != nil {
		return err
	}
	err = check(raw.Mixp_swig_state_save(s.p(), path, m, opt, sc, l, step, metadata))
	runtime.KeepAlive(s)
	objs.keepAlive()
	return err
}

// LoadState restores what SaveState wrote into objects of the same kinds and
// shapes, and the session's random stream, and returns the saved step, so
// training continues bit for bit. The file is validated (checksums, names,
// shapes, values) before anything changes: on a damaged file the error is
// ErrCorrupt and a failed load changes nothing.
func (s *Session) LoadState(path string, objs StateObjects) (int64, error) {
	m, opt, sc, l, err := objs.pointers("mixp.LoadState")
	if err != nil {
		return 0, err
	}
	var step int64
	err = check(raw.Mixp_swig_state_load(s.p(), path, m, opt, sc, l, &step))
	runtime.KeepAlive(s)
	objs.keepAlive()
	if err != nil {
		return 0, err
	}
	return step, nil
}
