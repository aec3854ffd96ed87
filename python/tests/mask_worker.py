"""One rank of test_masks.py: python3 mask_worker.py RANK WORLD PORT SCENARIO OUTDIR [BACKEND].

BACKEND: gloo (the default, CPU tensors) or nccl (CUDA tensors, one GPU per rank)."""
import json
import os
import sys
import time
from datetime import timedelta

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from seedance_prune.masks import MaskSet, MaskSync, MaskSyncError, StaleMasks  # noqa: E402

rank, world, port, scenario, outdir = (int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]),
                                       sys.argv[4], sys.argv[5])
backend = sys.argv[6] if len(sys.argv) > 6 else "gloo"
device = "cuda" if backend == "nccl" else "cpu"
if device == "cuda":
    torch.cuda.set_device(rank)
torch.set_num_threads(1)
os.environ["GLOO_SOCKET_IFNAME"] = "lo"  # gloo's pairs on loopback too, not the host's address
dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                        world_size=world, timeout=timedelta(seconds=10))
result = {"rank": rank}


def wait_for(name, seconds=30):
    deadline = time.monotonic() + seconds
    while not os.path.exists(os.path.join(outdir, name)):
        if time.monotonic() > deadline:
            raise TimeoutError(name)
        time.sleep(0.05)


torch.manual_seed(0)  # the same model on every rank; only the root chooses masks
model = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.ReLU(), torch.nn.Linear(64, 4))
model = model.to(device)
masks = MaskSet({"hidden": (64,), "blocks": (5,)})
sync = MaskSync(masks, root=0, device=device)
if rank == 0:
    g = torch.Generator().manual_seed(42)
    masks.set("hidden", torch.rand(64, generator=g) > 0.5)
    masks.set("blocks", torch.tensor([True, False, True, True, False]))
result["moved"] = sync.broadcast()
result["moved_again"] = sync.broadcast()  # nothing changed: no payload
result["version"] = sync.verify()
model[0].register_forward_hook(lambda m, i, out: out * masks["hidden"].to(out.device))
x = torch.linspace(-1, 1, 32).view(2, 16).to(device)
with torch.no_grad():
    result["output"] = model(x).tolist()
result["packed"] = masks.pack().tolist()

if scenario == "stale":
    if rank == 1:
        masks.set("blocks", torch.tensor([False] * 5))  # changed here, never broadcast
    handle = sync.guard(model)
    try:
        model(x)
        result["ran"] = True
    except StaleMasks as e:
        result["refused"] = str(e)
elif scenario == "killed":
    open(os.path.join(outdir, f"ready.{rank}"), "w").close()
    if rank == 2:
        time.sleep(60)  # killed by the test
    wait_for("go")
    if rank == 0:
        masks.set("blocks", torch.tensor([True] * 5))
    t0 = time.monotonic()
    try:
        sync.broadcast()
        result["broadcast"] = "completed"
    except MaskSyncError as e:
        result["error"] = str(e)
    result["detected_s"] = round(time.monotonic() - t0, 2)

with open(os.path.join(outdir, f"{rank}.json"), "w") as f:
    json.dump(result, f)
os._exit(0)  # no barrier at exit: a dead peer must not hang the others
