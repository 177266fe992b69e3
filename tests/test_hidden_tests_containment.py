"""The sandbox attacks inside hidden tests: the rollout is recorded failed, with a reason.

The same attacks run directly against every backend in ``tests/test_sandbox_selfcheck.py``
(``reliabench.sandbox.selfcheck``); here they come from the agent's solution, imported by the
hidden tests, on the fresh path and both warm test runners.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip, warm_or_skip

from reliabench.hidden_tests.fresh import run_hidden_tests
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, slot_uid, slots

IS_ROOT = os.geteuid() == 0
SLOT = 5


def _no_procs_left() -> None:
    """No process of the slot uid is alive, looked at under the slot's host-wide lock (so a
    run of the same slot by another process on this host cannot be mistaken for a leftover)."""
    if IS_ROOT:
        with slots._hold_slot(slot_uid(SLOT)):
            assert slots._procs_of_uid(slot_uid(SLOT)) == []


def _suite(base: Path, body: str) -> tuple[Path, Path]:
    ws = base / "rollout"
    ws.mkdir()
    (ws / "solution.py").write_text(body, encoding="utf-8")
    tests = base / "suite-tests"
    tests.mkdir()
    (tests / "test_solution.py").write_text(
        "import solution\n\n"
        "def test_one():\n    assert solution.f() == 1\n\n"
        "def test_two():\n    assert True\n",
        encoding="utf-8",
    )
    return ws, tests


EXPECTED = (TestOutcome("test_solution.py::test_one", "skipped"),
            TestOutcome("test_solution.py::test_two", "skipped"))


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("def f():\n    while True:\n        pass\n", "timeout"),
        ("import os\ndef f():\n    while True:\n        try:\n            os.fork()\n"
         "        except OSError:\n            pass\n", "timeout"),
        ("def f():\n    return len(bytearray(10 * 1024**3))\n", "completed"),
    ],
    ids=["infinite-loop", "fork-bomb", "10gb"],
)
@pytest.mark.parametrize("path", ["fresh", "warm-pytest", "warm-plain"])
def test_hostile_solution_fails_the_rollout(base: Path, body: str, status: str, path: str) -> None:
    ws, tests = _suite(base, body)
    limits = Limits(wall_s=3.0, cpu_s=10.0, memory_bytes=1024**3, max_procs=24)
    if path == "fresh":
        run = run_hidden_tests(ws, tests, expected=EXPECTED, backend=backend_or_skip("bubblewrap"),
                               limits=limits, slot=SLOT)
    else:
        run = run_hidden_tests(ws, tests, expected=EXPECTED, worker=warm_or_skip(), limits=limits,
                               slot=SLOT, test_runner=path.removeprefix("warm-"))
        assert run.isolation == "warm"
    assert run.status == status
    assert run.outcomes[0] == TestOutcome("test_solution.py::test_one", "failed")
    assert run.reason
    _no_procs_left()
