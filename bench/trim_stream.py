"""Weight streaming (StreamedModel) against the resident model, accelerate's dispatch_model (CUDA, where installed), TrimmedModel and a one-unit-ahead prefetcher: step ms, efficiency, bytes per step, waits, device memory, outputs (CPU; --device cuda on a GPU, with a model of Llama-7B's shape)."""
# Issue 41's benchmark. Each model runs in every configuration on the same input, in
# alternating order after two warm-up steps, so drift hits all alike. The budget is the same
# share of the model's bytes for each. Efficiency E = max(t_resident, F * S / BW) / t, where
# S = model - budget (what any method must move per forward at that budget), F the forwards in
# a step (1, or a prefill and its decode steps) and BW the measured link: pinned host to device
# on CUDA, the host's memcpy on the CPU. Weights are random (nothing is downloaded).
# Prints one JSON line: {"benchmark": "trim_stream", "models": [{name, budget_bytes, rows:
# [{config, step_ms, efficiency, bytes_per_step, waits, device_bytes, outputs_equal, ...}]}]}
import argparse
import copy
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.join(ROOT, "bench")]
sys.path.insert(0, os.path.join(ROOT, "python"))
_release_lib = os.path.join(ROOT, "build-release", "src", "trim", "libseedance_trim.so")
if os.path.exists(_release_lib):  # bench/run's Release build
    os.environ.setdefault("SEEDANCE_TRIM_LIB", _release_lib)
sys.path.insert(0, os.path.join(ROOT, "python", "tests"))
sys.path.insert(0, os.path.join(ROOT, "bench", "streaming"))

import torch  # noqa: E402
import torchvision  # noqa: E402

import llama_shape  # noqa: E402
from baselines import (CudaOneAheadPrefetcher, OneAheadPrefetcher,  # noqa: E402
                       accelerate_dispatch)
from seedance_trim import TrimManager, TrimmedModel  # noqa: E402
from seedance_trim.streaming import StreamedModel, _CudaBackend, _HostBackend  # noqa: E402
from test_trim_torch import SmallTransformer, model_bytes  # noqa: E402


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def make_configs(model, budget, dev, link, no_split):
    """Every configuration, each on its own copy of `model` (on the CPU). Returns (configs,
    what each holds on the device, notes for those that could not run)."""
    size = model_bytes(model)
    cuda = dev.type == "cuda"
    configs, held, notes, extra = {}, {}, {}, {}
    configs["resident"] = copy.deepcopy(model).eval().to(dev)
    held["resident"] = lambda: size
    if cuda:
        try:
            m, on_device, offloaded = accelerate_dispatch(copy.deepcopy(model).eval(), budget,
                                                          dev, no_split)
            configs["accelerate"] = m
            held["accelerate"] = lambda: on_device
            extra["accelerate_offloaded"] = offloaded
        except ImportError as e:
            notes["accelerate"] = f"not run: accelerate is not installed ({e})"
        except Exception as e:  # noqa: BLE001 (its own failure is a result, not the bench's)
            notes["accelerate"] = f"failed: {type(e).__name__}: {e}"
    manager = (TrimManager.cuda(budget, 2 * size, device=dev.index or 0, min_victim_bytes=0)
               if cuda else TrimManager.host(budget, 2 * size, min_victim_bytes=0))
    configs["trimmed"] = TrimmedModel(copy.deepcopy(model).eval(), manager)
    held["trimmed"] = lambda: manager.stats()["fast_peak_used"]
    extra["trimmed_manager"] = manager
    configs["one_ahead"] = (CudaOneAheadPrefetcher(copy.deepcopy(model).eval(), dev) if cuda
                            else OneAheadPrefetcher(copy.deepcopy(model).eval()))
    held["one_ahead"] = configs["one_ahead"].device_bytes
    streamed = StreamedModel(copy.deepcopy(model).eval(), budget, link_bytes_per_second=link,
                             device=dev)
    configs["streamed"] = streamed
    held["streamed"] = lambda: streamed.plan()["resident_bytes"] + streamed.plan()["ring_bytes"]
    return configs, held, notes, extra


def run(name, model, workload, share, iterations, link, dev, forwards=1, no_split=()):
    """`workload(m)` is one step on configuration `m` (its output is compared with the
    resident model's); it runs `forwards` forwards of the model."""
    size = model_bytes(model)
    budget = int(size * share)
    configs, held, notes, extra = make_configs(model, budget, dev, link, no_split)
    times = {k: 0.0 for k in configs}
    equal = {k: True for k in configs}
    errors = {}
    manager = extra["trimmed_manager"]
    with torch.no_grad():
        for i in range(iterations + 2):
            order = list(configs) if i % 2 == 0 else list(reversed(configs))
            outs = {}
            for k in order:
                if k in errors:
                    continue
                if i == 2 and k == "trimmed":
                    moved_before = manager.stats()["bytes_moved_up"]
                    stalls_before = manager.stats()["stalls"]
                if i == 2 and k == "one_ahead":
                    configs[k].reset_counts()
                sync(dev)
                t0 = time.perf_counter()
                try:
                    outs[k] = workload(configs[k])
                    sync(dev)
                except Exception as e:  # noqa: BLE001 (reported in its row)
                    errors[k] = f"{type(e).__name__}: {e}"
                    continue
                if i >= 2:
                    times[k] += time.perf_counter() - t0
            for k in outs:
                equal[k] = equal[k] and torch.equal(outs["resident"], outs[k])
            if i == 1:  # after the recording forward
                streamed_before = configs["streamed"].stats()
    forward_peak = {}
    if dev.type == "cuda":  # what one step adds to PyTorch's allocations (not the library's)
        with torch.no_grad():
            for k in configs:
                if k in errors:
                    continue
                sync(dev)
                base = torch.cuda.memory_allocated(dev)
                torch.cuda.reset_peak_memory_stats(dev)
                workload(configs[k])
                sync(dev)
                forward_peak[k] = torch.cuda.max_memory_allocated(dev) - base
    t_res = times["resident"] / iterations
    floor = max(t_res, forwards * (size - budget) / link)
    st = configs["streamed"].stats()
    per_step = {
        "resident": 0,
        "trimmed": (manager.stats()["bytes_moved_up"] - moved_before) / iterations,
        "one_ahead": configs["one_ahead"].copied / iterations,
        "streamed": (st["bytes_copied"] - streamed_before["bytes_copied"]) / iterations,
        # accelerate copies each offloaded module at each forward (from its device map)
        "accelerate": forwards * extra.get("accelerate_offloaded", 0),
    }
    waits = {"resident": 0, "accelerate": None,
             "trimmed": manager.stats()["stalls"] - stalls_before,
             "one_ahead": configs["one_ahead"].waits,
             "streamed": st["host_waits"] - streamed_before["host_waits"]}
    rows = []
    for k in configs:
        if k in errors:
            rows.append({"config": k, "error": errors[k], "outputs_equal": False})
            continue
        t = times[k] / iterations
        row = {"config": k, "step_ms": round(t * 1e3, 2), "efficiency": round(floor / t, 3),
               "bytes_per_step": int(per_step[k]), "waits": waits[k],
               "device_bytes": int(held[k]()), "outputs_equal": equal[k]}
        if k in forward_peak:
            row["step_peak_extra_bytes"] = int(forward_peak[k])
        rows.append(row)
    for k, why in notes.items():
        rows.append({"config": k, "skipped": why})
    plan = configs["streamed"].plan()
    result = {"name": name, "model_bytes": size, "budget_bytes": budget, "forwards": forwards,
              "floor_ms": round(floor * 1e3, 2),
              "streamed_plan": {k: plan[k] for k in ("resident_bytes", "ring_bytes",
                                                     "streamed_bytes", "lookahead")},
              "streamed_hook_us_per_unit": round(st["hook_us_per_unit"], 1), "rows": rows}
    # Each model's result as it comes, on stderr: a run cut short by its time limit (the GPU
    # check's) keeps what it measured.
    print(json.dumps({"partial": result}), file=sys.stderr, flush=True)
    del configs
    if dev.type == "cuda":
        torch.cuda.empty_cache()
    return result


def cpu_models(quick, iterations, link, dev):
    if quick:
        return [
            run("resnet50_fp32_b1_64px_40pct", torchvision.models.resnet50(),
                lambda m, x=torch.randn(1, 3, 64, 64): m(x), 0.4, 2, link, dev),
            run("transformer_d128_35pct", SmallTransformer(),
                lambda m, x=torch.randint(0, 4000, (2, 16)): m(x), 0.35, 2, link, dev),
        ]
    return [
        run("resnet50_fp32_b8_40pct", torchvision.models.resnet50(),
            lambda m, x=torch.randn(8, 3, 224, 224): m(x), 0.4, iterations, link, dev),
        # The d512 transformer's shape at a CPU's batch: 2 sequences of 64 tokens.
        run("transformer_d512_35pct", SmallTransformer(vocab=8000, d=512, layers=6),
            lambda m, x=torch.randint(0, 8000, (2, 64)): m(x), 0.35, iterations, link, dev),
    ]


def cuda_models(iterations, link, dev, layers, decode_steps):
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    bottleneck = ["Bottleneck"]
    x32 = torch.randn(8, 3, 224, 224, device=dev)
    models = [
        run("resnet50_fp32_b8_40pct", torchvision.models.resnet50(), lambda m: m(x32), 0.4,
            iterations, link, dev, no_split=bottleneck),
        run("resnet50_fp16_b8_40pct", torchvision.models.resnet50().half(),
            lambda m: m(x32.half()), 0.4, iterations, link, dev, no_split=bottleneck),
        run("transformer_d512_35pct", SmallTransformer(vocab=32000, d=512, layers=6),
            lambda m, x=torch.randint(0, 32000, (8, 128), device=dev): m(x), 0.35, iterations,
            link, dev, no_split=["TransformerEncoderLayer"]),
    ]
    # Llama-7B's shape in bf16, made on the device, then kept on the CPU for the copies.
    llama = llama_shape.build(layers, dev).cpu()
    no_split = ["Layer"]
    for batch, prompt_len in ((1, 2048), (64, 128)):
        prompt = torch.randint(0, 32000, (batch, prompt_len), device=dev)
        models.append(run(
            f"llama7b_shape_L{layers}_bf16_b{batch}_40pct", llama,
            lambda m, p=prompt: llama_shape.generate(m, p, decode_steps), 0.4,
            max(1, iterations // 2), link, dev, forwards=1 + decode_steps, no_split=no_split))
    return models


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--quick", action="store_true",
                    help="small inputs and models, 2 iterations: the CI run (ctest python.trim_stream)")
    ap.add_argument("--layers", type=int, default=32,
                    help="CUDA: the Llama-7B-shape model's layers (fewer: a shorter run)")
    ap.add_argument("--decode-steps", type=int, default=16)
    args = ap.parse_args()
    dev = torch.device(args.device)
    if dev.type == "cuda" and not torch.cuda.is_available():
        print(json.dumps({"benchmark": "trim_stream", "device": args.device,
                          "error": "no CUDA device visible to PyTorch"}))
        return 1
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    link = (_CudaBackend(dev).link_bytes_per_second() if dev.type == "cuda" else
            _HostBackend().link_bytes_per_second())
    started = time.monotonic()
    if dev.type == "cuda":
        models = cuda_models(args.iterations, link, dev, args.layers, args.decode_steps)
    else:
        models = cpu_models(args.quick, args.iterations, link, dev)
    ok = all(r["outputs_equal"] for m in models for r in m["rows"] if "skipped" not in r)
    # Streaming copies each streamed unit once per forward: the plan's bytes, no more.
    ok = ok and all(next(r for r in m["rows"] if r["config"] == "streamed").get("bytes_per_step")
                    == m["forwards"] * m["streamed_plan"]["streamed_bytes"] for m in models)
    print(json.dumps({"benchmark": "trim_stream", "device": str(dev), "torch": torch.__version__,
                      "link_gbps": round(link / 1e9, 2), "iterations": args.iterations,
                      "seconds": round(time.monotonic() - started, 1), "outputs_equal": ok,
                      "models": models}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
