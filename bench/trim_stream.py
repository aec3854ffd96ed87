"""Weight streaming (StreamedModel) against the resident model, TrimmedModel and a one-unit-ahead prefetcher: step ms, efficiency, bytes per step, host waits, outputs (CPU backend; the CUDA streamer is not built yet)."""
# Issue 41's benchmark, CPU part. Each model runs in every configuration on the same input,
# in alternating order after two warm-up forwards, so drift hits all alike. The budget is the
# same share of the model's bytes for each. Efficiency E = max(t_resident, S / BW) / t, where
# S = model - budget (what any method must move per step at that budget) and BW is the host's
# measured copy rate (the CPU's "link"). Weights are random (nothing is downloaded).
# Prints one JSON line: {"benchmark": "trim_stream", "models": [{name, budget_bytes, rows:
# [{config, step_ms, efficiency, bytes_per_step, host_waits, outputs_equal, ...}]}]}
import argparse
import concurrent.futures
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

import torch  # noqa: E402
import torchvision  # noqa: E402

from seedance_trim import TrimManager, TrimmedModel  # noqa: E402
from seedance_trim.streaming import StreamedModel, _HostBackend  # noqa: E402
from test_trim_torch import SmallTransformer, model_bytes  # noqa: E402


class OneAheadPrefetcher(StreamedModel):
    """The plain baseline: every unit streamed, the next one copied on a thread while the
    current one computes, into the other of two slots the size of the largest unit. It reuses
    StreamedModel's units, blocks and recording forward; nothing else of it."""

    def __init__(self, model):
        super().__init__(model, budget_bytes=1)
        largest = max(u.nbytes for u in self._units)
        self._slots = [torch.empty(largest, dtype=torch.uint8) for _ in range(2)]
        self._pool = concurrent.futures.ThreadPoolExecutor(1)
        self._pending = {}  # position -> (slot, future)
        self._last_slot = 1
        self.waits = 0
        self.copied = 0

    def _plan_from_recording(self):  # no library plan: the order is all it needs
        self._position = {u.index: i for i, u in enumerate(self._order)}

    def _copy(self, position, slot):
        u = self._order[position]
        self._slots[slot][:u.nbytes].copy_(u.block[:u.nbytes])
        self.copied += u.nbytes

    def _before(self, u):
        if self._mode != "stream":
            return super()._before(u)
        i = self._position[u.index]
        # Its copy, started when the unit before it began (or now, the first time).
        slot, future = self._pending.pop(i, (None, None))
        if future is None:
            slot = 1 - self._last_slot
            future = self._pool.submit(self._copy, i, slot)
        if not future.done():
            self.waits += 1
        future.result()
        self._last_slot = slot
        view = self._slots[slot]
        self._point(u, [view[o:o + n].view(d).view(s) for _, _, _, o, n, d, s in u.entries])
        # The other slot held the unit before this one, which has ended.
        following = (i + 1) % len(self._order)
        self._pending[following] = (1 - slot,
                                    self._pool.submit(self._copy, following, 1 - slot))

    def _after(self, u):
        if self._mode != "stream":
            return super()._after(u)
        self._point(u, u.home)


def run(name, model, inputs, share, iterations, link):
    size = model_bytes(model)
    budget = int(size * share)
    configs = {"resident": copy.deepcopy(model).eval()}
    trimmed_manager = TrimManager.host(budget, 2 * size, min_victim_bytes=0)
    configs["trimmed"] = TrimmedModel(copy.deepcopy(model).eval(), trimmed_manager)
    configs["one_ahead"] = OneAheadPrefetcher(copy.deepcopy(model).eval())
    configs["streamed"] = StreamedModel(copy.deepcopy(model).eval(), budget,
                                        link_bytes_per_second=link)
    times = {k: 0.0 for k in configs}
    equal = {k: True for k in configs}
    with torch.no_grad():
        for i in range(iterations + 2):
            order = list(configs) if i % 2 == 0 else list(reversed(configs))
            outs = {}
            for k in order:
                if i == 2 and k == "trimmed":
                    moved_before = trimmed_manager.stats()["bytes_moved_up"]
                if i == 2 and k == "one_ahead":
                    configs[k].copied, configs[k].waits = 0, 0
                t0 = time.perf_counter()
                outs[k] = configs[k](inputs)
                if i >= 2:
                    times[k] += time.perf_counter() - t0
            for k in configs:
                equal[k] = equal[k] and torch.equal(outs["resident"], outs[k])
            if i == 1:  # after the recording forward
                streamed_before = configs["streamed"].stats()
    t_res = times["resident"] / iterations
    floor = max(t_res, (size - budget) / link)
    st = configs["streamed"].stats()
    per_step = {
        "resident": 0,
        "trimmed": (trimmed_manager.stats()["bytes_moved_up"] - moved_before) / iterations,
        "one_ahead": configs["one_ahead"].copied / iterations,
        "streamed": (st["bytes_copied"] - streamed_before["bytes_copied"]) / iterations,
    }
    waits = {"resident": 0, "trimmed": trimmed_manager.stats()["stalls"],
             "one_ahead": configs["one_ahead"].waits,
             "streamed": st["host_waits"] - streamed_before["host_waits"]}
    rows = []
    for k in configs:
        t = times[k] / iterations
        rows.append({"config": k, "step_ms": round(t * 1e3, 2),
                     "efficiency": round(floor / t, 3),
                     "bytes_per_step": int(per_step[k]), "host_waits": waits[k],
                     "outputs_equal": equal[k]})
    plan = configs["streamed"].plan()
    return {"name": name, "model_bytes": size, "budget_bytes": budget,
            "floor_ms": round(floor * 1e3, 2),
            "streamed_plan": {k: plan[k] for k in ("resident_bytes", "ring_bytes",
                                                   "streamed_bytes", "lookahead")},
            "streamed_hook_us_per_unit": round(st["hook_us_per_unit"], 1), "rows": rows}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--iterations", type=int, default=4)
    ap.add_argument("--quick", action="store_true",
                    help="small inputs and models, 2 iterations: the CI run (ctest python.trim_stream)")
    args = ap.parse_args()
    if args.device != "cpu":
        print(json.dumps({"benchmark": "trim_stream", "device": args.device,
                          "error": "StreamedModel has only its CPU backend so far: the CUDA "
                                   "streamer (streams, events) is not built yet (issue 41)"}))
        return 1
    torch.manual_seed(0)
    torch.set_num_threads(max(1, min(4, os.cpu_count() or 1)))
    link = _HostBackend().link_bytes_per_second()
    started = time.monotonic()
    if args.quick:
        models = [
            run("resnet50_fp32_b1_64px_40pct", torchvision.models.resnet50(),
                torch.randn(1, 3, 64, 64), 0.4, 2, link),
            run("transformer_d128_35pct", SmallTransformer(), torch.randint(0, 4000, (2, 16)),
                0.35, 2, link),
        ]
    else:
        models = [
            run("resnet50_fp32_b8_40pct", torchvision.models.resnet50(),
                torch.randn(8, 3, 224, 224), 0.4, args.iterations, link),
            # The d512 transformer's shape at a CPU's batch: 2 sequences of 64 tokens.
            run("transformer_d512_35pct", SmallTransformer(vocab=8000, d=512, layers=6),
                torch.randint(0, 8000, (2, 64)), 0.35, args.iterations, link),
        ]
    ok = all(r["outputs_equal"] for m in models for r in m["rows"])
    # Streaming copies each streamed unit once per step: the plan's bytes, no more.
    ok = ok and all(next(r for r in m["rows"] if r["config"] == "streamed")["bytes_per_step"] ==
                    m["streamed_plan"]["streamed_bytes"] for m in models)
    print(json.dumps({"benchmark": "trim_stream", "device": "cpu", "torch": torch.__version__,
                      "link_gbps": round(link / 1e9, 2), "iterations": args.iterations,
                      "seconds": round(time.monotonic() - started, 1), "outputs_equal": ok,
                      "models": models}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
