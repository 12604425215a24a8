"""The cross-language run from Python (see train.c): the same calls through
the mixp package must give the same final loss, bit for bit."""
import struct
import sys

import mixp
from mixp import amp, data, nn, optim

STEPS = 200

session = mixp.Session(seed=1, num_threads=2)
dataset = data.synthetic(num_samples=4096, seed=1, session=session)
loader = data.DataLoader(dataset, batch_size=64, seed=1)
model = nn.model("mlp in=784 hidden=256,128 classes=10", session=session)
opt = optim.AdamW(model.parameters())
scaler = amp.GradScaler(mode="dynamic", session=session)
last = 0.0
for step in range(STEPS):
    batch = loader.next() or loader.next()  # None ends an epoch; the next call starts one
    x, y = batch
    with amp.autocast(dtype=mixp.bfloat16, level="O1", session=session):
        loss = mixp.cross_entropy(model(x), y)
    opt.zero_grad()
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    last = loss.item()
print(f"final_loss={last:.9g} scale={scaler.get_scale():g}")
print("final_loss_bits=0x%016x" % struct.unpack("<Q", struct.pack("<d", last))[0])
sys.stdout.flush()
