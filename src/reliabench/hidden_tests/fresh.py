"""Hidden tests in a FRESH pytest process, in any environment: one trustworthy outcome per test.

:class:`FreshPytest` is the hidden-test runner (:mod:`reliabench.hidden_tests.layer`) that
starts a new interpreter per run in the environment the run opens for it -- a host sandbox
(bubblewrap, namespaces, none) or a container. How a run works:

1. The workspace is scanned for files that could change how pytest or Python start
   (``conftest.py``, ``pytest.ini``, ``sitecustomize.py``, ``*.pth``, a ``pytest.py`` ...) or
   that are named like a module of the hidden tests (``test_adder.py``, ``helpers.py``).
   They are *flagged* (``tamper_suspected``, ``tamper_files``) and cannot take effect:
2. the hidden tests are copied to a private staging directory outside the workspace, shown
   read-only in the environment (a mount; copied into a ``tests = "same"`` container after the
   agent's processes were stopped) with our own ini file (``-c``), ``--rootdir`` and
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
4. the plugin writes one HMAC-signed line per test *as it finishes* to its connection to a
   socket the parent listens on in the environment's channel folder and drains itself
   (:mod:`reliabench.hidden_tests.outcome_socket`: one connection accepted, nothing in the
   sandbox can truncate or rewrite what was written), keyed with a per-run secret the parent
   sends over that connection, read before any test module is imported;
5. (:mod:`reliabench.hidden_tests.judging`) the parent trusts only lines with a valid MAC and
   sequence number, for expected test
   names, once each, and consistent with the plugin's end-of-session line. An expected test
   without a trusted outcome did not run: it counts as ``failed``. The exit code is never
   trusted. The parser never raises: a line it cannot check is a forged line;
6. no start line: a control run on the starter workspace decides whether the harness is
   broken (``test_error``, the runner's ``infra_error``) or this workspace stopped it (a
   failed rollout).

Every read of the workspace (the tamper scan, :mod:`reliabench.hidden_tests.tamper`) is an
``lstat`` walk with bounded ``O_NOFOLLOW | O_NONBLOCK`` reads (:mod:`reliabench.files.untrusted`).
:func:`run_hidden_tests` and :func:`collect_hidden_tests` are the one-call forms on a host
backend (a feedback run of an agent, a script).

Isolation of the hidden tests: in the AGENT phase the agent runs with only its workspace and
never sees the tests. In the TEST phase the tests must be readable by pytest, and pytest runs
the agent's code in the same process, so that code can read the (copied) tests; it cannot
change them (read-only bind) and cannot see other rollouts' workspaces.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from reliabench.errors import SandboxError
from reliabench.hidden_tests.channel import parse_channel
from reliabench.hidden_tests.judging import (
    HiddenTestRun,
    HiddenTestStatus,
    RawTestRunner,
    collected_tests,
    judge_hidden_tests,
)
from reliabench.hidden_tests.layer import EnvironmentOpener, OpenAt, TestRequest, fresh_open_at
from reliabench.hidden_tests.outcome_socket import OutcomeSocket
from reliabench.hidden_tests.staging import (
    PLUGIN_MODULE,
    RawRun,
    hidden_test_env,
    pytest_command,
    socket_channel,
    staged,
)
from reliabench.hidden_tests.tamper import TAMPER_NAMES, find_tamper_files, hidden_test_names
from reliabench.meta_keys import TestPath
from reliabench.records import TestOutcome
from reliabench.sandbox.base import Limits
from reliabench.sandbox.environment import HOST, EnvironmentBackend, Mount
from reliabench.sandbox.registry import get_backend

if TYPE_CHECKING:
    from reliabench.tasks.suite import Task

__all__ = [
    "PLUGIN_MODULE",
    "TAMPER_NAMES",
    "FreshPytest",
    "HiddenTestRun",
    "HiddenTestStatus",
    "collect_hidden_tests",
    "find_tamper_files",
    "hidden_test_names",
    "run_hidden_tests",
]


class FreshPytest:
    """A fresh pytest process per run, in the environment the run opens (see the module docstring).

    Args:
        python: The interpreter; None: this one on the host, ``python3`` (the image's) in a
            container. It needs pytest.
    """

    path: TestPath = "fresh"

    def __init__(self, python: str | None = None) -> None:
        self.python = python

    def raw_runner(self, open_environment: EnvironmentOpener, tests_dir: Path, *, slot: int,
                   limits: Limits, open_at: OpenAt | None = None) -> RawTestRunner:
        """The one raw run of ``tests_dir`` in an environment of ``open_environment`` (or ``open_at``)."""

        def raw(workspace: Path | None, *, collect_only: bool, expected: set[str] | None,
                order_seed: int | None) -> RawRun:
            key = secrets.token_hex(32).encode("ascii")
            extra = ["--collect-only"] if collect_only else []
            with staged(Path(tests_dir), slot) as staging:
                mounts = [Mount(staging)]
                if workspace is None:
                    env = open_environment(mounts)
                elif open_at is not None:
                    env = open_at(workspace, mounts)
                else:
                    raise SandboxError("no environment can be opened on another workspace here")
                try:
                    python = self.python or (sys.executable if env.image is None else "python3")
                    with OutcomeSocket(env.channel_host, key) as channel:
                        where = socket_channel(f"{env.channel_dir}/{channel.name}")
                        result = env.exec(pytest_command(python, staging, extra), limits=limits,
                                          env=hidden_test_env(where, env.workdir, order_seed))
                finally:
                    env.close()
            checked = parse_channel(channel.data, key, expected)
            if channel.overflow:
                checked.forge(f"the outcome stream exceeded {channel.cap} bytes ({channel.overflow} "
                              "more were dropped): junk written to the channel by the tested code")
            return RawRun(result, checked)

        return raw

    def collect(self, task: Task, open_environment: EnvironmentOpener, *, starter: Path,
                limits: Limits, slot: int) -> tuple[TestOutcome, ...]:
        """The task's expected tests: ``pytest --collect-only`` on the caller's copy of the starter.

        Raises:
            SuiteError: The tests cannot be collected on the starter.
            SandboxError: The harness could not run at all.
        """
        raw = self.raw_runner(open_environment, task.tests_dir, slot=slot, limits=limits)
        return collected_tests(raw(None, collect_only=True, expected=None, order_seed=None), task.tests_dir)

    def run(self, request: TestRequest) -> HiddenTestRun:
        """Run the hidden tests of one rollout (:func:`reliabench.hidden_tests.judging.judge_hidden_tests`).

        Raises:
            SandboxError: The environment could not be started (the harness's failure).
        """
        raw = self.raw_runner(request.open_environment, request.task.tests_dir, slot=request.slot,
                              limits=request.limits, open_at=request.open_at)
        return judge_hidden_tests(raw, workspace=request.workspace, tests_dir=request.task.tests_dir,
                                  expected=request.expected, wall_s=request.limits.wall_s,
                                  starter=request.starter, order_seed=request.order_seed,
                                  allowed_skips=request.allowed_skips)

    def close(self) -> None:
        """Nothing is held between runs."""


def _host_raw(workspace: Path, tests_dir: Path, backend: EnvironmentBackend | None, limits: Limits | None,
              slot: int, python: str | None) -> tuple[RawTestRunner, Limits]:
    chosen = backend or get_backend("auto")
    lim = limits or Limits()
    open_at = fresh_open_at(chosen, chosen.prepare(HOST), slot=slot, limits=lim)
    return FreshPytest(python).raw_runner(lambda mounts: open_at(Path(workspace), mounts), Path(tests_dir),
                                          slot=slot, limits=lim, open_at=open_at), lim


def collect_hidden_tests(
    workspace: Path,
    tests_dir: Path,
    *,
    backend: EnvironmentBackend | None = None,
    limits: Limits | None = None,
    slot: int = 0,
    python: str | None = None,
) -> tuple[TestOutcome, ...]:
    """Learn the expected hidden tests of a task by collecting them on its starter workspace.

    Run it once per task against the untouched STARTER workspace (trusted content), in the
    sandbox like a real run. The result is what :func:`run_hidden_tests` takes as
    ``expected``.

    Args:
        workspace: The starter workspace.
        tests_dir: The task's hidden tests directory.
        backend: A host backend (default: ``get_backend("auto")``).
        limits: Resource limits (default: :class:`Limits`).
        slot: The worker slot to run as.
        python: The interpreter (default: ``sys.executable``); it needs pytest.

    Returns:
        One ``TestOutcome`` per collected test, in collection order, with its pytest node id
        relative to ``tests_dir``, its ``security`` flag, and the placeholder outcome
        ``"skipped"`` (nothing ran).

    Raises:
        SuiteError: Some test modules cannot be collected, or no test was found.
        SandboxError: The harness could not run pytest at all.
    """
    raw, _ = _host_raw(workspace, tests_dir, backend, limits, slot, python)
    return collected_tests(raw(None, collect_only=True, expected=None, order_seed=None), Path(tests_dir))


def run_hidden_tests(
    workspace: Path,
    tests_dir: Path,
    *,
    expected: Sequence[TestOutcome | str] | None,
    backend: EnvironmentBackend | None = None,
    limits: Limits | None = None,
    slot: int = 0,
    python: str | None = None,
    starter: Path | None = None,
    order_seed: int | None = None,
    allowed_skips: Collection[str] = (),
) -> HiddenTestRun:
    """Run the hidden tests on a rollout's workspace in a fresh pytest process on a host backend.

    Args:
        workspace: The rollout's workspace (the agent's code; writable, the cwd).
        tests_dir: The hidden tests (trusted); copied to a private read-only directory.
        expected: The expected tests (from :func:`collect_hidden_tests` or node ids). Each
            gets exactly one outcome; one without a trusted line is ``failed``. None trusts
            this run's own collection (weaker: pass it whenever you can).
        backend: A host backend (default: ``get_backend("auto")``).
        limits: Resource limits (default: :class:`Limits`).
        slot: The worker slot to run as.
        python: The interpreter (default: ``sys.executable``); it needs pytest.
        starter: The untouched starter workspace; files it shipped are not flagged.
        order_seed: Run the tests in a random order drawn with this seed (re-tests use it to
            reveal order-dependent tests); None keeps the collection order.
        allowed_skips: The tests whose skip or xfail counts as ``skipped`` (the task's
            ``allowed_skips``); any other skip or xfail is ``failed`` and named in
            ``undeclared_skips`` (:func:`reliabench.hidden_tests.skips.judge_skips`).

    Returns:
        The outcomes and what was observed. Failures of the agent's code are outcomes, not
        exceptions.

    Raises:
        SandboxError: The sandbox itself could not be set up.
    """
    raw, lim = _host_raw(workspace, tests_dir, backend, limits, slot, python)
    return judge_hidden_tests(raw, workspace=Path(workspace), tests_dir=Path(tests_dir), expected=expected,
                              wall_s=lim.wall_s, starter=starter, order_seed=order_seed,
                              allowed_skips=allowed_skips)
