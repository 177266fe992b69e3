"""The lean runner for plain tests gives the verdicts pytest gives, hostile code included."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip, warm_or_skip

from reliabench.errors import SuiteError
from reliabench.hidden_tests.fresh import HiddenTestRun, collect_hidden_tests, run_hidden_tests
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits
from reliabench.tasks.suite import load_suite
from reliabench.warm import run_warm_tests
from reliabench.warm.plain_tests import collect_plain_tests

SLOT = 8
LIMITS = Limits(wall_s=4.0, cpu_s=8.0, memory_bytes=1024**3, max_procs=32,
                file_size_bytes=16 * 1024**2, output_bytes=64 * 1024)

TESTS = {
    "test_a.py": '''
import pytest
from solution import add, sub


def test_add():
    assert add(2, 3) == 5


def test_sub():
    assert sub(5, 3) == 2, "sub is wrong"


@pytest.mark.security
def test_no_negative_zero():
    assert str(sub(0, 0)) == "0"


def test_skipped():
    pytest.skip("not today")


def helper():
    return 1
''',
    "sub/b_test.py": '''
from solution import add


def test_big():
    assert add(10**6, 1) == 10**6 + 1


def test_redefined():
    assert False


def test_redefined():  # noqa: F811 - the last definition runs, in the first one's place
    assert add(0, 0) == 0
''',
}

SOLUTIONS = {
    "good": "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n",
    "wrong": "def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b\n",
    "os-exit": "import os\ndef add(a, b):\n    return a + b\n\ndef sub(a, b):\n    os._exit(0)\n",
    "sys-exit": "import sys\ndef add(a, b):\n    sys.exit(0)\n\ndef sub(a, b):\n    return a - b\n",
    "base-exception": (
        "class Boom(BaseException):\n    pass\n\n"
        "def add(a, b):\n    raise Boom('boom')\n\ndef sub(a, b):\n    return a - b\n"),
    "keyboard-interrupt": (
        "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    raise KeyboardInterrupt\n"),
    "loops-forever": "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    while True:\n        pass\n",
    "prints-tons": (
        "import sys\ndef add(a, b):\n    for _ in range(20000):\n        print('x' * 1000)\n"
        "    return a + b\n\ndef sub(a, b):\n    sys.stderr.write('e' * 10**6)\n    return a - b\n"),
    "deletes-tests": (
        "import sys\ndef add(a, b):\n"
        "    mod = sys.modules.get('test_a')\n"
        "    for name in ('test_sub', 'test_no_negative_zero'):\n"
        "        if mod is not None and hasattr(mod, name):\n"
        "            delattr(mod, name)\n"
        "    return a + b\n\ndef sub(a, b):\n    return a - b + 1\n"),
    "monkeypatches-builtins": (
        "import builtins, json\n"
        "builtins.print = lambda *a, **k: None\n"
        "builtins.isinstance = lambda *a: True\n"
        "json.dumps = lambda *a, **k: 'forged'\n"
        "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n    return a - b\n"),
    "rebinds-pytest-outcomes": (  # a failed assertion must not become a skip on the lean path
        "import _pytest.outcomes\n"
        "_pytest.outcomes.Skipped = AssertionError\n_pytest.outcomes.XFailed = AssertionError\n"
        "_pytest.outcomes.Exit = AssertionError\n"
        "def add(a, b):\n    return a - b\n\ndef sub(a, b):\n    return a - b + 1\n"),
    "plants-pytest-outcomes": (
        "import sys, types\n"
        "class Meta(type):\n    def __instancecheck__(cls, obj):\n        return True\n"
        "fake = types.ModuleType('_pytest.outcomes')\n"
        "fake.Skipped = fake.XFailed = Meta('Skipped', (BaseException,), {})\n"
        "def add(a, b):\n    sys.modules['_pytest.outcomes'] = fake\n    return a - b\n\n"
        "def sub(a, b):\n    return a - b\n"),
    "raises-its-own-skip": (  # a class named like pytest's: a skip, as pytest's own would be
        "class Skipped(BaseException):\n    pass\n\nSkipped.__module__ = '_pytest.outcomes'\n"
        "def add(a, b):\n    raise Skipped('x')\n\ndef sub(a, b):\n    return a - b\n"),
    "import-error": "raise ImportError('the agent broke the module')\n",
    "import-exit": "import os\nos._exit(3)\n",
    "unprintable-exception": (
        "class Bad(Exception):\n    def __str__(self):\n        raise RuntimeError('no')\n\n"
        "def add(a, b):\n    raise Bad()\n\ndef sub(a, b):\n    return a - b\n"),
}



def _tests(base: Path) -> Path:
    tests = base / "tests"
    for rel, text in TESTS.items():
        (tests / rel).parent.mkdir(parents=True, exist_ok=True)
        (tests / rel).write_text(text, encoding="utf-8")
    return tests


def _ws(base: Path, solution: str, name: str) -> Path:
    ws = base / name
    ws.mkdir()
    (ws / "solution.py").write_text(solution, encoding="utf-8")
    return ws


def _verdict(run: HiddenTestRun) -> tuple[object, ...]:
    return (run.status, run.outcomes, run.forged, run.tamper_suspected)


def test_plain_collection_is_pytests_collection(base: Path) -> None:
    tests = _tests(base)
    expected = collect_plain_tests(tests)
    assert [t.name for t in expected] == [
        "sub/b_test.py::test_big", "sub/b_test.py::test_redefined",
        "test_a.py::test_add", "test_a.py::test_sub", "test_a.py::test_no_negative_zero",
        "test_a.py::test_skipped",
    ]
    assert [t.security for t in expected] == [False, False, False, False, True, False]
    ws = _ws(base, SOLUTIONS["good"], "starter")
    assert collect_hidden_tests(ws, tests, backend=backend_or_skip("bubblewrap"), slot=SLOT,
                                limits=LIMITS) == expected


@pytest.mark.parametrize("solution", list(SOLUTIONS))
def test_lean_runner_verdicts_are_pytests(base: Path, solution: str) -> None:
    tests = _tests(base)
    expected = collect_plain_tests(tests)
    fresh = run_hidden_tests(_ws(base, SOLUTIONS[solution], "fresh"), tests, expected=expected,
                             backend=backend_or_skip("bubblewrap"), limits=LIMITS, slot=SLOT)
    warm = warm_or_skip()
    lean = run_warm_tests(warm, _ws(base, SOLUTIONS[solution], "lean"), tests, expected=expected,
                          limits=LIMITS, slot=SLOT, test_runner="plain")
    forked_pytest = run_warm_tests(warm, _ws(base, SOLUTIONS[solution], "warm-pytest"), tests,
                                   expected=expected, limits=LIMITS, slot=SLOT)
    assert _verdict(lean) == _verdict(fresh), (lean.reason, fresh.reason, lean.log)
    assert _verdict(forked_pytest) == _verdict(fresh), (forked_pytest.reason, fresh.reason)
    assert lean.isolation == "warm"


def test_failure_messages_are_in_the_log(base: Path) -> None:
    tests = _tests(base)
    run = run_warm_tests(warm_or_skip(), _ws(base, SOLUTIONS["wrong"], "ws"), tests,
                         expected=collect_plain_tests(tests), limits=LIMITS, slot=SLOT, test_runner="plain")
    assert "FAILED test_a.py::test_add - AssertionError" in run.log
    assert "assert add(2, 3) == 5" in run.log  # the failing line of the test
    assert "sub is wrong" not in run.log  # test_sub passes with this solution


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("def test_x(tmp_path):\n    pass\n", "takes parameters"),
        ("import pytest\n@pytest.mark.parametrize('a', [1])\ndef test_x():\n    pass\n",
         "decorator other than"),
        ("class TestX:\n    def test_y(self):\n        pass\n", "test class"),
        ("from helpers import test_thing\n", "binds 'test_thing'"),
        ("async def test_x():\n    pass\n", "is async"),
        ("def test_x(:\n", "cannot parse"),
        ("def helper():\n    pass\n", "no tests collected"),
    ],
    ids=["fixture", "parametrize", "class", "imported", "async", "syntax", "empty"],
)
def test_plain_collection_refuses_what_is_not_plain(base: Path, source: str, problem: str) -> None:
    tests = base / "tests"
    tests.mkdir()
    (tests / "test_x.py").write_text(source, encoding="utf-8")
    with pytest.raises(SuiteError, match=problem):
        collect_plain_tests(tests)


def _suite(base: Path, runner: str | None) -> Path:
    root = base / "suite"
    task = root / "tasks" / "t1"
    (task / "workspace").mkdir(parents=True)
    (task / "tests").mkdir()
    (task / "tests" / "test_t.py").write_text("def test_x():\n    pass\n", encoding="utf-8")
    (task / "prompt.md").write_text("do it\n", encoding="utf-8")
    extra = "" if runner is None else f"test_runner = {runner}\n"
    if runner == '"stdio"':  # a stdio task's tests are NAME.in / NAME.out case pairs
        (task / "tests" / "a.in").write_text("1\n", encoding="utf-8")
        (task / "tests" / "a.out").write_text("1\n", encoding="utf-8")
    (task / "task.toml").write_text(f'id = "t1"\n{extra}', encoding="utf-8")
    (root / "suite.toml").write_text('name = "s"\nversion = "1"\n', encoding="utf-8")
    return root


@pytest.mark.parametrize(("value", "expected"), [(None, "pytest"), ('"plain"', "plain"),
                                                  ('"stdio"', "stdio"), ('"pytest"', "pytest")])
def test_task_test_runner_field(base: Path, value: str | None, expected: str) -> None:
    assert load_suite(_suite(base, value)).tasks[0].test_runner == expected


@pytest.mark.parametrize("value", ['"nose"', "3", "[\"plain\"]"])
def test_task_test_runner_is_validated(base: Path, value: str) -> None:
    with pytest.raises(SuiteError, match=r"task\.toml: test_runner: expected one of 'pytest', 'plain', 'stdio'"):
        load_suite(_suite(base, value))


def test_plain_expected_tests_need_no_sandbox(base: Path) -> None:
    tests = _tests(base)
    assert all(isinstance(t, TestOutcome) and t.outcome == "skipped" for t in collect_plain_tests(tests))
    assert textwrap.dedent(TESTS["test_a.py"]).count("def test_") == 4
