package mixp

import (
	"runtime"

	"mixp.dev/mixp/internal/raw"
)

// Dataset is a set of (input, label) samples.
type Dataset struct{ h handle }

func (d *Dataset) hdl() *handle { return &d.h }

func (d *Dataset) p() uintptr {
	if d == nil {
		return 0
	}
	return d.h.ptr
}

func datasetOut(call func(out *uintptr) raw.Status, keep ...any) (*Dataset, error) {
	var out uintptr
	err := check(call(&out))
	runtime.KeepAlive(keep)
	if err != nil {
		return nil, err
	}
	d := &Dataset{}
	track(d, out, raw.Mixp_dataset_destroy)
	return d, nil
}

// SyntheticOptions describe a synthetic image dataset; the zero value of a
// field means mixp's default (4096 samples of 1x28x28, 10 classes, seed 1,
// noise 0.35).
type SyntheticOptions struct {
	Samples, Channels, Height, Width, Classes int64
	Seed                                      uint64
	Noise                                     float64
}

// NewSynthetic generates class-prototype images plus noise (deterministic per seed).
func NewSynthetic(s *Session, o SyntheticOptions) (*Dataset, error) {
	r := raw.NewMixp_synthetic_options()
	defer raw.DeleteMixp_synthetic_options(r)
	set := func(v int64, f func(int64)) {
		if v != 0 {
			f(v)
		}
	}
	set(o.Samples, r.SetNum_samples)
	set(o.Channels, r.SetChannels)
	set(o.Height, r.SetHeight)
	set(o.Width, r.SetWidth)
	set(o.Classes, r.SetNum_classes)
	if o.Seed != 0 {
		r.SetSeed(o.Seed)
	}
	if o.Noise != 0 {
		r.SetNoise(o.Noise)
	}
	return datasetOut(func(out *uintptr) raw.Status { return raw.Mixp_dataset_synthetic(s.p(), r, out) }, s)
}

// OpenFashionMNIST opens the train (or test) split of Fashion-MNIST in dir
// ("" for the Debian package's directory).
func OpenFashionMNIST(s *Session, dir string, train bool) (*Dataset, error) {
	return datasetOut(func(out *uintptr) raw.Status {
		return raw.Mixp_dataset_fashion_mnist(s.p(), dir, b2i(train), out)
	}, s)
}

// Close destroys the dataset.
func (d *Dataset) Close() error {
	if d != nil {
		d.h.close()
	}
	return nil
}

// Len is the number of samples.
func (d *Dataset) Len() int64 {
	n := raw.Mixp_dataset_size(d.p())
	runtime.KeepAlive(d)
	return n
}

// NumClasses is the number of label classes.
func (d *Dataset) NumClasses() int64 {
	n := raw.Mixp_dataset_num_classes(d.p())
	runtime.KeepAlive(d)
	return n
}

// Subset is samples [start, start+count) as a dataset of its own.
func (d *Dataset) Subset(start, count int64) (*Dataset, error) {
	return datasetOut(func(out *uintptr) raw.Status { return raw.Mixp_dataset_subset(d.p(), start, count, out) }, d)
}

// LoaderOptions configure a Loader; zero fields take mixp's defaults
// (batch 64, shuffled, x/255 as F32). Set NoShuffle for a fixed order.
//
// ShardIndex and ShardCount make the loader shard i of n for data
// parallelism (e.g. Dist.Rank() and Dist.WorldSize(); ShardCount 0 means 1,
// no sharding): every shard walks the same per-epoch order (same Seed on
// every rank) in global batches of ShardCount * BatchSize samples and takes
// its contiguous part of each, so the shards together see every sample once
// per epoch, and every shard yields the same number of batches.
type LoaderOptions struct {
	BatchSize  int64
	NoShuffle  bool
	DropLast   bool
	Seed       uint64
	ShardIndex int
	ShardCount int
}

// Loader yields mini-batches of a dataset, epoch after epoch.
type Loader struct {
	h    handle
	data *Dataset // the loader uses the dataset: keep it alive
}

func (l *Loader) hdl() *handle { return &l.h }

func (l *Loader) p() uintptr {
	if l == nil {
		return 0
	}
	return l.h.ptr
}

// NewLoader creates a loader over d.
func NewLoader(d *Dataset, o LoaderOptions) (*Loader, error) {
	r := raw.NewMixp_loader_options()
	defer raw.DeleteMixp_loader_options(r)
	if o.BatchSize != 0 {
		r.SetBatch_size(o.BatchSize)
	}
	r.SetShuffle(b2i(!o.NoShuffle))
	r.SetDrop_last(b2i(o.DropLast))
	r.SetSeed(o.Seed)
	r.SetShard_index(o.ShardIndex)
	if o.ShardCount != 0 {
		r.SetShard_count(o.ShardCount)
	}
	var out uintptr
	err := check(raw.Mixp_loader_create(d.p(), r, &out))
	runtime.KeepAlive(d)
	if err != nil {
		return nil, err
	}
	l := &Loader{data: d}
	track(l, out, raw.Mixp_loader_destroy)
	return l, nil
}

// Close destroys the loader.
func (l *Loader) Close() error {
	if l != nil {
		l.h.close()
	}
	return nil
}

// Batch is one mini-batch: inputs X and labels Y (I64).
type Batch struct{ X, Y *Tensor }

// Close releases both tensors.
func (b *Batch) Close() error {
	if b != nil {
		CloseAll(b.X, b.Y)
	}
	return nil
}

// Next is the next batch, or nil (and no error) at the end of an epoch; the
// call after that starts a new epoch.
func (l *Loader) Next() (*Batch, error) {
	var xp, yp uintptr
	st := raw.Mixp_loader_next(l.p(), &xp, &yp)
	runtime.KeepAlive(l)
	if err := check(st); err != nil {
		return nil, err
	}
	if Status(st.Code) == StatusDone {
		return nil, nil
	}
	return &Batch{X: newTensor(xp), Y: newTensor(yp)}, nil
}

// NumBatches is the number of batches per epoch.
func (l *Loader) NumBatches() int64 {
	n := raw.Mixp_loader_num_batches(l.p())
	runtime.KeepAlive(l)
	return n
}
