"""Container runs killed, refused or losing their runtime: nothing lost, duplicated or left behind.

Runs of ``reliabench run`` (a subprocess where the process itself must die or its leftovers be
swept by the next one) on image tasks, on the real podman and docker backends:

* ``kill -9`` of the run mid-rollout, then the same command again: the resume records every
  rollout once, keeps what was recorded, and its sweep removes the containers (and their
  channel and private folders) of the killed run -- for ``tests = "fresh"`` and ``"same"``;
* faults before the run: a missing image, a Dockerfile that fails to build (or whose base image
  is missing), a daemon that does not answer, no runtime at all -- refused before anything is
  written (exit 2, one line with the fix);
* faults during the run: a container that cannot start (a runtime that refuses it), a
  container killed under a rollout, a Docker daemon that dies: ``infra_error`` for the
  rollouts it hit (or a retry), never the agent's failure, and the resume picks them up.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

import pytest
from container_helpers import RUNTIMES, SocketProxy, container_backend_or_skip, container_exists
from suite_helpers import write_adder_suite

from reliabench.agents.config import load_agents
from reliabench.cli import main
from reliabench.records import Rollout
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE, LABEL_OWNER, ContainerBackend, owner_token
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

TESTS = textwrap.dedent("""
    import os
    from adder import add

    def test_small():
        assert add(1, 2) == 3

    def test_zero():
        assert add(0, 0) == 0
""")
MACHINE_TEST = textwrap.dedent("""

    def test_the_machine_the_agent_set_up():
        assert os.path.exists("/tmp/set-up-by-the-agent")
""")
AGENT = textwrap.dedent("""
    import os, sys, time
    rollout = int(os.environ["RELIABENCH_ROLLOUT"])
    open("/tmp/set-up-by-the-agent", "w").write("yes")
    open("rollout-of-the-agent", "w").write(str(rollout))  # which rollout it is, for the host to read
    time.sleep(float(os.environ.get("AGENT_SLEEP", "2")))
    hold = os.path.join(os.path.dirname(sys.argv[0]), "holds", f"{os.environ['RELIABENCH_TASK_ID']}-{rollout}")
    deadline = time.monotonic() + 120
    while os.path.exists(hold) and time.monotonic() < deadline:  # held by the test until it kills the run
        time.sleep(0.05)
    wrong = " + (a == 0)" if rollout % 2 else ""
    open("adder.py", "w").write(f"def add(a, b):\\n    return a + b{wrong}\\n")
""")
"""A command agent in the container: right on even rollouts, wrong on odd ones, after a pause; held while
the file ``holds/TASK-ROLLOUT`` next to it exists (a read-only mount: the host's changes are seen). It
writes its rollout's number to ``rollout-of-the-agent`` in its workspace first."""
N = 2
AGENT_NAME = "boxer"
HANDOVERS = ("fresh", "same")


def _suite(base: Path, environment: str | None = None) -> Path:
    """Tasks ``fresh`` and ``same`` (their handover), in the test image; ``environment``: one task with it."""
    if environment is not None:
        suite = write_adder_suite(base / "suite", "faults", TESTS, timeout_s=60, world_readable=True)
        tasks = {"adder": environment}
    else:
        suite = write_adder_suite(base / "suite", "faults", TESTS, task_ids=HANDOVERS, timeout_s=60,
                                  world_readable=True)
        tasks = {h: f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\ntests = "{h}"\n' for h in HANDOVERS}
    for task, table in tasks.items():
        folder = suite / "tasks" / task
        (folder / "task.toml").write_text((folder / "task.toml").read_text() + table)
        (folder / "prompt.md").write_text(f"Task {task}: implement add(a, b) in adder.py.\n")
        if task == "same":
            (folder / "tests" / "test_adder.py").write_text(TESTS + MACHINE_TEST)
    for f in suite.rglob("*"):
        os.chmod(f, 0o755 if f.is_dir() else 0o644)
    return suite


def _agents(base: Path, sleep: float = 1.0) -> Path:
    (base / "agent.py").write_text(AGENT)
    os.chmod(base / "agent.py", 0o644)
    (base / "holds").mkdir(exist_ok=True)
    os.chmod(base / "holds", 0o755)
    (base / "agents.toml").write_text(
        f'[[agents]]\nname = "{AGENT_NAME}"\nkind = "command"\n'
        'command = ["/usr/bin/python3", "{agents_dir}/agent.py"]\n'
        'readonly = ["{agents_dir}/agent.py", "{agents_dir}/holds"]\n'
        f'env = {{ AGENT_SLEEP = "{sleep}" }}\n')
    return base / "agents.toml"


def _run_args(suite: Path, agents: Path, out: Path, runtime: str, n: int = N) -> list[str]:
    """``reliabench run`` of one agent on ``suite``, one worker, no endpoint probe."""
    return ["run", str(suite), "--agents", str(agents), "-n", str(n), "--out", str(out), "--sandbox", runtime,
            "--workers", "1", "--no-preflight"]


def _start(args: list[str], log: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[bytes]:
    with open(log, "ab") as fh:
        return subprocess.Popen([sys.executable, "-m", "reliabench", *args], stdout=fh, stderr=fh,
                                env={**os.environ, "RELIABENCH_BACKOFF_SCALE": "0", **(env or {})})


def _finish(args: list[str], log: Path, env: Mapping[str, str] | None = None, timeout: float = 300) -> int:
    proc = _start(args, log, env)
    try:
        return proc.wait(timeout=timeout)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def _recorded(out: Path) -> dict[tuple[str, str, int], str]:
    """The store's rows as they are on disk (key -> record JSON), read while a run may write."""
    if not (out / RunStore.FILENAME).exists():
        return {}
    try:
        with sqlite3.connect(f"file:{out / RunStore.FILENAME}?mode=ro", uri=True, timeout=5) as conn:
            return {(t, a, int(i)): j for t, a, i, j in
                    conn.execute("SELECT task_id, agent, rollout, record_json FROM rollouts")}
    except sqlite3.OperationalError:  # the store is being created
        return {}


def _rows(out: Path) -> int:
    with sqlite3.connect(f"file:{out / RunStore.FILENAME}?mode=ro", uri=True) as conn:
        return int(conn.execute("SELECT count(*) FROM rollouts").fetchone()[0])


def _records(out: Path) -> list[Rollout]:
    with RunStore.open_existing(out, readonly=True) as store:
        return sorted(store.rollouts(), key=lambda r: r.key)


def _owned(backend: ContainerBackend, token: str) -> list[str]:
    """Ids of the containers (running or not) that the reliabench process ``token`` made."""
    listed = backend._call(["ps", "-a", "-q", "--no-trunc", "--filter", f"label={LABEL_OWNER}={token}"])
    assert listed.returncode == 0, listed.stderr
    return listed.stdout.split()


def _labels(backend: ContainerBackend, cid: str) -> dict[str, str]:
    result = backend._call(["inspect", "--format", "{{json .Config.Labels}}", cid])
    return json.loads(result.stdout) if result.returncode == 0 else {}


def _agent_of_task(backend: ContainerBackend, cid: str) -> str | None:
    """The task whose agent runs in the container (read from its mounted prompt), None for hidden tests."""
    result = backend._call(["inspect", "--format", "{{range .Mounts}}{{.Source}} {{.Destination}}\n{{end}}", cid])
    for line in result.stdout.splitlines():
        source, _, destination = line.partition(" ")
        if destination.endswith("/prompt.md") and os.path.isfile(source):
            return Path(source).read_text().split(":")[0].removeprefix("Task ")
    return None


def _rollout_of_agent(backend: ContainerBackend, cid: str) -> int | None:
    """The rollout whose agent runs in the container (it writes it to its workspace), None before it has."""
    result = backend._call(["inspect", "--format", "{{range .Mounts}}{{.Source}}\n{{end}}", cid])
    for source in result.stdout.splitlines():
        with contextlib.suppress(OSError, ValueError):
            return int((Path(source) / "rollout-of-the-agent").read_text())
    return None


def _wait_for(what: str, cond: Callable[[], bool], proc: subprocess.Popen[bytes] | None, log: Path,
              timeout: float = 240) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        if proc is not None and proc.poll() is not None:
            pytest.fail(f"the run ended (status {proc.returncode}) before {what}: {log.read_text()[-2000:]}")
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout:g} s: {log.read_text()[-2000:]}")
        time.sleep(0.1)


def _assert_complete(out: Path, tasks: tuple[str, ...] = HANDOVERS, n: int = N) -> list[Rollout]:
    """Every rollout recorded once, completed, with the verdict its code deserves (right on even rollouts)."""
    records = _records(out)
    assert _rows(out) == len(tasks) * n
    assert [r.key for r in records] == [(t, AGENT_NAME, i) for t in sorted(tasks) for i in range(n)]
    assert [(r.status, r.passes) for r in records] == [("completed", r.rollout % 2 == 0) for r in records], \
        [(r.status, r.meta.get("reason")) for r in records]
    return records


# --------------------------------------------------------------------------------------------
# kill -9 mid-run, then resume
# --------------------------------------------------------------------------------------------


Place = tuple[str, int]
"""A rollout of the one agent: (task, rollout)."""


@dataclass
class Killed:
    """What a ``kill -9``'d run left: its owner token, its containers, their channel folders, the folders
    named after it (its private folder, channel folders); the rollout it let finish (if it was told to)
    and the one whose agent it was killed in."""

    token: str
    records: dict[tuple[str, str, int], str]
    containers: list[str]
    channels: list[Path]
    private: list[Path]
    let_finish: Place | None
    killed_in: Place

    def gone(self, backend: ContainerBackend) -> None:
        """Assert that nothing of it is left (on the runtime and on the host)."""
        assert _owned(backend, self.token) == []
        assert not any(container_exists(backend, c) for c in self.containers)
        assert not any(c.exists() for c in self.channels), self.channels
        assert not any(p.exists() for p in self.private), self.private


def _kill_during_agent(args: list[str], log: Path, backend: ContainerBackend, out: Path, holds: set[Place],
                       after: int, let_first_finish: bool = False) -> Killed:
    """Run ``args`` and ``kill -9`` it while a held agent runs, once ``after`` rollouts are recorded.

    The agents of the rollouts ``holds`` wait until the kill (their hold files are removed after it), so
    what is recorded when it lands does not depend on how fast the machine is. ``let_first_finish``: the
    first held agent to start (whichever rollout the run started first: rollouts wait for the agent place
    at once) is let go, and the kill lands in another held one.
    """
    hold_files = {h: out.parent / "holds" / f"{h[0]}-{h[1]}" for h in holds}
    for hold in hold_files.values():
        hold.touch()
        os.chmod(hold, 0o644)
    proc = _start(args, log)
    let_finish: list[Place] = []
    held: list[Place] = []
    try:
        _wait_for("a pid", lambda: os.path.exists(f"/proc/{proc.pid}/stat"), proc, log)
        token = owner_token(proc.pid)
        seen: set[str] = set()
        agents: dict[str, tuple[str, int | None]] = {}  # agents' containers -> (task, rollout once known)

        def held_agent_running() -> bool:
            for c in _owned(backend, token):
                if c not in seen:
                    seen.add(c)
                    task = _agent_of_task(backend, c)
                    if task is not None:
                        agents[c] = (task, None)
            for c, (task, rollout) in agents.items():
                if rollout is None:
                    agents[c] = (task, _rollout_of_agent(backend, c))
            known = [(t, r) for t, r in agents.values() if r is not None and (t, r) in holds]
            if let_first_finish and not let_finish and known:
                let_finish.append(known[0])
                hold_files[known[0]].unlink()
            held[:] = [k for k in known if k not in let_finish]  # it sleeps: alive when killed
            return bool(held) and len(_recorded(out)) >= after

        _wait_for("a held agent", held_agent_running, proc, log)
        proc.send_signal(signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
        for hold in hold_files.values():
            hold.unlink(missing_ok=True)
    left = _owned(backend, token)
    assert left, "the kill left no container: nothing for the resume to sweep"
    channels = [Path(_labels(backend, c)["org.reliabench.channel"]) for c in left]
    assert all(c.is_dir() for c in channels), channels
    private = [p for kind in (backend.runtime, "chan") for p in Path("/tmp").glob(f"rb-{kind}-{proc.pid}-*")]
    assert private, "no folder named after the killed run"
    assert len(held) == 1, held  # one agent place: one agent at a time
    return Killed(token, _recorded(out), left, channels, private, let_finish[0] if let_finish else None, held[0])


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_kill_9_mid_rollout_then_resume_loses_duplicates_and_leaves_nothing(base: Path, runtime: str) -> None:
    """Killed in a ``tests = "fresh"`` rollout, resumed, killed in a ``tests = "same"`` one, resumed."""
    backend = container_backend_or_skip(runtime)
    os.chmod(base, 0o755)
    out, log = base / "run", base / "run.log"
    args = _run_args(_suite(base), _agents(base), out, runtime)
    every = {(t, i) for t in HANDOVERS for i in range(N)}
    # every agent held but the first to start (fresh/0 or fresh/1: both wait for the one agent place at once),
    # killed in the next, once the first is recorded: the other fresh rollout (or, when a thread that took a
    # job after the first rollout finished won the agent place, a same one)
    first = _kill_during_agent(args, log, backend, out, every, after=1, let_first_finish=True)
    assert first.let_finish is not None and first.let_finish[0] == "fresh", first.let_finish
    assert list(first.records) == [("fresh", AGENT_NAME, first.let_finish[1])]  # one recorded, killed in the next
    # the resume, killed in a same rollout: it may start one before or after the re-run of the rollout the
    # first run was killed in (they wait for the one agent place at once); only same rollouts are held
    second = _kill_during_agent(args, log, backend, out, {(t, i) for t, i in every if t == "same"}, after=1)
    first.gone(backend)  # the second run's sweep removed what the first left
    assert second.killed_in[0] == "same"
    # what the resume recorded before the kill: no held rollout, the first run's record unchanged
    unheld = {("fresh", AGENT_NAME, i) for i in range(N)}
    assert set(second.records) - set(first.records) <= unheld, sorted(second.records)
    assert {k: second.records[k] for k in first.records} == first.records
    resume = _start(args, log)
    _wait_for("a pid", lambda: os.path.exists(f"/proc/{resume.pid}/stat"), None, log)
    resumed = owner_token(resume.pid)
    assert resume.wait(timeout=300) == 0, log.read_text()[-3000:]
    records = _assert_complete(out)
    assert {k: v for k, v in _recorded(out).items() if k in second.records} == second.records  # kept as recorded
    second.gone(backend)
    assert _owned(backend, resumed) == []  # and the last run left nothing of its own
    for r in records:
        if r.task_id == "same":  # the tests ran in the agent's own container
            outcomes = {t.name.split("::")[-1]: t.outcome for t in r.tests or ()}
            assert outcomes["test_the_machine_the_agent_set_up"] == "passed", r.meta.get("reason")


# --------------------------------------------------------------------------------------------
# refused before the run: exit 2, one line with the fix, nothing written
# --------------------------------------------------------------------------------------------

BROKEN_BUILDS = {
    "a-failing-step": ("FROM reliabench/python3-pytest:bookworm\nRUN echo the step fails >&2 && exit 3\n",
                       ("the step fails", "exit status")),
    "a-missing-base": ("FROM reliabench/no-such-base:1\nRUN true\n", ("reliabench never pulls", "load it first")),
}


def _one_error_line(err: str) -> str:
    """The one line of the refusal (besides the run's banner ``suite NAME VERSION: ... -> OUT``)."""
    lines = [line for line in err.strip().splitlines() if not line.startswith("suite faults 0.1: ")]
    assert len(lines) == 1 and lines[0].startswith("reliabench: error: ") and "Traceback" not in err, err
    return lines[0]


def _refused(capsys: pytest.CaptureFixture[str], args: list[str], out: Path, *needles: str) -> str:
    assert main(args) == 2
    err = _one_error_line(capsys.readouterr().err)
    for needle in needles:
        assert needle in err, err
    assert not out.exists()  # refused before anything is written
    return err


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_missing_image_refuses_the_run(base: Path, runtime: str, capsys: pytest.CaptureFixture[str]) -> None:
    container_backend_or_skip(runtime)
    suite = _suite(base, '[environment]\nimage = "reliabench/no-such-image:1"\n')
    out = base / "run"
    _refused(capsys, _run_args(suite, _agents(base), out, runtime), out, "reliabench/no-such-image:1",
             f"{runtime} load -i", "task.toml:")


@pytest.mark.parametrize("build", sorted(BROKEN_BUILDS))
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_dockerfile_that_cannot_be_built_refuses_the_run(base: Path, runtime: str, build: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    container_backend_or_skip(runtime)
    suite = _suite(base, '[environment]\ndockerfile = "environment/Dockerfile"\n')
    dockerfile = suite / "tasks" / "adder" / "environment" / "Dockerfile"
    dockerfile.parent.mkdir()
    text, needles = BROKEN_BUILDS[build]
    dockerfile.write_text(text)
    out = base / "run"
    _refused(capsys, _run_args(suite, _agents(base), out, runtime), out, str(dockerfile), *needles)


def test_a_docker_daemon_that_does_not_answer_refuses_the_run(base: Path) -> None:
    container_backend_or_skip("docker")
    out, log = base / "run", base / "run.log"
    dead = f"unix://{base}/no-daemon.sock"
    status = _finish(_run_args(_suite(base), _agents(base), out, "docker"), log, env={"DOCKER_HOST": dead})
    err = _one_error_line(log.read_text())
    assert status == 2, err
    assert dead in err and "scripts/containers/dockerd.sh start" in err
    assert not out.exists()


def test_no_container_runtime_refuses_an_image_task_under_auto(base: Path) -> None:
    """``--sandbox auto`` and an image task on a host without podman and docker (neither on PATH)."""
    out, log = base / "run", base / "run.log"
    bin_dir = base / "bin"  # the host's tools but the runtimes
    bin_dir.mkdir()
    for tool in ("bwrap", "prlimit", "setpriv", "unshare", "catatonit"):
        found = shutil.which(tool)
        if found is not None:
            (bin_dir / tool).symlink_to(found)
    args = _run_args(_suite(base), _agents(base), out, "auto")
    status = _finish(args, log, env={"PATH": str(bin_dir)})
    err = _one_error_line(log.read_text())
    assert status == 2, err
    assert "no container runtime works here (podman is not installed" in err and "install podman or docker" in err
    assert "docker is not installed" in err
    assert not out.exists()


# --------------------------------------------------------------------------------------------
# faults during the run: the harness's, never the agent's; the resume picks them up
# --------------------------------------------------------------------------------------------

REFUSING_RUNTIME = """#!/bin/sh
# {runtime} that refuses to start the containers of rollouts (not those collecting the tests)
if [ "$1" = run ]; then
  case "$*" in
    *"/rollout-"*) echo "{message}" >&2; exit {status};;
  esac
fi
exec {real} "$@"
"""
REFUSALS = {"podman": ("Error: OCI runtime error: runc: runc create failed: injected by the test", 126),
            "docker": ("docker: Error response from daemon: failed to create shim task: OCI runtime create "
                       "failed: injected by the test.", 125)}


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_container_that_cannot_start_is_infra_error_and_the_resume_runs_it(base: Path, runtime: str) -> None:
    backend = container_backend_or_skip(runtime)
    real = backend._binary()
    assert real is not None
    os.chmod(base, 0o755)
    bin_dir = base / "bin"
    bin_dir.mkdir()
    message, status = REFUSALS[runtime]
    (bin_dir / runtime).write_text(REFUSING_RUNTIME.format(runtime=runtime, message=message, status=status,
                                                           real=real))
    os.chmod(bin_dir / runtime, 0o755)
    out, log = base / "run", base / "run.log"
    args = _run_args(_suite(base, f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\n'), _agents(base, sleep=0),
                     out, runtime)
    refused = _finish(args, log, env={"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"})
    records = _records(out)
    assert refused == 0, log.read_text()[-2000:]  # recorded: 2 rollouts cannot stop the agent early (3)
    assert [(r.status, r.meta.get("infra_reason"), r.meta.get("infra_attempts")) for r in records] == \
        [("infra_error", "sandbox", 3)] * N, [r.meta.get("reason") for r in records]
    assert all("injected by the test" in r.meta["reason"] for r in records), records[0].meta["reason"]
    assert _finish(args, log) == 0, log.read_text()[-2000:]  # the runtime works again: the resume runs them
    _assert_complete(out, ("adder",))


def _containers_of_this_process(backend: ContainerBackend) -> list[str]:
    return _owned(backend, owner_token())


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_a_container_killed_under_an_agent_is_retried_never_the_agents_failure(base: Path, runtime: str) -> None:
    """The runtime stops the container of a running agent (a crash, an operator's ``kill``)."""
    backend = container_backend_or_skip(runtime)
    os.chmod(base, 0o755)
    suite = load_suite(_suite(base, f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\n'))
    agents = load_agents(_agents(base, sleep=3))
    killed: list[str] = []
    done = threading.Event()

    def kill_the_first_agent() -> None:
        while not done.is_set() and not killed:
            for cid in _containers_of_this_process(backend):
                if _agent_of_task(backend, cid) == "adder":
                    backend._call(["kill", "--signal", "KILL", cid])
                    killed.append(cid)
                    return
            time.sleep(0.1)

    killer = threading.Thread(target=kill_the_first_agent, daemon=True)
    killer.start()
    os.environ["RELIABENCH_BACKOFF_SCALE"] = "0"
    try:
        summary = run_suite(suite, agents, base / "run", RunSettings(n=N, workers=1, sandbox=runtime))
    finally:
        os.environ.pop("RELIABENCH_BACKOFF_SCALE", None)
        done.set()
        killer.join()
    assert killed, "no agent's container was seen to kill"
    assert summary.infra_errors == 0
    _assert_complete(base / "run", ("adder",))  # rollout 0 was retried in a new container: right, and passing
    assert not container_exists(backend, killed[0])


@pytest.mark.slow
def test_a_docker_daemon_lost_mid_run_is_infra_error_and_the_resume_runs_it(base: Path) -> None:
    """The daemon goes away after the first rollout (its socket is a proxy that is cut: every
    connection drops, an exec in flight among them); the resume finds it back, sweeps what the
    run could not remove, and runs the rollouts the loss hit."""
    backend = container_backend_or_skip("docker")
    os.chmod(base, 0o755)
    proxy = SocketProxy(base / "docker.sock", backend.docker_host().removeprefix("unix://"))
    out, log = base / "run", base / "run.log"
    args = _run_args(_suite(base), _agents(base, sleep=2), out, "docker")
    proc = _start(args, log, env={"DOCKER_HOST": proxy.address})
    try:
        _wait_for("a pid", lambda: os.path.exists(f"/proc/{proc.pid}/stat"), proc, log)
        token = owner_token(proc.pid)
        _wait_for("the first record", lambda: len(_recorded(out)) >= 1, proc, log)
        proxy.cut()
        status = proc.wait(timeout=300)
    finally:
        proxy.cut()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    records = _records(out)
    hit = [r for r in records if r.status != "completed"]
    assert status in (0, 3), log.read_text()[-2000:]
    assert len(records) == len(HANDOVERS) * N and hit, [(r.key, r.status) for r in records]
    for r in hit:  # never the agent's failure: every rollout after the loss is the harness's
        assert (r.status, r.meta.get("infra_reason")) == ("infra_error", "sandbox"), (r.key, r.status, r.meta)
        assert "does not answer" in r.meta["reason"] or "Cannot connect" in r.meta["reason"], r.meta["reason"]
    left = _owned(backend, token)
    assert _finish(args, log) == 0, log.read_text()[-2000:]
    _assert_complete(out)
    assert _owned(backend, token) == [] and not any(container_exists(backend, c) for c in left)
