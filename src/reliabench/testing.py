"""Run hidden tests on a rollout's workspace in the sandbox: one trustworthy outcome per test.

How a run works (:func:`run_hidden_tests`):

1. The workspace is scanned for files that could change how pytest or Python start
   (``conftest.py``, ``pytest.ini``, ``sitecustomize.py``, ``*.pth``, a ``pytest.py`` ...).
   They are *flagged* (``tamper_suspected``, ``tamper_files``) and cannot take effect:
2. the hidden tests are copied to a private staging directory outside the workspace, bound
   read-only into the sandbox with our own ini file (``-c``), ``--rootdir`` and
   ``--confcutdir`` on it, so no ini or conftest of the workspace is ever read;
3. a FRESH interpreter runs ``python -I -B`` (no ``PYTHON*`` variables, no user site, no
   script directory on ``sys.path``: the workspace is not importable at start-up, so its
   ``sitecustomize`` never runs), with ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1`` and
   ``-p no:cacheprovider``; the plugin :mod:`reliabench._outcome_plugin` appends the
   workspace to ``sys.path`` (after the standard library and pytest, which it cannot shadow);
4. the plugin writes one HMAC-signed line per test *as it finishes* to an inherited file
   descriptor (not a path inside the sandbox), keyed with a per-run secret read from a pipe
   that is closed before any test module is imported;
5. the parent trusts only lines with a valid MAC and sequence number, for expected test
   names, once each, and consistent with the plugin's end-of-session line. An expected test
   without a trusted outcome did not run: it counts as ``failed``. The exit code is never
   trusted.

Isolation of the hidden tests: in the AGENT phase the agent runs with only its workspace and
never sees the tests. In the TEST phase the tests must be readable by pytest, and pytest runs
the agent's code in the same process, so that code can read the (copied) tests; it cannot
change them (read-only bind) and cannot see other rollouts' workspaces.
"""

from __future__ import annotations

import configparser
import contextlib
import filecmp
import hashlib
import hmac
import json
import os
import secrets
import shutil
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Final

from reliabench.errors import SandboxError, SuiteError
from reliabench.records import OUTCOMES, TestOutcome
from reliabench.sandbox import (
    DEFAULT_PATH,
    Limits,
    SandboxBackend,
    SandboxResult,
    get_backend,
    slot_uid,
)

if TYPE_CHECKING:
    from reliabench.warm.hidden import WarmTests

__all__ = [
    "PLUGIN_MODULE",
    "TAMPER_NAMES",
    "HiddenTestRun",
    "collect_hidden_tests",
    "find_tamper_files",
    "run_hidden_tests",
]

PLUGIN_MODULE: Final = "_reliabench_outcome_plugin"
"""The module name under which the outcome plugin is loaded inside the sandbox."""

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
    }
)
"""File or directory names that are flagged wherever they appear in a workspace."""

_LOG_BYTES: Final = 64 * 1024
_BOOT: Final = (
    "import sys; sys.path.insert(0, {plugin_dir!r}); import pytest; "
    "raise SystemExit(pytest.console_main())"
)
_INI: Final = """[pytest]
# written by reliabench: the only ini file the hidden tests run with
addopts =
python_files = test_*.py *_test.py
"""


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
    """

    outcomes: tuple[TestOutcome, ...]
    status: str
    reason: str | None
    tamper_suspected: bool
    tamper_files: tuple[str, ...]
    forged: bool
    isolation: str
    seconds: float
    log: str


# --------------------------------------------------------------------------------------------
# tamper scan
# --------------------------------------------------------------------------------------------


def _is_pytest_config(path: Path) -> bool:
    name = path.name
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    if name == "pyproject.toml":
        return "[tool.pytest" in text
    parser = configparser.ConfigParser(interpolation=None, strict=False)
    try:
        parser.read_string(text)
    except configparser.Error:
        return "pytest" in text
    wanted = "tool:pytest" if name == "setup.cfg" else "pytest"
    return parser.has_section(wanted) or parser.has_section("tool:pytest")


def _is_suspect(path: Path) -> bool:
    name = path.name
    if name in TAMPER_NAMES or name.endswith(".pth"):
        return True
    if name.startswith("conftest.") and name.endswith(".pyc"):
        return True
    if name in ("tox.ini", "setup.cfg", "pyproject.toml") and path.is_file():
        return _is_pytest_config(path)
    return False


def find_tamper_files(workspace: Path, *, starter: Path | None = None) -> tuple[str, ...]:
    """Files in ``workspace`` that try to change how pytest or Python start.

    Args:
        workspace: The rollout's workspace.
        starter: The untouched starter workspace; a file identical to the starter's file at
            the same relative path is not flagged (the task shipped it).

    Returns:
        Sorted paths relative to ``workspace`` (a flagged directory is not descended into).
    """
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(workspace, followlinks=False):
        base = Path(dirpath)
        for name in list(dirnames):
            path = base / name
            if _is_suspect(path):
                found.append(path.relative_to(workspace).as_posix())
                dirnames.remove(name)
        for name in filenames:
            path = base / name
            if not _is_suspect(path):
                continue
            rel = path.relative_to(workspace)
            if starter is not None:
                original = starter / rel
                with contextlib.suppress(OSError):
                    if original.is_file() and filecmp.cmp(original, path, shallow=False):
                        continue
            found.append(rel.as_posix())
    return tuple(sorted(found))


# --------------------------------------------------------------------------------------------
# staging and the channel
# --------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _staged(tests_dir: Path, slot: int, parent: Path | None = None) -> Iterator[Path]:
    """Copy the hidden tests and the plugin to a private directory; remove it afterwards."""
    if not tests_dir.is_dir():
        raise SandboxError(f"hidden tests directory not found: {tests_dir}")
    # a root-owned 0711 parent: the slot-owned staging directory is not a top-level entry of
    # /tmp, which the namespaces backend's clean-up of ANOTHER run on the same slot (another
    # process on this host) would otherwise delete while this run still needs it
    outer = Path(tempfile.mkdtemp(prefix="rb-hidden-", dir=parent))
    os.chmod(outer, 0o711)
    staging = outer / "staging"
    staging.mkdir()
    try:
        shutil.copytree(
            tests_dir,
            staging / "tests",
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc", ".pytest_cache"),
        )
        plugin_dir = staging / "plugin"
        plugin_dir.mkdir()
        plugin_src = Path(__file__).with_name("_outcome_plugin.py")
        shutil.copyfile(plugin_src, plugin_dir / f"{PLUGIN_MODULE}.py")
        (staging / "pytest.ini").write_text(_INI, encoding="utf-8")
        for dirpath, dirnames, filenames in os.walk(staging):
            for d in dirnames:
                os.chmod(os.path.join(dirpath, d), 0o755)
            for f in filenames:
                os.chmod(os.path.join(dirpath, f), 0o644)
        if os.geteuid() == 0:
            # only this slot's uid may enter (other slots' agents must not read the tests)
            uid = slot_uid(slot)
            os.chown(staging, uid, uid)
        os.chmod(staging, 0o700)
        yield staging
    finally:
        shutil.rmtree(outer, ignore_errors=True)


@dataclass
class _Channel:
    """The parent's view of the outcome stream of one run."""

    started: bool = False
    ended: bool = False
    collected: list[tuple[str, bool]] | None = None
    collect_errors: list[str] = field(default_factory=list)
    tests: dict[str, tuple[str, bool]] = field(default_factory=dict)
    order: list[str] = field(default_factory=list)
    poisoned: set[str] = field(default_factory=set)
    problems: list[str] = field(default_factory=list)
    end_tests: list[tuple[str, str]] | None = None

    def forge(self, problem: str, name: str | None = None) -> None:
        if len(self.problems) < 20:
            self.problems.append(problem)
        if name is not None:
            self.poisoned.add(name)


def _parse_channel(data: bytes, key: bytes, expected: set[str] | None) -> _Channel:
    """Check every line of the outcome stream; see the module docstring for the rules."""
    ch = _Channel()
    next_seq = 1
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
            if not isinstance(obj, dict):
                raise ValueError("not an object")
            mac = obj.pop("mac")
            text = json.dumps(obj, sort_keys=True, separators=(",", ":"))
        except (ValueError, KeyError, TypeError):
            ch.forge(f"unreadable outcome line: {raw[:80]!r}")
            continue
        good = hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
        if not isinstance(mac, str) or not hmac.compare_digest(mac, good):
            name = obj.get("name") if isinstance(obj.get("name"), str) else None
            ch.forge(f"outcome line with a bad signature (for {name or 'no test'})")
            continue
        seq = obj.get("seq")
        event = obj.get("event")
        name = obj.get("name") if isinstance(obj.get("name"), str) else None
        if seq != next_seq:
            ch.forge(f"outcome line out of sequence (seq {seq}, expected {next_seq})", name)
        next_seq = (seq + 1) if isinstance(seq, int) else next_seq + 1
        if ch.ended:
            ch.forge(f"outcome line after the end of the session ({event})", name)
            continue
        if event == "start":
            if ch.started:
                ch.forge("second start line")
            ch.started = True
        elif not ch.started:
            ch.forge(f"outcome line before the start line ({event})", name)
        elif event == "collected":
            tests = obj.get("tests")
            if ch.collected is not None or not isinstance(tests, list):
                ch.forge("second or malformed collection line")
            else:
                ch.collected = [(str(t[0]), bool(t[1])) for t in tests]
        elif event == "collect_error":
            ch.collect_errors.append(str(name))
        elif event == "test":
            outcome = obj.get("outcome")
            if name is None or outcome not in OUTCOMES:
                ch.forge(f"malformed test line for {name!r}", name)
            elif expected is not None and name not in expected:
                ch.forge(f"outcome for a test that is not expected: {name}")
            elif name in ch.tests:
                ch.forge(f"two outcome lines for one test: {name}", name)
            else:
                ch.tests[name] = (str(outcome), bool(obj.get("security")))
                ch.order.append(name)
        elif event == "end":
            ch.ended = True
            tests = obj.get("tests")
            if isinstance(tests, list):
                ch.end_tests = [(str(t[0]), str(t[1])) for t in tests]
        else:
            ch.forge(f"outcome line with an unknown event {event!r}")
    if ch.ended and ch.end_tests is not None:
        # the plugin's own list of what it wrote must match what was read, line for line
        claimed = dict(ch.end_tests)
        for name, (outcome, _sec) in ch.tests.items():
            if claimed.get(name) != outcome:
                ch.forge(f"outcome line the plugin did not write: {name}", name)
        for name in claimed:
            if name not in ch.tests and (expected is None or name in expected):
                ch.forge(f"the plugin wrote an outcome that was not read: {name}", name)
    return ch


def _pytest_command(python: str, staging: Path, extra: Sequence[str]) -> list[str]:
    tests = staging / "tests"
    return [
        python,
        "-I",
        "-B",
        "-c",
        _BOOT.format(plugin_dir=str(staging / "plugin")),
        "-c",
        str(staging / "pytest.ini"),
        "--rootdir",
        str(tests),
        "--confcutdir",
        str(tests),
        "-p",
        "no:cacheprovider",
        "-p",
        PLUGIN_MODULE,
        "--import-mode=append",
        "-q",
        "--color=no",
        "--tb=short",
        "-o",
        "console_output_style=classic",
        *extra,
        str(tests),
    ]


@dataclass(frozen=True, slots=True)
class _RawRun:
    result: SandboxResult
    channel: _Channel


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
    test_runner: str = "pytest",
) -> _RawRun:
    if worker is not None and order_seed is None:  # a warm test worker instead of a fresh process
        # (a shuffled order needs the plugin's import-time seed: re-tests with one run fresh)
        return worker.run_tests(workspace, tests_dir, limits=limits, slot=slot, extra=extra,
                                expected=expected, test_runner=test_runner)
    workspace = Path(os.path.realpath(workspace))
    if not workspace.is_dir():
        raise SandboxError(f"workspace is not a directory: {workspace}")
    key = secrets.token_hex(32).encode("ascii")
    with (
        _staged(Path(tests_dir), slot) as staging,
        tempfile.TemporaryDirectory(prefix="rb-chan-") as chan_dir,
    ):
        chan_path = Path(chan_dir) / "outcomes.jsonl"
        chan_fd = os.open(chan_path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_EXCL, 0o600)
        key_r, key_w = os.pipe()
        try:
            os.write(key_w, key)
            os.close(key_w)
            key_w = -1
            env = {
                "PATH": DEFAULT_PATH,
                "HOME": "/tmp",
                "TMPDIR": "/tmp",
                "LANG": "C.UTF-8",
                "USER": "rollout",
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
                "RELIABENCH_OUTCOME_FD": str(chan_fd),
                "RELIABENCH_OUTCOME_KEY_FD": str(key_r),
                "RELIABENCH_WORKSPACE": str(workspace),
            }
            if order_seed is not None:
                env["RELIABENCH_ORDER_SEED"] = str(int(order_seed))
            result = backend.run(
                _pytest_command(python, staging, extra),
                workdir=workspace,
                readonly=[staging],
                env=env,
                limits=limits,
                slot=slot,
                pass_fds=(chan_fd, key_r),
            )
        finally:
            os.close(chan_fd)
            os.close(key_r)
            if key_w >= 0:
                os.close(key_w)
        data = chan_path.read_bytes()
    return _RawRun(result, _parse_channel(data, key, expected))


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
    test_runner: str = "pytest",
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

    Returns:
        The outcomes and what was observed. Failures of the agent's code are outcomes, not
        exceptions.

    Raises:
        SandboxError: The sandbox itself could not be set up.
    """
    backend = backend or get_backend("auto")
    started = time.monotonic()
    tamper = find_tamper_files(Path(workspace), starter=starter)
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
    outcomes = []
    for name, sec in exp_list:
        line = ch.tests.get(name)
        security = sec if sec is not None else (line[1] if line else False)
        if line is None or name in ch.poisoned:
            outcomes.append(TestOutcome(name, "failed", security))
        else:
            outcomes.append(TestOutcome(name, line[0], security))  # type: ignore[arg-type]
    if result.timed_out:
        status = "timeout"
        reasons.append(f"wall time limit of {(limits or Limits()).wall_s:g} s reached")
    elif not ch.started:
        status = "test_error"
        reasons.append(
            f"the test harness did not start (exit status {result.returncode}): "
            f"{_tail(result.stderr or result.stdout)}"
        )
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
    failing = [o.name for o in outcomes if o.outcome in ("failed", "error")]
    if failing and ch.started:
        reasons.append(f"{len(failing)} of {len(outcomes)} test(s) did not pass: {failing[:3]}")
    not_run = [name for name, _ in exp_list if name not in ch.tests]
    if not_run and ch.started:
        reasons.append(f"{len(not_run)} expected test(s) without an outcome: {not_run[:3]}")
    if forged:
        reasons.append("forged or inconsistent outcome lines: " + "; ".join(ch.problems[:5]))
    if tamper:
        reasons.append("files that try to change how tests run: " + ", ".join(tamper[:5]))
    return HiddenTestRun(
        outcomes=tuple(outcomes),
        status=status,
        reason="; ".join(reasons) or None,
        tamper_suspected=bool(tamper),
        tamper_files=tamper,
        forged=forged,
        isolation=result.isolation,
        seconds=time.monotonic() - started,
        log=_log_of(result),
    )
