package mixp

import (
	"fmt"

	"mixp.dev/mixp/internal/raw"
)

// Status is a mixp_status code: 0 is OK, 1 is Done (an iteration ended),
// negative values are errors.
type Status int

// The status codes of mixp.h (values are fixed by the C ABI).
const (
	StatusOK              Status = 0
	StatusDone            Status = 1
	StatusInvalidArgument Status = -1
	StatusShape           Status = -2
	StatusDType           Status = -3
	StatusDevice          Status = -4
	StatusOutOfMemory     Status = -5
	StatusState           Status = -6
	StatusCorrupt         Status = -7
	StatusIO              Status = -8
	StatusNumeric         Status = -9
	StatusUnsupported     Status = -10
	StatusInternal        Status = -11
)

// String is mixp's short description of the status, e.g. "shape mismatch".
func (s Status) String() string { return raw.Mixp_status_string(int(s)) }

// Error is the error every failed call returns: the status and mixp's
// message (from mixp_last_error(), read inside the same C call). Use
// errors.As to get at the status, or errors.Is with the Err* sentinels.
type Error struct {
	Status  Status
	Message string
}

func (e *Error) Error() string {
	if e.Message == "" {
		return fmt.Sprintf("mixp: %s", e.Status)
	}
	return e.Message
}

// Is makes errors.Is(err, mixp.ErrShape) true for every shape error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Message == "" && t.Status == e.Status
}

// Sentinels for errors.Is: they match any error of their status.
var (
	ErrInvalidArgument = &Error{Status: StatusInvalidArgument}
	ErrShape           = &Error{Status: StatusShape}
	ErrDType           = &Error{Status: StatusDType}
	ErrDevice          = &Error{Status: StatusDevice}
	ErrOutOfMemory     = &Error{Status: StatusOutOfMemory}
	ErrState           = &Error{Status: StatusState}
	ErrCorrupt         = &Error{Status: StatusCorrupt}
	ErrIO              = &Error{Status: StatusIO}
	ErrNumeric         = &Error{Status: StatusNumeric}
	ErrUnsupported     = &Error{Status: StatusUnsupported}
	ErrInternal        = &Error{Status: StatusInternal}
)

// check turns a raw status into nil (OK, Done) or an *Error.
func check(st raw.Status) error {
	if st.Code >= 0 {
		return nil
	}
	return &Error{Status: Status(st.Code), Message: st.Message}
}

// Must returns v, or panics with err: for examples and scripts, like
// template.Must (a program that can handle the error should).
func Must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// Version is the library's version string, e.g. "0.1.0".
func Version() string { return raw.Mixp_version() }

// BuildInfo is one line describing the build (commit, backends, CPU units).
func BuildInfo() string { return raw.Mixp_build_info() }
