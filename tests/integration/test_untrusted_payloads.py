"""Untrusted payloads through a real mosquitto broker into the reference job (issue 13,
findings 1 and 2): a payload of a million '[' (it crashed the process in the JSON check) and
JSON nested 10,000 levels (it made LuaJIT panic in the JSON→Lua bridge) each go to the error
output with their reason; the process keeps running and the next event is delivered. Bytes
that are not UTF-8 and text from scripts stay within valid JSON and one log line (findings 3
and 16)."""
import base64
import json
import os

from testing.mqtt_publish import publish_all
from testing.seedance_process import SOURCE_DIR, Seedance, seed_job_config
from testing.waiting import wait_until

SEED_FILTER = os.path.join(SOURCE_DIR, "examples", "seed", "filter.lua")


def test_deep_and_huge_nesting_go_to_error_and_the_pipeline_goes_on(broker, receiver, tmp_path):
    errors = tmp_path / "errors.ndjson"
    config = seed_job_config(broker, receiver, more_sinks=f"""\
  - type: file
    name: errors
    path: {errors}
    inputs: [error]
""")
    sd = Seedance(config, filter_path=SEED_FILTER).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        topic = "sensor/d1/temperature"
        publish_all(broker.port, [
            (topic, b"[" * 1_000_000),
            (topic, (b"[" * 10_000) + (b"]" * 10_000)),
            (topic, b'{"temperature": 21.5, "id": 7}'),
        ], qos=1)
        assert receiver.wait_for_events(1, timeout=30), sd.stderr()[-3000:]
        assert wait_until(lambda: errors.exists() and len(errors.read_text().splitlines()) == 2,
                          timeout=30), sd.stderr()[-3000:]
        lines = [json.loads(l) for l in errors.read_text().splitlines()]
        assert all("nested deeper than 128 levels" in l["headers"]["reason"] for l in lines), lines
        assert sd.proc.poll() is None, "the process died"
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]


def test_bytes_that_are_not_utf8_reach_the_error_file_as_valid_json(broker, receiver, tmp_path):
    """Finding 3: the payload went to `error` but the file line was not valid JSON."""
    errors = tmp_path / "errors.ndjson"
    config = seed_job_config(broker, receiver, more_sinks=f"""\
  - type: file
    name: errors
    path: {errors}
    inputs: [error]
""")
    bad = [b'{"temperature": "\xff\xfe"}', b"\xc0\xaf\x00\x1b[2J raw", b'{"t": "\xed\xa0\x80"}']
    sd = Seedance(config, filter_path=SEED_FILTER).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        publish_all(broker.port, [("sensor/d1/temperature", p) for p in bad]
                    + [("sensor/d1/temperature", b'{"temperature": 20}')], qos=1)
        assert receiver.wait_for_events(1, timeout=30), sd.stderr()[-3000:]
        assert wait_until(lambda: errors.exists() and len(errors.read_text().splitlines()) == 3,
                          timeout=30), sd.stderr()[-3000:]
        lines = [json.loads(l) for l in errors.read_bytes().decode("utf-8").splitlines()]
        got = [base64.b64decode(l["payload_base64"]) for l in lines]
        assert got == bad  # every byte kept
        assert all(l["headers"]["reason"].startswith("invalid JSON at offset") for l in lines), lines
        assert "Invalid encoding" in lines[0]["headers"]["reason"], lines
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]


def test_script_text_cannot_forge_log_lines_or_grow_them(tmp_path):
    """Finding 16: a script's print and error text reached the log raw (new lines, escape
    codes) and a 50 MB error message became a 50 MB log line and reason header."""
    errors = tmp_path / "errors.ndjson"
    script = tmp_path / "noisy.lua"
    script.write_text(r'''
function process(e)
  if e.payload.seq == 0 then
    print("hello\n2026-01-01T00:00:00.000Z INFO  [pipeline] forged line\27[31m")
    return e
  end
  error(string.rep("x", 50 * 1024 * 1024))
end
''')
    config = f"""
sources:
  - type: generate
    count: 2
    rate: 10
processors:
  - type: lua
    script: {script}
    max_memory: 256MiB  # room for the 50 MB message (and its copy with the position)
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
  - type: file
    name: errors
    path: {errors}
    inputs: [error]
"""
    sd = Seedance(config).start()
    try:
        assert wait_until(lambda: errors.exists() and errors.read_text().strip(), timeout=30), \
            sd.stderr()[-3000:]
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]
    log = sd.stderr()
    assert "forged line" in log
    assert not any(l.startswith("2026-01-01T00:00:00.000Z") for l in log.splitlines())
    assert "\x1b" not in log and "\\n2026-01-01" in log and "\\x1b[31m" in log
    assert max(len(l) for l in log.splitlines()) < 5000
    reason = json.loads(errors.read_text().splitlines()[0])["headers"]["reason"]
    assert len(reason) < 1200 and "more bytes)" in reason, len(reason)


def test_a_stream_of_invalid_lines_is_logged_once_per_kind_not_once_per_line(tmp_path):
    """Side-output lines were rate-limited by their reason's bytes, and a reason holds the
    line number and offset: 3,000 invalid lines of a tailed file wrote 3,000 log lines (and
    the limiter kept a key for each, for ever). Every line is still routed to `error`."""
    log_file = tmp_path / "app.log"
    log_file.write_text("".join(f"{'x' * (i % 50)} not json {i}\n" for i in range(3000)))
    errors = tmp_path / "errors.ndjson"
    config = f"""
sources:
  - type: tail
    path: {tmp_path}/*.log
    read_from: beginning
sinks:
  - type: file
    path: {tmp_path}/out.ndjson
  - type: file
    name: errors
    path: {errors}
    inputs: [error]
"""
    sd = Seedance(config).start()
    try:
        assert wait_until(lambda: errors.exists() and
                          len(errors.read_text().splitlines()) == 3000, timeout=30), \
            sd.stderr()[-3000:]
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]
    routed = [l for l in sd.stderr().splitlines() if "to error output" in l]
    assert 1 <= len(routed) <= 2, routed[:5]
    assert "line 1 of" in routed[0]
