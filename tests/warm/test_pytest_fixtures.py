"""pytest's fixture scan of plugin modules on the candidate names only (reliabench.warm.pytest_fixtures).

The scan on the stand-ins must be the scan pytest does: the same fixtures registered at the
same nodes in the same order, the same autouse lists, the same warnings and the same verdicts.
Sessions run with and without it in forks of one primed process, as warm rollouts do, over
every task of the bundled py30 suite (its hidden tests staged as a run stages them, the
reference solution as the workspace) and over planted cases: a fixture added to a built-in
plugin module before the session, fixtures behind decorators (pytest warns), a value whose
attribute lookup raises, a plugin module with its own ``__dir__``.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import types
from pathlib import Path
from typing import Any

import pytest

from reliabench.hidden_tests.staging import PLUGIN_MODULE, pytest_command, staged, unneeded_plugins
from reliabench.warm.pytest_fixtures import fixture_candidates

PY30 = Path(__file__).resolve().parents[2] / "src/reliabench/tasks/bundled/py30/tasks"


# --------------------------------------------------------------------------------------------
# the candidate names
# --------------------------------------------------------------------------------------------

@pytest.fixture
def _a_fixture() -> int:
    return 1


class _Evil:
    def __getattr__(self, name: str) -> object:
        raise RuntimeError(name)


def test_the_stand_in_keeps_fixtures_wrappers_and_what_cannot_be_read() -> None:
    m = types.ModuleType("m")
    m.fixture = _a_fixture  # type: ignore[attr-defined]
    m.plain = len  # type: ignore[attr-defined]
    m.function = test_the_stand_in_keeps_fixtures_wrappers_and_what_cannot_be_read  # type: ignore[attr-defined]
    m.wrapped = functools.wraps(len)(lambda: 0)  # type: ignore[attr-defined]
    m.evil = _Evil()  # type: ignore[attr-defined]
    m.number = 3  # type: ignore[attr-defined]
    view = fixture_candidates(m)
    assert view is not None and type(view) is types.ModuleType
    kept = {k: v for k, v in vars(view).items() if not k.startswith("__")}
    assert kept == {"fixture": m.fixture, "wrapped": m.wrapped, "evil": m.evil}  # type: ignore[attr-defined]
    assert all(kept[k] is getattr(m, k) for k in kept)  # the module's own objects, not copies


def test_modules_it_cannot_reason_about_are_scanned_whole() -> None:
    class Sub(types.ModuleType):
        pass

    assert fixture_candidates(Sub("sub")) is None  # a subclass may answer getattr its own way
    m = types.ModuleType("m")
    m.__dir__ = lambda: ["x"]  # type: ignore[method-assign]
    assert fixture_candidates(m) is None  # dir() is not the __dict__'s keys


# --------------------------------------------------------------------------------------------
# sessions with and without it, in forks of one primed process
# --------------------------------------------------------------------------------------------

DRIVER = r'''
import contextlib, json, os, shutil, sys, types, warnings
from pathlib import Path
import pytest
from reliabench.warm.pytest_fixtures import scan_candidates_only
from reliabench.warm.server import _prime_pytest_session

CASES = json.loads(sys.argv[1])
OUT = sys.argv[2]


class Dump:
    """What the session registered and saw, in registration order."""

    def __init__(self):
        self.outcomes, self.warnings, self.fixtures, self.autouse = [], [], [], []

    def pytest_warning_recorded(self, warning_message, when, nodeid, location):
        self.warnings.append([str(warning_message.message), when, nodeid])

    def pytest_runtest_logreport(self, report):
        self.outcomes.append([report.nodeid, report.when, report.outcome])

    def pytest_collection_finish(self, session):
        fm = session._fixturemanager
        for argname, by_node in fm._arg2node2fixturedefs.items():
            for node, defs in by_node.items():
                self.fixtures.append([argname, node.nodeid, [
                    [getattr(d.func, "__module__", None), getattr(d.func, "__qualname__", repr(d.func)),
                     d.scope, repr(d.params), repr(d.ids)] for d in defs]])
        self.autouse = [[node.nodeid, list(names)] for node, names in fm._node_autousenames.items()]


def naive():
    """A filter that keeps fixture definitions only (no wrappers): the comparison must see it."""
    from _pytest.fixtures import FixtureFunctionDefinition, FixtureManager
    real = FixtureManager.parsefactories

    def parsefactories(self, *args, **kwargs):
        holder = kwargs.get("holder")
        if type(holder) is types.ModuleType:
            view = types.ModuleType("v")
            view.__dict__.update({k: v for k, v in vars(holder).items()
                                  if type(v) is FixtureFunctionDefinition})
            kwargs["holder"] = view
        real(self, *args, **kwargs)

    FixtureManager.parsefactories = parsefactories


def session(case, mode):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.chdir(case["cwd"])
            sys.path.insert(0, case["cwd"])
            dump = Dump()
            if mode == "naive":
                naive()
            scan = scan_candidates_only() if mode == "candidates" else contextlib.nullcontext()
            with scan, warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")  # what pytest's own capture does not see (session start)
                code = int(pytest.main(case["args"], plugins=[dump]))
            seen = [[str(w.message), w.category.__name__, w.filename, w.lineno] for w in caught]
            os.write(write, json.dumps({"code": code, "outcomes": dump.outcomes, "warnings": dump.warnings + seen,
                                        "fixtures": dump.fixtures, "autouse": dump.autouse}).encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        text = fh.read()
    os.waitpid(pid, 0)
    return json.loads(text)


_prime_pytest_session()
os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
results = {}
for case in CASES:
    results[case["name"]] = {mode: session(case, mode) for mode in case["modes"]}
Path(OUT).write_text(json.dumps(results))
'''

PLANTED_CONFTEST = '''
import functools

import _pytest.monkeypatch
import _pytest.tmpdir
import pytest


@pytest.fixture
def _only_in_plugin():
    return 41


def _wrap(f):
    @functools.wraps(f)
    def wrapper(*args, **kwargs):
        return f(*args, **kwargs)
    return wrapper


class Evil:
    def __getattr__(self, name):
        raise RuntimeError(name)


# planted in built-in plugin modules before the session starts (an initial conftest)
_pytest.tmpdir.only_in_plugin = pytest.fixture(name="only_in_plugin")(lambda: 41)
_pytest.monkeypatch.hidden_fixture = _wrap(_only_in_plugin)  # behind a decorator: pytest warns
_pytest.monkeypatch.derive_importpath.__wrapped__ = _only_in_plugin  # a wrapper attribute, afterwards
_pytest.monkeypatch.evil = Evil()
del _only_in_plugin
'''

PLANTED_TESTS = '''
def test_the_planted_fixture(only_in_plugin):
    assert only_in_plugin == 41


def test_a_built_in_fixture(monkeypatch, tmp_path):
    monkeypatch.setenv("RB_X", "1")
    assert tmp_path.is_dir()


def test_fails():
    assert 1 == 2
'''

DIR_PLUGIN = '''
import pytest


@pytest.fixture(name="from_dir_plugin")
def _make():
    return "d"


_LAZY = {"from_dir_plugin": _make}  # not in the module's __dict__: only __dir__ and __getattr__ name it
del _make


def __getattr__(name):
    try:
        return _LAZY[name]
    except KeyError:
        raise AttributeError(name) from None


def __dir__():
    return ["from_dir_plugin"]
'''


def _py30_cases(stack: contextlib.ExitStack, root: Path) -> list[dict[str, Any]]:
    """Each py30 task's tests staged as a run stages them, its reference solution as the workspace."""
    cases = []
    for task in sorted(p for p in PY30.iterdir() if (p / "tests").is_dir()):
        staging = stack.enter_context(staged(task / "tests", 0, root))
        workspace = root / f"{task.name}-ws"
        shutil.copytree(task / "solution", workspace)
        args = pytest_command(sys.executable, staging, [], unneeded_plugins(staging / "tests"))
        args = args[args.index(str(staging / "pytest.ini")) - 1:]  # after the -c program
        at = args.index(PLUGIN_MODULE)  # no outcome plugin outside a harness run (it needs its channel)
        del args[at - 1:at + 1]
        cases.append({"name": task.name, "args": args, "cwd": str(workspace), "modes": ["whole", "candidates"]})
    return cases


def _run(tmp_path: Path, cases: list[dict[str, Any]]) -> dict[str, dict[str, dict[str, Any]]]:
    out = tmp_path / "results.json"
    proc = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(cases), str(out)], capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    results: dict[str, dict[str, dict[str, Any]]] = json.loads(out.read_text(encoding="utf-8"))
    return results


def test_planted_cases_register_and_warn_as_the_whole_scan(tmp_path: Path) -> None:
    tests, plugins = tmp_path / "tests", tmp_path / "plugins"
    tests.mkdir()
    plugins.mkdir()
    (tests / "conftest.py").write_text(PLANTED_CONFTEST, encoding="utf-8")
    (tests / "test_planted.py").write_text(PLANTED_TESTS, encoding="utf-8")
    (tests / "test_dir_plugin.py").write_text("def test_it(from_dir_plugin):\n    assert from_dir_plugin == 'd'\n",
                                              encoding="utf-8")
    (plugins / "rb_dir_plugin.py").write_text(DIR_PLUGIN, encoding="utf-8")
    args = ["-q", "-p", "no:cacheprovider", "-p", "rb_dir_plugin", "--rootdir", str(tmp_path), "-c", os.devnull,
            str(tests)]
    case = {"name": "planted", "args": args, "cwd": str(plugins), "modes": ["whole", "candidates", "naive"]}
    result = _run(tmp_path, [case])["planted"]
    whole, candidates, naive = result["whole"], result["candidates"], result["naive"]
    assert candidates == whole
    # the case has teeth: the planted fixture is registered at the session, both wrappers warn,
    # the fixture that only the __dir__ plugin's __dir__ and __getattr__ know is found, the tests ran (one fails on purpose)
    # at the session node (""): from the plugin module, not from the conftest (its node is "tests")
    assert ["only_in_plugin", "", [["conftest", "<lambda>", "function", "None", "None"]]] in whole["fixtures"]
    messages = " ".join(w[0] for w in whole["warnings"])
    assert "hidden_fixture" in messages and "derive_importpath" in messages
    assert any(f[0] == "from_dir_plugin" for f in whole["fixtures"])
    calls = {nodeid.split("::")[-1]: outcome for nodeid, when, outcome in whole["outcomes"] if when == "call"}
    assert calls == {"test_the_planted_fixture": "passed", "test_a_built_in_fixture": "passed",
                     "test_fails": "failed", "test_it": "passed"}
    assert whole["code"] == 1
    # and the comparison sees a filter that keeps fixture definitions only: it loses pytest's
    # warnings about the wrappers and the fixture that only __dir__ and __getattr__ know
    assert naive["warnings"] != whole["warnings"]
    assert not any(f[0] == "from_dir_plugin" for f in naive["fixtures"])


def test_every_py30_task_registers_and_passes_as_with_the_whole_scan(tmp_path: Path) -> None:
    with contextlib.ExitStack() as stack:
        cases = _py30_cases(stack, tmp_path)
        assert len(cases) == 31
        results = _run(tmp_path, cases)
    for name, by_mode in results.items():
        whole, candidates = by_mode["whole"], by_mode["candidates"]
        assert candidates == whole, name
        assert whole["code"] == 0, (name, whole["outcomes"])  # the reference solution passes
        names = {f[0] for f in whole["fixtures"]}
        assert {"monkeypatch", "capsys", "tmp_path", "pytestconfig"} <= names, (name, names)  # the built-ins' are there
        assert any(when == "call" for _, when, _ in whole["outcomes"]), name


def test_it_is_used_on_the_warm_path_only_with_the_loop_it_was_checked_against() -> None:
    code = textwrap.dedent('''
        import inspect
        from _pytest.fixtures import FixtureManager
        from reliabench.warm.pytest_fixtures import scan_candidates_only
        real = FixtureManager.parsefactories
        with scan_candidates_only():
            patched = FixtureManager.parsefactories is not real
        assert FixtureManager.parsefactories is real  # restored
        print(patched, "holder" in inspect.signature(real).parameters)
    ''')
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    patched, keyword_form = proc.stdout.split()
    assert patched == keyword_form  # patched exactly where pytest has parsefactories(holder=, node=)


# --------------------------------------------------------------------------------------------
# on the warm path: it is what a warm rollout's session uses, with the verdicts of a fresh process
# --------------------------------------------------------------------------------------------

WIRING = '''
from _pytest.fixtures import FixtureManager


def test_the_scan_is_on_candidates():
    assert getattr(FixtureManager.parsefactories, "__wrapped__", None) is not None
'''


def test_a_warm_rollout_scans_candidates_and_judges_as_a_fresh_process(tmp_path: Path) -> None:
    from sandbox_helpers import hidden_test_path_or_skip, warm_or_skip

    from reliabench.records import TestOutcome
    from reliabench.sandbox import Limits
    from reliabench.warm import run_warm_tests

    warm = warm_or_skip()
    os.chmod(tmp_path, 0o755)
    tests, ws = tmp_path / "tests", tmp_path / "ws"
    tests.mkdir()
    ws.mkdir()
    (tests / "conftest.py").write_text(PLANTED_CONFTEST, encoding="utf-8")
    (tests / "test_planted.py").write_text(PLANTED_TESTS, encoding="utf-8")
    (tests / "test_wiring.py").write_text(WIRING, encoding="utf-8")
    names = ["test_planted.py::test_the_planted_fixture", "test_planted.py::test_a_built_in_fixture",
             "test_planted.py::test_fails", "test_wiring.py::test_the_scan_is_on_candidates"]
    expected = [TestOutcome(n, "skipped") for n in names]
    limits = Limits(wall_s=20.0, cpu_s=20.0, memory_bytes=1024**3, max_procs=32)
    hot = run_warm_tests(warm, ws, tests, expected=expected, limits=limits, slot=12)
    got = {o.name: o.outcome for o in hot.outcomes}
    assert got == {names[0]: "passed", names[1]: "passed", names[2]: "failed", names[3]: "passed"}, hot.log
    fresh = hidden_test_path_or_skip("bubblewrap", 12)
    cold = fresh.run(ws, tests, expected=expected, limits=limits, slot=12)
    assert {o.name: o.outcome for o in cold.outcomes} == {**got, names[3]: "failed"}, cold.log  # scanned whole
