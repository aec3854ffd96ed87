"""Hostile filter scripts against the real binary, a real mosquitto broker and a real HTTP
receiver (issue 14). Each case once wedged the processing thread for good (and with it
SIGTERM), or grew the process until the OOM killer came. Now each costs one event: the
process stays alive, the event is in `error` with a one-line reason naming the limit or the
field, the next event is delivered, RSS stays under the script's memory limit plus a stated
slack, and SIGTERM exits within the shutdown timeout."""
import json
import os
import signal
import time

from testing.mqtt_publish import publish_all
from testing.process_stats import status_kb
from testing.seedance_process import Seedance, metric, scrape
from testing.ports import free_port
from testing.waiting import wait_until

MAX_MEMORY_MIB = 32
# RSS above the idle process that one case may add: the script's heap (max_memory), the copies
# of what one call returns (at most max_memory again) and allocator slack.
RSS_SLACK_MIB = 2 * MAX_MEMORY_MIB + 32

SCRIPT = r"""
kept = {}
function process(e)
  local c = e.payload.case
  if c == "runaway" then while true do end
  elseif c == "pcall_loop" then
    while true do pcall(function() while true do end end) end
  elseif c == "catch_and_return" then
    pcall(function() while true do end end)
    return e
  elseif c == "xpcall_handler" then
    xpcall(function() while true do end end, function() while true do end end)
    return e
  elseif c == "coroutine" then
    while true do coroutine.resume(coroutine.create(function() while true do end end)) end
  elseif c == "backtracking" then
    string.find(string.rep("a", 40), string.rep("a*", 25) .. "b")
  elseif c == "quadratic" then
    string.find(string.rep("a", 1e6), ".-b")
  elseif c == "date" then
    os.date(string.rep("%c", 1e6))
  elseif c == "gsub" then
    local s = string.rep("a", 1e7):gsub("a", "aaaaaaaaaa")
  elseif c == "rep" then
    local s = string.rep("x", 2^30)
  elseif c == "strings" then
    local t = {}
    for i = 1, 1e9 do t[i] = tostring(i) .. "-some-padding-to-grow-faster" end
  elseif c == "stop_gc" then
    collectgarbage("stop")
  elseif c == "grow" then
    for i = 1, 4e5 do kept[#kept + 1] = tostring(i) .. string.rep("k", 100) end
    return e
  elseif c == "fanout" then
    local l = {}
    for i = 1, 1e6 do l[i] = {payload = {i = i}} end
    return l
  elseif c == "time" then e.time = "yesterday" return e
  elseif c == "topic" then e.topic = {} return e
  elseif c == "headers" then e.headers = 5 return e
  elseif c == "header_value" then e.headers = {n = 5} return e
  elseif c == "header_nul" then e.headers = {n = "a\0b"} return e
  elseif c == "nan" then e.payload.v = 0/0 return e
  end
  return e
end
"""

# case -> what the error reason must contain (any of). A case that spends instructions or
# memory may reach max_time first on a loaded machine: that ends it just as well.
RUNAWAY = ("instruction limit", "time limit")
GREEDY = ("memory limit", "time limit")
CASES = {
    "runaway": RUNAWAY,
    "pcall_loop": RUNAWAY,
    "catch_and_return": RUNAWAY,
    "xpcall_handler": RUNAWAY,
    "coroutine": RUNAWAY,
    "backtracking": RUNAWAY,
    "quadratic": RUNAWAY,
    "date": ("os.date: format",),
    "gsub": GREEDY,
    "rep": ("string.rep",),
    "strings": GREEDY,
    "stop_gc": ("collectgarbage(\"stop\") is not allowed",),
    "grow": GREEDY,
    "fanout": GREEDY,
    "time": ("event.time must be a number",),
    "topic": ("event.topic must be a string",),
    "headers": ("event.headers must be a table",),
    "header_value": ('event.headers["n"] must be a string',),
    "header_nul": ("contains a NUL byte",),
    "nan": ("event.payload.v: NaN",),
}


def config(broker, receiver, errors, metrics_port, script, extra="", max_time="2s"):
    return f"""
pipeline:
  shutdown_timeout: 2s
sources:
  - type: mqtt
    uri: "{broker.uri}"
    topic: "hostile/#"
    client_id: "hostile-scripts"
    persistent_session: true
processors:
  - type: lua
    script: {script}
    max_memory: {MAX_MEMORY_MIB}MiB
    max_time: {max_time}
{extra}
sinks:
  - type: http
    endpoint: "{receiver.url}/v1/metrics"
  - type: file
    name: errors
    path: {errors}
    inputs: [error]
metrics:
  listen: "127.0.0.1:{metrics_port}"
"""


def error_lines(path):
    if not path.exists():
        return []
    return [json.loads(l) for l in path.read_text().splitlines()]


def test_each_hostile_script_costs_one_event(broker, receiver, tmp_path):
    script = tmp_path / "hostile.lua"
    script.write_text(SCRIPT)
    errors = tmp_path / "errors.ndjson"
    port = free_port()
    sd = Seedance(config(broker, receiver, errors, port, script)).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        time.sleep(0.5)
        idle_kb = status_kb(sd.proc.pid, "VmRSS")
        reasons = {}
        for n, (case, accepted) in enumerate(CASES.items(), start=1):
            t0 = time.time()
            publish_all(broker.port, [("hostile/x", json.dumps({"case": case}).encode()),
                                      ("hostile/x", json.dumps({"case": "ok", "n": n}).encode())])
            assert wait_until(lambda: len(error_lines(errors)) >= n, timeout=30), \
                (case, sd.stderr()[-3000:])
            assert receiver.wait_for_events(n, timeout=30), (case, sd.stderr()[-3000:])
            took = time.time() - t0
            line = error_lines(errors)[n - 1]
            payload = line["payload"]
            payload = json.loads(payload) if isinstance(payload, str) else payload
            assert payload["case"] == case, line
            reason = line["headers"]["reason"]
            assert any(a in reason for a in accepted), (case, reason)
            reasons[case] = reason
            assert "\n" not in line["headers"]["reason"]
            assert receiver.accepted_events()[-1]["n"] == n, case
            assert sd.proc.poll() is None, f"the process died at {case}"
            # The limits are per call: no case takes much more than max_time.
            assert took < 10, (case, took)
            peak_mib = (status_kb(sd.proc.pid, "VmHWM") - idle_kb) / 1024
            assert peak_mib < MAX_MEMORY_MIB + RSS_SLACK_MIB, (case, peak_mib)
            print(f"{case:18s} {took:6.2f} s  peak RSS over idle {peak_mib:6.1f} MiB")
        text = scrape(f"http://127.0.0.1:{port}/metrics")
        # 7 runaway and 4 greedy cases, each counted under the limit that ended it.
        assert metric(text, "seedance_lua_budget_exceeded_total") >= 11
        if "memory limit" in reasons["grow"]:  # it kept its data: the state was replaced
            assert metric(text, "seedance_lua_state_resets_total") >= 1
        t0 = time.time()
        assert sd.stop() == 0, sd.stderr()[-3000:]
        assert time.time() - t0 < 2 + 1, "SIGTERM did not exit within the shutdown timeout"
    finally:
        sd.kill()


def test_sigterm_exits_in_time_even_when_a_script_cannot_be_interrupted(broker, receiver,
                                                                         tmp_path):
    """With its limits switched off a script loops for ever. SIGTERM must still end the
    process by the shutdown timeout (exit code 1: work abandoned), and the event it was on,
    never acknowledged, comes back from the broker's persistent session after a restart."""
    script = tmp_path / "stuck.lua"
    script.write_text("""
function process(e)
  if e.payload.stuck then while true do end end
  return e
end
""")
    errors = tmp_path / "errors.ndjson"
    port = free_port()
    off = "    instruction_limit: 0\n"
    sd = Seedance(config(broker, receiver, errors, port, script, extra=off, max_time="0s")).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        publish_all(broker.port, [("hostile/x", b'{"stuck": true, "n": 1}')])
        time.sleep(1.0)  # the processing thread is in the loop now
        t0 = time.time()
        sd.proc.send_signal(signal.SIGTERM)
        code = sd.proc.wait(15)
        took = time.time() - t0
        assert code == 1, sd.stderr()[-3000:]
        assert took < 2 + 1 + 1, took  # shutdown_timeout + 1 s grace + scheduling
        assert sd.wait_log(r"shutdown did not finish within pipeline\.shutdown_timeout"), \
            sd.stderr()[-3000:]
    finally:
        sd.kill()
    # Restart with a script that lets it through: the broker redelivers the event.
    script.write_text("function process(e) e.payload.stuck = false return e end")
    sd = Seedance(config(broker, receiver, errors, port, script)).start()
    try:
        assert receiver.wait_for_events(1, timeout=30), sd.stderr()[-3000:]
        assert receiver.accepted_events()[0] == {"stuck": False, "n": 1}
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]


def test_sigterm_while_every_event_runs_into_the_time_limit(broker, receiver, tmp_path):
    """A backlog of slow events (each stopped by max_time) does not hold shutdown beyond its
    timeout, and the process reports a clean exit when nothing was lost."""
    script = tmp_path / "slow.lua"
    script.write_text("""
function process(e)
  local t = os.clock()
  while os.clock() - t < 10 do end
  return e
end
""")
    errors = tmp_path / "errors.ndjson"
    port = free_port()
    extra = "    instruction_limit: 0\n"
    sd = Seedance(config(broker, receiver, errors, port, script, extra=extra, max_time="500ms")).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        publish_all(broker.port, [("hostile/x", b'{"n": %d}' % i) for i in range(20)])
        assert wait_until(lambda: len(error_lines(errors)) >= 1, timeout=30), sd.stderr()
        assert "time limit of 500 ms exceeded" in error_lines(errors)[0]["headers"]["reason"]
        t0 = time.time()
        code = sd.stop(timeout=15)
        assert time.time() - t0 < 2 + 1 + 1
        assert code in (0, 1), sd.stderr()[-3000:]
    finally:
        sd.kill()
