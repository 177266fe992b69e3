"""Run hidden tests on a rollout's workspace in the sandbox: one trustworthy outcome per test.

How a run works (:func:`run_hidden_tests`):

1. The workspace is scanned for files that could change how pytest or Python start
   (``conftest.py``, ``pytest.ini``, ``sitecustomize.py``, ``*.pth``, a ``pytest.py`` ...) or
   that are named like a module of the hidden tests (``test_adder.py``, ``helpers.py``).
   They are *flagged* (``tamper_suspected``, ``tamper_files``) and cannot take effect:
2. the hidden tests are copied to a private staging directory outside the workspace, bound
   read-only into the sandbox with our own ini file (``-c``), ``--rootdir`` and
   ``--confcutdir`` on it, so no ini or conftest of the workspace is ever read;
3. a FRESH interpreter runs ``python -I -B`` (no ``PYTHON*`` variables, no user site, no
   script directory on ``sys.path``: the workspace is not importable at start-up, so its
   ``sitecustomize`` never runs), with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` and
   ``-p no:cacheprovider``; the plugin :mod:`reliabench.hidden_tests._outcome_plugin` appends the
   workspace to ``sys.path`` (after the standard library and pytest, which it cannot shadow),
   after installing the import guard (:mod:`reliabench.hidden_tests._import_guard`): every
   name the hidden tests provide (test modules, helpers, nested ``conftest.py``, packages and
   namespace folders) resolves in the staged copy only, modules planted under those names in
   ``sys.modules`` are removed and reported (every test then fails), and the workspace's
   modules are compiled from their source (no ``__pycache__``, no sourceless ``.pyc``). A
   workspace entry named like such a module is flagged (:func:`find_tamper_files`);
4. the plugin writes one HMAC-signed line per test *as it finishes* to the write end of a
   pipe that the parent drains itself (:mod:`reliabench.hidden_tests.outcome_pipe`: nothing in the
   sandbox can truncate or rewrite what was written), keyed with a per-run secret read from
   another pipe that is closed before any test module is imported;
5. the parent trusts only lines with a valid MAC and sequence number, for expected test
   names, once each, and consistent with the plugin's end-of-session line. An expected test
   without a trusted outcome did not run: it counts as ``failed``. The exit code is never
   trusted. The parser never raises: a line it cannot check is a forged line;
6. no start line: a control run on the starter workspace decides whether the harness is
   broken (``test_error``, the runner's ``infra_error``) or this workspace stopped it (a
   failed rollout); see :func:`_harness_starts_on`.

Every read of the workspace by this module (the tamper scan) is an ``lstat`` walk with
bounded ``O_NOFOLLOW | O_NONBLOCK`` reads (:mod:`reliabench.files.untrusted`).

Isolation of the hidden tests: in the AGENT phase the agent runs with only its workspace and
never sees the tests. In the TEST phase the tests must be readable by pytest, and pytest runs
the agent's code in the same process, so that code can read the (copied) tests; it cannot
change them (read-only bind) and cannot see other rollouts' workspaces.
"""

from __future__ import annotations

import configparser
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Final, Literal, TypeAlias

from reliabench.errors import SandboxError, SuiteError
from reliabench.files.untrusted import file_kind, read_bounded, remove_tree, walk_tree
from reliabench.hidden_tests import _import_guard
from reliabench.hidden_tests.channel import parse_channel
from reliabench.hidden_tests.outcome_pipe import OutcomePipe
from reliabench.hidden_tests.skips import ReportedOutcome, judge_skips
from reliabench.hidden_tests.staging import (
    GUARD_MODULE,
    PLUGIN_MODULE,
    RawRun,
    hidden_test_env,
    pytest_command,
    staged,
)
from reliabench.meta_keys import TestRunner
from reliabench.records import Isolation, TestOutcome
from reliabench.sandbox import (
    Limits,
    SandboxBackend,
    SandboxResult,
    get_backend,
)

if TYPE_CHECKING:
    from reliabench.warm.hidden import WarmTests

__all__ = [
    "PLUGIN_MODULE",
    "TAMPER_NAMES",
    "HiddenTestRun",
    "HiddenTestStatus",
    "collect_hidden_tests",
    "find_tamper_files",
    "hidden_test_names",
    "run_hidden_tests",
]

HiddenTestStatus: TypeAlias = Literal["completed", "timeout", "test_error"]
"""How a run of hidden tests ended (``HiddenTestRun.status``); the same words as the rollout
statuses (:data:`reliabench.records.RolloutStatus`) they become."""

TAMPER_NAMES: Final = frozenset(
    {
        "conftest.py",
        "pytest.ini",
        ".pytest.ini",
        "sitecustomize.py",
        "usercustomize.py",
        "pytest.py",
        "py.py",
        "pluggy.py",
        "_pytest",
        "_pytest.py",
        "pytest",
        "pluggy",
        "reliabench",
        f"{PLUGIN_MODULE}.py",
        f"{GUARD_MODULE}.py",
    }
)
"""File or directory names that are flagged wherever they appear in a workspace."""

_LOG_BYTES: Final = 64 * 1024


@dataclass(frozen=True, slots=True)
class HiddenTestRun:
    """The hidden-test outcome of one rollout.

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


# --------------------------------------------------------------------------------------------
# tamper scan
# --------------------------------------------------------------------------------------------


_CONFIG_READ_BYTES: Final = 1 << 20


def _is_pytest_config(path: Path) -> bool:
    name = path.name
    data = read_bounded(path, _CONFIG_READ_BYTES)  # never through a link, never a FIFO
    if data is None:
        return False
    text = data.decode("utf-8", errors="replace")
    if name == "pyproject.toml":
        return "[tool.pytest" in text
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except (configparser.Error, RecursionError, ValueError):
        return "pytest" in text
    wanted = "tool:pytest" if name == "setup.cfg" else "pytest"
    return parser.has_section(wanted) or parser.has_section("tool:pytest")


def _is_suspect(path: Path, kind: str | None = None) -> bool:
    name = path.name
    if name in TAMPER_NAMES or name.endswith(".pth"):
        return True
    if name.startswith("conftest.") and name.endswith(".pyc"):
        return True
    if name in ("tox.ini", "setup.cfg", "pyproject.toml"):
        if (kind or file_kind(path)) != "file":
            return False  # a link or special file is never opened; pytest reads none here
        return _is_pytest_config(path)
    return False


def _same_file(original: Path, path: Path) -> bool:
    """Both are regular files (by lstat) with equal content, compared in bounded reads."""
    a = read_bounded(original, _CONFIG_READ_BYTES * 4)
    b = read_bounded(path, _CONFIG_READ_BYTES * 4)
    return a is not None and a == b and len(a) <= _CONFIG_READ_BYTES * 4


def hidden_test_names(tests_dir: Path) -> frozenset[str]:
    """The top-level module names the hidden tests provide (their modules, helpers, folders).

    The names a workspace file must not have: pytest and the lean runner import the hidden
    tests by these names (:mod:`reliabench.hidden_tests._import_guard` makes them resolve in
    the staged copy; a workspace entry named so is flagged). Standard-library names are left
    out (they resolve before the workspace anyway).
    """
    root = os.path.realpath(tests_dir)
    if not os.path.isdir(root):
        return frozenset()
    roots = [*_import_guard.pytest_roots(root), *_import_guard.plain_roots(root)]
    names = _import_guard.provided_names(root, roots, package_name="tests")  # staged as tests/
    return frozenset(n for n in names if n not in sys.stdlib_module_names
                     and n not in sys.builtin_module_names)


def find_tamper_files(workspace: Path, *, starter: Path | None = None,
                      tests_dir: Path | None = None) -> tuple[str, ...]:
    """Files in ``workspace`` that try to change how pytest or Python start.

    The workspace is untrusted: entries are examined with ``lstat`` and read only through
    bounded ``O_NOFOLLOW | O_NONBLOCK`` reads (:mod:`reliabench.files.untrusted`), so a link
    planted by the agent is never followed and a FIFO never blocks the runner.

    Flagged: the names of :data:`TAMPER_NAMES` and ``*.pth`` anywhere, pytest configuration
    in ``tox.ini``/``setup.cfg``/``pyproject.toml``, a sourceless ``*.pyc`` outside
    ``__pycache__`` and, with ``tests_dir``, every entry at any depth named like a module,
    helper or folder of the hidden tests (:func:`hidden_test_names`: ``test_adder.py``,
    ``helpers.py``, ``tests/`` when the tests are a package), with every changed file below
    such a folder when the starter has it too.

    Args:
        workspace: The rollout's workspace.
        starter: The untouched starter workspace; a file identical to the starter's file at
            the same relative path is not flagged (the task shipped it), nor a folder it has.
        tests_dir: The task's hidden tests (their names are reserved).

    Returns:
        Sorted paths relative to ``workspace`` (a flagged directory is not descended into).
    """
    found: list[str] = []
    flagged_dirs: set[str] = set()
    shadow_dirs: list[str] = []  # colliding folders the starter has: their changes are flagged
    reserved = hidden_test_names(Path(tests_dir)) if tests_dir is not None else frozenset()

    def skip(rel: str) -> bool:
        return rel in flagged_dirs

    def shipped(rel: str, kind: str) -> bool:
        if starter is None:
            return False
        if kind == "dir":
            return file_kind(Path(starter) / rel) == "dir"
        return kind == "file" and _same_file(Path(starter) / rel, Path(workspace) / rel)

    for entry in walk_tree(Path(workspace), skip_dir=skip):
        path = Path(workspace) / entry.rel
        if entry.kind == "error":
            continue
        name = path.name
        collides = _import_guard.module_name(name, entry.kind == "dir") in reserved or (
            name.endswith(".pyc") and path.parent.name != "__pycache__")
        below = any(entry.rel.startswith(d + "/") for d in shadow_dirs)
        if (collides or below) and not _is_suspect(path, entry.kind):
            if shipped(entry.rel, entry.kind):
                if entry.kind == "dir":
                    shadow_dirs.append(entry.rel)
                continue
            if entry.kind == "dir":
                if below:
                    continue  # its changed files are flagged one by one
                flagged_dirs.add(entry.rel)
            found.append(entry.rel)
            continue
        if not _is_suspect(path, entry.kind):
            continue
        if entry.kind == "dir":
            flagged_dirs.add(entry.rel)
            found.append(entry.rel)
            continue
        if starter is not None and entry.kind == "file" and _same_file(Path(starter) / entry.rel, path):
            continue
        found.append(entry.rel)
    return tuple(sorted(found))


# --------------------------------------------------------------------------------------------
# staging and the channel
# --------------------------------------------------------------------------------------------


def _run_pytest(
    workspace: Path,
    tests_dir: Path,
    *,
    backend: SandboxBackend,
    limits: Limits,
    slot: int,
    python: str,
    extra: Sequence[str],
    expected: set[str] | None,
    order_seed: int | None = None,
    worker: WarmTests | None = None,
    test_runner: TestRunner = "pytest",
) -> RawRun:
    if worker is not None:  # a warm test worker instead of a fresh process
        return worker.run_tests(workspace, tests_dir, limits=limits, slot=slot, extra=extra,
                                expected=expected, test_runner=test_runner, order_seed=order_seed)
    workspace = Path(os.path.realpath(workspace))
    if not workspace.is_dir():
        raise SandboxError(f"workspace is not a directory: {workspace}")
    key = secrets.token_hex(32).encode("ascii")
    with staged(Path(tests_dir), slot) as staging:
        key_r, key_w = os.pipe()
        pipe = OutcomePipe()
        try:
            os.write(key_w, key)
            os.close(key_w)
            key_w = -1
            env = hidden_test_env(pipe.write_fd, key_r, workspace, order_seed)
            result = backend.run(
                pytest_command(python, staging, extra),
                workdir=workspace,
                readonly=[staging],
                env=env,
                limits=limits,
                slot=slot,
                pass_fds=(pipe.write_fd, key_r),
            )
        finally:
            pipe.close()
            os.close(key_r)
            if key_w >= 0:
                os.close(key_w)
    channel = parse_channel(pipe.data, key, expected)
    if pipe.overflow:
        channel.forge(f"the outcome stream exceeded {pipe.cap} bytes ({pipe.overflow} more were "
                      "dropped): junk written to the channel by the tested code")
    return RawRun(result, channel)


def _log_of(result: SandboxResult) -> str:
    log = result.stdout + (("\n--- stderr ---\n" + result.stderr) if result.stderr else "")
    if len(log) > _LOG_BYTES:
        log = log[: _LOG_BYTES // 2] + "\n[... log cut ...]\n" + log[-_LOG_BYTES // 2 :]
    return log


def _tail(text: str, lines: int = 5) -> str:
    return " | ".join(line for line in text.strip().splitlines()[-lines:])


def collect_hidden_tests(
    workspace: Path,
    tests_dir: Path,
    *,
    backend: SandboxBackend | None = None,
    limits: Limits | None = None,
    slot: int = 0,
    python: str | None = None,
    worker: WarmTests | None = None,
) -> tuple[TestOutcome, ...]:
    """Learn the expected hidden tests of a task by collecting them on its starter workspace.

    Run it once per task against the untouched STARTER workspace (trusted content), in the
    sandbox like a real run. The result is what :func:`run_hidden_tests` takes as
    ``expected``.

    Args:
        workspace: The starter workspace.
        tests_dir: The task's hidden tests directory.
        backend: The sandbox backend (default: ``get_backend("auto")``).
        limits: Resource limits (default: :class:`Limits`).
        slot: The worker slot to run as.
        python: The interpreter (default: ``sys.executable``); it needs pytest.
        worker: Collect in a warm test worker instead of a fresh sandboxed process.

    Returns:
        One ``TestOutcome`` per collected test, in collection order, with its pytest node id
        relative to ``tests_dir``, its ``security`` flag, and the placeholder outcome
        ``"skipped"`` (nothing ran).

    Raises:
        SuiteError: Some test modules cannot be collected, or no test was found.
        SandboxError: The harness could not run pytest at all.
    """
    raw = _run_pytest(
        workspace,
        tests_dir,
        backend=backend or get_backend("auto"),
        limits=limits or Limits(),
        slot=slot,
        python=python or sys.executable,
        extra=["--collect-only"],
        expected=None,
        worker=worker,
    )
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


def _harness_starts_on(starter: Path, tests_dir: Path, *, backend: SandboxBackend, limits: Limits,
                       slot: int, python: str, worker: WarmTests | None = None) -> bool:
    """Whether the harness writes its start line on a fresh copy of the starter workspace.

    The control run that decides who is to blame for a missing start line: the plugin writes
    it before any module of the workspace is imported, so only two things can stop it -- the
    harness itself (the sandbox, the interpreter, pytest: ``infra``) or what the workspace
    holds or did to the channel (the rollout's own failure). Same path (fresh process or
    warm worker), backend, slot, interpreter and limits, on the trusted starter files.
    """
    base = Path(tempfile.mkdtemp(prefix="rb-control-"))
    try:
        os.chmod(base, 0o711)
        ws = base / "workspace"
        shutil.copytree(starter, ws, symlinks=True)
        os.chmod(ws, 0o755)
        raw = _run_pytest(ws, tests_dir, backend=backend, limits=limits, slot=slot, python=python,
                          extra=["--collect-only"], expected=None, worker=worker)
        return raw.channel.started
    except (OSError, SandboxError):
        return False
    finally:
        remove_tree(base)


def run_hidden_tests(
    workspace: Path,
    tests_dir: Path,
    *,
    expected: Sequence[TestOutcome | str] | None,
    backend: SandboxBackend | None = None,
    limits: Limits | None = None,
    slot: int = 0,
    python: str | None = None,
    starter: Path | None = None,
    order_seed: int | None = None,
    worker: WarmTests | None = None,
    test_runner: TestRunner = "pytest",
    allowed_skips: Collection[str] = (),
) -> HiddenTestRun:
    """Run the hidden tests on a rollout's workspace in a fresh sandboxed pytest process.

    Args:
        workspace: The rollout's workspace (the agent's code; bound writable, the cwd).
        tests_dir: The hidden tests (trusted); copied to a private read-only directory.
        expected: The expected tests (from :func:`collect_hidden_tests` or node ids). Each
            gets exactly one outcome; one without a trusted line is ``failed``. None trusts
            this run's own collection (weaker: pass it whenever you can).
        backend: The sandbox backend (default: ``get_backend("auto")``).
        limits: Resource limits (default: :class:`Limits`).
        slot: The worker slot to run as.
        python: The interpreter (default: ``sys.executable``); it needs pytest.
        starter: The untouched starter workspace; files it shipped are not flagged.
        order_seed: Run the tests in a random order drawn with this seed (re-tests use it to
            reveal order-dependent tests); None keeps the collection order.
        worker: Run in a warm test worker (:mod:`reliabench.warm`) instead of a fresh
            sandboxed process; ``backend`` and ``python`` are then not used.
        test_runner: The task's ``test_runner``; a warm worker runs ``plain`` tests with its
            lean runner (the fresh path runs every suite with pytest).
        allowed_skips: The tests whose skip or xfail counts as ``skipped`` (the task's
            ``allowed_skips``); any other skip or xfail is ``failed`` and named in
            ``undeclared_skips`` (:func:`reliabench.hidden_tests.skips.judge_skips`).

    Returns:
        The outcomes and what was observed. Failures of the agent's code are outcomes, not
        exceptions.

    Raises:
        SandboxError: The sandbox itself could not be set up.
    """
    backend = backend or get_backend("auto")
    started = time.monotonic()
    tamper = find_tamper_files(Path(workspace), starter=starter, tests_dir=Path(tests_dir))
    exp_list: list[tuple[str, bool | None]] | None = None
    if expected is not None:
        exp_list = [
            (e.name, e.security) if isinstance(e, TestOutcome) else (str(e), None)
            for e in expected
        ]
    exp_names = None if exp_list is None else {name for name, _ in exp_list}
    raw = _run_pytest(
        workspace,
        tests_dir,
        backend=backend,
        limits=limits or Limits(),
        slot=slot,
        python=python or sys.executable,
        extra=[],
        expected=exp_names,
        order_seed=order_seed,
        worker=worker,
        test_runner=test_runner,
    )
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
        reasons.append(f"wall time limit of {(limits or Limits()).wall_s:g} s reached")
    elif not ch.started:
        why = f"(exit status {result.returncode}): {_tail(result.stderr or result.stdout)}"
        if starter is not None and _harness_starts_on(
            Path(starter), Path(tests_dir), backend=backend, limits=limits or Limits(),
            slot=slot, python=python or sys.executable, worker=worker,
        ):
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
        log=_log_of(result),
        undeclared_skips=judged.undeclared,
    )
