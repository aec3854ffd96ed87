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


def test_threads_are_named_and_batch_scheduled(tmp_path):
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
        policies = {}
        for task in glob.glob(f"/proc/{sd.proc.pid}/task/*"):
            with open(task + "/comm") as f:
                name = f.read().strip()
            names.add(name)
            with open(task + "/stat") as f:  # field 41, policy; fields after ")" start at 3
                policies.setdefault(name, set()).add(int(f.read().rsplit(")", 1)[1].split()[38]))
        assert {"seedance", "sd-io", "sd-process", "sd-fsync", "sd-lua-reload"} <= names, names
        # The two threads that hand batches to each other do not preempt each other on wake-up.
        SCHED_BATCH = 3
        assert policies["sd-io"] == {SCHED_BATCH}, policies
        assert policies["sd-process"] == {SCHED_BATCH}, policies
    finally:
        assert sd.stop() == 0
