"""`seedance test` (issue 46): the project's tests files pass (the seed filter's boundaries,
windows, quantiles, stale routing, Lua chains, script errors and limits), a failing case
exits 1 with a diff and a JUnit report, and a broken tests file or config exits 2 naming the
file and line."""
import os
import subprocess
import xml.etree.ElementTree as ET

from testing.seedance_process import BIN

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DATA = os.path.join(ROOT, "tests", "data", "pipetest")


def seedance_test(*args, cwd=None):
    p = subprocess.run([BIN, "test", *args], capture_output=True, text=True, timeout=60,
                       cwd=cwd)
    return p.returncode, p.stdout, p.stderr


def test_the_seed_filter_tests_pass():
    seed = os.path.join(ROOT, "examples", "seed")
    code, out, err = seedance_test("--config", "config.yaml", "--filter", "filter.lua",
                                   "--tests", "filter.tests.yaml", cwd=seed)
    assert code == 0, out + err
    assert "9 test(s): 9 passed, 0 failed" in out, out
    assert "PASS  drops just above 125" in out


def test_the_window_and_lua_tests_pass_and_the_default_file_is_beside_the_config():
    total = 0
    for name in ("windows", "lua"):
        code, out, err = seedance_test("--config", os.path.join(DATA, name + ".yaml"))
        assert code == 0, out + err
        assert " 0 failed" in out and "FAIL" not in out, out
        total += int(out.strip().splitlines()[-1].split()[0])
    assert total >= 15  # with the seed filter's 9: more than 20 cases


def test_a_failing_case_exits_1_with_a_diff_and_a_junit_report(tmp_path):
    tests = tmp_path / "t.yaml"
    tests.write_text("""
tests:
  - name: passes
    input:
      - payload: {temperature: 21}
    expect:
      - payload: {temperature: 21}
  - name: expects the wrong value
    input:
      - payload: {temperature: 21, device: d1}
      - payload: {temperature: 500}
    expect:
      - payload: {temperature: 30, device: d1}
""")
    junit = tmp_path / "report.xml"
    seed = os.path.join(ROOT, "examples", "seed")
    code, out, err = seedance_test("--config", os.path.join(seed, "config.yaml"), "--filter",
                                   os.path.join(seed, "filter.lua"), "--tests", str(tests),
                                   "--junit", str(junit))
    assert code == 1, out + err
    assert "PASS  passes" in out
    assert f"FAIL  expects the wrong value  ({tests}:8)" in out, out
    assert '- [0] main {"temperature":30,"device":"d1"}' in out, out
    assert '+ [0] main {"temperature":21,"device":"d1"}' in out, out
    assert "field temperature: expected 30, got 21" in out, out
    assert "2 test(s): 1 passed, 1 failed" in out
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "2" and suite.get("failures") == "1"
    failed = [c for c in suite.findall("testcase") if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["expects the wrong value"]
    assert "expected 30, got 21" in failed[0].find("failure").text


def test_an_unexpected_event_and_a_missing_one_are_shown(tmp_path):
    tests = tmp_path / "t.yaml"
    tests.write_text("""
tests:
  - name: dropped but kept
    input:
      - payload: {temperature: 21}
    expect: dropped
  - name: kept but dropped
    input:
      - payload: {temperature: 200}
    expect:
      - payload: {temperature: 200}
""")
    seed = os.path.join(ROOT, "examples", "seed")
    code, out, _ = seedance_test("--config", os.path.join(seed, "config.yaml"), "--filter",
                                 os.path.join(seed, "filter.lua"), "--tests", str(tests))
    assert code == 1
    assert '+ [0] main {"temperature":21}    (not expected)' in out, out
    assert '- [0] main {"temperature":200}    (missing)' in out, out


def test_a_broken_tests_file_exits_2_naming_file_and_line(tmp_path):
    tests = tmp_path / "t.yaml"
    tests.write_text("""tests:
  - name: a
    input:
      - payload: {x: 1}
        tiem: 2026-01-01T00:00:00Z
    expect:
      - output: main
        where: {x: {"~": 1}}
  - name: a
    input:
      - advance: soon
    expect: [{payload: {x: 1}}]
""")
    seed = os.path.join(ROOT, "examples", "seed")
    code, out, err = seedance_test("--config", os.path.join(seed, "config.yaml"), "--filter",
                                   os.path.join(seed, "filter.lua"), "--tests", str(tests))
    assert code == 2, out + err
    assert f'{tests}:5: unknown key "tiem" in an input step' in err, err
    assert f'{tests}:8: unknown condition "~"' in err, err
    assert f"{tests}:11: advance: a duration" in err, err
    assert f'{tests}:9: a second test named "a"' in err, err
    assert out == ""


def test_a_processor_the_config_lacks_or_no_tests_file_exits_2(tmp_path):
    tests = tmp_path / "t.yaml"
    tests.write_text("""tests:
  - name: a
    processors: [nope]
    input: [{payload: {x: 1}}]
    expect: dropped
""")
    code, _, err = seedance_test("--config", os.path.join(DATA, "lua.yaml"), "--tests",
                                 str(tests))
    assert code == 2
    assert 'test "a": no processor "nope" in' in err and "(it has: enrich, tag)" in err, err
    code, _, err = seedance_test("--config", os.path.join(DATA, "lua.yaml"), "--tests",
                                 str(tmp_path / "none.yaml"))
    assert code == 2 and "none.yaml" in err, err
    bad = tmp_path / "bad.yaml"
    bad.write_text("processors:\n  - type: lua\n    code: 'function process(e) return e end'\n"
                   "    instruction_limit: many\n")
    any_processor = tmp_path / "any.yaml"
    any_processor.write_text("tests:\n  - name: a\n    input: [{payload: {x: 1}}]\n"
                             "    expect: dropped\n")
    code, _, err = seedance_test("--config", str(bad), "--tests", str(any_processor))
    assert code == 2 and f"{bad}:4" in err, err
