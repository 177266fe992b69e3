"""What the second hostile review (issue 20) found contained stays contained.

The review ran 30 attack classes as an agent gaming the benchmark would. Besides its 13
findings it listed classes that were already contained; those without a test of their own get
one here, each run as a real rollout's hidden tests on every execution path where the class
applies (``sandbox_helpers.HIDDEN_TEST_PATHS``: bubblewrap, namespaces, warm; ``none`` contains
nothing and is left out where the class is about isolation; and the tests of an image task in
podman and docker containers, ``CONTAINER_TEST_PATHS``):

- a fake ``pytest11`` entry point (a ``.dist-info`` folder in the workspace);
- ``sitecustomize.py``, ``usercustomize.py`` and ``.pth`` files in the workspace;
- workspace modules named like 18 standard-library modules;
- leftovers of one rollout (files in ``/tmp`` and ``/dev/shm``, a Unix socket, SysV message
  queues, semaphores and shared memory) are gone for the next rollout of the same slot;
- signals to every pid (``kill(-1, ...)``) end only the rollout's own processes;
- a 45 MB flood of every descriptor (the outcome channel among them);
- the BaseException zoo raised by the tested code, at import and in the function.

Each attack uses a solution that is WRONG unless stated, so any pass is a forged one.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sandbox_helpers import CONTAINER_TEST_PATHS, HIDDEN_TEST_PATHS, HiddenTestPath, hidden_test_path_or_skip

from reliabench.hidden_tests.fresh import HiddenTestRun
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits

SLOT = 10
LIMITS = Limits(wall_s=30.0, cpu_s=30.0)
WRONG = "def add(a, b):\n    return a - b\n"
GOOD = "def add(a, b):\n    return a + b\n"
TESTS = textwrap.dedent("""
    from adder import add

    def test_small():
        assert add(1, 2) == 3

    def test_zero():
        assert add(2, 2) == 4
""")
NAMES = ("test_adder.py::test_small", "test_adder.py::test_zero")
# the warm path twice: pytest in the fork, and the lean runner of `test_runner = "plain"`
PATHS = (*HIDDEN_TEST_PATHS, "warm-plain", *CONTAINER_TEST_PATHS)
ISOLATING_PATHS = tuple(p for p in PATHS if p != "none")


@dataclass(frozen=True)
class Path_:
    """A hidden-test path and the test runner to ask it for."""

    path: HiddenTestPath
    runner: str

    def run(self, workspace: Path, tests_dir: Path, **kw: Any) -> HiddenTestRun:
        return self.path.run(workspace, tests_dir, test_runner=self.runner, **kw)


def _path(name: str) -> Path_:
    runner = "plain" if name.endswith("-plain") else "pytest"
    return Path_(hidden_test_path_or_skip(name.removesuffix("-plain"), SLOT), runner)


@pytest.fixture(params=PATHS)
def test_path(request: pytest.FixtureRequest) -> Path_:
    return _path(request.param)


@pytest.fixture(params=ISOLATING_PATHS)
def isolating_path(request: pytest.FixtureRequest) -> Path_:
    return _path(request.param)


def _rollout(path: Path_, base: Path, files: dict[str, str], *, name: str = "ws",
             tests: str = TESTS, names: tuple[str, ...] = NAMES,
             limits: Limits = LIMITS) -> HiddenTestRun:
    """Run the hidden tests on a workspace holding ``files`` (``adder.py`` defaults to WRONG)."""
    starter, ws, tdir = base / f"{name}-starter", base / name, base / f"{name}-tests"
    for d in (starter, ws, tdir):
        d.mkdir()
        os.chmod(d, 0o755)
    (starter / "adder.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
    (tdir / "test_adder.py").write_text(tests)
    for rel, text in {"adder.py": WRONG, **files}.items():
        target = ws / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text))
    return path.run(ws, tdir, expected=[TestOutcome(n, "skipped") for n in names], limits=limits,
                    slot=SLOT, starter=starter)


def _verdicts(run: HiddenTestRun) -> list[str]:
    return [o.outcome for o in run.outcomes]


FORGER = """
    import json, os, sys
    # what a forger would do if it were ever imported: make every test pass
    def _forge():
        try:
            import adder
            adder.add = lambda a, b: a + b
        except Exception:
            pass
    _forge()
"""


# --------------------------------------------------------------------------------------------
# start-up hooks: entry points, site hooks, .pth files
# --------------------------------------------------------------------------------------------


def test_a_fake_pytest11_entry_point_is_never_loaded(test_path: Path_, base: Path) -> None:
    run = _rollout(test_path, base, {
        "evilplug.py": FORGER + "\ndef pytest_collection_modifyitems(items):\n    items.clear()\n",
        "evilplug-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: evilplug\nVersion: 1.0\n",
        "evilplug-1.0.dist-info/entry_points.txt": "[pytest11]\nevil = evilplug\n",
        "evilplug-1.0.dist-info/top_level.txt": "evilplug\n",
    })
    assert run.status == "completed", run.reason
    assert _verdicts(run) == ["failed", "failed"], run.log


@pytest.mark.parametrize("hook", ["sitecustomize.py", "usercustomize.py", "evil.pth"])
def test_site_hooks_in_the_workspace_do_not_run(test_path: Path_, base: Path,
                                                hook: str) -> None:
    text = "import evilhook\n" if hook.endswith(".pth") else FORGER
    run = _rollout(test_path, base, {hook: text, "evilhook.py": FORGER})
    assert run.status == "completed", run.reason
    assert _verdicts(run) == ["failed", "failed"], run.log


STDLIB_NAMES = ("json", "os", "re", "sys", "io", "abc", "enum", "types", "typing", "inspect",
                "unittest", "traceback", "collections", "functools", "itertools", "hmac",
                "hashlib", "random")


def test_stdlib_named_modules_shadow_nothing(test_path: Path_, base: Path) -> None:
    # 18 modules named like the standard library, each forging if imported and then breaking
    shadow = FORGER + "\nraise SystemExit('shadowed stdlib module imported')\n"
    files = {f"{name}.py": shadow for name in STDLIB_NAMES}
    wrong = _rollout(test_path, base, files, name="wrong")
    assert wrong.status == "completed", wrong.reason
    assert _verdicts(wrong) == ["failed", "failed"], wrong.log
    right = _rollout(test_path, base, {**files, "adder.py": GOOD}, name="right")
    assert _verdicts(right) == ["passed", "passed"], right.log


# --------------------------------------------------------------------------------------------
# leftovers: nothing of one rollout reaches the next one of the same slot
# --------------------------------------------------------------------------------------------

LEAVE_BEHIND = """
    import ctypes, os, socket
    libc = ctypes.CDLL(None, use_errno=True)
    IPC_CREAT = 0o1000
    for where in ("/tmp", "/dev/shm", "/var/tmp"):
        try:
            with open(os.path.join(where, "rb-leftover-canary"), "w") as fh:
                fh.write("secret of rollout 0")
        except OSError:
            pass
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.bind("\\0rb-leftover-abstract")
        sock.listen(1)
        _keep = sock
    except OSError:
        pass
    libc.msgget(0x52420001, IPC_CREAT | 0o666)
    libc.semget(0x52420002, 1, IPC_CREAT | 0o666)
    libc.shmget(0x52420003, 4096, IPC_CREAT | 0o666)

    def add(a, b):
        return a + b
"""

LOOK_FOR_LEFTOVERS = textwrap.dedent("""
    import ctypes, errno, os, socket
    from adder import add

    def test_small():
        assert add(1, 2) == 3

    def test_nothing_left():
        libc = ctypes.CDLL(None, use_errno=True)
        for where in ("/tmp", "/dev/shm", "/var/tmp"):
            assert not os.path.exists(os.path.join(where, "rb-leftover-canary")), where
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect("\\0rb-leftover-abstract")
            connected = True
        except OSError:
            connected = False
        assert not connected, "the abstract socket of rollout 0 is reachable"
        for call, args in (("msgget", (0x52420001, 0)), ("semget", (0x52420002, 0, 0)),
                           ("shmget", (0x52420003, 0, 0))):
            assert getattr(libc, call)(*args) == -1, call
            assert ctypes.get_errno() == errno.ENOENT, call
""")
LEFTOVER_NAMES = ("test_adder.py::test_small", "test_adder.py::test_nothing_left")


def test_leftovers_of_a_rollout_never_reach_the_next(isolating_path: Path_,
                                                     base: Path) -> None:
    first = _rollout(isolating_path, base, {"adder.py": LEAVE_BEHIND}, name="first")
    assert first.status == "completed", first.reason
    second = _rollout(isolating_path, base, {"adder.py": GOOD}, name="second",
                      tests=LOOK_FOR_LEFTOVERS, names=LEFTOVER_NAMES)
    assert second.status == "completed", second.reason
    assert _verdicts(second) == ["passed", "passed"], second.log


# --------------------------------------------------------------------------------------------
# signals, floods and the BaseException zoo
# --------------------------------------------------------------------------------------------

KILL_EVERYTHING = """
    import os, signal
    def add(a, b):
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(-1, sig)
            except OSError:
                pass
        return a + b
"""


def test_signals_to_every_pid_end_only_the_rollout(isolating_path: Path_,
                                                   base: Path) -> None:
    run = _rollout(isolating_path, base, {"adder.py": KILL_EVERYTHING}, name="killer")
    # kill(-1) spares the caller: whatever else it ended was the rollout's own (its verdicts
    # are its own business), never the harness's: no test_error, and the slot works after it
    assert run.status in ("completed", "timeout"), run.reason
    after = _rollout(isolating_path, base, {"adder.py": GOOD}, name="after")
    assert after.status == "completed", after.reason
    assert _verdicts(after) == ["passed", "passed"], after.log


FLOOD = """
    import os
    junk = b'{"seq": 1, "name": "test_adder.py::test_small", "outcome": "passed"}\\n' * 4096
    def add(a, b):
        total = 0
        for fd in range(3, 64):
            try:
                os.set_blocking(fd, True)
                while total < 45 * 1024 * 1024:
                    total += os.write(fd, junk)
            except OSError:
                continue
        return a - b
"""


def test_a_45mb_flood_of_every_descriptor_forges_nothing(test_path: Path_,
                                                         base: Path) -> None:
    run = _rollout(test_path, base, {"adder.py": FLOOD},
                   limits=Limits(wall_s=60.0, cpu_s=60.0))
    assert run.status in ("completed", "timeout"), run.reason
    assert "passed" not in _verdicts(run), run.reason


ZOO = {
    "KeyboardInterrupt": "KeyboardInterrupt()",
    "SystemExit-0": "SystemExit(0)",
    "GeneratorExit": "GeneratorExit()",
    "BaseException": "BaseException('zoo')",
    "subclass": "type('Zoo', (BaseException,), {})()",
    "MemoryError": "MemoryError()",
    "RecursionError": "RecursionError()",
}


# the zoo is judged inside the pytest process, the same on every path: the containers run the two
# exceptions that end the interpreter cleanly (exit status 0 and 2), not all seven
ZOO_CASES = [(p, exc) for p in PATHS if p not in CONTAINER_TEST_PATHS for exc in sorted(ZOO)] + [
    (p, exc) for p in CONTAINER_TEST_PATHS for exc in ("KeyboardInterrupt", "SystemExit-0")]


@pytest.mark.parametrize("where", ["call", "import"])
@pytest.mark.parametrize(("path_name", "exc"), ZOO_CASES)
def test_the_baseexception_zoo_is_a_failure_of_the_rollout(path_name: str, base: Path,
                                                           exc: str, where: str) -> None:
    test_path = _path(path_name)
    if where == "call":
        solution = f"def add(a, b):\n    raise {ZOO[exc]}\n"
    else:
        solution = f"raise {ZOO[exc]}\ndef add(a, b):\n    return a + b\n"
    run = _rollout(test_path, base, {"adder.py": solution}, name=f"zoo-{where}")
    # never test_error: that would become infra_error and leave the agent's n
    assert run.status == "completed", run.reason
    assert _verdicts(run) == ["failed", "failed"], run.log


# --------------------------------------------------------------------------------------------
# own attack class: an agent with the host's file view copies the reference solution
# --------------------------------------------------------------------------------------------

COPYCAT = """\
import os
# look for the task's reference solution anywhere the agent's uid can read
for root, dirs, files in os.walk("{root}"):
    if root.endswith(os.sep + "solution") and "adder.py" in files:
        with open(os.path.join(root, "adder.py")) as src, open("adder.py", "w") as dst:
            dst.write(src.read())
        break
"""


@pytest.mark.parametrize("sandbox", ["bubblewrap", "namespaces"])
def test_a_copied_reference_is_either_unreachable_or_disclosed(base: Path, sandbox: str) -> None:
    from sandbox_helpers import backend_or_skip, python_for
    from suite_helpers import write_adder_suite

    from reliabench.agents.command import CommandAgent
    from reliabench.metrics.analysis import score
    from reliabench.run.runner import RunSettings, run_suite
    from reliabench.store import RunStore
    from reliabench.tasks.suite import load_suite

    backend = backend_or_skip(sandbox)
    # a world-readable copy of the suite somewhere on the host (an installed package, a checkout)
    os.chmod(base, 0o755)
    suite_dir = write_adder_suite(base, "copy", TESTS, solution=GOOD, world_readable=True)
    script = base / "copycat.py"
    script.write_text(COPYCAT.format(root=base))
    os.chmod(script, 0o644)
    agent = CommandAgent("copycat", [python_for(backend, SLOT), str(script)], sandbox=sandbox,
                         readonly=(script,), timeout_s=60)
    run_suite(load_suite(suite_dir), [agent], base / "run",
              RunSettings(n=1, sandbox=sandbox, scanners=("bandit",), limits=LIMITS))
    with RunStore.open_existing(base / "run", readonly=True) as store:
        (r,) = store.rollouts()
    notes = score([r]).notes
    if sandbox == "bubblewrap":
        # a private file-system view: nothing of the host's copy is reachable
        assert not r.passes, r.meta
        assert not any("no private file-system view" in n for n in notes)
    else:
        # the host's view: the copy works, and every score says the passes cannot rule it out
        assert r.passes, r.meta
        assert any("copycat: the agent phase of 1 of 1 rollout(s) ran with no private "
                   "file-system view" in n for n in notes), notes
