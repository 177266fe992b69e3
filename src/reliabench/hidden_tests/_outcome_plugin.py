"""The pytest plugin that runs inside the sandbox and reports one outcome line per test.

``reliabench.hidden_tests.fresh`` copies this file into a private staging directory and loads it with
``-p _reliabench_outcome_plugin``; it must therefore import nothing but the standard library
and pytest. It is not meant to be used on its own.

Protocol (one JSON object per line, appended to an inherited file descriptor that is not a
path inside the sandbox)::

    {"seq": 1, "event": "start", "pid": 12, "mac": "..."}
    {"seq": 2, "event": "collected", "tests": [["test_x.py::test_a", false], ...], "mac": ...}
    {"seq": 3, "event": "collect_error", "name": "test_y.py", "mac": ...}
    {"seq": 4, "event": "test", "name": "test_x.py::test_a", "outcome": "passed",
     "security": false, "mac": ...}                      # written as the test finishes
                      # outcome: passed | failed | error | skipped | xfailed (graded by the parent,
                      # reliabench.hidden_tests.skips: an undeclared skip or xfail is a failure)
    {"seq": 9, "event": "end", "exitstatus": 0, "tests": [[name, outcome], ...], "mac": ...}

``mac`` is an HMAC-SHA256, keyed with a per-run secret, of the line without ``mac``. The
secret and the descriptor numbers come from the environment (``RELIABENCH_OUTCOME_FD``,
``RELIABENCH_OUTCOME_KEY_FD``, ``RELIABENCH_WORKSPACE``), which the plugin removes at import,
before any test module is imported. The secret itself is read from a pipe that is then
closed, so it is in no environment block, file or descriptor the tests could read later.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest

__all__ = [
    "pytest_collection_finish",
    "pytest_collection_modifyitems",
    "pytest_collectreport",
    "pytest_configure",
    "pytest_runtest_logreport",
    "pytest_sessionfinish",
]

FD_ENV = "RELIABENCH_OUTCOME_FD"
KEY_FD_ENV = "RELIABENCH_OUTCOME_KEY_FD"
WORKSPACE_ENV = "RELIABENCH_WORKSPACE"
ORDER_SEED_ENV = "RELIABENCH_ORDER_SEED"


def _make_writer() -> Callable[[dict[str, Any]], None]:
    """Take the channel from the environment and return a closure that writes signed lines."""
    fd_text = os.environ.pop(FD_ENV, None)
    key_fd_text = os.environ.pop(KEY_FD_ENV, None)
    if fd_text is None or key_fd_text is None:

        def disabled(payload: dict[str, Any]) -> None:
            return None

        return disabled
    fd = int(fd_text)
    key_fd = int(key_fd_text)
    chunks = []
    while True:
        chunk = os.read(key_fd, 4096)
        if not chunk:
            break
        chunks.append(chunk)
    os.close(key_fd)
    key = b"".join(chunks).strip()
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


_write = _make_writer()
_workspace = os.environ.pop(WORKSPACE_ENV, None)
_order_seed = os.environ.pop(ORDER_SEED_ENV, None)
_phases: dict[str, dict[str, str]] = {}
_written: list[list[str]] = []


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
    if _workspace and _workspace not in sys.path:
        # appended, so the agent's files cannot shadow the standard library or pytest
        sys.path.append(_workspace)
    _write({"event": "start", "pid": os.getpid()})


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


@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Close the stream with the list of every test line this plugin wrote."""
    _write({"event": "end", "exitstatus": int(exitstatus), "tests": _written})
