"""Durable queue append and replay throughput (events/s, MB/s), 200 B and 2 KB events, each fsync policy."""
import os
import subprocess
import sys
import tempfile

from common import ROOT

binary = os.path.join(ROOT, "build-release", "seedance_queue_bench")
work = tempfile.mkdtemp(prefix="seedance-queue-bench-", dir=os.environ.get("BENCH_DIR"))
out = subprocess.run([binary, os.path.join(work, "q")], check=True, capture_output=True, text=True)
print(out.stdout.strip().splitlines()[-1])
sys.exit(0)
