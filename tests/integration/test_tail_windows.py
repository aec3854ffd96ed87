"""tail into windows across kill -9 (issue 40): a file's read position is committed in the same
checkpoint append as the window state its lines produced, so repeated SIGKILLs while lines
are appended — through a rotation by rename and a copy-truncate — count every line once.
Real files, real process kills."""
import collections
import json
import os
import random
import shutil
import threading
import time

from testing.seedance_process import Seedance
from testing.waiting import wait_until
from testing.windows import BASE_MS, PROCESSORS, file_sink, final_windows



def job(tmp_path, logs):
    return f"""
sources:
  - type: tail
    path: ["{logs}/a.log*", "{logs}/b.log"]
    read_from: beginning
    poll_interval: 200ms
    rotate_wait: 1s
""" + PROCESSORS + file_sink(tmp_path / "windows.ndjson") + f"""
queue:
  data_dir: {tmp_path}/data
"""


def test_kill_9_while_tailing_into_windows_counts_each_line_once(tmp_path):
    logs = tmp_path / "logs"
    logs.mkdir()
    out = tmp_path / "windows.ndjson"
    total = 12_000
    rng = random.Random(4040)
    state = {"sd": None}
    no_kill = threading.Lock()  # held while a copy-truncate waits for the tail to catch up
    expected = collections.Counter()
    sums = collections.Counter()
    done = threading.Event()

    def line(i):
        device = "a" if i % 2 == 0 else "b"
        ts = BASE_MS + i
        expected[(device, ts // 1000 * 1000)] += 1
        sums[(device, ts // 1000 * 1000)] += i % 7
        return device, json.dumps({"device": device, "ts": ts, "v": i % 7}) + "\n"

    def writer():
        for i in range(total):
            if i == 4000 or i == 8000:  # rotation by rename, within the glob a.log*
                os.rename(logs / "a.log", logs / f"a.log.{i // 4000}")
            if i == 6000:
                # copytruncate: what is in b.log must be read before it is emptied (lines
                # written between a read and the truncation are lost to any tailer).
                with no_kill:
                    time.sleep(1.5)
                    shutil.copy(logs / "b.log", tmp_path / "b.copy")
                    with open(logs / "b.log", "r+") as f:
                        f.truncate(0)
            device, text = line(i)
            with open(logs / f"{device}.log", "a") as f:
                f.write(text)
            if i % 40 == 0:
                time.sleep(0.02)  # about 2,000 lines a second
        done.set()

    state["sd"] = Seedance(job(tmp_path, logs), workdir=str(tmp_path)).start()
    t = threading.Thread(target=writer)
    t.start()
    kills = 0
    try:
        while not done.is_set() or kills < 6:
            time.sleep(rng.uniform(0.2, 0.6))
            with no_kill:
                state["sd"].kill()
                kills += 1
                time.sleep(rng.uniform(0.0, 0.2))
                state["sd"] = Seedance(job(tmp_path, logs), workdir=str(tmp_path)).start()
            if kills >= 30:
                break
        t.join(60)
        assert done.is_set()
        # A reading an hour later, after everything, fires every window.
        with open(logs / "a.log", "a") as f:
            f.write(json.dumps({"device": "flush", "ts": BASE_MS + 3_600_000 + total, "v": 0})
                    + "\n")
        want = {k: v for k, v in expected.items()}

        def got():
            return final_windows(out)
        assert wait_until(lambda: len(got()) >= len(want) and all(
            got().get(k, {}).get("count", 0) >= v for k, v in want.items()), 60, 0.5), \
            {k: (got().get(k, {}).get("count"), v) for k, v in want.items()
             if got().get(k, {}).get("count") != v}
        time.sleep(1.0)
        g = got()
        wrong = {k: (g[k]["count"], v) for k, v in want.items() if g[k]["count"] != v}
        assert not wrong, f"after {kills} kills, windows differ (got, expected): {wrong}"
        assert all(g[k]["sum"] == sums[k] for k in want)
        print(f"tail: kill -9 x{kills}, {len(want)} windows of {total} lines counted once")
    finally:
        state["sd"].stop()
