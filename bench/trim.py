"""seedance::trim on a synthetic dual workload (host tier): peak/mean memory, step overhead, trim latency, copy bandwidth; writes bench/results/trim.svg."""
import os
import subprocess
import sys

from common import ROOT

binary = os.path.join(ROOT, "build-release", "seedance_trim_bench")
svg = os.path.join(ROOT, "bench", "results", "trim.svg")
out = subprocess.run([binary, "2000", svg], check=True, capture_output=True, text=True)
print(out.stdout.strip().splitlines()[-1])
sys.exit(0)
