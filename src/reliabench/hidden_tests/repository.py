"""Hidden tests of a repository task, graded as SWE-bench grades them.

:class:`RepositoryTests` implements :class:`~reliabench.hidden_tests.layer.HiddenTestRunner`
for ``test_runner = "repository"`` tasks (:mod:`reliabench.tasks.repository`). Per task,
once (:meth:`RepositoryTests.prepare`): the checkout at the base commit, its environment
(:mod:`reliabench.repository.venv`, cached by spec hash) and the result of the test patch on
the untouched base tree (:func:`~reliabench.repository.patches.patched_test_files`). A
repository not at its base commit, an environment that fails to build or a test patch that
does not apply is found here, before any rollout: the harness's failure, never an agent's.

Per rollout (:meth:`RepositoryTests.run`), on the workspace the agent left:

1. the agent's patch is taken (:func:`~reliabench.repository.patches.repository_diff`, the
   ``git diff`` of the checkout against the base tree, bounded) -- an artifact of every rollout;
2. every file the test patch touches is written as base + test patch
   (:func:`~reliabench.repository.patches.lay_files`): the agent's edits to those files are
   reverted, exactly SWE-bench's ``git checkout BASE -- FILES; git apply test.patch``, but
   from a result computed on the trusted tree (no git runs on the agent's ``.git``, so a
   rewritten ``.git`` changes nothing here);
3. the test command runs in the task's environment (the workspace at its ``workdir``, the
   venvs read-only, no network) and its output is parsed by the task's log parser;
4. :func:`~reliabench.repository.grading.grade` gives one outcome per FAIL_TO_PASS and
   PASS_TO_PASS test and SWE-bench's ``RESOLVED_FULL`` / ``PARTIAL`` / ``NO``
   (:attr:`RepositoryTestRun.swebench`, for the record's meta).

Before a run's first rollout (:meth:`RepositoryTests.base_problem`) the task's gold patch is
graded like a rollout (:meth:`RepositoryTests.gold_run`): a gold patch that does not resolve
the task here (a test that needs the network, a missing data file, a drifted dependency, a
Python too new for the code) means every rollout would fail for the environment's reasons, and
the run is refused. A task without a gold patch gets the *control run* instead
(:meth:`RepositoryTests.control`: the same command on a fresh copy of the base tree with the
test patch, once per task), which must finish, report, and pass every PASS_TO_PASS test. A
task found sound is remembered in the environment cache. Per rollout, when the log has no test
line at all, the control decides who is to blame, as for fresh pytest runs: if it reports
tests, this workspace broke the checkout (the rollout failed, every test ``failed``); if not,
the harness is broken (``test_error``, the runner's ``infra_error``).

A task whose ``[repository.environment]`` names an ``image`` has no venv: the image carries
the environment (SWE-bench's per-instance images), the checkout is shown at ``workdir`` in a
container of the run's container backend, and the test command runs as written (the log
alone grades it, as in SWE-bench).

Residual (documented in docs/repository-tasks.md): the outcomes come from the test log, as
in SWE-bench, and the agent's code runs in the test process: it can print lines that look
like passes. The signed outcome channel of fresh pytest runs needs the channel folder of the
environment contract (phase 2).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import shutil
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from reliabench.errors import InvalidArgumentError, SandboxError, SuiteError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.channel import Channel, parse_channel
from reliabench.hidden_tests.fresh import HiddenTestRun, HiddenTestStatus, find_tamper_files
from reliabench.hidden_tests.layer import EnvironmentOpener, TestRequest
from reliabench.hidden_tests.staging import PLUGIN_MODULE
from reliabench.meta_keys import TestPath
from reliabench.records import TestOutcome
from reliabench.repository.grading import RepositoryGrade, grade
from reliabench.repository.logs import normalise_name, parse_log
from reliabench.repository.patches import (
    PatchApplyError,
    apply_patch,
    lay_files,
    patched_test_files,
    repository_diff,
)
from reliabench.repository.source import RepositorySourceError, checkout, tree_id
from reliabench.repository.venv import TaskEnv, build_base, build_task, readable_tree, venv_env
from reliabench.sandbox.base import Limits, SandboxResult
from reliabench.sandbox.environment import Environment, Mount

if TYPE_CHECKING:
    from reliabench.tasks.repository import RepositoryConfig
    from reliabench.tasks.suite import Task

__all__ = [
    "ControlRun",
    "OpenerFor",
    "PreparedRepository",
    "RepositoryTestRun",
    "RepositoryTests",
    "diagnose",
    "open_at_type",
]

open_at_type = Callable[[Path, Sequence[Mount]], Environment]
"""Starts an environment on a host folder shown at the task's ``workdir`` (builds, control runs)."""

OpenerFor = Callable[["Task", int], open_at_type]
"""``(task, slot) -> open_at``: a run's environments, per task (its backend and prepared spec)
on a worker slot."""

_LOG_BYTES: Final = 1024 * 1024
"""The test log kept with a rollout (head and tail beyond it): SWE-bench's log file, which the
``swebench`` package grades the same; ``pytest -rA`` prints the captured output of passing tests
too (sqlfluff's: ~0.3-0.5 MB). The run's artifact budget keeps as much (``max_log_bytes``)."""
_IMAGE_ENV: Final = {
    "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
    "HOME": "/tmp",
    "TMPDIR": "/tmp",
    "LANG": "C.UTF-8",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}
"""The variables of a test command in an image (the spec's ``env`` is added)."""
_MIN_OUTPUT: Final = 16 * 1024 * 1024
_DIAGNOSES: Final = (
    (
        "network-bound",
        re.compile(
            r"Temporary failure in name resolution|Name or service not known|"
            r"Network is unreachable|ConnectionError|urlopen error|"
            r"Failed to establish a new connection|No address associated"
        ),
    ),
    (
        "python-version",
        re.compile(
            r"module '(?:collections|inspect|asyncio)' has no attribute|cannot import name '\w+' from "
            r"'(?:collections|inspect|asyncio)|SyntaxError: invalid syntax|removed in Python 3\.1"
        ),
    ),
    (
        "missing-file",
        # pydicom's get_testdata_file() gives None for a file it would download at test time
        re.compile(
            r"FileNotFoundError|No such file or directory|"
            r"Expected a file path or a file-like, but got NoneType"
        ),
    ),
    (
        "dependency-drift",
        re.compile(
            r"ImportError|ModuleNotFoundError|AttributeError|DeprecationWarning|"
            r"TypeError: .*unexpected keyword"
        ),
    ),
)


def diagnose(log: str) -> str:
    """A short reason a test log failed for every rollout alike, from what it says (best effort).

    ``network-bound``, ``python-version``, ``missing-file``, ``dependency-drift``, or
    ``unknown``: what ``validate`` prints next to a task that does not flip. Where pytest
    printed a FAILURES section, only that part is read (the warnings summary says nothing about
    why a test failed).
    """
    cut = log.find("= FAILURES =")
    part = log[cut:] if cut >= 0 else log
    if cut >= 0:
        ends = [i for i in (part.find(" warnings summary "), part.find(" short test summary info ")) if i > 0]
        part = part[: min(ends)] if ends else part
    for name, pattern in _DIAGNOSES:
        if pattern.search(part):
            return name
    return "unknown"


@dataclass(frozen=True, slots=True)
class RepositoryTestRun(HiddenTestRun):
    """A :class:`~reliabench.hidden_tests.fresh.HiddenTestRun` with what SWE-bench reports next to it.

    Attributes:
        swebench: ``resolution`` (``RESOLVED_FULL`` / ``RESOLVED_PARTIAL`` / ``RESOLVED_NO``),
            ``resolved``, ``fail_to_pass`` and ``pass_to_pass`` as ``[passed, total]``: the
            record's ``meta["swebench"]``.
        patch: The agent's patch (``git diff`` of the checkout against the base commit, bounded).
        status_map: The parsed test log (test -> SWE-bench status).
        output: The test command's whole output (stdout then stderr), for the SWE-bench log file.
    """

    swebench: dict[str, Any] = field(default_factory=dict)
    patch: str = ""
    status_map: dict[str, str] = field(default_factory=dict)
    output: str = ""


@dataclass(frozen=True, slots=True)
class PreparedRepository:
    """What a repository task needs before its first rollout.

    Attributes:
        env: The built environment (base venv, task venv, checkout after the install
            command); None for an image spec (the image is the environment).
        test_files: Path -> content after the test patch (None: deleted).
        tree: The checkout of an image spec (None: the task layer's ``env.tree``).
    """

    env: TaskEnv | None
    test_files: dict[str, bytes | None]
    tree: Path | None = None

    @property
    def starter(self) -> Path:
        """The checkout every rollout's workspace is a copy of."""
        if self.env is not None:
            return self.env.tree
        assert self.tree is not None  # prepare() gives one or the other
        return self.tree

    @property
    def built(self) -> bool:
        """The environment was built by this preparation (False: from the cache, or an image)."""
        return self.env is not None and self.env.built


@dataclass(frozen=True, slots=True)
class ControlRun:
    """The test command on the untouched base checkout with the test patch (no agent).

    Attributes:
        reported: The tests reported (a signed start line, or a test line in the log).
        timed_out: The wall limit stopped it.
        failing_p2p: PASS_TO_PASS tests that did not pass: they would fail every rollout.
        diagnosis: :func:`diagnose` of its log (``network-bound``, ``missing-file``, ...).
        tail: The last lines of its output.
        seconds: Its wall-clock seconds.
    """

    reported: bool
    timed_out: bool
    failing_p2p: tuple[str, ...]
    diagnosis: str
    tail: str
    seconds: float

    def problem(self, limit_s: float) -> str | None:
        """Why every rollout of the task would fail for the environment's reasons, or None."""
        if self.timed_out:
            return (f"the tests do not finish in {limit_s:g} s on the untouched checkout ({self.diagnosis}; "
                    "a test that needs the network may wait between retries)")
        if not self.reported:
            return f"the tests report nothing on the untouched checkout ({self.diagnosis}): {self.tail}"
        if self.failing_p2p:
            return (f"{len(self.failing_p2p)} PASS_TO_PASS test(s) fail on the untouched checkout "
                    f"({self.diagnosis}), so every rollout would fail them: {list(self.failing_p2p[:3])}")
        return None


def _cfg(task: Task) -> Any:
    if task.repository is None:
        raise SuiteError([f'{task.root}: not a repository task (test_runner = "repository")'])
    return task.repository


_SIGNED_PARSERS: Final = ("pytest", "pytest-options", "pytest-v2")
_WORD: Final = {
    "passed": "PASSED",
    "failed": "FAILED",
    "error": "ERROR",
    "skipped": "SKIPPED",
    "xfailed": "XFAIL",
}
_SUCCESS: Final = ("PASSED", "XFAIL")
_MAX_CHANNEL: Final = 32 * 1024 * 1024
_WRAP: Final = (
    "import os, sys\n"
    "k = os.open(sys.argv[1], os.O_RDONLY | os.O_NOFOLLOW); os.unlink(sys.argv[1])\n"
    "o = os.open(sys.argv[2], os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW); os.unlink(sys.argv[2])\n"
    "os.set_inheritable(k, True); os.set_inheritable(o, True)\n"
    "os.environ['RELIABENCH_OUTCOME_FD'] = str(o); os.environ['RELIABENCH_OUTCOME_KEY_FD'] = str(k)\n"
    "os.execv(sys.argv[3], sys.argv[3:])\n"
)
"""Starts pytest with the outcome channel: the key and outcome files are opened, then removed
from the workspace before anything of the repository runs."""


def _signs(cfg: RepositoryConfig) -> bool:
    """The task's tests are pytest's: they report through the signed outcome plugin too."""
    return cfg.log_parser in _SIGNED_PARSERS and bool(cfg.test_command) and cfg.test_command[0] == "pytest"


class _SignedChannel:
    """The outcome plugin's channel for one run of a repository's own pytest.

    The plugin (:mod:`reliabench.hidden_tests._outcome_plugin`, staged alone: no import guard,
    the repository's tests import as they always do) signs one line per test with a fresh key.
    The key and the outcome file are handed over as files in the workspace that the starting
    wrapper opens and removes before pytest starts; the harness reads the outcome file through
    a descriptor it opened before the run. The tested code can truncate its own outcomes
    (tests without a line fail) but cannot write a line that verifies.
    """

    def __init__(self, workspace: Path) -> None:
        self.workspace = workspace
        self.key = secrets.token_hex(32).encode("ascii")
        self.tag = secrets.token_hex(8)
        self.stage = Path(tempfile.mkdtemp(prefix="rb-plugin-"))
        self._fd = -1

    def __enter__(self) -> _SignedChannel:
        os.chmod(self.stage, 0o755)
        target = self.stage / f"{PLUGIN_MODULE}.py"
        shutil.copyfile(Path(__file__).with_name("_outcome_plugin.py"), target)
        os.chmod(target, 0o644)
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
        with os.fdopen(os.open(self._key_path, flags, 0o600), "wb") as fh:
            fh.write(self.key)
        os.close(os.open(self._out_path, flags, 0o600))
        self._fd = os.open(self._out_path, os.O_RDONLY | os.O_NOFOLLOW)
        return self

    @property
    def _key_path(self) -> Path:
        return self.workspace / f".rb-key-{self.tag}"

    @property
    def _out_path(self) -> Path:
        return self.workspace / f".rb-out-{self.tag}"

    def wrap(self, workdir: str, venv: Path, argv: Sequence[str]) -> list[str]:
        """``pytest ARGS`` as the wrapper that hands the channel over, with the plugin loaded."""
        return [
            str(venv / "bin" / "python"),
            "-c",
            _WRAP,
            f"{workdir}/.rb-key-{self.tag}",
            f"{workdir}/.rb-out-{self.tag}",
            str(venv / "bin" / "pytest"),
            "-p",
            PLUGIN_MODULE,
            *argv[1:],
        ]

    def read(self) -> bytes:
        """What the plugin wrote (at most 32 MiB; more is cut, and the end line is then missing)."""
        chunks, total = [], 0
        os.lseek(self._fd, 0, os.SEEK_SET)
        while total < _MAX_CHANNEL and (chunk := os.read(self._fd, 1 << 20)):
            chunks.append(chunk)
            total += len(chunk)
        return b"".join(chunks)[:_MAX_CHANNEL]

    def __exit__(self, *exc: object) -> None:
        if self._fd >= 0:
            os.close(self._fd)
        for path in (self._key_path, self._out_path):
            with contextlib.suppress(OSError):
                os.unlink(path)  # never follows a link
        remove_tree(self.stage)


def _trusted_map(
    parser: str, listed: Sequence[str], log_map: dict[str, str], channel: Channel | None
) -> tuple[dict[str, str], list[str]]:
    """The statuses to grade by, and the listed tests whose passing the log claims without a signed line.

    The log decides, as in SWE-bench; the signed outcomes can only take a pass away: a listed
    test the log calls passed gets the signed status instead (``FAILED`` when it has none),
    so text the tested code printed never passes a test. Without the channel, the log alone.
    """
    if channel is None:
        return log_map, []
    signed: dict[str, str] = {}
    for name, (outcome, _sec) in channel.tests.items():
        key = normalise_name(parser, name)
        status = "FAILED" if name in channel.poisoned else _WORD.get(outcome, "FAILED")
        if signed.get(key, "PASSED") in _SUCCESS:  # names cut alike: any non-pass wins
            signed[key] = status
    out = dict(log_map)
    lowered: list[str] = []
    for name in dict.fromkeys(listed):
        if log_map.get(name) in _SUCCESS and signed.get(name) not in _SUCCESS:
            out[name] = signed.get(name, "FAILED")
            lowered.append(name)
    return out, lowered


@dataclass(frozen=True, slots=True)
class _Executed:
    result: SandboxResult
    output: str
    log_map: dict[str, str]
    channel: Channel | None
    isolation: str


class RepositoryTests:
    """The hidden-test runner of repository tasks (see the module docstring)."""

    path: TestPath = "repository"

    def __init__(
        self,
        open_at: open_at_type | None = None,
        *,
        open_for: OpenerFor | None = None,
        cache: Path | None = None,
        slot: int = 0,
        max_patch_bytes: int = 8 * 1024 * 1024,
    ) -> None:
        """A runner over ``open_at`` (one environment for every task) or ``open_for`` (a run's).

        Args:
            open_at: Starts an environment on a host folder shown at the task's ``workdir``;
                used for the install command and control runs. The tests of a rollout run in
                ``request.open_environment``.
            open_for: Instead of ``open_at``: ``(task, slot) -> open_at`` (a run gives each
                task its own backend and prepared spec, and each worker its slot).
            cache: The environments' cache folder (default
                :func:`reliabench.repository.venv.cache_root`).
            slot: The worker slot of builds and control runs that name none.
            max_patch_bytes: The agent's patch is cut at about this many characters.

        Raises:
            InvalidArgumentError: neither or both of ``open_at`` and ``open_for``.
        """
        if (open_at is None) == (open_for is None):
            raise InvalidArgumentError("RepositoryTests: give exactly one of open_at and open_for")
        self.open_at = open_at
        self._open_for = open_for
        self._cache = cache
        self._slot = slot
        self._max_patch = max_patch_bytes
        self._prepared: dict[str, PreparedRepository] = {}
        self._control: dict[str, ControlRun] = {}
        self._gold: dict[str, RepositoryTestRun] = {}
        self._locks: dict[tuple[str, str], threading.Lock] = {}
        self._guard = threading.Lock()
        self._trees: list[Path] = []

    def opener(self, task: Task, slot: int | None = None) -> open_at_type:
        """The :data:`open_at_type` of ``task`` on worker ``slot`` (default: the runner's own)."""
        if self._open_for is not None:
            return self._open_for(task, self._slot if slot is None else slot)
        assert self.open_at is not None  # __init__ checked it
        return self.open_at

    def _lock(self, task: Task, what: str) -> threading.Lock:
        with self._guard:
            return self._locks.setdefault((task.id, what), threading.Lock())

    def prepare(self, task: Task, *, slot: int | None = None) -> PreparedRepository:
        """Check out the repository, build its environment, apply the test patch to the base tree (once).

        Args:
            task: The task.
            slot: The worker slot the install command runs on (default: the runner's own).

        Raises:
            RepositorySourceError: The repository is not at its base commit (a SandboxError).
            EnvironmentBuildError: The environment failed to build (a SandboxError).
            SuiteError: The test patch does not apply to the base tree.
        """
        done = self._prepared.get(task.id)
        if done is not None:
            return done
        with self._lock(task, "prepare"):
            if task.id not in self._prepared:
                self._prepared[task.id] = self._prepare(task, self._slot if slot is None else slot)
            return self._prepared[task.id]

    def _prepare(self, task: Task, slot: int) -> PreparedRepository:
        from reliabench.tasks.repository import read_patch

        cfg = _cfg(task)
        where = f"task {task.id}"
        if cfg.source is None:
            raise RepositorySourceError(
                f"{where}: no repository (convert it again with --repos DIR holding "
                f"the repository at {cfg.base_commit})"
            )
        env: TaskEnv | None = None
        tree: Path | None = None
        if cfg.environment.image is None:
            base = build_base(cfg.environment, cache=self._cache, where=where)
            with tempfile.TemporaryDirectory(prefix="rb-checkout-") as tmp:
                co = Path(tmp) / "checkout"
                checkout(cfg.source, cfg.base_commit, co, where=f"{where}: {cfg.source}")
                env = build_task(
                    cfg.environment,
                    base,
                    checkout=co,
                    tree_id=tree_id(co),
                    workdir=cfg.workdir,
                    open_environment=self.opener(task, slot),
                    slot=slot,
                    cache=self._cache,
                    where=where,
                )
            starter = env.tree
        else:  # the image is the environment: only the checkout, kept until close()
            holder = Path(tempfile.mkdtemp(prefix="rb-image-checkout-"))
            self._trees.append(holder)
            tree = starter = holder / "tree"
            checkout(cfg.source, cfg.base_commit, tree, where=f"{where}: {cfg.source}")
            readable_tree(holder)
        try:
            files = patched_test_files(starter, read_patch(cfg.test_patch))
        except PatchApplyError as exc:
            raise SuiteError([f"{cfg.test_patch}: {exc}"]) from None
        return PreparedRepository(env, files, tree)

    def materialize(self, task: Task, dest: Path, *, slot: int | None = None) -> None:
        """Make ``dest`` (new) a rollout's starting workspace: a copy of the prepared checkout.

        The task is prepared first if it was not (its install command on ``slot``).
        """
        shutil.copytree(self.prepare(task, slot=slot).starter, dest, symlinks=True)

    def collect(
        self, task: Task, open_environment: EnvironmentOpener, *, starter: Path, limits: Limits, slot: int
    ) -> tuple[TestOutcome, ...]:
        """The FAIL_TO_PASS then PASS_TO_PASS tests (each once), after :meth:`prepare` (on ``slot``)."""
        cfg = _cfg(task)
        self.prepare(task, slot=slot)
        names = dict.fromkeys((*cfg.fail_to_pass, *cfg.pass_to_pass))
        return tuple(TestOutcome(n, "skipped") for n in names)

    def agent_patch(self, task: Task, workspace: Path, *, max_bytes: int | None = None) -> str:
        """The agent's patch: the checkout's ``git diff`` against the base commit, bounded.

        Cut at ``max_bytes`` (default, and at most, the runner's ``max_patch_bytes``).
        """
        limit = self._max_patch if max_bytes is None else min(max_bytes, self._max_patch)
        return repository_diff(self.prepare(task).starter, workspace, max_bytes=limit)

    def _execute(self, task: Task, open_env: EnvironmentOpener, workspace: Path, limits: Limits) -> _Executed:
        """Run the test command on ``workspace`` (the signed outcome channel where it is pytest)."""
        cfg = _cfg(task)
        prepared = self.prepare(task)
        venv = prepared.env.venv if prepared.env is not None else None
        python = None if venv is None else str(venv / "bin" / "python")
        argv = [python if a == "python" and python is not None else a for a in cfg.test_command]
        wall = cfg.test_timeout_s or limits.wall_s
        lim = Limits(
            wall_s=wall,
            cpu_s=max(limits.cpu_s, wall),
            memory_bytes=limits.memory_bytes,
            max_procs=limits.max_procs,
            file_size_bytes=limits.file_size_bytes,
            output_bytes=max(limits.output_bytes, _MIN_OUTPUT),
            tmp_bytes=limits.tmp_bytes,
        )
        if prepared.env is not None:
            variables = venv_env(prepared.env, dict(cfg.environment.env))
            mounts = list(prepared.env.mounts)
        else:
            variables = {**_IMAGE_ENV, **cfg.environment.env}
            mounts = []
        with contextlib.ExitStack() as stack:
            signs = venv is not None and _signs(cfg)
            channel = stack.enter_context(_SignedChannel(workspace)) if signs else None
            if channel is not None:
                mounts.append(Mount(channel.stage))
                variables["PYTHONPATH"] = str(channel.stage)
            env = open_env(mounts)
            try:
                if channel is not None and venv is not None:
                    argv = channel.wrap(env.workdir, venv, argv)
                res = env.exec(argv, env=variables, limits=lim)
                isolation = env.isolation
            finally:
                env.close()
            signed = None if channel is None else parse_channel(channel.read(), channel.key, None)
        output = res.stdout + ("\n" + res.stderr if res.stderr else "")
        return _Executed(res, output, parse_log(cfg.log_parser, output), signed, isolation)

    def control(self, task: Task, limits: Limits, *, open_at: open_at_type | None = None) -> ControlRun:
        """The test command on a fresh copy of the base tree with the test patch (once per task).

        Args:
            task: The task.
            limits: The test phase's limits.
            open_at: Where to run it (a rollout's own slot); default :meth:`opener`.

        Raises:
            SandboxError: The environment could not be started (the harness's failure).
        """
        done = self._control.get(task.id)
        if done is not None:
            return done
        with self._lock(task, "control"):
            if task.id in self._control:
                return self._control[task.id]
            cfg = _cfg(task)
            prepared = self.prepare(task)
            start = open_at or self.opener(task)
            base = Path(tempfile.mkdtemp(prefix="rb-control-"))
            began = time.monotonic()
            try:
                os.chmod(base, 0o711)
                ws = base / "workspace"
                shutil.copytree(prepared.starter, ws, symlinks=True)
                lay_files(ws, prepared.test_files)
                ex = self._execute(task, lambda m: start(ws, m), ws, limits)
            finally:
                remove_tree(base)
            status, _ = _trusted_map(cfg.log_parser, cfg.pass_to_pass, ex.log_map, ex.channel)
            graded = grade(status, (), cfg.pass_to_pass)
            self._control[task.id] = ControlRun(
                reported=ex.channel.started if ex.channel is not None else bool(ex.log_map),
                timed_out=ex.result.timed_out,
                failing_p2p=graded.pass_to_pass.failure,
                diagnosis=diagnose(ex.output),
                tail=_tail(ex.output),
                seconds=time.monotonic() - began,
            )
            return self._control[task.id]

    def gold_run(self, task: Task, limits: Limits, *, open_at: open_at_type | None = None,
                 slot: int | None = None) -> RepositoryTestRun | None:
        """The gold patch graded on a fresh copy of the checkout (once per task); None without one.

        ``open_at`` (default :meth:`opener`) on worker ``slot`` (default: the runner's own) runs it.

        Raises:
            PatchApplyError: The gold patch does not apply to the checkout.
            SandboxError: The environment could not be started (the harness's failure).
        """
        from reliabench.tasks.repository import read_patch

        cfg = _cfg(task)
        if cfg.gold_patch is None:
            return None
        done = self._gold.get(task.id)
        if done is not None:
            return done
        with self._lock(task, "gold"):
            if task.id in self._gold:
                return self._gold[task.id]
            prepared = self.prepare(task)
            start = open_at or self.opener(task, slot)
            base = Path(tempfile.mkdtemp(prefix="rb-gold-"))
            try:
                os.chmod(base, 0o711)
                ws = base / "workspace"
                shutil.copytree(prepared.starter, ws, symlinks=True)
                apply_patch(ws, read_patch(cfg.gold_patch), what="gold patch")
                names = dict.fromkeys((*cfg.fail_to_pass, *cfg.pass_to_pass))
                expected = tuple(TestOutcome(n, "skipped") for n in names)
                request = TestRequest(task=task, workspace=ws, expected=expected, limits=limits,
                                      slot=self._slot if slot is None else slot,
                                      open_environment=lambda m: start(ws, m), open_at=start)
                self._gold[task.id] = self.run(request)
            finally:
                remove_tree(base)
            return self._gold[task.id]

    def base_problem(self, task: Task, limits: Limits, *, slot: int | None = None) -> str | None:
        """Why no rollout of ``task`` could be graded here, or None: the run's check before its first rollout.

        Prepares the task (on ``slot``), then grades its gold patch (:meth:`gold_run`) -- or,
        for a task without one, runs the control (:meth:`control`). A gold patch that does not
        resolve the task, or a control that times out, reports nothing or fails a PASS_TO_PASS
        test, means the environment fails every rollout (a test that needs the network, a
        missing data file, a drifted dependency, a Python too new for the code), never the
        agent. A
        task found sound is remembered in the environment cache (by the task layer's key, the
        patches, the test command, the lists and the limits): a resumed or repeated run does
        not check it again.

        Raises:
            RepositorySourceError: The repository is not at its base commit (a SandboxError).
            EnvironmentBuildError: The environment failed to build (a SandboxError).
            SuiteError: The test patch does not apply to the base tree.
            SandboxError: The environment could not be started.
        """
        self.prepare(task, slot=slot)
        cfg = _cfg(task)
        wall = cfg.test_timeout_s or limits.wall_s
        mark = self._sound_mark(task, limits)
        if mark is not None and mark.is_file():
            return None
        open_at = self.opener(task, slot)
        why: str | None = None
        try:
            gold = self.gold_run(task, limits, open_at=open_at, slot=slot)
        except PatchApplyError as exc:
            return f"the gold patch does not apply to the checkout ({exc}): the task is broken"
        if gold is None:  # no reference: the untouched checkout must at least keep PASS_TO_PASS
            why = self.control(task, limits, open_at=open_at).problem(wall)
        elif gold.status == "test_error":
            why = f"the tests do not run: {gold.reason}"
        elif gold.status == "timeout":
            why = f"the gold patch's tests do not finish in {wall:g} s ({diagnose(gold.output)})"
        elif not gold.swebench["resolved"]:
            f2p, p2p = gold.swebench["fail_to_pass"], gold.swebench["pass_to_pass"]
            why = (f"the gold patch does not resolve the task here ({diagnose(gold.output)}: "
                   f"FAIL_TO_PASS {f2p[0]}/{f2p[1]}, PASS_TO_PASS {p2p[0]}/{p2p[1]})")
        if why is None and mark is not None:
            _write_mark(mark)
        return why

    def _sound_mark(self, task: Task, limits: Limits) -> Path | None:
        """Where a task found sound by :meth:`base_problem` is remembered (None: an image task: nowhere)."""
        from reliabench.repository.venv import cache_root

        prepared = self.prepare(task)
        if prepared.env is None:  # an image's content is the runtime's: not keyed here
            return None
        cfg = _cfg(task)
        parts = [prepared.env.key, _digest(cfg.test_patch), _digest(cfg.gold_patch), list(cfg.test_command),
                 cfg.log_parser, list(cfg.fail_to_pass), list(cfg.pass_to_pass),
                 cfg.test_timeout_s or limits.wall_s, limits.memory_bytes, limits.max_procs]
        key = hashlib.sha256(json.dumps(parts, separators=(",", ":")).encode()).hexdigest()
        return (self._cache or cache_root()) / "checks" / f"{key}.sound"

    def _control_reports(self, task: Task, limits: Limits, open_at: open_at_type | None) -> bool:
        """Whether the tests report on the base tree with the test patch (a harness that cannot start: no)."""
        try:
            return self.control(task, limits, open_at=open_at).reported
        except (OSError, SandboxError):
            return False

    def run(self, request: TestRequest) -> RepositoryTestRun:
        """Grade one rollout's workspace (see the module docstring).

        Raises:
            SandboxError: The environment could not be started (the harness's failure).
        """
        task = request.task
        cfg = _cfg(task)
        prepared = self.prepare(task)
        started = time.monotonic()
        patch = repository_diff(prepared.starter, request.workspace, max_bytes=self._max_patch)
        tamper = find_tamper_files(request.workspace, starter=prepared.starter)
        lay_files(request.workspace, prepared.test_files)
        ex = self._execute(task, request.open_environment, request.workspace, request.limits)
        res, output = ex.result, ex.output
        status_map, lowered = _trusted_map(
            cfg.log_parser, (*cfg.fail_to_pass, *cfg.pass_to_pass), ex.log_map, ex.channel
        )
        graded: RepositoryGrade = grade(status_map, cfg.fail_to_pass, cfg.pass_to_pass)
        reasons: list[str] = []
        status: HiddenTestStatus = "completed"
        reported = ex.channel.started if ex.channel is not None else bool(ex.log_map)
        if res.timed_out:
            status = "timeout"
            reasons.append(f"wall time limit of {cfg.test_timeout_s or request.limits.wall_s:g} s reached")
        elif not reported:
            if self._control_reports(task, request.limits, request.open_at):
                reasons.append(
                    f"the tests reported nothing on this workspace (exit {res.returncode}), but they "
                    "do on the base checkout: the rollout's changes broke it"
                )
            else:
                status = "test_error"
                reasons.append(
                    f"the tests reported nothing, on the base checkout either "
                    f"({diagnose(output)}; exit {res.returncode}): {_tail(output)}"
                )
        if res.killed_reason and not res.timed_out:
            reasons.append(f"killed: {res.killed_reason}")
        forged = bool(lowered) or bool(ex.channel is not None and ex.channel.started and ex.channel.problems)
        if lowered:
            reasons.append(
                f"the log claims {len(lowered)} test(s) passed that the signed outcomes do not: {lowered[:3]}"
            )
        if ex.channel is not None and ex.channel.problems:
            reasons.append("forged or inconsistent outcome lines: " + "; ".join(ex.channel.problems[:3]))
        if ex.channel is not None and ex.channel.started and not ex.channel.ended and not res.timed_out:
            reasons.append(f"the test process ended before the session finished (exit {res.returncode})")
        failing = [o.name for o in graded.outcomes if o.failing]
        if failing and reported:
            reasons.append(f"{len(failing)} of {len(graded.outcomes)} test(s) did not pass: {failing[:3]}")
        if tamper:
            reasons.append("files that may change how tests run: " + ", ".join(tamper[:5]))
        meta = graded.meta()
        meta["signed"] = ex.channel is not None
        return RepositoryTestRun(
            outcomes=graded.outcomes,
            status=status,
            reason="; ".join(reasons) or None,
            tamper_suspected=bool(tamper),
            tamper_files=tamper,
            forged=forged,
            isolation=ex.isolation,
            seconds=time.monotonic() - started,
            log=_cut(output),
            swebench=meta,
            patch=patch,
            status_map=ex.log_map,
            output=output,
        )

    def close(self) -> None:
        """Forget prepared tasks (the built environments stay in the cache); idempotent."""
        self._prepared.clear()
        self._control.clear()
        self._gold.clear()
        trees, self._trees = self._trees, []
        for holder in trees:
            remove_tree(holder)


def _digest(path: Path | None) -> str:
    return "" if path is None else hashlib.sha256(path.read_bytes()).hexdigest()


def _write_mark(path: Path) -> None:
    """Create ``path`` (an empty file), its folder readable by all; a failure only costs a re-check."""
    with contextlib.suppress(OSError):
        path.parent.mkdir(parents=True, exist_ok=True)
        os.chmod(path.parent, 0o755)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}")
        tmp.write_text("sound\n", encoding="utf-8")
        os.replace(tmp, path)


def _tail(text: str, lines: int = 3) -> str:
    return " | ".join(line.strip() for line in text.strip().splitlines()[-lines:])


def _cut(text: str) -> str:
    if len(text) <= _LOG_BYTES:
        return text
    return text[: _LOG_BYTES // 2] + "\n[... log cut ...]\n" + text[-_LOG_BYTES // 2 :]
