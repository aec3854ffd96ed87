"""The modbus source: polls/s, tags/s and CPU per 1,000 tags/s against pymodbus's simulator."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from common import RELEASE_BIN, ROOT, cpu_seconds, free_port
from testing.seedance_process import metric as metric_or_none, scrape as scrape_url

SECONDS = 10


def metric_sum(text, name, **labels):
    """The sum of `name`'s samples with `labels` (0 when there are none yet)."""
    return metric_or_none(text, name, **labels) or 0.0


def scrape(port):
    return scrape_url(f"http://127.0.0.1:{port}/metrics")


def run(name, groups, interval):
    """`groups` groups of 1,000 uint16 tags (8 reads of 125 registers each), every `interval`."""
    work = tempfile.mkdtemp(prefix="seedance-bench-modbus-")
    sim_port, port = free_port(), free_port()
    sim = subprocess.Popen([sys.executable, "-m", "testing.modbus_sim", "--tcp",
                            f"127.0.0.1:{sim_port}"], cwd=os.path.join(ROOT, "tests"),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    assert sim.stdout.readline().strip() == "ready"
    tags = "".join(f"          - {{name: t{a}, address: {a}}}\n" for a in range(400, 1400))
    group_yaml = "".join(f"""      - name: g{i}
        interval: {interval}
        tags:
{tags}""" for i in range(groups))
    config = os.path.join(work, "config.yaml")
    with open(config, "w") as f:
        f.write(f"""
sources:
  - type: modbus
    url: tcp://127.0.0.1:{sim_port}
    groups:
{group_yaml}
sinks:
  - type: file
    path: {os.path.join(work, "out.ndjson")}
    encoding: payload
    max_size: 64MiB
    max_files: 1
queue:
  data_dir: {os.path.join(work, "data")}
metrics:
  listen: 127.0.0.1:{port}
""")
    p = subprocess.Popen([RELEASE_BIN, "--config", config, "--log-level", "warn"],
                         stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            try:
                if metric_sum(scrape(port), "seedance_modbus_polls_total", result="ok") >= 3:
                    break
            except OSError:
                pass
            time.sleep(0.1)
        polls0 = metric_sum(scrape(port), "seedance_modbus_polls_total", result="ok")
        cpu0, sim_cpu0, t0 = cpu_seconds(p.pid), cpu_seconds(sim.pid), time.perf_counter()
        time.sleep(SECONDS)
        text = scrape(port)
        elapsed = time.perf_counter() - t0
        polls = metric_sum(text, "seedance_modbus_polls_total", result="ok") - polls0
        cpu, sim_cpu = cpu_seconds(p.pid) - cpu0, cpu_seconds(sim.pid) - sim_cpu0
        missed = metric_sum(text, "seedance_modbus_polls_missed_total")
    finally:
        p.terminate()
        p.wait(30)
        sim.kill()
        sim.wait()
        shutil.rmtree(work, ignore_errors=True)
    tags_per_s = polls * 1000 / elapsed
    return {
        "case": name,
        "groups": groups,
        "tags_per_poll": 1000,
        "reads_per_poll": 8,
        "interval": interval,
        "polls_per_s": round(polls / elapsed, 1),
        "tags_per_s": round(tags_per_s),
        "missed_polls": int(missed),
        # CPU cores used per 1,000 tags read each second (0.001 = 0.1% of one core).
        "seedance_cpu_cores_per_1000_tags_per_s": round(cpu / elapsed / (tags_per_s / 1000), 6),
        "seedance_cpu_percent": round(100 * cpu / elapsed, 2),
        "simulator_cpu_percent": round(100 * sim_cpu / elapsed, 1),
    }


def main():
    cases = [run("paced: 1,000 tags every 100 ms", 1, "100ms"),
             run("paced: 4 x 1,000 tags every 10 ms (the shortest interval)", 4, "10ms"),
             # More than one connection can carry: polls wait for each other and are missed
             # (overrun); polls/s is what one connection to this simulator sustains.
             run("saturated: 16 x 1,000 tags every 10 ms", 16, "10ms")]
    for c in cases:
        print(json.dumps(c), file=sys.stderr)
    print(json.dumps({
        "benchmark": "modbus",
        "job": "modbus source (TCP, one connection) -> file sink through the durable queue; "
               "pymodbus 3.0 simulator on 127.0.0.1; uint16 tags in contiguous holding "
               f"registers, 125 per read; {SECONDS} s measured per case",
        "cases": cases,
        "peer": "Telegraf (inputs.modbus) is not packaged for Debian 12 and nothing may be "
                "downloaded: no side-by-side run here",
    }))


if __name__ == "__main__":
    main()
