"""The fields processor in the real binary (processors/fields/fields_processor.h): NDJSON on
standard input renamed, trimmed and stamped on its way to a file; what it cannot change goes to
error with the reason; a bad parameter fails validation at its line."""
import json
import subprocess

from testing.seedance_process import BIN, validate
from testing.stdin_job import stdin_job


def test_fields_are_renamed_removed_and_set_between_stdin_and_a_file(tmp_path):
    config = stdin_job(tmp_path, processors="""  - type: fields
    rename: {t: temperature, "meta.id": device}
    remove: [debug]
    set: {unit: celsius, "site.floor": 3}
""")
    lines = [json.dumps({"t": 20 + i, "meta": {"id": f"d{i}"}, "debug": "x"}) for i in range(100)]
    lines.insert(10, "[1,2,3]")
    r = subprocess.run([BIN, "--config", str(config)], input="\n".join(lines).encode(),
                       capture_output=True, timeout=60)
    assert r.returncode == 0, r.stderr.decode()[-3000:]
    out = [json.loads(l) for l in (tmp_path / "out.ndjson").read_text().splitlines()]
    assert out == [{"meta": {}, "temperature": 20 + i, "device": f"d{i}", "unit": "celsius",
                    "site": {"floor": 3}} for i in range(100)]
    errors = [json.loads(l) for l in (tmp_path / "errors.ndjson").read_text().splitlines()]
    assert [e["headers"]["reason"] for e in errors] == \
        ["fields: the payload is not a JSON object"]


def test_a_bad_path_fails_validation_at_its_line(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("sources:\n  - type: stdin\nprocessors:\n  - type: fields\n"
                      "    remove: [a..b]\nsinks:\n  - type: stdout\n")
    r = validate(config)
    assert r.returncode == 2, r.stderr
    assert f"{config}:5:" in r.stderr and '"a..b" has an empty field name' in r.stderr, r.stderr
