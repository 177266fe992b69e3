"""Hostile rollouts must not abort a run, inflate a score or reach the host.

Each class of the hostile-input review (issue 10) with the cases seen and their neighbours:
exceptions inside one rollout, agent-caused conditions that must be failures and never
``infra_error``, host-side reads of the agent's files, bounded resources, names, bad input.
Hidden-test runs are parametrised over ``sandbox_helpers.HIDDEN_TEST_PATHS`` and the container
paths (``CONTAINER_TEST_PATHS``: the tests of an image task in a podman or docker container of
the test image); the runs through the runner take the container backends too, with the suite's
task declaring the test image. What stays host-only says why where it is.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from container_helpers import container_backend_or_skip
from sandbox_helpers import (
    CONTAINER_TEST_PATHS,
    HIDDEN_TEST_PATHS,
    ContainerTestPath,
    HiddenTestPath,
    backend_or_skip,
    deep_chain,
    fresh_harness_or_skip,
    hidden_test_path_or_skip,
    python_for,
)
from suite_helpers import write_adder_suite

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.agents.command import CommandAgent
from reliabench.cli import main
from reliabench.errors import InvalidArgumentError, OutputError, SuiteError
from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.fresh import find_tamper_files, run_hidden_tests
from reliabench.records import Rollout, TestOutcome
from reliabench.run import artifacts, rollout
from reliabench.run.artifacts import ArtifactBudget, StoredArtifacts
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox import Limits
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE
from reliabench.sandbox.environment import Mount
from reliabench.scanners.rescan import plan_rebuild
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

SLOT = 9
LIMITS = Limits(wall_s=30.0, cpu_s=30.0)
GOOD = "def add(a, b):\n    return a + b\n"
TESTS = textwrap.dedent("""
    from adder import add

    def test_small():
        assert add(1, 2) == 3

    def test_zero():
        assert add(0, 0) == 0
""")
NAMES = ["test_adder.py::test_small", "test_adder.py::test_zero"]
SECRET = "host-secret-7f3a [tool.pytest.ini_options]"



@pytest.fixture(params=(*HIDDEN_TEST_PATHS, *CONTAINER_TEST_PATHS))
def test_path(request: pytest.FixtureRequest) -> HiddenTestPath:
    return hidden_test_path_or_skip(request.param, SLOT)


def _task(base: Path, solution: str) -> tuple[Path, Path, Path]:
    starter, ws, tests = base / "starter", base / "ws", base / "tests"
    for d in (starter, ws, tests):
        d.mkdir()
        os.chmod(d, 0o755)
    (starter / "adder.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
    (ws / "adder.py").write_text(textwrap.dedent(solution))
    (tests / "test_adder.py").write_text(TESTS)
    return starter, ws, tests


def _expected() -> tuple[TestOutcome, ...]:
    return tuple(TestOutcome(n, "skipped") for n in NAMES)


# ------------------------------------------------------------------------------------------
# class 2: the channel cannot be truncated, and agent-caused conditions are failures
# ------------------------------------------------------------------------------------------

CHANNEL_ATTACKS = {
    "ftruncate": """
        import os
        for fd in range(3, 256):
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
        def add(a, b):
            return a + b
    """,
    "close-every-descriptor": """
        import os
        os.closerange(3, 4096)
        def add(a, b):
            return a + b
    """,
    "dup2-junk-over-every-descriptor": """
        import os
        r, w = os.pipe()
        for fd in range(3, 256):
            if fd not in (r, w):
                try:
                    os.dup2(w, fd)
                except OSError:
                    pass
        def add(a, b):
            return a + b
    """,
}


@pytest.mark.parametrize("attack", sorted(CHANNEL_ATTACKS))
def test_attacking_the_channel_fails_the_rollout(test_path: HiddenTestPath, base: Path,
                                                 attack: str) -> None:
    starter, ws, tests = _task(base, CHANNEL_ATTACKS[attack])
    run = test_path.run(ws, tests, expected=_expected(), limits=LIMITS, slot=SLOT, starter=starter)
    assert run.status == "completed", run.reason  # never test_error: that would be infra_error
    if attack == "ftruncate":
        # a pipe or socket cannot be truncated: nothing already written is lost, the code is right
        assert [o.outcome for o in run.outcomes] == ["passed", "passed"], run.reason
    else:
        # cutting the plugin off its channel only hurts the rollout itself
        assert all(o.outcome == "failed" for o in run.outcomes), run.outcomes


SOCKET_HUNT = """
    import glob, hashlib, hmac, json, os, socket
    tried = []
    candidates = [os.environ.get("RELIABENCH_OUTCOME_SOCKET")]  # the plugin removed it
    candidates += glob.glob("/tmp/rb-chan-*/channel/*") + glob.glob("/run/reliabench/*")
    for path in candidates:
        if not path:
            tried.append("no variable")
            continue
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(2)
        try:
            s.connect(path)
            key = s.recv(100)
            line = json.dumps({"event": "test", "name": "test_adder.py::test_small", "outcome": "passed",
                               "security": False, "seq": 99}, sort_keys=True, separators=(",", ":"))
            mac = hmac.new(key.strip() or b"guess", line.encode(), hashlib.sha256).hexdigest()
            s.sendall((line[:-1] + ',"mac":"' + mac + '"}\\n').encode())
            tried.append("connected " + repr(key[:8]))
        except OSError as exc:
            tried.append(type(exc).__name__)
        finally:
            s.close()
    open("tried.txt", "w").write("\\n".join(tried))

    def add(a, b):
        return -1
"""


def test_the_tested_code_cannot_reach_the_outcome_socket(test_path: HiddenTestPath, base: Path) -> None:
    """A forged key exchange: the code under test looks for the harness's socket and connects first."""
    starter, ws, tests = _task(base, SOCKET_HUNT)
    run = test_path.run(ws, tests, expected=_expected(), limits=LIMITS, slot=SLOT, starter=starter)
    assert run.status == "completed", run.reason
    assert [o.outcome for o in run.outcomes] == ["failed", "failed"], run.reason  # -1, as deserved
    assert not run.forged, run.reason
    tried = (ws / "tried.txt").read_text().splitlines()
    assert tried[0] == "no variable" and not any(t.startswith("connected") for t in tried), tried


LURKER = """
import glob, socket, time
end = time.time() + 60
while time.time() < end:
    for path in glob.glob("/tmp/rb-chan-*/channel/outcome-*.sock") + glob.glob("/run/reliabench/outcome-*.sock"):
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect(path)
            s.sendall(b"junk from the agent phase\\n")
        except OSError:
            pass
        finally:
            s.close()
    time.sleep(0.01)
"""
SPAWNER = """
import subprocess, sys
open("adder.py", "w").write("def add(a, b):\\n    return a + b\\n")
subprocess.Popen([sys.executable, sys.argv[1]], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


@pytest.mark.parametrize("sandbox", ["bubblewrap", "namespaces", "podman-fresh", "podman-same", "docker-fresh",
                                     "docker-same"])
def test_a_process_left_by_the_agent_phase_cannot_reach_the_tests_socket(base: Path, sandbox: str) -> None:
    """An agent leaves a setsid() process that waits for the tests' outcome socket to appear.

    In a container (``tests = "same"``) the lurker lives in the very container the tests then
    run in, so only ``stop_processes`` between the phases keeps it from taking the socket's one
    connection (and the key); with ``tests = "fresh"`` its container is gone.
    """
    sandbox, _, handover = sandbox.partition("-")
    environment = ""
    if handover:
        container_backend_or_skip(sandbox)
        python = "/usr/bin/python3"
        environment = f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\ntests = "{handover}"\n'
    else:
        backend = backend_or_skip(sandbox)
        fresh_harness_or_skip(backend)
        python = python_for(backend, SLOT)
    os.chmod(base, 0o755)
    lurker, spawner = base / "lurker.py", base / "spawner.py"
    lurker.write_text(LURKER)
    spawner.write_text(SPAWNER)
    for f in (lurker, spawner):
        os.chmod(f, 0o644)
    agent = CommandAgent("lurker", [python, str(spawner), str(lurker)], readonly=[lurker, spawner],
                         sandbox=sandbox)
    suite = load_suite(_suite(base, environment))
    settings = RunSettings(n=1, sandbox=sandbox, scanners=("bandit",), limits=LIMITS, test_workers="fresh")
    run_suite(suite, [agent], base / "run", settings)
    with RunStore.open_existing(base / "run", readonly=True) as store:
        (r,) = store.rollouts()
    assert r.status == "completed" and r.passes, r.meta.get("reason")
    assert not r.meta.get("forged_outcomes"), r.meta.get("reason")


def test_truncation_leaves_earlier_lines_in_place(test_path: HiddenTestPath, base: Path) -> None:
    # the old file channel lost the start line to ftruncate: the rollout became infra_error
    starter, ws, tests = _task(base, CHANNEL_ATTACKS["ftruncate"])
    run = test_path.run(ws, tests, expected=_expected(), limits=LIMITS, slot=SLOT, starter=starter)
    assert "did not start" not in (run.reason or "")


def _gatekeeper(base: Path, python: str) -> str:
    """An interpreter wrapper that refuses to start when the workspace holds BREAK_HARNESS."""
    script = base / "gatekeeper.sh"
    script.write_text(f"#!/bin/sh\n[ -e BREAK_HARNESS ] && exit 1\nexec {python} \"$@\"\n")
    os.chmod(script, 0o755)
    return str(script)


def _run_with_python(path: HiddenTestPath, base: Path, ws: Path, tests: Path, starter: Path,
                     python: str) -> Any:
    """The hidden tests run by ``python`` (a wrapper of the test's own, mounted read-only in a container)."""
    if isinstance(path, ContainerTestPath):
        return path.run(ws, tests, expected=_expected(), limits=LIMITS, slot=SLOT, starter=starter,
                        python=python, mounts=(Mount(Path(python)),) if python.startswith(str(base)) else ())
    return run_hidden_tests(ws, tests, expected=_expected(), backend=path.backend, limits=LIMITS,
                            slot=SLOT, python=python, starter=starter)


@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", *CONTAINER_TEST_PATHS])
def test_missing_start_line_caused_by_the_workspace_is_a_failure(base: Path, name: str) -> None:
    path = hidden_test_path_or_skip(name, SLOT)
    starter, ws, tests = _task(base, GOOD)
    (ws / "BREAK_HARNESS").write_text("")
    run = _run_with_python(path, base, ws, tests, starter, _gatekeeper(base, path.python))
    assert run.status == "completed"
    assert "starts on the starter workspace" in (run.reason or "")
    assert all(o.outcome == "failed" for o in run.outcomes)


@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", *CONTAINER_TEST_PATHS])
def test_a_harness_that_never_starts_is_still_infra(base: Path, name: str) -> None:
    path = hidden_test_path_or_skip(name, SLOT)
    starter, ws, tests = _task(base, GOOD)
    run = _run_with_python(path, base, ws, tests, starter, "/bin/false")
    assert run.status == "test_error"


# ------------------------------------------------------------------------------------------
# class 3: host-side code never follows the agent's links, never blocks on its files
# ------------------------------------------------------------------------------------------


def _finishes(fn: Any, timeout: float = 20.0) -> Any:
    out: list[Any] = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), "blocked on a file of the agent's"
    return out[0]


def test_tamper_scan_never_follows_links_or_opens_fifos(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    secret = tmp_path / "host.cfg"
    os.mkfifo(ws / "setup.cfg")
    os.mkfifo(tmp_path / "host.fifo")
    (ws / "tox.ini").symlink_to(tmp_path / "host.fifo")
    (ws / "pyproject.toml").symlink_to(secret)
    flags = []
    for content in ("[tool.pytest.ini_options]\n", "nothing\n"):  # one bit of a host file
        secret.write_text(content)
        flags.append(_finishes(lambda: find_tamper_files(ws)))
    assert flags[0] == flags[1]  # the result does not depend on the host file
    assert "setup.cfg" not in flags[0]


def test_tamper_scan_of_a_deep_tree(base: Path) -> None:
    # not under tmp_path: pytest's own clean-up of old temp dirs would hit the recursion limit
    ws = base / "ws"
    ws.mkdir()
    deep_chain(ws, 1200, "d")  # deeper than Python's recursion limit
    (ws / "conftest.py").write_text("")
    try:
        assert _finishes(lambda: find_tamper_files(ws)) == ("conftest.py",)
    finally:
        assert remove_tree(ws)  # pytest's own clean-up would hit the recursion limit


# ------------------------------------------------------------------------------------------
# class 4: bounded resources
# ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["bubblewrap", *CONTAINER_TEST_PATHS])
def test_private_tmp_is_bounded_and_counted_against_the_rollout(base: Path, name: str) -> None:
    """bubblewrap's /tmp tmpfs (``--size``), a container's (``--tmpfs /tmp:size=``); namespaces
    has the host's /tmp (guarantee 4)."""
    path = hidden_test_path_or_skip(name, SLOT)
    starter, ws, tests = _task(base, GOOD)
    (tests / "test_tmp.py").write_text(textwrap.dedent("""
        def test_small_tmp():
            with open("/tmp/small", "wb") as fh:
                fh.write(b"x" * (1 << 20))

        def test_big_tmp():
            with open("/tmp/big", "wb") as fh:
                for _ in range(64):
                    fh.write(b"x" * (1 << 20))
    """))
    limits = Limits(wall_s=30.0, cpu_s=30.0, tmp_bytes=8 << 20)
    run = path.run(ws, tests, expected=None, limits=limits, slot=SLOT, starter=starter)
    got = {o.name: o.outcome for o in run.outcomes}
    assert got["test_tmp.py::test_small_tmp"] == "passed"
    assert got["test_tmp.py::test_big_tmp"] == "failed"
    assert "No space left" in run.log


# ------------------------------------------------------------------------------------------
# the runner: a hostile rollout is one recorded failure, the run goes on
# ------------------------------------------------------------------------------------------


def _suite(root: Path, environment: str = "") -> Path:
    suite = write_adder_suite(root, "hostile", TESTS, prompt="Implement add.\n", timeout_s=30,
                              world_readable=True)
    toml = suite / "tasks" / "adder" / "task.toml"
    toml.write_text(toml.read_text() + environment)
    return suite


def _boxed(sandbox: str) -> str:
    """The ``[environment]`` of the suite's task for ``sandbox``: the test image on a container backend."""
    if sandbox not in CONTAINER_TEST_PATHS:
        backend_or_skip(sandbox)
        return ""
    container_backend_or_skip(sandbox)
    return f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\n'


@dataclass
class HostileAgent:
    """An in-process agent that writes the correct solution plus hostile files."""

    name: str = "hostile"
    kind: str = "python"
    simulated: bool = False
    secret: Path | None = None
    calls: list[int] = field(default_factory=list)

    def run(self, request: AgentRequest) -> AgentResult:
        ws = request.workspace
        (ws / "adder.py").write_text(GOOD)
        # a directory chain deeper than PATH_MAX and Python's recursion limit
        deep_chain(ws, 600, "dddddddddd", leaf=("deep.py", "import os\nos.system('rm -rf /')\n"))
        # a path that fits the workspace but not under the (long) run directory's artifacts
        deep_chain(ws, 120, "l" * 30, leaf=("x.py", "1\n"))
        os.mkfifo(ws / "data.fifo")
        os.mkfifo(ws / "setup.cfg")
        if self.secret is not None:
            (ws / "pyproject.toml").symlink_to(self.secret)
            (ws / "leak.py").symlink_to(self.secret)
        with open(os.path.join(os.fsencode(ws), b"bad\xffname.py"), "w") as fh:
            fh.write("x = 1\n")
        (ws / "new\nline.py").write_text("y = 2\n")
        many = ws / "many"
        many.mkdir()
        for i in range(300):
            (many / f"f{i}.py").write_text(f"v = {i}\n")
        (ws / "big.py").write_text("x = eval(input())\n" + "# pad\n" * 60_000)
        return AgentResult(status="completed", log="hostile\n" * 10)


def _settings(sandbox: str, n: int = 1) -> RunSettings:
    return RunSettings(n=n, sandbox=sandbox, scanners=("bandit",), limits=LIMITS)


@pytest.mark.parametrize("sandbox", ["bubblewrap", "namespaces", *CONTAINER_TEST_PATHS])
def test_a_hostile_workspace_is_one_recorded_rollout(base: Path, monkeypatch: pytest.MonkeyPatch,
                                                     sandbox: str) -> None:
    environment = _boxed(sandbox)
    monkeypatch.setattr(artifacts, "DEFAULT_BUDGET", ArtifactBudget(max_files=50, max_bytes=200_000))
    secret = base / "secret.txt"
    secret.write_text(SECRET)
    suite = load_suite(_suite(base, environment))
    out = base / ("o" * 200) / ("o" * 200) / "run"
    summary = _finishes(lambda: run_suite(suite, [HostileAgent(secret=secret)], out, _settings(sandbox)),
                        timeout=300)
    assert summary.executed == 1 and summary.infra_errors == 0
    with RunStore.open_existing(out, readonly=True) as store:
        (r,) = store.rollouts()
        adir = store.artifact_dir(r.task_id, r.agent, r.rollout)
    assert r.status == "completed", r.meta.get("reason")
    assert r.passes  # the code is right: hostile files do not change the verdict
    # the deep file was not examined: said, not silently clean
    assert any("not examined" in e.message and e.path.startswith("dddddddddd/") for e in r.scan_errors)
    # the big file's finding is kept although the file itself is over the artifact budget
    assert any(f.path == "big.py" and f.rule_id == "B307" for f in r.findings)
    assert "big.py" in r.meta["artifacts_omitted"]
    kept = [p for p in (adir / "files").rglob("*") if p.is_file()]
    assert 0 < len(kept) <= 50
    assert sum(p.stat().st_size for p in kept) <= 200_000
    assert "big.py" in (adir / "OMITTED.txt").read_text()
    too_long = "/".join(["l" * 30] * 120) + "/x.py"
    assert too_long in r.meta["artifacts_omitted"]
    assert "cannot be stored under the run directory" in (adir / "OMITTED.txt").read_text()
    # nothing of the host file was followed into the artifacts
    for p in adir.rglob("*"):
        if p.is_file() and not p.is_symlink():
            assert SECRET not in p.read_text(errors="replace"), p
    diff_lines = (adir / "diff.patch").read_text().splitlines()
    assert "line.py" not in diff_lines  # the newline name is quoted, not split
    # a re-scan says which changed files it cannot see
    stored = StoredArtifacts(adir)
    plan = plan_rebuild(r, stored, stored.kept_files().keys(), suite.task("adder").workspace_dir)
    assert any(e.path == "big.py" for e in plan.errors)
    # resuming finds nothing to do
    again = run_suite(suite, [HostileAgent(secret=secret)], out, _settings(sandbox))
    assert again.executed == 0


@pytest.mark.parametrize("sandbox", ["bubblewrap", "namespaces", *CONTAINER_TEST_PATHS])
def test_un_chownable_deep_tree_of_a_sandboxed_agent_is_not_infra(base: Path, sandbox: str) -> None:
    environment = _boxed(sandbox)
    script = base / "agent.py"
    script.write_text(textwrap.dedent("""\
        import os
        with open("adder.py", "w") as fh:
            fh.write("def add(a, b):\\n    return a + b\\n")
        for _ in range(600):  # 6600 bytes of path: past PATH_MAX
            os.mkdir("dddddddddd")
            os.chdir("dddddddddd")
        with open("deep.py", "w") as fh:
            fh.write("x = 1\\n")
    """))
    os.chmod(script, 0o644)
    python = "/usr/bin/python3" if environment else python_for(backend_or_skip(sandbox), SLOT)
    agent = CommandAgent("deep", [python, str(script)], sandbox=sandbox, readonly=(script,), timeout_s=60)
    suite = load_suite(_suite(base, environment))
    summary = run_suite(suite, [agent], base / "run", _settings(sandbox))
    with RunStore.open_existing(base / "run", readonly=True) as store:
        (r,) = store.rollouts()
    assert summary.infra_errors == 0
    assert r.status == "completed", (r.status, r.meta.get("reason"))
    assert r.passes


STAGES = {
    "workspace_diff": "diffing the workspace",
    "take_snapshot": "keeping the agent's files",
    "scan_changes": "scanning the workspace",
    "TestRequest": "running the hidden tests",  # the request of the tests' runner
}


@dataclass
class GoodAgent:
    name: str = "good"
    kind: str = "python"
    simulated: bool = False

    def run(self, request: AgentRequest) -> AgentResult:
        (request.workspace / "adder.py").write_text(GOOD)
        return AgentResult(status="completed")


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_an_exception_in_any_stage_fails_only_that_rollout(base: Path, monkeypatch: pytest.MonkeyPatch,
                                                           stage: str) -> None:
    backend_or_skip("bubblewrap")
    real = getattr(rollout, stage)
    calls = {"n": 0}

    def flaky(*args: Any, **kw: Any) -> Any:
        calls["n"] += 1
        if calls["n"] == 2:
            raise RecursionError("maximum recursion depth exceeded (planted)")
        return real(*args, **kw)

    monkeypatch.setattr(rollout, stage, flaky)
    suite = load_suite(_suite(base))
    summary = run_suite(suite, [GoodAgent()], base / "run", _settings("bubblewrap", n=3))
    with RunStore.open_existing(base / "run", readonly=True) as store:
        records = store.rollouts()
    assert summary.executed == 3 and summary.infra_errors == 0
    statuses = sorted(r.status for r in records)
    assert statuses == ["completed", "completed", "test_error"]
    (bad,) = [r for r in records if r.status == "test_error"]
    assert f"harness error while {STAGES[stage]}: RecursionError" in bad.meta["reason"]
    assert run_suite(suite, [GoodAgent()], base / "run", _settings("bubblewrap", n=3)).executed == 0


def test_a_record_the_store_cannot_take_is_kept_as_a_failure(base: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    backend_or_skip("bubblewrap")
    import reliabench.store as store_mod

    real = store_mod._dumps

    def picky(obj: Any) -> str:
        if "changed_files" in obj.get("meta", {}):
            raise RecursionError("planted")
        return real(obj)

    monkeypatch.setattr(store_mod, "_dumps", picky)
    suite = load_suite(_suite(base))
    run_suite(suite, [GoodAgent()], base / "run", _settings("bubblewrap"))
    with RunStore.open_existing(base / "run", readonly=True) as store:
        (r,) = store.rollouts()
    assert r.status == "test_error"
    # the store refuses the record it could not encode (RecordError, naming the cause); the
    # runner keeps the rollout as the agent's failure with that reason
    assert "storing the rollout's record: RecordError" in r.meta["reason"]
    assert "cannot be written as JSON: planted" in r.meta["reason"]


def test_a_failure_before_the_agent_ran_is_infra(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    backend_or_skip("bubblewrap")

    real = rollout.materialize

    def broken(dest: Path, layers: Any) -> None:
        if dest.name == "workspace":  # a rollout's, not the collection of the expected tests
            raise OSError(5, "Input/output error (planted)")
        real(dest, layers)

    suite = load_suite(_suite(base))
    monkeypatch.setattr(rollout, "materialize", broken)
    monkeypatch.setenv("RELIABENCH_BACKOFF_SCALE", "0")
    summary = run_suite(suite, [GoodAgent()], base / "run", _settings("bubblewrap"))
    with RunStore.open_existing(base / "run", readonly=True) as store:
        (r,) = store.rollouts()
    assert summary.infra_errors == 1
    assert r.status == "infra_error" and r.meta["infra_attempts"] == 3
    assert "preparing the workspace" in r.meta["reason"]


# ------------------------------------------------------------------------------------------
# class 6: a full disk under --out, a read-only or unreadable run
# ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _tmpfs(path: Path, size: str) -> Iterator[Path]:
    path.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(path)],
                          capture_output=True, check=False)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.decode().strip()}")
    try:
        yield path
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


@dataclass
class BulkyAgent(GoodAgent):
    """Writes a correct solution and a 3 MiB source file (kept as an artifact)."""

    name: str = "bulky"

    def run(self, request: AgentRequest) -> AgentResult:
        (request.workspace / "data.py").write_text("# x\n" * (3 << 18))
        return super().run(request)


def test_a_full_disk_under_out_stops_the_run_resumably(base: Path) -> None:
    backend_or_skip("bubblewrap")
    suite = load_suite(_suite(base))
    with _tmpfs(base / "disk", "2m") as disk:
        out = disk / "run"
        with pytest.raises(OutputError, match="No space left on device"):
            run_suite(suite, [BulkyAgent()], out, _settings("bubblewrap", n=2))
        with RunStore.open_existing(out, readonly=True) as store:
            assert store.rollouts() == []  # nothing half-recorded
        subprocess.run(["mount", "-o", "remount,size=64m", str(disk)], check=True)
        summary = run_suite(suite, [BulkyAgent()], out, _settings("bubblewrap", n=2))
        assert summary.executed == 2
        with RunStore.open_existing(out, readonly=True) as store:
            assert sorted(r.rollout for r in store.rollouts()) == [0, 1]


def _small_run(root: Path) -> Path:
    out = root / "run"
    store, _ = RunStore.create_or_resume(out, config={"n": 2}, config_hash="h", suite={"name": "s"},
                                         packages={}, isolation="none")
    with store:
        for i, ok in enumerate((True, False)):
            store.add(Rollout(task_id="t", agent="a", rollout=i, verdict=ok))
    return out


def _cli(*args: str, user: int | None = None, wrap: list[str] | None = None) -> subprocess.CompletedProcess[str]:
    cmd = [*(wrap or []), sys.executable, "-m", "reliabench", *args]
    if user is not None:
        cmd = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups", *cmd]
    return subprocess.run(cmd, capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "HOME": "/tmp"})


def test_a_run_on_a_read_only_mount_can_be_scored(base: Path) -> None:
    if shutil.which("bwrap") is None or os.geteuid() != 0:
        pytest.skip("needs bwrap as root for a read-only bind")
    out = _small_run(base)
    before = sorted(p.name for p in out.iterdir())
    wrap = ["bwrap", "--dev-bind", "/", "/", "--ro-bind", str(out), str(out), "--"]
    for args in (["score", str(out), "--resamples", "200"], ["export", str(out)]):
        proc = _cli(*args, wrap=wrap)
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in out.iterdir()) == before  # reading wrote nothing


def _another_user_or_skip(uid: int) -> None:
    """Skip unless ``uid`` can run reliabench from where it is installed (not from a 0700 clone)."""
    if os.geteuid() != 0 or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv to act as another user")
    proc = subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", sys.executable,
                           "-c", "import reliabench"], capture_output=True, text=True, check=False, timeout=120,
                          cwd="/")
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"uid {uid} cannot run reliabench from where it is installed ({sys.executable}: {last}); "
                    "a clone in a 0700 folder is private to its owner")


def test_a_read_only_copy_can_be_scored_by_another_user(base: Path) -> None:
    _another_user_or_skip(61990)
    out = _small_run(base)
    for p in [out, *out.rglob("*")]:
        os.chmod(p, 0o555 if p.is_dir() else 0o444)
    proc = _cli("score", str(out), "--resamples", "200", user=61990)
    assert proc.returncode == 0, proc.stderr


def test_an_unreadable_run_directory_is_one_line_exit_3(base: Path) -> None:
    """Permissions, like a full disk, are the machine's (OutputError, exit 3), not a usage error."""
    _another_user_or_skip(61990)
    out = _small_run(base)
    os.chmod(out, 0o700)
    os.chmod(out / RunStore.FILENAME, 0o600)
    for args in (["score", str(out)], ["export", str(out)]):
        proc = _cli(*args, user=61990)
        assert proc.returncode == 3, proc.stderr
        assert "Traceback" not in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr
        assert str(out) in proc.stderr


# ------------------------------------------------------------------------------------------
# class 6: bad input is one line, exit 2
# ------------------------------------------------------------------------------------------

BAD_RECORDS = {
    "deep-array": '{"task_id": "t", "agent": "a", "rollout": 0, "passed": true, "meta": {"x": '
                  + "[" * 100_000 + "]" * 100_000 + "}}",
    "deep-meta": '{"task_id": "t", "agent": "a", "rollout": 0, "passed": true, "meta": {"x": '
                 + "[" * 500 + "]" * 500 + "}}",
    "huge-int": '{"task_id": "t", "agent": "a", "rollout": ' + "9" * 5000 + ', "passed": true}',
    "rollout-past-64-bits": '{"task_id": "t", "agent": "a", "rollout": 18446744073709551616, "passed": true}',
    "tokens-past-64-bits": '{"task_id": "t", "agent": "a", "rollout": 0, "passed": true, '
                           '"cost": {"tokens": 18446744073709551616}}',
    "tokens-float-huge": '{"task_id": "t", "agent": "a", "rollout": 0, "passed": true, '
                         '"cost": {"tokens": 1e300}}',
    "usd-huge-int": '{"task_id": "t", "agent": "a", "rollout": 0, "passed": true, '
                    '"cost": {"usd": ' + "9" * 400 + "}}",
    "line-past-64-bits": '{"task_id": "t", "agent": "a", "rollout": 0, "passed": true, "findings": '
                         '[{"tool": "x", "rule_id": "y", "severity": "low", "line": 99999999999999999999}]}',
}


@pytest.mark.parametrize("case", sorted(BAD_RECORDS))
def test_bad_score_input_is_one_line_exit_2(tmp_path: Path, case: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "r.jsonl"
    path.write_text(BAD_RECORDS[case] + "\n")
    assert main(["score", str(path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert str(path) in err and "Traceback" not in err


def test_bad_replay_file_is_one_line(tmp_path: Path) -> None:
    from reliabench.agents.replay import read_replay_file
    from reliabench.errors import ConfigError

    for line in ("[" * 100_000 + "]" * 100_000, '{"task_id": "t", "rollout": ' + "9" * 5000 + "}",
                 '{"task_id": "t", "rollout": 0, "files": {}, "tokens": 18446744073709551616}'):
        path = tmp_path / "gens.jsonl"
        path.write_text(line + "\n")
        with pytest.raises(ConfigError) as info:
            read_replay_file(path, "a")
        assert "\n" not in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize("value", ["inf", "nan", "-inf", "1e308", "1e7", "0", "-1", "18446744073709551615"])
def test_timeout_out_of_range_is_rejected_by_the_suite_loader(tmp_path: Path, value: str) -> None:
    suite = _suite(tmp_path)
    (suite / "tasks" / "adder" / "task.toml").write_text(
        f'id = "adder"\nlanguage = "python"\ntimeout_s = {value}\n')
    with pytest.raises(SuiteError, match="timeout_s"):
        load_suite(suite)


@pytest.mark.parametrize("value", [float("inf"), float("nan"), 1e308, 0.0, -1.0])
def test_test_timeout_out_of_range_is_rejected(value: float) -> None:
    with pytest.raises(InvalidArgumentError, match="test_timeout_s"):
        RunSettings(n=1, test_timeout_s=value)
