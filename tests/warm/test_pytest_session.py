"""pytest's start-up done once in the warm server (reliabench.warm.pytest_session).

The prepared configuration must be invisible: a session on it is the session a fresh process
runs (same plugins, same order, its own arguments and directory), it is used once, and a
rollout that mutates pytest's state, a plugin's or the outcome plugin's cannot change the next
rollout's verdict on the same server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import warm_or_skip, warm_rollout

from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.hidden_tests.staging import unneeded_plugins
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits
from reliabench.warm import WarmTests, run_warm_tests
from reliabench.warm.pytest_session import blocked_plugins, prepare

SLOT = 11
LIMITS = Limits(wall_s=20.0, cpu_s=20.0, memory_bytes=1024**3, max_procs=32,
                file_size_bytes=16 * 1024**2, output_bytes=64 * 1024)


@pytest.mark.parametrize(("args", "blocked"), [
    (["-p", "no:cacheprovider", "-pno:pastebin", "-p", "mine", "-q"], ("no:cacheprovider", "no:pastebin")),
    (["-p", " no:doctest ", "--import-mode=append"], ("no:doctest",)),
    (["-q", "-p"], ()),  # a dangling -p blocks nothing
    (["tests/", "no:cacheprovider"], ()),  # a bare value is a path, not a -p value
    ([], ()),
])
def test_blocked_plugins_reads_the_no_values_as_pytest_does(args: list[str], blocked: tuple[str, ...]) -> None:
    assert blocked_plugins(args) == blocked


def test_prepare_imports_the_built_in_plugins_but_the_blocked_ones() -> None:
    config = prepare(("no:cacheprovider", "no:doctest"))
    manager = config.pluginmanager
    assert manager.is_blocked("doctest") and manager.get_plugin("doctest") is None
    assert manager.get_plugin("cacheprovider") is None
    assert manager.get_plugin("python") is not None and manager.get_plugin("pytestconfig") is config
    assert not config._configured and config.args == []  # no session has run on it


# --------------------------------------------------------------------------------------------
# run_session in a process of its own, as a warm fork runs it (the process ends after one session)
# --------------------------------------------------------------------------------------------

PLUGIN = '''
import sys
SEEN = []
def pytest_configure(config):
    SEEN.append(config)
def pytest_sessionfinish(session):
    main = sys.modules["__main__"]
    config = session.config
    with open(main.REPORT, "w") as fh:
        fh.write(__import__("json").dumps({
            "prepared_used": config is main.PREPARED,
            "args": list(config.invocation_params.args),
            "dir": str(config.invocation_params.dir),
            "plugins": [type(p).__name__ if not hasattr(p, "__name__") else p.__name__
                        for p in (config.invocation_params.plugins or ())],
            # plugins by name (a blocked name is listed with None), not by id or path
            "registered": sorted(n for n, p in config.pluginmanager.list_name_plugin()
                                 if p is not None and not n.isdigit() and "/" not in n),
        }))
'''

SUITE = '''
import _pytest.config
import pytest

def test_plain():
    assert 1 + 1 == 2

def test_get_config_is_the_real_one_again():
    assert _pytest.config.get_config.__name__ == "get_config"
    assert _pytest.config.get_config.__module__ == "_pytest.config"

def test_a_nested_session_gets_a_configuration_of_its_own(tmp_path):
    (tmp_path / "test_inner.py").write_text("def test_inner():\\n    assert False\\n")
    code = pytest.main(["-q", "-p", "no:cacheprovider", str(tmp_path)])
    assert code == 1  # the inner test failed: its own session, its own verdict
'''

DRIVER = '''
import os, sys
sys.path.insert(0, {plugin_dir!r})
from reliabench.warm.pytest_session import blocked_plugins, prepare, run_session
REPORT = {report!r}
ARGS = {args!r}
PREPARED = prepare(blocked_plugins(ARGS)) if {prepared!r} else None
os.chdir({cwd!r})
raise SystemExit(run_session(ARGS, "rb_test_plugin", PREPARED))
'''


def _session(tmp_path: Path, prepared: bool) -> tuple[int, dict[str, object], str]:
    plugin_dir, tests, cwd = tmp_path / "plugin", tmp_path / "tests", tmp_path / "cwd"
    for d in (plugin_dir, tests, cwd):
        d.mkdir(exist_ok=True)
    (plugin_dir / "rb_test_plugin.py").write_text(PLUGIN, encoding="utf-8")
    (tests / "test_suite.py").write_text(SUITE, encoding="utf-8")
    report = tmp_path / f"report-{prepared}.json"
    args = ["-q", "-p", "no:cacheprovider", "-p", "no:pastebin", "-p", "rb_test_plugin",
            "--rootdir", str(tests), str(tests)]
    code = DRIVER.format(plugin_dir=str(plugin_dir), report=str(report), args=args, prepared=prepared,
                         cwd=str(cwd))
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    return proc.returncode, json.loads(report.read_text(encoding="utf-8")), proc.stdout + proc.stderr


def test_a_session_on_the_prepared_configuration_is_a_fresh_session(tmp_path: Path) -> None:
    code, warm, log = _session(tmp_path, prepared=True)
    assert code == 0, log
    assert "3 passed" in log, log
    assert warm["prepared_used"] is True  # the prepared configuration ran the session, once
    fresh_code, fresh, fresh_log = _session(tmp_path, prepared=False)
    assert fresh_code == 0, fresh_log
    assert fresh["prepared_used"] is False
    # what the session saw is the same either way: its own arguments and directory, the
    # outcome plugin given as an object, the same plugins registered (the blocked ones not)
    for key in ("args", "dir", "plugins", "registered"):
        assert warm[key] == fresh[key], key
    assert warm["dir"] == str(tmp_path / "cwd")
    assert warm["plugins"] == ["rb_test_plugin"]
    assert "cacheprovider" not in warm["registered"] and "pastebin" not in warm["registered"]  # type: ignore[operator]
    assert "rb_test_plugin" in warm["registered"]  # type: ignore[operator]


# --------------------------------------------------------------------------------------------
# on the warm path: rollout 1 mutates pytest's state; rollout 2 of the slot, a wrong solution,
# must still fail exactly the test it fails alone
# --------------------------------------------------------------------------------------------

TESTS = '''
import solution

def test_value():
    assert solution.value() == 42

def test_other():
    assert [1, 2][::-1] == [2, 1]
'''
NAMES = ["test_suite.py::test_value", "test_suite.py::test_other"]
WRONG = "def value():\n    return 41\n"

MUTATIONS = {
    # every Function's runtest made a no-op: every test of a later session would pass
    "patch-pytest-classes": '''
        import _pytest.python
        def value():
            _pytest.python.Function.runtest = lambda self: None
            return 42
    ''',
    # a forging plugin registered on every configuration there is (the prepared one included)
    "register-a-forging-plugin": '''
        import gc, pytest, _pytest.config
        class Forger:
            @pytest.hookimpl(tryfirst=True)
            def pytest_runtest_logreport(self, report):
                report.outcome = "passed"
        def value():
            for obj in gc.get_objects():
                if isinstance(obj, _pytest.config.Config):
                    obj.pluginmanager.register(Forger(), name="forger-%d" % id(obj))
            return 42
    ''',
    # every configuration's options preset (argparse keeps a value already on the namespace:
    # a later session on it would only collect), and the configuration factory rebound
    "preset-options-and-rebind-get-config": '''
        import gc, _pytest.config
        def value():
            for obj in gc.get_objects():
                if isinstance(obj, _pytest.config.Config):
                    obj.option.__dict__.update(collectonly=True)
            _pytest.config.get_config = lambda *a, **k: (_ for _ in ()).throw(SystemExit(0))
            return 42
    ''',
    # the outcome plugin (preloaded by the server) rewritten to call every test passed
    "rewrite-the-outcome-plugin": '''
        import sys
        def value():
            plugin = sys.modules["_reliabench_outcome_plugin"]
            plugin._final_outcome = lambda phases: "passed"
            plugin.activate = lambda: None
            plugin._active = False
            return 42
    ''',
}
"""Each mutation changes the verdict of a later session in the same process (``pytest.main`` in
a loop, or a session on the same prepared configuration): ``test_each_mutation_has_teeth``."""


TEETH = '''
import json, sys, textwrap
sys.path[:0] = [{ws!r}]
from reliabench.warm.pytest_session import blocked_plugins, prepare, run_session
ARGS = ["-q", "-p", "no:cacheprovider", "-p", "rb_recorder", {tests!r}]
prepared = prepare(blocked_plugins(ARGS))
if {mutate!r}:
    import mutation
    mutation.value()
run_session(ARGS, "rb_recorder", prepared)
'''
RECORDER = '''
import json, pytest
CALLS = {{}}
@pytest.hookimpl(trylast=True)
def pytest_runtest_logreport(report):
    if report.when == "call":
        CALLS[report.nodeid.split("::")[-1]] = report.outcome
def pytest_sessionfinish(session):
    with open({out!r}, "w") as fh:
        json.dump(CALLS, fh)
'''


@pytest.mark.parametrize("mutation", [m for m in MUTATIONS if m != "rewrite-the-outcome-plugin"])
def test_each_mutation_has_teeth(tmp_path: Path, mutation: str) -> None:
    """Run in the process that prepared the configuration, the mutation changes the verdict.

    (What the warm test below proves is then that a fork's mutation does not reach the server's
    copy. Rewriting the preloaded outcome plugin changes the plugin's functions by definition.)
    """
    ws, tests = tmp_path / "ws", tmp_path / "tests"
    ws.mkdir()
    tests.mkdir()
    (tests / "test_suite.py").write_text(TESTS, encoding="utf-8")
    (ws / "solution.py").write_text(WRONG, encoding="utf-8")
    (ws / "mutation.py").write_text(textwrap.dedent(MUTATIONS[mutation]), encoding="utf-8")
    verdicts = []
    for mutate in (False, True):
        out = tmp_path / f"calls-{mutate}.json"
        (ws / "rb_recorder.py").write_text(RECORDER.format(out=str(out)), encoding="utf-8")
        code = TEETH.format(ws=str(ws), tests=str(tests), mutate=mutate)
        proc = subprocess.run([sys.executable, "-B", "-c", code], capture_output=True, text=True, timeout=120)
        verdicts.append(json.loads(out.read_text(encoding="utf-8")) if out.exists() else proc.returncode)
    assert verdicts[0] == {"test_value": "failed", "test_other": "passed"}
    assert verdicts[1] != verdicts[0], verdicts


@pytest.fixture
def warm() -> WarmTests:
    return warm_or_skip()  # type: ignore[no-any-return]


def _run(base: Path, warm: WarmTests, solution: str, name: str) -> HiddenTestRun:
    return warm_rollout(warm, base, name, solution, tests=TESTS, names=NAMES, limits=LIMITS,
                        slot=SLOT, runner="pytest")


@pytest.mark.parametrize("mutation", list(MUTATIONS))
def test_a_rollout_that_mutates_pytest_cannot_change_the_next_verdict(
        warm: WarmTests, base: Path, mutation: str) -> None:
    alone = _run(base, warm, WRONG, "alone")
    assert [o.outcome for o in alone.outcomes] == ["failed", "passed"], alone.log
    server = warm.workers.server_pid(SLOT)
    _run(base, warm, MUTATIONS[mutation], "mutating")  # its own verdict is its own business
    after = _run(base, warm, WRONG, "after")
    assert after.status == "completed", after.reason
    assert [o.outcome for o in after.outcomes] == ["failed", "passed"], after.log
    assert not after.forged
    assert warm.workers.server_pid(SLOT) == server, "the server was replaced"


# --------------------------------------------------------------------------------------------
# plugins a suite does not need are kept out; a suite that uses one keeps it, on both paths
# --------------------------------------------------------------------------------------------

USES_PLUGINS = {
    "test_legacy.py": "def test_tmpdir(tmpdir):\n    tmpdir.join('x').write('1')\n    assert tmpdir.join('x').read() == '1'\n",
    "test_junit.py": "def test_property(record_property):\n    record_property('k', 'v')\n",
    "test_doc.txt": ">>> 1 + 1\n2\n",
    "test_plain.py": "def test_plain(tmp_path):\n    assert tmp_path.is_dir()\n",
}
USES_NAMES = ["test_doc.txt::test_doc.txt", "test_junit.py::test_property", "test_legacy.py::test_tmpdir",
              "test_plain.py::test_plain"]


def test_a_suite_keeps_the_plugins_it_uses_and_passes_warm_as_fresh(warm: WarmTests, base: Path) -> None:
    from sandbox_helpers import hidden_test_path_or_skip

    tests, ws = base / "uses", base / "ws"
    tests.mkdir()
    ws.mkdir()
    for name, text in USES_PLUGINS.items():
        (tests / name).write_text(text, encoding="utf-8")
    assert set(unneeded_plugins(tests)).isdisjoint({"legacypath", "junitxml", "doctest"})
    expected = [TestOutcome(n, "skipped") for n in USES_NAMES]
    hot = run_warm_tests(warm, ws, tests, expected=expected, limits=LIMITS, slot=SLOT)
    assert {o.name: o.outcome for o in hot.outcomes} == dict.fromkeys(USES_NAMES, "passed"), hot.log
    fresh = hidden_test_path_or_skip("bubblewrap", SLOT)
    cold = fresh.run(ws, tests, expected=expected, limits=LIMITS, slot=SLOT)
    assert [(o.name, o.outcome) for o in cold.outcomes] == [(o.name, o.outcome) for o in hot.outcomes]


def test_the_server_prepares_one_configuration_per_set_of_blocked_plugins() -> None:
    import _pytest.config

    from reliabench.warm.server import _Server

    server = object.__new__(_Server)  # only its cache of configurations: no jail, no slot
    server.pytest_configs = {}
    args = ["-p", "no:cacheprovider", "-p", "_reliabench_outcome_plugin", "tests"]
    first = server._prepared(args)
    assert isinstance(first, _pytest.config.Config)
    assert server._prepared(["-q", *args]) is first  # other arguments, the same blocked plugins
    other = server._prepared(["-p", "no:doctest", *args])
    assert other is not first and other.pluginmanager.get_plugin("doctest") is None
    assert first.pluginmanager.get_plugin("doctest") is not None
