// Package dlpacktest is a foreign DLPack producer and consumer for the
// binding's tests: C code that knows nothing of mixp, standing in for the
// native library a Go service trades tensors with. It writes out DLPack's
// ABI structs itself (dlpack.h v0.8 legacy and v1.x versioned layouts), so
// the tests need no dlpack.h, and counts its deleter's calls so a test can
// check who frees what, and when.
package dlpacktest

/*
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int32_t device_type, device_id; } DLDevice;
typedef struct { uint8_t code, bits; uint16_t lanes; } DLDataType;
typedef struct {
  void *data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t *shape, *strides;
  uint64_t byte_offset;
} DLTensor;
typedef struct DLManagedTensor {
  DLTensor dl_tensor;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensor *);
} DLManagedTensor;
typedef struct { uint32_t major, minor; } DLPackVersion;
typedef struct DLManagedTensorVersioned {
  DLPackVersion version;
  void *manager_ctx;
  void (*deleter)(struct DLManagedTensorVersioned *);
  uint64_t flags;
  DLTensor dl_tensor;
} DLManagedTensorVersioned;

enum { kDLCPU = 1, kDLFloat = 2, kReadOnly = 1 };

static int producer_deletes;

// One allocation per tensor: the header, then shape and strides, then data.
typedef struct { int64_t shape[2], strides[2]; float data[]; } Block;

static Block *new_block(int64_t rows, int64_t cols, const float *row_major, int column_major) {
  Block *b = (Block *)malloc(sizeof(Block) + (size_t)(rows * cols) * sizeof(float));
  if (!b) return NULL;
  b->shape[0] = rows, b->shape[1] = cols;
  b->strides[0] = column_major ? 1 : cols;
  b->strides[1] = column_major ? rows : 1;
  for (int64_t i = 0; i < rows; i++)
    for (int64_t j = 0; j < cols; j++)
      b->data[i * b->strides[0] + j * b->strides[1]] = row_major[i * cols + j];
  return b;
}

static void fill(DLTensor *t, Block *b, uint16_t lanes) {
  t->data = b->data;
  t->device.device_type = kDLCPU, t->device.device_id = 0;
  t->ndim = 2;
  t->dtype.code = kDLFloat, t->dtype.bits = 32, t->dtype.lanes = lanes;
  t->shape = b->shape, t->strides = b->strides, t->byte_offset = 0;
}

static void delete_legacy(DLManagedTensor *m) {
  producer_deletes++;
  free(m->manager_ctx);
  free(m);
}

static void delete_versioned(DLManagedTensorVersioned *m) {
  producer_deletes++;
  free(m->manager_ctx);
  free(m);
}

static DLManagedTensor *make_legacy(int64_t rows, int64_t cols, const float *v, int column_major,
                                    uint16_t lanes) {
  DLManagedTensor *m = (DLManagedTensor *)calloc(1, sizeof *m);
  Block *b = new_block(rows, cols, v, column_major);
  if (!m || !b) {
    free(m);
    free(b);
    return NULL;
  }
  fill(&m->dl_tensor, b, lanes);
  m->manager_ctx = b;
  m->deleter = delete_legacy;
  return m;
}

static DLManagedTensorVersioned *make_versioned(int64_t rows, int64_t cols, const float *v,
                                                int read_only) {
  DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)calloc(1, sizeof *m);
  Block *b = new_block(rows, cols, v, 0);
  if (!m || !b) {
    free(m);
    free(b);
    return NULL;
  }
  m->version.major = 1, m->version.minor = 0;
  m->flags = read_only ? kReadOnly : 0;
  fill(&m->dl_tensor, b, 1);
  m->manager_ctx = b;
  m->deleter = delete_versioned;
  return m;
}

// What a consumer reads of a tensor: the element at (i, j) through strides.
static float element_at(const DLTensor *t, int64_t i, int64_t j) {
  int64_t si = t->strides ? t->strides[0] : t->shape[1], sj = t->strides ? t->strides[1] : 1;
  const char *base = (const char *)t->data + t->byte_offset;
  return ((const float *)base)[i * si + j * sj];
}
static void set_element(DLTensor *t, int64_t i, int64_t j, float v) {
  int64_t si = t->strides ? t->strides[0] : t->shape[1], sj = t->strides ? t->strides[1] : 1;
  ((float *)((char *)t->data + t->byte_offset))[i * si + j * sj] = v;
}
static DLTensor *legacy_tensor(void *m) { return &((DLManagedTensor *)m)->dl_tensor; }
static DLTensor *versioned_tensor(void *m) { return &((DLManagedTensorVersioned *)m)->dl_tensor; }
static void call_legacy_deleter(void *m) {
  DLManagedTensor *t = (DLManagedTensor *)m;
  if (t->deleter) t->deleter(t);
}
static void call_versioned_deleter(void *m) {
  DLManagedTensorVersioned *t = (DLManagedTensorVersioned *)m;
  if (t->deleter) t->deleter(t);
}
static int deletes(void) { return producer_deletes; }
*/
import "C"

import "unsafe"

// Matrix describes a rows × cols float32 DLPack tensor as a consumer sees it.
type Matrix struct {
	Device, DTypeCode, Bits, Lanes int
	Shape                          []int64
	Values                         []float32 // row-major, read through the strides
	Major, Minor                   int       // versioned only
	Flags                          uint64    // versioned only
}

// NewLegacy makes a DLManagedTensor holding values (row-major rows × cols),
// stored column-major when columnMajor (strides then say so); lanes other
// than 1 make a tensor mixp must refuse.
func NewLegacy(rows, cols int64, values []float32, columnMajor bool, lanes int) unsafe.Pointer {
	cm := C.int(0)
	if columnMajor {
		cm = 1
	}
	return unsafe.Pointer(C.make_legacy(C.int64_t(rows), C.int64_t(cols),
		(*C.float)(unsafe.Pointer(&values[0])), cm, C.uint16_t(lanes)))
}

// NewVersioned makes a DLPack 1.0 DLManagedTensorVersioned (row-major).
func NewVersioned(rows, cols int64, values []float32, readOnly bool) unsafe.Pointer {
	ro := C.int(0)
	if readOnly {
		ro = 1
	}
	return unsafe.Pointer(C.make_versioned(C.int64_t(rows), C.int64_t(cols),
		(*C.float)(unsafe.Pointer(&values[0])), ro))
}

// Deletes is how many times this producer's deleter has run.
func Deletes() int { return int(C.deletes()) }

func read(t *C.DLTensor) Matrix {
	m := Matrix{Device: int(t.device.device_type), DTypeCode: int(t.dtype.code),
		Bits: int(t.dtype.bits), Lanes: int(t.dtype.lanes)}
	shape := unsafe.Slice(t.shape, int(t.ndim))
	for _, d := range shape {
		m.Shape = append(m.Shape, int64(d))
	}
	if t.ndim == 2 {
		for i := C.int64_t(0); i < shape[0]; i++ {
			for j := C.int64_t(0); j < shape[1]; j++ {
				m.Values = append(m.Values, float32(C.element_at(t, i, j)))
			}
		}
	}
	return m
}

// ReadLegacy reads a DLManagedTensor someone else produced (2-D float32).
func ReadLegacy(p unsafe.Pointer) Matrix { return read(C.legacy_tensor(p)) }

// ReadVersioned reads a DLManagedTensorVersioned, with its version and flags.
func ReadVersioned(p unsafe.Pointer) Matrix {
	m := read(C.versioned_tensor(p))
	v := (*C.DLManagedTensorVersioned)(p)
	m.Major, m.Minor, m.Flags = int(v.version.major), int(v.version.minor), uint64(v.flags)
	return m
}

// SetLegacy writes element (i, j) of a 2-D float32 DLManagedTensor.
func SetLegacy(p unsafe.Pointer, i, j int64, v float32) {
	C.set_element(C.legacy_tensor(p), C.int64_t(i), C.int64_t(j), C.float(v))
}

// ConsumeLegacy and ConsumeVersioned call the tensor's deleter, as a
// consumer does when it is done with the tensor.
func ConsumeLegacy(p unsafe.Pointer)    { C.call_legacy_deleter(p) }
func ConsumeVersioned(p unsafe.Pointer) { C.call_versioned_deleter(p) }
