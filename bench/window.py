"""Events/s through watermark + window with 10k keys, and window state bytes per key."""
import os
import subprocess
import sys

from common import ROOT

binary = os.path.join(ROOT, "build-release", "seedance_window_bench")
out = subprocess.run([binary, "10000", "2000000"], check=True, capture_output=True, text=True)
print(out.stdout.strip().splitlines()[-1])
sys.exit(0)
