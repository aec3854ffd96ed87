"""docs/plugins.md is generated from the plugins' schemas and must match the binary."""
import os
import subprocess

from testing.seedance_process import BIN, SOURCE_DIR


def test_plugin_reference_is_current(tmp_path):
    doc = os.path.join(SOURCE_DIR, "docs", "plugins.md")
    with open(doc) as f:
        before = f.read()
    scratch = tmp_path / "repo"
    (scratch / "docs").mkdir(parents=True)
    (scratch / "scripts").mkdir()
    script = os.path.join(SOURCE_DIR, "scripts", "gen-plugin-docs")
    subprocess.run(["cp", script, str(scratch / "scripts")], check=True)
    subprocess.run([str(scratch / "scripts" / "gen-plugin-docs"), BIN], check=True)
    assert (scratch / "docs" / "plugins.md").read_text() == before, \
        "docs/plugins.md is out of date: run scripts/gen-plugin-docs"
