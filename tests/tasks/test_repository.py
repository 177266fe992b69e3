"""The [repository] table of a test_runner = "repository" task: loading and one problem per bad key."""

from __future__ import annotations

from pathlib import Path

import pytest

from reliabench.errors import SuiteError
from reliabench.tasks.suite import load_suite

TOML = """id = "t1"
language = "python"
test_runner = "repository"
timeout_s = 900

[repository]
source = "repo"
base_commit = "{commit}"
test_patch = "test.patch"
test_command = ["pytest", "-rA", "tests/test_x.py"]
log_parser = "pytest"
fail_to_pass = ["tests/test_x.py::test_new"]
pass_to_pass = ["tests/test_x.py::test_old"]

[repository.environment]
python = "3.11"
packages = ["pytest==7.4.4"]
install = ["python", "-m", "pip", "install", "--no-deps", "-e", "."]
"""
PATCH = "diff --git a/tests/test_x.py b/tests/test_x.py\n--- a/tests/test_x.py\n+++ b/tests/test_x.py\n@@ -1 +1 @@\n-a\n+b\n"


def _suite(tmp: Path, toml: str = TOML, patch: str = PATCH) -> Path:
    t = tmp / "s" / "tasks" / "t1"
    (t / "repo").mkdir(parents=True)
    (tmp / "s" / "suite.toml").write_text('name = "s"\nversion = "1"\n')
    (t / "task.toml").write_text(toml.replace("{commit}", "a" * 40))
    (t / "prompt.md").write_text("Fix it.\n")
    (t / "test.patch").write_text(patch)
    return tmp / "s"


def test_loads_without_workspace_or_tests_folder(tmp_path: Path) -> None:
    task = load_suite(_suite(tmp_path)).tasks[0]
    cfg = task.repository
    assert task.test_runner == "repository" and cfg is not None
    assert cfg.workdir == "/testbed" and cfg.base_commit == "a" * 40 and cfg.gold_patch is None
    assert cfg.fail_to_pass == ("tests/test_x.py::test_new",) and cfg.environment.packages == (
        "pytest==7.4.4",
    )


@pytest.mark.parametrize(
    ("old", "new", "problem"),
    [
        ('base_commit = "{commit}"', 'base_commit = "HEAD"', "base_commit: expected 40 lowercase hex digits"),
        ('log_parser = "pytest"', 'log_parser = "nose"', "log_parser: expected one of"),
        (
            'test_command = ["pytest", "-rA", "tests/test_x.py"]',
            "test_command = []",
            "test_command: expected",
        ),
        ('source = "repo"', 'source = "../elsewhere"', "must lie inside the task folder"),
        ('source = "repo"', 'source = "nope.tar.gz"', "is missing"),
        ('python = "3.11"', 'python = "three"', "python: expected a version"),
        ('packages = ["pytest==7.4.4"]', 'packages = ["-r requirements.txt"]', "is not a requirement"),
        ('fail_to_pass = ["tests/test_x.py::test_new"]', "fail_to_pass = []", "fail_to_pass: empty"),
        ("timeout_s = 900", "timeout_s = 900\n[repository.extra]", "extra: unknown key"),
    ],
)
def test_each_problem_is_named(tmp_path: Path, old: str, new: str, problem: str) -> None:
    assert old in TOML
    with pytest.raises(SuiteError, match=problem) as info:
        load_suite(_suite(tmp_path, TOML.replace(old, new)))
    assert "task.toml" in str(info.value) or "repository" in str(info.value)


def test_a_test_patch_writing_outside_is_refused_at_load(tmp_path: Path) -> None:
    evil = PATCH.replace("tests/test_x.py", "../../etc/cron.d/x")
    with pytest.raises(SuiteError, match="refusing the path"):
        load_suite(_suite(tmp_path, patch=evil))
