"""The layers of src/ (scripts/check-layers): the tree keeps them, and a deliberate
wrong-direction include (storage including a sink header) fails the check with its location."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
CHECK = os.path.join(ROOT, "scripts", "check-layers")


def run(root):
    return subprocess.run([sys.executable, CHECK, root], capture_output=True, text=True)


def test_the_tree_keeps_its_layers():
    r = run(ROOT)
    assert r.returncode == 0, r.stdout


def test_a_wrong_direction_include_fails(tmp_path):
    for d in ("src", "include"):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d)
    target = tmp_path / "src" / "storage" / "queue_log.cc"
    text = target.read_text()
    target.write_text('#include "sinks/http/http_sink.h"\n' + text)
    r = run(str(tmp_path))
    assert r.returncode == 1
    assert "src/storage/queue_log.cc:1: src/storage (layer 3) includes src/sinks" in r.stdout


def test_plugins_of_one_layer_do_not_include_each_other(tmp_path):
    for d in ("src", "include"):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d)
    target = tmp_path / "src" / "sinks" / "file" / "file_sink.cc"
    target.write_text('#include "sources/mqtt/mqtt_source.h"\n' + target.read_text())
    r = run(str(tmp_path))
    assert r.returncode == 1 and "src/sinks/file/file_sink.cc:1:" in r.stdout
