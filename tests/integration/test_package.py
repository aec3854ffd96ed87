"""The Debian package (issue 22): scripts/package builds it, lintian finds nothing, it installs
on this machine with dpkg, its unit passes `systemd-analyze verify`, the job starts as the unit
starts it (an unprivileged user, in the state directory, with NOTIFY_SOCKET: READY=1 must come)
and delivers through the test broker; `dpkg -r` keeps the config and the state directory,
`dpkg --purge` removes both. It changes the machine, so it needs root and a machine where
seedance is not installed otherwise; it says so when it skips."""
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import time

import pytest

from testing.ports import free_port
from testing.mqtt_publish import publish_all
from testing.seedance_process import BIN, SOURCE_DIR

UNIT = "/lib/systemd/system/seedance.service"
STATE_DIR = "/var/lib/seedance"


def installed():
    r = subprocess.run(["dpkg-query", "-W", "-f=${Status}", "seedance"], capture_output=True,
                       text=True)
    return "install ok installed" in r.stdout or "config-files" in r.stdout


def dpkg(*args):
    r = subprocess.run(["dpkg", *args], capture_output=True, text=True,
                       env={**os.environ, "DEBIAN_FRONTEND": "noninteractive"})
    assert r.returncode == 0, r.stdout + r.stderr
    return r.stdout


def unit_settings():
    settings = {}
    with open(UNIT) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "[")) and "=" in line:
                key, value = line.split("=", 1)
                settings.setdefault(key, value)
    return settings


def start_as_the_unit_does(settings, env, notify_path):
    """ExecStartPre, then ExecStart, as systemd would run them here: a user of its own
    (DynamicUser; nobody stands in for it), the state directory as working directory, the
    unit's umask, and the notification socket."""
    nobody = pwd.getpwnam("nobody")
    workdir = settings["WorkingDirectory"].replace("%S", "/var/lib")
    assert workdir == STATE_DIR
    os.makedirs(workdir, mode=int(settings["StateDirectoryMode"], 8), exist_ok=True)
    os.chown(workdir, nobody.pw_uid, nobody.pw_gid)
    umask = int(settings["UMask"], 8)

    def demote():
        os.setgid(nobody.pw_gid)
        os.setgroups([])
        os.setuid(nobody.pw_uid)
        os.umask(umask)

    full_env = {"PATH": "/usr/bin:/bin", "NOTIFY_SOCKET": notify_path, **env}
    pre = subprocess.run(settings["ExecStartPre"].split(), cwd=workdir, env=full_env,
                         preexec_fn=demote, capture_output=True, text=True, timeout=30)
    assert pre.returncode == 0, pre.stdout + pre.stderr
    return subprocess.Popen(settings["ExecStart"].split(), cwd=workdir, env=full_env,
                            preexec_fn=demote, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="installs a package: needs root (CI runs as root)")
@pytest.mark.skipif(shutil.which("dpkg-deb") is None or shutil.which("lintian") is None,
                    reason="needs dpkg-deb and lintian (scripts/setup installs them)")
def test_the_package_installs_starts_as_its_unit_removes_and_purges(broker, receiver, tmp_path):
    if installed():
        pytest.skip("seedance is installed on this machine: the test would replace it")
    if os.path.exists(STATE_DIR):
        pytest.skip(f"{STATE_DIR} exists on this machine: the test would delete it")
    out = tmp_path / "dist"
    built = subprocess.run([os.path.join(SOURCE_DIR, "scripts", "package")], cwd=SOURCE_DIR,
                           env={**os.environ, "BIN": os.path.abspath(BIN), "OUT": str(out)},
                           capture_output=True, text=True, timeout=120)
    assert built.returncode == 0, built.stdout + built.stderr
    deb = built.stdout.strip().splitlines()[-1]
    assert os.path.basename(deb).startswith("seedance_") and deb.endswith("_amd64.deb"), deb

    lint = subprocess.run(["lintian", "--pedantic", deb], capture_output=True, text=True,
                          timeout=120)
    tags = [l for l in lint.stdout.splitlines() if l[:2] in ("E:", "W:", "I:", "P:")]
    assert tags == [], lint.stdout

    try:
        dpkg("-i", deb)
        assert os.access("/usr/bin/seedance", os.X_OK)
        version = subprocess.run(["/usr/bin/seedance", "version"], capture_output=True,
                                 text=True)
        assert "target: x86_64-linux" in version.stdout, version.stdout
        assert os.path.exists("/usr/share/man/man1/seedance.1.gz")
        verify = subprocess.run(["systemd-analyze", "verify", UNIT], capture_output=True,
                                text=True)
        assert verify.returncode == 0 and verify.stderr.strip() == "", verify.stderr

        settings = unit_settings()
        assert settings["Type"] == "notify" and settings["DynamicUser"] == "yes"
        # An abstract socket ("@name", as systemd's own): no directory for nobody to traverse.
        notify_name = f"seedance-package-test-{os.getpid()}"
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind("\0" + notify_name)
        notify.settimeout(15)
        env = {"BROKER_URI": broker.uri, "SINK_URL": f"{receiver.url}/v1/metrics",
               "METRICS_LISTEN": f"127.0.0.1:{free_port()}"}
        proc = start_as_the_unit_does(settings, env, "@" + notify_name)
        try:
            message = notify.recv(4096).decode()
            assert "READY=1" in message, message
            time.sleep(0.3)  # subscribed (READY follows the SUBACK)
            publish_all(broker.port, [("sensor/d1/temperature",
                                       json.dumps({"temperature": 21.5}))], qos=1)
            assert receiver.wait_for_events(1, timeout=20), proc.stderr
            queue = os.path.join(STATE_DIR, "seedance-data")
            assert os.stat(queue).st_uid == pwd.getpwnam("nobody").pw_uid
        finally:
            proc.send_signal(signal.SIGTERM)
            assert proc.wait(timeout=20) == 0, proc.stderr.read()
            notify.close()

        dpkg("-r", "seedance")
        assert not os.path.exists("/usr/bin/seedance")
        assert os.path.exists("/etc/seedance/config.yaml"), "remove must keep the conffiles"
        assert os.path.isdir(os.path.join(STATE_DIR, "seedance-data")), \
            "remove must keep the state directory (undelivered events)"
        dpkg("--purge", "seedance")
        assert not os.path.exists("/etc/seedance")
        assert not os.path.exists(STATE_DIR)
    finally:
        if installed():
            subprocess.run(["dpkg", "--purge", "seedance"], capture_output=True)
        shutil.rmtree(STATE_DIR, ignore_errors=True)
