"""Helper (not a benchmark): runs `seedance gpu sample` beside a benchmark and summarises what
the driver saw in a time window (bench/trim_torch.py, the GPU telemetry check)."""
import json
import os
import signal
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def seedance_binary():
    """$SEEDANCE_BIN, or the Release build bench/run makes, or the developer build."""
    for path in (os.environ.get("SEEDANCE_BIN"), os.path.join(ROOT, "build-release", "seedance"),
                 os.path.join(ROOT, "build", "seedance")):
        if path and os.path.exists(path):
            return path
    return None


class GpuSampler:
    """`seedance gpu sample` in the background while the `with` block runs; `window(t0, t1)`
    summarises the readings taken between two time.time() stamps. `error` says why there is no
    sampler (no binary, no GPU)."""

    def __init__(self, interval="100ms", pid=None, extra=()):
        self.interval, self.pid, self.extra = interval, pid, list(extra)
        self.dir = tempfile.mkdtemp(prefix="seedance-gpu-sample-")
        self.out = os.path.join(self.dir, "samples.ndjson")
        self.summary_path = os.path.join(self.dir, "summary.json")
        self.proc, self.error, self.summary = None, None, None

    def __enter__(self):
        binary = seedance_binary()
        if binary is None:
            self.error = "no seedance binary (build it, or set SEEDANCE_BIN)"
            return self
        args = [binary, "gpu", "sample", "--interval", self.interval, "--duration", "0",
                "--out", self.out, "--summary", self.summary_path] + self.extra
        if self.pid is not None:
            args += ["--pid", str(self.pid)]
        if os.environ.get("SEEDANCE_NVML_LIBRARY"):  # another NVML (the tests' stub)
            args += ["--nvml-library", os.environ["SEEDANCE_NVML_LIBRARY"]]
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.time() + 10
        while time.time() < deadline and self.proc.poll() is None and not self.samples():
            time.sleep(0.05)
        if self.proc.poll() is not None:
            self.error = self.proc.stderr.read().decode(errors="replace").strip()[-500:]
            self.proc = None
        return self

    def __exit__(self, *exc):
        self.stop()

    def stop(self):
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
            if os.path.exists(self.summary_path):
                with open(self.summary_path) as f:
                    self.summary = json.load(f)
        self.proc = None

    def samples(self, device=0):
        try:
            with open(self.out) as f:
                got = [json.loads(l) for l in f if l.endswith("\n")]
        except FileNotFoundError:
            return []
        return [s for s in got if s.get("device") == device]

    def window(self, t0, t1, pid=None, device=0):
        """The driver's view between t0 and t1 (time.time()): peak device memory used, the
        peak of process `pid`, mean and peak PCIe RX/TX (NVML's 20 ms counters and GPM's
        per-period figures where the device has them), mean utilisation."""
        rows = [s for s in self.samples(device) if t0 * 1e9 <= s["time_ns"] <= t1 * 1e9]
        if not rows:
            return {"samples": 0}

        def stat(field, fn=max, scale=1.0):
            vals = [s[field] * scale for s in rows if isinstance(s.get(field), (int, float))]
            return round(fn(vals), 3) if vals else None

        def mean(v):
            return sum(v) / len(v)
        out = {"samples": len(rows),
               "device_memory_used_peak_bytes": stat("memory_used_bytes"),
               "gpu_util_mean_pct": stat("gpu_util_pct", mean),
               "sm_util_mean_pct": stat("gpm_sm_util_pct", mean),
               "pcie_rx_mean_gb_s": stat("pcie_rx_bytes_per_s", mean, 1e-9),
               "pcie_rx_peak_gb_s": stat("pcie_rx_bytes_per_s", max, 1e-9),
               "pcie_tx_mean_gb_s": stat("pcie_tx_bytes_per_s", mean, 1e-9),
               "gpm_pcie_rx_mean_gb_s": stat("gpm_pcie_rx_bytes_per_s", mean, 1e-9),
               "gpm_pcie_tx_mean_gb_s": stat("gpm_pcie_tx_bytes_per_s", mean, 1e-9)}
        if pid is not None:
            mine = [p["used_memory_bytes"] for s in rows for p in s.get("processes", [])
                    if p["pid"] == pid and p["used_memory_bytes"] is not None]
            out["process_memory_peak_bytes"] = max(mine) if mine else None
            if not mine:
                out["process_memory_note"] = (
                    "the driver listed no memory for this pid (PID namespaces hide it: NVML "
                    "reports the host's pids)")
        return out
