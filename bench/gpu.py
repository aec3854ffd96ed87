"""GPU telemetry's own cost: the gpu source in a running pipeline and `seedance gpu sample` at a 200 ms interval (CPU share of one core, period jitter), against polling nvidia-smi at the same interval where it exists."""
# Without a GPU (here), NVML is the stub of the tests (tests/tools/nvml_stub.c, 2 devices and a
# process each), so the figures are Seedance's own work per reading, not the driver's; on a GPU
# machine the real libnvidia-ml.so.1 is used (--real) and nvidia-smi is measured beside it, once
# as a long-running `nvidia-smi --query-gpu ... -lms 200` and once forked per interval, as
# Telegraf's nvidia_smi input does. The pipeline is also run fed by the generate source with the
# same payload at the same rate: the difference is what reading the GPU costs. Prints one JSON
# line.
import argparse
import json
import os
import resource
import shutil
import subprocess
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUB_SCRIPT = """count 2
series 0 mem_used 1073741824 2147483648
series 0 util_gpu 10 90
series 0 power_mw 312000
series 0 temp 50
series 0 pcie_tx_kb 1000
series 0 pcie_rx_kb 2000
process 0 1 1048576
series 1 util_gpu 5
process 1 1 1048576
"""
QUERY = ("memory.used,memory.total,utilization.gpu,utilization.memory,power.draw,"
         "temperature.gpu,clocks.sm,clocks.mem")


def binary():
    for p in (os.path.join(ROOT, "build-release", "seedance"),
              os.path.join(ROOT, "build", "seedance")):
        if os.path.exists(p):
            return p
    raise SystemExit("build seedance first (bench/run builds build-release/)")


def stub_library():
    for d in ("build-release", "build"):
        p = os.path.join(ROOT, d, "libnvidia-ml-stub.so")
        if os.path.exists(p):
            return p
    raise SystemExit("the NVML stub is not built: ninja -C build nvml_stub")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def percentile(values, q):
    v = sorted(values)
    return v[int(q * (len(v) - 1))] if v else None


GENERATE = """  - type: generate
    rate: {rate}
    payload: '{payload}'
"""


def source_in_pipeline(seedance, nvml, env, seconds, workdir, baseline_payload=None, rate=0):
    """The gpu source → file sink: the process's CPU over `seconds` after a settling second,
    and the jitter of the readings' event times. With `baseline_payload`: the same pipeline
    fed as many events of that payload by the generate source instead (what the rest of the
    pipeline costs)."""
    out = os.path.join(workdir, "gpu.ndjson")
    if os.path.exists(out):
        os.unlink(out)
    shutil.rmtree(os.path.join(workdir, "data"), ignore_errors=True)
    cfg = os.path.join(workdir, "gpu.yaml")
    source = (GENERATE.format(rate=rate, payload=baseline_payload) if baseline_payload else
              f"  - type: gpu\n    interval: 200ms\n    nvml_library: {nvml}\n")
    with open(cfg, "w") as f:
        f.write(f"""sources:
{source}sinks:
  - type: file
    path: {out}
    encoding: envelope
queue:
  data_dir: {workdir}/data
log:
  level: warn
""")
    proc = subprocess.Popen([seedance, "--config", cfg], env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.0)
        c0, t0 = cpu_seconds(proc.pid), time.monotonic()
        time.sleep(seconds)
        c1, t1 = cpu_seconds(proc.pid), time.monotonic()
    finally:
        proc.terminate()
        proc.wait(15)
    cpu = {"cpu_pct_of_one_core": round(100 * (c1 - c0) / (t1 - t0), 4)}
    if baseline_payload:
        return cpu
    stamps, payload = [], None
    with open(out) as f:
        for line in f:
            e = json.loads(line)
            if e["payload"]["device"] == 0:
                stamps.append(e["time"])
                payload = payload or json.dumps(e["payload"], separators=(",", ":"))

    def ns(t):
        import calendar
        whole, frac = t.rstrip("Z").split(".")
        return calendar.timegm(time.strptime(whole, "%Y-%m-%dT%H:%M:%S")) * 10**9 + int(
            frac.ljust(9, "0"))
    periods = [(ns(b) - ns(a)) / 1e6 for a, b in zip(stamps, stamps[1:])]
    jitter = [abs(p - 200) for p in periods]
    return {**cpu, "readings": len(stamps), "payload": payload, "period_ms_p50": percentile(periods, 0.5),
            "jitter_ms_p99": round(percentile(jitter, 0.99), 3) if jitter else None}


def sampler_command(seedance, nvml, env, seconds, workdir):
    summary = os.path.join(workdir, "summary.json")
    subprocess.run([seedance, "gpu", "sample", "--interval", "200ms", "--duration",
                    f"{seconds}s", "--nvml-library", nvml, "--out", os.devnull, "--summary",
                    summary], env=env, check=True, stderr=subprocess.DEVNULL)
    with open(summary) as f:
        s = json.load(f)
    return {"cpu_pct_of_one_core": s["cpu_pct_of_one_core"], "rounds": s["rounds"],
            "missed": s["missed"], "period_ms_p99": s["period_ms"]["p99"]}


def nvidia_smi(seconds):
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return {"error": "nvidia-smi is not installed on this machine"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    proc = subprocess.Popen([smi, f"--query-gpu={QUERY}", "--format=csv,noheader", "-lms", "200"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(seconds)
    proc.terminate()
    proc.wait(10)
    mid = resource.getrusage(resource.RUSAGE_CHILDREN)
    loop_cpu = (mid.ru_utime + mid.ru_stime) - (before.ru_utime + before.ru_stime)
    t0, forks = time.monotonic(), 0
    deadline = t0 + seconds
    while time.monotonic() < deadline:  # Telegraf's way: one nvidia-smi per interval
        subprocess.run([smi, "-q", "-x"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        forks += 1
        time.sleep(max(0.0, t0 + forks * 0.2 - time.monotonic()))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    fork_cpu = (after.ru_utime + after.ru_stime) - (mid.ru_utime + mid.ru_stime)
    return {"loop_cpu_pct_of_one_core": round(100 * loop_cpu / seconds, 3),
            "fork_per_interval_cpu_pct_of_one_core": round(100 * fork_cpu / seconds, 3),
            "forks": forks}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=30)
    ap.add_argument("--real", action="store_true",
                    help="use the driver's libnvidia-ml.so.1 (a GPU machine), not the stub")
    args = ap.parse_args()
    seedance = binary()
    workdir = tempfile.mkdtemp(prefix="seedance-bench-gpu-")
    env = dict(os.environ)
    if args.real:
        nvml = "libnvidia-ml.so.1"
    else:
        nvml = stub_library()
        script = os.path.join(workdir, "stub.txt")
        with open(script, "w") as f:
            f.write(STUB_SCRIPT)
        env["SEEDANCE_NVML_STUB"] = script
    source = source_in_pipeline(seedance, nvml, env, args.seconds, workdir)
    devices = 1 if args.real else 2  # --real: the rate of one GPU's readings is the baseline's
    baseline = source_in_pipeline(seedance, nvml, env, args.seconds, workdir,
                                  baseline_payload=source.pop("payload"), rate=5 * devices)
    source["baseline_generate_cpu_pct_of_one_core"] = baseline["cpu_pct_of_one_core"]
    source["reading_cpu_pct_of_one_core"] = round(
        source["cpu_pct_of_one_core"] - baseline["cpu_pct_of_one_core"], 4)
    result = {"benchmark": "gpu", "nvml": "driver" if args.real else "stub (2 devices)",
              "interval_ms": 200, "seconds": args.seconds, "source": source,
              "gpu_sample": sampler_command(seedance, nvml, env, args.seconds, workdir),
              "nvidia_smi": nvidia_smi(args.seconds)}
    smi = result["nvidia_smi"]
    if "error" not in smi and result["source"]["cpu_pct_of_one_core"] > 0:
        result["nvidia_smi_fork_cpu_over_source"] = round(
            smi["fork_per_interval_cpu_pct_of_one_core"] / result["source"]["cpu_pct_of_one_core"],
            1)
    shutil.rmtree(workdir, ignore_errors=True)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
