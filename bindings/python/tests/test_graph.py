"""mixp.graph: a step captured with ``with`` and replayed is bitwise the eager step."""
import numpy as np
import pytest

import mixp
from mixp import nn, optim


def _rig(seed):
    s = mixp.Session(seed=seed, num_threads=2)
    model = nn.model("mlp in=784 hidden=32 classes=10 dropout=0.1", session=s)
    opt = optim.AdamW(model.parameters(), lr=1e-3)
    x = mixp.zeros(4, 784, session=s)
    t = mixp.zeros(4, dtype=mixp.int64, session=s)
    return s, model, opt, x, t


def _step(model, opt, x, t):
    opt.zero_grad()
    loss = mixp.cross_entropy(model(x), t)
    loss.backward()
    opt.step()
    return loss


def _batch(s, step):
    rng = np.random.default_rng(step)
    x = mixp.tensor(rng.standard_normal((4, 784)).astype(np.float32), session=s)
    t = mixp.tensor(rng.integers(0, 10, 4).astype(np.int64), session=s)
    return x, t


def test_replay_is_bitwise_the_eager_step():
    es, em, eo, ex, et = _rig(7)
    gs, gm, go, gx, gt = _rig(7)
    g = mixp.graph(gs)
    loss = None
    for step in range(5):
        for sess, x, t in ((es, ex, et), (gs, gx, gt)):
            bx, bt = _batch(sess, step)
            x.copy_(bx)
            t.copy_(bt)
        eloss = _step(em, eo, ex, et)
        if step == 0:
            _step(gm, go, gx, gt)  # warm-up
        elif step == 1:
            with g:
                loss = _step(gm, go, gx, gt)
                with pytest.raises(mixp.StateError, match="captured"):
                    loss.item()
        else:
            g.replay()
        if loss is not None:
            assert loss.numpy().tobytes() == eloss.numpy().tobytes()
        for (_, a), (_, b) in zip(em.named_parameters(), gm.named_parameters()):
            assert a.numpy().tobytes() == b.numpy().tobytes()
    g.close()
    with pytest.raises(mixp.StateError):
        g.replay()


def test_a_failed_capture_ends_the_capture():
    s, m, o, x, t = _rig(1)
    g = mixp.graph(s)
    with pytest.raises(KeyError):
        with g:
            _step(m, o, x, t)
            raise KeyError("x")
    assert g.closed
    _step(m, o, x, t).item()  # the session is eager again
