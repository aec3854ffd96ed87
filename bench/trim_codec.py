"""seedance::trim's zero-block codec on trims (host tiers; --tier cuda on a GPU): move rate down and back and slow-tier bytes at zero fractions 0/0.5/0.9/1, codec off, when it pays, always."""
# The binary (bench/trim_codec_bench.cc) prints one JSON line; this adds a summary: per zero
# fraction, the codec's effect on the round trip and on the room taken on the slower tier.
import json
import os
import subprocess
import sys

from common import ROOT

binary = os.path.join(ROOT, "build-release", "seedance_trim_codec_bench")
out = subprocess.run([binary, *sys.argv[1:]], check=True, capture_output=True, text=True)
result = json.loads(out.stdout.strip().splitlines()[-1])
by = {(r["zero_fraction"], r["codec"]): r for r in result["rows"]}
result["summary"] = {
    f"z={z}": {
        "round_trip_gbps_off": by[(z, "off")]["round_trip_gbps"],
        "round_trip_gbps_when_it_pays": by[(z, "when_it_pays")]["round_trip_gbps"],
        "round_trip_gbps_always": by[(z, "always")]["round_trip_gbps"],
        "slow_tier_share_always": by[(z, "always")]["slow_tier_share"],
        "when_it_pays_encoded": by[(z, "when_it_pays")]["bytes_moved_encoded"] > 0,
    }
    for z in sorted({r["zero_fraction"] for r in result["rows"]})}
result["content_ok"] = all(r["content_ok"] for r in result["rows"])
print(json.dumps(result))
sys.exit(0 if result["content_ok"] else 1)
