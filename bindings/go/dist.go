package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// DistTransport is how the ranks of a data-parallel run find each other
// (values fixed by the C ABI).
type DistTransport int

// The transports of mixp.h.
const (
	// DistMPI is the MPI world this process was launched into
	// (`mpirun -np N`); it needs Open MPI and mixp's MPI plugin
	// (libmixp_mpi.so), else NewDist fails with StatusUnsupported.
	DistMPI DistTransport = 0
	// DistSingle is one process without MPI: rank 0 of a world of one, so
	// code written for N ranks runs unchanged.
	DistSingle DistTransport = 1
)

// ReduceOp is the reduction of Dist.AllReduce (values fixed by the C ABI).
type ReduceOp int

// The reductions of mixp.h.
const (
	ReduceSum ReduceOp = 0 // element-wise sum over the ranks
	ReduceAvg ReduceOp = 1 // the sum divided by the world size (float tensors only)
	ReduceMax ReduceOp = 2 // element-wise maximum (NaN wins)
)

// DistOptions configure NewDist. The zero value means: the MPI transport,
// 25 MiB gradient buckets.
type DistOptions struct {
	Transport DistTransport
	// BucketBytes is the size of the buckets AverageGradients reduces in
	// (of their fp32 staging copies), in [1, 2^40]; 0 for 25 MiB.
	BucketBytes int64
}

// Dist is this process's place among the ranks of a data-parallel run,
// bound to one session: collectives take that session's tensors. Every
// collective (and Close) is called by every rank, in the same order, with
// tensors of the same dtype and shape.
type Dist struct{ h handle }

func (d *Dist) hdl() *handle { return &d.h }

func (d *Dist) p() uintptr {
	if d == nil {
		return 0
	}
	return d.h.ptr
}

// EnvLocalRank is the local rank the launcher gave this process (its index
// among the ranks on this host), or 0: for choosing a GPU ("cuda:<n>")
// before any session exists.
func EnvLocalRank() int { return raw.Mixp_dist_env_local_rank() }

// NewDist joins this process to the ranks of its launch and binds the
// communicator to s (one communicator per session at a time).
func NewDist(s *Session, o DistOptions) (*Dist, error) {
	r := raw.NewMixp_dist_options()
	defer raw.DeleteMixp_dist_options(r)
	r.SetTransport(raw.Mixp_dist_transport(o.Transport))
	if o.BucketBytes != 0 {
		r.SetBucket_bytes(o.BucketBytes)
	}
	var out uintptr
	err := check(raw.Mixp_dist_create(s.p(), r, &out))
	runtime.KeepAlive(s)
	if err != nil {
		return nil, err
	}
	d := &Dist{}
	track(d, out, raw.Mixp_dist_destroy)
	return d, nil
}

// Close destroys the communicator (collective: every rank closes its own;
// the last one in the process finalises MPI).
func (d *Dist) Close() error {
	if d != nil {
		d.h.close()
	}
	return nil
}

// Rank is this process's rank in [0, WorldSize()), or -1 after Close.
func (d *Dist) Rank() int {
	n := raw.Mixp_dist_rank(d.p())
	runtime.KeepAlive(d)
	return n
}

// WorldSize is the number of ranks, or -1 after Close.
func (d *Dist) WorldSize() int {
	n := raw.Mixp_dist_world_size(d.p())
	runtime.KeepAlive(d)
	return n
}

// LocalRank is this process's rank among the ranks on its host, or -1
// after Close.
func (d *Dist) LocalRank() int {
	n := raw.Mixp_dist_local_rank(d.p())
	runtime.KeepAlive(d)
	return n
}

// Describe names the transport, the MPI library and the NCCL version when
// used ("" after Close).
func (d *Dist) Describe() string {
	s := raw.Mixp_dist_describe(d.p())
	runtime.KeepAlive(d)
	return s
}

func (d *Dist) call(f func(uintptr) raw.Status, keep ...any) error {
	err := check(f(d.p()))
	runtime.KeepAlive(d)
	runtime.KeepAlive(keep)
	return err
}

// AllReduce reduces t over the ranks in place: afterwards every rank holds
// the result.
func (d *Dist) AllReduce(t *Tensor, op ReduceOp) error {
	return d.call(func(p uintptr) raw.Status {
		return raw.Mixp_dist_all_reduce(p, t.p(), raw.Mixp_reduce_op(op))
	}, t)
}

// Broadcast copies rank root's t into every other rank's, in place.
func (d *Dist) Broadcast(t *Tensor, root int) error {
	return d.call(func(p uintptr) raw.Status { return raw.Mixp_dist_broadcast(p, t.p(), root) }, t)
}

// AllGather is a new tensor [WorldSize(), t's shape...] holding rank r's t
// at index r, on every rank.
func (d *Dist) AllGather(t *Tensor) (*Tensor, error) {
	return tensorOut(func(out *uintptr) raw.Status { return raw.Mixp_dist_all_gather(d.p(), t.p(), out) }, d, t)
}

// Barrier returns once every rank has called it.
func (d *Dist) Barrier() error { return d.call(raw.Mixp_dist_barrier) }

// BroadcastModule makes every rank's copy of m equal to rank 0's (every
// parameter and buffer): call it once after creating the model, before
// Decorate.
func (d *Dist) BroadcastModule(m *Module) error {
	return d.call(func(p uintptr) raw.Status { return raw.Mixp_dist_broadcast_module(p, m.p()) }, m)
}

// AverageGradients replaces every gradient of o's parameters by its average
// over the ranks: after the backward pass of a step's last micro-batch,
// before the scaler's unscale, clipping or the step. localSamples 0 weighs
// every rank 1/WorldSize() (PyTorch DDP); otherwise it is the number of
// samples this rank's gradient was averaged over, weighing each rank by its
// share of the global batch.
func (d *Dist) AverageGradients(o *Optimizer, localSamples int64) error {
	return d.call(func(p uintptr) raw.Status { return raw.Mixp_dist_average_gradients(p, o.p(), localSamples) }, o)
}

// PrepareGradients arms the next backward pass to average o's gradients
// while it runs (each bucket reduced as soon as its gradients are final, in
// the planned order); AverageGradients with the same o and localSamples then
// finishes the step, with the same result as without this call. Call it
// right before the last micro-batch's backward pass.
func (d *Dist) PrepareGradients(o *Optimizer, localSamples int64) error {
	return d.call(func(p uintptr) raw.Status { return raw.Mixp_dist_prepare_gradients(p, o.p(), localSamples) }, o)
}
