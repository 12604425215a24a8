#!/usr/bin/env python3
"""mixp's Hugging Face GPT-2 import and export against transformers itself
(run by hand, outside CI: it needs torch and transformers; the numbers it
prints are recorded in docs/model-zoo.md, "GPT-2 weights").

    PYTHONPATH=<build>/bindings/python /work/venv-torch/bin/python \
        tests/golden/hf_gpt2_transformers.py

1. transformers -> mixp: a GPT2LMHeadModel with random weights (every
   parameter drawn, biases and LayerNorms included) is written with
   save_pretrained(safe_serialization=True) and imported with
   Module.load_hf_gpt2; both compute logits for the same tokens, in float32
   and in float64 (a dtype=f64 mixp model against model.double()).
2. mixp -> transformers: a mixp gpt with random weights is exported with
   Module.save_hf_gpt2 and read with GPT2LMHeadModel.from_pretrained.
Prints the largest absolute logit difference of each.
"""
import sys
import tempfile

import numpy as np
import torch
import transformers
from transformers import GPT2Config, GPT2LMHeadModel

import mixp

SIZES = dict(n_layer=3, n_head=4, n_embd=48, vocab=97, block_size=32)
ZOO = "gpt n_layer={n_layer} n_head={n_head} n_embd={n_embd} vocab={vocab} block_size={block_size} gelu=tanh".format(**SIZES)


def hf_model(seed):
    torch.manual_seed(seed)
    cfg = GPT2Config(vocab_size=SIZES["vocab"], n_positions=SIZES["block_size"], n_embd=SIZES["n_embd"],
                     n_layer=SIZES["n_layer"], n_head=SIZES["n_head"], activation_function="gelu_new",
                     resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                     bos_token_id=SIZES["vocab"] - 1, eos_token_id=SIZES["vocab"] - 1)
    m = GPT2LMHeadModel(cfg).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.normal_(0.0, 0.2)
    return m


def tokens(seed):
    rng = np.random.default_rng(seed)
    return rng.integers(0, SIZES["vocab"], size=(2, SIZES["block_size"]), dtype=np.int64)


def hf_logits(m, idx, dtype):
    with torch.no_grad():
        return m.to(dtype)(torch.from_numpy(idx)).logits.double().numpy()


def mixp_logits(m, idx):
    return m(mixp.tensor(idx)).numpy().astype(np.float64)


def randomize(m, seed):
    rng = np.random.default_rng(seed)
    with mixp.no_grad():
        for _, p in m.named_parameters():
            shape = p.numpy().shape
            p.copy_(mixp.tensor(rng.normal(0.0, 0.2, size=shape).astype(np.float32)))


def main():
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, mixp {mixp.__version__}")
    print(f"config: {ZOO}")
    idx = tokens(1)
    with tempfile.TemporaryDirectory() as d:
        ref = hf_model(0)
        ref.save_pretrained(d, safe_serialization=True)
        for dt, torch_dt in (("f32", torch.float32), ("f64", torch.float64)):
            m = mixp.nn.model(f"{ZOO} dtype={dt}").load_hf_gpt2(d)
            theirs = hf_logits(ref, idx, torch_dt)
            diff = np.abs(mixp_logits(m, idx) - theirs).max()
            print(f"transformers -> mixp, {dt}: max |logits diff| = {diff:.3g} "
                  f"(max |logit| {np.abs(theirs).max():.3g})")
    with tempfile.TemporaryDirectory() as d:
        m = mixp.nn.model(ZOO)
        randomize(m, 2)
        m.save_hf_gpt2(d)
        back = GPT2LMHeadModel.from_pretrained(d).eval()
        ours = mixp_logits(m, idx)
        diff = np.abs(ours - hf_logits(back, idx, torch.float32)).max()
        print(f"mixp -> transformers, f32: max |logits diff| = {diff:.3g} "
              f"(max |logit| {np.abs(ours).max():.3g})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
