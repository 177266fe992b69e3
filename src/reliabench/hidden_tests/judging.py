"""From a raw run of the hidden tests to one trustworthy outcome per expected test.

Every way of running the tests through the outcome plugin -- a fresh pytest process in any
environment (:mod:`reliabench.hidden_tests.fresh`), pytest or the lean runner in a warm
worker's fork (:mod:`reliabench.warm.hidden`) -- produces a :class:`RawTestRunner` and hands
it to :func:`judge_hidden_tests`, which does the rest the same way for all of them:

1. the tamper scan of the workspace (:func:`reliabench.hidden_tests.tamper.find_tamper_files`);
2. the raw run, whose outcome channel was checked line by line
   (:func:`reliabench.hidden_tests.channel.parse_channel`): only lines with a valid MAC and
   sequence number, for expected test names, once each, consistent with the plugin's
   end-of-session line, are trusted. An expected test without a trusted outcome did not run:
   it counts as ``failed``. The exit code is never trusted;
3. skips and xfails the task does not declare are failures
   (:func:`reliabench.hidden_tests.skips.judge_skips`);
4. no start line: a control run of the same runner on a fresh copy of the untouched starter
   decides whether the harness is broken (``test_error``, the runner's ``infra_error``) or
   this workspace stopped it (a failed rollout).

:func:`collected_tests` turns a ``--collect-only`` raw run into the expected tests.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final, Literal, Protocol, TypeAlias

from reliabench.errors import SandboxError, SuiteError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.skips import ReportedOutcome, judge_skips
from reliabench.hidden_tests.staging import RawRun
from reliabench.hidden_tests.tamper import find_tamper_files
from reliabench.records import Isolation, TestOutcome
from reliabench.sandbox.base import SandboxResult

__all__ = [
    "HiddenTestRun",
    "HiddenTestStatus",
    "RawTestRunner",
    "collected_tests",
    "copy_of_starter",
    "judge_hidden_tests",
    "log_of",
]

HiddenTestStatus: TypeAlias = Literal["completed", "timeout", "test_error"]
"""How a run of hidden tests ended (``HiddenTestRun.status``); the same words as the rollout
statuses (:data:`reliabench.records.RolloutStatus`) they become."""

_LOG_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class HiddenTestRun:
    """The hidden-test outcome of one rollout (what every hidden-test runner returns).

    Attributes:
        outcomes: One outcome per expected test, in the order of ``expected`` (or, without
            it, of collection); a test without a trusted outcome is ``failed``.
        status: ``completed`` (pytest ran, whatever the tests did), ``timeout`` (the wall
            limit stopped it) or ``test_error`` (the harness could not run at all).
        reason: Why tests failed to run, forged lines seen, and the like; None if clean.
        tamper_suspected: The workspace holds files that try to change how tests run.
        tamper_files: Those files, relative to the workspace.
        forged: Outcome lines that were forged or inconsistent were seen.
        isolation: The sandbox level the tests ran under.
        seconds: Wall-clock seconds of the test process, sandbox included.
        log: pytest's output (stdout then stderr), truncated.
        undeclared_skips: Tests skipped or xfailed that the task does not declare: ``failed``
            in ``outcomes`` (:mod:`reliabench.hidden_tests.skips`).
    """

    outcomes: tuple[TestOutcome, ...]
    status: HiddenTestStatus
    reason: str | None
    tamper_suspected: bool
    tamper_files: tuple[str, ...]
    forged: bool
    isolation: Isolation
    seconds: float
    log: str
    undeclared_skips: tuple[str, ...] = ()


class RawTestRunner(Protocol):
    """Runs the staged hidden tests once on a workspace and returns the checked channel."""

    def __call__(self, workspace: Path | None, *, collect_only: bool, expected: set[str] | None,
                 order_seed: int | None) -> RawRun:
        """One run.

        Args:
            workspace: The host workspace to run on; None: the rollout's own.
            collect_only: Collect the tests without running them (pytest's ``--collect-only``).
            expected: The names whose outcome lines are trusted (None: any).
            order_seed: Run the tests in a seeded random order; None keeps the order.

        Raises:
            SandboxError: The environment could not be started (the harness's failure).
        """
        ...


def log_of(result: SandboxResult) -> str:
    """The test process's output for the record: stdout, then stderr, cut to 64 KiB."""
    log = result.stdout + (("\n--- stderr ---\n" + result.stderr) if result.stderr else "")
    if len(log) > _LOG_BYTES:
        log = log[: _LOG_BYTES // 2] + "\n[... log cut ...]\n" + log[-_LOG_BYTES // 2 :]
    return log


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:])


def collected_tests(raw: RawRun, tests_dir: Path) -> tuple[TestOutcome, ...]:
    """The expected tests of a task from a ``--collect-only`` run on its starter (trusted).

    Returns:
        One ``TestOutcome`` per collected test, in collection order, with its pytest node id
        relative to ``tests_dir``, its ``security`` flag, and the placeholder outcome
        ``"skipped"`` (nothing ran).

    Raises:
        SuiteError: Some test modules cannot be collected, or no test was found.
        SandboxError: The harness could not run pytest at all.
    """
    ch = raw.channel
    if not ch.started or ch.collected is None:
        raise SandboxError(
            f"could not collect the hidden tests in {tests_dir} "
            f"(exit status {raw.result.returncode}, {raw.result.isolation}): "
            f"{_tail(raw.result.stderr or raw.result.stdout)}"
        )
    if ch.collect_errors:
        raise SuiteError(
            f"{tests_dir}: cannot collect {name} on the starter workspace"
            for name in ch.collect_errors
        )
    if not ch.collected:
        raise SuiteError([f"{tests_dir}: no tests collected"])
    return tuple(TestOutcome(name, "skipped", sec) for name, sec in ch.collected)


@contextlib.contextmanager
def copy_of_starter(starter: Path) -> Iterator[Path]:
    """A fresh copy of the starter workspace (a runner lends a workspace to a slot uid: never the suite's)."""
    base = Path(tempfile.mkdtemp(prefix="rb-starter-"))
    try:
        os.chmod(base, 0o711)
        ws = base / "workspace"
        shutil.copytree(starter, ws, symlinks=True)
        os.chmod(ws, 0o755)
        yield ws
    finally:
        remove_tree(base)


def _harness_starts_on(starter: Path, raw_run: RawTestRunner) -> bool:
    """Whether the harness writes its start line on a fresh copy of the starter workspace.

    The control run that decides who is to blame for a missing start line: the plugin writes
    it before any module of the workspace is imported, so only two things can stop it -- the
    harness itself (the sandbox, the interpreter, pytest: ``infra``) or what the workspace
    holds or did to the channel (the rollout's own failure). Same runner (and so the same
    environment kind, slot, interpreter and limits), on the trusted starter files.
    """
    try:
        with copy_of_starter(starter) as ws:
            raw = raw_run(ws, collect_only=True, expected=None, order_seed=None)
        return raw.channel.started
    except (OSError, SandboxError):
        return False


def judge_hidden_tests(
    raw_run: RawTestRunner,
    *,
    workspace: Path,
    tests_dir: Path,
    expected: Sequence[TestOutcome | str] | None,
    wall_s: float,
    starter: Path | None = None,
    order_seed: int | None = None,
    allowed_skips: Collection[str] = (),
) -> HiddenTestRun:
    """Run the hidden tests once with ``raw_run`` and judge every expected test.

    Args:
        raw_run: The runner's one raw run (see the module docstring).
        workspace: The rollout's workspace on the host (scanned for tamper files).
        tests_dir: The task's hidden tests (their names are reserved in the workspace).
        expected: The expected tests; each gets exactly one outcome. None trusts this run's
            own collection (weaker).
        wall_s: The wall-time limit, for the reason of a timeout.
        starter: The untouched starter workspace: its files are not flagged, and a missing
            start line is judged with a control run on a copy of it.
        order_seed: Run the tests in a seeded random order (re-tests); None keeps the order.
        allowed_skips: The tests whose skip or xfail counts as ``skipped``.

    Returns:
        The outcomes and what was observed. Failures of the agent's code are outcomes.

    Raises:
        SandboxError: The environment could not be started (the harness's failure).
    """
    started = time.monotonic()
    tamper = find_tamper_files(Path(workspace), starter=starter, tests_dir=Path(tests_dir))
    exp_list: list[tuple[str, bool | None]] | None = None
    if expected is not None:
        exp_list = [
            (e.name, e.security) if isinstance(e, TestOutcome) else (str(e), None)
            for e in expected
        ]
    exp_names = None if exp_list is None else {name for name, _ in exp_list}
    raw = raw_run(None, collect_only=False, expected=exp_names, order_seed=order_seed)
    result, ch = raw.result, raw.channel
    reasons: list[str] = []
    if exp_list is None:
        if ch.collected is not None:
            exp_list = [(name, sec) for name, sec in ch.collected]
        else:
            exp_list = [(name, None) for name in ch.order]
    missing = [name for name, _ in exp_list if name not in ch.tests or name in ch.poisoned]
    forged = bool(ch.problems)
    if ch.started and not ch.ended and exp_list and not missing:
        # every test reported, yet the session never finished: not what a crash looks like
        forged = True
        ch.forge("every test reported an outcome but the session never ended")
        ch.poisoned.update(name for name, _ in exp_list)
    if ch.tamper:
        # a module planted under a hidden test's name (the guard removed it, but the tests
        # imported before may hold its functions): no outcome of this run can be trusted
        ch.poisoned.update(name for name, _ in exp_list)
    reported: list[tuple[str, ReportedOutcome, bool]] = []
    for name, sec in exp_list:
        line = ch.tests.get(name)
        security = sec if sec is not None else (line[1] if line else False)
        if line is None or name in ch.poisoned:
            reported.append((name, "failed", security))
        else:
            reported.append((name, line[0], security))
    judged = judge_skips(reported, allowed_skips)
    outcomes = judged.outcomes
    status: HiddenTestStatus
    if result.timed_out:
        status = "timeout"
        reasons.append(f"wall time limit of {wall_s:g} s reached")
    elif not ch.started:
        why = f"(exit status {result.returncode}): {_tail(result.stderr or result.stdout)}"
        if starter is not None and _harness_starts_on(Path(starter), raw_run):
            # the same harness starts on the untouched starter: this workspace stopped it
            status = "completed"
            reasons.append(f"the test harness did not start on this workspace {why}, but it "
                           "starts on the starter workspace: the rollout's files stopped it")
        else:
            status = "test_error"
            reasons.append(f"the test harness did not start {why}")
    else:
        status = "completed"
    if result.killed_reason and not result.timed_out:
        reasons.append(f"killed: {result.killed_reason}")
    if ch.started and not ch.ended and not result.timed_out:
        reasons.append(
            f"the test process ended before the session finished (exit status "
            f"{result.returncode}; a crash or os._exit in the tested code)"
        )
    if ch.collect_errors:
        reasons.append("collection errors: " + ", ".join(ch.collect_errors[:5]))
    failing = [o.name for o in outcomes if o.failing]
    if failing and ch.started:
        reasons.append(f"{len(failing)} of {len(outcomes)} test(s) did not pass: {failing[:3]}")
    not_run = [name for name, _ in exp_list if name not in ch.tests]
    if not_run and ch.started:
        reasons.append(f"{len(not_run)} expected test(s) without an outcome: {not_run[:3]}")
    if judged.reason:
        reasons.append(judged.reason)
    if forged:
        reasons.append("forged or inconsistent outcome lines: " + "; ".join(ch.problems[:5]))
    if tamper:
        reasons.append("files that try to change how tests run: " + ", ".join(tamper[:5]))
    if ch.tamper:
        reasons.append("the tested code tampered with the tests' imports (every test failed): "
                       + "; ".join(ch.tamper[:5]))
    return HiddenTestRun(
        outcomes=outcomes,
        status=status,
        reason="; ".join(reasons) or None,
        tamper_suspected=bool(tamper or ch.tamper),
        tamper_files=tamper,
        forged=forged,
        isolation=result.isolation,
        seconds=time.monotonic() - started,
        log=log_of(result),
        undeclared_skips=judged.undeclared,
    )
