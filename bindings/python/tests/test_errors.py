"""Every status maps to its exception class, with the C library's message."""
import threading

import numpy as np
import pytest

import mixp


def test_hierarchy():
    for cls, base in [(mixp.InvalidArgumentError, ValueError), (mixp.ShapeError, ValueError),
                      (mixp.DTypeError, ValueError), (mixp.OutOfMemoryError, MemoryError),
                      (mixp.StateError, RuntimeError), (mixp.DeviceError, RuntimeError),
                      (mixp.IOError_, OSError), (mixp.CorruptError, ValueError),
                      (mixp.UnsupportedError, NotImplementedError), (mixp.InternalError, RuntimeError),
                      (mixp.NumericError, ArithmeticError)]:
        assert issubclass(cls, mixp.Error) and issubclass(cls, base)
        assert mixp.errors._from_status(cls.status, "m").__class__ is cls


def test_bad_shape_is_a_value_error_naming_the_operation():
    a, b = mixp.zeros(2, 3), mixp.zeros(4, 5)
    with pytest.raises(ValueError) as e:
        a @ b
    assert type(e.value) is mixp.ShapeError and e.value.status == mixp.capi.MIXP_ERR_SHAPE
    assert str(e.value).startswith("mixp_matmul")
    with pytest.raises(mixp.ShapeError, match="mixp_add"):
        a + b
    with pytest.raises(mixp.ShapeError, match="mixp_tensor_item"):
        a.item()


def test_wrong_dtype_numpy_array():
    with pytest.raises(ValueError) as e:
        mixp.from_numpy(np.zeros(3, np.complex64))
    assert isinstance(e.value, mixp.DTypeError) and "complex64" in str(e.value)
    with pytest.raises(mixp.DTypeError):
        mixp.from_numpy(np.zeros(3, np.int16))
    logits = mixp.zeros(2, 3)
    float_labels = np.array([0.0, 1.0], np.float32)  # labels must be int64
    with pytest.raises(ValueError) as e:
        mixp.cross_entropy(logits, float_labels)
    assert type(e.value) is mixp.DTypeError
    assert str(e.value).startswith("mixp_cross_entropy") and "f32" in str(e.value)
    with pytest.raises(mixp.DTypeError, match="mixp_add"):
        mixp.zeros(2) + mixp.zeros(2, dtype=mixp.float64)


def test_invalid_argument():
    with pytest.raises(ValueError) as e:
        mixp.Session(device="tpu")
    assert type(e.value) is mixp.InvalidArgumentError and "tpu" in str(e.value)
    with pytest.raises(mixp.InvalidArgumentError, match="mixp_tensor_zeros"):
        mixp.zeros(-1)
    with pytest.raises(mixp.InvalidArgumentError, match="mixp_tensor_zeros"):
        mixp.zeros(*([1] * 9))  # more than MIXP_MAX_DIMS
    with pytest.raises(TypeError):
        mixp.zeros("a")


def test_out_of_memory_is_a_memory_error():
    with pytest.raises(MemoryError) as e:
        mixp.zeros(2**45)
    assert type(e.value) is mixp.OutOfMemoryError
    assert "mixp_tensor_zeros" in str(e.value) and "cannot allocate" in str(e.value)
    assert mixp.zeros(4).numpy().sum() == 0  # still usable


def test_use_after_close():
    t = mixp.ones(2)
    t.close()
    t.close()  # idempotent
    with pytest.raises(RuntimeError) as e:
        t + 1
    assert isinstance(e.value, mixp.StateError) and "Tensor used after close()" in str(e.value)
    with pytest.raises(mixp.StateError):
        t.numpy()
    s = mixp.Session()
    x = mixp.ones(3, session=s)
    s.close()
    np.testing.assert_array_equal(x.numpy(), np.ones(3))  # still readable, as the C API says
    with pytest.raises(mixp.StateError) as e:
        x * x
    assert "mixp_mul" in str(e.value)  # the library's own message
    with pytest.raises(mixp.StateError, match="Session used after close"):
        mixp.zeros(2, session=s)
    with mixp.nn.Linear(2, 2) as lin:
        pass
    with pytest.raises(mixp.StateError):
        lin.parameters()


def test_raw_module_raises_the_same_classes():
    with pytest.raises(mixp.InvalidArgumentError, match="mixp_tensor_retain|NULL|mixp_reshape"):
        mixp.capi.mixp_reshape(None, [1])


def test_the_message_is_the_failing_calls_own_on_every_thread():
    errors = {}

    def worker(i):
        s = mixp.Session(num_threads=1)
        for _ in range(50):
            try:
                mixp.zeros(i + 1, session=s) @ mixp.zeros(i + 2, i + 3, session=s)
            except mixp.ShapeError as e:
                errors.setdefault(i, set()).add(str(e))
    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i in range(4):
        assert len(errors[i]) == 1
        (msg,) = errors[i]
        assert str(i + 1) in msg and str(i + 2) in msg


def test_cudnn_options_and_their_environment(monkeypatch):
    monkeypatch.delenv("MIXP_CUDNN_BENCHMARK", raising=False)
    monkeypatch.delenv("MIXP_CUDNN_DETERMINISTIC", raising=False)
    s = mixp.Session(num_threads=1)
    assert s.cudnn == (False, True)  # deterministic by default: runs repeat bit for bit
    s.set_cudnn(benchmark=True, deterministic=False)
    assert s.cudnn == (True, False)
    assert mixp.Session(num_threads=1, cudnn_benchmark=True).cudnn == (True, True)
    monkeypatch.setenv("MIXP_CUDNN_DETERMINISTIC", "0")
    assert mixp.Session(num_threads=1).cudnn == (False, False)
    monkeypatch.setenv("MIXP_CUDNN_BENCHMARK", "yes")
    with pytest.raises(mixp.InvalidArgumentError, match="MIXP_CUDNN_BENCHMARK is 'yes'"):
        mixp.Session(num_threads=1)
    with pytest.raises(mixp.InvalidArgumentError, match="deterministic must be 0 or 1"):
        mixp.capi.mixp_session_set_cudnn(s._h, 0, 2)
