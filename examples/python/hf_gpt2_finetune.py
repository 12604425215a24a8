"""Fine-tune Hugging Face GPT-2 weights with mixp: import, O2 bf16, export.

    python hf_gpt2_finetune.py PRETRAINED_DIR OUT_DIR [--steps 50] [--tokens FILE.npy]

PRETRAINED_DIR is what transformers' GPT2LMHeadModel.save_pretrained wrote
(model.safetensors and config.json). The zoo gpt is built with the sizes of
its config.json, imports the weights, trains under O2 bf16 (bf16 parameters,
fp32 masters in AdamW, no loss scaling needed for bf16) on next-token
targets, and exports the fp32 masters to OUT_DIR, which
GPT2LMHeadModel.from_pretrained reads. Tokens come from FILE.npy (int64
GPT-2 token ids) or, without it, a fixed synthetic sequence. When
transformers is installed the script also reads OUT_DIR back with it and
prints the largest logit difference against mixp.
"""
import argparse
import json
import pathlib

import numpy as np

import mixp


def zoo_config(pretrained):
    c = json.loads((pathlib.Path(pretrained) / "config.json").read_text())
    if c.get("model_type") != "gpt2":
        raise SystemExit(f"{pretrained}: model_type is {c.get('model_type')!r}, not 'gpt2'")
    if c.get("activation_function", "gelu_new") not in ("gelu_new", "gelu_pytorch_tanh"):
        raise SystemExit(f"{pretrained}: activation_function {c['activation_function']!r} is not GPT-2's")
    return (f"gpt n_layer={c['n_layer']} n_head={c['n_head']} n_embd={c['n_embd']} "
            f"vocab={c['vocab_size']} block_size={c['n_positions']} gelu=tanh")


def batches(tokens, batch, seq, steps, seed=0):
    rng = np.random.default_rng(seed)
    for _ in range(steps):
        starts = rng.integers(0, len(tokens) - seq - 1, size=batch)
        x = np.stack([tokens[s:s + seq] for s in starts])
        y = np.stack([tokens[s + 1:s + seq + 1] for s in starts])
        yield x, y.reshape(-1)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pretrained")
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=50)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-4)
    ap.add_argument("--tokens", help="int64 .npy of token ids (default: a synthetic sequence)")
    args = ap.parse_args()

    config = zoo_config(args.pretrained)
    model = mixp.nn.model(config).load_hf_gpt2(args.pretrained)
    vocab = int(config.split("vocab=")[1].split()[0])
    if args.tokens:
        tokens = np.load(args.tokens).astype(np.int64)
    else:  # a repeating pattern the model can learn in a few steps
        tokens = (np.arange(20000, dtype=np.int64) * 7919 % 61) % vocab

    opt = mixp.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.0)
    mixp.amp.decorate(model, opt, dtype="bf16")  # bf16 weights, fp32 masters in opt
    print(f"{config}: {model.num_parameters()} parameters, O2 bf16")
    for step, (x, y) in enumerate(batches(tokens, args.batch, args.seq, args.steps)):
        with mixp.amp.autocast(dtype="bf16", level="O2"):
            logits = model(mixp.tensor(x))
            loss = mixp.functional.cross_entropy(logits.reshape(-1, vocab), mixp.tensor(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % 10 == 0 or step == args.steps - 1:
            print(f"step {step:3d}  loss {loss.item():.4f}")

    model.save_hf_gpt2(args.out, optimizer=opt)  # the fp32 masters, HF layout + config.json
    print(f"exported to {args.out}")
    # The export imports back into a fresh f32 model (every tensor checked).
    tuned = mixp.nn.model(config).load_hf_gpt2(args.out)
    x = next(batches(tokens, 2, args.seq, 1, seed=1))[0]
    ours = tuned(mixp.tensor(x)).numpy()
    try:
        import torch
        from transformers import GPT2LMHeadModel
    except ImportError:
        return
    theirs = GPT2LMHeadModel.from_pretrained(args.out).eval()
    with torch.no_grad():
        ref = theirs(torch.from_numpy(x)).logits.numpy()
    print(f"transformers reads the export: max |logits diff| vs mixp = {np.abs(ours - ref).max():.3g}")


if __name__ == "__main__":
    main()
