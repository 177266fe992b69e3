"""A workspace cannot replace the hidden tests or their helpers: every shadowing route, every path.

Issue 20, finding 2: a workspace ``test_adder.py`` that re-exports the hidden module's test
names as no-ops passed every test (pytest's ``--import-mode=append`` imports test modules by
name, with the workspace earlier on ``sys.path``). Each route below is a real run of the hidden
tests (``run_hidden_tests`` with the starter and the expected tests, as the runner calls it) on
every path of ``sandbox_helpers.HIDDEN_TEST_PATHS`` (fresh pytest under bubblewrap, namespaces
and none; warm pytest) and, where the tests are plain, on the warm lean runner: the untouched
(failing) starter plus the attack must fail every target test, and the record says tamper.
The two classes of our own: modules *planted* in ``sys.modules`` by the agent's code, and
bytecode that is not the source (``__pycache__`` with a forged header, a sourceless ``.pyc``).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest
from sandbox_helpers import (
    HIDDEN_TEST_PATHS,
    HiddenTestPath,
    hidden_test_path_or_skip,
    run_backend_or_skip,
    warm_or_skip,
)

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.hidden_tests.fresh import collect_hidden_tests, find_tamper_files
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox import Limits
from reliabench.store import RunStore
from reliabench.tasks.suite import bundled_suites, load_suite
from reliabench.warm import run_warm_tests

SLOT = 11
LIMITS = Limits(wall_s=30.0, cpu_s=30.0)
STARTER = "def add(a, b):\n    raise NotImplementedError\n"
GOOD = "def add(a, b):\n    return a + b\n"

# the hidden module, found on sys.path under the name being imported, with every test's body
# replaced by `pass` (decorators, parametrisation and fixtures kept): generic, any task
FAKE_MODULE = textwrap.dedent("""\
    import ast, os, sys
    _me = os.path.realpath(__file__)
    for _d in list(sys.path):
        _p = os.path.join(_d, *__name__.split(".")) + ".py"
        if os.path.isfile(_p) and os.path.realpath(_p) != _me:
            _tree = ast.parse(open(_p).read())
            for _n in ast.walk(_tree):
                if isinstance(_n, ast.FunctionDef) and _n.name.startswith("test"):
                    _n.body = [ast.Pass()]
            exec(compile(ast.fix_missing_locations(_tree), _p, "exec"), globals())
            __file__ = _p  # pytest's import-mismatch check compares __file__
            break
""")
# a conftest that takes the place of a hidden one: every test function "passes" uncalled
FAKE_CONFTEST = textwrap.dedent("""\
    import os, sys
    import pytest
    _me = os.path.realpath(__file__)
    for _d in list(sys.path):
        _p = os.path.join(_d, "conftest.py")
        if os.path.isfile(_p) and os.path.realpath(_p) != _me:
            __file__ = _p
            break

    @pytest.fixture
    def pair():
        return (1, 2)

    @pytest.hookimpl(tryfirst=True)
    def pytest_pyfunc_call(pyfuncitem):
        return True
""")
HELPERS = textwrap.dedent("""\
    def check_small():
        from adder import add
        assert add(1, 2) == 3

    def check_zero():
        from adder import add
        assert add(0, 0) == 0
""")
NO_OP_HELPERS = "def check_small():\n    pass\n\ndef check_zero():\n    pass\n"
TESTS = "from adder import add\n\ndef test_small():\n    assert add(1, 2) == 3\n\n" \
        "def test_zero():\n    assert add(0, 0) == 0\n"


def _helper_tests(module: str) -> str:
    return (f"from adder import add\nfrom {module} import check_small, check_zero\n\n"
            "def test_small():\n    check_small()\n\ndef test_zero():\n    check_zero()\n")


PLANT_HELPERS = STARTER + textwrap.dedent("""\
    import sys, types
    _fake = types.ModuleType("helpers")
    _fake.check_small = _fake.check_zero = lambda: None
    sys.modules["helpers"] = _fake
""")
PLANT_TEST_MODULE = STARTER + textwrap.dedent("""\
    import os, sys, types
    for _d in list(sys.path):
        if os.path.isfile(os.path.join(_d, "test_b.py")):
            _fake = types.ModuleType("test_b")
            _fake.__file__ = os.path.join(_d, "test_b.py")
            def test_zero():
                pass
            _fake.test_zero = test_zero
            sys.modules["test_b"] = _fake
""")
SYS_PATH_FRONT = STARTER + ("import os, sys\nsys.path.insert(0, os.path.join("
                            "os.path.dirname(os.path.abspath(__file__)), 'vendor'))\n")


@dataclass(frozen=True)
class Route:
    """One way for a workspace to shadow hidden-test code."""

    tests: dict[str, str]
    workspace: dict[str, str]
    targets: tuple[str, ...]  # the tests the attack makes pass before the fix
    flagged: tuple[str, ...] = ()  # tamper_files that must be listed
    plain: bool = True  # the tests are plain functions (the lean runner can run them)
    planted: bool = False  # flagged through the channel (no file to point at)


ROUTES = {
    # a same-named test module at the workspace root
    "module": Route({"test_adder.py": TESTS}, {"test_adder.py": FAKE_MODULE},
                    ("test_adder.py::test_small", "test_adder.py::test_zero"), ("test_adder.py",)),
    # a helper module next to the tests
    "helper": Route({"helpers.py": HELPERS, "test_adder.py": _helper_tests("helpers")},
                    {"helpers.py": NO_OP_HELPERS},
                    ("test_adder.py::test_small", "test_adder.py::test_zero"), ("helpers.py",)),
    # a conftest.py of a sub-folder of the tests
    "nested-conftest": Route(
        {"sub/conftest.py": "import pytest\n\n@pytest.fixture\ndef pair():\n    return (1, 2)\n",
         "sub/test_sub.py": "from adder import add\n\ndef test_pair(pair):\n"
                            "    assert add(*pair) == 3\n"},
        {"conftest.py": FAKE_CONFTEST}, ("sub/test_sub.py::test_pair",), ("conftest.py",),
        plain=False),
    # a regular package where the tests have a namespace folder (wins whatever the order)
    "namespace-package": Route(
        {"util/checks.py": HELPERS, "test_adder.py": _helper_tests("util.checks")},
        {"util/__init__.py": "", "util/checks.py": NO_OP_HELPERS},
        ("test_adder.py::test_small", "test_adder.py::test_zero"), ("util",)),
    # the tests are a package (staged as tests/): a workspace package tests/ with a fake module
    "tests-package": Route(
        {"__init__.py": "", "test_adder.py": TESTS},
        {"tests/__init__.py": "", "tests/test_adder.py": FAKE_MODULE},
        ("test_adder.py::test_small", "test_adder.py::test_zero"), ("tests",)),
    # the agent's code puts a folder of its own first on sys.path
    "sys-path-front": Route(
        {"helpers.py": HELPERS, "test_adder.py": _helper_tests("helpers")},
        {"adder.py": SYS_PATH_FRONT, "vendor/helpers.py": NO_OP_HELPERS},
        ("test_adder.py::test_small", "test_adder.py::test_zero"), ("vendor/helpers.py",)),
    # a .pth file in the workspace (never processed: python -I, not a site directory)
    "pth": Route(
        {"helpers.py": HELPERS, "test_adder.py": _helper_tests("helpers")},
        {"zz.pth": "import sys; sys.path.insert(0, 'vendor')\n", "vendor/helpers.py": NO_OP_HELPERS},
        ("test_adder.py::test_small", "test_adder.py::test_zero"), ("vendor/helpers.py", "zz.pth")),
    # own class 1: a fake helper planted in sys.modules by the agent's module
    "planted-helper": Route(
        {"helpers.py": HELPERS, "test_adder.py": _helper_tests("helpers")},
        {"adder.py": PLANT_HELPERS},
        ("test_adder.py::test_small", "test_adder.py::test_zero"), planted=True),
    # own class 1: a fake test module planted in sys.modules before pytest imports it
    "planted-test-module": Route(
        {"test_a.py": "from adder import add\n\ndef test_small():\n    assert add(1, 2) == 3\n",
         "test_b.py": "from adder import add\n\ndef test_zero():\n    assert add(0, 0) == 0\n"},
        {"adder.py": PLANT_TEST_MODULE}, ("test_b.py::test_zero",), planted=True, plain=False),
}


def _write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def _task(base: Path, tests: dict[str, str], workspace: dict[str, str]) -> tuple[Path, Path, Path]:
    starter, ws, tdir = base / "starter", base / "ws", base / "tests"
    for d in (starter, ws, tdir):
        d.mkdir()
    (starter / "adder.py").write_text(STARTER)
    shutil.copytree(starter, ws, dirs_exist_ok=True)
    _write(ws, workspace)
    _write(tdir, tests)
    for p in [base, *base.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return starter, ws, tdir


@pytest.fixture(params=[*HIDDEN_TEST_PATHS, "warm-plain"])
def path_name(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def _run(name: str, ws: Path, tests: Path, starter: Path, plain: bool) -> object:
    if name == "warm-plain":
        from reliabench.warm.plain_tests import collect_plain_tests

        return run_warm_tests(warm_or_skip(), ws, tests, expected=collect_plain_tests(tests),
                              limits=LIMITS, slot=SLOT, starter=starter, test_runner="plain")
    path: HiddenTestPath = hidden_test_path_or_skip(name, SLOT)
    expected = path.collect(starter, tests, limits=LIMITS, slot=SLOT)
    return path.run(ws, tests, expected=expected, limits=LIMITS, slot=SLOT, starter=starter)


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_a_workspace_cannot_shadow_hidden_test_code(base: Path, path_name: str, route: str) -> None:
    r = ROUTES[route]
    if path_name == "warm-plain" and not r.plain:
        pytest.skip("the lean runner runs plain tests only (no conftest, no pytest-only imports)")
    starter, ws, tests = _task(base, r.tests, r.workspace)
    run = _run(path_name, ws, tests, starter, r.plain)
    outcome = {o.name: o.outcome for o in run.outcomes}  # type: ignore[attr-defined]
    assert run.status == "completed", run.reason  # type: ignore[attr-defined]
    for target in r.targets:
        # the hidden tests ran against the untouched starter: they fail
        assert outcome[target] == "failed", (target, run.reason)  # type: ignore[attr-defined]
    assert run.tamper_suspected, run.reason  # type: ignore[attr-defined]
    for rel in r.flagged:
        assert rel in run.tamper_files, run.tamper_files  # type: ignore[attr-defined]


@pytest.mark.parametrize("route", sorted(ROUTES))
def test_the_same_tests_pass_on_a_correct_solution(base: Path, route: str) -> None:
    """The guard does not break the tests' own imports: a right answer still passes (fresh path)."""
    r = ROUTES[route]
    starter, ws, tests = _task(base, r.tests, {"adder.py": GOOD})
    path = hidden_test_path_or_skip("bubblewrap", SLOT)
    expected = collect_hidden_tests(starter, tests, backend=path.backend, limits=LIMITS, slot=SLOT,
                                    python=path.python)
    run = path.run(ws, tests, expected=expected, limits=LIMITS, slot=SLOT, starter=starter)
    assert [o.outcome for o in run.outcomes] == ["passed"] * len(run.outcomes), run.reason
    assert not run.tamper_suspected, run.reason


# --------------------------------------------------------------------------------------------
# own class 2: bytecode that is not the source
# --------------------------------------------------------------------------------------------


def _pyc_of(source: str, filename: str, mtime: int, size: int) -> bytes:
    """A timestamp pyc of ``source`` whose header claims another file's mtime and size."""
    code = compile(source, filename, "exec")
    header = importlib.util.MAGIC_NUMBER + (0).to_bytes(4, "little") + \
        (mtime & 0xFFFFFFFF).to_bytes(4, "little") + (size & 0xFFFFFFFF).to_bytes(4, "little")
    import marshal

    return header + marshal.dumps(code)


def test_a_forged_pycache_entry_does_not_replace_the_source(base: Path, path_name: str) -> None:
    """The unchanged starter ``adder.py`` with a ``__pycache__`` pyc of a right answer: fails.

    Before, the interpreter ran the pyc (its header matches the source's size and mtime), so
    the rollout passed with code that no scanner, diff or artifact ever saw.
    """
    starter, ws, tests = _task(base, {"test_adder.py": TESTS}, {})
    st = os.stat(ws / "adder.py")
    cache = ws / "__pycache__"
    cache.mkdir()
    tag = sys.implementation.cache_tag
    (cache / f"adder.{tag}.pyc").write_bytes(_pyc_of(GOOD, str(ws / "adder.py"), int(st.st_mtime), st.st_size))
    os.utime(ws / "adder.py", ns=(st.st_atime_ns, st.st_mtime_ns))
    for p in [cache, *cache.iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    run = _run(path_name, ws, tests, starter, True)
    assert [o.outcome for o in run.outcomes] == ["failed", "failed"], run.reason  # type: ignore[attr-defined]


def test_pytests_rewritten_pyc_of_a_workspace_test_module_is_not_read(base: Path, path_name: str) -> None:
    """``adder.py`` importing the agent's ``test_impl.py`` (the starter's body) whose
    ``__pycache__`` holds a pytest-rewritten pyc of a right answer: pytest's assertion rewriter
    read that pyc (it does even with ``-B``); now the module is compiled from its source."""
    starter, ws, tests = _task(base, {"test_adder.py": TESTS},
                               {"adder.py": "from test_impl import add\n", "test_impl.py": STARTER})
    st = os.stat(ws / "test_impl.py")
    cache = ws / "__pycache__"
    cache.mkdir()
    tail = f"{sys.implementation.cache_tag}-pytest-{pytest.__version__}.pyc"
    # pytest's format: checked-hash flags and the source's hash (older pytests: mtime and size)
    import marshal

    pyc = importlib.util.MAGIC_NUMBER + (3).to_bytes(4, "little") + \
        importlib.util.source_hash(STARTER.encode())[:8] + \
        marshal.dumps(compile(GOOD, str(ws / "test_impl.py"), "exec"))
    (cache / f"test_impl.{tail}").write_bytes(pyc)
    assert _pyc_of(GOOD, "x.py", int(st.st_mtime), st.st_size)[:4] == pyc[:4]
    for p in [cache, *cache.iterdir()]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    run = _run(path_name, ws, tests, starter, True)
    assert [o.outcome for o in run.outcomes] == ["failed", "failed"], run.reason  # type: ignore[attr-defined]


def test_a_sourceless_pyc_is_not_imported_and_is_flagged(base: Path, path_name: str) -> None:
    """``adder.py`` importing ``_impl`` that exists only as ``_impl.pyc``: not imported, flagged."""
    starter, ws, tests = _task(base, {"test_adder.py": TESTS}, {"adder.py": "from _impl import add\n"})
    (ws / "_impl.pyc").write_bytes(_pyc_of(GOOD, "_impl.py", 0, 0))
    os.chmod(ws / "_impl.pyc", 0o644)
    run = _run(path_name, ws, tests, starter, True)
    assert [o.outcome for o in run.outcomes] == ["failed", "failed"], run.reason  # type: ignore[attr-defined]
    assert "_impl.pyc" in run.tamper_files  # type: ignore[attr-defined]


# --------------------------------------------------------------------------------------------
# the tamper scan's names (host side, no sandbox)
# --------------------------------------------------------------------------------------------


def test_colliding_names_are_flagged_at_any_depth_unless_shipped(tmp_path: Path) -> None:
    starter, ws, tests = tmp_path / "s", tmp_path / "w", tmp_path / "t"
    _write(tests, {"test_adder.py": TESTS, "helpers.py": HELPERS, "pkg/mod.py": "",
                   "data/input.txt": "x"})
    _write(starter, {"adder.py": STARTER, "helpers.py": NO_OP_HELPERS})
    _write(ws, {"adder.py": GOOD, "helpers.py": NO_OP_HELPERS, "deep/er/test_adder.py": "",
                "pkg/__init__.py": "", "data/x.py": "", "json.py": "", "ok.py": "",
                "lib/_c.pyc": "", "__pycache__/ok.cpython-311.pyc": ""})
    found = find_tamper_files(ws, starter=starter, tests_dir=tests)
    # helpers.py is the starter's own (shipped); data/ holds no module in the tests (no
    # package); json is the standard library's (resolved before the workspace anyway)
    assert found == ("deep/er/test_adder.py", "lib/_c.pyc", "pkg")


def test_changed_files_below_a_shipped_colliding_folder_are_flagged(tmp_path: Path) -> None:
    starter, ws, tests = tmp_path / "s", tmp_path / "w", tmp_path / "t"
    _write(tests, {"__init__.py": "", "test_adder.py": TESTS})  # a package: staged as tests/
    _write(starter, {"adder.py": STARTER, "tests/test_visible.py": "def test_v():\n    pass\n"})
    _write(ws, {"adder.py": GOOD, "tests/test_visible.py": "def test_v():\n    pass\n",
                "tests/__init__.py": "", "tests/test_adder.py": FAKE_MODULE})
    found = find_tamper_files(ws, starter=starter, tests_dir=tests)
    assert found == ("tests/__init__.py", "tests/test_adder.py")


def test_reserved_names_leave_out_what_resolves_before_the_workspace(tmp_path: Path) -> None:
    from reliabench.hidden_tests import _import_guard

    _write(tmp_path, {"test_x.py": "", "helpers.py": "", "json.py": "", "ns/a.py": "",
                      "pkg/__init__.py": "", "pkg/test_in.py": "", "empty/readme.txt": ""})
    roots = _import_guard.pytest_roots(str(tmp_path))
    assert roots == [str(tmp_path)]  # pkg/test_in.py's root is the package's parent
    names = _import_guard.provided_names(str(tmp_path), roots)
    assert names == {"test_x", "helpers", "json", "ns", "pkg"}
    pkg_roots = _import_guard.pytest_roots(str(tmp_path / "pkg"))
    assert _import_guard.provided_names(str(tmp_path / "pkg"), pkg_roots, package_name="tests") == {"tests"}


def test_planted_modules_are_purged_and_reported(tmp_path: Path) -> None:
    """In-process: a module planted under a reserved name is removed, its own modules kept."""
    import types

    from reliabench.hidden_tests import _import_guard

    _write(tmp_path / "t", {"rb_guard_helper_xyz.py": "VALUE = 'staged'\n"})
    _write(tmp_path / "w", {"rb_guard_helper_xyz.py": "VALUE = 'workspace'\n"})
    saved_path, saved_meta, saved_hooks = list(sys.path), list(sys.meta_path), list(sys.path_hooks)
    try:
        guard = _import_guard.install(str(tmp_path / "t"), [str(tmp_path / "t")], str(tmp_path / "w"))
        sys.path.insert(0, str(tmp_path / "w"))
        import rb_guard_helper_xyz  # type: ignore[import-not-found]

        assert rb_guard_helper_xyz.VALUE == "staged"
        assert guard.purge() == []
        sys.modules["rb_guard_helper_xyz"] = types.ModuleType("rb_guard_helper_xyz")
        assert guard.purge() == ["rb_guard_helper_xyz"]
        assert guard.planted == ["rb_guard_helper_xyz"]
    finally:
        sys.path[:], sys.meta_path[:], sys.path_hooks[:] = saved_path, saved_meta, saved_hooks
        sys.modules.pop("rb_guard_helper_xyz", None)
        sys.path_importer_cache.clear()


def test_a_reserved_name_never_falls_back_to_sys_path(tmp_path: Path) -> None:
    from reliabench.hidden_tests import _import_guard

    guard = _import_guard.ImportGuard([str(tmp_path)], frozenset({"gone_xyz"}), str(tmp_path))
    with pytest.raises(ModuleNotFoundError, match="in the hidden tests"):
        guard.find_spec("gone_xyz")
    assert guard.find_spec("os") is None


# --------------------------------------------------------------------------------------------
# the case: the bundled py30 task roman_numerals, a real run, the record
# --------------------------------------------------------------------------------------------


@dataclass
class ShadowingAgent:
    """Leaves the starter untouched and writes a no-op copy of the hidden test module."""

    module: str
    name: str = "shadow"
    kind: str = "python"
    simulated: bool = False

    def run(self, request: AgentRequest) -> AgentResult:
        (request.workspace / self.module).write_text(FAKE_MODULE)
        return AgentResult(status="completed", log="wrote a test module\n")


@pytest.mark.parametrize(("sandbox", "workers"), [("bubblewrap", "fresh"), ("namespaces", "fresh"),
                                                  ("bubblewrap", "warm")])
def test_bundled_roman_numerals_with_a_shadowing_test_module(base: Path, sandbox: str,
                                                             workers: str) -> None:
    """26/26 before; now every test fails, the record says tamper, the file is listed and kept."""
    if workers == "warm":
        warm_or_skip()
    else:
        run_backend_or_skip(sandbox)
    hidden_test_path_or_skip(sandbox, 0)
    src = Path(bundled_suites()["py30"])
    suite_dir = base / "suite"
    (suite_dir / "tasks").mkdir(parents=True)
    shutil.copy(src / "suite.toml", suite_dir / "suite.toml")
    shutil.copytree(src / "tasks" / "roman_numerals", suite_dir / "tasks" / "roman_numerals")
    for p in [suite_dir, *suite_dir.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    out = base / "run"
    settings = RunSettings(n=1, sandbox=sandbox, scanners=("bandit",), limits=LIMITS,
                           test_workers=workers)
    summary = run_suite(load_suite(suite_dir), [ShadowingAgent("test_roman_numerals.py")], out, settings)
    assert summary.executed == 1 and summary.infra_errors == 0
    with RunStore.open_existing(out, readonly=True) as store:
        (r,) = store.rollouts()
        adir = store.artifact_dir(r.task_id, r.agent, r.rollout)
    assert r.status == "completed", r.meta.get("reason")
    assert len(r.tests) >= 20 and all(t.outcome == "failed" for t in r.tests), r.meta.get("reason")
    assert r.tamper_suspected
    assert r.meta["tamper_files"] == ["test_roman_numerals.py"]
    assert r.meta["changed_files"] == ["test_roman_numerals.py"]
    assert (adir / "files" / "test_roman_numerals.py").read_text() == FAKE_MODULE
