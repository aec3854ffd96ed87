"""Measuring what pruning and precision change: accuracy, MACs, latency, peak memory.

Every number here is measured on the model as it runs, never derived from the ratio:
- `macs()` counts multiply-accumulates of every convolution, linear layer and attention in one
  forward pass (forward hooks read the real tensor sizes);
- `latency()` times whole forward passes (P50, P99, samples per second);
- `peak_memory()` is the most memory the forward pass holds: on CUDA the allocator's peak
  (torch.cuda.max_memory_allocated); on the CPU the heap in use (glibc mallinfo2: parameters,
  buffers and live activations), sampled before and after every layer.
"""
import contextlib
import ctypes
import statistics
import time

import torch
import torch.nn.functional as F
from torch import nn

from .attention import PrunedSelfAttention


def train(model, x, y, epochs=1, lr=3e-3, batch=128, device="cpu", autocast_dtype=None,
          seed=0, max_seconds=None):
    """Adam over (x, y) for `epochs` epochs (shuffled with `seed`); stops early after
    `max_seconds` if given. Returns the model (in eval mode)."""
    model.to(device).train()
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(seed)
    start = time.monotonic()
    for _ in range(epochs):
        order = torch.randperm(len(y), generator=gen)
        for i in range(0, len(y), batch):
            idx = order[i:i + batch]
            xb, yb = x[idx].to(device, non_blocking=True), y[idx].to(device, non_blocking=True)
            with _autocast(device, autocast_dtype):
                loss = F.cross_entropy(model(xb), yb)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            if max_seconds is not None and time.monotonic() - start > max_seconds:
                return model.eval()
    return model.eval()


def _autocast(device, dtype):
    if dtype is None:
        return contextlib.nullcontext()
    return torch.autocast(device_type="cuda" if str(device).startswith("cuda") else "cpu",
                          dtype=dtype)


@torch.no_grad()
def accuracy(model, x, y, batch=512, device="cpu", dtype=None):
    """Percent of `x` classified as `y`; `dtype` casts the inputs (a model cast to bf16/fp16)."""
    model.eval()
    correct = 0
    for i in range(0, len(y), batch):
        xb = x[i:i + batch].to(device)
        if dtype is not None:
            xb = xb.to(dtype)
        correct += (model(xb).argmax(1).cpu() == y[i:i + batch]).sum().item()
    return 100.0 * correct / len(y)


@torch.no_grad()
def macs(model, example):
    """Multiply-accumulates of one forward pass over `example`, per sample."""
    total = [0]

    def conv(m, inputs, out):
        total[0] += out.numel() * (m.in_channels // m.groups) * m.weight[0, 0].numel()

    def linear(m, inputs, out):
        total[0] += out.numel() * m.in_features

    def attention(m, inputs, out):
        x = inputs[0]
        batch, length, width = x.shape
        inner = m.in_proj_weight.shape[0] // 3
        out_width = m.out_proj.weight.shape[0]
        # qkv projection, scores, weighted sum, output projection
        total[0] += batch * length * (width * 3 * inner + 2 * length * inner + inner * out_width)

    handles = []
    for m in model.modules():
        if isinstance(m, nn.modules.conv._ConvNd):
            handles.append(m.register_forward_hook(conv))
        elif isinstance(m, nn.Linear) and not _inside_attention(model, m):
            handles.append(m.register_forward_hook(linear))
        elif isinstance(m, (nn.MultiheadAttention, PrunedSelfAttention)):
            handles.append(m.register_forward_hook(attention))
    try:
        model.eval()
        model(example)
    finally:
        for h in handles:
            h.remove()
    return total[0] // example.shape[0]


def _inside_attention(model, linear):
    return any(getattr(m, "out_proj", None) is linear for m in model.modules()
               if isinstance(m, (nn.MultiheadAttention, PrunedSelfAttention)))


def _sync(device):
    if str(device).startswith("cuda"):
        torch.cuda.synchronize()


@torch.no_grad()
def latency(model, example, iterations=50, warmup=5, max_seconds=20.0, warmup_seconds=0.3):
    """Times forward passes over `example`: {"p50_ms", "p99_ms", "samples_per_s",
    "iterations"}; stops after `max_seconds` (at least 3 timed passes). Warms up for
    `warmup` passes and at least `warmup_seconds` (kernel choice, caches, clock ramp)."""
    model.eval()
    device = example.device
    t0 = time.monotonic()
    done = 0
    while done < warmup or time.monotonic() - t0 < warmup_seconds:
        model(example)
        _sync(device)
        done += 1
    times = []
    start = time.monotonic()
    for _ in range(iterations):
        t0 = time.perf_counter()
        model(example)
        _sync(device)
        times.append(time.perf_counter() - t0)
        if len(times) >= 3 and time.monotonic() - start > max_seconds:
            break
    times.sort()
    p99 = times[min(len(times) - 1, int(round(0.99 * (len(times) - 1))))]
    return {"p50_ms": round(statistics.median(times) * 1e3, 4), "p99_ms": round(p99 * 1e3, 4),
            "samples_per_s": round(example.shape[0] / statistics.mean(times), 1),
            "iterations": len(times)}


class _MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]


_libc = None


def _heap_in_use():
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL("libc.so.6")
        _libc.mallinfo2.restype = _MallInfo2
    info = _libc.mallinfo2()
    return info.uordblks + info.hblkhd


def model_bytes(model):
    """Bytes of the model's weights and buffers, quantized (packed) weights included."""
    def size(v):
        if isinstance(v, torch.Tensor):
            return v.numel() * v.element_size()
        if isinstance(v, (tuple, list)):
            return sum(size(x) for x in v)
        return 0
    return sum(size(v) for v in model.state_dict().values())


@torch.no_grad()
def peak_memory(model, example):
    """Peak bytes a forward pass over `example` holds: weights plus activations (see module
    docstring for how each device measures it)."""
    model.eval()
    device = example.device
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device) - model_bytes(model)
        model(example)
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated(device) - base
    peak = [0]

    def sample(*_):
        peak[0] = max(peak[0], _heap_in_use())

    handles = []
    for m in model.modules():
        handles += [m.register_forward_pre_hook(sample), m.register_forward_hook(sample)]
    try:
        model(example)  # warm: one-time allocations (thread pools, caches) are not the model's
        peak[0] = 0
        base = _heap_in_use()
        model(example)
    finally:
        for h in handles:
            h.remove()
    return model_bytes(model) + max(0, peak[0] - base)


def profile(model, test_x, test_y, example_b1, example_big, name, device="cpu", dtype=None,
            energy=None):
    """One configuration's measured profile, the selector's input (select.py)."""
    lat1 = latency(model, example_b1, iterations=200)
    lat_big = latency(model, example_big, iterations=20)
    row = {"name": name, "accuracy": round(accuracy(model, test_x, test_y, device=device,
                                                    dtype=dtype), 2),
           "latency_p99_ms": lat1["p99_ms"], "latency_p50_ms": lat1["p50_ms"],
           f"throughput_b{example_big.shape[0]}": lat_big["samples_per_s"],
           "memory_mb": round(peak_memory(model, example_big) / 2 ** 20, 3),
           "params": sum(p.numel() for p in model.parameters())}
    if energy is not None:
        row["energy_mj"] = energy(model, example_b1)
    return row
