"""The layers of src/ (scripts/check-layers, and the build's one library per folder): the tree
keeps them; a deliberate wrong-direction include (storage including a sink header, a sink
including the core) fails the check with its location, and fails to compile with the build's
own flags for that folder."""
import json
import os
import shlex
import shutil
import subprocess
import sys

import pytest

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
    assert ("src/storage/queue_log.cc:1: src/storage includes src/sinks, which it does not build "
            "on") in r.stdout, r.stdout


def test_the_http_library_does_not_include_its_users(tmp_path):
    for d in ("src", "include"):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d)
    target = tmp_path / "src" / "http" / "client.cc"
    target.write_text('#include "observe/metrics.h"\n' + target.read_text())
    r = run(str(tmp_path))
    assert r.returncode == 1
    assert "src/http/client.cc:1: src/http includes src/observe" in r.stdout, r.stdout


def test_plugins_of_one_layer_do_not_include_each_other(tmp_path):
    for d in ("src", "include"):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d)
    target = tmp_path / "src" / "sinks" / "file" / "file_sink.cc"
    target.write_text('#include "sources/mqtt/mqtt_source.h"\n' + target.read_text())
    r = run(str(tmp_path))
    assert r.returncode == 1 and "src/sinks/file/file_sink.cc:1:" in r.stdout


def test_a_plugin_does_not_include_the_core(tmp_path):
    for d in ("src", "include"):
        shutil.copytree(os.path.join(ROOT, d), tmp_path / d)
    target = tmp_path / "src" / "sinks" / "file" / "file_sink.cc"
    target.write_text('#include "core/pipeline.h"\n' + target.read_text())
    r = run(str(tmp_path))
    assert r.returncode == 1 and "src/sinks includes src/core" in r.stdout, r.stdout


def compiles(source, like):
    """Whether compiling `source` compiles the file `like`: it is that file, or a unity build's
    source that #includes it."""
    if source.endswith(like):
        return True
    if "/Unity/" not in source:
        return False
    with open(source) as f:
        return any(line.startswith("#include") and line.rstrip().endswith(like + '"') for line in f)


def preprocess(build_dir, like, include):
    """Preprocesses a file holding `#include "<include>"` with the build's flags for `like`."""
    commands = json.load(open(os.path.join(build_dir, "compile_commands.json")))
    entry = next(c for c in commands if compiles(c["file"], like))
    args = shlex.split(entry["command"])
    source = os.path.join(build_dir, "layer_probe.cc")
    with open(source, "w") as f:
        f.write(f'#include "{include}"\n')
    out, skip = [], False
    for a in args:  # the compiler and its flags, without the file, its output and dep files
        if skip:
            skip = False
        elif a in ("-o", "-MT", "-MF", "-MQ"):
            skip = True
        elif a not in ("-c", "-MD", "-MMD", entry["file"]):
            out.append(a)
    try:
        return subprocess.run(out + ["-E", "-o", os.devnull, source], cwd=entry["directory"],
                              capture_output=True, text=True)
    finally:
        os.unlink(source)


BUILD = os.environ.get("SEEDANCE_BUILD_DIR")


@pytest.mark.skipif(not BUILD, reason="needs SEEDANCE_BUILD_DIR (set when ctest runs it)")
@pytest.mark.parametrize("like,include,ok", [
    ("src/storage/queue_log.cc", "observe/metrics.h", True),
    ("src/storage/queue_log.cc", "sinks/http/http_sink.h", False),
    ("src/sinks/file/file_sink.cc", "mqtt/client.h", True),
    ("src/sinks/file/file_sink.cc", "core/pipeline.h", False),
    ("src/sinks/file/file_sink.cc", "storage/durable_queue.h", False),
    ("src/sources/tail/tail_source.cc", "sinks/file/file_sink.h", False),
    ("src/util/strings.cc", "observe/metrics.h", False),
    ("src/observe/http_listener.cc", "http/server.h", True),
    ("src/http/server.cc", "observe/metrics.h", False),
    ("src/http/client.cc", "sinks/common/http_batch_sink.h", False),
])
def test_the_build_refuses_a_wrong_direction_include(like, include, ok):
    r = preprocess(BUILD, like, include)
    if ok:
        assert r.returncode == 0, r.stderr[-2000:]
    else:
        assert r.returncode != 0 and "No such file or directory" in r.stderr, r.stderr[-2000:]
