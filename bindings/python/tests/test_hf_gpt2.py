"""Module.load_hf_gpt2 / save_hf_gpt2: a Hugging Face GPT-2 layout written
here with safetensors' numpy writer (HF names, Conv1D weights transposed)
imports into a zoo gpt bit for bit; the export is that same layout; bad
files raise the mixp error naming the tensor and change nothing."""

import numpy as np
import pytest

import mixp

st = pytest.importorskip("safetensors.numpy")

ZOO = "gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6 gelu=tanh"
RENAMES = {"attn.in_proj_weight": "attn.c_attn.weight", "attn.in_proj_bias": "attn.c_attn.bias",
           "attn.out_proj.weight": "attn.c_proj.weight", "attn.out_proj.bias": "attn.c_proj.bias"}


def random_gpt(seed):
    m = mixp.nn.model(ZOO)
    rng = np.random.default_rng(seed)
    with mixp.no_grad():
        for _, p in m.named_parameters():
            p.copy_(mixp.tensor(rng.uniform(-0.5, 0.5, size=p.numpy().shape).astype(np.float32)))
    return m


def hf_layout(m):
    out = {}
    for name, p in m.named_parameters():
        for old, new in RENAMES.items():
            name = name.replace(old, new)
        v = p.numpy()
        conv1d = name.endswith(".weight") and any(k in name for k in ("c_attn", "c_proj", "c_fc"))
        out["transformer." + name] = np.ascontiguousarray(v.T) if conv1d else v
    return out


def logits(m):
    idx = (np.arange(12, dtype=np.int64).reshape(2, 6) * 7 + 3) % 13
    return m(mixp.tensor(idx)).numpy()


def test_import_is_bit_identical_and_export_is_the_layout(tmp_path):
    src = random_gpt(1)
    layout = hf_layout(src)
    st.save_file(layout, str(tmp_path / "model.safetensors"), metadata={"format": "pt"})
    dst = random_gpt(2)
    assert dst.load_hf_gpt2(tmp_path) is dst
    np.testing.assert_array_equal(logits(dst), logits(src))
    out = tmp_path / "export"
    dst.save_hf_gpt2(out)
    back = st.load_file(str(out / "model.safetensors"))
    assert sorted(back) == sorted(layout)  # every tensor, nothing else (lm_head stays tied)
    for k, v in layout.items():
        np.testing.assert_array_equal(back[k], v)
    assert '"activation_function": "gelu_new"' in (out / "config.json").read_text()


def test_bad_files_raise_and_change_nothing(tmp_path):
    m = random_gpt(3)
    before = logits(m)
    layout = hf_layout(random_gpt(4))
    bad = tmp_path / "bad.safetensors"
    missing = dict(layout)
    del missing["transformer.h.1.ln_2.bias"]
    st.save_file(missing, str(bad))
    with pytest.raises(mixp.ShapeError, match="transformer.h.1.ln_2.bias"):
        m.load_hf_gpt2(bad)
    wrong = dict(layout)
    wrong["transformer.h.0.mlp.c_fc.weight"] = np.zeros((32, 8), dtype=np.float32)
    st.save_file(wrong, str(bad))
    with pytest.raises(mixp.ShapeError, match=r"transformer.h.0.mlp.c_fc.weight' has shape \[32,8\]"):
        m.load_hf_gpt2(bad)
    extra = dict(layout, **{"transformer.h.0.attn.rotary": np.zeros(3, dtype=np.float32)})
    st.save_file(extra, str(bad))
    with pytest.raises(mixp.ShapeError, match="transformer.h.0.attn.rotary"):
        m.load_hf_gpt2(bad)
    np.testing.assert_array_equal(logits(m), before)
    with pytest.raises(mixp.InvalidArgumentError, match="gelu=tanh"):
        mixp.nn.model("gpt n_layer=2 n_head=2 n_embd=8 vocab=13 block_size=6").load_hf_gpt2(bad)
