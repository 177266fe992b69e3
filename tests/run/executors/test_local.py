"""The local executor: agent phases in flight apart from the test slots, counted at a fake endpoint.

No timing is asserted: the fake endpoint counts the requests it holds at once (the first ones
wait at a barrier until as many as asked for are there), and the records of a run with many
agents in flight are those of a run with one.
"""

from __future__ import annotations

import os
import textwrap
import threading
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, Reply
from suite_helpers import write_adder_suite

from reliabench.agents.config import load_agents
from reliabench.run.artifacts import StoredArtifacts
from reliabench.run.runner import RunSettings, run_suite
from reliabench.store import RunStore, artifact_dir
from reliabench.tasks.suite import load_suite

KEY_ENV = "RB_LOCAL_EXECUTOR_KEY"
GOOD = "```python path=adder.py\ndef add(a, b):\n    return a + b\n```"


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-local")
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


class InFlight:
    """A fake endpoint's reply that counts the requests held at once; the first ``wait_for`` meet at a barrier."""

    def __init__(self, wait_for: int) -> None:
        self.lock = threading.Lock()
        self.now = 0
        self.peak = 0
        self.barrier = threading.Barrier(wait_for, timeout=60) if wait_for > 1 else None
        self.waiting = wait_for

    def __call__(self, body: dict[str, Any], index: int) -> Reply:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
            meet = self.barrier is not None and self.waiting > 0
            self.waiting -= 1
        try:
            if meet and self.barrier is not None:
                self.barrier.wait()  # BrokenBarrierError (a 500 from the fake) if fewer ever come
            return Reply(GOOD)
        finally:
            with self.lock:
                self.now -= 1


def _run(tmp_path: Path, name: str, workers: int, agents_in_flight: int | None, wait_for: int
         ) -> tuple[int, dict[tuple[str, str, int], tuple[str, tuple[Any, ...]]]]:
    os.chmod(tmp_path, 0o755)
    root = tmp_path / name
    root.mkdir()
    suite = load_suite(write_adder_suite(root, "flight", textwrap.dedent("""
        from adder import add

        def test_add():
            assert add(1, 2) == 3
    """), task_ids=["a0", "a1"]))
    counter = InFlight(wait_for)
    with FakeOpenAIServer([counter], max_requests=100) as srv:
        agents = root / "agents.toml"
        agents.write_text(f'[[agents]]\nname = "m"\nkind = "openai"\nmodel = "fake-model"\n'
                          f'base_url = "{srv.base_url}"\napi_key_env = "{KEY_ENV}"\nmax_retries = 0\n')
        settings = RunSettings(n=4, workers=workers, agents_in_flight=agents_in_flight, scanners=(),
                               agents_config_hash="x")
        summary = run_suite(suite, load_agents(agents), root / "run", settings)
    assert summary.executed == 8
    with RunStore.open_existing(root / "run") as store:
        records = {r.key: (r.status, r.tests) for r in store.rollouts()}
    return counter.peak, records


def test_agents_in_flight_apart_from_the_test_slots(tmp_path: Path) -> None:
    peak, many = _run(tmp_path, "many", workers=1, agents_in_flight=4, wait_for=4)
    assert peak == 4  # four agent phases at once on one test slot, never more
    one_peak, one = _run(tmp_path, "one", workers=1, agents_in_flight=None, wait_for=1)
    assert one_peak == 1  # the default: as many agents in flight as workers
    assert many == one and all(status == "completed" for status, _ in many.values())


# --- an attack on the phase switch: the agent slot's uid is not the test slot's ------------------

SABOTEUR = """
import os, sys, time
path = sys.argv[1]
deadline = time.monotonic() + 25
while time.monotonic() < deadline:  # keeps writing a wrong adder.py, through the tests' phase
    try:
        with open(path, "w") as f:
            f.write("def add(a, b):\\n    return a - b\\n")
    except OSError:
        pass
    time.sleep(0.01)
"""
SPAWN = """
import os, subprocess, sys
open("adder.py", "w").write("def add(a, b):\\n    return a + b\\n")
subprocess.Popen([sys.executable, sys.argv[1], os.path.abspath("adder.py")], start_new_session=True,
                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
"""


@pytest.mark.parametrize("sandbox", ["bubblewrap", "namespaces"])
def test_a_process_left_on_the_agent_slot_cannot_change_what_the_test_slot_tests(
        base: Path, sandbox: str) -> None:
    """A command agent (on an agent slot) leaves a setsid() process rewriting its file wrong.

    Between the phases its environment is closed (every process of the agent slot's uid
    killed) before the workspace goes to a test slot: the tests judge what was scanned and
    kept. What the lurker wrote while the agent phase lasted is the agent's work (it may fail
    the rollout); nothing it writes after that reaches the tests.
    """
    from sandbox_helpers import backend_or_skip, fresh_harness_or_skip, python_for

    from reliabench.agents.command import CommandAgent

    backend = backend_or_skip(sandbox)
    fresh_harness_or_skip(backend)
    python = python_for(backend, 3)
    os.chmod(base, 0o755)
    saboteur, spawn = base / "saboteur.py", base / "spawn.py"
    saboteur.write_text(SABOTEUR)
    spawn.write_text(SPAWN)
    for f in (saboteur, spawn):
        os.chmod(f, 0o644)
    suite = load_suite(write_adder_suite(base, "saboteur", textwrap.dedent("""
        from adder import add

        def test_add():
            assert add(1, 2) == 3
    """), task_ids=["a0"], world_readable=True))
    agent = CommandAgent("saboteur", [python, str(spawn), str(saboteur)], readonly=[saboteur, spawn],
                         sandbox=sandbox)
    settings = RunSettings(n=2, workers=1, agents_in_flight=2, sandbox=sandbox, scanners=(),
                           agents_config_hash="x", test_workers="fresh")
    run_suite(suite, [agent], base / "run", settings)
    with RunStore.open_existing(base / "run", readonly=True) as store:
        records = store.rollouts()
    assert len(records) == 2 and all(r.status == "completed" for r in records)
    for r in records:
        kept = StoredArtifacts(artifact_dir(base / "run", r.task_id, r.agent, r.rollout)).kept_files()
        assert r.passes == (kept["adder.py"] == b"def add(a, b):\n    return a + b\n"), (r.meta, kept)
