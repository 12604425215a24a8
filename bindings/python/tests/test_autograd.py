"""Autograd through the binding: backward, .grad, no_grad, detach."""
import numpy as np
import pytest

import mixp


def test_backward_accumulates_gradients_like_the_formula():
    x_np = np.array([[1.0, 2.0], [3.0, -1.0]], np.float32)
    w_np = np.array([[0.5], [-0.25]], np.float32)
    x = mixp.from_numpy(x_np)
    w = mixp.from_numpy(w_np).requires_grad_()
    assert w.requires_grad and w.is_leaf
    loss = ((x @ w) ** 2).sum()
    assert not loss.is_leaf
    loss.backward()
    y = x_np @ w_np
    np.testing.assert_allclose(w.grad.numpy(), x_np.T @ (2 * y), rtol=1e-6)
    loss2 = (x @ w).sum()
    loss2.backward()  # accumulates
    np.testing.assert_allclose(w.grad.numpy(), x_np.T @ (2 * y) + x_np.sum(0, keepdims=True).T, rtol=1e-6)
    w.zero_grad()
    assert w.grad is None


def test_backward_with_a_seed_gradient():
    a = mixp.tensor([1.0, 2.0, 3.0], requires_grad=True)
    out = a * 2
    out.backward(mixp.tensor([1.0, 0.5, 0.0]))
    assert a.grad.numpy().tolist() == [2.0, 1.0, 0.0]


def test_backward_twice_is_a_state_error():
    a = mixp.tensor([1.0], requires_grad=True)
    loss = (a * a).sum()
    loss.backward()
    with pytest.raises(mixp.StateError) as e:
        loss.backward()
    assert isinstance(e.value, RuntimeError)
    assert "mixp_backward" in str(e.value)


def test_no_grad_and_detach():
    a = mixp.tensor([1.0, 2.0], requires_grad=True)
    with mixp.no_grad(a.session):
        b = a * 3
    assert not b.requires_grad
    c = (a * 3).detach()
    assert not c.requires_grad and c.numpy().tolist() == [3.0, 6.0]


def test_gradient_through_layers_and_losses():
    s = mixp.Session(seed=1)
    lin = mixp.nn.Linear(4, 3, session=s)
    x = mixp.randn(5, 4, session=s)
    y = mixp.tensor(np.array([0, 1, 2, 1, 0]), session=s)
    loss = mixp.cross_entropy(lin(x), y)
    loss.backward()
    grads = [p.grad for p in lin.parameters()]
    assert [g.shape for g in grads] == [(3, 4), (3,)]
    # d(mean CE)/d bias sums to zero over classes (softmax minus one-hot).
    assert abs(grads[1].numpy().sum()) < 1e-6


def test_checkpoint_region_through_the_raw_module():
    s = mixp.Session(seed=3)
    w = mixp.randn(4, 4, session=s).requires_grad_()
    x = mixp.randn(2, 4, session=s)
    ref = ((x @ w).relu() @ w).sum()
    ref.backward()
    expected = w.grad.numpy()
    w.zero_grad()
    capi = mixp.capi
    capi.mixp_checkpoint_begin(s._h)
    h = (x @ w).relu()
    capi.mixp_checkpoint_end(s._h, [h._h])
    (h @ w).sum().backward()
    np.testing.assert_array_equal(w.grad.numpy(), expected)
    with pytest.raises(mixp.StateError, match="mixp_checkpoint_end"):
        capi.mixp_checkpoint_end(s._h, [h._h])
