"""``reliabench validate`` (reliabench.commands.validate): exit 0 when every task is valid, 1 otherwise.

What a valid task is (the reference passes, the starter fails, insecure variants are caught) is
tested on the bundled suite in tests/test_bundled_suite.py; here: the command's table, problems
and exit codes.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip
from test_run_e2e import make_suite

from reliabench.cli import main


@pytest.fixture
def suite(tmp_path: Path) -> Path:
    backend_or_skip("bubblewrap")
    os.chmod(tmp_path, 0o755)
    return make_suite(tmp_path)


def test_a_valid_suite_exits_0(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(suite), "--workers", "1", "--sandbox", "bubblewrap"]) == 0
    captured = capsys.readouterr()
    assert "adder" in captured.out and "ok" in captured.out
    assert "1/1 task(s) valid; isolation: bubblewrap" in " ".join(captured.err.split())
    assert "problem:" not in captured.err


def test_a_starter_that_already_passes_exits_1_with_the_problem(suite: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    task = suite / "tasks" / "adder"
    shutil.copy(task / "solution" / "adder.py", task / "workspace" / "adder.py")  # nothing left to do
    assert main(["validate", str(suite), "--workers", "1", "--sandbox", "bubblewrap"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert "problem:" in err and "adder" in err
    assert "0/1 task(s) valid" in err


def test_a_reference_that_fails_exits_1(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    task = suite / "tasks" / "adder"
    (task / "solution" / "adder.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    assert main(["validate", str(suite), "--workers", "1", "--sandbox", "bubblewrap"]) == 1
    assert "problem:" in capsys.readouterr().err


def test_task_selection_and_usage_errors(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(suite), "--task", "adder", "--workers", "1", "--sandbox", "bubblewrap"]) == 0
    capsys.readouterr()
    assert main(["validate", str(suite), "--task", "nope", "--sandbox", "bubblewrap"]) == 2
    assert "nope" in capsys.readouterr().err
    assert main(["validate", str(suite.parent / "missing-suite")]) == 2
    err = capsys.readouterr().err
    assert "missing-suite" in err and "Traceback" not in err
    assert main(["validate", str(suite), "--workers", "0"]) == 2


def _skip_zero(suite: Path, allowed: str | None) -> Path:
    """The task's own test_zero skips; ``allowed`` is its ``allowed_skips`` line (None: none)."""
    task = suite / "tasks" / "adder"
    test_file = task / "tests" / "test_adder.py"
    test_file.write_text(test_file.read_text().replace(
        "def test_zero():\n", "def test_zero():\n    pytest.skip('needs a GPU')\n"))
    toml = task / "task.toml"
    if allowed is not None:
        toml.write_text(toml.read_text() + allowed + "\n")
    return toml


def test_a_skip_the_reference_takes_must_be_declared(suite: Path, capsys: pytest.CaptureFixture[str]) -> None:
    toml = _skip_zero(suite, None)
    assert main(["validate", str(suite), "--workers", "1", "--sandbox", "bubblewrap"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert (f"{toml}: the reference skips or xfails 1 hidden test(s) the task does not declare "
            "(test_adder.py::test_zero)") in " ".join(err.split())
    assert 'add to task.toml: allowed_skips = ["test_adder.py::test_zero"]' in err
    assert "reference fails" not in err  # said once, as what to declare
    # declared as validate says: valid, and the skip counts neither way
    toml.write_text(toml.read_text() + 'allowed_skips = ["test_adder.py::test_zero"]\n')
    assert main(["validate", str(suite), "--workers", "1", "--sandbox", "bubblewrap"]) == 0
    assert "problem:" not in capsys.readouterr().err


def test_a_declared_skip_the_reference_does_not_take_is_a_problem(suite: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    toml = suite / "tasks" / "adder" / "task.toml"
    toml.write_text(toml.read_text() + 'allowed_skips = ["test_adder.py::test_small", "test_adder.py::nope"]\n')
    assert main(["validate", str(suite), "--workers", "1", "--sandbox", "bubblewrap"]) == 1
    err = " ".join(capsys.readouterr().err.split())
    assert f"{toml}: allowed_skips: 'test_adder.py::nope' names no hidden test" in err
    assert (f"{toml}: allowed_skips: the reference does not skip test_adder.py::test_small, "
            "test_adder.py::nope; remove it (a declared skip lets any rollout skip that test)") in err
