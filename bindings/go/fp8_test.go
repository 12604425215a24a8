package mixp_test

import (
	"math"
	"testing"

	"mixp.dev/mixp"
)

// fp8Of casts float32 values (exact in E4M3/E5M2: small integers) to dt.
func fp8Of(t *testing.T, s *mixp.Session, dt mixp.DType, v []float32, shape ...int64) *mixp.Tensor {
	t.Helper()
	f := ok(mixp.FromFloat32(s, v, shape...))(t)
	defer f.Close()
	return ok(f.Cast(dt))(t)
}

func TestScaledMatmul(t *testing.T) {
	s := newSession(t)
	const M, K, N = 2, 16, 3
	av := make([]float32, M*K)
	bv := make([]float32, K*N)
	for i := range av {
		av[i] = float32(i%7 - 3)
	}
	for i := range bv {
		bv[i] = float32(i%5 - 2)
	}
	a := fp8Of(t, s, mixp.F8E4M3, av, M, K)
	b := fp8Of(t, s, mixp.F8E4M3, bv, K, N)
	sa := ok(mixp.Full(s, mixp.F32, 0.5, 1))(t)
	sb := ok(mixp.Full(s, mixp.F32, 4.0, 1))(t)
	bias := ok(ok(mixp.FromFloat32(s, []float32{1, -2, 0.5}, N))(t).Cast(mixp.BF16))(t)
	amax := ok(mixp.Zeros(s, mixp.F32, 1))(t)
	d := ok(mixp.ScaledMatmul(a, sa, b, sb, bias, mixp.F32, 0, amax))(t)
	defer d.Close()
	if d.DType() != mixp.F32 {
		t.Fatalf("dtype %v, want F32", d.DType())
	}
	got := ok(d.Float32s())(t)
	bw := []float32{1, -2, 0.5}
	var most float64
	for i := 0; i < M; i++ {
		for j := 0; j < N; j++ {
			var sum float32
			for l := 0; l < K; l++ {
				sum += av[i*K+l] * bv[l*N+j]
			}
			want := 2*sum + bw[j]
			if got[i*N+j] != want {
				t.Fatalf("D[%d,%d] = %v, want %v", i, j, got[i*N+j], want)
			}
			most = math.Max(most, math.Abs(float64(want)))
		}
	}
	if m := ok(amax.Item())(t); m != most {
		t.Errorf("amax %v, want %v", m, most)
	}
	// Fast accumulation is a hint: the CPU computes the same product.
	fast := ok(mixp.ScaledMatmul(a, sa, b, sb, nil, mixp.BF16, mixp.ScaledMatmulFastAccum, nil))(t)
	defer fast.Close()
	if fast.DType() != mixp.BF16 {
		t.Fatalf("dtype %v, want BF16", fast.DType())
	}
	for _, x := range []*mixp.Tensor{a, b, sa, sb, bias, amax} {
		x.Close()
	}
}

func TestScaledMatmulMisuse(t *testing.T) {
	s := newSession(t)
	v := make([]float32, 16*16)
	e4 := fp8Of(t, s, mixp.F8E4M3, v, 16, 16)
	e5 := fp8Of(t, s, mixp.F8E5M2, v, 16, 16)
	narrow := fp8Of(t, s, mixp.F8E4M3, v[:16*8], 8, 16)
	sc := ok(mixp.Full(s, mixp.F32, 1, 1))(t)
	amax := ok(mixp.Full(s, mixp.F32, 7, 1))(t)
	_, err := mixp.ScaledMatmul(nil, sc, e4, sc, nil, mixp.F32, 0, nil)
	wantErr(t, err, mixp.StatusInvalidArgument, "mixp_scaled_matmul")
	_, err = mixp.ScaledMatmul(e5, sc, e5, sc, nil, mixp.F32, 0, amax)
	wantErr(t, err, mixp.StatusDType, "mixp_scaled_matmul")
	_, err = mixp.ScaledMatmul(e4, sc, narrow, sc, nil, mixp.F32, 0, amax)
	wantErr(t, err, mixp.StatusShape, "mixp_scaled_matmul")
	_, err = mixp.ScaledMatmul(e4, sc, e4, sc, nil, mixp.F32, 4, amax)
	wantErr(t, err, mixp.StatusInvalidArgument, "flags")
	_, err = mixp.ScaledMatmul(e4, sc, e4, sc, nil, mixp.I64, 0, amax)
	wantErr(t, err, mixp.StatusDType, "mixp_scaled_matmul")
	// A failed call writes nothing, amax included.
	if m := ok(amax.Item())(t); m != 7 {
		t.Errorf("amax %v after failed calls, want 7", m)
	}
	for _, x := range []*mixp.Tensor{e4, e5, narrow, sc, amax} {
		x.Close()
	}
}
