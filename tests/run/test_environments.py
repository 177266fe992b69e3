"""Tasks with an [environment] end to end, on a fake container backend (tests/fake_container.py).

The real podman and docker backends have their own tests; here the runner's side of the
contract is checked against a plugin that behaves like one: backend choice and preflight
(refuse, prepare, sweep; one line, exit 2, nothing written), the agent phase and the test
phase in the same image, ``tests = "fresh"`` against ``"same"``, the usage file and the
outcome socket through the channel folder, records that carry the image and its digest, and
environments that cannot start as ``infra_error``. Attacks on the rollout's environments
from an agent are at the end.
"""

from __future__ import annotations

import json
import os
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_container import NAME, FakeBox, digest_of, fakebox
from sandbox_helpers import backend_or_skip

from reliabench.agents.base import AgentRequest, AgentResult
from reliabench.agents.config import load_agents
from reliabench.cli import main
from reliabench.errors import PreflightError, SandboxError
from reliabench.records import Rollout
from reliabench.run.environments import RolloutEnvironments, TaskEnvironment
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox import Limits, Mount
from reliabench.sandbox import choice as choice_mod
from reliabench.store import RunStore
from reliabench.tasks.suite import Suite, load_suite

IMAGE = "fake/python:1"
GOOD = "def add(a, b):\n    return a + b\n"
TESTS = textwrap.dedent("""
    import os
    from adder import add

    def test_add():
        assert add(1, 2) == 3

    def test_workdir():
        assert os.getcwd() == os.environ.get("EXPECTED_CWD", os.getcwd())

    def test_machine_the_agent_set_up():
        assert os.path.exists("/machine/installed.txt")
""")
NAMES = ["test_adder.py::test_add", "test_adder.py::test_workdir", "test_adder.py::test_machine_the_agent_set_up"]
AGENT = textwrap.dedent("""
    import json, os, sys
    workspace = sys.argv[1]
    assert os.getcwd() == workspace == os.environ["RELIABENCH_WORKSPACE"], (os.getcwd(), workspace)
    open(os.path.join(workspace, "adder.py"), "w").write({good!r})
    if os.path.isdir("/machine"):
        open("/machine/installed.txt", "w").write("set up by the agent")
    json.dump({{"tokens_in": 11, "tokens_out": 2, "usd": 0.5}}, open(os.environ["RELIABENCH_USAGE_FILE"], "w"))
    print("cwd", os.getcwd())
""").format(good=GOOD)


def _suite(root: Path, envs: dict[str, str]) -> Path:
    """A suite with one task per entry: task id -> its [environment] table (empty: the host)."""
    suite = root / "suite"
    (suite / "tasks").mkdir(parents=True)
    (suite / "suite.toml").write_text('name = "boxes"\nversion = "1"\n')
    for tid, table in envs.items():
        task = suite / "tasks" / tid
        for sub in ("workspace", "tests"):
            (task / sub).mkdir(parents=True)
        (task / "task.toml").write_text(f'id = "{tid}"\nlanguage = "python"\ntimeout_s = 60\n{table}')
        (task / "prompt.md").write_text("Implement add.\n")
        (task / "workspace" / "adder.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
        (task / "tests" / "test_adder.py").write_text(TESTS)
    for p in [root, *root.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return suite


def _agents(root: Path) -> Path:
    (root / "agent.py").write_text(AGENT)
    path = root / "agents.toml"
    path.write_text('[[agents]]\nname = "boxer"\nkind = "command"\n'
                    'command = ["/usr/bin/python3", "{agents_dir}/agent.py", "{workspace}"]\n'
                    'readonly = ["{agents_dir}/agent.py"]\n')
    os.chmod(root / "agent.py", 0o644)
    return path


@pytest.fixture
def box(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[FakeBox]]:
    backend_or_skip("bubblewrap")  # the fake's environments are bubblewrap ones
    monkeypatch.setattr(choice_mod, "CONTAINER_RUNTIMES", (NAME,))
    monkeypatch.setenv("RELIABENCH_BACKOFF_SCALE", "0")
    with fakebox(IMAGE) as cls:
        yield cls


def _run(base: Path, suite: Path, **kw: Any) -> tuple[Suite, list[Rollout]]:
    loaded = load_suite(suite)
    settings = RunSettings(**{"n": 2, "workers": 2, "test_workers": "fresh", **kw})
    run_suite(loaded, load_agents(_agents(base)), base / "run", settings, agents_file=base / "agents.toml")
    with RunStore.open_existing(base / "run", readonly=True) as store:
        return loaded, store.rollouts()


def _why(base: Path, r: Rollout) -> str:
    """The rollout's reason and its agent's log, for an assertion's message."""
    from reliabench.run.artifacts import open_artifacts

    return f"{r.meta.get('reason')}\n{open_artifacts(base / 'run', *r.key).agent_log()}"


def _outcomes(r: Rollout) -> dict[str, str]:
    return {t.name: t.outcome for t in r.tests or ()}


def test_auto_runs_image_tasks_in_the_container_and_host_tasks_on_the_host(base: Path, box: type[FakeBox]) -> None:
    suite = _suite(base, {"boxed": f'[environment]\nimage = "{IMAGE}"\n', "hosted": ""})
    _, records = _run(base, suite)
    boxed = [r for r in records if r.task_id == "boxed"]
    hosted = [r for r in records if r.task_id == "hosted"]
    assert len(boxed) == len(hosted) == 2
    for r in boxed:
        assert r.status == "completed" and r.isolation == NAME, _why(base, r)
        assert (r.meta["image"], r.meta["image_digest"]) == (IMAGE, digest_of(IMAGE))
        assert (r.meta["test_path"], r.meta["test_runner"]) == ("fresh", "pytest")
        outcome = _outcomes(r)
        assert outcome[NAMES[0]] == outcome[NAMES[1]] == "passed"
        # tests = "fresh": a new environment from the image, not the machine the agent set up
        assert outcome[NAMES[2]] == "failed"
        assert r.cost is not None and (r.cost.tokens_in, r.cost.usd) == (11, 0.5)  # usage file, via the channel
    for r in hosted:
        assert r.isolation == "bubblewrap" and "image" not in r.meta and "image_digest" not in r.meta
        assert r.cost is not None and r.cost.tokens_in == 11
    calls = [c for c, _ in box.calls]
    assert calls.count("sweep") == 1 and calls.count("prepare") == 1  # once per run, once per spec
    starts = [d for c, d in box.calls if c == "start"]
    # collection on a starter copy, then per rollout: the agent's environment, the tests'
    assert len(starts) == 1 + 2 * 2
    agent_starts = [s for s in starts if s[1] == "none" and any("prompt.md" in m for m in s[2])]
    assert len(agent_starts) == 2
    for _, network, mounts in starts:
        assert network == "none"
        assert not any("/tasks/boxed/tests" in m for m in mounts)  # only ever a staged copy


def test_the_workspace_is_at_the_containers_workdir_for_the_agent_and_the_tests(base: Path,
                                                                                box: type[FakeBox]) -> None:
    suite = _suite(base, {"boxed": f'[environment]\nimage = "{IMAGE}"\nworkdir = "/testbed"\n'})
    (suite / "tasks" / "boxed" / "tests" / "test_adder.py").write_text(
        TESTS.replace('os.environ.get("EXPECTED_CWD", os.getcwd())', '"/testbed"'))
    _, records = _run(base, suite, n=1)
    (r,) = records
    assert r.status == "completed" and _outcomes(r)[NAMES[1]] == "passed", r.meta.get("reason")
    assert r.passes is False  # the machine test: fresh handover


def test_tests_same_run_in_the_agents_own_environment(base: Path, box: type[FakeBox]) -> None:
    suite = _suite(base, {"same": f'[environment]\nimage = "{IMAGE}"\ntests = "same"\n'})
    _, records = _run(base, suite)
    for r in records:
        assert r.status == "completed" and r.passes, r.meta.get("reason")  # the machine test sees /machine
    seq = [c for c, _ in box.calls]
    # per rollout: one start (the agent's environment, also the tests'); plus the collection's
    assert seq.count("start") == 1 + 2
    # the agent's processes were stopped before the staged tests went in and pytest ran
    first_copy = seq.index("copy_in")
    assert "stop_processes" in seq[:first_copy]
    copied = [d for c, d in box.calls if c == "copy_in"]
    assert all("rb-hidden-" in target for target in copied)


def test_an_explicit_container_backend_refuses_host_tasks_in_one_line(base: Path, box: type[FakeBox],
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    suite = _suite(base, {"boxed": f'[environment]\nimage = "{IMAGE}"\n', "hosted": ""})
    _agents(base)
    code = main(["run", str(suite), "--agents", str(base / "agents.toml"), "--out", str(base / "run"),
                 "-n", "1", "--sandbox", NAME])
    err = capsys.readouterr().err
    errors = [line for line in err.splitlines() if "error" in line]
    assert code == 2 and "Traceback" not in err and len(errors) == 1, err
    assert errors[0].startswith("reliabench: error: task hosted: ") and "runs images only" in errors[0]
    assert not (base / "run").exists()  # nothing written


def test_a_host_backend_refuses_image_tasks_with_the_fix(base: Path, box: type[FakeBox]) -> None:
    suite = _suite(base, {"boxed": f'[environment]\nimage = "{IMAGE}"\n'})
    with pytest.raises(PreflightError, match=r"task boxed: .*task.toml:4: runs in a container "
                                             rf"\({IMAGE}\); the bubblewrap backend runs on the host only: "
                                             "use --sandbox auto"):
        _run(base, suite, sandbox="bubblewrap")
    assert not (base / "run").exists()


def test_a_missing_image_or_runtime_refuses_the_run_before_anything_is_written(
        base: Path, box: type[FakeBox], monkeypatch: pytest.MonkeyPatch) -> None:
    suite = _suite(base, {"boxed": '[environment]\nimage = "fake/missing:9"\n'})
    with pytest.raises(PreflightError, match="task boxed: image fake/missing:9 is not in fakebox: load it first"):
        _run(base, suite)
    monkeypatch.setattr(choice_mod, "CONTAINER_RUNTIMES", ("no-such-runtime",))
    with pytest.raises(PreflightError, match=r"runs in a container \(fake/missing:9\) and no container runtime "
                                             r"works here \(no-such-runtime: not installed\): install podman"):
        _run(base, suite)
    assert not (base / "run").exists()


def test_a_container_that_cannot_start_is_the_harness_failure(base: Path, box: type[FakeBox]) -> None:
    suite = _suite(base, {"boxed": f'[environment]\nimage = "{IMAGE}"\n', "hosted": ""})
    FakeBox.fail_start = "the container runtime is gone"  # after the collection's environment
    FakeBox.fail_after = 1
    _run(base, suite, workers=1)  # its host rollouts pass: the agent is not stopped
    with RunStore.open_existing(base / "run", readonly=True) as store:
        boxed = [r for r in store.rollouts() if r.task_id == "boxed"]
    assert len(boxed) == 2 and all(r.status == "infra_error" for r in boxed)  # never the agent's failure
    for r in boxed:  # the agent's environment could not start: the agent said infra_error, retried
        assert r.meta["infra_reason"] == "sandbox" and r.meta["infra_attempts"] == 3, r.meta
        assert "the container runtime is gone" in _why(base, r)
    FakeBox.fail_start = None  # the runtime is back: a resume runs what was lost
    _, records = _run(base, suite)
    assert sorted((r.task_id, r.status) for r in records) == [
        ("boxed", "completed"), ("boxed", "completed"), ("hosted", "completed"), ("hosted", "completed")]


# --------------------------------------------------------------------------------------------
# attacks on the rollout's environments from an agent
# --------------------------------------------------------------------------------------------


@pytest.fixture
def envs(base: Path, box: type[FakeBox]) -> Iterator[RolloutEnvironments]:
    suite = load_suite(_suite(base, {"boxed": f'[environment]\nimage = "{IMAGE}"\ntests = "same"\n'}))
    task = suite.task("boxed")
    backend = FakeBox()
    ws = base / "ws"
    ws.mkdir()
    os.chmod(ws, 0o755)
    rollout = RolloutEnvironments(task, TaskEnvironment(backend, backend.prepare(task.environment)), ws,
                                  slot=7, limits=Limits())
    yield rollout
    rollout.close()


def test_an_agent_cannot_mount_the_hidden_tests_or_anything_writable(envs: RolloutEnvironments) -> None:
    task = envs.task
    for mounts, message in (([Mount(task.tests_dir)], "must not show the task's folder"),
                            ([Mount(task.root.parent)], "must not show the task's folder"),
                            ([Mount(Path("/"))], "must not show the task's folder"),
                            ([Mount(task.workspace_dir, writable=True)], "read-only")):
        with pytest.raises(SandboxError, match=message):
            envs.agent.open(mounts=mounts)
    with pytest.raises(SandboxError, match="cannot run there"):
        envs.agent.open(sandbox="bubblewrap")  # a container task runs in its image
    assert not [c for c, _ in FakeBox.calls if c == "start"]  # nothing was started


def test_an_agent_gets_one_environment_and_nothing_after_close(envs: RolloutEnvironments) -> None:
    first = envs.agent.open()
    assert envs.agent.open() is first
    with pytest.raises(SandboxError, match="already open"):
        envs.agent.open(network="host")
    envs.close()
    with pytest.raises(SandboxError, match="closed"):
        envs.agent.open()
    assert first.closed  # type: ignore[attr-defined]


def test_what_the_agent_leaves_in_the_channel_folder_cannot_become_an_outcome(base: Path,
                                                                              box: type[FakeBox]) -> None:
    """tests = "same": the channel folder the agent wrote in is the tests'; the outcome socket is fresh."""
    suite = _suite(base, {"same": f'[environment]\nimage = "{IMAGE}"\ntests = "same"\n'})
    planted = textwrap.dedent("""
        import os, socket
        chan = os.path.dirname(os.environ["RELIABENCH_USAGE_FILE"])
        for i in range(50):  # decoy sockets and links under plausible names
            s = socket.socket(socket.AF_UNIX); s.bind(os.path.join(chan, f"outcome-{i:016x}.sock")); s.listen(1)
            os.symlink("/etc/passwd", os.path.join(chan, f"link-{i}"))
        os.mkfifo(os.path.join(chan, "fifo"))
    """)
    (base / "agent.py").write_text(AGENT + planted)
    loaded = load_suite(suite)
    settings = RunSettings(n=1, workers=1, test_workers="fresh")
    agents = load_agents(base / "agents.toml") if (base / "agents.toml").exists() else None
    if agents is None:
        path = base / "agents.toml"
        path.write_text('[[agents]]\nname = "boxer"\nkind = "command"\n'
                        'command = ["/usr/bin/python3", "{agents_dir}/agent.py", "{workspace}"]\n'
                        'readonly = ["{agents_dir}/agent.py"]\n')
        agents = load_agents(path)
    run_suite(loaded, agents, base / "run", settings)
    with RunStore.open_existing(base / "run", readonly=True) as store:
        (r,) = store.rollouts()
    assert r.status == "completed" and r.passes, r.meta.get("reason")
    assert not r.meta.get("forged_outcomes")


class _Prober:
    """An in-process agent (a plugin) that uses the opener to look for the hidden tests."""

    name = "prober"
    kind = "python"
    simulated = False

    def run(self, request: AgentRequest) -> AgentResult:
        assert request.environment is not None
        env = request.environment.open()
        found = env.exec(["sh", "-c", "find /tmp /workspace /machine -name test_adder.py 2>/dev/null | wc -l"])
        (request.workspace / "adder.py").write_text(GOOD)
        return AgentResult(status="completed", log=json.dumps({"found": found.stdout.strip()}))


def test_the_agents_environment_never_shows_the_hidden_tests(base: Path, box: type[FakeBox]) -> None:
    suite = load_suite(_suite(base, {"boxed": f'[environment]\nimage = "{IMAGE}"\n'}))
    run_suite(suite, [_Prober()], base / "run", RunSettings(n=1, workers=1, test_workers="fresh"))
    with RunStore.open_existing(base / "run", readonly=True) as store:
        (r,) = store.rollouts()
        log = store.root.joinpath("artifacts")  # the agent's log is kept with the rollout
    assert r.status == "completed"
    agent_logs = [p.read_text() for p in log.rglob("agent.log")]
    assert agent_logs and json.loads(agent_logs[0])["found"] == "0"
