"""A full disk below queue.max_disk: the real binary on a real 1 MiB tmpfs.

The tmpfs is mounted by the test in a private mount namespace (`unshare`: as root, or as any
user where unprivileged user namespaces are allowed). Where neither is permitted the tests say
so and skip; the same code paths are covered without a mount by the fault-injected file system
in src/storage/durable_queue_test.cc (DurableQueueTest.FullFileSystem*)."""
import os
import shutil
import subprocess
import time

import pytest

from testing.ports import free_port
from testing.http_receiver import Receiver
from testing.seedance_process import Seedance, metric, scrape
from testing.waiting import wait_until

TMPFS_BYTES = 1024 * 1024


def _can_mount_tmpfs(tmp_path):
    if shutil.which("unshare") is None:
        return "no unshare(1)"
    target = tmp_path / "probe"
    target.mkdir()
    r = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
                        f"mount -t tmpfs -o size=64k tmpfs {target}"],
                       capture_output=True, text=True, timeout=10)
    return None if r.returncode == 0 else f"cannot mount a tmpfs here: {r.stderr.strip()}"


def on_small_tmpfs(sd, mount_point):
    """Runs `sd` inside a new mount namespace with a 1 MiB tmpfs at `mount_point`."""
    sd.args = ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
               f'mount -t tmpfs -o size={TMPFS_BYTES} tmpfs "$0" && exec "$@"',
               str(mount_point)] + sd.args
    return sd


def config(receiver, metrics_port, data_dir, count, extra=""):
    return f"""
sources:
  - type: generate
    count: {count}
    rate: 0
    payload: '{{"id":{{n}},"pad":"{'p' * 200}"}}'
sinks:
  - type: http
    endpoint: "{receiver.url}/in"
    retry_initial: 20ms
    retry_max: 200ms
queue:
  data_dir: {data_dir}
metrics:
  listen: 127.0.0.1:{metrics_port}
pipeline:
  shutdown_timeout: 2s
{extra}"""


@pytest.fixture
def tmpfs_dir(tmp_path):
    why = _can_mount_tmpfs(tmp_path)
    if why:
        pytest.skip(why + "; covered by DurableQueueTest.FullFileSystem* (fault-injected)")
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    return mnt


def test_full_disk_recovers_by_itself_without_loss(tmp_path, tmpfs_dir):
    n = 20_000  # ~5 MB of records: five times the file system
    receiver = Receiver().start()
    receiver.fail_next(1_000_000, 503)  # the sink is down: the queue fills the disk
    port = free_port()
    sd = on_small_tmpfs(Seedance(config(receiver, port, tmpfs_dir / "data", n),
                                 workdir=str(tmp_path / "run")), tmpfs_dir).start()
    try:
        assert sd.wait_log("the file system is full", timeout=30), sd.stderr()
        url = f"http://127.0.0.1:{port}/metrics"
        assert metric(scrape(url), "seedance_queue_disk_full_total") == 1
        with receiver.lock:
            receiver.fail_queue.clear()  # the sink is back: nothing else is done
        def all_arrived():
            return len({e["id"] for e in receiver.accepted_events()}) == n
        assert wait_until(all_arrived, 90, 0.5), \
            f"{n - len({e['id'] for e in receiver.accepted_events()})} of {n} missing\n" + sd.stderr()[-3000:]
        assert sd.wait_log("has space again", timeout=5)
        # Delivered data was reclaimed though it sat in the only segment.
        assert wait_until(lambda: metric(scrape(url), "seedance_queue_disk_bytes") < TMPFS_BYTES // 2, 10)
    finally:
        rc = sd.stop()
        receiver.stop()
    assert rc == 0, sd.stderr()


def test_sigterm_on_a_full_disk_exits_within_the_shutdown_timeout(tmp_path, tmpfs_dir):
    receiver = Receiver().start()
    receiver.fail_next(1_000_000, 503)  # never drains
    port = free_port()
    sd = on_small_tmpfs(Seedance(config(receiver, port, tmpfs_dir / "data", 0),
                                 workdir=str(tmp_path / "run")), tmpfs_dir).start()
    try:
        assert sd.wait_log("the file system is full", timeout=30), sd.stderr()
        time.sleep(0.5)
        t0 = time.monotonic()
        rc = sd.stop(timeout=15)
        took = time.monotonic() - t0
    finally:
        if sd.proc.poll() is None:
            sd.kill()
        receiver.stop()
    # shutdown_timeout is 2 s; its watchdog would end a hang at 3 s with code 1.
    assert took < 3.0, f"SIGTERM took {took:.2f} s (rc {rc})\n" + sd.stderr()[-2500:]
    assert rc == 0, sd.stderr()
