import mixp
from mixp import amp, data, nn, optim
train = data.DataLoader(data.synthetic(num_samples=2048), batch_size=64)
model = nn.model("mlp hidden=256,128")
opt = optim.AdamW(model.parameters(), lr=1e-3)
scaler = amp.GradScaler()
for epoch in range(2):
    for x, y in train:
        with amp.autocast(dtype=mixp.bfloat16):
            loss = mixp.cross_entropy(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
    print(f"epoch {epoch + 1}: loss {loss.item():.4f} scale {scaler.get_scale():g}")
