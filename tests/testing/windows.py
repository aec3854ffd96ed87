"""The keyed 1 s window that the exactly-once tests and bench/window_soak count readings with
(watermark on the payload's `ts` in ms, key `device`, count and sum of `v`, an hour of
lateness so no reading is stale), and how to read its results from a file sink."""
import json

BASE_MS = 1_795_000_000_000  # event time of the first reading

PROCESSORS = """
processors:
  - type: watermark
    time_field: ts
    time_format: ms
    max_out_of_order: 0s
    allowed_lateness: 1h
    idle_timeout: 1h
  - type: window
    size: 1s
    key_field: device
    field: v
    aggregates: [count, sum]
    allowed_lateness: 1h
"""


def file_sink(path):
    return f"""
sinks:
  - type: file
    path: {path}
    encoding: payload
"""


def final_windows(path, skip=("flush",)):
    """(key, window start) -> the window's last emission (highest update; complete lines)."""
    final = {}
    try:
        with open(path) as f:
            for line in f:
                if not line.endswith("}\n"):
                    continue
                w = json.loads(line)
                k = (w["key"], w["start_ms"])
                if w["key"] not in skip and (k not in final or w["update"] >= final[k]["update"]):
                    final[k] = w
    except FileNotFoundError:
        pass
    return final
