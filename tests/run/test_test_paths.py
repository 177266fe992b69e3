"""Each task's hidden-test runner, chosen once per run from the task and --test-workers."""

from __future__ import annotations

from pathlib import Path

import pytest
from suite_helpers import one_task_suite

from reliabench.errors import InvalidArgumentError, SandboxError
from reliabench.hidden_tests.fresh import FreshPytest
from reliabench.hidden_tests.stdio import StdioCases
from reliabench.run.test_paths import TestPaths
from reliabench.sandbox.base import Limits
from reliabench.tasks.suite import Suite, load_suite


class _Warm:
    """Stands in for the warm workers (a runner whose path is warm)."""

    path = "warm"
    closed = 0

    def close(self) -> None:
        self.closed += 1


def _suite(tmp_path: Path) -> Suite:
    suite = one_task_suite(tmp_path, {"a.py": "x = 1\n"}, {"test_a.py": "def test_a():\n    pass\n"},
                           task_id="pytest")
    for tid, extra in (("plain", 'test_runner = "plain"\n'), ("boxed", '[environment]\nimage = "x:1"\n')):
        one_task_suite(tmp_path, {"a.py": "x = 1\n"}, {"test_a.py": "def test_a():\n    pass\n"}, task_id=tid)
        toml = suite / "tasks" / tid / "task.toml"
        toml.write_text(toml.read_text() + extra)
    one_task_suite(tmp_path, {"s.py": "print(1)\n"}, {"one.in": "", "one.out": "1\n"}, task_id="io")
    toml = suite / "tasks" / "io" / "task.toml"
    toml.write_text(toml.read_text() + 'test_runner = "stdio"\n[stdio]\nprogram = "s.py"\n')
    return load_suite(suite)


def test_without_warm_workers_every_pytest_task_runs_fresh(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    paths = TestPaths()
    assert isinstance(paths.for_task(suite.task("pytest")), FreshPytest)
    assert paths.for_task(suite.task("plain")) is paths.for_task(suite.task("boxed"))
    assert isinstance(paths.for_task(suite.task("io")), StdioCases)
    assert [(paths.test_path(t), paths.test_runner(t)) for t in suite.tasks] == [
        ("fresh", "pytest"), ("stdio", "stdio"), ("fresh", "pytest"), ("fresh", "pytest")]
    assert paths.host_path == "fresh"


def test_warm_workers_take_host_tasks_never_image_tasks(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    warm = _Warm()
    paths = TestPaths(warm)  # type: ignore[arg-type]
    assert paths.for_task(suite.task("pytest")) is warm and paths.for_task(suite.task("plain")) is warm
    assert isinstance(paths.for_task(suite.task("boxed")), FreshPytest)  # no warm jail in an image
    assert [(t.id, paths.test_path(t), paths.test_runner(t)) for t in suite.tasks] == [
        ("boxed", "fresh", "pytest"), ("io", "stdio", "stdio"), ("plain", "warm", "plain"),
        ("pytest", "warm", "pytest")]
    assert paths.for_path("warm", suite.task("pytest")) is warm
    paths.close()
    paths.close()
    assert warm.closed == 1 and paths.warm is None


def test_a_retest_takes_its_rollouts_path_or_refuses(tmp_path: Path) -> None:
    suite = _suite(tmp_path)
    paths = TestPaths()
    assert isinstance(paths.for_path("fresh", suite.task("pytest")), FreshPytest)
    assert isinstance(paths.for_path("stdio", suite.task("io")), StdioCases)
    with pytest.raises(SandboxError, match="ran on warm test workers, which are not available here"):
        paths.for_path("warm", suite.task("pytest"))


def test_test_workers_keep_their_meaning() -> None:
    with pytest.raises(InvalidArgumentError, match="test_workers must be one of auto, warm, fresh, got 'hot'"):
        TestPaths.open("hot")
    assert TestPaths.open("fresh").warm is None


class _Unreachable:
    """A backend whose slot uid cannot start the harness from here."""

    name = "namespaces"

    def __init__(self) -> None:
        self.asked: list[tuple[str, tuple[str, ...]]] = []

    def harness_problem(self, python: str, modules: tuple[str, ...]) -> str | None:
        self.asked.append((python, tuple(modules)))
        return "uid 61000 cannot reach the interpreter /x/.venv/bin/python (/x is not accessible to it): ..."


def test_a_harness_the_slot_uid_cannot_start_refuses_the_run(tmp_path: Path) -> None:
    import sys

    from reliabench.errors import PreflightError
    from reliabench.run.test_paths import check_harness
    from reliabench.sandbox import HOST, PreparedSpec
    from reliabench.sandbox.choice import TaskEnvironment

    suite = _suite(tmp_path)
    backend = _Unreachable()
    where = {t.id: TaskEnvironment(backend, PreparedSpec(HOST, "namespaces")) for t in suite.tasks}  # type: ignore[arg-type]
    with pytest.raises(PreflightError) as info:
        check_harness([suite.task("pytest")], where, "fresh")
    assert str(info.value) == ("the test harness cannot start as the slot uid (namespaces backend): uid 61000 "
                               "cannot reach the interpreter /x/.venv/bin/python (/x is not accessible to it): ...")
    assert backend.asked == [(sys.executable, ("pytest",))]
    with pytest.raises(PreflightError):  # stdio programs run in the backend whatever the test workers
        check_harness([suite.task("io")], where, "warm")
    assert backend.asked[-1] == (sys.executable, ())
    check_harness([suite.task("pytest"), suite.task("boxed")], where, "warm")  # warm jail; an image


def test_harness_unreachable_names_the_private_folder(base: Path) -> None:
    import os

    from reliabench.sandbox.namespaces import harness_unreachable

    if os.geteuid() != 0:
        pytest.skip("checks another uid's view")
    private = base / "private"
    (private / "venv" / "bin").mkdir(parents=True)
    python = private / "venv" / "bin" / "python"
    python.write_text("")
    python.chmod(0o755)
    os.chmod(private, 0o700)
    why = harness_unreachable(str(python), 61000, ())
    assert why is not None and f"({private} is not accessible to it)" in why and "chmod o+x" in why
    os.chmod(private, 0o755)
    assert harness_unreachable(str(python), 61000, ()) is None


def test_repository_tasks_get_the_runs_one_repository_runner(tmp_path: Path) -> None:
    from repository_helpers import vendored_suite

    from reliabench.hidden_tests.repository import RepositoryTests
    from reliabench.run.test_paths import prepare_repositories

    repo_task = vendored_suite(tmp_path / "v").tasks[0]
    paths = TestPaths()
    runner = paths.for_task(repo_task)
    assert isinstance(runner, RepositoryTests) and runner is paths.repository
    assert (paths.test_path(repo_task), paths.test_runner(repo_task)) == ("repository", "repository")
    assert paths.for_path("repository", repo_task) is runner  # a re-test takes the same path
    suite = _suite(tmp_path)
    assert paths.starter(suite.task("pytest")) == suite.task("pytest").workspace_dir
    with pytest.raises(SandboxError, match="no environment was prepared for it"):
        runner.opener(repo_task, 0)  # builds start the task's own environment, which this run lacks
    paths.close()
    paths.close()
    # a run without repository tasks prepares nothing
    assert isinstance(prepare_repositories(list(suite.tasks), {}, limits=Limits()), RepositoryTests)
