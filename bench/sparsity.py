"""Run-time block skipping: accuracy against the fraction of residual blocks executed, the calibrated gate against random skipping (the control), latency at batch 1 and 64 (CPU digits; --data fashion, --device cuda on a GPU)."""
# The model is the pruning benchmark's SmallCNN with 4 residual blocks, trained with stochastic
# depth (each block dropped per sample at 0.2); gates are calibrated on held-out training
# images, never on the test set. The random control skips each block with the rate the gate
# reached, so both curves are at the same executed fraction. The last line is one JSON object.
import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# bench/ holds queue.py, which would shadow the standard library's queue that torch imports.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.join(ROOT, "bench")]
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402

from seedance_prune import activation_sparsity as act  # noqa: E402
from seedance_prune import datasets, measure, models, skipping, sparse_gemv  # noqa: E402


def batch_of(x, n):
    return x.repeat((n + len(x) - 1) // len(x), 1, 1, 1)[:n]


def activation_sparsity(args):
    """One transformer-sized MLP (1024-4096-1024, GELU), batch 1: the plain layers against the
    gather reference and, on a CUDA device with Triton, the kernel (sparse_gemv.py) at 25/40/50%
    input sparsity, and the relative output error. Thresholds are calibrated on held-out inputs
    of the same distribution."""
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(1024, 4096), torch.nn.GELU(),
                              torch.nn.Linear(4096, 1024)).eval().to(args.device)
    x_cal = torch.randn(512, 1024, device=args.device)
    x = torch.randn(1, 1024, device=args.device)
    with torch.no_grad():
        full = mlp(x)
    dense = measure.latency(mlp, x, iterations=100)
    kernel_ok, kernel_why = sparse_gemv.available(args.device)
    layers = act.sparsify(mlp, ["2"])
    rows = []
    for target in (0.25, 0.4, 0.5):
        act.calibrate_thresholds(mlp, layers, x_cal, sparsity=target)
        row = {"sparsity": target}
        for mode in ("gather", "kernel") if kernel_ok else ("gather",):
            layers[0].mode = mode
            layers[0].reset_counts()
            with torch.no_grad():
                err = ((mlp(x) - full).norm() / full.norm()).item()
            lat = measure.latency(mlp, x, iterations=100)
            row.update({f"{mode}_p50_ms": lat["p50_ms"],
                        f"{mode}_vs_dense": round(lat["p50_ms"] / dense["p50_ms"], 3),
                        f"{mode}_relative_error": round(err, 4)})
        row["measured_sparsity"] = round(layers[0].sparsity(), 3)
        rows.append(row)
    return {"mlp": "1024-4096-1024 GELU, the second layer sparsified, batch 1",
            "paths": "gather: the reference (index_select + matmul); kernel: Triton, masked "
                     "loads skip the zero rows" + ("" if kernel_ok else f" (not run: {kernel_why})"),
            "dense_p50_ms": dense["p50_ms"], "rows": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data", choices=("digits", "fashion"), default=None)
    ap.add_argument("--fractions", default="0.1,0.2,0.3,0.5")
    ap.add_argument("--blocks", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=None)
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    args.data = args.data or ("fashion" if cuda else "digits")
    if not cuda:
        torch.set_num_threads(min(2, os.cpu_count() or 1))
    started = time.monotonic()
    tx, ty, vx, vy = datasets.fashion_mnist() if args.data == "fashion" else datasets.digits()
    held = 300 if args.data == "digits" else 5000
    cal_x, cal_y, tx, ty = tx[:held], ty[:held], tx[held:], ty[held:]
    torch.manual_seed(0)
    model = models.SmallCNN(blocks=args.blocks)
    blocks = skipping.skippable(model, [f"blocks.{i}" for i in range(args.blocks)])
    for b in blocks:
        b.train_drop = 0.2
    measure.train(model, tx, ty, epochs=args.epochs or (10 if args.data == "digits" else 3),
                  device=args.device, batch=128 if args.data == "digits" else 256)
    dev = torch.device(args.device)
    vx_d, cal_x = vx.to(dev), cal_x.to(dev)
    b64 = batch_of(vx_d, 64)

    @torch.no_grad()
    def batch1_latency(n=200):
        """Over n different test images: each decides its own skips."""
        times = []
        for i in range(n):
            xi = vx_d[i % len(vx_d):i % len(vx_d) + 1]
            t0 = time.perf_counter()
            model(xi)
            if cuda:
                torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        times.sort()
        return {"p50_ms": round(times[n // 2] * 1e3, 4),
                "p99_ms": round(times[int(0.99 * (n - 1))] * 1e3, 4)}

    def point(mode, fraction):
        acc = measure.accuracy(model, vx_d, vy, device=args.device)
        executed = 1 - skipping.skip_stats(blocks)["skipped"]
        batch1_latency(20)  # warm
        lat1 = batch1_latency()
        lat64 = measure.latency(model, b64, iterations=30)
        return {"mode": mode, "target_skip": fraction, "accuracy": round(acc, 2),
                "blocks_executed": round(executed, 4), "b1_p50_ms": lat1["p50_ms"],
                "b1_p99_ms": lat1["p99_ms"], "b64_p50_ms": lat64["p50_ms"]}

    skipping.set_mode(blocks, "never")
    curve = [point("full", 0.0)]
    for f in [float(v) for v in args.fractions.split(",")]:
        skipping.calibrate(model, blocks, cal_x, cal_y, skip_fraction=f)
        gated = point("gate", f)
        rate = 1 - gated["blocks_executed"]
        skipping.set_mode(blocks, "random", rate=rate)
        control = point("random", f)
        curve += [gated, control]
        print(f"skip {f}: gate {gated['accuracy']}% at {gated['blocks_executed']} executed, "
              f"random {control['accuracy']}% at {control['blocks_executed']}", file=sys.stderr)
    full = curve[0]["accuracy"]
    pairs = [(g, r) for g, r in zip(curve[1::2], curve[2::2])]
    at20 = next((g for g, _ in pairs if g["target_skip"] == 0.2), None)
    print(json.dumps({
        "benchmark": "sparsity", "device": args.device, "data": args.data,
        "torch": torch.__version__, "seconds": round(time.monotonic() - started, 1),
        "summary": {"full_accuracy": full,
                    "accuracy_loss_at_20pct_skipped": round(full - at20["accuracy"], 2)
                    if at20 else None,
                    "gate_beats_random_everywhere": all(g["accuracy"] > r["accuracy"]
                                                        for g, r in pairs)},
        "curve": curve, "activation_sparsity": activation_sparsity(args),
        "zero_block_codec": "in seedance::trim's trims: bench/run trim_codec"}))


if __name__ == "__main__":
    main()
