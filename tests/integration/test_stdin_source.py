"""The stdin source with the real binary and real pipes (sources/stdin/stdin_source.h): lines in
order, bad lines to error with their number, the last line without its newline, the process
stopping once its input ended and everything is delivered; a silent writer never holds a stop;
a writer held by a full pipeline; closed standard descriptors."""
import json
import os
import subprocess
import threading
import time

from testing.http_receiver import Receiver
from testing.seedance_process import BIN, Seedance, validate
from testing.stdin_job import stdin_job
from testing.waiting import wait_until


def read_lines(path):
    return path.read_text().splitlines() if path.exists() else []


def test_piped_lines_are_delivered_in_order_and_the_process_exits_0_at_the_end(tmp_path):
    """`producer | seedance run`: 20,000 NDJSON lines in order, a line that is not JSON to
    error with its number, the last line taken without its newline; at the end of the input
    the process stops by itself, everything delivered, exit 0 (before, there was no stdin
    source: DESIGN.md lists it)."""
    lines = [json.dumps({"n": i}) for i in range(20000)]
    lines.insert(500, "not json")
    data = ("\n".join(lines) + "\n" + '{"last":true}').encode()  # no final newline
    r = subprocess.run([BIN, "--config", str(stdin_job(tmp_path))], input=data,
                       capture_output=True, timeout=60)
    log = r.stderr.decode()
    assert r.returncode == 0, log[-3000:]
    out = read_lines(tmp_path / "out.ndjson")
    assert out == [l for l in lines if l != "not json"] + ['{"last":true}']
    errors = [json.loads(l) for l in read_lines(tmp_path / "errors.ndjson")]
    assert len(errors) == 1
    assert errors[0]["payload"] == "not json"
    assert errors[0]["headers"]["stdin_line"] == "501"
    assert errors[0]["headers"]["reason"].startswith("line 501 of standard input: invalid JSON")
    assert "standard input ended after 20002 line(s)" in log
    assert "every source's input has ended; stopping" in log
    assert "everything delivered" in log


def test_a_line_over_max_line_costs_its_first_kib_in_error(tmp_path):
    long_line = "x" * 100_000
    data = f'{{"a":1}}\n{long_line}\n{{"b":2}}\n'.encode()
    r = subprocess.run([BIN, "--config",
                        str(stdin_job(tmp_path, source_extra="    max_line: 10KiB\n"))],
                       input=data, capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    assert read_lines(tmp_path / "out.ndjson") == ['{"a":1}', '{"b":2}']
    errors = [json.loads(l) for l in read_lines(tmp_path / "errors.ndjson")]
    assert len(errors) == 1 and len(errors[0]["payload"]) == 1024
    assert "line 2 of standard input is longer than max_line (10240 bytes)" in \
        errors[0]["headers"]["reason"]


def test_a_silent_writer_does_not_hold_a_stop_and_another_source_keeps_the_process(tmp_path):
    """A writer that keeps the pipe open and says nothing: SIGTERM stops the process at once
    (the reader never blocks in read). With another source beside it, the end of the input
    does not stop the process."""
    r, w = os.pipe()
    sd = Seedance(stdin_job(tmp_path).read_text(), workdir=str(tmp_path),
                  preexec_fn=lambda: os.dup2(r, 0))
    sd.start()
    try:
        os.write(w, b'{"first":1}\n')
        assert wait_until(lambda: read_lines(tmp_path / "out.ndjson") == ['{"first":1}'],
                          timeout=10), sd.stderr()[-2000:]
        began = time.monotonic()
        assert sd.stop() == 0, sd.stderr()[-2000:]
        assert time.monotonic() - began < 3
    finally:
        os.close(w)
        os.close(r)

    other = "  - type: generate\n    name: ticks\n    rate: 10\n    payload: '{\"tick\":{n}}'\n"
    (tmp_path / "two").mkdir()
    def devnull_stdin():
        os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
    sd = Seedance(stdin_job(tmp_path / "two", more_sources=other).read_text(),
                  workdir=str(tmp_path / "two"), preexec_fn=devnull_stdin)
    sd.start()
    try:
        assert wait_until(lambda: "standard input ended after 0 line(s)" in sd.stderr(),
                          timeout=10), sd.stderr()[-2000:]
        time.sleep(1)
        assert sd.proc.poll() is None, sd.stderr()[-2000:]
        assert "every source's input has ended" not in sd.stderr()
    finally:
        assert sd.stop() == 0


def test_a_full_pipeline_holds_the_writer_and_loses_nothing(tmp_path):
    """The source takes one chunk at a time: while the pipeline has no room, the writer's pipe
    fills and its writes block, instead of the source buffering. A queue of 64 events in
    memory and a receiver that takes 0.5 s per request for the first 2 s: 20,000 lines
    (0.7 MB) cannot be taken in while they are written; once it is quick again, all arrive."""
    receiver = Receiver().start()
    receiver.delay_s = 0.5
    path = tmp_path / "config.yaml"
    path.write_text(f"""
sources:
  - type: stdin
sinks:
  - type: http
    endpoint: {receiver.url}/in
queue:
  buffer: memory
pipeline:
  queue_capacity: 64
""")
    lines = [json.dumps({"n": i, "pad": "y" * 10}) for i in range(20000)]
    proc = subprocess.Popen([BIN, "--config", str(path)], stdin=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    stderr = []
    threading.Thread(target=lambda: stderr.extend(proc.stderr), daemon=True).start()
    threading.Timer(2.0, lambda: setattr(receiver, "delay_s", 0.0)).start()
    try:
        began = time.monotonic()
        proc.stdin.write(("\n".join(lines) + "\n").encode())  # blocks while the pipeline is full
        proc.stdin.close()
        written = time.monotonic() - began
        assert proc.wait(timeout=60) == 0, b"".join(stderr).decode()[-3000:]
    finally:
        receiver.stop()
    got = sorted(e["n"] for e in receiver.accepted_events())
    assert got == list(range(20000))
    assert written >= 1.5, written  # held until the receiver was quick again


def test_two_stdin_sources_are_refused_naming_both(tmp_path):
    config = tmp_path / "two.yaml"
    config.write_text("sources:\n  - type: stdin\n  - type: stdin\n    name: again\n"
                      "sinks:\n  - type: stdout\n")
    r = validate(config)
    assert r.returncode == 2, r.stderr
    assert f'{config}:3:5: source "again": a second `stdin` source' in r.stderr, r.stderr
    assert f"(the first is at {config}:2:5)" in r.stderr, r.stderr


def test_closed_standard_descriptors_are_opened_on_dev_null(tmp_path):
    """`seedance run <&- 2>&-`: a closed descriptor 0 or 2 was taken by the first file the
    process opened (an eventfd, a queue file): log lines went there and a stdin source would
    have read it. Now they are /dev/null: the stdin source ends with no line."""
    def close_standard():
        os.close(0)
        os.close(2)
    other = "  - type: generate\n    name: ticks\n    rate: 10\n    payload: '{\"tick\":{n}}'\n"
    config = stdin_job(tmp_path, more_sources=other)
    proc = subprocess.Popen([BIN, "--config", str(config)], stdout=subprocess.DEVNULL,
                            preexec_fn=close_standard)
    try:
        assert wait_until(lambda: len(read_lines(tmp_path / "out.ndjson")) >= 3, timeout=10)
        for fd in (0, 2):
            assert os.readlink(f"/proc/{proc.pid}/fd/{fd}") == "/dev/null"
    finally:
        proc.terminate()
        assert proc.wait(timeout=15) == 0
    assert all("tick" in l for l in read_lines(tmp_path / "out.ndjson"))
