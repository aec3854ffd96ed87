"""Helper for scripts/gpu-check --telemetry (not a benchmark): the gpu telemetry's targets on a real GPU, in about 90 s of phases."""
# Phases, on GPU 0, while `seedance gpu sample` (200 ms), nvidia-smi (-lms 200) and nvidia-ml-py
# read the device side by side: idle; a 1 GiB allocation every 2 s; an 8192^3 bf16 matrix
# product in a loop; pinned host-to-device copies (their bandwidth measured with CUDA events);
# everything freed. Then nvidia-smi forked once per 200 ms for 10 s, as Telegraf's nvidia_smi
# input does, for its CPU; and ncu reading one kernel's L2 hit rate (the article's 3.2).
# Checks (docs/gpu-source.md, "On a GPU"):
#   memory: device memory used agrees with nvidia-smi and nvidia-ml-py within 1 MiB (idle);
#   processes: this process is listed with its memory, or the driver hides it (PID namespaces);
#   utilisation: GPU and SM (GPM) utilisation >= 80% during the product, <= 5% idle;
#   PCIe: RX during the pinned copies within 15% of the copies' measured bandwidth;
#   CPU: the sampler <= 0.5% of one core, and >= 10x less than nvidia-smi forked per interval;
#   jitter: the sampler's period P99 within 10 ms of 200 ms.
# Prints a table; writes telemetry.json (and the samples) to --out-dir. Exit 1 when a check fails.
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import threading
import time

# bench/ holds queue.py, which would shadow the standard library's queue that torch imports:
# bench/ goes last.
BENCH = os.path.dirname(os.path.abspath(__file__))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") != BENCH] + [BENCH]
from gpu_telemetry import GpuSampler  # noqa: E402

import torch  # noqa: E402

MIB = 1 << 20


def proc_cpu(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class SmiLoop:
    """nvidia-smi --query-gpu ... -lms 200, each line stamped on arrival."""

    def __init__(self):
        self.rows, self.proc, self.cpu_s = [], None, None

    def __enter__(self):
        smi = shutil.which("nvidia-smi")
        if smi:
            self.proc = subprocess.Popen(
                [smi, "-i", "0", "--query-gpu=memory.used,utilization.gpu",
                 "--format=csv,noheader,nounits", "-lms", "200"],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
            threading.Thread(target=self._read, daemon=True).start()
        return self

    def _read(self):
        for line in self.proc.stdout:
            parts = [p.strip() for p in line.split(",")]
            try:
                self.rows.append((time.time(), float(parts[0]) * MIB, float(parts[1])))
            except (ValueError, IndexError):
                pass

    def __exit__(self, *exc):
        if self.proc:
            self.cpu_s = proc_cpu(self.proc.pid)
            self.proc.terminate()
            self.proc.wait(10)


class PynvmlLoop:
    """nvidia-ml-py's nvmlDeviceGetMemoryInfo every 200 ms on a thread."""

    def __init__(self):
        self.rows, self.error, self._stop = [], None, threading.Event()

    def __enter__(self):
        try:
            import pynvml
            pynvml.nvmlInit()
            self.nvml = pynvml
            self.handle = pynvml.nvmlDeviceGetHandleByIndex(0)
            threading.Thread(target=self._run, daemon=True).start()
        except Exception as e:  # the package or the driver is missing: say so
            self.error = repr(e)
        return self

    def _run(self):
        while not self._stop.wait(0.2):
            try:
                m = self.nvml.nvmlDeviceGetMemoryInfo(self.handle)
                self.rows.append((time.time(), float(m.used)))
            except Exception as e:
                self.error = repr(e)
                return

    def __exit__(self, *exc):
        self._stop.set()


def between(rows, t0, t1, col=1):
    return [r[col] for r in rows if t0 <= r[0] <= t1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out-dir", default=".")
    ap.add_argument("--dry-run", action="store_true",
                    help="no GPU: every step on the CPU with small sizes and 1 s phases, against "
                         "whatever NVML the sampler finds (the tests' stub): checks the script")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    dry = args.dry_run
    dev = torch.device("cpu" if dry else "cuda:0")
    scale = 10 if dry else 1  # phases ten times shorter, sizes 2^10 times smaller
    gib = (1 << 20) if dry else (1 << 30)
    torch.ones(1, device=dev)  # the context, before anything is measured
    marks = {}
    with GpuSampler(interval="200ms") as ours, SmiLoop() as smi, PynvmlLoop() as py:
        if ours.error:
            print(f"telemetry: seedance gpu sample did not start: {ours.error}")
            return 1
        t = time.time()
        time.sleep(10 / scale)
        marks["idle"] = (t + 2 / scale, time.time())

        t, blocks = time.time(), []
        for _ in range(8):
            blocks.append(torch.empty(gib, dtype=torch.uint8, device=dev))
            time.sleep(2 / scale)
        marks["alloc"] = (t, time.time())

        n = 512 if dry else 8192
        a = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        b = torch.randn(n, n, device=dev, dtype=torch.bfloat16)
        t = time.time()
        while time.time() < t + 20 / scale:
            for _ in range(20):
                torch.mm(a, b)
            if not dry:
                torch.cuda.synchronize()
        marks["matmul"] = (t + 2 / scale, time.time() - 1 / scale)
        del a, b

        host = torch.empty(gib, dtype=torch.uint8)
        host = host if dry else host.pin_memory()
        target = torch.empty(gib, dtype=torch.uint8, device=dev)
        t, copied, gpu_ms = time.time(), 0, 0.0
        while time.time() < t + 15 / scale:
            if dry:
                t0 = time.perf_counter()
                for _ in range(4):
                    target.copy_(host)
                gpu_ms += 1e3 * (time.perf_counter() - t0)
            else:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(4):
                    target.copy_(host, non_blocking=True)
                end.record()
                end.synchronize()
                gpu_ms += start.elapsed_time(end)
            copied += 4 * gib
        marks["h2d"] = (t + 2 / scale, time.time() - 1 / scale)
        copy_gb_s = copied / (gpu_ms / 1e3) / 1e9
        del host, target, blocks
        if not dry:
            torch.cuda.empty_cache()
        t = time.time()
        time.sleep(10 / scale)
        marks["freed"] = (t + 2 / scale, time.time())
    samples = ours.samples()
    summary = ours.summary or {}

    # nvidia-smi forked once per interval (Telegraf's nvidia_smi input), for its CPU.
    fork_cpu, forks = None, 0
    if shutil.which("nvidia-smi"):
        import resource
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        while time.monotonic() < t0 + 10 / scale:
            subprocess.run(["nvidia-smi", "-q", "-x"], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
            forks += 1
            time.sleep(max(0.0, t0 + forks * 0.2 - time.monotonic()))
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        fork_cpu = 100 * ((after.ru_utime + after.ru_stime) -
                          (before.ru_utime + before.ru_stime)) / (time.monotonic() - t0)

    # The L2 hit rate of one kernel with ncu (the article's 3.2).
    ncu = shutil.which("ncu") or "/usr/local/cuda/bin/ncu"
    l2 = "ncu not found"
    if os.path.exists(ncu) and not dry:
        code = ("import torch; x=torch.randn(4096,4096,device='cuda'); torch.cuda.synchronize(); "
                "y=x@x; torch.cuda.synchronize()")
        try:
            r = subprocess.run([ncu, "--metrics", "lts__t_sector_hit_rate.pct", "--csv",
                                "--launch-count", "1", "-k", "regex:gemm|nvjet|xmma|cutlass",
                                sys.executable, "-c", code], capture_output=True, text=True,
                               timeout=45)
            rows = [l for l in r.stdout.splitlines() if "lts__t_sector_hit_rate.pct" in l]
            l2 = rows[-1].split('","')[-1].strip('"') + " %" if rows else (
                "ncu read nothing: " + (r.stderr or r.stdout).strip().splitlines()[-1][:200]
                if (r.stderr or r.stdout).strip() else "ncu read nothing")
        except subprocess.TimeoutExpired:
            l2 = "ncu took over 45 s"

    def ours_in(phase, field, scale=1.0):
        t0, t1 = marks[phase]
        return [s[field] * scale for s in samples
                if t0 * 1e9 <= s["time_ns"] <= t1 * 1e9 and isinstance(s.get(field), (int, float))]

    def med(v):
        return statistics.median(v) if v else None

    checks = []

    def check(name, ok, detail):
        checks.append({"check": name, "ok": bool(ok), "detail": detail})

    idle = marks["idle"]
    used = med(ours_in("idle", "memory_used_bytes"))
    reserved = med(ours_in("idle", "memory_reserved_bytes")) or 0
    smi_used = med(between(smi.rows, *idle))
    py_used = med(between(py.rows, *idle))
    if used is not None and smi_used is not None:
        # nvidia-smi prints MiB; drivers since R510 leave the reserved memory out of its "used".
        diffs = {"used": abs(used - smi_used), "used - reserved": abs(used - reserved - smi_used)}
        which = min(diffs, key=diffs.get)
        check("memory vs nvidia-smi (idle)", diffs[which] <= MIB,
              f"ours {used / MIB:.1f} MiB ({which}: {(used - (reserved if which != 'used' else 0)) / MIB:.1f}),"
              f" nvidia-smi {smi_used / MIB:.1f} MiB")
    else:
        check("memory vs nvidia-smi (idle)", False, f"ours {used}, nvidia-smi {smi_used}")
    if py_used is not None and used is not None:
        check("memory vs nvidia-ml-py (idle)", abs(used - py_used) <= MIB,
              f"ours {used / MIB:.1f} MiB, nvidia-ml-py {py_used / MIB:.1f} MiB")
    else:
        check("memory vs nvidia-ml-py (idle)", False, py.error or "no readings")
    # Per-process memory: our pid with its memory, or (a PID namespace: NVML lists the host's
    # pids) some listed process whose memory grew by the 8 GiB this process allocated.
    t0, t1 = marks["alloc"]
    per_pid = {}
    for smp in samples:
        if t0 * 1e9 <= smp["time_ns"] <= t1 * 1e9:
            for p in smp.get("processes", []):
                if p["used_memory_bytes"] is not None:
                    per_pid.setdefault(p["pid"], []).append(p["used_memory_bytes"])
    growth = {pid: max(v) - min(v) for pid, v in per_pid.items()}
    grew = [pid for pid, g in growth.items() if g >= 6 * gib]
    check("processes listed with their memory", os.getpid() in grew or bool(grew),
          f"pid {os.getpid()} (ours) grew {growth.get(os.getpid(), 0) / MIB:.0f} MiB" if
          os.getpid() in growth else
          (f"ours not among the driver's pids (a PID namespace); pid {grew[0]} grew "
           f"{growth[grew[0]] / MIB:.0f} MiB" if grew else
           f"no listed process grew by 6 GiB ({len(per_pid)} listed)"))
    grown = ours_in("alloc", "memory_used_bytes")
    check("1 GiB allocations seen", grown and max(grown) - min(grown) >= 6 * gib,
          f"device used {min(grown) / MIB:.0f} -> {max(grown) / MIB:.0f} MiB" if grown else "none")
    for field, label in (("gpu_util_pct", "GPU utilisation"), ("gpm_sm_util_pct", "SM (GPM)")):
        busy, quiet = med(ours_in("matmul", field)), med(ours_in("idle", field) +
                                                        ours_in("freed", field))
        check(f"{label}: >= 80% busy, <= 5% idle",
              busy is not None and quiet is not None and busy >= 80 and quiet <= 5,
              f"busy {busy}, idle {quiet}")
    for field, label in (("pcie_rx_bytes_per_s", "PCIe RX (20 ms counter)"),
                         ("gpm_pcie_rx_bytes_per_s", "PCIe RX (GPM)")):
        rx = med(ours_in("h2d", field, 1e-9))
        check(f"{label} within 15% of the copies", rx is not None and
              abs(rx - copy_gb_s) <= 0.15 * copy_gb_s,
              f"{rx if rx is None else round(rx, 2)} GB/s vs copies {copy_gb_s:.2f} GB/s")
    cpu = summary.get("cpu_pct_of_one_core")
    check("sampler CPU <= 0.5% of one core", cpu is not None and cpu <= 0.5, f"{cpu}%")
    check("nvidia-smi forked per interval >= 10x our CPU",
          fork_cpu is not None and cpu and fork_cpu >= 10 * cpu,
          f"nvidia-smi {fork_cpu if fork_cpu is None else round(fork_cpu, 2)}% ({forks} forks); "
          f"nvidia-smi -lms loop {smi.cpu_s}s CPU")
    p99 = (summary.get("period_ms") or {}).get("p99")
    check("period P99 within 10 ms of 200 ms", p99 is not None and abs(p99 - 200) <= 10,
          f"{p99} ms")

    with open(os.path.join(args.out_dir, "telemetry.json"), "w") as f:
        json.dump({"checks": checks, "marks": marks, "copy_gb_s": copy_gb_s, "summary": summary,
                   "l2_hit_rate": l2, "nvidia_smi_fork_cpu_pct": fork_cpu}, f, indent=1)
    shutil.copy(ours.out, os.path.join(args.out_dir, "telemetry_samples.ndjson"))
    print("| check | result | measured |")
    print("|---|---|---|")
    for c in checks:
        print(f"| {c['check']} | {'ok' if c['ok'] else 'FAILED'} | {c['detail']} |")
    print(f"| ncu: L2 hit rate of one GEMM kernel (lts__t_sector_hit_rate.pct) | - | {l2} |")
    return 0 if all(c["ok"] for c in checks) else 1


if __name__ == "__main__":
    sys.exit(main())
