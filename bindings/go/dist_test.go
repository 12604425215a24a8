package mixp_test

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"mixp.dev/mixp"
)

// newDist is a single-process communicator (a world of one, no MPI) on s.
func newDist(t *testing.T, s *mixp.Session) *mixp.Dist {
	t.Helper()
	d := ok(mixp.NewDist(s, mixp.DistOptions{Transport: mixp.DistSingle}))(t)
	t.Cleanup(func() { d.Close() })
	return d
}

func TestDistWorldOfOne(t *testing.T) {
	s := newSession(t)
	d := newDist(t, s)
	if d.Rank() != 0 || d.WorldSize() != 1 || d.LocalRank() != 0 {
		t.Fatalf("rank %d world %d local %d", d.Rank(), d.WorldSize(), d.LocalRank())
	}
	if !strings.Contains(d.Describe(), "single") {
		t.Errorf("description %q", d.Describe())
	}
	if mixp.EnvLocalRank() < 0 {
		t.Errorf("EnvLocalRank %d", mixp.EnvLocalRank())
	}
	noErr(t, d.Barrier())

	want := []float32{1.5, -2, 3.25, 0}
	for _, op := range []mixp.ReduceOp{mixp.ReduceSum, mixp.ReduceAvg, mixp.ReduceMax} {
		x := ok(mixp.FromFloat32(s, want, 2, 2))(t)
		noErr(t, d.AllReduce(x, op))
		if got := ok(x.Float32s())(t); !reflect.DeepEqual(got, want) {
			t.Errorf("AllReduce(%d) of one rank: %v, want %v", op, got, want)
		}
		x.Close()
	}
	ints := ok(mixp.FromInt64(s, []int64{3, -4}, 2))(t)
	defer ints.Close()
	noErr(t, d.AllReduce(ints, mixp.ReduceSum))
	wantErr(t, d.AllReduce(ints, mixp.ReduceAvg), mixp.StatusDType, "mixp_dist_all_reduce")
	wantErr(t, d.AllReduce(ints, mixp.ReduceOp(9)), mixp.StatusInvalidArgument, "op")

	x := ok(mixp.FromFloat32(s, want, 2, 2))(t)
	defer x.Close()
	g := ok(d.AllGather(x))(t)
	defer g.Close()
	if sh := ok(g.Shape())(t); !reflect.DeepEqual(sh, []int64{1, 2, 2}) {
		t.Fatalf("AllGather shape %v", sh)
	}
	if got := ok(g.Float32s())(t); !reflect.DeepEqual(got, want) {
		t.Errorf("AllGather values %v", got)
	}
	noErr(t, d.Broadcast(x, 0))
	wantErr(t, d.Broadcast(x, 1), mixp.StatusInvalidArgument, "root")
}

func TestDistGradients(t *testing.T) {
	s := newSession(t)
	d := newDist(t, s)
	lin := ok(mixp.NewLinear(s, 3, 2, true, mixp.F32))(t)
	defer lin.Close()
	noErr(t, d.BroadcastModule(lin))
	params := ok(lin.Parameters())(t)
	defer mixp.CloseAll(params...)
	opt := ok(mixp.NewOptimizer(s, params, mixp.DefaultOptimizerOptions(mixp.SGD)))(t)
	defer opt.Close()
	x := ok(mixp.Randn(s, mixp.F32, 4, 3))(t)
	y := ok(lin.Forward(x))(t)
	sq := ok(y.Mul(y))(t)
	loss := ok(sq.Sum(false))(t)
	defer mixp.CloseAll(x, y, sq, loss)
	noErr(t, d.PrepareGradients(opt, 0)) // averaged during backward: one rank, the same values
	noErr(t, loss.Backward())
	grads := make([][]float32, len(params))
	for i, p := range params {
		gr := ok(p.Grad())(t)
		grads[i] = ok(gr.Float32s())(t)
		gr.Close()
	}
	noErr(t, d.AverageGradients(opt, 0))
	noErr(t, d.AverageGradients(opt, 4))
	for i, p := range params {
		gr := ok(p.Grad())(t)
		if got := ok(gr.Float32s())(t); !reflect.DeepEqual(got, grads[i]) {
			t.Errorf("parameter %d: averaged over one rank %v, want %v", i, got, grads[i])
		}
		gr.Close()
	}
	wantErr(t, d.AverageGradients(opt, -1), mixp.StatusInvalidArgument, "local_samples")
	noErr(t, opt.Step())
}

func TestDistMisuse(t *testing.T) {
	s := newSession(t)
	_, err := mixp.NewDist(s, mixp.DistOptions{Transport: mixp.DistTransport(7)})
	wantErr(t, err, mixp.StatusInvalidArgument, "transport")
	_, err = mixp.NewDist(s, mixp.DistOptions{Transport: mixp.DistSingle, BucketBytes: -1})
	wantErr(t, err, mixp.StatusInvalidArgument, "bucket_bytes")
	d := ok(mixp.NewDist(s, mixp.DistOptions{Transport: mixp.DistSingle, BucketBytes: 1 << 10}))(t)
	_, err = mixp.NewDist(s, mixp.DistOptions{Transport: mixp.DistSingle})
	wantErr(t, err, mixp.StatusState, "communicator")
	if !errors.Is(err, mixp.ErrState) {
		t.Error("errors.Is(ErrState)")
	}

	other := newSession(t)
	x := ok(mixp.Zeros(other, mixp.F32, 2))(t)
	defer x.Close()
	wantErr(t, d.AllReduce(x, mixp.ReduceSum), mixp.StatusDevice, "another session")
	var nilT *mixp.Tensor
	wantErr(t, d.AllReduce(nilT, mixp.ReduceSum), mixp.StatusInvalidArgument, "mixp_dist_all_reduce")
	wantErr(t, d.BroadcastModule(nil), mixp.StatusInvalidArgument, "mixp_dist_broadcast_module")
	wantErr(t, d.AverageGradients(nil, 0), mixp.StatusInvalidArgument, "mixp_dist_average_gradients")
	wantErr(t, d.PrepareGradients(nil, 0), mixp.StatusInvalidArgument, "mixp_dist_prepare_gradients")

	noErr(t, d.Close())
	noErr(t, d.Close())
	if d.Rank() != -1 || d.WorldSize() != -1 || d.LocalRank() != -1 || d.Describe() != "" {
		t.Error("a closed communicator reports a place in the world")
	}
	wantErr(t, d.Barrier(), mixp.StatusInvalidArgument, "mixp_dist_barrier")
	var nilD *mixp.Dist
	wantErr(t, nilD.Barrier(), mixp.StatusInvalidArgument)
	again := ok(mixp.NewDist(s, mixp.DistOptions{Transport: mixp.DistSingle}))(t) // the session is free again
	noErr(t, again.Close())
}

// Two shards of batch 3 make up the global batch of 6 an unsharded loader
// with the same seed yields, batch for batch.
func TestShardedLoader(t *testing.T) {
	s := newSession(t)
	data := ok(mixp.NewSynthetic(s, mixp.SyntheticOptions{Samples: 22, Height: 4, Width: 4}))(t)
	defer data.Close()
	full := ok(mixp.NewLoader(data, mixp.LoaderOptions{BatchSize: 6, Seed: 7}))(t)
	defer full.Close()
	var shards [2]*mixp.Loader
	for i := range shards {
		shards[i] = ok(mixp.NewLoader(data, mixp.LoaderOptions{BatchSize: 3, Seed: 7, ShardIndex: i, ShardCount: 2}))(t)
		defer shards[i].Close()
		if shards[i].NumBatches() != full.NumBatches() {
			t.Fatalf("shard %d: %d batches, want %d", i, shards[i].NumBatches(), full.NumBatches())
		}
	}
	for b := ok(full.Next())(t); b != nil; b = ok(full.Next())(t) {
		var x, y []byte
		for _, l := range shards {
			p := ok(l.Next())(t)
			if p == nil {
				t.Fatal("a shard's epoch ended early")
			}
			x = append(x, ok(p.X.Bytes())(t)...)
			y = append(y, ok(p.Y.Bytes())(t)...)
			p.Close()
		}
		if !bytes.Equal(x, ok(b.X.Bytes())(t)) || !bytes.Equal(y, ok(b.Y.Bytes())(t)) {
			t.Fatal("the shards' batches are not the global batch")
		}
		b.Close()
	}
	_, err := mixp.NewLoader(data, mixp.LoaderOptions{BatchSize: 3, ShardIndex: 2, ShardCount: 2})
	wantErr(t, err, mixp.StatusInvalidArgument, "shard")
}
