"""`seedance validate`: the seed config passes as it stands; broken configs exit 2 with
file:line:column, the key and what was expected."""
import os
import subprocess

import pytest

from testing.seedance_process import BIN, SOURCE_DIR

SEED = os.path.join(SOURCE_DIR, "examples", "seed")


def validate(*args):
    return subprocess.run([BIN, "validate", *args], capture_output=True, text=True, timeout=30)


def test_seed_config_validates_as_it_stands():
    r = validate("--config", os.path.join(SEED, "config.yaml"),
                 "--filter", os.path.join(SEED, "filter.lua"))
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


@pytest.mark.parametrize("example", ["reference/config.yaml", "gpu/window-influxdb.yaml",
                                     "gpu/alert-mqtt.yaml", "modbus/sdm630-mqtt.yaml"])
def test_example_configs_validate_as_they_stand(example):
    r = validate("--config", os.path.join(SOURCE_DIR, "examples", example))
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_gpu_source_settings_are_checked(tmp_path):
    path = tmp_path / "gpu.yaml"
    path.write_text("""sources:
  - type: gpu
    interval: 100ms
    backend: cuda
    on_unavailable: maybe
sinks:
  - type: stdout
""")
    r = validate("--config", str(path))
    assert r.returncode == 2
    assert "sources[0].interval: must be at least 200ms" in r.stderr, r.stderr
    assert "sources[0].backend" in r.stderr and "sources[0].on_unavailable" in r.stderr


GOOD_SINK = """sinks:
  - type: http
    endpoint: "http://127.0.0.1:9/x"
"""
GOOD_SOURCE = """sources:
  - type: mqtt
    uri: "tcp://127.0.0.1:1883"
    topic: "a/+"
"""

BROKEN = {
    "bad_yaml": ("sources:\n  - type: mqtt\n    uri: [unclosed\n" + GOOD_SINK,
                 [":4:", "invalid YAML"]),
    "unknown_key": (GOOD_SOURCE.replace("topic:", "topik: x\n    topic:") + GOOD_SINK,
                    [":4:5:", "sources[0]", 'unknown key "topik"', 'did you mean "topic"']),
    "wrong_type": (GOOD_SOURCE + GOOD_SINK + "    batch_size: lots\n",
                   [":8:17:", "sinks[0].batch_size", "expected an integer"]),
    "missing_endpoint": (GOOD_SOURCE + "sinks:\n  - type: http\n    method: POST\n",
                         [":6:5:", "sinks[0]", 'missing required key "endpoint"']),
    "bad_enum": (GOOD_SOURCE + GOOD_SINK + "    method: POTS\n",
                 [":8:13:", "sinks[0].method", '"POTS" is not one of', 'did you mean "POST"']),
    "unknown_type": (GOOD_SOURCE.replace("type: mqtt", "type: mqt") + GOOD_SINK,
                     [":2:11:", "sources[0].type", 'unknown source type "mqt"', 'did you mean "mqtt"']),
    "bad_uri": (GOOD_SOURCE.replace("tcp://127.0.0.1:1883", "http://x") + GOOD_SINK,
                [":3:10:", "sources[0].uri", "broker URI"]),
    "bad_duration": (GOOD_SOURCE + "    keep_alive: 30 parsecs\n" + GOOD_SINK,
                     [":5:17:", "sources[0].keep_alive", "expected a duration"]),
    "unset_env": (GOOD_SOURCE.replace("tcp://127.0.0.1:1883", "${SEEDANCE_TEST_UNSET_VAR}") + GOOD_SINK,
                  [":3:10:", "SEEDANCE_TEST_UNSET_VAR is not set"]),
    "bad_filter_wildcard": (GOOD_SOURCE.replace('"a/+"', '"a/b#"') + GOOD_SINK,
                            [":4:12:", "sources[0].topic", "'#' must be a whole level"]),
    "no_sinks": (GOOD_SOURCE, ['missing required section "sinks"']),
    "header_injection": (GOOD_SOURCE + GOOD_SINK + '    headers:\n      X-Token: "a\\r\\nHost: evil"\n',
                         [":9:", "sinks[0].headers", "control character (0x0d)"]),
    "bad_header_name": (GOOD_SOURCE + GOOD_SINK + '    headers:\n      "X Token": "a"\n',
                        ["sinks[0].headers", 'header name "X Token"']),
    "missing_ca_file": (GOOD_SOURCE + GOOD_SINK + "    tls:\n      ca_file: /nonexistent/ca.pem\n",
                        [":9:16:", "sinks[0].tls.ca_file",
                         "/nonexistent/ca.pem: No such file or directory"]),
    "metrics_listen_not_an_address": (GOOD_SOURCE + GOOD_SINK + "metrics:\n  listen: abc\n",
                                      [":9:11:", "metrics.listen", "expected host:port"]),
    "metrics_listen_bad_port": (GOOD_SOURCE + GOOD_SINK + 'metrics:\n  listen: "127.0.0.1:99999"\n',
                                [":9:11:", "metrics.listen", "port must be a number"]),
    "duplicate_key": (GOOD_SOURCE + '    topic: "b/+"\n' + GOOD_SINK,
                      [":5:5:", 'duplicate key "topic"', "first at", ":4:5"]),
    "second_document": (GOOD_SOURCE + GOOD_SINK + "---\nsources: []\n",
                        [":8:", "second YAML document"]),
    "empty_file": ("", [":1:1:", "no configuration in the file"]),
    "only_a_comment": ("# nothing yet\n", [":1:1:", "no configuration in the file"]),
    # yaml-cpp 0.7's LoadAll loops for ever allocating on this (found by the config fuzzer)
    "just_a_comma": (",\n", [":1:1:", "no configuration in the file"]),
    # Issue 50, finding 6: names name files (an empty one made the cursors directory itself a
    # sink's position file), and what `run` refuses about a path `validate` refuses too.
    "empty_sink_name": (GOOD_SOURCE + GOOD_SINK + '    name: ""\n',
                        [":8:11:", "sinks[0].name", 'name "" is empty']),
    "sink_name_with_a_slash": (GOOD_SOURCE + GOOD_SINK + '    name: "a/b"\n',
                               [":8:11:", "sinks[0].name", "may hold only letters"]),
    "source_name_dot_dot": (GOOD_SOURCE + '    name: ".."\n' + GOOD_SINK,
                            [":5:11:", "sources[0].name", "must not start with '.'"]),
    "file_sink_path_is_a_directory": (GOOD_SOURCE + "sinks:\n  - type: file\n    path: /tmp\n",
                                      [":7:11:", "sink \"file\"", '"/tmp" is a directory']),
    "file_sink_path_is_a_url": (GOOD_SOURCE + 'sinks:\n  - type: file\n    path: "http://"\n',
                                [":7:11:", "sink \"file\"", "is a URL"]),
    "file_sink_directory_missing": (GOOD_SOURCE + "sinks:\n  - type: file\n    path: /nonexistent/out.ndjson\n",
                                    [":7:11:", "sink \"file\"", "/nonexistent does not exist"]),
    "data_dir_below_a_file": (GOOD_SOURCE + GOOD_SINK + "queue:\n  data_dir: /etc/hostname/queue\n",
                              [":9:13:", "queue.data_dir", "/etc/hostname is not a directory"]),
    "unknown_top_level": (GOOD_SOURCE + GOOD_SINK + "sink:\n  - type: stdout\n",
                          [":8:1:", 'unknown top-level key "sink"', 'did you mean "sinks"']),
}


@pytest.mark.parametrize("name", sorted(BROKEN))
def test_broken_config_exits_2_naming_file_line_and_key(name, tmp_path):
    text, expected = BROKEN[name]
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    r = validate("--config", str(path))
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert str(path) in r.stderr
    for fragment in expected:
        assert fragment in r.stderr, f"{fragment!r} not in {r.stderr!r}"


def test_run_refuses_what_validate_refuses_with_the_same_file_and_line(tmp_path):
    path = tmp_path / "dir_sink.yaml"
    path.write_text(GOOD_SOURCE + "sinks:\n  - type: file\n    path: /tmp\n"
                    + f"queue:\n  data_dir: {tmp_path}/data\n")
    r = subprocess.run([BIN, "--config", str(path)], capture_output=True, text=True, timeout=30)
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert f"{path}:7:11:" in r.stderr and "is a directory" in r.stderr, r.stderr


def test_env_references_fill_values_and_defaults(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text(GOOD_SOURCE.replace("tcp://127.0.0.1:1883", "${BROKER_URI:-tcp://127.0.0.1:1883}")
                    + GOOD_SINK.replace("http://127.0.0.1:9/x", "${SINK_URL}"))
    env = dict(os.environ, SINK_URL="http://127.0.0.1:8080/v1/metrics")
    r = subprocess.run([BIN, "validate", "--config", str(path)], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr


def test_broken_filter_script_fails_validation(tmp_path):
    script = tmp_path / "f.lua"
    script.write_text("function process(e) return e")
    path = tmp_path / "c.yaml"
    path.write_text(GOOD_SOURCE + GOOD_SINK)
    r = validate("--config", str(path), "--filter", str(script))
    assert r.returncode == 2
    assert "f.lua" in r.stderr and "cannot load script" in r.stderr


def test_usage_errors_exit_2_and_version_works():
    assert subprocess.run([BIN, "--no-such-flag"], capture_output=True).returncode == 2
    # An unknown subcommand is a usage error whatever follows it (it exited 0 with --help).
    for args in (["nonsense", "--help"], ["nonsense"], ["bench", "nonsense", "--help"],
                 ["version", "extra", "--help"]):
        r = subprocess.run([BIN, *args], capture_output=True, text=True)
        assert r.returncode == 2, (args, r.stdout[-300:], r.stderr)
        assert f'"{args[-2] if args[-1] == "--help" else args[-1]}"' in r.stderr, r.stderr
    for args in (["--help"], ["run", "--help"], ["bench", "compare", "--help"],
                 ["describe", "http"], ["validate", "--help"]):
        assert subprocess.run([BIN, *args], capture_output=True).returncode == 0, args
    assert subprocess.run([BIN], capture_output=True).returncode == 2
    r = subprocess.run([BIN, "version"], capture_output=True, text=True)
    assert r.returncode == 0 and r.stdout.startswith("seedance ")
    r = subprocess.run([BIN, "describe", "http"], capture_output=True, text=True)
    assert r.returncode == 0 and "endpoint" in r.stdout and "retry_limit" in r.stdout


def test_version_names_the_commit_build_architecture_and_plugins():
    r = subprocess.run([BIN, "version"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lines = dict(l.split(": ", 1) for l in r.stdout.splitlines()[1:])
    git = subprocess.run(["git", "rev-parse", "HEAD"], cwd=SOURCE_DIR, capture_output=True,
                         text=True)
    if git.returncode == 0:  # built from this checkout (possibly with uncommitted changes)
        assert lines["commit"] in (git.stdout.strip(), git.stdout.strip() + "-dirty"), lines
    else:
        assert lines["commit"] == "unknown"
    assert lines["build"] in ("Debug", "Release", "RelWithDebInfo", "MinSizeRel")
    assert lines["target"] in ("x86_64-linux", "aarch64-linux", "arm-linux")
    assert lines["sources"] == "generate, gpu, http, modbus, mqtt, otlp, prometheus_scrape, stdin, tail"
    # The optional sinks are there when the build had their headers (scripts/setup installs them).
    sinks = lines["sinks"].split(", ")
    assert sinks == sorted(sinks)
    assert {"file", "http", "mqtt", "otlp", "prometheus_remote_write", "stdout"} <= set(sinks)
    assert set(sinks) <= {"file", "http", "influxdb", "kafka", "mqtt", "nats", "otlp",
                          "prometheus_remote_write", "stdout"}
    assert "lua" in lines["processors"]


def test_a_line_break_from_an_environment_variable_cannot_inject_a_header(tmp_path):
    path = tmp_path / "env.yaml"
    path.write_text(GOOD_SOURCE + GOOD_SINK + '    headers:\n      Authorization: "Bearer ${TOKEN}"\n')
    env = dict(os.environ, TOKEN="abc\r\nHost: evil.example")
    for command in (["validate", "--config", str(path)], ["--config", str(path)]):
        r = subprocess.run([BIN, *command], capture_output=True, text=True, env=env, timeout=30)
        assert r.returncode == 2, (command, r.stderr)
        assert f"{path}:9:" in r.stderr and "control character" in r.stderr, r.stderr


def test_every_component_problem_is_reported_at_once(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(GOOD_SOURCE + """processors:
  - type: lua
    code: "function process(e) return e"
  - type: lua
    name: second
    code: "function other(e) return e end"
""" + GOOD_SINK)
    r = validate("--config", str(path))
    assert r.returncode == 2, r.stderr
    assert "cannot load script" in r.stderr and 'defines no function "process"' in r.stderr, r.stderr


def test_a_script_that_is_not_a_regular_file_or_too_large_is_refused(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(GOOD_SOURCE + GOOD_SINK)
    r = validate("--config", str(path), "--filter", "/dev/zero")  # hung for ever before
    assert r.returncode == 2 and "/dev/zero is not a regular file" in r.stderr, r.stderr
    fifo = tmp_path / "f.lua"
    os.mkfifo(fifo)
    r = validate("--config", str(path), "--filter", str(fifo))
    assert r.returncode == 2 and "is not a regular file" in r.stderr, r.stderr
    big = tmp_path / "big.lua"
    big.write_text("function process(e) return e end\n" + "-- padding\n" * 200_000)
    r = validate("--config", str(path), "--filter", str(big))
    assert r.returncode == 2 and "the limit is 1048576" in r.stderr, r.stderr
    r = validate("--config", "/dev/zero")
    assert r.returncode == 2 and "is not a regular file" in r.stderr, r.stderr


def test_a_ca_file_that_is_not_pem_is_named_with_the_reason(tmp_path):
    """Finding 15: a bad CA file was logged for ever as "TLS CA file: asio.ssl error"."""
    bad = tmp_path / "ca.pem"
    bad.write_text("not a certificate\n")
    path = tmp_path / "c.yaml"
    path.write_text(GOOD_SOURCE.replace("tcp://", "ssl://") + f"    tls:\n      ca_file: {bad}\n"
                    + GOOD_SINK.replace("http://", "https://") + f"    tls:\n      ca_file: {bad}\n")
    for command in (["validate", "--config", str(path)], ["--config", str(path)]):
        r = subprocess.run([BIN, *command], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (command, r.stderr)
        assert r.stderr.count(f"tls.ca_file {bad}: not a PEM file of CA certificates (") == 2, r.stderr
        assert "asio.ssl error" not in r.stderr
