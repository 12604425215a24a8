"""The 8-bit float storage types in Python: numpy round trips (ml_dtypes'
types when importable, uint8 codes otherwise), casts, refusals, and the
scaled product."""
import numpy as np
import pytest

import mixp

FP8 = [mixp.float8_e4m3fn, mixp.float8_e5m2]


@pytest.mark.parametrize("dt", FP8)
def test_codes_round_trip(dt):
    codes = np.arange(256, dtype=np.uint8).reshape(16, 16)
    t = mixp.from_numpy(codes, dtype=dt)
    assert t.dtype is dt and dt.itemsize == 1 and dt.is_float8 and not dt.is_floating_point
    back = t.numpy()
    assert back.dtype == (dt.numpy if mixp.dtypes.HAVE_ML_DTYPES else np.uint8)
    np.testing.assert_array_equal(back.view(np.uint8), codes)


def test_floats_are_rounded_by_mixp():
    t = mixp.from_numpy(np.array([1.0, 1.0625, 1000.0, -np.inf, np.nan], dtype=np.float32),
                        dtype="f8e4m3")
    np.testing.assert_array_equal(t.numpy().view(np.uint8), [0x38, 0x38, 0x7E, 0xFE, 0x7F])
    w = t.to(mixp.float32).numpy()
    assert w[2] == 448.0 and w[3] == -448.0 and np.isnan(w[4])
    e5 = mixp.from_numpy(np.array([61440.0, 61439.0], dtype=np.float32), dtype=mixp.float8_e5m2)
    assert list(e5.to(mixp.float32).numpy()) == [np.inf, 57344.0]


def test_ops_refuse_fp8():
    t = mixp.from_numpy(np.zeros(4, dtype=np.uint8), dtype=mixp.float8_e4m3fn)
    with pytest.raises(mixp.DTypeError, match="mixp_relu"):
        mixp.relu(t)


def test_scaled_matmul():
    a = mixp.from_numpy(np.full((16, 16), 2.0, dtype=np.float32), dtype=mixp.float8_e4m3fn)
    b = mixp.from_numpy(np.full((16, 16), 3.0, dtype=np.float32), dtype=mixp.float8_e5m2)
    sa = mixp.from_numpy(np.array([0.5], dtype=np.float32))
    sb = mixp.from_numpy(np.array([0.25], dtype=np.float32))
    amax = mixp.from_numpy(np.array([0.0], dtype=np.float32))
    d = mixp.functional.scaled_matmul(a, sa, b, sb, out_dtype=mixp.float32, amax=amax)
    np.testing.assert_array_equal(d.numpy(), np.full((16, 16), 0.125 * 16 * 6.0, dtype=np.float32))
    assert amax.numpy()[0] == 12.0
    with pytest.raises(mixp.DTypeError, match="both f8e5m2"):
        mixp.functional.scaled_matmul(b, sa, b, sb)
