"""Hidden tests on a warm worker: a hidden-test runner (:mod:`reliabench.hidden_tests.layer`) on the servers.

:class:`WarmTests` implements :class:`~reliabench.hidden_tests.layer.HiddenTestRunner` for
tasks that run on the host: the same staging, the same signed channel, the same parsing and
judging (:func:`reliabench.hidden_tests.judging.judge_hidden_tests`) as the fresh-process
path; only the process that runs the tests differs (a jailed fork of a warm server instead
of a new sandboxed interpreter), and ``test_runner = "plain"`` tasks run with the lean
runner. The warm jail is its own environment: a request's ``open_environment`` is not used.
This package imports :mod:`reliabench.hidden_tests`, never the other way round.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from reliabench.errors import InvalidArgumentError, SandboxError
from reliabench.hidden_tests.channel import parse_channel
from reliabench.hidden_tests.judging import (
    HiddenTestRun,
    RawTestRunner,
    collected_tests,
    copy_of_starter,
    judge_hidden_tests,
)
from reliabench.hidden_tests.layer import EnvironmentOpener, TestRequest
from reliabench.hidden_tests.staging import RawRun, pytest_command, staged, unneeded_plugins
from reliabench.meta_keys import TestPath, TestRunner
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits
from reliabench.warm.client import TEST_PATHS, WarmWorkers, new_key
from reliabench.warm.plain_tests import collect_plain_tests

if TYPE_CHECKING:
    from reliabench.tasks.suite import Task

__all__ = [
    "WarmTests",
    "collect_warm_tests",
    "open_test_workers",
    "probe_round_trip",
    "run_warm_tests",
    "warm_unavailable_reason",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class _Staged:
    """A slot's staged copy of a task's tests, kept while its source is unchanged."""

    stamp: tuple[tuple[str, int, int], ...]
    path: Path
    stack: contextlib.ExitStack
    imports_pytest: bool
    unneeded: tuple[str, ...]


_IMPORTS_PYTEST = re.compile(rb"^[ \t]*(?:import|from)[ \t]+_?pytest\b", re.MULTILINE)


def _imports_pytest(tests: Path) -> bool:
    """Whether a staged test file imports pytest (the warm server then imports it before forking)."""
    for dirpath, _dirs, files in os.walk(tests):
        for name in files:
            if name.endswith(".py"):
                with contextlib.suppress(OSError), open(os.path.join(dirpath, name), "rb") as fh:
                    if _IMPORTS_PYTEST.search(fh.read()):
                        return True
    return False


def _stamp(root: str) -> tuple[tuple[str, int, int], ...]:
    """Path, size and modification time of every file under ``root`` (what a staging copied)."""
    out: list[tuple[str, int, int]] = []
    todo = [root]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    todo.append(entry.path)
                else:
                    st = entry.stat()
                    out.append((entry.path, st.st_size, st.st_mtime_ns))
    out.sort()
    return tuple(out)


class WarmTests:
    """Runs hidden tests on warm workers (one server per slot); a hidden-test runner.

    ``close()`` removes the staged copies and stops the servers it owns.

    Args:
        workers: The servers to use (default: a new :class:`WarmWorkers`).
        own: Close ``workers`` in :meth:`close` (default: only when they were made here).
    """

    path: TestPath = "warm"

    def __init__(self, workers: WarmWorkers | None = None, *, own: bool | None = None) -> None:
        self._own = workers is None if own is None else own
        self.workers = workers or WarmWorkers()
        self._staged: dict[str, _Staged] = {}
        self._retired: list[_Staged] = []
        self._real: dict[str, str] = {}
        self._lock = threading.Lock()
        # root's alone (0700): no process of the host but root reaches the staged copies, which
        # every slot's jail gets bound read-only at their own path (the server binds them as
        # root, before the rollout drops to its slot uid); a sweep of a slot uid's files in
        # /tmp (the namespaces backend's, after an agent phase) does not see them either
        self._stage_root = Path(tempfile.mkdtemp(prefix="rb-warm-stage-"))
        os.chmod(self._stage_root, 0o700)

    def __enter__(self) -> WarmTests:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the staged tests; stop the servers if this object started them."""
        with self._lock:
            staged = [*self._staged.values(), *self._retired]
            self._staged.clear()
            self._retired.clear()
        for made in staged:
            made.stack.close()
        shutil.rmtree(self._stage_root, ignore_errors=True)
        if self._own:
            self.workers.close()

    def _staging(self, tests_dir: Path, slot: int, *, rewrite: bool = True) -> _Staged:
        """The staged copy of ``tests_dir``, made once for every slot and reused while it is unchanged.

        Reuse is safe: the copy is bound read-only into every jail and no rollout can reach
        its host path (below the root-only stage folder), so nothing of one rollout can change
        what the next one runs, in its slot or another. The copy is made in the first
        requesting slot's name (:func:`staged`), then opened to every slot uid (0755: only
        ever seen inside a jail). A copy made for the lean runner (``rewrite`` False) has no
        pytest bytecode: pytest, when it runs there (a collection), compiles what it imports
        itself. A copy whose source changed is replaced; the old one stays until
        :meth:`close` (another slot's rollout may still run on it).
        """
        real = self._real.get(str(tests_dir))
        if real is None:
            real = self._real.setdefault(str(tests_dir), os.path.realpath(tests_dir))
        stamp = _stamp(real)
        with self._lock:
            hit = self._staged.get(real)
            if hit is not None and hit.stamp == stamp and os.path.isdir(hit.path):
                return hit
            stack = contextlib.ExitStack()
            path = stack.enter_context(staged(Path(real), slot, self._stage_root, rewrite=rewrite))
            os.chown(path, 0, 0)
            os.chmod(path, 0o755)  # every slot's jail reads it; the host's other users cannot reach it
            made = _Staged(stamp, path, stack, _imports_pytest(path / "tests"),
                           unneeded_plugins(path / "tests"))
            self._staged[real] = made
            if hit is not None:
                self._retired.append(hit)
        return made

    def run_tests(
        self,
        workspace: Path,
        tests_dir: Path,
        *,
        limits: Limits,
        slot: int,
        extra: Sequence[str],
        expected: set[str] | None,
        test_runner: TestRunner = "pytest",
        order_seed: int | None = None,
    ) -> RawRun:
        """Stage ``tests_dir``, run it on ``workspace`` in the slot's warm worker, parse the channel.

        ``test_runner`` ``plain`` uses the lean runner (not with ``extra`` arguments, which
        are pytest's); anything else runs pytest in the warm fork. ``order_seed`` (re-tests)
        runs the tests in a seeded random order, on either runner.

        Raises:
            SandboxError: The workspace is not a directory, or the worker failed twice.
        """
        workspace = Path(os.path.realpath(workspace))
        if not workspace.is_dir():
            raise SandboxError(f"workspace is not a directory: {workspace}")
        runner = "plain" if test_runner == "plain" and not extra else "pytest"
        key = new_key()
        made = self._staging(Path(tests_dir), slot, rewrite=runner == "pytest")
        args = pytest_command("python", made.path, extra, made.unneeded)[5:]
        raw = self.workers.run_raw(workspace, made.path, runner=runner, pytest_args=args,
                                   key=key, limits=limits, slot=slot, order_seed=order_seed,
                                   pytest=runner == "pytest" or made.imports_pytest)
        return RawRun(raw.result, parse_channel(raw.channel, key, expected))

    def raw_runner(self, tests_dir: Path, *, workspace: Path, slot: int, limits: Limits,
                   test_runner: TestRunner) -> RawTestRunner:
        """The one raw run of ``tests_dir`` on ``workspace`` (or another) in the slot's warm worker."""
        rollout_ws = workspace

        def raw(workspace: Path | None, *, collect_only: bool, expected: set[str] | None,
                order_seed: int | None) -> RawRun:
            target = workspace if workspace is not None else rollout_ws
            extra = ["--collect-only"] if collect_only else []
            return self.run_tests(target, tests_dir, limits=limits, slot=slot, extra=extra,
                                  expected=expected, test_runner=test_runner, order_seed=order_seed)

        return raw

    def collect(self, task: Task, open_environment: EnvironmentOpener, *, starter: Path,
                limits: Limits, slot: int) -> tuple[TestOutcome, ...]:
        """The task's expected tests: read from the source (plain) or collected on a starter copy.

        Raises:
            SuiteError: The tests cannot be collected on the starter.
            SandboxError: The worker failed.
        """
        if task.test_runner == "plain":
            return collect_plain_tests(task.tests_dir)
        with copy_of_starter(starter) as ws:
            raw = self.raw_runner(task.tests_dir, workspace=ws, slot=slot, limits=limits,
                                  test_runner="pytest")
            run = raw(None, collect_only=True, expected=None, order_seed=None)
        return collected_tests(run, task.tests_dir)

    def run(self, request: TestRequest) -> HiddenTestRun:
        """Run one rollout's hidden tests in the slot's warm worker (pytest, or the lean runner).

        Raises:
            SandboxError: The worker failed twice (the harness's failure).
        """
        task = request.task
        raw = self.raw_runner(task.tests_dir, workspace=request.workspace, slot=request.slot,
                              limits=request.limits, test_runner=task.test_runner)
        return judge_hidden_tests(raw, workspace=request.workspace, tests_dir=task.tests_dir,
                                  expected=request.expected, wall_s=request.limits.wall_s,
                                  starter=request.starter, order_seed=request.order_seed,
                                  allowed_skips=request.allowed_skips)


def run_warm_tests(warm: WarmTests, workspace: Path, tests_dir: Path, *,
                   expected: Sequence[TestOutcome | str] | None, limits: Limits | None = None,
                   slot: int = 0, starter: Path | None = None, order_seed: int | None = None,
                   test_runner: TestRunner = "pytest", allowed_skips: Collection[str] = ()) -> HiddenTestRun:
    """Run hidden tests on a warm worker in one call (``run_hidden_tests`` of the warm path).

    ``test_runner`` ``plain`` runs them with the lean runner. See
    :func:`reliabench.hidden_tests.judging.judge_hidden_tests` for the arguments.

    Raises:
        SandboxError: The worker failed twice (the harness's failure).
    """
    lim = limits or Limits()
    raw = warm.raw_runner(Path(tests_dir), workspace=Path(workspace), slot=slot, limits=lim,
                          test_runner=test_runner)
    return judge_hidden_tests(raw, workspace=Path(workspace), tests_dir=Path(tests_dir), expected=expected,
                              wall_s=lim.wall_s, starter=starter, order_seed=order_seed,
                              allowed_skips=allowed_skips)


def collect_warm_tests(warm: WarmTests, workspace: Path, tests_dir: Path, *, limits: Limits | None = None,
                       slot: int = 0) -> tuple[TestOutcome, ...]:
    """Collect hidden tests with pytest on a warm worker (``workspace`` is lent to the slot uid).

    Raises:
        SuiteError: The tests cannot be collected.
        SandboxError: The worker failed twice.
    """
    raw = warm.raw_runner(Path(tests_dir), workspace=Path(workspace), slot=slot, limits=limits or Limits(),
                          test_runner="pytest")
    return collected_tests(raw(None, collect_only=True, expected=None, order_seed=None), Path(tests_dir))


_spare: list[WarmWorkers] = []
_spare_lock = threading.Lock()


def _close_spare() -> None:
    while (spare := _take_spare()) is not None:
        spare.close()


atexit.register(_close_spare)


def _take_spare() -> WarmWorkers | None:
    """The probe's servers (slot 0 already warm), once; None after that."""
    with _spare_lock:
        return _spare.pop() if _spare else None


def probe_round_trip() -> str | None:
    """Run one trivial plain test on a warm worker; return why it failed, or None.

    The probe's server (slot 0) is kept for the first run that opens test workers.
    """
    base = Path(tempfile.mkdtemp(prefix="rb-warm-probe-"))
    try:
        os.chmod(base, 0o711)
        ws = base / "ws"
        tests = base / "tests"
        ws.mkdir()
        tests.mkdir()
        # importing standard modules the server has not imported checks that the slot uid can
        # read the interpreter's files inside the jail (a prefix under a 0700 directory cannot)
        (tests / "test_probe.py").write_text(
            "def test_probe():\n    import colorsys, wave\n    assert colorsys and wave\n",
            encoding="utf-8")
        workers = WarmWorkers()
        with WarmTests(workers, own=False) as warm:
            raw = warm.run_tests(ws, tests, limits=Limits(wall_s=30.0), slot=0, extra=[],
                                 expected={"test_probe.py::test_probe"}, test_runner="plain")
        if raw.channel.tests.get("test_probe.py::test_probe", ("failed", False))[0] == "passed":
            with _spare_lock:
                _spare.append(workers)
        else:
            workers.close()
        if raw.channel.tests.get("test_probe.py::test_probe", ("failed", False))[0] != "passed":
            detail = (raw.result.stderr or raw.result.stdout).strip().splitlines()[-3:]
            return f"warm test worker probe failed: {' | '.join(detail) or raw.result.returncode}"
        return None
    except SandboxError as exc:
        return str(exc)
    finally:
        shutil.rmtree(base, ignore_errors=True)


@functools.cache
def warm_unavailable_reason() -> str | None:
    """Why warm test workers cannot run here, or None when a jailed round trip works.

    Probed once per process: root, ``pidfd_open``, and one plain test run in a jail.
    """
    if os.geteuid() != 0:
        return "warm test workers need root (unprivileged user namespaces are not used yet)"
    try:
        return probe_round_trip()
    except (SandboxError, OSError) as exc:
        return str(exc)


def open_test_workers(choice: str) -> WarmTests | None:
    """The test workers of a run: warm servers, or None for fresh sandboxed processes.

    Args:
        choice: ``auto`` (warm where :func:`warm_unavailable_reason`
            says it works, else fresh), ``warm`` (warm or an error) or ``fresh``.

    Returns:
        A :class:`WarmTests` to close after the run, or None.

    Raises:
        InvalidArgumentError: ``choice`` is not one of :data:`~reliabench.warm.client.TEST_PATHS`.
        SandboxError: ``warm`` was asked for and does not work here.
    """
    if choice not in TEST_PATHS:
        raise InvalidArgumentError(
            f"test_workers must be one of {', '.join(TEST_PATHS)}, got {choice!r}")
    if choice == "fresh":
        return None
    why = warm_unavailable_reason()
    if why is None:
        return WarmTests(_take_spare(), own=True)
    if choice == "warm":
        raise SandboxError(f"warm test workers are not available here: {why}")
    logger.info("warm test workers unavailable, using fresh sandboxed processes: %s", why)
    return None
