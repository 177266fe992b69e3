"""The Ray executor on a real two-node cluster: a head and a second node, each a `ray start`.

Nothing is copied to the nodes by hand: the suite and the agents' files travel through Ray.
The first test checks that the records are those of the local executor and that both nodes
ran rollouts; the second kills the second node mid-run and checks that every planned rollout
is recorded exactly once (after a resume if the run stopped). Select them with
``-m ray_cluster``; they skip without the ``ray`` extra.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import textwrap
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from ray_cluster_helpers import LocalRayCluster, local_ray_cluster
from test_run_e2e import make_agents, make_suite  # tests/ is on sys.path (pytest's rootdir insertion)

from reliabench.agents.config import load_agents
from reliabench.cli import main
from reliabench.errors import UsageError, WorkersLostError
from reliabench.records import Rollout
from reliabench.run.plan import derive_seed
from reliabench.run.runner import ProgressEvent, RunSettings, run_suite
from reliabench.store import read_records
from reliabench.tasks.suite import load_suite

pytest.importorskip("ray")

pytestmark = [pytest.mark.slow, pytest.mark.ray_cluster]



def _comparable(r: Rollout) -> Rollout:
    """The record without timings and host-specific meta."""
    cost = None if r.cost is None else dataclasses.replace(r.cost, seconds=0.0, agent_s=None, test_s=None)
    return dataclasses.replace(r, cost=cost, meta={k: v for k, v in r.meta.items() if not k.startswith("ray_")})


def _records(run: Path) -> list[Rollout]:
    return sorted(read_records(run), key=lambda r: r.key)


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalRayCluster]:
    # head: 2 CPUs (room for the second node's actor when that node dies); second node: 1 CPU
    with local_ray_cluster(head_cpus=2) as c:
        yield c


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    os.chmod(tmp_path, 0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    return make_suite(tmp_path), make_agents(tmp_path)


def _ensure_second_node(cluster: LocalRayCluster) -> dict[str, str]:
    if "second" in cluster.nodes and cluster.nodes["second"].proc.poll() is None:
        return cluster.wait_nodes({"head", "second"})
    if "second" in cluster.nodes:
        cluster.killed.append(cluster.nodes.pop("second"))
    cluster.add_node("second", cpus=1)
    return cluster.wait_nodes({"head", "second"})


def test_two_nodes_give_the_local_records(cluster: LocalRayCluster, setup: tuple[Path, Path],
                                          tmp_path: Path) -> None:
    ids = _ensure_second_node(cluster)
    suite_dir, agents_file = setup
    # the python agent (last table) takes a moment, so that the second node's actor, which
    # starts a little later, gets its share of the work
    agents_file.write_text(agents_file.read_text() + "options = { delay = 0.7 }\n")
    args = ["run", str(suite_dir), "--agents", str(agents_file), "-n", "3", "--workers", "2",
            "--no-preflight"]
    assert main([*args, "--out", str(tmp_path / "local")]) == 0
    assert main([*args, "--out", str(tmp_path / "ray"), "--executor", "ray",
                 "--ray-address", cluster.address]) == 0
    want, got = _records(tmp_path / "local"), _records(tmp_path / "ray")
    assert len(got) == 6
    assert [_comparable(r) for r in got] == [_comparable(r) for r in want]
    # both nodes ran rollouts, and they ran them from shipped copies, not from tmp_path
    assert {r.meta["ray_node_id"] for r in got} == set(ids.values())
    assert all("ray_node" not in r.meta for r in want)


_SLOW_AGENTS = """
    [[agents]]
    name = "py"
    kind = "python"
    callable = "my_agent:solve"
    path = "."
    options = {{ delay = {delay} }}
"""


def test_killing_the_second_node_loses_and_duplicates_nothing(
        cluster: LocalRayCluster, setup: tuple[Path, Path], tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="reliabench.run.executors.ray")
    ids = _ensure_second_node(cluster)
    suite_dir, _ = setup
    agents_file = tmp_path / "slow.toml"
    agents_file.write_text(textwrap.dedent(_SLOW_AGENTS.format(delay=1.0)))
    suite, agents = load_suite(suite_dir), load_agents(agents_file)
    n = 8
    settings = RunSettings(n=n, workers=2, executor="ray", executor_options={"ray": {"address": cluster.address}})
    killed = threading.Event()
    seen_second: list[str] = []

    def progress(ev: ProgressEvent) -> None:
        # once the second node has finished a rollout, kill it (its next one is in flight)
        if ev.rollout.meta.get("ray_node_id") == ids["second"]:
            seen_second.append(ev.rollout.agent)
            if not killed.is_set():
                killed.set()
                threading.Thread(target=cluster.nodes["second"].kill).start()

    run = tmp_path / "run"
    stopped: WorkersLostError | None = None
    try:
        summary = run_suite(suite, agents, run, settings, agents_file=agents_file, progress=progress)
    except WorkersLostError as exc:  # allowed: the run stops resumably
        stopped = exc
    assert killed.is_set(), "the second node finished no rollout before the run ended"
    assert cluster.nodes["second"].proc.poll() is not None
    first = _records(run)
    keys = Counter(r.key for r in first)
    assert all(c == 1 for c in keys.values()), keys
    # the rollout in flight on the dead node was submitted again (and recorded once, above)
    assert "submitted again" in caplog.text
    assert stopped is not None or any(r.meta.get("ray_attempts", 1) > 1 for r in first)
    if stopped is None:
        assert summary.executed == n
    # a resume (on the head alone) runs exactly the missing rollouts
    again = run_suite(suite, agents, run, settings, agents_file=agents_file)
    assert again.resumed and again.executed == n - len(first)
    final = _records(run)
    assert Counter(r.key for r in final) == Counter(("adder", "py", i) for i in range(n))
    # no rollout was blamed on the agent: each verdict is the one its seed decides (my_agent
    # writes the good solution for an even seed, the buggy one for an odd seed)
    assert all(r.status == "completed" for r in final)
    assert [r.meta["seed"] for r in final] == [derive_seed(0, "adder", "py", i) for i in range(n)]
    assert [r.passes for r in final] == [r.meta["seed"] % 2 == 0 for r in final]
    assert len({r.passes for r in final}) == 2  # both outcomes occur: the check can fail


def test_a_node_without_the_agents_variable_is_refused_in_one_line(
        cluster: LocalRayCluster, setup: tuple[Path, Path], tmp_path: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    # environment variables are not shipped: the driver has it, the nodes (their `ray start`) do not
    _ensure_second_node(cluster)
    suite_dir, _ = setup
    monkeypatch.setenv("RB_RAY_TEST_TOKEN", "secret-value")
    agents_file = tmp_path / "env.toml"
    agents_file.write_text(textwrap.dedent("""
        [[agents]]
        name = "needs-token"
        kind = "command"
        command = ["true"]
        [agents.env]
        TOKEN = "${RB_RAY_TEST_TOKEN}"
    """))
    settings = RunSettings(n=1, workers=2, executor="ray", executor_options={"ray": {"address": cluster.address}})
    with pytest.raises(UsageError) as info:
        run_suite(load_suite(suite_dir), load_agents(agents_file), tmp_path / "run", settings,
                  agents_file=agents_file)
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("Ray worker on node ")
    assert "RB_RAY_TEST_TOKEN is not set" in message and "`ray start`" in message
    assert "secret-value" not in message
    assert not read_records(tmp_path / "run")
