"""The pages start-up touched are released once the process has settled (docs/governor.md, "Start-up pages"),
and the process runs on as before: events flow, a SIGHUP reload and the shutdown work."""
import datetime
import re
import signal

from testing.mqtt_publish import publish_all
from testing.seedance_process import SOURCE_DIR, Seedance, seed_job_config
from testing.proc_stats import status_kb

SEED_FILTER = f"{SOURCE_DIR}/examples/seed/filter.lua"
RELEASED = r"start-up pages released: resident (\d+) -> (\d+) KiB \((\d+) segments\)"


def test_startup_pages_are_released_and_the_job_runs_on(broker, receiver, tmp_path):
    config = seed_job_config(broker, receiver, rest=f"queue:\n  data_dir: {tmp_path / 'data'}\n")
    sd = Seedance(config, filter_path=SEED_FILTER, extra_args=["--log-level", "debug"]).start()
    try:
        assert sd.wait_log(r"connected to 127\.0\.0\.1"), sd.stderr()
        assert sd.wait_log(RELEASED, timeout=5), sd.stderr()
        before, after, segments = map(int, re.search(RELEASED, sd.stderr()).groups())
        # Half a second after ready (each log line starts with its UTC time in milliseconds).
        stamp = lambda rx: datetime.datetime.fromisoformat(
            next(l for l in sd.stderr_lines if re.search(rx, l)).split()[0].rstrip("Z"))
        settle = (stamp(RELEASED) - stamp(r" ready in ")).total_seconds()
        assert 0.49 <= settle < 2.0, settle  # millisecond stamps
        # The binary's, libc's, libm's and the loader's text and read-only data at least.
        assert segments >= 8, sd.stderr()
        # Most of what was resident was start-up's code: the reference job drops 4 of 7 MiB.
        assert after < before * 0.75, (before, after)
        assert status_kb(sd.proc.pid, "VmRSS") < before

        # Code faults back in where it runs: every event of a run after the release arrives.
        messages = [(f"sensor/d{i % 7}/temperature", f'{{"temperature": {20 + i % 10}}}')
                    for i in range(2000)]
        publish_all(broker.port, messages, qos=1)
        assert receiver.wait_for_events(2000, timeout=60), (
            f"{len(receiver.accepted_events())} of 2000 arrived\n" + sd.stderr()[-3000:])
        sd.proc.send_signal(signal.SIGHUP)
        assert sd.wait_log(r"reload done"), sd.stderr()
        assert sd.proc.poll() is None
        # Released once, at start-up: not again by the reload.
        assert len(re.findall(RELEASED, sd.stderr())) == 1, sd.stderr()
    finally:
        assert sd.stop() == 0, sd.stderr()[-3000:]
