package mixp

import (
	"runtime"
	"unsafe"

	"mixp.dev/mixp/internal/raw"
)

// DLPack exchange without copies, with the other native libraries of a Go
// service (https://dmlc.github.io/dlpack/). A managed tensor crosses as an
// unsafe.Pointer to dlpack.h's DLManagedTensor (legacy, DLPack < 1.0) or
// DLManagedTensorVersioned (DLPack >= 1.0): the pointer another library's
// cgo code produced or will consume (cgo types are per package, so
// unsafe.Pointer is the common currency). The memory is C memory: nothing
// here pins or copies Go memory. Element types, devices and the rules are
// mixp.h's (mixp_tensor_from_dlpack and friends).

// FromDLPack wraps a legacy DLManagedTensor as a tensor of s without
// copying. On success mixp owns managed and calls its deleter exactly once,
// when the last tensor or view using the memory is released; on failure
// nothing is taken (the caller still owns managed: see ReleaseDLPack).
func FromDLPack(s *Session, managed unsafe.Pointer) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_tensor_from_dlpack(s.p(), uintptr(managed), out)
	}, s)
}

// FromDLPackVersioned is FromDLPack for a DLPack >= 1.0
// DLManagedTensorVersioned (major version 1; read-only tensors are refused).
func FromDLPackVersioned(s *Session, managed unsafe.Pointer) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status {
		return raw.Mixp_tensor_from_dlpack_versioned(s.p(), uintptr(managed), out)
	}, s)
}

// managedOut runs a C call that writes one managed-tensor pointer.
func managedOut(call func(out *uintptr) raw.Status, keep any) (unsafe.Pointer, error) {
	var out uintptr
	err := check(call(&out))
	runtime.KeepAlive(keep)
	if err != nil {
		return nil, err
	}
	// The pointer is C memory that Go never moves or frees; converting
	// through a pointer to the word keeps go vet's unsafeptr check quiet.
	return *(*unsafe.Pointer)(unsafe.Pointer(&out)), nil
}

// ToDLPack shares t's memory as a legacy DLManagedTensor (no copy). The
// consumer owns the result and must call its deleter exactly once (or
// ReleaseDLPack when it never consumes it); the memory stays alive until
// then, even after t is closed. Writes through either side are seen by the
// other.
func (t *Tensor) ToDLPack() (unsafe.Pointer, error) {
	return managedOut(func(out *uintptr) raw.Status { return raw.Mixp_tensor_to_dlpack(t.p(), out) }, t)
}

// ToDLPackVersioned is ToDLPack as a DLPack 1.0 DLManagedTensorVersioned
// (version 1.0, flags 0: writable, not a copy).
func (t *Tensor) ToDLPackVersioned() (unsafe.Pointer, error) {
	return managedOut(func(out *uintptr) raw.Status {
		return raw.Mixp_tensor_to_dlpack_versioned(t.p(), out)
	}, t)
}

// ReleaseDLPack drops a legacy managed tensor nobody consumed: it calls
// the deleter when there is one. nil is a no-op.
func ReleaseDLPack(managed unsafe.Pointer) { raw.Mixp_dlpack_release(uintptr(managed)) }

// ReleaseDLPackVersioned is ReleaseDLPack for a DLManagedTensorVersioned.
func ReleaseDLPackVersioned(managed unsafe.Pointer) {
	raw.Mixp_dlpack_release_versioned(uintptr(managed))
}
