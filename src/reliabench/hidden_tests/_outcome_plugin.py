"""The pytest plugin that runs inside the sandbox and reports one outcome line per test.

``reliabench.hidden_tests.fresh`` copies this file into a private staging directory and loads it with
``-p _reliabench_outcome_plugin``; it must therefore import nothing but the standard library
and pytest. It is not meant to be used on its own. It does not import pytest itself: pytest,
when it loads the plugin, is already imported (its hook markers are taken from there), and the
lean runner of a warm worker loads it for its writer alone, in a fork that may have no pytest.

Protocol (one JSON object per line, written to the outcome channel: the connection to the
harness's socket in the environment's channel folder -- ``RELIABENCH_OUTCOME_SOCKET``, see
:mod:`reliabench.hidden_tests.outcome_socket` -- or, in a warm worker's fork, the pipe it
inherited)::

    {"seq": 1, "event": "start", "pid": 12, "mac": "..."}
    {"seq": 2, "event": "collected", "tests": [["test_x.py::test_a", false], ...], "mac": ...}
    {"seq": 3, "event": "collect_error", "name": "test_y.py", "mac": ...}
    {"seq": 4, "event": "test", "name": "test_x.py::test_a", "outcome": "passed",
     "security": false, "mac": ...}                      # written as the test finishes
                      # outcome: passed | failed | error | skipped | xfailed (graded by the parent,
                      # reliabench.hidden_tests.skips: an undeclared skip or xfail is a failure)
    {"seq": 5, "event": "tamper", "what": "module planted in sys.modules: helpers", "mac": ...}
    {"seq": 9, "event": "end", "exitstatus": 0, "tests": [[name, outcome], ...], "mac": ...}

Before the workspace goes on ``sys.path`` the plugin installs the import guard staged beside it
(``_reliabench_import_guard``): the hidden tests, their helpers and nested ``conftest.py`` files
import only from the staging; before each collector and each test it removes modules planted
under their names (a ``tamper`` line, once per name).

``mac`` is an HMAC-SHA256, keyed with a per-run secret, of the line without ``mac``. Where
the channel is comes from the environment (``RELIABENCH_OUTCOME_SOCKET``, or
``RELIABENCH_OUTCOME_FD`` and ``RELIABENCH_OUTCOME_KEY_FD``; and ``RELIABENCH_WORKSPACE``),
which the plugin removes at import, before any test module is imported. The secret itself is
read, at import, from the socket (the harness sends it as the first and only line to the
one connection it accepts) or from a pipe that is then closed, so it is in no environment
block, file or descriptor the tests could read later.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pytest

__all__ = [
    "activate",
    "guard_imports",
    "purge_planted",
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_collectreport",
    "pytest_configure",
    "pytest_make_collect_report",
    "pytest_runtest_call",
    "pytest_runtest_logreport",
    "pytest_runtest_setup",
    "pytest_sessionfinish",
    "trust_module",
]

SOCKET_ENV = "RELIABENCH_OUTCOME_SOCKET"
FD_ENV = "RELIABENCH_OUTCOME_FD"
KEY_FD_ENV = "RELIABENCH_OUTCOME_KEY_FD"
WORKSPACE_ENV = "RELIABENCH_WORKSPACE"
ORDER_SEED_ENV = "RELIABENCH_ORDER_SEED"


def _connect(path: str) -> tuple[int, bytes]:
    """Connect to the harness's socket; return the connection's descriptor and the key."""
    import socket

    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    dirfd = -1
    try:
        if len(os.fsencode(path)) > 100:  # sun_path holds 108 bytes
            dirfd = os.open(os.path.dirname(path), os.O_PATH | os.O_DIRECTORY)
            sock.connect(f"/proc/self/fd/{dirfd}/{os.path.basename(path)}")
        else:
            sock.connect(path)
        key = b""
        while not key.endswith(b"\n") and len(key) < 4096:
            chunk = sock.recv(4096 - len(key))
            if not chunk:
                break
            key += chunk
    finally:
        if dirfd >= 0:
            os.close(dirfd)
    return sock.detach(), key.strip()


def _read_key(key_fd: int) -> bytes:
    chunks = []
    while True:
        chunk = os.read(key_fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(key_fd)
    return b"".join(chunks).strip()


def _disabled(payload: dict[str, Any]) -> None:
    """The writer where no channel was given: lines go nowhere."""
    return None


def _make_writer() -> Callable[[dict[str, Any]], None]:
    """Take the channel from the environment and return a closure that writes signed lines."""
    socket_path = os.environ.pop(SOCKET_ENV, None)
    fd_text = os.environ.pop(FD_ENV, None)
    key_fd_text = os.environ.pop(KEY_FD_ENV, None)
    if socket_path:
        fd, key = _connect(socket_path)
    elif fd_text is not None and key_fd_text is not None:
        fd = int(fd_text)
        key = _read_key(int(key_fd_text))
    else:
        return _disabled
    os.set_inheritable(fd, False)
    state = {"seq": 0}

    def write(payload: dict[str, Any]) -> None:
        state["seq"] += 1
        body = dict(payload, seq=state["seq"])
        text = json.dumps(body, sort_keys=True, separators=(",", ":"))
        mac = hmac.new(key, text.encode("utf-8"), hashlib.sha256).hexdigest()
        line = (text[:-1] + f',"mac":"{mac}"' + "}\n").encode("utf-8")
        view = memoryview(line)
        while view:
            written = os.write(fd, view)
            view = view[written:]

    return write


_write: Callable[[dict[str, Any]], None] = _disabled


def _no_hook_marks(**_opts: Any) -> Callable[[Any], Any]:
    return lambda func: func


def _hook_marks() -> Callable[..., Callable[[Any], Any]]:
    """The ``hookimpl`` marker of pytest when pytest runs (it is what imports this plugin), else a no-op.

    The lean runner imports this file for its writer only, in a fork without a pytest
    session (its ``_pytest.outcomes`` alone may be imported there).
    """
    if "_pytest.config" in sys.modules:
        from _pytest.config import hookimpl

        return hookimpl
    return _no_hook_marks


_hookimpl = _hook_marks()


def _load_guard() -> Any:
    """The import guard staged beside this file (``_reliabench_import_guard``), or None."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), GUARD_MODULE + ".py")
    spec = importlib.util.spec_from_file_location(GUARD_MODULE, path)
    if spec is None or spec.loader is None or not os.path.isfile(path):
        return None
    module = importlib.util.module_from_spec(spec)
    sys.modules[GUARD_MODULE] = module
    spec.loader.exec_module(module)
    return module


GUARD_MODULE = "_reliabench_import_guard"
# a warm server loads this module once, before any rollout, with its guard given
# (``_PRELOADED_GUARD`` set in the module's namespace before it runs): every rollout's fork then
# calls activate(); anywhere else the module activates as it is imported
_preloaded_guard: Any = globals().get("_PRELOADED_GUARD")
_guard_module = _preloaded_guard or _load_guard()  # imported now, while nothing of the workspace can answer
_guard: Any = None
_workspace: str | None = None
_order_seed: str | None = None
_active = False
_phases: dict[str, dict[str, str]] = {}
_written: list[list[str]] = []


def activate() -> None:
    """Take the channel, the workspace and the order seed from the environment; once per process.

    Called as the module is imported, or -- for the copy a warm server loaded before any
    rollout -- by the rollout's fork before it runs anything of the rollout. The variables
    are removed from the environment, and the channel's secret read from its pipe or socket,
    before any test module is imported.
    """
    global _write, _workspace, _order_seed, _active
    if _active:
        return
    _active = True
    _write = _make_writer()
    _workspace = os.environ.pop(WORKSPACE_ENV, None)
    _order_seed = os.environ.pop(ORDER_SEED_ENV, None)


def _final_outcome(phases: dict[str, str]) -> str:
    setup = phases.get("setup", "passed")
    call = phases.get("call")
    teardown = phases.get("teardown", "passed")
    if setup == "failed":
        return "error"
    if setup in ("skipped", "xfailed"):
        return setup
    if call is None:
        return "error"
    if call == "failed":
        return "failed"
    if teardown == "failed":
        return "error"
    return call  # "passed", "skipped" or "xfailed" (an xpass is "passed", or "failed" if strict)


def _phase_outcome(report: pytest.TestReport) -> str:
    """A phase's outcome, an expected failure (``xfail``) told apart from a skip."""
    if report.skipped and hasattr(report, "wasxfail"):
        return "xfailed"
    return report.outcome


def pytest_configure(config: pytest.Config) -> None:
    """Register the ``security`` marker, announce the start, put the workspace on sys.path."""
    config.addinivalue_line(
        "markers", "security: a dynamic security test (judged apart by reliabench)"
    )
    from _pytest.assertion.rewrite import AssertionRewritingHook

    rewriter = next((f for f in sys.meta_path if isinstance(f, AssertionRewritingHook)), None)
    root = str(config.rootpath)
    guard_imports(root, None if _guard_module is None else _guard_module.pytest_roots(root),
                  None if rewriter is None else rewriter.find_spec)
    if _workspace and _workspace not in sys.path:
        # appended, so the agent's files cannot shadow the standard library or pytest
        sys.path.append(_workspace)
    _write({"event": "start", "pid": os.getpid()})


def guard_imports(tests_root: str, roots: list[str] | None, delegate: Any = None) -> None:
    """Install the import guard on the staged tests (before the workspace is on sys.path).

    The hidden tests and their helpers then import only from ``roots`` (under
    ``tests_root``), and the workspace's modules only from their source; see
    ``_reliabench_import_guard``. The lean runner calls it too.
    """
    global _guard
    if _guard_module is None or roots is None or _guard is not None:
        return
    _guard = _guard_module.install(tests_root, roots, _workspace, delegate=delegate)


def trust_module(name: str, module: Any) -> None:
    """Accept a test module the lean runner loaded from its staged file itself."""
    if _guard is not None:
        _guard.trust(name, module)


def purge_planted() -> None:
    """Drop modules planted in ``sys.modules`` under the tests' names; report each once."""
    if _guard is None:
        return
    for name in _guard.purge():
        if name not in _reported_planted:
            _reported_planted.add(name)
            _write({"event": "tamper", "what": f"module planted in sys.modules: {name}"})


_reported_planted: set[str] = set()


@_hookimpl(hookwrapper=True, tryfirst=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    """Before pytest imports a directory's conftest or a test module: drop planted modules."""
    purge_planted()
    yield


@_hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """Before each test (which may import a helper lazily): drop planted modules."""
    purge_planted()


@_hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Between a test's fixtures and its body: drop planted modules again."""
    purge_planted()


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """Report collection errors (a test module that cannot be imported)."""
    if report.failed:
        _write({"event": "collect_error", "name": report.nodeid})


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                   items: list[pytest.Item]) -> None:
    """With an order seed (re-tests), run the tests in a seeded random order."""
    if _order_seed is not None:
        import random

        random.Random(int(_order_seed)).shuffle(items)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Report the collected test ids with their ``security`` flag."""
    tests = [[item.nodeid, item.get_closest_marker("security") is not None] for item in session.items]
    _write({"event": "collected", "tests": tests})


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Write one line per test as soon as its teardown is reported."""
    phases = _phases.setdefault(report.nodeid, {})
    phases[report.when] = _phase_outcome(report)
    if report.when != "teardown":
        return
    outcome = _final_outcome(phases)
    del _phases[report.nodeid]
    security = "security" in report.keywords
    _written.append([report.nodeid, outcome])
    _write({"event": "test", "name": report.nodeid, "outcome": outcome, "security": security})


@_hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close the stream with the list of every test line this plugin wrote."""
    _write({"event": "end", "exitstatus": int(exitstatus), "tests": _written})


if _preloaded_guard is None:
    activate()
