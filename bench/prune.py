"""seedance_prune: a small CNN trained, pruned at several ratios and fine-tuned, against the masked ln_structured baseline; precision x pruning matrix; the selector's picks measured again (CPU digits; --device cuda --data fashion on a GPU)."""
# Everything is measured in this run on this machine, nothing multiplied:
# - dense, ours (physically smaller) and the masked baseline (torch.nn.utils.prune.ln_structured,
#   the article's approach: weights zeroed, tensors as large) at each ratio, each fine-tuned
#   the same way: accuracy, parameters, MACs, latency at batch 1 and --batch, peak memory;
# - the matrix: fp32, bf16 and dynamic int8 (CPU) or fp16 (GPU), dense and pruned 30/50%;
# - on a GPU, 2:4 semi-structured sparsity on one large MLP (where this torch has it);
# - the selector on the matrix's profiles for 10 random budgets, each pick measured again.
# The last line is one JSON object.
import argparse
import copy
import json
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# bench/ holds queue.py, which would shadow the standard library's queue that torch imports.
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != os.path.join(ROOT, "bench")]
sys.path.insert(0, os.path.join(ROOT, "python"))

import torch  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils import prune as torch_prune  # noqa: E402

import seedance_prune as sp  # noqa: E402
from seedance_prune import datasets, measure, models  # noqa: E402
from seedance_prune.energy import energy_meter  # noqa: E402


def log(*args):
    print(*args, file=sys.stderr, flush=True)


def batch_of(x, n):
    """n samples of x, repeated where x has fewer (digits' test split is smaller than 256)."""
    return x.repeat((n + x.shape[0] - 1) // x.shape[0], *([1] * (x.dim() - 1)))[:n]


def masked_baseline(model, ratio):
    """The article's pruning: ln_structured masks over every hidden layer's output channels
    (the same layers ours prunes), made permanent: zeros in tensors of the same size."""
    layers = [m for m in model.modules() if isinstance(m, (nn.Conv2d, nn.Linear))][:-1]
    for m in layers:
        torch_prune.ln_structured(m, "weight", amount=ratio, n=1, dim=0)
    return layers


def unmask(layers):
    for m in layers:
        torch_prune.remove(m, "weight")


def measured(model, name, data, args, dtype=None, meter=None):
    _, _, vx, vy = data
    dev = torch.device(args.device)
    cast = dtype if dtype in (torch.bfloat16, torch.float16) else None
    b1 = vx[:1].to(dev, cast) if cast else vx[:1].to(dev)
    big = batch_of(vx[:args.batch].to(dev), args.batch)
    big = big.to(cast) if cast else big
    row = measure.profile(model, vx, vy, b1, big, name, device=args.device, dtype=cast,
                          energy=meter)
    row["macs"] = measure.macs(model, b1) if dtype != "int8" else None
    row[f"latency_b{args.batch}_p50_ms"] = measure.latency(model, big, iterations=20)["p50_ms"]
    return row


def interleaved_throughput(named, example, rounds=7, iterations=8):
    """Samples per second of each model, measured in alternating rounds (so drift and noise
    from other processes hit every model alike); the median round of each."""
    per = {name: [] for name in named}
    for _ in range(rounds):
        for name, model in named.items():
            per[name].append(measure.latency(model, example, iterations=iterations,
                                             warmup=2, warmup_seconds=0.05)["samples_per_s"])
    return {name: sorted(v)[len(v) // 2] for name, v in per.items()}


def fine_tune(model, data, args):
    tx, ty, _, _ = data
    return measure.train(model, tx, ty, epochs=args.fine_tune_epochs, lr=1e-3, batch=args.train_batch,
                         device=args.device, autocast_dtype=args.autocast,
                         max_seconds=args.max_train_seconds)


def two_four_sparsity(args):
    """One large MLP, fp16, dense against 2:4 semi-structured weights (torch >= 2.1 on sm80+)."""
    try:
        from torch.sparse import to_sparse_semi_structured
    except ImportError:
        return {"skipped": f"torch {torch.__version__} has no to_sparse_semi_structured"}
    torch.manual_seed(0)
    mlp = nn.Sequential(nn.Linear(4096, 16384), nn.GELU(), nn.Linear(16384, 4096)).half().cuda()
    mlp.eval()
    x = torch.randn(2048, 4096, device="cuda", dtype=torch.half)
    with torch.no_grad():
        dense_out = mlp(x)
        dense = measure.latency(mlp, x, iterations=30)
        for lin in (mlp[0], mlp[2]):  # keep the 2 largest of every 4 weights in a row
            w = lin.weight.detach()
            groups = w.abs().view(w.shape[0], -1, 4)
            keep = torch.zeros_like(groups, dtype=torch.bool).scatter_(
                2, groups.topk(2, dim=2).indices, True).view_as(w)
            masked = w * keep
            lin.weight = nn.Parameter(to_sparse_semi_structured(masked), requires_grad=False)
        try:
            sparse_out = mlp(x)
            sparse = measure.latency(mlp, x, iterations=30)
        except RuntimeError as e:
            return {"skipped": f"2:4 kernels unavailable here: {str(e).splitlines()[0][:120]}"}
    return {"shape": "4096-16384-4096 fp16, batch 2048", "dense_p50_ms": dense["p50_ms"],
            "sparse_p50_ms": sparse["p50_ms"],
            "speedup": round(dense["p50_ms"] / sparse["p50_ms"], 3),
            "max_abs_diff_vs_dense_unmasked": round((sparse_out - dense_out).abs().max().item(), 3),
            "note": "PyTorch documents that 2:4 kernels may not be faster on every GPU"}


def selector_check(profiles, configs, data, args, meter, rng):
    """10 random budgets, each a random measured profile's figures with some slack (so at least
    that profile fits); the pick measured again against the budget."""
    results = []
    for _ in range(10):
        anchor = rng.choice(profiles)
        budget = {"latency_p99_ms": round(anchor["latency_p99_ms"] * rng.uniform(1.15, 1.6), 4),
                  "memory_mb": round(anchor["memory_mb"] * rng.uniform(1.05, 1.5), 3),
                  "min_accuracy": round(anchor["accuracy"] - rng.uniform(0.0, 5.0), 2)}
        if meter is not None and "energy_mj" in anchor:
            budget["energy_mj"] = round(anchor["energy_mj"] * rng.uniform(1.15, 1.6), 4)
        try:
            pick = sp.select(profiles, **budget)
        except sp.NoConfigFits as e:
            results.append({"budget": budget, "pick": None, "meets_budget": False,
                            "reason": str(e)})
            continue
        model, dtype = configs[pick["name"]]
        again = measured(model, pick["name"], data, args, dtype, meter)
        fails = [k for k in ("latency_p99_ms", "memory_mb", "energy_mj")
                 if k in budget and again.get(k) is not None and again[k] > budget[k]]
        if again["accuracy"] < budget["min_accuracy"]:
            fails.append("accuracy")
        results.append({"budget": budget, "pick": pick["name"],
                        "measured_again": {k: again.get(k) for k in
                                           ("latency_p99_ms", "memory_mb", "energy_mj",
                                            "accuracy")},
                        "meets_budget": not fails, "missed": fails})
    return results


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--data", choices=("digits", "fashion"), default=None,
                    help="digits (default on the CPU) or fashion (default on a GPU)")
    ap.add_argument("--ratios", default="0.3,0.5,0.7")
    ap.add_argument("--epochs", type=int, default=None, help="dense training epochs")
    ap.add_argument("--fine-tune-epochs", type=int, default=None)
    ap.add_argument("--batch", type=int, default=256, help="the large batch measured")
    ap.add_argument("--width", type=int, default=32)
    ap.add_argument("--max-train-seconds", type=float, default=120.0)
    ap.add_argument("--profiles-out", default=None, help="write the matrix profiles as JSON")
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    args.data = args.data or ("fashion" if cuda else "digits")
    fashion = args.data == "fashion"
    args.epochs = args.epochs or (3 if fashion else 8)
    args.fine_tune_epochs = args.fine_tune_epochs or (1 if fashion else 2)
    args.train_batch = 256 if fashion else 128
    args.autocast = torch.bfloat16 if cuda else None  # the GPU run trains in bf16
    torch.manual_seed(0)
    if not cuda:
        torch.set_num_threads(min(2, os.cpu_count() or 1))
    else:
        torch.backends.cudnn.benchmark = True
    started = time.monotonic()
    data = datasets.fashion_mnist() if fashion else datasets.digits()
    if cuda:  # images on the device once (188 MB for Fashion-MNIST), labels stay on the host
        data = (data[0].to(args.device), data[1], data[2].to(args.device), data[3])
    meter = energy_meter() if cuda else None
    ratios = [float(r) for r in args.ratios.split(",")]
    tx, ty, vx, vy = data

    t0 = time.monotonic()
    dense = models.SmallCNN(width=args.width)
    measure.train(dense, tx, ty, epochs=args.epochs, batch=args.train_batch, device=args.device,
                  autocast_dtype=args.autocast, max_seconds=args.max_train_seconds)
    log(f"trained dense in {time.monotonic() - t0:.1f} s")
    dense_row = measured(dense, "dense", data, args, meter=meter)
    rows = [dict(dense_row, method="dense", ratio=0.0)]
    pruned_models, masked_models = {}, {}
    for r in ratios:
        ours = copy.deepcopy(dense)
        sp.prune(ours, vx[:1].to(args.device), ratio=r)
        before_ft = measure.accuracy(ours, vx, vy, device=args.device)
        fine_tune(ours, data, args)
        row = measured(ours, f"pruned{int(r * 100)}", data, args, meter=meter)
        rows.append(dict(row, method="seedance_prune", ratio=r, accuracy_before_fine_tune=round(before_ft, 2)))
        pruned_models[r] = ours
        masked = copy.deepcopy(dense)
        layers = masked_baseline(masked, r)
        fine_tune(masked, data, args)
        unmask(layers)
        masked_models[r] = masked
        row = measured(masked, f"masked{int(r * 100)}", data, args, meter=meter)
        rows.append(dict(row, method="ln_structured (masked)", ratio=r))
        log(f"ratio {r}: ours {rows[-2]['accuracy']}% {rows[-2]['params']} params, "
            f"masked {rows[-1]['accuracy']}% {rows[-1]['params']} params")

    # precision x pruning
    precisions = ["fp32", "bf16", "fp16" if cuda else "int8"]
    matrix, configs = [], {}
    bases = {"dense": dense}
    bases.update({f"pruned{int(r * 100)}": pruned_models[r] for r in ratios if r in (0.3, 0.5)})
    for base_name, base in bases.items():
        for prec in precisions:
            m = copy.deepcopy(base).eval()
            if prec == "bf16":
                m, dtype = m.to(torch.bfloat16), torch.bfloat16
            elif prec == "fp16":
                m, dtype = m.to(torch.float16), torch.float16
            elif prec == "int8":
                m = torch.quantization.quantize_dynamic(m, {nn.Linear}, dtype=torch.qint8)
                dtype = "int8"
            else:
                dtype = None
            name = f"{base_name}-{prec}"
            configs[name] = (m, dtype)
            matrix.append(measured(m, name, data, args, dtype, meter))
            log(f"{name}: {matrix[-1]['accuracy']}% p99 {matrix[-1]['latency_p99_ms']} ms "
                f"{matrix[-1]['memory_mb']} MB")
    if args.profiles_out:
        with open(args.profiles_out, "w") as f:
            json.dump({"recorded": f"bench/prune.py --device {args.device} --data {args.data}",
                       "torch": torch.__version__, "profiles": matrix}, f, indent=1)

    sparsity = two_four_sparsity(args) if cuda else {"skipped": "2:4 sparsity needs a GPU"}
    checks = selector_check(matrix, configs, data, args, meter, random.Random(1))

    def by(name):
        return next(r for r in rows if r["name"] == name)

    half = by("pruned50") if 0.5 in ratios else None
    masked_half = by("masked50") if 0.5 in ratios else None
    summary = {}
    if half:
        big = batch_of(vx[:args.batch].to(args.device), args.batch)
        tp = interleaved_throughput({"dense": dense, "pruned50": pruned_models[0.5],
                                     "masked50": masked_models[0.5]}, big)
        summary = {
            f"interleaved_throughput_b{args.batch}": tp,
            "macs_reduction_x": round(dense_row["macs"] / half["macs"], 2),
            "accuracy_loss_points": round(dense_row["accuracy"] - half["accuracy"], 2),
            "peak_memory_reduction": round(1 - half["memory_mb"] / dense_row["memory_mb"], 3),
            "throughput_x": round(tp["pruned50"] / tp["dense"], 2),
            "masked_peak_memory_change": round(masked_half["memory_mb"] / dense_row["memory_mb"] - 1, 3),
            "masked_throughput_change": round(tp["masked50"] / tp["dense"] - 1, 3),
            "masked_accuracy_loss_points": round(dense_row["accuracy"] - masked_half["accuracy"], 2),
        }
    summary["selector_meets_budget"] = f"{sum(c['meets_budget'] for c in checks)}/{len(checks)}"
    print(json.dumps({"benchmark": "prune", "device": args.device, "data": args.data,
                      "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name() if cuda else None,
                      "energy": "nvml" if meter else None, "batch": args.batch,
                      "seconds": round(time.monotonic() - started, 1), "summary": summary,
                      "ratios": rows, "matrix": matrix, "sparsity_2_4": sparsity,
                      "selector": checks}))


if __name__ == "__main__":
    main()
