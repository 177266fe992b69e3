"""Helpers shared by the sandbox, containment and hidden-test tests."""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import textwrap
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest

from reliabench.errors import SandboxError
from reliabench.hidden_tests.fresh import HiddenTestRun, collect_hidden_tests, run_hidden_tests
from reliabench.meta_keys import TestRunner
from reliabench.records import TestOutcome
from reliabench.sandbox import SandboxBackend, get_backend, slot_uid, slots

_WARM: dict[str, Any] = {}

IN_CI = os.environ.get("CI", "").lower() not in ("", "0", "false")
"""In CI a containment path that cannot run is a failure, not a skip: the corpus must run there."""


def skip_or_fail_in_ci(reason: str) -> NoReturn:
    """Skip with ``reason`` locally; fail in CI, where every built-in execution path must work."""
    if IN_CI:
        pytest.fail(f"{reason} (CI must run every containment path: install what is missing)")
    pytest.skip(reason)


def warm_or_skip(kind: str = "tests") -> Any:
    """The process-wide warm test workers (``tests``) or warm backend (``backend``), or skip."""
    from reliabench.warm import warm_unavailable_reason

    why = warm_unavailable_reason()
    if why is not None:
        skip_or_fail_in_ci(f"warm test workers unavailable here: {why}")
    if not _WARM:
        from reliabench.warm import WarmTests, WarmWorkers
        from reliabench.warm.backend import WarmBackend

        workers = WarmWorkers()
        atexit.register(workers.close)
        _WARM["tests"] = tests = WarmTests(workers)
        atexit.register(tests.close)  # its staged tests (registered last: runs before the workers close)
        _WARM["backend"] = WarmBackend(workers)
    return _WARM[kind]


def warm_rollout(warm: Any, base: Path, name: str, solution: str, *, tests: str,
                 names: list[str], limits: Any, slot: int, runner: TestRunner) -> HiddenTestRun:
    """One warm rollout: ``solution`` as ``base/name/solution.py`` against ``tests`` staged once
    as ``base/tests/test_suite.py`` (kept for the next rollouts of the same ``base``)."""
    from reliabench.warm import run_warm_tests  # lazily, as warm_or_skip imports the warm package

    ws = base / name
    if ws.exists():
        shutil.rmtree(ws)
    ws.mkdir()
    (ws / "solution.py").write_text(textwrap.dedent(solution), encoding="utf-8")
    staged = base / "tests"
    if not staged.exists():
        staged.mkdir()
        (staged / "test_suite.py").write_text(tests, encoding="utf-8")
    return run_warm_tests(warm, ws, staged, expected=[TestOutcome(n, "skipped") for n in names],
                          limits=limits, slot=slot, test_runner=runner)


def backend_or_skip(name: str) -> Any:
    """The named backend (``warm`` included), or skip the test when it does not work here."""
    if name == "warm":
        return warm_or_skip("backend")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return get_backend(name)
    except SandboxError as exc:
        skip_or_fail_in_ci(f"{name} backend unavailable here: {exc}")


def python_for(backend: SandboxBackend, slot: int, modules: tuple[str, ...] = ()) -> str:
    """An interpreter the backend can run with ``modules``: namespaces needs one the slot uid can reach.

    Where none is (a clone in a 0700 folder: its venv; a system Python without pytest), the
    test skips with the reason -- a limit of that location, not a missing install, so it
    skips in CI too (the run's preflight refuses such a run: reliabench.run.test_paths).
    """
    if backend.name != "namespaces":
        return sys.executable
    from reliabench.sandbox.namespaces import harness_unreachable

    uid = slot_uid(slot)
    why = harness_unreachable(sys.executable, uid, modules)
    if why is None:
        return sys.executable
    system = "/usr/bin/python3"
    if os.path.exists(system) and slots.uid_can_reach(system, uid, uid, need=5) is None and _imports(
            system, uid, modules):
        return system
    pytest.skip(f"the namespaces backend cannot run a Python with {', '.join(modules) or 'nothing'} as the "
                f"slot uid from this location: {why}")


def run_backend_or_skip(name: str) -> Any:
    """The named backend for a run with fresh test processes, or skip (see :func:`fresh_harness_or_skip`)."""
    backend = backend_or_skip(name)
    fresh_harness_or_skip(backend)
    return backend


def fresh_harness_or_skip(backend: Any) -> None:
    """Skip (with the reason) where the run's fresh test harness cannot start as the slot uid.

    From a clone in a 0700 folder the namespaces backend cannot run this interpreter as a
    slot uid: a run refuses to start there (reliabench.run.test_paths.check_harness).
    """
    check = getattr(backend, "harness_problem", None)
    why = None if check is None else check(sys.executable, ("pytest",))
    if why is not None:
        pytest.skip(f"the {backend.name} backend cannot start the test harness from this location: {why}")


def _imports(python: str, uid: int, modules: tuple[str, ...]) -> bool:
    """Whether ``python``, run as ``uid``, imports ``modules``."""
    import subprocess

    code = "; ".join(f"import {m}" for m in modules) or "pass"
    try:
        proc = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", python, "-I",
                               "-c", code], capture_output=True, timeout=60, check=False, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


# --------------------------------------------------------------------------------------------
# test paths: every way hidden tests can be run, so hostile-input tests cover each of them
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class HiddenTestPath:
    """One way of running hidden tests, for parametrised tests.

    ``run`` has the signature of ``reliabench.hidden_tests.fresh.run_hidden_tests`` minus ``backend``
    and ``python``. A new path (say warm forked workers) is one more entry in
    :data:`HIDDEN_TEST_PATHS` with its own ``run``.
    """

    name: str
    backend: SandboxBackend
    python: str
    worker: Any = None

    def run(self, workspace: Path, tests_dir: Path, **kw: Any) -> HiddenTestRun:
        """Run the hidden tests of ``tests_dir`` on ``workspace`` this way (``test_runner``: warm only)."""
        if self.worker is not None:
            from reliabench.warm import run_warm_tests

            return run_warm_tests(self.worker, workspace, tests_dir, **kw)  # type: ignore[no-any-return]
        kw.pop("test_runner", None)  # a fresh process runs every suite with pytest
        return run_hidden_tests(workspace, tests_dir, backend=self.backend, python=self.python, **kw)

    def collect(self, workspace: Path, tests_dir: Path, **kw: Any) -> tuple[Any, ...]:
        """Collect the hidden tests of ``tests_dir`` on ``workspace`` this way."""
        if self.worker is not None:
            from reliabench.warm import collect_warm_tests

            return collect_warm_tests(self.worker, workspace, tests_dir, **kw)  # type: ignore[no-any-return]
        return collect_hidden_tests(workspace, tests_dir, backend=self.backend, python=self.python, **kw)


@dataclass(frozen=True)
class ContainerTestPath(HiddenTestPath):
    """Hidden tests in a container of an image task: a fresh container of the test image per run.

    What a run of an ``[environment] image = ...`` task does (the runner's fresh path): the
    workspace bind-mounted at ``/workspace``, the staged tests mounted read-only, the outcome
    socket in the channel folder at ``/run/reliabench``, the image's ``python3``; a control
    run on the starter starts a container of its own. ``mounts`` are shown in every container
    of the run besides (a harness wrapper the test brings, never the agent's).
    """

    prepared: Any = None

    def run(self, workspace: Path, tests_dir: Path, *, mounts: tuple[Any, ...] = (), python: str | None = None,
            **kw: Any) -> HiddenTestRun:
        """Run the hidden tests of ``tests_dir`` on ``workspace`` in containers of the image."""
        from reliabench.hidden_tests.fresh import FreshPytest
        from reliabench.hidden_tests.judging import judge_hidden_tests
        from reliabench.hidden_tests.layer import fresh_open_at
        from reliabench.sandbox import Limits

        kw.pop("test_runner", None)
        limits, slot = kw.pop("limits", None) or Limits(), kw.pop("slot", 0)
        start = fresh_open_at(self.backend, self.prepared, slot=slot, limits=limits)

        def open_at(ws: Path, more: Any) -> Any:
            return start(ws, [*more, *mounts])

        raw = FreshPytest(python or self.python).raw_runner(lambda more: open_at(Path(workspace), more),
                                                            Path(tests_dir), slot=slot, limits=limits,
                                                            open_at=open_at)
        return judge_hidden_tests(raw, workspace=Path(workspace), tests_dir=Path(tests_dir), wall_s=limits.wall_s,
                                  expected=kw.pop("expected", None), **kw)

    def collect(self, workspace: Path, tests_dir: Path, **kw: Any) -> tuple[Any, ...]:
        """Collect the hidden tests of ``tests_dir`` on ``workspace`` in a container of the image."""
        from reliabench.hidden_tests.fresh import FreshPytest
        from reliabench.hidden_tests.judging import collected_tests
        from reliabench.hidden_tests.layer import fresh_opener
        from reliabench.sandbox import Limits

        limits, slot = kw.pop("limits", None) or Limits(), kw.pop("slot", 0)
        opener = fresh_opener(self.backend, self.prepared, Path(workspace), slot=slot, limits=limits)
        raw = FreshPytest(self.python).raw_runner(opener, Path(tests_dir), slot=slot, limits=limits)
        return collected_tests(raw(None, collect_only=True, expected=None, order_seed=None), Path(tests_dir))


HIDDEN_TEST_PATHS: tuple[str, ...] = ("bubblewrap", "namespaces", "none", "warm")
"""The ids of the host paths; ``hidden_test_path_or_skip`` builds one (``warm``: warm test workers)."""

CONTAINER_TEST_PATHS: tuple[str, ...] = ("podman", "docker")
"""The container paths: the tests of an image task (the test image) on each runtime."""


def hidden_test_path_or_skip(name: str, slot: int, modules: tuple[str, ...] = ("pytest",)) -> HiddenTestPath:
    """The named hidden-test path for ``slot``, or skip when it cannot work on this host (fail in CI).

    ``modules``: what the tested code imports besides (a namespaces path needs an interpreter the
    slot uid can reach with them: :func:`python_for`).
    """
    if name in CONTAINER_TEST_PATHS:
        from container_helpers import container_backend_or_skip

        from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE
        from reliabench.sandbox.environment import EnvironmentSpec

        backend = container_backend_or_skip(name)
        return ContainerTestPath(name, backend, "python3",
                                 prepared=backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE)))
    if name == "warm":
        worker = warm_or_skip("tests")
        return HiddenTestPath(name, backend_or_skip("auto"), sys.executable, worker)
    backend = backend_or_skip(name)
    return HiddenTestPath(name, backend, python_for(backend, slot, modules))


def endpoint_narrowing_or_skip() -> None:
    """Skip unless the agents' sandbox (``auto``) is bubblewrap, which ``network = "endpoint"`` needs."""
    from reliabench.agents import command as command_mod

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            name = command_mod.sandbox_backend("auto").name
        except SandboxError as exc:  # pragma: no cover - depends on the host
            pytest.skip(f"no sandbox: {exc}")
    if name != "bubblewrap":  # pragma: no cover - depends on the host
        pytest.skip(f'network = "endpoint" needs the bubblewrap backend; this host has {name}')


def deep_chain(root: Path, depth: int, name: str = "d", leaf: tuple[str, str] | None = None) -> None:
    """Make ``root/name/name/.../name`` (``depth`` levels) through directory descriptors.

    The chain may be deeper than ``PATH_MAX`` and Python's recursion limit, as an agent can
    make it; ``leaf`` is an optional ``(file name, text)`` written at the bottom. Keep such
    trees out of pytest's temp dirs: its clean-up recurses and would fail on them.
    """
    fd = os.open(root, os.O_RDONLY)
    try:
        for _ in range(depth):
            os.mkdir(name, dir_fd=fd)
            nxt = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = nxt
        if leaf is not None:
            with open(os.open(leaf[0], os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as fh:
                fh.write(leaf[1])
    finally:
        os.close(fd)


# --------------------------------------------------------------------------------------------
# kernel keyrings: code that stores a secret in a keyring, and code that looks for it
# --------------------------------------------------------------------------------------------

KEYRINGS = {"user": -4, "user-session": -5, "session": -3, "persistent": 0}
"""Keyrings a rollout could leave a key in (``persistent``: ``KEYCTL_GET_PERSISTENT``)."""


def keyring_code(action: str, rings: tuple[str, ...], secret: str = "b'no secret'") -> str:
    """Python code that ``store``s ``secret`` (a Python expression giving bytes) as key
    ``rb-leak`` in each of ``rings``, or ``find``s that key in them and prints
    ``found <ring> <text>``; calls
    ``add_key``/``keyctl`` through ``syscall(2)`` (no keyutils needed). Prints ``<ring> -errno``
    for a call that failed."""
    import json

    # add_key, keyctl (also in reliabench.sandbox.seccomp; spelled here so that the tests run
    # against a version without that module)
    add_key, keyctl = {"x86_64": (248, 250), "aarch64": (217, 219)}[os.uname().machine]
    return f"""
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
ADD, KEYCTL = {add_key}, {keyctl}
L = ctypes.c_long
def ring_id(name, spec):
    if name != "persistent":
        return spec
    return libc.syscall(L(KEYCTL), L(22), L(-1), L(-2))  # the uid's persistent keyring
for name, spec in {json.dumps({r: KEYRINGS[r] for r in rings})}.items():
    ring = ring_id(name, spec)
    if ring < 0 and ring != spec:
        print(name, -ctypes.get_errno(), flush=True)
        continue
    if {action!r} == "store":
        data = {secret}
        rc = libc.syscall(L(ADD), b"user", b"rb-leak", data, L(len(data)), L(ring))
        print(name, rc if rc >= 0 else -ctypes.get_errno(), flush=True)
    else:
        kid = libc.syscall(L(KEYCTL), L(10), L(ring), b"user", b"rb-leak", L(0))
        if kid < 0:
            print(name, -ctypes.get_errno(), flush=True)
            continue
        buf = ctypes.create_string_buffer(4096)
        n = libc.syscall(L(KEYCTL), L(11), L(kid), buf, L(4096))
        print("found", name, buf.raw[:max(0, min(n, 4096))].decode("utf-8", "replace"), flush=True)
"""
