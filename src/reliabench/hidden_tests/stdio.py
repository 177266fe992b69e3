"""Judge a stdin/stdout task: one sandboxed process per case, compared OUTSIDE the sandbox.

For each case of a ``test_runner = "stdio"`` task (:mod:`reliabench.hidden_tests.stdio_config`), the
agent's program (``python -E -s PROGRAM`` in the workspace, the workspace its only writable
place) runs as one command of the environment the run opens for the tests (a fresh sandboxed
process on the host; a command of the task's container, whose processes are stopped after
each case) with the case's input fed to standard input by the parent (the process gets the
bytes, not the file); the expected output is read by the parent alone and never enters the
environment (no path to it is shown or passed). :class:`StdioCases` is the hidden-test
runner (:mod:`reliabench.hidden_tests.layer`); :func:`run_stdio_tests` the one-call form on a
host backend. The
parent compares the captured standard output (capped at ``max_output_bytes``) with the
expected output, by the task's rule, and records one outcome per case (``case:NAME``):

* ``passed``: the process exited with status 0 within the case's time limit, its output is
  complete (not cut by the cap) and it matches;
* ``failed``: anything else (wrong output, non-zero exit, killed, timed out, too much output).

There is no outcome channel the program could forge: the verdict is computed by the parent
from bytes the program wrote to a file. Processes the program leaves behind (forks, sleepers)
are killed with the sandbox at the end of each case.
"""

from __future__ import annotations

import math
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from reliabench.errors import SandboxError
from reliabench.hidden_tests.judging import HiddenTestRun
from reliabench.hidden_tests.layer import EnvironmentOpener, TestRequest, fresh_opener
from reliabench.hidden_tests.stdio_config import StdioCase, StdioConfig
from reliabench.meta_keys import TestPath
from reliabench.records import TestOutcome
from reliabench.sandbox.base import DEFAULT_PATH, Limits, SandboxResult
from reliabench.sandbox.environment import HOST, EnvironmentBackend
from reliabench.sandbox.registry import get_backend
from reliabench.sandbox.slots import slot_uid, uid_can_reach

if TYPE_CHECKING:
    from reliabench.tasks.suite import Task

__all__ = ["StdioCases", "compare_output", "expected_stdio_tests", "run_stdio_tests"]

_CUT_MARK = "bytes cut by the reliabench sandbox (output limit)"
_LOG_CASE_BYTES = 2048


def _tokens_equal_float(out: list[str], exp: list[str], tol: float) -> bool:
    if len(out) != len(exp):
        return False
    for a, b in zip(out, exp, strict=True):
        if a == b:
            continue
        try:
            x, y = float(a), float(b)
        except ValueError:
            return False
        if not (math.isfinite(x) and math.isfinite(y)) or abs(x - y) > tol * max(1.0, abs(y)):
            return False
    return True


def compare_output(output: str, expected: str, mode: str, tolerance: float = 1e-6) -> bool:
    r"""Whether ``output`` matches ``expected`` under ``mode`` (see :mod:`.stdio_config`).

    Examples:
        >>> compare_output("1 2\n3\n", "1 2 3", "whitespace"), compare_output("1 2\n", "1 2", "exact")
        (True, False)
        >>> compare_output("0.3333334\n", "0.333333", "float", 1e-6)
        True
        >>> compare_output("0.34\n", "0.333333", "float", 1e-6)
        False
    """
    if mode == "exact":
        return output == expected
    if mode == "whitespace":
        return output.split() == expected.split()
    if mode == "float":
        return _tokens_equal_float(output.split(), expected.split(), tolerance)
    raise ValueError(f"compare mode must be exact, whitespace or float, got {mode!r}")


def expected_stdio_tests(config: StdioConfig) -> tuple[TestOutcome, ...]:
    """The expected outcomes of a stdio task (one per case), like ``collect_hidden_tests``."""
    return tuple(TestOutcome(case.test_name, "skipped", False) for case in config.cases)


def _judge(case: StdioCase, result: SandboxResult,
           config: StdioConfig) -> tuple[Literal["passed", "failed"], str | None]:
    if result.timed_out:
        return "failed", "time limit"
    if result.killed_reason:
        return "failed", f"killed: {result.killed_reason}"
    if result.returncode != 0:
        return "failed", f"exit status {result.returncode}"
    if _CUT_MARK in result.stdout or len(result.stdout.encode("utf-8")) > config.max_output_bytes:
        return "failed", f"more than {config.max_output_bytes} bytes of output"
    try:
        expected = case.expected.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SandboxError(f"cannot read the expected output {case.expected}: {exc}") from exc
    if compare_output(result.stdout, expected, config.compare, config.float_tolerance):
        return "passed", None
    return "failed", "wrong output"


class StdioCases:
    """The hidden-test runner of ``test_runner = "stdio"`` tasks (see the module docstring).

    Args:
        python: The interpreter of the agent's program; None: this one on the host,
            ``python3`` (the image's) in a container.
    """

    path: TestPath = "stdio"

    def __init__(self, python: str | None = None) -> None:
        self.python = python

    def collect(self, task: Task, open_environment: EnvironmentOpener, *, starter: Path,
                limits: Limits, slot: int) -> tuple[TestOutcome, ...]:
        """One expected outcome per case (nothing runs).

        Raises:
            SandboxError: ``task`` is not a stdio task.
        """
        if task.stdio is None:
            raise SandboxError(f"task {task.id!r} has no stdio cases")
        return expected_stdio_tests(task.stdio)

    def run(self, request: TestRequest) -> HiddenTestRun:
        """Run every case on the rollout's workspace.

        Raises:
            SandboxError: The environment could not be started, or an expected output is
                unreadable.
        """
        if request.task.stdio is None:
            raise SandboxError(f"task {request.task.id!r} has no stdio cases")
        return _run_cases(request.open_environment, Path(request.workspace), request.task.stdio,
                          timeout_s=request.limits.wall_s, limits=request.limits, slot=request.slot,
                          python=self.python)

    def close(self) -> None:
        """Nothing is held between runs."""


def _run_cases(open_environment: EnvironmentOpener, workspace: Path, config: StdioConfig, *,
               timeout_s: float, limits: Limits, slot: int, python: str | None) -> HiddenTestRun:
    started = time.monotonic()
    workspace = Path(os.path.realpath(workspace))
    if not workspace.is_dir():
        raise SandboxError(f"workspace is not a directory: {workspace}")
    per_case = config.case_timeout_s or timeout_s
    case_limits = Limits(wall_s=per_case, cpu_s=per_case, memory_bytes=limits.memory_bytes,
                         max_procs=limits.max_procs, file_size_bytes=limits.file_size_bytes,
                         output_bytes=config.max_output_bytes + 1)
    env_vars = {"PATH": DEFAULT_PATH, "HOME": "/tmp", "TMPDIR": "/tmp", "LANG": "C.UTF-8", "USER": "rollout"}
    outcomes: list[TestOutcome] = []
    reasons: list[str] = []
    logs: list[str] = []
    program = workspace / config.program
    env = open_environment(())
    try:
        isolation = env.isolation
        interpreter = python or (sys.executable if env.image is None else "python3")
        if env.backend == "namespaces" and config.cases and os.geteuid() == 0:
            # no private file-system view: the slot uid sees whatever Unix permissions let it see
            uid = slot_uid(slot)
            if uid_can_reach(str(config.cases[0].expected), uid, uid, need=4) is None:
                reasons.append(f"WARNING: the expected outputs ({config.cases[0].expected.parent}) are "
                               f"readable by the sandbox uid {uid} under the namespaces backend; make the "
                               "suite directory private (chmod 700) or use bubblewrap")
        for case in config.cases:
            if not program.is_file():
                outcomes.append(TestOutcome(case.test_name, "failed", False))
                continue
            try:
                stdin = case.input.read_bytes()
            except OSError as exc:
                raise SandboxError(f"cannot read the case input {case.input}: {exc}") from exc
            result = env.exec([interpreter, "-E", "-s", "-B", config.program], env=env_vars,
                              limits=case_limits, stdin=stdin)
            if env.keeps_processes:
                env.stop_processes()  # nothing of one case reaches the next
            isolation = result.isolation
            outcome, why = _judge(case, result, config)
            outcomes.append(TestOutcome(case.test_name, outcome, False))
            if why is not None:
                reasons.append(f"{case.test_name}: {why}")
                logs.append(f"--- {case.test_name}: {why} (exit {result.returncode}, {result.wall_s:.2f} s)\n"
                            f"{result.stderr[-_LOG_CASE_BYTES:]}")
    finally:
        env.close()
    if not program.is_file():
        reasons.insert(0, f"the program {config.program} does not exist in the workspace")
    failing = [r for r in reasons if r.startswith("case:")]
    summary = [f"{len(failing)} of {len(outcomes)} case(s) did not pass: " + "; ".join(failing[:3])] \
        if failing else []
    other = [r for r in reasons if not r.startswith("case:")]
    return HiddenTestRun(
        outcomes=tuple(outcomes),
        status="completed",
        reason="; ".join(other + summary) or None,
        tamper_suspected=False,  # no test code runs in the program's process: nothing to tamper with
        tamper_files=(),
        forged=False,
        isolation=isolation,
        seconds=time.monotonic() - started,
        log="\n".join(logs)[-64 * 1024:],
    )


def run_stdio_tests(
    workspace: Path,
    config: StdioConfig,
    *,
    timeout_s: float,
    backend: EnvironmentBackend | None = None,
    limits: Limits | None = None,
    slot: int = 0,
    python: str | None = None,
    starter: Path | None = None,
) -> HiddenTestRun:
    """Run every case of a stdio task on a rollout's workspace on a host backend (see the module docstring).

    Args:
        workspace: The rollout's workspace (writable; the cwd of each case).
        config: The task's ``[stdio]`` configuration and cases.
        timeout_s: The task's time limit; each case gets ``config.case_timeout_s`` or this.
        backend: A host backend (default: ``get_backend("auto")``).
        limits: Resource limits; wall and CPU time are set per case, the output cap from
            ``config.max_output_bytes``.
        slot: The worker slot to run as.
        python: The interpreter (default: ``sys.executable``).
        starter: Accepted for symmetry with ``run_hidden_tests``; unused (no test code runs
            in the program's process, so there is nothing a workspace file could tamper with).

    Returns:
        One outcome per case, in case order. ``status`` is ``completed`` whatever the program
        did; failures of the program are outcomes.

    Raises:
        SandboxError: The sandbox could not be set up, or an expected output is unreadable.
    """
    chosen = backend or get_backend("auto")
    lim = limits or Limits()
    opener = fresh_opener(chosen, chosen.prepare(HOST), Path(workspace), slot=slot, limits=lim)
    return _run_cases(opener, Path(workspace), config, timeout_s=timeout_s, limits=lim, slot=slot,
                      python=python)
