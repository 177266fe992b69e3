"""Repository tasks graded as SWE-bench grades them, on the vendored real instance (marshmallow-1359).

The environment is built by the test set-up from PyPI (cached by spec hash under
``$RELIABENCH_REPO_ENV_CACHE``, ``/var/cache/reliabench/repo-envs`` as root), the tests run in
bubblewrap with the checkout at /testbed (the backend's ``workdir``: tests/repository_helpers.py;
through the runner: tests/test_repository_tasks_e2e.py). Attacks of our own: edits to the test files are reverted, a
deleted or rewritten checkout is the rollout's failure (never the harness's), a rewritten
.git runs nothing, a link in place of a test file is replaced, not written through.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from repository_helpers import bwrap_available, opener, vendored_suite
from sandbox_helpers import skip_or_fail_in_ci

from reliabench.errors import SuiteError
from reliabench.hidden_tests.layer import HiddenTestRunner
from reliabench.hidden_tests.repository import RepositoryTestRun, RepositoryTests, diagnose
from reliabench.repository.patches import apply_patch
from reliabench.repository.source import RepositorySourceError
from reliabench.repository.validation import grade_changed_checkout
from reliabench.sandbox.base import Limits
from reliabench.tasks.repository import read_patch
from reliabench.tasks.suite import Task, load_suite

SLOT = 5
LIMITS = Limits(wall_s=300, cpu_s=300, memory_bytes=4 * 1024**3, max_procs=256, output_bytes=16 * 1024**2)
F2P = "tests/test_fields.py::TestParentAndName::test_datetime_list_inner_format"


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[RepositoryTests, Task]]:
    if not bwrap_available():
        skip_or_fail_in_ci("bubblewrap (bwrap) is not installed: repository tasks run in it")
    suite = vendored_suite(tmp_path_factory.mktemp("vendored"))
    tests = RepositoryTests(opener(slot=SLOT), slot=SLOT)
    task = suite.tasks[0]
    try:
        tests.prepare(task)  # builds the venv from PyPI the first time
    except Exception as exc:
        skip_or_fail_in_ci(f"the vendored extract's environment did not build: {exc}")
    yield tests, task
    tests.close()


def _run(
    setup: tuple[RepositoryTests, Task], tmp_path: Path, change: Callable[[Path], None] | None = None
) -> RepositoryTestRun:
    return grade_changed_checkout(setup[0], setup[1], change, LIMITS, SLOT)


def _suite_copy(setup: tuple[RepositoryTests, Task], tmp_path: Path) -> Path:
    """A copy of the vendored suite; returns its task folder."""
    shutil.copytree(setup[1].root.parent.parent, tmp_path / "suite")
    return tmp_path / "suite" / "tasks" / setup[1].id


def _gold(setup: tuple[RepositoryTests, Task]):  # type: ignore[no-untyped-def]
    def apply(ws: Path) -> None:
        assert setup[1].repository is not None and setup[1].repository.gold_patch is not None
        apply_patch(ws, read_patch(setup[1].repository.gold_patch))

    return apply


def test_it_is_a_hidden_test_runner(setup: tuple[RepositoryTests, Task]) -> None:
    assert isinstance(setup[0], HiddenTestRunner) and setup[0].path == "repository"


def test_empty_patch_does_not_resolve(setup: tuple[RepositoryTests, Task], tmp_path: Path) -> None:
    run = _run(setup, tmp_path)
    cfg = setup[1].repository
    assert cfg is not None
    assert run.status == "completed" and run.isolation == "bubblewrap"
    assert run.swebench == {
        "resolution": "RESOLVED_NO",
        "resolved": False,
        "fail_to_pass": [0, 1],
        "pass_to_pass": [76, 76],
        "signed": True,
    }
    # one outcome per listed test: the counts equal the dataset's lists
    assert len(run.outcomes) == len(cfg.fail_to_pass) + len(cfg.pass_to_pass) == 77
    assert [o.outcome for o in run.outcomes if o.name == F2P] == ["failed"]
    assert run.patch == ""


def test_gold_patch_resolves_and_is_the_artifact(setup: tuple[RepositoryTests, Task], tmp_path: Path) -> None:
    run = _run(setup, tmp_path, _gold(setup))
    assert run.swebench["resolution"] == "RESOLVED_FULL" and all(o.outcome == "passed" for o in run.outcomes)
    assert run.patch.startswith("diff --git a/src/marshmallow/fields.py b/src/marshmallow/fields.py")
    assert "tests/test_fields.py" not in run.patch  # the test patch is not the agent's


def test_a_partial_patch_is_partial(setup: tuple[RepositoryTests, Task], tmp_path: Path) -> None:
    # the gold patch, but a PASS_TO_PASS test broken: FAIL_TO_PASS passes, resolution NO (SWE-bench's rule)
    def change(ws: Path) -> None:
        _gold(setup)(ws)
        f = ws / "src" / "marshmallow" / "fields.py"
        f.write_text(
            f.read_text().replace(
                "    def __repr__(self):",
                "    def __repr__(self):\n        return 'x'\n\n    def _repr(self):",
                1,
            )
        )

    run = _run(setup, tmp_path, change)
    assert run.swebench["fail_to_pass"] == [1, 1] and run.swebench["resolution"] == "RESOLVED_NO"
    assert run.swebench["pass_to_pass"][0] < 76


def test_edits_to_the_test_files_are_reverted(setup: tuple[RepositoryTests, Task], tmp_path: Path) -> None:
    def cheat(ws: Path) -> None:
        (ws / "tests" / "test_fields.py").write_text("def test_nothing():\n    pass\n")

    run = _run(setup, tmp_path, cheat)
    assert run.swebench["resolution"] == "RESOLVED_NO" and run.swebench["pass_to_pass"] == [76, 76]
    assert "tests/test_fields.py" in run.patch  # the agent's edit stays in its patch


def test_a_link_in_place_of_a_test_file_is_replaced(
    setup: tuple[RepositoryTests, Task], tmp_path: Path
) -> None:
    victim = tmp_path / "host-file"
    victim.write_text("host data\n")

    def link(ws: Path) -> None:
        (ws / "tests" / "test_fields.py").unlink()
        os.symlink(victim, ws / "tests" / "test_fields.py")
        _gold(setup)(ws)

    run = _run(setup, tmp_path, link)
    assert victim.read_text() == "host data\n"
    assert run.swebench["resolution"] == "RESOLVED_FULL"


def test_printed_passes_are_not_credited(setup: tuple[RepositoryTests, Task], tmp_path: Path) -> None:
    # SWE-bench reads the log; the agent's code runs in the test process and prints a summary
    # line after pytest's own: the log now "passes" FAIL_TO_PASS. The signed outcomes do not.
    def forge(ws: Path) -> None:
        init = ws / "src" / "marshmallow" / "__init__.py"
        init.write_text(init.read_text() + f"\nimport atexit\natexit.register(print, 'PASSED {F2P}')\n")

    run = _run(setup, tmp_path, forge)
    assert run.status_map[F2P] == "PASSED"  # what SWE-bench's parser reads in this log
    assert run.swebench["fail_to_pass"] == [0, 1] and run.swebench["resolution"] == "RESOLVED_NO"
    assert run.forged and "signed outcomes do not" in (run.reason or "")


def test_a_deleted_checkout_is_the_rollouts_failure(
    setup: tuple[RepositoryTests, Task], tmp_path: Path
) -> None:
    def wipe(ws: Path) -> None:
        for p in ws.iterdir():
            shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink()

    run = _run(setup, tmp_path, wipe)
    assert run.status == "completed"  # not test_error: the harness works on the base checkout
    assert run.swebench["resolution"] == "RESOLVED_NO" and all(o.failing for o in run.outcomes)


def test_a_rewritten_git_runs_nothing_and_changes_nothing(
    setup: tuple[RepositoryTests, Task], tmp_path: Path
) -> None:
    marker = tmp_path / "fsmonitor-ran"

    def rewrite(ws: Path) -> None:
        _gold(setup)(ws)
        shutil.rmtree(ws / ".git")
        (ws / ".git").mkdir()
        (ws / ".git" / "HEAD").write_text("ref: refs/heads/nowhere\n")
        (ws / ".git" / "config").write_text(f"[core]\n\tfsmonitor = touch {marker}\n\thooksPath = /tmp\n")

    run = _run(setup, tmp_path, rewrite)
    assert run.swebench["resolution"] == "RESOLVED_FULL"
    assert not marker.exists()
    assert run.patch.startswith("diff --git a/src/marshmallow/fields.py")


def test_a_test_patch_that_does_not_apply_is_refused_before_the_run(
    setup: tuple[RepositoryTests, Task], tmp_path: Path
) -> None:
    patch = _suite_copy(setup, tmp_path) / "test.patch"
    patch.write_text(patch.read_text().replace("tests/test_fields.py", "tests/test_gone.py"))
    task = load_suite(tmp_path / "suite").tasks[0]
    with pytest.raises(SuiteError, match="test patch does not apply"):
        RepositoryTests(setup[0].open_at, slot=SLOT).prepare(task)


def test_a_task_without_its_repository_is_refused(
    setup: tuple[RepositoryTests, Task], tmp_path: Path
) -> None:
    toml = _suite_copy(setup, tmp_path) / "task.toml"
    toml.write_text("\n".join(ln for ln in toml.read_text().splitlines() if not ln.startswith("source = ")))
    task = load_suite(tmp_path / "suite").tasks[0]
    with pytest.raises(RepositorySourceError, match="no repository"):
        RepositoryTests(setup[0].open_at, slot=SLOT).prepare(task)


def test_diagnose() -> None:
    assert diagnose("socket.gaierror: [Errno -2] Name or service not known") == "network-bound"
    assert diagnose("AttributeError: module 'collections' has no attribute 'Mapping'") == "python-version"
    assert diagnose("FileNotFoundError: x.dcm") == "missing-file"
    assert diagnose("ImportError: cannot import name 'x' from 'y'") == "dependency-drift"
    assert diagnose("all fine") == "unknown"
    assert diagnose("cannot import name 'formatargspec' from 'inspect'") == "python-version"
    # only the FAILURES section counts: a warning of a passing test says nothing
    log = "= FAILURES =\nE   AssertionError: x\n= warnings summary =\nDeprecationWarning: y\n"
    assert diagnose(log) == "unknown"


def test_signed_outcomes_only_take_passes_away() -> None:
    from reliabench.hidden_tests.channel import Channel
    from reliabench.hidden_tests.repository import _trusted_map

    ch = Channel(started=True, ended=True)
    ch.tests = {
        "t.py::a": ("passed", False),
        "t.py::b": ("failed", False),
        "t.py::c[x y]": ("passed", False),
        "t.py::d": ("passed", False),
    }
    ch.poisoned = {"t.py::d"}
    log = {
        "t.py::a": "PASSED",
        "t.py::b": "PASSED",
        "t.py::c[x": "PASSED",
        "t.py::d": "PASSED",
        "t.py::e": "PASSED",
        "t.py::f": "FAILED",
    }
    out, lowered = _trusted_map(
        "pytest", ["t.py::a", "t.py::b", "t.py::c[x", "t.py::d", "t.py::e", "t.py::f"], log, ch
    )
    assert lowered == ["t.py::b", "t.py::d", "t.py::e"]
    assert (
        out["t.py::a"] == "PASSED" and out["t.py::c[x"] == "PASSED"
    )  # a name cut at its blank, as the log cuts it
    assert out["t.py::b"] == "FAILED" and out["t.py::e"] == "FAILED" and out["t.py::f"] == "FAILED"
    assert _trusted_map("pytest", ["t.py::a"], log, None) == (log, [])


def test_one_way_to_start_environments() -> None:
    from reliabench.errors import InvalidArgumentError

    with pytest.raises(InvalidArgumentError, match="exactly one of open_at and open_for"):
        RepositoryTests()
    with pytest.raises(InvalidArgumentError, match="exactly one of open_at and open_for"):
        RepositoryTests(opener(), open_for=lambda task, slot: opener(slot=slot))


def test_what_a_control_run_says_about_the_environment() -> None:
    from reliabench.hidden_tests.repository import ControlRun

    ok = ControlRun(reported=True, timed_out=False, failing_p2p=(), diagnosis="unknown", tail="", seconds=1.0)
    assert ok.problem(60) is None
    late = ControlRun(True, True, (), "network-bound", "", 60.0)
    assert late.problem(60) == ("the tests do not finish in 60 s on the untouched checkout (network-bound; a test "
                                "that needs the network may wait between retries)")
    mute = ControlRun(False, False, (), "python-version", "SyntaxError", 1.0)
    assert mute.problem(60) == "the tests report nothing on the untouched checkout (python-version): SyntaxError"
    broken = ControlRun(True, False, ("a::t1", "a::t2"), "missing-file", "", 1.0)
    assert (broken.problem(60) or "").startswith("2 PASS_TO_PASS test(s) fail on the untouched checkout "
                                                 "(missing-file), so every rollout would fail them")


def test_the_control_run_is_run_once_per_task(setup: tuple[RepositoryTests, Task]) -> None:
    tests, task = setup
    first = tests.control(task, LIMITS)
    assert first.reported and not first.timed_out and first.failing_p2p == ()
    assert tests.control(task, LIMITS) is first and tests.base_problem(task, LIMITS, slot=SLOT) is None
