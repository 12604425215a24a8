"""Tensors: numpy round trips, zero-copy borrowing, properties, operators."""
import gc
import sys

import numpy as np
import pytest

import mixp


@pytest.mark.parametrize("np_dtype,mixp_dtype", [
    (np.float32, mixp.float32), (np.float16, mixp.float16), (np.float64, mixp.float64),
    (np.int32, mixp.int32), (np.int64, mixp.int64), (np.uint8, mixp.uint8), (np.bool_, mixp.bool_),
])
def test_round_trip_every_numpy_dtype(np_dtype, mixp_dtype):
    a = (np.arange(24).reshape(2, 3, 4) % 7).astype(np_dtype)
    t = mixp.from_numpy(a)
    assert t.dtype is mixp_dtype
    assert t.shape == (2, 3, 4) and t.ndim == 3 and t.numel() == 24 and len(t) == 2
    back = t.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)


def test_bfloat16_through_float32_and_bits():
    a = np.array([1.0, 1.00390625, -2.5, 3.0e38], dtype=np.float32)
    t = mixp.from_numpy(a, dtype=mixp.bfloat16)
    assert t.dtype is mixp.bfloat16
    # Round to nearest even on the upper 16 bits: 1 + 2^-8 is a tie and goes to 1.0.
    u = a.view(np.uint32).astype(np.uint64)
    expected = (((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    assert expected[1] == 1.0
    np.testing.assert_array_equal(t.numpy(), expected)
    bits = t.numpy(bf16_bits=True)
    assert bits.dtype == np.uint16
    np.testing.assert_array_equal(bits, (t.numpy().view(np.uint32) >> 16).astype(np.uint16))
    again = mixp.from_numpy(bits, dtype=mixp.bfloat16)
    np.testing.assert_array_equal(again.numpy(bf16_bits=True), bits)


def test_conversion_by_dtype_argument_and_tensor_factory():
    t = mixp.tensor([[1.5, 2.5]])
    assert t.dtype is mixp.float32 and t.shape == (1, 2)
    t64 = mixp.from_numpy(np.array([1, 2, 3]), dtype=mixp.float64)
    assert t64.dtype is mixp.float64
    assert t64.numpy().tolist() == [1.0, 2.0, 3.0]
    assert mixp.tensor(np.array([1, 2], np.int64)).dtype is mixp.int64
    assert mixp.tensor(3.0).shape == ()
    assert mixp.tensor(3.0).item() == 3.0


def test_non_contiguous_numpy_is_copied_in_row_major_order():
    a = np.arange(12, dtype=np.float32).reshape(3, 4).T
    np.testing.assert_array_equal(mixp.from_numpy(a).numpy(), a)


def test_copy_is_independent_of_the_array():
    a = np.ones(4, np.float32)
    t = mixp.from_numpy(a)
    a[0] = 7
    assert t.numpy()[0] == 1.0


def test_borrow_shares_memory_both_ways():
    a = np.zeros((2, 3), np.float32)
    t = mixp.from_numpy(a, copy=False)
    a[1, 2] = 5.0
    assert t.numpy()[1, 2] == 5.0
    t.copy_(mixp.full((2, 3), 2.0))
    np.testing.assert_array_equal(a, np.full((2, 3), 2.0, np.float32))


def test_borrow_keeps_the_array_alive_until_the_last_view_is_released():
    a = np.arange(6, dtype=np.float64)
    before = sys.getrefcount(a)
    t = mixp.from_numpy(a, copy=False)
    assert sys.getrefcount(a) > before  # the exported buffer holds the array
    view = t.reshape(2, 3)
    t.close()
    del a
    gc.collect()
    np.testing.assert_array_equal(view.numpy(), np.arange(6, dtype=np.float64).reshape(2, 3))
    b = np.arange(3, dtype=np.float32)
    base = sys.getrefcount(b)
    u = mixp.from_numpy(b, copy=False)
    del u
    gc.collect()
    assert sys.getrefcount(b) == base  # released with the tensor


def test_borrow_refuses_what_it_cannot_share():
    ro = np.zeros(3, np.float32)
    ro.flags.writeable = False
    with pytest.raises(mixp.InvalidArgumentError, match="writable"):
        mixp.from_numpy(ro, copy=False)
    with pytest.raises(mixp.DTypeError, match="exact dtype"):
        mixp.from_numpy(np.zeros(3, np.float64), dtype=mixp.float32, copy=False)
    with pytest.raises(ValueError, match="C-contiguous"):
        mixp.from_numpy(np.zeros((3, 4), np.float32).T, copy=False)
    with pytest.raises(BufferError):  # the raw helper reports the exporter's own error
        mixp.capi.mixp_swig_borrow_buffer(mixp.default_session()._h, b"abc", mixp.uint8, [3])


def test_factories():
    assert mixp.zeros(2, 3).numpy().sum() == 0
    assert mixp.ones((2, 3), dtype=mixp.float64).numpy().sum() == 6
    assert mixp.full((2,), 1.5).numpy().tolist() == [1.5, 1.5]
    assert mixp.arange(5).numpy().tolist() == [0, 1, 2, 3, 4]
    s = mixp.Session(seed=3)
    r1 = mixp.rand(100, session=s).numpy()
    s.manual_seed(3)
    r2 = mixp.rand(100, session=s).numpy()
    np.testing.assert_array_equal(r1, r2)
    assert 0 <= r1.min() and r1.max() < 1
    assert abs(mixp.randn(4000, session=s).numpy().mean()) < 0.1


def test_operators_match_numpy():
    a_np = np.array([[1.0, -2.0], [3.0, 4.0]], np.float32)
    b_np = np.array([[0.5, 2.0], [-1.0, 8.0]], np.float32)
    a, b = mixp.from_numpy(a_np), mixp.from_numpy(b_np)
    np.testing.assert_allclose((a + b).numpy(), a_np + b_np)
    np.testing.assert_allclose((a - b).numpy(), a_np - b_np)
    np.testing.assert_allclose((a * b).numpy(), a_np * b_np)
    np.testing.assert_allclose((a / b).numpy(), a_np / b_np)
    np.testing.assert_allclose((a @ b).numpy(), a_np @ b_np)
    np.testing.assert_allclose((-a).numpy(), -a_np)
    np.testing.assert_allclose((a + 1).numpy(), a_np + 1)
    np.testing.assert_allclose((2 - a).numpy(), 2 - a_np)
    np.testing.assert_allclose((a * 3).numpy(), a_np * 3)
    np.testing.assert_allclose((3 * a).numpy(), 3 * a_np)
    np.testing.assert_array_equal((a / 3).numpy(), a_np / np.float32(3))
    np.testing.assert_allclose((1 / b).numpy(), 1 / b_np)
    np.testing.assert_allclose((b ** 2).numpy(), b_np ** 2)
    np.testing.assert_allclose((a + b_np).numpy(), a_np + b_np)


def test_gelu_tanh_is_the_tanh_formula_and_gelus_tanh_approximation():
    x_np = np.array([-4.0, -1.0, 0.0, 0.5, 2.0, 4.0])
    x = mixp.from_numpy(x_np)  # float64: the formula to about 1e-15
    want = 0.5 * x_np * (1 + np.tanh(np.sqrt(2 / np.pi) * (x_np + 0.044715 * x_np ** 3)))
    np.testing.assert_allclose(mixp.gelu_tanh(x).numpy(), want, rtol=1e-13, atol=1e-15)
    np.testing.assert_array_equal(mixp.functional.gelu_tanh(x).numpy(),
                                  mixp.gelu(x, approximate="tanh").numpy())


def test_views_indexing_and_reductions():
    a_np = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    a = mixp.from_numpy(a_np)
    np.testing.assert_array_equal(a.reshape(6, 4).numpy(), a_np.reshape(6, 4))
    np.testing.assert_array_equal(a.reshape(-1).numpy(), a_np.reshape(-1))
    np.testing.assert_array_equal(a.transpose(0, 2).numpy(), a_np.transpose(2, 1, 0))
    np.testing.assert_array_equal(a.permute(2, 0, 1).numpy(), a_np.transpose(2, 0, 1))
    assert not a.transpose(0, 2).is_contiguous()
    np.testing.assert_array_equal(a[1].numpy(), a_np[1])
    np.testing.assert_array_equal(a[:, 1:3].numpy(), a_np[:, 1:3])
    np.testing.assert_array_equal(a[-1, ::2].numpy(), a_np[-1, ::2])
    np.testing.assert_allclose(a.sum().item(), a_np.sum())
    np.testing.assert_allclose(a.sum(dim=1).numpy(), a_np.sum(axis=1))
    np.testing.assert_allclose(a.mean((0, 2), keepdim=True).numpy(), a_np.mean(axis=(0, 2), keepdims=True))
    values, idx = a.max(dim=2)
    np.testing.assert_array_equal(values.numpy(), a_np.max(axis=2))
    np.testing.assert_array_equal(idx.numpy(), a_np.argmax(axis=2))
    assert a.argmax(1).dtype is mixp.int64
    np.testing.assert_allclose(a.softmax(-1).numpy().sum(-1), np.ones((2, 3)), rtol=1e-6)
    assert a.flatten(1).shape == (2, 12)
    parts = mixp.split(a, [1, 2], dim=1)
    assert [p.shape for p in parts] == [(2, 1, 4), (2, 2, 4)]
    np.testing.assert_array_equal(mixp.cat(parts, dim=1).numpy(), a_np)


def test_casts_and_item():
    t = mixp.tensor([1.7, -2.2])
    assert t.to(mixp.int32).numpy().tolist() == [1, -2]
    assert t.half().dtype is mixp.float16 and t.double().dtype is mixp.float64
    assert mixp.tensor([3], dtype=mixp.int64).item() == 3
    assert float(mixp.tensor(2.5)) == 2.5
    assert "mixp.Tensor" in repr(t)


def test_session_properties():
    s = mixp.Session(num_threads=1, seed=5)
    assert s.device == "cpu"
    assert s.num_threads == 1
    assert s.grad_enabled
    with s.no_grad():
        assert not s.grad_enabled
    t = mixp.zeros(1024, session=s)
    stats = s.memory_stats()
    assert stats["current_bytes"] >= 4096 and stats["peak_bytes"] >= stats["current_bytes"]
    t.close()
    s.reset_peak_memory()
    assert "mixp" in mixp.build_info() or mixp.__version__ in mixp.build_info()
    assert "matmul" in mixp.ops()
    s.close()
    assert s.closed and "closed" in repr(s)


def test_numerics_options_filter_and_fp16_overflow():
    s = mixp.Session()
    s.set_numerics_options("warn", include=["matmul"], fp16_overflow=True)
    mixp.tensor([-1.0], session=s).log()  # NaN, but log is not checked
    assert s.numerics_report == ""
    x = mixp.from_numpy(np.full((4, 8), 9000, np.float32), session=s)
    w = mixp.from_numpy(np.ones((8, 2), np.float32), session=s)
    x @ w
    assert "would overflow fp16" in s.numerics_report
    assert "'matmul'" in s.numerics_report and "8 of 8 elements" in s.numerics_report
    s.set_numerics_options("error", exclude=["log"], steps=(0, None))
    mixp.tensor([-1.0], session=s).log()
    with pytest.raises(mixp.NumericError, match="'sqrt'"):
        mixp.tensor([-1.0], session=s).sqrt()
    with pytest.raises(mixp.InvalidArgumentError, match="unknown op 'no_such_op'"):
        s.set_numerics_options("warn", include=["no_such_op"])


def test_log_callback_receives_numerics_warnings():
    s = mixp.Session()
    seen = []
    s.set_log_callback(lambda level, msg: seen.append((level, msg)))
    s.set_numerics_check("warn")
    mixp.tensor([-1.0], session=s).log()
    assert seen and "log" in seen[0][1]
    s.set_log_callback(None)
