"""seedance::trim under PyTorch: ResNet-50 and a small transformer under TrimmedModel with a fast-tier budget below their size (CPU; --device cuda on a GPU): outputs, peak, overhead, bytes moved, and on a GPU what the driver saw."""
# Each model runs plain and trimmed on the same input, in alternating iterations after a
# warm-up, so drift hits both alike; step_overhead is the trimmed time over the plain time,
# minus one. outputs_equal compares every iteration's outputs bit for bit. Weights are random
# (nothing is downloaded). Prints one JSON line:
#   {"benchmark": "trim_torch", "device": ..., "models": [{name, outputs_equal, budget_bytes,
#    peak_fast_bytes, model_bytes, step_overhead, bytes_moved, ..., telemetry}, ...]}
# On CUDA `seedance gpu sample` runs alongside (bench/gpu_telemetry.py) and each model's
# `telemetry` puts three views of memory side by side (docs/trim.md, "What the figures can
# show"): the driver's (the process's and the device's peak, NVML), the library's own accounting
# (fast_peak_used) and PyTorch's allocator (max_memory_allocated, the cached blocks it reserved
# beyond that, and its inactive split blocks: fragmentation, which NVML cannot see), plus the
# PCIe throughput while the trimmed model streamed.
import argparse
import copy
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# bench/ holds queue.py, which would shadow the standard library's queue that torch imports.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.join(ROOT, "bench")]
sys.path.insert(0, os.path.join(ROOT, "python"))
_release_lib = os.path.join(ROOT, "build-release", "src", "trim", "libseedance_trim.so")
if os.path.exists(_release_lib):  # bench/run's Release build
    os.environ.setdefault("SEEDANCE_TRIM_LIB", _release_lib)
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
sys.path.append(os.path.join(ROOT, "bench"))  # after the standard library: gpu_telemetry only

import torch  # noqa: E402
import torchvision  # noqa: E402

from gpu_telemetry import GpuSampler  # noqa: E402
from seedance_trim import TrimManager, TrimmedModel  # noqa: E402
from test_trim_torch import SmallCNN, SmallTransformer, model_bytes  # noqa: E402


def sync(device):
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def allocator_view(device):
    """PyTorch's caching allocator since its peak stats were reset (CUDA only)."""
    st = torch.cuda.memory_stats(device)
    return {"max_allocated_bytes": torch.cuda.max_memory_allocated(device),
            "max_reserved_bytes": torch.cuda.max_memory_reserved(device),
            # reserved but not allocated at the end: blocks the allocator keeps cached
            "cached_bytes": st.get("reserved_bytes.all.current", 0) -
            st.get("allocated_bytes.all.current", 0),
            # free pieces of split blocks: memory no allocation of another size can use
            "inactive_split_peak_bytes": st.get("inactive_split_bytes.all.peak", 0)}


def measure(name, model, inputs, budget_share, device, iterations, sampler=None):
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats(device)
    t_start = time.time()
    plain = copy.deepcopy(model).eval().to(device)
    size = model_bytes(model)
    budget = int(size * budget_share)
    if device == "cpu":
        manager = TrimManager.host(budget, 2 * size, min_victim_bytes=0)
    else:
        manager = TrimManager.cuda(budget, 2 * size, min_victim_bytes=0)
    trimmed = TrimmedModel(model.eval(), manager)
    inputs = inputs.to(device)
    equal = True
    times = {"plain": 0.0, "trimmed": 0.0}
    with torch.no_grad():
        for i in range(iterations + 2):
            order = [("plain", plain), ("trimmed", trimmed)]
            if i % 2:
                order.reverse()
            outs = {}
            for label, m in order:
                sync(device)
                t0 = time.perf_counter()
                outs[label] = m(inputs)
                sync(device)
                if i >= 2:  # two warm-up iterations
                    times[label] += time.perf_counter() - t0
            equal = equal and torch.equal(outs["plain"], outs["trimmed"])
    s = trimmed.stats()
    telemetry = None
    if device.startswith("cuda"):
        time.sleep(0.3)  # a last reading after the final step
        telemetry = {"library": {"fast_peak_used_bytes": s["fast_peak_used"]},
                     "allocator": allocator_view(device)}
        if sampler is not None and sampler.error is None:
            telemetry["driver"] = sampler.window(t_start, time.time(), pid=os.getpid())
        else:
            telemetry["driver"] = {"error": sampler.error if sampler else "no sampler"}
    return {"name": name, "telemetry": telemetry, "outputs_equal": equal, "budget_bytes": budget,
            "peak_fast_bytes": s["fast_peak_used"], "model_bytes": size,
            "step_overhead": round(times["trimmed"] / times["plain"] - 1, 4),
            "step_ms_plain": round(1000 * times["plain"] / iterations, 3),
            "step_ms_trimmed": round(1000 * times["trimmed"] / iterations, 3),
            "bytes_moved": s["bytes_moved_down"] + s["bytes_moved_up"],
            "bytes_copied": s["bytes_moved_down"] - s["bytes_down_without_copy"] +
            s["bytes_moved_up"],
            "stalls": s["stalls"], "buffers": s["buffers"]}


def hook_overhead(device):
    """The library's part of TrimmedModel's hooks: a unit acquired and released when nothing
    has to move (a budget twice the model), one call per unit (µs, best of 5 x 20 passes)."""
    from seedance_trim.torch_hooks import _UnitIds
    model = torchvision.models.resnet50().eval()
    size = model_bytes(model)
    manager = (TrimManager.host(2 * size, 2 * size, min_victim_bytes=0) if device == "cpu" else
               TrimManager.cuda(2 * size, 2 * size, min_victim_bytes=0))
    trimmed = TrimmedModel(model, manager)
    units = [_UnitIds(ids) for ids in (trimmed._unit_buffers(m, False) for m in model.modules())
             if ids]
    best = float("inf")
    with torch.no_grad():  # an inference forward's hooks (with grad outside forward(), a unit
        for _ in range(5):  # would push saved-tensor hooks: a recomputation)
            t0 = time.perf_counter()
            for _ in range(20):
                for u in units:
                    trimmed._acquire_unit(u)
                    trimmed._release_unit(u)
            best = min(best, (time.perf_counter() - t0) / (20 * len(units)))
    return {"model": "resnet50", "units": len(units), "us_per_unit": round(best * 1e6, 2)}


def training(device, iterations):
    """Training steps (SGD, momentum) plain and under TrimmedModel, with gradients left on the
    device or moved off as they are produced (gradients="cpu"): median step ms, and on CUDA
    PyTorch's peak allocations (gradients, activations, momentum: not the weights). CPU:
    SmallCNN, batch 32, at 40%; CUDA: an MLP of four 4096-wide layers, batch 1024, at 60% (the
    budget holds the two largest units, 64 MiB each)."""
    torch.manual_seed(1)
    if device == "cpu":
        base = SmallCNN()
        x, y = torch.randn(32, 3, 16, 16), torch.randint(0, 10, (32,))
    else:
        layers = []
        for _ in range(4):
            layers += [torch.nn.Linear(4096, 4096), torch.nn.ReLU()]
        base = torch.nn.Sequential(*layers, torch.nn.Linear(4096, 10))
        x = torch.randn(1024, 4096, device=device)
        y = torch.randint(0, 10, (1024,), device=device)
    size = model_bytes(base)
    share = 0.4 if device == "cpu" else 0.6
    loss_fn = torch.nn.CrossEntropyLoss()
    rows = []
    for gradients in (None, "device", "cpu"):
        if gradients is None:
            model = copy.deepcopy(base).to(device).train()
        else:
            manager = (TrimManager.host(int(size * share), 2 * size, min_victim_bytes=0)
                       if device == "cpu" else
                       TrimManager.cuda(int(size * share), 2 * size, min_victim_bytes=0,
                                        async_copies=1))
            model = TrimmedModel(copy.deepcopy(base), manager, gradients=gradients).train()
        params = (model.model if gradients else model).parameters()
        opt = torch.optim.SGD(params, lr=0.01, momentum=0.9)
        if device != "cpu":
            sync(device)
            torch.cuda.reset_peak_memory_stats()
        times = []
        for _ in range(iterations + 2):
            t0 = time.perf_counter()
            opt.zero_grad()
            model.zero_grad()
            loss_fn(model(x), y).backward()
            if gradients is None:
                opt.step()
            else:
                model.optimizer_step(opt)
            sync(device)
            times.append(time.perf_counter() - t0)
        times = sorted(times[2:])
        row = {"model": "plain" if gradients is None else
               f"trimmed_{round(share * 100)}pct_gradients_{gradients}",
               "step_ms": round(times[len(times) // 2] * 1e3, 2)}
        if gradients == "cpu":
            row["gradient_bytes_moved_off_per_step"] = \
                model.stats()["gradient_bytes_moved_off"] // (iterations + 2)
        if device != "cpu":
            row["peak_allocated_bytes"] = torch.cuda.max_memory_allocated()
        rows.append(row)
    return {"model": "small_cnn_b32" if device == "cpu" else "mlp_4x4096_b1024",
            "model_bytes": size, "rows": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu", help="cpu or cuda")
    ap.add_argument("--iterations", type=int, default=10)
    args = ap.parse_args()
    torch.manual_seed(0)
    if args.device.startswith("cuda"):
        torch.backends.cudnn.deterministic = True
        torch.backends.cudnn.benchmark = False
        resnet_input = torch.randn(8, 3, 224, 224)
    else:
        torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
        resnet_input = torch.randn(1, 3, 128, 128)
    sampler = GpuSampler(interval="100ms", pid=os.getpid()) if args.device.startswith(
        "cuda") else None
    if sampler is not None:
        sampler.__enter__()
    models = [
        measure("resnet50", torchvision.models.resnet50(), resnet_input, 0.4, args.device,
                args.iterations, sampler),
        # On CUDA blocks are backed in 2 MiB granules: a model of a few MB cannot be held to
        # 35% of itself, so the GPU run uses a larger transformer of the same shape.
        measure("small_transformer", SmallTransformer(), torch.randint(0, 4000, (4, 64)), 0.35,
                args.device, args.iterations) if args.device == "cpu" else
        measure("transformer_d512_l6", SmallTransformer(vocab=32000, d=512, layers=6),
                torch.randint(0, 32000, (8, 128)), 0.35, args.device, args.iterations, sampler),
    ]
    if sampler is not None:
        sampler.stop()
    print(json.dumps({"benchmark": "trim_torch", "device": args.device,
                      "torch": torch.__version__, "iterations": args.iterations,
                      "sampler": (sampler.summary or {"error": sampler.error})
                      if sampler else None, "models": models,
                      "hook_overhead": hook_overhead(args.device),
                      "training": training(args.device, args.iterations)}))


if __name__ == "__main__":
    main()
