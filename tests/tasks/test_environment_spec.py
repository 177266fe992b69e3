"""A task's [environment] (and its suite's default): parsed once, every mistake one FILE:LINE line."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_helpers import one_task_suite

from reliabench.cli import main
from reliabench.errors import SuiteError
from reliabench.sandbox.environment import HOST, EnvironmentSpec
from reliabench.tasks.environment_spec import table_line
from reliabench.tasks.suite import load_suite

BASE_TOML = 'id = "t1"\nlanguage = "python"\ntimeout_s = 30\n'


def _suite(tmp_path: Path, task_env: str | None = None, suite_env: str | None = None) -> Path:
    suite = one_task_suite(tmp_path, {"a.py": "x = 1\n"}, {"test_a.py": "def test_a():\n    pass\n"})
    if task_env is not None:
        (suite / "tasks" / "t1" / "task.toml").write_text(BASE_TOML + task_env)
    if suite_env is not None:
        (suite / "suite.toml").write_text('name = "one-task"\nversion = "0.1"\n' + suite_env)
    return suite


def test_no_table_is_the_host(tmp_path: Path) -> None:
    assert load_suite(_suite(tmp_path)).task("t1").environment == HOST


def test_an_image_task_with_every_key(tmp_path: Path) -> None:
    suite = _suite(tmp_path, '\n[environment]\nimage = "reliabench/python:bookworm"\ntests = "same"\n'
                             'workdir = "/testbed"\nuser = "root"\nwritable_root = true\n')
    spec = load_suite(suite).task("t1").environment
    toml = suite / "tasks" / "t1" / "task.toml"
    assert spec == EnvironmentSpec(image="reliabench/python:bookworm", tests="same", workdir="/testbed",
                                   user="root", writable_root=True, source=f"{toml}:5")


def test_a_dockerfile_is_found_relative_to_its_file_and_inside_the_suite(tmp_path: Path) -> None:
    suite = _suite(tmp_path, '[environment]\ndockerfile = "environment/Dockerfile"\n')
    task = suite / "tasks" / "t1"
    (task / "environment").mkdir()
    (task / "environment" / "Dockerfile").write_text("FROM scratch\n")
    spec = load_suite(suite).task("t1").environment
    assert spec.kind == "dockerfile" and spec.dockerfile == task / "environment" / "Dockerfile"


def test_the_suite_default_applies_unless_a_task_has_its_own(tmp_path: Path) -> None:
    suite = _suite(tmp_path, suite_env='[environment]\nimage = "base:1"\n')
    assert load_suite(suite).task("t1").environment.image == "base:1"
    assert load_suite(suite).task("t1").environment.source == f"{suite / 'suite.toml'}:3"
    (suite / "tasks" / "t1" / "task.toml").write_text(BASE_TOML + '[environment]\nworkdir = "/src"\n')
    spec = load_suite(suite).task("t1").environment
    assert spec.kind == "host" and spec.workdir == "/src"  # the task's table replaces the default whole


BAD = {
    "not-a-table": ('environment = "debian"\n', 4, "environment: expected a table ([environment]), got str"),
    "unknown-key": ('[environment]\nimage = "a"\nnetwork = true\n', 6,
                    "environment.network: unknown key (expected one of: image, dockerfile, tests, "
                    "workdir, user, writable_root)"),
    "bad-image": ('[environment]\nimage = "has space"\n', 5,
                  "environment.image: expected an image reference such as \"debian:bookworm\", got 'has space'"),
    "both": ('[environment]\nimage = "a"\ndockerfile = "Dockerfile"\n', 6,
             "environment.dockerfile: image and dockerfile exclude each other: keep one"),
    "escaping-dockerfile": ('[environment]\ndockerfile = "../../../Dockerfile"\n', 5,
                            "environment.dockerfile: expected a path inside the suite (relative, no ..), "
                            "got '../../../Dockerfile'"),
    "absolute-dockerfile": ('[environment]\ndockerfile = "/etc/Dockerfile"\n', 5,
                            "environment.dockerfile: expected a path inside the suite (relative, no ..), "
                            "got '/etc/Dockerfile'"),
    "bad-tests": ('[environment]\nimage = "a"\ntests = "later"\n', 6,
                  "environment.tests: expected \"fresh\" or \"same\", got 'later'"),
    "same-on-the-host": ('[environment]\ntests = "same"\n', 5,
                         "environment.tests: \"same\" needs image or dockerfile (on the host nothing of "
                         "the agent's machine outlives its commands: use \"fresh\")"),
    "relative-workdir": ('[environment]\nworkdir = "testbed"\n', 5,
                         "environment.workdir: expected an absolute path such as \"/testbed\" (normalised, "
                         "not /), got 'testbed'"),
    "root-workdir": ('[environment]\nworkdir = "/"\n', 5,
                     "environment.workdir: expected an absolute path such as \"/testbed\" (normalised, "
                     "not /), got '/'"),
    "bad-user": ('[environment]\nimage = "a"\nuser = 1000\n', 6,
                 "environment.user: expected \"root\" (or no key: a non-root user), got 1000"),
    "bad-writable-root": ('[environment]\nimage = "a"\nwritable_root = "yes"\n', 6,
                          "environment.writable_root: expected true or false, got 'yes'"),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_a_malformed_table_is_one_line_with_file_and_line(tmp_path: Path, case: str) -> None:
    text, line, message = BAD[case]
    suite = _suite(tmp_path, text)
    with pytest.raises(SuiteError) as info:
        load_suite(suite)
    toml = suite / "tasks" / "t1" / "task.toml"
    assert info.value.problems == (f"{toml}:{line}: {message}",)


def test_a_dockerfile_that_is_missing_a_folder_or_a_link_is_refused(tmp_path: Path) -> None:
    suite = _suite(tmp_path, '[environment]\ndockerfile = "env"\n')
    toml = suite / "tasks" / "t1" / "task.toml"
    for make, what in ((lambda p: None, "no such file"), (lambda p: p.mkdir(), "a folder")):
        target = suite / "tasks" / "t1" / "env"
        make(target)
        with pytest.raises(SuiteError) as info:
            load_suite(suite)
        assert info.value.problems == (f"{toml}:5: environment.dockerfile: {target}: {what} (expected the "
                                       "Dockerfile, a regular file in the suite)",)


def test_a_bad_suite_default_names_suite_toml(tmp_path: Path) -> None:
    suite = _suite(tmp_path, suite_env='\n[environment]\nimage = 3\n')
    with pytest.raises(SuiteError) as info:
        load_suite(suite)
    assert info.value.problems == (f"{suite / 'suite.toml'}:5: environment.image: expected an image reference "
                                   "such as \"debian:bookworm\", got 3",)


def test_the_cli_says_it_in_one_line_with_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(tmp_path, '[environment]\nimage = "a"\ntests = "later"\n')
    assert main(["validate", str(suite)]) == 2
    err = capsys.readouterr().err
    assert f"{suite / 'tasks' / 't1' / 'task.toml'}:6: environment.tests" in err
    assert "Traceback" not in err


def test_table_line_finds_inline_tables_and_keys(tmp_path: Path) -> None:
    toml = tmp_path / "task.toml"
    toml.write_text('id = "t"\nenvironment = { image = "a" }\n')
    assert table_line(toml) == 2 and table_line(toml, "image") == 2
    toml.write_text('id = "t"\n[environment]  # where\n\nimage = "a"\n[other]\nimage = "b"\n')
    assert table_line(toml) == 2 and table_line(toml, "image") == 4 and table_line(toml, "tests") == 2
    assert table_line(tmp_path / "missing.toml") == 1
