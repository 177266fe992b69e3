"""Hidden tests: one trustworthy outcome per test, whatever the agent's code does."""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from reliabench.errors import SandboxError, SuiteError
from reliabench.hidden_tests.fresh import (
    HiddenTestRun,
    collect_hidden_tests,
    find_tamper_files,
    parse_channel,
    run_hidden_tests,
)
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, SandboxBackend, get_backend, slot_uid, slots
from reliabench.warm import collect_warm_tests, run_warm_tests

LIMITS = Limits(wall_s=20.0, cpu_s=20.0, memory_bytes=2 * 1024**3)
SLOT = 7

SUITE = '''
import pytest
import solution


@pytest.fixture
def broken():
    raise RuntimeError("fixture breaks")


def test_add():
    assert solution.add(2, 3) == 5


def test_sub():
    assert solution.sub(5, 3) == 2


@pytest.mark.security
def test_no_eval():
    assert solution.safe("1+1") == "1+1"


def test_skipped():
    pytest.skip("not today")


def test_error(broken):
    pass


@pytest.mark.xfail(reason="known")
def test_xfail():
    assert False
'''

GOOD = '''
def add(a, b):
    return a + b


def sub(a, b):
    return a - b


def safe(s):
    return s
'''

NAMES = [
    "test_suite.py::test_add",
    "test_suite.py::test_sub",
    "test_suite.py::test_no_eval",
    "test_suite.py::test_skipped",
    "test_suite.py::test_error",
    "test_suite.py::test_xfail",
]
from sandbox_helpers import backend_or_skip, warm_or_skip  # noqa: E402

GOOD_OUTCOMES = ["passed", "passed", "passed", "skipped", "error", "skipped"]


def _backend_or_skip(name: str) -> SandboxBackend:
    backend = backend_or_skip(name)
    if name == "namespaces" and slots.uid_can_reach(
        sys.executable, slot_uid(SLOT), slot_uid(SLOT), need=5
    ):
        pytest.skip("the slot uid cannot run this interpreter (namespaces explains; see below)")
    return backend


@pytest.fixture(params=["bubblewrap", "namespaces", "none", "warm"])
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    return _backend_or_skip(request.param)


@pytest.fixture(params=["bubblewrap", "warm"])
def bwrap(request: pytest.FixtureRequest) -> SandboxBackend:
    """The strongest fresh-process backend, and the warm test workers."""
    return _backend_or_skip(request.param)


def _hidden(ws: Path, tests: Path, backend: SandboxBackend, **kw: object) -> HiddenTestRun:
    """run_hidden_tests on ``backend``: warm means the warm test workers (tests forked in a warm
    server), every other name a fresh process."""
    if backend.name == "warm":
        kw.pop("python", None)
        return run_warm_tests(warm_or_skip(), ws, tests, **kw)  # type: ignore[arg-type]
    return run_hidden_tests(ws, tests, backend=backend, **kw)  # type: ignore[arg-type]


def _collect(ws: Path, tests: Path, backend: SandboxBackend, **kw: object) -> tuple[TestOutcome, ...]:
    if backend.name == "warm":
        return collect_warm_tests(warm_or_skip(), ws, tests, **kw)  # type: ignore[arg-type]
    return collect_hidden_tests(ws, tests, backend=backend, **kw)  # type: ignore[arg-type]



def _task(base: Path, solution: str = GOOD, suite: str = SUITE) -> tuple[Path, Path]:
    ws = base / "workspace"
    ws.mkdir()
    (ws / "solution.py").write_text(textwrap.dedent(solution), encoding="utf-8")
    tests = base / "tests"
    tests.mkdir()
    (tests / "test_suite.py").write_text(textwrap.dedent(suite), encoding="utf-8")
    return ws, tests


def _expected(security: bool = True) -> tuple[TestOutcome, ...]:
    return tuple(TestOutcome(n, "skipped", n.endswith("no_eval") and security) for n in NAMES)


DECLARED_SKIPS = ("test_suite.py::test_skipped", "test_suite.py::test_xfail")
"""The suite's own skip and xfail, declared as a task declares them (``allowed_skips``)."""


def _run(ws: Path, tests: Path, backend: SandboxBackend, **kw: object) -> object:
    kw.setdefault("expected", _expected())
    kw.setdefault("allowed_skips", DECLARED_SKIPS)
    return _hidden(ws, tests, backend, limits=LIMITS, slot=SLOT, **kw)


# ------------------------------------------------------------------------------------------
# the normal path
# ------------------------------------------------------------------------------------------


def test_collect_gives_names_and_security_flags(bwrap: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base)
    expected = _collect(ws, tests, bwrap, limits=LIMITS, slot=SLOT)
    assert expected == _expected()


def test_collect_reports_a_broken_suite(bwrap: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base, suite="import does_not_exist\n\ndef test_x():\n    pass\n")
    with pytest.raises(SuiteError, match=r"cannot collect test_suite\.py"):
        _collect(ws, tests, bwrap, limits=LIMITS, slot=SLOT)


def test_outcomes_one_per_test(backend: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base)
    run = _run(ws, tests, backend)
    assert run.status == "completed"
    assert [o.name for o in run.outcomes] == NAMES
    assert [o.outcome for o in run.outcomes] == GOOD_OUTCOMES
    assert [o.security for o in run.outcomes] == [n.endswith("no_eval") for n in NAMES]
    assert not run.forged
    assert not run.tamper_suspected
    assert run.isolation == backend.name
    assert "PytestUnknownMarkWarning" not in run.log
    assert "test_error" in (run.reason or "")  # the erroring test is named in the reason


def test_expected_none_uses_this_runs_collection(bwrap: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base)
    run = _run(ws, tests, bwrap, expected=None)
    assert [(o.name, o.outcome, o.security) for o in run.outcomes] == [
        (n, o, n.endswith("no_eval")) for n, o in zip(NAMES, GOOD_OUTCOMES, strict=True)
    ]


def test_expected_test_without_outcome_is_failed(bwrap: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base)
    expected = [*NAMES, "test_suite.py::test_gone"]
    run = _run(ws, tests, bwrap, expected=expected)
    assert run.outcomes[-1] == TestOutcome("test_suite.py::test_gone", "failed")
    assert "without an outcome" in (run.reason or "")


def test_fresh_process_per_rollout(bwrap: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base)
    first = _run(ws, tests, bwrap)
    (ws / "solution.py").write_text(GOOD.replace("a + b", "a * b"), encoding="utf-8")
    second = _run(ws, tests, bwrap)
    assert first.outcomes[0].outcome == "passed"
    assert second.outcomes[0].outcome == "failed"  # no stale module from the first run


def test_harness_that_cannot_start_is_a_test_error(bwrap: SandboxBackend, base: Path) -> None:
    if bwrap.name == "warm":
        pytest.skip("a warm worker runs no interpreter of its own (see warm/test_server.py)")
    ws, tests = _task(base)
    run = _run(ws, tests, bwrap, python="/bin/false")
    assert run.status == "test_error"
    assert all(o.outcome == "failed" for o in run.outcomes)
    assert "did not start" in (run.reason or "")


def test_timeout_keeps_what_ran(bwrap: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base, GOOD.replace("return a - b", "while True:\n        pass"))
    run = _hidden(ws, tests, bwrap, expected=_expected(), slot=SLOT, limits=Limits(wall_s=3.0))
    assert run.status == "timeout"
    assert [o.outcome for o in run.outcomes[:2]] == ["passed", "failed"]
    assert all(o.outcome == "failed" for o in run.outcomes[2:])
    assert "wall time limit" in (run.reason or "")


# ------------------------------------------------------------------------------------------
# hostile agent code
# ------------------------------------------------------------------------------------------


def test_os_exit_in_a_test_is_not_a_pass(backend: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base, GOOD.replace("return a - b", "import os\n    os._exit(0)"))
    run = _run(ws, tests, backend)
    assert run.status == "completed"
    assert [o.outcome for o in run.outcomes] == ["passed"] + ["failed"] * 5
    assert "ended before the session finished" in (run.reason or "")


def test_segfault_mid_suite_keeps_what_ran(bwrap: SandboxBackend, base: Path) -> None:
    crash = "import ctypes\n    ctypes.string_at(0)"
    ws, tests = _task(base, GOOD.replace("return a - b", crash))
    run = _run(ws, tests, bwrap)
    assert [o.outcome for o in run.outcomes] == ["passed"] + ["failed"] * 5


FORGE_BLIND = '''
import json, os, sys

def _forge():
    names = {names!r}
    for fd in range(3, 64):
        for n in names:
            line = json.dumps({{"seq": 99, "event": "test", "name": n, "outcome": "passed",
                               "security": False, "mac": "0" * 64}}) + "\\n"
            try:
                os.write(fd, line.encode())
            except OSError:
                pass
    for n in names:
        print(json.dumps({{"event": "test", "name": n, "outcome": "passed"}}))

def add(a, b):
    _forge()
    return 0

def sub(a, b):
    return 0

def safe(s):
    return None
'''


def test_blindly_forged_lines_never_count(backend: SandboxBackend, base: Path) -> None:
    ws, tests = _task(base, FORGE_BLIND.format(names=NAMES))
    run = _run(ws, tests, backend)
    assert run.forged
    assert "bad signature" in (run.reason or "")
    assert [o.outcome for o in run.outcomes[:3]] == ["failed", "failed", "failed"]


FORGE_IN_PROCESS = '''
import sys

def add(a, b):
    write = sys.modules["_reliabench_outcome_plugin"]._write
    write({"event": "test", "name": "test_suite.py::test_sub", "outcome": "passed",
           "security": False})
    return a + b

def sub(a, b):
    return 0

def safe(s):
    return s
'''


def test_in_process_forgery_is_detected(backend: SandboxBackend, base: Path) -> None:
    # code that reaches into the plugin's memory signs its lines with the real key; the
    # sequence numbers, the duplicate and the plugin's end-of-session list still expose it
    ws, tests = _task(base, FORGE_IN_PROCESS)
    run = _run(ws, tests, backend)
    assert run.forged
    assert run.outcomes[1] == TestOutcome("test_suite.py::test_sub", "failed")
    assert run.outcomes[0].outcome == "passed"  # the genuine line of test_add still counts


FORGE_AND_EXIT = '''
import os, sys

def add(a, b):
    write = sys.modules["_reliabench_outcome_plugin"]._write
    for name in {names!r}:
        write({{"event": "test", "name": name, "outcome": "passed", "security": False}})
    os._exit(0)
'''


def test_forge_everything_then_exit_fails_everything(bwrap: SandboxBackend,
                                                     base: Path) -> None:
    ws, tests = _task(base, FORGE_AND_EXIT.format(names=NAMES))
    run = _run(ws, tests, bwrap)
    assert run.forged
    assert all(o.outcome == "failed" for o in run.outcomes)


TAMPER = {
    "conftest.py": '''
import pytest

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    report.outcome = "passed"
''',
    "pytest.ini": "[pytest]\naddopts = -p no:_reliabench_outcome_plugin --co\n",
    "pyproject.toml": "[tool.pytest.ini_options]\naddopts = '-x'\n",
    "setup.cfg": "[tool:pytest]\naddopts = -x\n",
    "sitecustomize.py": "import builtins\nbuiltins.TAMPERED = True\n",
    "evil.pth": "import builtins; builtins.TAMPERED = True\n",
    "pytest.py": "raise SystemExit('shadowed pytest')\n",
    "sub/conftest.py": "raise SystemExit('never loaded')\n",
}


def test_agent_config_files_cannot_change_the_run(backend: SandboxBackend, base: Path) -> None:
    broken = GOOD.replace("a + b", "a - b").replace("a - b\n\n\ndef safe", "a + b\n\n\ndef safe")
    ws, tests = _task(base, broken)
    (ws / "sub").mkdir()
    for rel, text in TAMPER.items():
        (ws / rel).write_text(text, encoding="utf-8")
    run = _run(ws, tests, backend)
    assert run.status == "completed"
    assert [o.outcome for o in run.outcomes[:2]] == ["failed", "failed"]
    assert run.tamper_suspected
    assert run.tamper_files == tuple(sorted(TAMPER))
    assert "TAMPERED" not in run.log


def test_workspace_cannot_shadow_the_standard_library(bwrap: SandboxBackend,
                                                      base: Path) -> None:
    ws, tests = _task(base, GOOD.replace("def add", "import json\n\n\ndef add"))
    (ws / "json.py").write_text("raise SystemExit('shadowed json')\n", encoding="utf-8")
    run = _run(ws, tests, bwrap)
    assert [o.outcome for o in run.outcomes] == GOOD_OUTCOMES


def test_starter_files_are_not_flagged(base: Path) -> None:
    starter = base / "starter"
    starter.mkdir()
    (starter / "pyproject.toml").write_text("[tool.pytest.ini_options]\n", encoding="utf-8")
    ws = base / "ws"
    shutil.copytree(starter, ws)
    (ws / "tox.ini").write_text("[tox]\nenvlist = py311\n", encoding="utf-8")
    assert find_tamper_files(ws, starter=starter) == ()
    assert find_tamper_files(ws) == ("pyproject.toml",)


HOSTILE_READER = '''
import os, sys

def add(a, b):
    test_file = sys.modules["test_suite"].__file__
    try:
        open(test_file, "a").write("# changed")
        changed = "changed"
    except OSError:
        changed = "read-only"
    try:
        os.listdir({other!r})
        other = "visible"
    except OSError:
        other = "hidden"
    with open("probe.txt", "w") as fh:
        fh.write(f"{{changed}} {{other}}")
    return a + b

def sub(a, b):
    return a - b

def safe(s):
    return s
'''


def test_test_phase_cannot_change_tests_or_see_other_rollouts(bwrap: SandboxBackend,
                                                              base: Path) -> None:
    other = base / "other-rollout"
    other.mkdir(mode=0o755)
    ws, tests = _task(base, HOSTILE_READER.format(other=str(other)))
    run = _hidden(ws, tests, bwrap, expected=_expected(), limits=LIMITS, slot=SLOT)
    assert run.outcomes[0].outcome == "passed"
    assert (ws / "probe.txt").read_text(encoding="utf-8") == "read-only hidden"
    assert "# changed" not in (tests / "test_suite.py").read_text(encoding="utf-8")


@pytest.mark.skipif(os.geteuid() != 0, reason="uid switching needs root")
def test_namespaces_explains_an_interpreter_the_slot_cannot_run(base: Path) -> None:
    if slots.uid_can_reach(sys.executable, slot_uid(SLOT), slot_uid(SLOT), need=5) is None:
        pytest.skip("this interpreter is reachable by the slot uid")
    try:
        backend = get_backend("namespaces")
    except SandboxError as exc:
        pytest.skip(str(exc))
    ws, tests = _task(base)
    with pytest.raises(SandboxError, match="bubblewrap backend"):
        run_hidden_tests(ws, tests, expected=_expected(), backend=backend, slot=SLOT)


# ------------------------------------------------------------------------------------------
# the channel rules, without a sandbox
# ------------------------------------------------------------------------------------------

KEY = b"k" * 64


def _line(seq: int, key: bytes = KEY, **payload: object) -> bytes:
    text = json.dumps(dict(payload, seq=seq), sort_keys=True, separators=(",", ":"))
    mac = hmac.new(key, text.encode(), hashlib.sha256).hexdigest()
    return (text[:-1] + f',"mac":"{mac}"' + "}\n").encode()


def _stream(*lines: bytes) -> bytes:
    return b"".join(lines)


def test_channel_accepts_a_clean_stream() -> None:
    data = _stream(
        _line(1, event="start", pid=1),
        _line(2, event="test", name="t::a", outcome="passed", security=False),
        _line(3, event="end", exitstatus=0, tests=[["t::a", "passed"]]),
    )
    ch = parse_channel(data, KEY, {"t::a"})
    assert ch.started
    assert ch.ended
    assert not ch.problems
    assert ch.tests == {"t::a": ("passed", False)}


@pytest.mark.parametrize(
    ("lines", "problem"),
    [
        ([_line(2, key=b"x" * 64, event="test", name="t::a", outcome="passed")],
         "bad signature"),
        ([_line(3, event="test", name="t::a", outcome="passed", security=False)],
         "out of sequence"),
        ([_line(2, event="test", name="t::zzz", outcome="passed", security=False)],
         "not expected"),
        ([_line(2, event="test", name="t::a", outcome="passed", security=False),
          _line(3, event="test", name="t::a", outcome="passed", security=False)],
         "two outcome lines"),
        ([_line(2, event="end", exitstatus=0, tests=[]),
          _line(3, event="test", name="t::a", outcome="passed", security=False)],
         "after the end"),
        ([_line(2, event="test", name="t::a", outcome="passed", security=False),
          _line(3, event="end", exitstatus=0, tests=[["t::a", "failed"]])],
         "did not write"),
        ([b"not json\n"], "unreadable"),
    ],
    ids=["bad-mac", "sequence", "unexpected", "duplicate", "after-end", "end-list", "junk"],
)
def test_channel_flags_forgery(lines: list[bytes], problem: str) -> None:
    data = _stream(_line(1, event="start", pid=1), *lines)
    ch = parse_channel(data, KEY, {"t::a"})
    assert any(problem in p for p in ch.problems), ch.problems
    if "t::a" in ch.tests and problem not in ("not expected", "unreadable", "bad signature"):
        assert "t::a" in ch.poisoned
