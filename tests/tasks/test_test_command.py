"""The ``[test_command]`` table: its type, and its parsing at suite load (one FILE:LINE line per problem)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from reliabench.errors import SuiteError
from reliabench.tasks.suite import load_suite
from reliabench.tasks.test_command import TestCommand, valid_language

GOOD = '''id = "t"
language = "go"
test_runner = "command"
timeout_s = 30
tags = ["go"]

[test_command]
argv = ["go", "test", "-json", "./..."]
report = "go-test-json"
timeout_s = 20
env = { GOFLAGS = "-count=1", REPORTS = "{report_dir}" }
ignore = ["build"]
tamper = [".cargo", "vendor"]
adjustments = ["nothing changed"]
'''


def test_a_test_command_is_frozen_with_stdout_as_the_default_report() -> None:
    cmd = TestCommand(argv=("go", "test", "-json", "./..."), report="go-test-json")
    assert (cmd.report_file, cmd.cwd, cmd.timeout_s, dict(cmd.env)) == ("stdout", ".", None, {})
    assert not cmd.coarse and TestCommand(argv=("make",), report="exit-code").coarse
    with pytest.raises(dataclasses.FrozenInstanceError):
        cmd.report = "junit-xml"  # type: ignore[misc]


def _suite(root: Path, toml: str) -> Path:
    t = root / "tasks" / "t"
    (t / "workspace").mkdir(parents=True)
    (t / "tests").mkdir()
    (root / "suite.toml").write_text('name = "s"\nversion = "1"\n')
    (t / "task.toml").write_text(toml)
    (t / "prompt.md").write_text("Do it.\n")
    (t / "workspace" / "main.go").write_text("package main\n")
    (t / "tests" / "main_test.go").write_text("package main\n")
    (t / "tests" / "test_main.py").write_text("def test_x():\n    pass\n")
    return root


def _problems(tmp_path: Path, toml: str) -> list[str]:
    with pytest.raises(SuiteError) as info:
        load_suite(_suite(tmp_path / "s", toml))
    return [p.split("/tasks/t/", 1)[1] for p in info.value.problems]


def test_a_command_task_loads_in_any_language(tmp_path: Path) -> None:
    task = load_suite(_suite(tmp_path / "s", GOOD)).tasks[0]
    assert (task.language, task.test_runner) == ("go", "command")
    assert task.test_command == TestCommand(
        argv=("go", "test", "-json", "./..."), report="go-test-json", timeout_s=20.0,
        env={"GOFLAGS": "-count=1", "REPORTS": "{report_dir}"}, ignore=("build",),
        tamper=(".cargo", "vendor"), adjustments=("nothing changed",))


@pytest.mark.parametrize(("change", "expected"), [
    (('argv = ["go", "test", "-json", "./..."]', "argv = []"),
     "task.toml:8: test_command.argv: expected a list of 1 to 256 non-empty strings, got []"),
    (('report = "go-test-json"', 'report = "junit"'),
     "task.toml:9: test_command.report: expected one of junit-xml, go-test-json, jest-json, tap, ctrf, "
     "cargo-libtest, exit-code, harbor-reward, got 'junit'"),
    (("timeout_s = 20", "timeout_s = -1"),
     "task.toml:10: test_command.timeout_s: expected a number of seconds in (0, 86400], got -1"),
    (('env = { GOFLAGS = "-count=1", REPORTS = "{report_dir}" }', 'env = { "A B" = "x" }'),
     "task.toml:11: test_command.env: expected a table of NAME = \"value\" strings, got {'A B': 'x'}"),
    (('ignore = ["build"]', 'ignore = ["../up"]'),
     "task.toml:12: test_command.ignore: expected relative paths inside the workspace, got ['../up']"),
    (('tamper = [".cargo", "vendor"]', "tamper = [1]"),
     "task.toml:13: test_command.tamper: expected a list of non-empty strings, got [1]"),
    (('adjustments = ["nothing changed"]', 'adjustments = ["x"]\nargvs = []'),
     "task.toml:15: test_command.argvs: unknown key (known: adjustments, argv, cwd, env, ignore, oracle, report, "
     "report_dir, report_file, tamper, tests_at, timeout_s)"),
    (('report = "go-test-json"', 'report = "go-test-json"\ntests_at = "tests"'),
     "task.toml:10: test_command.tests_at: expected an absolute path in the environment other than /, got 'tests'"),
    (('report = "go-test-json"', 'report = "go-test-json"\nreport_dir = "/"'),
     "task.toml:10: test_command.report_dir: expected an absolute path in the environment other than /, got '/'"),
    (('report = "go-test-json"', 'report = "go-test-json"\noracle = "../solve.sh"'),
     "task.toml:10: test_command.oracle: expected a relative path inside the task's folder, got '../solve.sh'"),
    (('report = "go-test-json"', 'report = "go-test-json"\noracle = "oracle/solve.sh"'),
     "task.toml:10: test_command.oracle: oracle/solve.sh: not a file in the task's folder"),
    (('report = "go-test-json"', 'report = "go-test-json"\ncwd = "/abs"'),
     "task.toml:10: test_command.cwd: expected a relative path inside the workspace, got '/abs'"),
    (('report = "go-test-json"', 'report = "junit-xml"\nreport_file = "../x.xml"'),
     "task.toml:10: test_command.report_file: expected 'stdout' or a relative path under {report_dir}, "
     "got '../x.xml'"),
    (('report = "go-test-json"', 'report = "exit-code"\nreport_file = "x.xml"'),
     "task.toml:10: test_command.report_file: an exit-code task reads no report file"),
    (('language = "go"', 'language = "Go Lang"'),
     "task.toml:2: language: expected a lower-case language name (go, rust, java, javascript, cpp, ...), "
     "got 'Go Lang'"),
], ids=["argv", "report", "timeout", "env", "ignore", "tamper", "unknown-key", "tests-at", "report-dir",
        "oracle-outside", "oracle-missing", "cwd", "report-file",
        "exit-code-file", "language"])
def test_each_problem_is_one_line_with_file_and_line(tmp_path: Path, change: tuple[str, str],
                                                     expected: str) -> None:
    assert GOOD.count(change[0]) == 1
    assert _problems(tmp_path, GOOD.replace(*change)) == [expected]


def test_a_verifiers_places_and_oracle_are_read(tmp_path: Path) -> None:
    table = GOOD.replace('report = "go-test-json"', 'report = "go-test-json"\ntests_at = "/tests/"\n'
                         'report_dir = "/logs//verifier"\noracle = "oracle/./solve.sh"')
    root = _suite(tmp_path / "s", table)
    (root / "tasks" / "t" / "oracle").mkdir()
    (root / "tasks" / "t" / "oracle" / "solve.sh").write_text("#!/bin/bash\n")
    cmd = load_suite(root).tasks[0].test_command
    assert cmd is not None and (cmd.tests_at, cmd.report_dir, cmd.oracle) == ("/tests", "/logs/verifier",
                                                                              "oracle/solve.sh")
    assert TestCommand(argv=("x",), report="tap").tests_at is None


def test_a_command_task_needs_the_table_and_other_tasks_must_not_have_one(tmp_path: Path) -> None:
    no_table = GOOD[:GOOD.index("[test_command]")]
    assert _problems(tmp_path / "a", no_table) == [
        "task.toml:1: test_command: expected a [test_command] table (argv, report) for test_runner = 'command'"]
    pytest_task = GOOD.replace('test_runner = "command"', 'test_runner = "pytest"').replace('"go"', '"python"', 1)
    found = _problems(tmp_path / "b", pytest_task)
    assert "task.toml:7: test_command: only a task with test_runner = 'command' has one" in found


def test_language_names() -> None:
    assert all(valid_language(x) for x in ("go", "cpp", "c++", "javascript", "c#", "objective-c"))
    assert not any(valid_language(x) for x in ("", "Go", "go lang", 3, "x" * 40))
