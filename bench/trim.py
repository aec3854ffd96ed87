"""seedance::trim on a synthetic dual workload (host tier): peak/mean memory, step overhead, trim latency, copy bandwidth; writes bench/results/trim.svg."""
# The headline run reads its buffers only (AcquireRead, like inference weights) with
# synchronous copies, the library's default; the other access and copy modes follow under
# "variants" with their overhead and bytes copied.
import json
import os
import subprocess
import sys

from common import ROOT

binary = os.path.join(ROOT, "build-release", "seedance_trim_bench")
svg = os.path.join(ROOT, "bench", "results", "trim.svg")


def run(*flags):
    out = subprocess.run([binary, "--steps", "2000", *flags], check=True, capture_output=True,
                         text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


result = run("--svg", svg)
result["variants"] = {}
for access in ("read", "write"):
    for copies in ("sync", "async"):
        if (access, copies) == ("read", "sync"):
            continue
        variants = [((), "")]
        if copies == "async":  # a stall brings its group back: compare without groups
            variants.append((("--groups", "off"), "_groups_off"))
        for extra, suffix in variants:
            v = run("--access", access, "--copies", copies, *extra)
            result["variants"][f"{access}_{copies}{suffix}"] = {
                k: v[k] for k in ("step_overhead", "step_overhead_blocks", "stalls",
                                  "prefetches", "bytes_copied", "copy_gbps", "peak_bytes_on",
                                  "trim_latency_us", "trim_latency_us_workload")}
# The A/A control: both runs with trimming off; its step_overhead is the measurement's error.
result["control_step_overhead"] = run("--control", "on")["step_overhead"]
print(json.dumps(result))
sys.exit(0)
