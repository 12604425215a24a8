package mixp

import "runtime"

// handle is the C pointer of an object and the function that frees it.
// Every wrapper type holds one; Close frees at most once, and a finalizer
// frees what was never closed. After Close the pointer is 0, so a later
// call passes NULL to mixp, which fails with its own message instead of
// touching freed memory. Methods call runtime.KeepAlive on their receiver
// after the C call, so a finalizer never frees an object C is still using.
type handle struct {
	ptr  uintptr
	free func(uintptr)
}

func (h *handle) close() {
	if h.ptr == 0 {
		return
	}
	p := h.ptr
	h.ptr = 0
	h.free(p)
}

type owner interface{ hdl() *handle }

// track fills the handle of o and arms its finalizer. The finalizer runs on
// the runtime's finalizer goroutine; mixp allows the release and destroy
// functions from any thread once no other thread uses the object, which
// holds for an unreachable wrapper. (The finalizer reaches the handle
// through its argument: a closure over o would keep o alive forever.)
func track(o owner, ptr uintptr, free func(uintptr)) {
	h := o.hdl()
	h.ptr = ptr
	h.free = free
	runtime.SetFinalizer(o, func(o owner) { o.hdl().close() })
}
