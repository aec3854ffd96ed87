"""`seedance top` (issue 46): a tmux-driven terminal reads the screen, whose figures match
/metrics; q and Ctrl-C quit and give the terminal back; --once prints one plain snapshot."""
import re
import shutil
import subprocess
import time

import pytest

from testing.ports import free_port
from testing.seedance_process import BIN, Seedance, metric, scrape
from testing.waiting import wait_until

COUNT = 300

# Every third event filtered: the processor's row shows drops.
JOB = """
sources:
  - type: generate
    name: gen
    count: {count}
    rate: 2000
processors:
  - type: lua
    name: thirds
    code: |
      function process(event)
        if event.payload.seq % 3 == 0 then return nil end
        return event
      end
sinks:
  - type: file
    name: out
    path: {tmp}/out.ndjson
queue:
  data_dir: {tmp}/data
metrics:
  listen: "127.0.0.1:{port}"
"""

ROW = re.compile(r"^(source|processor|sink)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)\s+(\S+)\s+(\d+)\s")


def rated(screen):
    """True when every row of the table shows a rate (the second frame on)."""
    found = [m.group(4) for m in map(ROW.match, screen.splitlines()) if m]
    return len(found) == 3 and all(r != "-" for r in found)


def rows(screen):
    """(kind, name) -> (in, out, errors) from the screen's table."""
    got = {}
    for line in screen.splitlines():
        m = ROW.match(line)
        if m:
            got[(m.group(1), m.group(2))] = (int(m.group(3)), int(m.group(5)), int(m.group(7)))
    return got


def expected(text):
    want = {}
    for kind, name in (("source", "gen"), ("processor", "thirds"), ("sink", "out")):
        want[(kind, name)] = tuple(
            int(metric(text, m, component=name, kind=kind) or 0)
            for m in ("seedance_events_in_total", "seedance_events_out_total",
                      "seedance_errors_total"))
    return want


@pytest.fixture
def pipeline(tmp_path):
    port = free_port()
    sd = Seedance(JOB.format(count=COUNT, tmp=tmp_path, port=port)).start()
    out = tmp_path / "out.ndjson"
    delivered = COUNT - len(range(0, COUNT, 3))
    assert wait_until(lambda: out.exists() and out.read_text().count("\n") == delivered,
                      timeout=30)
    yield sd, f"http://127.0.0.1:{port}"
    assert sd.stop() == 0, sd.stderr()[-3000:]


def test_once_prints_one_plain_snapshot_matching_metrics(pipeline):
    _, url = pipeline
    p = subprocess.run([BIN, "top", "--once", "--interval", "200ms", "--url", url],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 0, p.stderr
    assert "\x1b" not in p.stdout  # plain text, no terminal sequences
    assert rows(p.stdout) == expected(scrape(url + "/metrics")), p.stdout
    assert "filtered=100" in p.stdout
    assert " main 200 " in next(l for l in p.stdout.splitlines() if l.startswith("outputs:"))
    assert not re.search(r"^queue\s+queue", p.stdout, re.M)  # rows are components only


def test_once_without_a_pipeline_says_so_and_exits_1():
    p = subprocess.run([BIN, "top", "--once", "--url", f"http://127.0.0.1:{free_port()}"],
                       capture_output=True, text=True, timeout=20)
    assert p.returncode == 1 and "cannot read" in p.stderr, p.stderr


@pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed (scripts/setup "
                    "installs it)")
@pytest.mark.parametrize("quit_key", ["q", "C-c"])
def test_a_terminal_shows_the_figures_and_quits_cleanly(pipeline, tmp_path, quit_key):
    _, url = pipeline
    server = f"seedance-top-{tmp_path.name}"
    tmux = ["tmux", "-L", server, "-f", "/dev/null"]
    subprocess.run(tmux + ["new-session", "-d", "-s", "top", "-x", "200", "-y", "30",
                           f"{BIN} top --url {url} --interval 300ms; sleep 30"], check=True)
    try:
        def screen():
            return subprocess.run(tmux + ["capture-pane", "-p", "-t", "top"], text=True,
                                  capture_output=True).stdout

        # The second frame has rates (two scrapes): every row shows one.
        assert wait_until(lambda: rated(screen()), timeout=10), screen()
        time.sleep(0.7)
        shown = screen()
        assert "seedance top" in shown and "(q quits)" in shown, shown
        assert rows(shown) == expected(scrape(url + "/metrics")), shown
        assert "filtered=100" in shown
        subprocess.run(tmux + ["send-keys", "-t", "top", quit_key], check=True)
        # top exits (the shell's `sleep` keeps the pane) and gives the screen back.
        def command():
            return subprocess.run(tmux + ["display-message", "-p", "-t", "top",
                                          "#{pane_current_command}"], text=True,
                                  capture_output=True).stdout.strip()
        assert wait_until(lambda: command() == "sleep", timeout=5), command()
        assert "seedance top" not in screen(), screen()
    finally:
        subprocess.run(tmux + ["kill-server"], capture_output=True)
