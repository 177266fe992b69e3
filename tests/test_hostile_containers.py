"""Attacks of our own against the container path (issue 21): each class contained, or the
residual said (docs/threat-model.md, "Containers: attacks on the container path").

Command agents run in the test image (podman and docker) and attack what the container path
adds to a rollout: the machine they leave to the tests (``tests = "same"``: the same container),
the container's init, its read-only root, its sized ``/tmp`` and ``/dev/shm``, its process
limit, the runtime's sockets, and the other slots' containers. Every hostile agent writes a
WRONG solution unless its attack is about being judged wrongly: any pass is a forged one. The
agents of one runtime share one run (one suite, ``n = 1``); each class is a test of its own
on that run's records. The other slots' containers are attacked from a second environment.
"""

from __future__ import annotations

import os
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from container_helpers import RUNTIMES, SLOTS, container_backend_or_skip, started, workspace_dir
from suite_helpers import write_adder_suite

from reliabench.agents.command import CommandAgent
from reliabench.files.untrusted import remove_tree
from reliabench.records import Rollout
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

TESTS = textwrap.dedent("""
    from adder import add

    def test_small():
        assert add(1, 2) == 3

    def test_zero():
        assert add(0, 0) == 0
""")
GOOD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a - b\n"
TASKS = {
    "same": f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\ntests = "same"\n',
    "root-fresh": f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\nuser = "root"\nwritable_root = true\n',
}
"""``same``: the slot uid on a read-only root, the tests in the agent's own container; ``root-fresh``:
root (no capabilities) on a writable root, the tests in a fresh container."""

PRELUDE = f"""
import os, signal, socket, subprocess, sys, time
GOOD, WRONG = {GOOD!r}, {WRONG!r}
def write(text, name="adder.py"):
    with open(name, "w") as fh:
        fh.write(text)
def note(line):
    with open("attack.txt", "a") as fh:
        fh.write(line + "\\n")
def background(code):
    subprocess.Popen([sys.executable, "-c", code], start_new_session=True, stdin=subprocess.DEVNULL,
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""

ATTACKS = {
    # a process of the agent phase that lives on rewrites the scanned (wrong) code into a right
    # one once the hidden tests arrive: the tests would judge code nobody scanned or recorded
    "outlive": """
write(WRONG)
background('''
import glob, os, time
end = time.time() + 120
while time.time() < end:
    if glob.glob("/tmp/rb-hidden-*") or glob.glob("/run/reliabench/outcome-*"):
        with open("adder.py", "w") as fh:
            fh.write("def add(a, b):\\\\n    return a + b\\\\n")
    time.sleep(0.005)
''')
""",
    # start-up code for the tests' interpreter planted outside the workspace: a sitecustomize
    # that makes every test pass, in each folder of the image's sys.path, a python3 earlier on
    # PATH, and the usual writable corners of a root file system
    "plant": """
write(WRONG)
FORGE = '''
import _pytest.reports
_real = _pytest.reports.TestReport.from_item_and_call
def _forged(item, call):
    report = _real(item, call)
    report.outcome = "passed"
    return report
_pytest.reports.TestReport.from_item_and_call = staticmethod(_forged)
'''
out = subprocess.run(["python3", "-I", "-c", "import sys; print('\\\\n'.join(p for p in sys.path if p))"],
                     capture_output=True, text=True).stdout.split()
targets = [os.path.join(p, "sitecustomize.py") for p in out if not p.startswith(os.getcwd())]
targets += [os.path.join(p, "zz-forge.pth") for p in out if p.endswith("-packages")]
targets += ["/usr/local/bin/python3", "/usr/local/sbin/python3", "/etc/rb-planted", "/var/tmp/rb-planted",
            "/run/rb-planted", "/home/rb-planted", "/root/rb-planted", "/opt/rb-planted", "/rb-planted"]
for target in targets:
    try:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        text = "import sitecustomize\\n" if target.endswith(".pth") else FORGE
        if target.endswith("/python3"):
            text = "#!/bin/sh\\nexec /usr/bin/python3 -c 'import sitecustomize' \\"$@\\"\\n"
        with open(target, "w") as fh:
            fh.write(text)
        if target.endswith("/python3"):
            os.chmod(target, 0o755)
        note("wrote " + target)
    except OSError as exc:
        note("denied " + target + " " + type(exc).__name__)
""",
    # /tmp (where the tests of tests = "same" are copied) and /dev/shm filled to the last byte
    # (file after file: each is bounded by RLIMIT_FSIZE): the handover must not become the
    # harness's failure (infra_error takes a rollout out of n)
    "fill": """
import errno
write(GOOD)
for where in ("/tmp", "/dev/shm"):
    i, full = 0, False
    while not full and i < 1000:
        try:
            with open(os.path.join(where, f"fill{i}"), "wb") as fh:
                while True:
                    fh.write(b"x" * 65536)
        except OSError as exc:
            full = exc.errno == errno.ENOSPC
        i += 1
    for size in (4096, 512, 1):
        try:
            with open(os.path.join(where, "fill-last"), "ab") as fh:
                while True:
                    fh.write(b"x" * size)
                    fh.flush()
        except OSError:
            pass
    note(f"{where} full: {full}")
""",
    # the runtime's sockets, containerd's, and every abstract socket the container can list
    "sockets": """
write(WRONG)
paths = ["/run/podman/podman.sock", "/var/run/docker.sock", "/run/docker.sock",
         "/run/reliabench-docker/docker.sock", "/run/containerd/containerd.sock",
         "/var/run/containerd/containerd.sock", "/run/user/0/podman/podman.sock"]
with open("/proc/net/unix") as fh:
    listed = [line.split()[-1] for line in fh.readlines()[1:] if len(line.split()) >= 8]
note("listed " + str(len(listed)))
for path in paths + listed:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    try:
        s.connect("\\0" + path[1:] if path.startswith("@") else path)
        note("reached " + path)
    except OSError as exc:
        note("refused " + path + " " + type(exc).__name__)
    finally:
        s.close()
""",
    # the container's init (catatonit, pid 1): end it and the container ends, and with it the
    # tests of tests = "same" (an infra_error would take the rollout out of n)
    "signal-init": """
write(WRONG)
for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGINT, signal.SIGHUP):
    try:
        os.kill(1, sig)
        note(f"signalled 1 with {sig.name}")
    except OSError as exc:
        note(f"pid 1 refused {sig.name}: {type(exc).__name__}")
try:
    os.kill(-1, signal.SIGKILL)  # everything else it may signal (not itself)
except OSError as exc:
    note("kill -1: " + type(exc).__name__)
""",
    # a fork bomb left running in the background when the agent returns: stopping the agent's
    # processes before the handover must win against it
    "forkbomb": """
write(WRONG)
background('''
import os, time
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.001)
''')
time.sleep(2)
""",
}


def _suite(root: Path) -> Path:
    suite = write_adder_suite(root, "hostile-containers", TESTS, task_ids=tuple(TASKS), timeout_s=30,
                              world_readable=True)
    for task, table in TASKS.items():
        toml = suite / "tasks" / task / "task.toml"
        toml.write_text(toml.read_text() + table)
        os.chmod(toml, 0o644)
    return suite


def _agents(root: Path) -> list[CommandAgent]:
    agents = []
    for name, attack in ATTACKS.items():
        script = root / f"{name}.py"
        script.write_text(PRELUDE + textwrap.dedent(attack))
        os.chmod(script, 0o644)
        agents.append(CommandAgent(name, ["/usr/bin/python3", str(script)], readonly=[script], timeout_s=30))
    return agents


@pytest.fixture(scope="module", params=RUNTIMES)
def hostile_run(request: pytest.FixtureRequest) -> Iterator[tuple[str, dict[tuple[str, str], Rollout], Path]]:
    """Every hostile agent once on each task, in one run per runtime: (runtime, records, run directory)."""
    runtime = str(request.param)
    container_backend_or_skip(runtime)
    root = Path(tempfile.mkdtemp(prefix="rb-test-"))
    os.chmod(root, 0o755)
    try:
        run_suite(load_suite(_suite(root)), _agents(root), root / "run",
                  RunSettings(n=1, workers=2, sandbox=runtime))
        with RunStore.open_existing(root / "run", readonly=True) as store:
            records = {(r.task_id, r.agent): r for r in store.rollouts()}
        yield runtime, records, root / "run"
    finally:
        remove_tree(root)


def _attack_notes(run_dir: Path, r: Rollout) -> list[str]:
    with RunStore.open_existing(run_dir, readonly=True) as store:
        path = store.artifact_dir(r.task_id, r.agent, r.rollout) / "files" / "attack.txt"
    return path.read_text().splitlines() if path.exists() else []


def _files(run_dir: Path, r: Rollout) -> dict[str, str]:
    with RunStore.open_existing(run_dir, readonly=True) as store:
        kept = store.artifact_dir(r.task_id, r.agent, r.rollout) / "files"
    return {p.name: p.read_text() for p in kept.iterdir()} if kept.is_dir() else {}


def _ran_and_failed(r: Rollout) -> None:
    """The rollout is the agent's: its tests ran in a working environment and judged the wrong code."""
    assert r.status == "completed", (r.status, r.meta.get("reason"))
    assert [t.outcome for t in r.tests or ()] == ["failed", "passed"], r.meta.get("reason")  # a - b: 0 - 0 == 0


Run = tuple[str, dict[tuple[str, str], Rollout], Path]


def test_a_process_left_by_the_agent_cannot_rewrite_the_scanned_code(hostile_run: Run) -> None:
    """Stopped before the scan (``same``: ``stop_processes``; ``fresh``: the container is gone)."""
    _, records, run_dir = hostile_run
    for task in TASKS:
        r = records[(task, "outlive")]
        _ran_and_failed(r)
        assert _files(run_dir, r)["adder.py"] == WRONG  # what was scanned and kept is what was tested


def test_start_up_code_planted_outside_the_workspace_never_runs_in_the_tests(hostile_run: Run) -> None:
    """A read-only root takes no file; a writable root's files stay in the agent's container."""
    _, records, run_dir = hostile_run
    same, root = records[("same", "plant")], records[("root-fresh", "plant")]
    notes = _attack_notes(run_dir, same)
    assert notes and all(n.startswith("denied ") for n in notes), notes
    assert any("/usr/lib/python3" in n and "sitecustomize" in n for n in notes), notes
    assert [n for n in _attack_notes(run_dir, root) if n.startswith("wrote ")], "the writable root took nothing"
    _ran_and_failed(same)
    _ran_and_failed(root)  # the fresh container of the tests has none of it


def test_a_full_tmp_and_dev_shm_fail_the_rollout_never_infra(hostile_run: Run) -> None:
    """``same``: the tests cannot be copied into a full ``/tmp``: the rollout's failure (counted)."""
    _, records, run_dir = hostile_run
    same, fresh = records[("same", "fill")], records[("root-fresh", "fill")]
    assert _attack_notes(run_dir, fresh) == ["/tmp full: True", "/dev/shm full: True"]  # the attack works
    assert same.status == "test_error" and not same.passes, (same.status, same.meta.get("reason"))
    assert "no room left for the hidden tests" in same.meta["reason"], same.meta["reason"]
    assert fresh.status == "completed" and fresh.passes, fresh.meta.get("reason")  # a fresh /tmp: right code


def test_the_runtimes_sockets_are_out_of_reach(hostile_run: Run) -> None:
    _, records, run_dir = hostile_run
    for task in TASKS:
        r = records[(task, "sockets")]
        notes = _attack_notes(run_dir, r)
        assert notes[0] == "listed 0", notes  # no Unix socket of the host's network namespace is listed
        assert len(notes) > 5 and not any(n.startswith("reached") for n in notes), notes
        _ran_and_failed(r)


def test_the_containers_init_cannot_be_signalled(hostile_run: Run) -> None:
    """Neither by the slot uid nor by root without capabilities: the container lives for the tests."""
    _, records, run_dir = hostile_run
    for task in TASKS:
        r = records[(task, "signal-init")]
        notes = _attack_notes(run_dir, r)
        assert [n.split(":")[0] for n in notes[:5]] == [f"pid 1 refused {s}" for s in
                                                        ("SIGKILL", "SIGTERM", "SIGSTOP", "SIGINT", "SIGHUP")], notes
        _ran_and_failed(r)


def test_a_fork_bomb_left_running_is_stopped_before_the_handover(hostile_run: Run) -> None:
    _, records, _ = hostile_run
    for task in TASKS:
        _ran_and_failed(records[(task, "forkbomb")])


SPY = r"""
import glob, os, sys
token = sys.argv[1]
found = []
for where in ("/tmp", "/dev/shm", "/run", "/var/tmp", "/workspace", os.environ["OTHER_WORKSPACE"],
              os.environ["OTHER_CHANNEL"]):
    for root, dirs, files in os.walk(where):
        for name in files:
            try:
                with open(os.path.join(root, name), "rb") as fh:
                    if token.encode() in fh.read(1 << 20):
                        found.append(os.path.join(root, name))
            except OSError:
                pass
pids = [p for p in os.listdir("/proc") if p.isdigit()]
for pid in pids:
    if int(pid) == os.getpid():
        continue
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            if token.encode() in fh.read():
                found.append("process " + pid)
    except OSError:
        pass
for path in glob.glob("/sys/fs/cgroup/*/*" + os.environ["OTHER_ID"][:12] + "*") + \
        glob.glob("/sys/fs/cgroup/**/*" + os.environ["OTHER_ID"][:12] + "*", recursive=True):
    found.append("cgroup " + path)
print("pids", len(pids))
print("found", found)
"""


@pytest.mark.parametrize("runtime", RUNTIMES)
def test_another_slots_container_is_out_of_reach(runtime: str) -> None:
    """A rollout looks for another slot's running rollout: its files, its processes, its cgroup."""
    backend = container_backend_or_skip(runtime)
    token = f"rb-other-slot-{os.urandom(6).hex()}"
    with workspace_dir() as ws_a, workspace_dir() as ws_b, \
            started(backend, ws_a, slot=SLOTS[runtime] + 40) as victim, \
            started(backend, ws_b, slot=SLOTS[runtime] + 41) as spy:
        plant = (f"echo {token} > /workspace/secret; echo {token} > /tmp/secret; echo {token} > /dev/shm/secret; "
                 f"echo {token} > /run/reliabench/secret; "
                 f"setsid python3 -c 'import time; time.sleep(60)' {token} </dev/null >/dev/null 2>&1 &")
        assert victim.exec(["sh", "-c", plant]).returncode == 0
        assert victim.processes()  # the victim's sleep runs while the spy looks
        (ws_b / "spy.py").write_text(SPY)
        env = {"OTHER_WORKSPACE": str(ws_a), "OTHER_CHANNEL": str(victim.channel_host),
               "OTHER_ID": victim.container_id, "PATH": "/usr/bin:/bin"}
        # the spy finds all of it where it is: in the victim's own container
        (ws_a / "spy.py").write_text(SPY)
        own = victim.exec(["python3", "spy.py", token], env=env).stdout
        assert all(where in own for where in ("/workspace/secret", "/tmp/secret", "/dev/shm/secret",
                                              "/run/reliabench/secret", "'process ")), own
        result = spy.exec(["python3", "spy.py", token], env=env)
        assert result.returncode == 0, result.stderr
        assert "found []" in result.stdout, result.stdout
        pids = int(result.stdout.split()[1])
        assert pids <= 3, result.stdout  # its init, the spy (and its env/prlimit): no other slot's process
