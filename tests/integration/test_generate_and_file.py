"""The generate source and the file sink, with no network at all."""
import json
import time

from testing.seedance_process import Seedance


def test_generated_events_land_in_a_rotating_file(tmp_path):
    out = tmp_path / "out.ndjson"
    sd = Seedance(f"""
sources:
  - type: generate
    count: 200
    rate: 0
    payload: '{{"seq":{{n}}}}'
sinks:
  - type: file
    path: {out}
    encoding: payload
    max_size: 1KiB
    max_files: 50
""").start()
    try:
        deadline = time.time() + 10
        def lines():
            # The sink may rotate a file between listing and reading it, or be mid-write:
            # then report nothing and let the loop look again.
            try:
                files = [out] + sorted(tmp_path.glob("out.ndjson.*"))
                return [json.loads(l) for f in files if f.exists() for l in f.read_text().splitlines()]
            except (FileNotFoundError, ValueError):
                return []
        while time.time() < deadline and len(lines()) < 200:
            time.sleep(0.05)
        assert sorted(e["seq"] for e in lines()) == list(range(200))
        assert list(tmp_path.glob("out.ndjson.*")), "max_size should have rotated the file"
        assert all(f.stat().st_size <= 1024 for f in tmp_path.glob("out.ndjson*"))
    finally:
        assert sd.stop() == 0


def test_threads_are_named_for_top_and_perf(tmp_path):
    script = tmp_path / "f.lua"
    script.write_text("function process(e) return e end\n")
    sd = Seedance(f"""
sources:
  - type: generate
    rate: 10
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
""", filter_path=str(script)).start()
    try:
        time.sleep(0.3)
        import glob
        names = set()
        for comm in glob.glob(f"/proc/{sd.proc.pid}/task/*/comm"):
            with open(comm) as f:
                names.add(f.read().strip())
        assert {"seedance", "sd-io", "sd-process", "sd-lua-reload"} <= names, names
    finally:
        assert sd.stop() == 0
