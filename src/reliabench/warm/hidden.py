"""Hidden tests on a warm worker: the glue between :mod:`reliabench.hidden_tests.fresh` and the servers.

:class:`WarmTests` is what :func:`reliabench.hidden_tests.fresh.run_hidden_tests` and
:func:`~reliabench.hidden_tests.fresh.collect_hidden_tests` take as ``worker``: the same staging, the same
signed channel and the same parsing as the fresh-process path, only the process that runs the
tests differs (a jailed fork of a warm server instead of a new sandboxed interpreter).
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import logging
import os
import shutil
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

from reliabench.errors import InvalidArgumentError, SandboxError
from reliabench.hidden_tests.channel import parse_channel
from reliabench.hidden_tests.staging import RawRun, pytest_command, staged
from reliabench.meta_keys import TestPath, TestRunner
from reliabench.sandbox import Limits
from reliabench.warm.client import TEST_PATHS, WarmWorkers, new_key

__all__ = ["WarmTests", "open_test_workers", "probe_round_trip", "warm_unavailable_reason"]

logger = logging.getLogger(__name__)


class WarmTests:
    """Runs hidden tests on warm workers (one server per slot); close() stops the servers.

    Args:
        workers: The servers to use (default: a new :class:`WarmWorkers`).
        own: Close ``workers`` in :meth:`close` (default: only when they were made here).
    """

    path: TestPath = "warm"

    def __init__(self, workers: WarmWorkers | None = None, *, own: bool | None = None) -> None:
        self._own = workers is None if own is None else own
        self.workers = workers or WarmWorkers()
        self._staged: dict[tuple[str, int], tuple[tuple[tuple[str, int, int], ...], Path,
                                                  contextlib.ExitStack]] = {}
        self._lock = threading.Lock()
        # root-owned (0711): a sweep of the slot uid's files in /tmp (the namespaces backend's,
        # after an agent phase) does not see the staged copies kept for the whole run
        self._stage_root = Path(tempfile.mkdtemp(prefix="rb-warm-stage-"))
        os.chmod(self._stage_root, 0o711)

    def __enter__(self) -> WarmTests:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Remove the staged tests; stop the servers if this object started them."""
        with self._lock:
            staged = list(self._staged.values())
            self._staged.clear()
        for _, _, stack in staged:
            stack.close()
        shutil.rmtree(self._stage_root, ignore_errors=True)
        if self._own:
            self.workers.close()

    def _staging(self, tests_dir: Path, slot: int) -> Path:
        """The slot's staged copy of ``tests_dir``, made once and reused while it is unchanged.

        Reuse is safe: the copy is bound read-only into every jail and no rollout can reach
        its host path, so nothing of one rollout can change what the next one runs.
        """
        real = os.path.realpath(tests_dir)
        stamp = tuple(sorted(
            (os.path.join(d, f), st.st_size, st.st_mtime_ns)
            for d, _, files in os.walk(real) for f in files
            for st in (os.stat(os.path.join(d, f)),)
        ))
        key = (real, slot)
        with self._lock:
            hit = self._staged.get(key)
            if hit is not None and hit[0] == stamp and hit[1].is_dir():
                return hit[1]
            stack = contextlib.ExitStack()
            staging = stack.enter_context(staged(Path(real), slot, self._stage_root))
            self._staged[key] = (stamp, staging, stack)
        if hit is not None:
            hit[2].close()
        return staging

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
        staging = self._staging(Path(tests_dir), slot)
        args = pytest_command("python", staging, extra)[5:]
        raw = self.workers.run_raw(workspace, staging, runner=runner, pytest_args=args,
                                   key=key, limits=limits, slot=slot, order_seed=order_seed)
        return RawRun(raw.result, parse_channel(raw.channel, key, expected))


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
