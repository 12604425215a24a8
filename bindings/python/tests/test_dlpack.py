"""DLPack exchange through the array API protocol: numpy (>= 1.22) and,
where installed, PyTorch and ml_dtypes. Zero-copy is checked by data
pointers and by writes seen through the other side."""

import gc

import numpy as np
import pytest

import mixp


def ptr(a):
    return a.__array_interface__["data"][0]


def test_numpy_to_mixp_shares_memory():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = mixp.from_dlpack(a)
    assert t.shape == (3, 4) and t.dtype is mixp.float32
    np.testing.assert_array_equal(t.numpy(), a)
    a[1, 2] = -5.0  # numpy writes, mixp sees
    assert t.numpy()[1, 2] == -5.0
    t.copy_(np.full((3, 4), 2.0, dtype=np.float32))  # mixp writes, numpy sees
    assert (a == 2.0).all()
    # Back to numpy: the very same bytes.
    assert ptr(np.from_dlpack(t)) == ptr(a)


def test_mixp_to_numpy_outlives_the_tensor():
    t = mixp.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = np.from_dlpack(t)
    assert b.shape == (2, 3) and b.dtype == np.float32
    assert ptr(np.from_dlpack(t)) == ptr(b)  # every export is the same memory
    t.close()
    gc.collect()
    np.testing.assert_array_equal(b, [[1, 2, 3], [4, 5, 6]])


def test_the_producer_lives_as_long_as_the_tensor():
    t = mixp.from_dlpack(np.arange(6, dtype=np.float64))  # no other reference to the array
    gc.collect()
    np.testing.assert_array_equal(t.numpy(), np.arange(6))
    assert t.dtype is mixp.float64


def test_strided_views():
    a = np.arange(20, dtype=np.float32).reshape(4, 5)
    for view in (a.T, a[::2, 1::2], a[1:, :3]):
        t = mixp.from_dlpack(view)
        np.testing.assert_array_equal(t.numpy(), view)
    # a mixp view exports its strides
    t = mixp.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    tt = t.transpose(0, 1) if hasattr(t, "transpose") else t.T
    np.testing.assert_array_equal(np.from_dlpack(tt), np.arange(6, dtype=np.float32).reshape(2, 3).T)


@pytest.mark.parametrize("np_dtype,mixp_dtype", [
    (np.float16, mixp.float16), (np.float32, mixp.float32), (np.float64, mixp.float64),
    (np.int32, mixp.int32), (np.int64, mixp.int64), (np.uint8, mixp.uint8), (np.bool_, mixp.bool_)])
def test_dtypes_round_trip(np_dtype, mixp_dtype):
    a = (np.arange(8) % 2 if np_dtype is np.bool_ else np.arange(8)).astype(np_dtype)
    try:
        t = mixp.from_dlpack(a)
    except BufferError:
        # numpy < 2 exports no bool through DLPack (mixp's own bool export is
        # covered by the C suite test_dlpack).
        assert np_dtype is np.bool_
        pytest.skip(f"numpy {np.__version__} exports no bool through DLPack")
    assert t.dtype is mixp_dtype
    b = np.from_dlpack(t)
    assert b.dtype == a.dtype and ptr(b) == ptr(a)


def test_capsules_and_protocol():
    t = mixp.tensor([1.0, 2.0])
    assert t.__dlpack_device__() == (1, 0)
    legacy = t.__dlpack__()
    assert "dltensor" in repr(legacy) and "versioned" not in repr(legacy)
    versioned = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(versioned)
    u = mixp.from_dlpack(versioned)
    assert "used_dltensor_versioned" in repr(versioned)
    with pytest.raises(TypeError):  # a capsule is consumed once
        mixp.from_dlpack(versioned)
    np.testing.assert_array_equal(u.numpy(), [1.0, 2.0])
    del legacy  # never consumed: its destructor drops the managed tensor
    gc.collect()
    copied = np.from_dlpack(_Exporter(t, copy=True))
    assert ptr(copied) != ptr(np.from_dlpack(t))
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError):
        mixp.from_dlpack(42)


class _Exporter:
    """Forwards __dlpack__ with fixed keywords (numpy passes only stream)."""

    def __init__(self, t, **kw):
        self.t, self.kw = t, kw

    def __dlpack__(self, **kw):
        return self.t.__dlpack__(**{**kw, **self.kw})

    def __dlpack_device__(self):
        return self.t.__dlpack_device__()


def test_pytorch_cpu_zero_copy_and_bf16():
    torch = pytest.importorskip("torch")
    x = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    t = mixp.from_dlpack(x)
    assert t.dtype is mixp.float32
    y = torch.from_dlpack(t)
    assert y.data_ptr() == x.data_ptr()
    x[0, 0] = 42.0
    assert t.numpy()[0, 0] == 42.0
    # bf16 crosses as bf16: same bits, same memory, no float32 detour.
    h = torch.tensor([1.0, -2.5, 3.0e38], dtype=torch.bfloat16)
    tb = mixp.from_dlpack(h)
    assert tb.dtype is mixp.bfloat16
    np.testing.assert_array_equal(tb.numpy(bf16_bits=True), h.view(torch.int16).numpy().view(np.uint16))
    back = torch.from_dlpack(tb)
    assert back.dtype == torch.bfloat16 and back.data_ptr() == h.data_ptr()
    m = mixp.tensor([0.5, 1.5]).to(mixp.bfloat16)
    assert torch.from_dlpack(m).dtype == torch.bfloat16


def test_ml_dtypes_bf16():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    a = np.array([1.0, -2.0, 0.5, 3.0e38], dtype=ml_dtypes.bfloat16)
    # numpy cannot export ml_dtypes' bfloat16 through DLPack; from_numpy
    # takes its bits directly (no float32 detour, so no double rounding).
    t = mixp.from_numpy(a)
    assert t.dtype is mixp.bfloat16
    np.testing.assert_array_equal(t.numpy(bf16_bits=True), a.view(np.uint16))
    back = t.numpy(bf16_bits=True).view(ml_dtypes.bfloat16)
    assert back.dtype == a.dtype and (back.view(np.uint16) == a.view(np.uint16)).all()
