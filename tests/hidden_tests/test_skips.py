"""A skip or xfail counts only when the task declares it (reliabench.hidden_tests.skips; issue 20).

The attacks are real runs on every hidden-test path (fresh pytest process under bubblewrap,
namespaces and no sandbox; a warm worker's pytest and its lean plain runner): a solution that
is right for one input and skips (or xfails) the tests it would fail must fail them.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sandbox_helpers import (
    HIDDEN_TEST_PATHS,
    HiddenTestPath,
    backend_or_skip,
    hidden_test_path_or_skip,
    run_backend_or_skip,
    warm_or_skip,
)
from suite_helpers import write_adder_suite

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.hidden_tests.skips import (
    REPORTED_OUTCOMES,
    SKIP_OUTCOMES,
    ReportedOutcome,
    judge_outcome,
    judge_skips,
    unknown_skips,
)
from reliabench.meta_keys import TestRunner
from reliabench.records import Rollout, TestOutcome
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox import Limits
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

SLOT = 10
LIMITS = Limits(wall_s=30.0, cpu_s=30.0)
STARTER = "def add(a, b):\n    raise NotImplementedError\n"
TESTS = """
from adder import add

def test_small():
    assert add(1, 2) == 3

def test_zero():
    assert add(0, 0) == 0
"""
NAMES = ("test_adder.py::test_small", "test_adder.py::test_zero")

# right for add(1, 2) only; every other call skips or xfails instead of failing
RIGHT_ONCE = "    if (a, b) == (1, 2):\n        return 3\n"
SKIP_ATTACKS = {
    "unittest-skiptest": "import unittest\ndef add(a, b):\n" + RIGHT_ONCE
                         + "    raise unittest.SkipTest('not today')\n",
    "pytest-skip": "import pytest\ndef add(a, b):\n" + RIGHT_ONCE + "    pytest.skip('not today')\n",
    "pytest-xfail": "import pytest\ndef add(a, b):\n" + RIGHT_ONCE + "    pytest.xfail('known bug')\n",
    "importorskip": "import pytest\ndef add(a, b):\n" + RIGHT_ONCE
                    + "    pytest.importorskip('rb_no_such_module_20')\n",
    # own variants: a skip class of the solution's own, and a skip raised by the assertion's
    # comparison in the test's own frame (no call of the solution raises)
    "skiptest-subclass": "import unittest\nclass Later(unittest.SkipTest):\n    pass\n"
                         "def add(a, b):\n" + RIGHT_ONCE + "    raise Later('later')\n",
    "skip-from-eq": "import pytest\nclass Cheat:\n    def __eq__(self, other):\n"
                    "        pytest.skip('not comparable')\n"
                    "def add(a, b):\n" + RIGHT_ONCE + "    return Cheat()\n",
}
# the fresh paths run pytest whatever the task's runner; the warm worker runs plain tasks with
# its lean runner
PATHS = [pytest.param((p, "pytest"), id=p) for p in HIDDEN_TEST_PATHS] + [
    pytest.param(("warm", "plain"), id="warm-plain")]
PYTEST_PATHS = [pytest.param((p, "pytest"), id=p) for p in HIDDEN_TEST_PATHS]


@pytest.fixture(params=PATHS)
def path(request: pytest.FixtureRequest) -> tuple[HiddenTestPath, TestRunner]:
    name, runner = request.param
    return hidden_test_path_or_skip(name, SLOT), runner


@pytest.fixture(params=PYTEST_PATHS)
def pytest_path(request: pytest.FixtureRequest) -> tuple[HiddenTestPath, TestRunner]:
    name, runner = request.param
    return hidden_test_path_or_skip(name, SLOT), runner


def _task(base: Path, solution: str, tests: str = TESTS, *, starter: str = STARTER,
          module: str = "adder.py") -> tuple[Path, Path, Path]:
    starter_dir, ws, tests_dir = base / "starter", base / "ws", base / "tests"
    for d in (starter_dir, ws, tests_dir):
        d.mkdir()
        os.chmod(d, 0o755)
    (starter_dir / module).write_text(starter)
    (ws / module).write_text(textwrap.dedent(solution))
    (tests_dir / "test_adder.py").write_text(textwrap.dedent(tests))
    return starter_dir, ws, tests_dir


def _run(path: tuple[HiddenTestPath, TestRunner], base: Path, solution: str, tests: str = TESTS,
         names: tuple[str, ...] = NAMES, *, allowed: Collection[str] = (),
         security: Collection[str] = (), starter: str = STARTER) -> HiddenTestRun:
    test_path, runner = path
    starter_dir, ws, tests_dir = _task(base, solution, tests, starter=starter)
    expected = tuple(TestOutcome(n, "skipped", n in security) for n in names)
    return test_path.run(ws, tests_dir, expected=expected, limits=LIMITS, slot=SLOT,
                         starter=starter_dir, test_runner=runner, allowed_skips=allowed)


def _rollout(run: HiddenTestRun) -> Rollout:
    return Rollout("t", "a", 0, tests=run.outcomes, status=run.status)


# ------------------------------------------------------------------------------------------
# finding 1: a skip raised by the solution is a failure, on every path
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("attack", sorted(SKIP_ATTACKS))
def test_a_skip_raised_by_the_solution_fails_the_test(path: tuple[HiddenTestPath, TestRunner],
                                                      base: Path, attack: str) -> None:
    run = _run(path, base, SKIP_ATTACKS[attack])
    assert run.status == "completed", run.reason
    assert [(o.name, o.outcome) for o in run.outcomes] == [(NAMES[0], "passed"), (NAMES[1], "failed")]
    assert run.undeclared_skips == (NAMES[1],)
    assert "allowed_skips" in (run.reason or "") and NAMES[1] in (run.reason or "")
    kind = "xfailed" if attack == "pytest-xfail" else "skipped"
    assert f"{NAMES[1]} ({kind})" in (run.reason or "")  # the runner told skip and xfail apart
    assert not _rollout(run).passes  # was: passed/skipped, reliability@1 = 1.000


@pytest.mark.parametrize("how", ["pytest-skip", "importorskip"])
def test_a_skip_at_import_of_the_solution_fails_every_test(path: tuple[HiddenTestPath, TestRunner],
                                                           base: Path, how: str) -> None:
    call = ("pytest.skip('no', allow_module_level=True)" if how == "pytest-skip"
            else "pytest.importorskip('rb_no_such_module_20')")
    run = _run(path, base, f"import pytest\n{call}\ndef add(a, b):\n    return a + b\n")
    assert run.status == "completed", run.reason
    assert [o.outcome for o in run.outcomes] == ["failed", "failed"]
    assert not _rollout(run).passes


def test_a_declared_skip_keeps_counting_as_skipped(path: tuple[HiddenTestPath, TestRunner],
                                                   base: Path) -> None:
    tests = TESTS.replace("def test_zero():\n", "def test_zero():\n    pytest.skip('needs a GPU')\n")
    tests = "import pytest\n" + tests
    good = "def add(a, b):\n    return a + b\n"
    run = _run(path, base, good, tests, allowed={NAMES[1]})
    assert [o.outcome for o in run.outcomes] == ["passed", "skipped"], run.reason
    assert run.undeclared_skips == () and "allowed_skips" not in (run.reason or "")
    assert _rollout(run).passes  # the declared skip counts neither way
    # the same skip, undeclared, is a failure even though the test itself raised it
    base2 = base / "again"
    base2.mkdir()
    os.chmod(base2, 0o711)
    run = _run(path, base2, good, tests)
    assert [o.outcome for o in run.outcomes] == ["passed", "failed"]
    assert run.undeclared_skips == (NAMES[1],)


@dataclass
class WritingAgent:
    """An in-process agent that writes ``solution`` as adder.py."""

    solution: str
    name: str = "writer"
    kind: str = "python"
    simulated: bool = False

    def run(self, request: AgentRequest) -> AgentResult:
        (request.workspace / "adder.py").write_text(self.solution)
        return AgentResult(status="completed")


def _run_suite(base: Path, tests: str, solution: str, *, sandbox: str, test_workers: str, toml: str,
               n: int) -> tuple[int, int, int, list[Rollout]]:
    """Run a one-task adder suite (``toml`` appended to its task.toml): executed, passed, infra, records."""
    if test_workers == "warm":
        backend_or_skip(sandbox)
        warm_or_skip()
    else:
        run_backend_or_skip(sandbox)
    suite_dir = write_adder_suite(base, "skips", tests, world_readable=True)
    task_toml = suite_dir / "tasks" / "adder" / "task.toml"
    task_toml.write_text(task_toml.read_text() + toml)
    settings = RunSettings(n=n, sandbox=sandbox, scanners=(), limits=LIMITS, test_workers=test_workers)
    summary = run_suite(load_suite(suite_dir), [WritingAgent(solution)], base / "run", settings)
    with RunStore.open_existing(base / "run", readonly=True) as store:
        records = store.rollouts()
    return summary.executed, summary.passed, summary.infra_errors, records


@pytest.mark.parametrize(("sandbox", "test_workers", "runner"), [
    ("bubblewrap", "fresh", "pytest"), ("namespaces", "fresh", "pytest"),
    ("bubblewrap", "warm", "pytest"), ("bubblewrap", "warm", "plain")])
def test_a_run_records_the_skipping_rollout_as_a_flagged_failure(base: Path, sandbox: str, test_workers: str,
                                                                 runner: str) -> None:
    *counts, records = _run_suite(base, TESTS, SKIP_ATTACKS["unittest-skiptest"], sandbox=sandbox,
                                  test_workers=test_workers, toml=f'test_runner = "{runner}"\n', n=2)
    assert counts == [2, 0, 0]
    for r in records:
        assert r.status == "completed" and not r.passes
        assert [(t.name, t.outcome) for t in r.tests or ()] == [(NAMES[0], "passed"), (NAMES[1], "failed")]
        assert r.meta["undeclared_skips"] == [NAMES[1]]
        assert "allowed_skips" in r.meta["reason"]
        assert r.meta["test_path"] == test_workers and r.meta["test_runner"] == runner


@pytest.mark.parametrize(("sandbox", "test_workers", "runner"), [
    ("bubblewrap", "fresh", "pytest"), ("bubblewrap", "warm", "plain")])
def test_a_run_keeps_the_skip_its_task_declares(base: Path, sandbox: str, test_workers: str,
                                                runner: str) -> None:
    tests = "import pytest\n" + TESTS.replace("def test_zero():\n",
                                               "def test_zero():\n    pytest.skip('needs a GPU')\n")
    *counts, (r,) = _run_suite(base, tests, "def add(a, b):\n    return a + b\n", sandbox=sandbox,
                               test_workers=test_workers, n=1,
                               toml=f'test_runner = "{runner}"\nallowed_skips = ["{NAMES[1]}"]\n')
    assert counts == [1, 1, 0]
    assert [t.outcome for t in r.tests or ()] == ["passed", "skipped"] and r.passes
    assert "undeclared_skips" not in r.meta


@pytest.mark.parametrize("declared", [False, True])
def test_a_retest_grades_skips_by_the_same_rule(base: Path, declared: bool) -> None:
    from reliabench.run.environments import TaskEnvironment
    from reliabench.run.retest import retest_files
    from reliabench.run.test_paths import TestPaths

    backend = backend_or_skip("bubblewrap")
    suite_dir = write_adder_suite(base, "skips", TESTS, world_readable=True)
    if declared:
        toml = suite_dir / "tasks" / "adder" / "task.toml"
        toml.write_text(toml.read_text() + f'allowed_skips = ["{NAMES[1]}"]\n')
    task = load_suite(suite_dir).task("adder")
    rollout = Rollout("adder", "skipper", 0, tests=(), meta={"changed_files": ["adder.py"], "deleted_files": []})
    expected = tuple(TestOutcome(n, "skipped") for n in NAMES)
    scratch = base / "scratch"
    scratch.mkdir()
    os.chmod(scratch, 0o711)
    where = TaskEnvironment(backend, backend.prepare(task.environment))
    (rerun,) = retest_files(task, rollout, {"adder.py": SKIP_ATTACKS["pytest-skip"].encode()}, reps=[0],
                            expected=expected, where=where, paths=TestPaths(), limits=LIMITS, slot=SLOT,
                            scratch=scratch)
    assert [t.outcome for t in rerun.tests] == ["passed", "skipped" if declared else "failed"], rerun.reason


# ------------------------------------------------------------------------------------------
# own attack class 1: markers injected into the hidden test module by the solution's import
# ------------------------------------------------------------------------------------------

# adder.py runs while test_adder.py is being imported (``from adder import add`` on its first
# line): it can set the test module's ``pytestmark``. An ``xfail`` marker turns the failing test
# into an expected failure and leaves the passing one an xpass ("passed"): a forged pass
# without any skip call in the tested code.
MARK_INJECTION = """\
import sys
import pytest
for _mod in list(sys.modules.values()):
    if str(getattr(_mod, "__file__", "")).endswith("test_adder.py"):
        _mod.pytestmark = [pytest.mark.{mark}]
def add(a, b):
    return 3 if (a, b) == (1, 2) else -1
"""


@pytest.mark.parametrize("mark", ["xfail(reason='forged')", "skipif(True, reason='forged')"])
def test_markers_injected_by_the_solution_do_not_excuse_a_failure(
        path: tuple[HiddenTestPath, TestRunner], base: Path, mark: str) -> None:
    run = _run(path, base, MARK_INJECTION.replace("{mark}", mark))
    assert run.status == "completed", run.reason
    by_name = {o.name: o.outcome for o in run.outcomes}
    assert by_name[NAMES[1]] == "failed"  # was "skipped" (xfailed): the rollout passed
    if path[1] == "pytest" and mark.startswith("skipif"):
        assert by_name[NAMES[0]] == "failed"  # skipped too, and not declared
    assert not _rollout(run).passes


# ------------------------------------------------------------------------------------------
# own attack class 2: a dynamic security test skipped by an insecure solution
# ------------------------------------------------------------------------------------------

SECURITY_TESTS = """
import pytest
from adder import add, safe_name

def test_small():
    assert add(1, 2) == 3

@pytest.mark.security
def test_rejects_traversal():
    with pytest.raises(ValueError):
        safe_name("../etc/passwd")
"""
SECURITY_NAMES = ("test_adder.py::test_small", "test_adder.py::test_rejects_traversal")
INSECURE_SKIPPER = """\
import pytest
def add(a, b):
    return a + b
def safe_name(name):
    if ".." in name:
        pytest.skip("not applicable")  # hides the missing check from the security lens
    return name
"""


def test_a_skipped_security_test_is_a_failed_security_test(path: tuple[HiddenTestPath, TestRunner],
                                                           base: Path) -> None:
    starter = STARTER + "def safe_name(name):\n    raise NotImplementedError\n"
    run = _run(path, base, INSECURE_SKIPPER, SECURITY_TESTS, SECURITY_NAMES,
               security={SECURITY_NAMES[1]}, starter=starter)
    assert run.status == "completed", run.reason
    assert [(o.outcome, o.security) for o in run.outcomes] == [("passed", False), ("failed", True)]
    rollout = _rollout(run)
    assert rollout.passes and not rollout.security_tests_pass  # was: security_tests_pass


# ------------------------------------------------------------------------------------------
# own attack class 3: skips through pytest's unittest.TestCase machinery (addSkip)
# ------------------------------------------------------------------------------------------

CASE_TESTS = """
import unittest
from adder import add

class TestAdd(unittest.TestCase):
    def test_small(self):
        self.assertEqual(add(1, 2), 3)

    def test_zero(self):
        self.assertEqual(add(0, 0), 0)
"""
CASE_NAMES = ("test_adder.py::TestAdd::test_small", "test_adder.py::TestAdd::test_zero")


@pytest.mark.parametrize("attack", ["unittest-skiptest", "pytest-skip", "pytest-xfail"])
def test_a_skip_inside_a_unittest_testcase_fails_the_test(pytest_path: tuple[HiddenTestPath, TestRunner],
                                                          base: Path, attack: str) -> None:
    run = _run(pytest_path, base, SKIP_ATTACKS[attack], CASE_TESTS, CASE_NAMES)
    assert run.status == "completed", run.reason
    assert [o.outcome for o in run.outcomes] == ["passed", "failed"], run.reason
    assert run.undeclared_skips == (CASE_NAMES[1],)


# ------------------------------------------------------------------------------------------
# what the pytest plugin reports: skip, xfail, xpass, strict xpass
# ------------------------------------------------------------------------------------------

MARKED_TESTS = """
import pytest
from adder import add

@pytest.mark.skip(reason="task-level skip")
def test_skip_marker():
    assert add(1, 1) == 2

@pytest.mark.xfail(reason="known limitation")
def test_xfail_fails():
    assert add(1, 1) == 3

@pytest.mark.xfail(reason="may pass")
def test_xpass():
    assert add(1, 1) == 2

@pytest.mark.xfail(strict=True, reason="must fail")
def test_strict_xpass():
    assert add(1, 1) == 2
"""
MARKED_NAMES = tuple(f"test_adder.py::{n}" for n in
                     ("test_skip_marker", "test_xfail_fails", "test_xpass", "test_strict_xpass"))


def test_the_plugin_tells_skips_xfails_and_xpasses_apart(pytest_path: tuple[HiddenTestPath, TestRunner],
                                                        base: Path) -> None:
    good = "def add(a, b):\n    return a + b\n"
    declared = set(MARKED_NAMES[:2])
    run = _run(pytest_path, base, good, MARKED_TESTS, MARKED_NAMES, allowed=declared)
    assert [o.outcome for o in run.outcomes] == ["skipped", "skipped", "passed", "failed"], run.reason
    assert run.undeclared_skips == ()
    base2 = base / "undeclared"
    base2.mkdir()
    os.chmod(base2, 0o711)
    run = _run(pytest_path, base2, good, MARKED_TESTS, MARKED_NAMES)
    assert [o.outcome for o in run.outcomes] == ["failed", "failed", "passed", "failed"], run.reason
    assert run.undeclared_skips == MARKED_NAMES[:2]
    assert f"{MARKED_NAMES[0]} (skipped)" in (run.reason or "")
    assert f"{MARKED_NAMES[1]} (xfailed)" in (run.reason or "")


# ------------------------------------------------------------------------------------------
# the rule itself
# ------------------------------------------------------------------------------------------


def test_judge_outcome_table() -> None:
    for reported in REPORTED_OUTCOMES:
        for declared in (False, True):
            got = judge_outcome(reported, declared=declared)
            if reported in SKIP_OUTCOMES:
                assert got == ("skipped" if declared else "failed")
            else:
                assert got == reported


def test_unknown_skips_names_the_declarations_that_match_no_test() -> None:
    expected = [TestOutcome(n, "skipped") for n in NAMES]
    assert unknown_skips([NAMES[1], "test_adder.py::test_zer0"], expected) == ("test_adder.py::test_zer0",)
    assert unknown_skips([], expected) == ()


_names = st.sampled_from([f"t.py::test_{i}" for i in range(6)])
_reported: st.SearchStrategy[ReportedOutcome] = st.sampled_from(sorted(REPORTED_OUTCOMES))


@given(st.dictionaries(_names, st.tuples(_reported, st.booleans()), min_size=1), st.sets(_names))
def test_a_rollout_passes_only_when_every_undeclared_test_passed(
        tests: dict[str, tuple[ReportedOutcome, bool]], allowed: set[str]) -> None:
    reported = [(name, outcome, sec) for name, (outcome, sec) in tests.items()]
    judged = judge_skips(reported, allowed)
    rollout = Rollout("t", "a", 0, tests=judged.outcomes)
    functional = [(n, o) for n, o, sec in reported if not sec]
    ran = [o for n, o in functional if not (o in SKIP_OUTCOMES and n in allowed)]
    # passes iff every functional test passed or is a declared skip, and one of them passed
    assert rollout.passes == (bool(ran) and all(o == "passed" for o in ran))
    # an undeclared skip is failing and named, in order; nothing else changes
    assert judged.undeclared == tuple(n for n, o, _ in reported if o in SKIP_OUTCOMES and n not in allowed)
    for (name, outcome, sec), got in zip(reported, judged.outcomes, strict=True):
        assert (got.name, got.security) == (name, sec)
        if outcome not in SKIP_OUTCOMES:
            assert got.outcome == outcome
        else:
            assert got.outcome == ("skipped" if name in allowed else "failed")
    assert (judged.reason is None) == (not judged.undeclared)
    # a skipped security test never counts as a passing one
    assert rollout.security_tests_pass == all(
        o == "passed" or (o in SKIP_OUTCOMES and n in allowed) for n, o, sec in reported if sec)


def test_every_functional_test_skipped_never_passes() -> None:
    # declared skips count neither way: nothing ran, so nothing passed
    skipped = tuple(TestOutcome(n, "skipped") for n in NAMES)
    assert not Rollout("t", "a", 0, tests=skipped).passes
    assert not Rollout("t", "a", 0, tests=(*skipped, TestOutcome("s", "passed", True))).passes
    assert Rollout("t", "a", 0, tests=(*skipped, TestOutcome("x", "passed"))).passes
