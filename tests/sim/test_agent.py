"""The simulated agent: configuration, behaviours, frequencies, determinism, implied rates.

The slow test at the end measures each ready profile for real (agent -> workspace -> hidden
tests in the sandbox -> bandit) and compares with ``implied_reliability``.
"""

from __future__ import annotations

import hashlib
import json
import math
import pickle
import queue
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from reliabench.agents.base import AGENT_KIND_REGISTRY, Agent, AgentContext, AgentRequest, AgentResult
from reliabench.agents.config import load_agents
from reliabench.errors import ConfigError, InvalidArgumentError, SuiteError
from reliabench.sim.agent import (
    SimulatedAgent,
    TaskReference,
    choose_behaviour,
    params_from_config,
    references_of,
    simulated_agent_factory,
)
from reliabench.sim.profiles import (
    BEHAVIOURS,
    DIFFICULTY_SPREAD,
    PROFILES,
    SimParams,
    behaviour_probabilities,
    get_profile,
    implied_reliability,
    implied_reliability_for_tasks,
    task_difficulty,
    task_success_probability,
)
from reliabench.tasks.suite import Task, load_suite

BUNDLED = Path(__file__).resolve().parents[2] / "src/reliabench/tasks/bundled/py30"

# --------------------------------------------------------------------------------------- #
# a small synthetic task (fast, independent of the bundled suite)
# --------------------------------------------------------------------------------------- #

STARTER = "def clamp(x, lo=0, hi=10):\n    raise NotImplementedError\n"
SOLUTION = '''"""Reference."""


def clamp(x, lo=0, hi=10):
    """Clamp x into [lo, hi]."""
    if lo > hi:
        raise ValueError("lo > hi")
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


class Box:
    def __init__(self, n):
        self.n = n + 1
'''
INSECURE = "import os\n\n\ndef clamp(x, lo=0, hi=10):\n    return eval(str(x))\n"


@dataclass(frozen=True)
class MiniTask:
    root: Path
    workspace: Path
    solution: Path
    variants: tuple[tuple[str, Path], ...]


def make_task(root: Path, *, with_variant: bool = True, solution: str = SOLUTION) -> MiniTask:
    (root / "workspace").mkdir(parents=True)
    (root / "workspace" / "mod.py").write_text(STARTER, encoding="utf-8")
    (root / "solution").mkdir()
    (root / "solution" / "mod.py").write_text(solution, encoding="utf-8")
    (root / "solution" / "data.txt").write_text("kept\n", encoding="utf-8")
    variants: tuple[tuple[str, Path], ...] = ()
    if with_variant:
        vdir = root / "variants" / "evil_eval"
        vdir.mkdir(parents=True)
        (vdir / "mod.py").write_text(INSECURE, encoding="utf-8")
        (vdir / "variant.toml").write_text(
            'kind = "insecure"\ncwe = [95]\ncaught_by = ["scanner"]\n', encoding="utf-8"
        )
        other = root / "variants" / "faster"
        other.mkdir(parents=True)
        (other / "mod.py").write_text(SOLUTION, encoding="utf-8")
        (other / "variant.toml").write_text('kind = "alternative"\n', encoding="utf-8")
        variants = (("evil_eval", vdir), ("faster", other))
    return MiniTask(root, root / "workspace", root / "solution", variants)


def run_agent(
    agent: SimulatedAgent, task: MiniTask, dest: Path, seed: int, task_id: str = "mini"
) -> AgentResult:
    """One rollout of ``agent`` on ``task`` (given the task's reference files if it has none)."""
    shutil.copytree(task.workspace, dest)
    if agent.references is None:  # no per-rollout state: a copy with references is the same agent
        agent = SimulatedAgent(agent.params, agent.name,
                               {task_id: TaskReference(task.solution, task.variants)})
    req = AgentRequest(task_id=task_id, prompt="clamp", workspace=dest, seed=seed, rollout=0,
                       timeout_s=5.0)
    return agent.run(req)


def read_tree(root: Path) -> dict[str, str]:
    return {p.relative_to(root).as_posix(): p.read_text() for p in sorted(root.rglob("*"))
            if p.is_file()}


def forced(behaviour: str, **kw: Any) -> SimParams:
    """Parameters that always produce ``behaviour``."""
    if behaviour == "correct":
        return SimParams(skill=1.0, **kw)
    if behaviour == "insecure":
        return SimParams(skill=1.0, p_insecure=1.0, **kw)
    shares = {"buggy": "p_mutation", "hang": "p_hang", "syntax_error": "p_syntax_error",
              "no_change": "p_no_change"}
    modes = {"p_mutation": 0.0, "p_hang": 0.0, "p_syntax_error": 0.0, "p_no_change": 0.0}
    modes[shares[behaviour]] = 1.0
    return SimParams(skill=0.0, **modes, **kw)  # type: ignore[arg-type]


def compiles(text: str) -> bool:
    try:
        compile(text, "<t>", "exec")
    except SyntaxError:
        return False
    return True


# --------------------------------------------------------------------------------------- #
# protocol, registry, honesty
# --------------------------------------------------------------------------------------- #


def test_registered_and_satisfies_protocol() -> None:
    assert AGENT_KIND_REGISTRY.get("simulated") is simulated_agent_factory
    agent = SimulatedAgent(get_profile("sim-careful"))
    assert isinstance(agent, Agent)
    assert agent.kind == "simulated"
    assert agent.simulated is True
    assert agent.name == "sim-careful"


def test_load_agents_builds_simulated_agents(tmp_path: Path) -> None:
    path = tmp_path / "agents.toml"
    path.write_text(
        '[[agents]]\nname = "a"\nkind = "simulated"\nprofile = "sim-hasty"\n\n'
        '[[agents]]\nname = "b"\nkind = "simulated"\nskill = 0.5\np_hang = 0.25\n',
        encoding="utf-8",
    )
    a, b = load_agents(path)
    assert isinstance(a, SimulatedAgent)
    assert isinstance(b, SimulatedAgent)
    assert a.name == "a"
    assert a.params == PROFILES["sim-hasty"]
    assert b.params.skill == 0.5
    assert b.params.p_mutation == pytest.approx(0.75)
    assert a.references is None  # loaded without a suite: no reference files


def test_the_factory_reads_reference_files_from_the_suite(tmp_path: Path) -> None:
    """The core hands no agent the reference files; the kind's factory takes them from the suite."""
    path = tmp_path / "agents.toml"
    path.write_text('[[agents]]\nname = "a"\nkind = "simulated"\nprofile = "sim-careful"\n',
                    encoding="utf-8")
    suite = load_suite(BUNDLED)
    (agent,) = load_agents(path, suite=suite)
    assert isinstance(agent, SimulatedAgent)
    assert agent.references == references_of(suite)
    task = suite.task("rle_codec")
    ref = agent.references["rle_codec"]
    assert ref.solution_dir == task.solution_dir
    assert ref.variants == tuple((v.name, v.dir) for v in task.variants)
    assert not {"solution_dir", "variants"} & {f for f in AgentRequest.__dataclass_fields__}
    ws = tmp_path / "ws"
    shutil.copytree(task.workspace_dir, ws)
    res = SimulatedAgent(forced("correct"), references=agent.references).run(
        AgentRequest("rle_codec", task.prompt, ws, seed=1, rollout=0, timeout_s=5.0))
    assert res.status == "completed"
    assert task.solution_dir is not None
    assert read_tree(ws) == {**read_tree(task.workspace_dir), **read_tree(task.solution_dir)}


def test_without_a_suite_every_rollout_says_why(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    res = SimulatedAgent(forced("correct")).run(AgentRequest("t", "p", ws, seed=1, rollout=0, timeout_s=1.0))
    assert res.status == "agent_error"
    assert "no suite was given when the agents were loaded" in res.log


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_every_result_says_simulated(tmp_path: Path, behaviour: str) -> None:
    task = make_task(tmp_path / "t")
    res = run_agent(SimulatedAgent(forced(behaviour)), task, tmp_path / "ws", seed=1)
    assert res.status == "completed"
    assert res.log.startswith("SIMULATED AGENT")
    assert res.meta["simulated"] is True
    assert res.meta["behaviour"] == behaviour
    # no model was called: no tokens and no cost to report (shown as n/a, never as $0)
    assert res.tokens is None and res.usd is None
    json.dumps(res.meta)  # stored on the record: must be JSON


# --------------------------------------------------------------------------------------- #
# what each behaviour writes
# --------------------------------------------------------------------------------------- #


def test_correct_copies_the_reference(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    run_agent(SimulatedAgent(forced("correct")), task, tmp_path / "ws", seed=3)
    assert read_tree(tmp_path / "ws") == read_tree(task.solution)


def test_insecure_copies_an_insecure_variant_without_its_toml(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    res = run_agent(SimulatedAgent(forced("insecure")), task, tmp_path / "ws", seed=3)
    files = read_tree(tmp_path / "ws")
    assert files["mod.py"] == INSECURE
    assert "variant.toml" not in files
    assert files["data.txt"] == "kept\n"
    assert res.meta["variant"] == "evil_eval"  # the "alternative" variant is never used
    assert res.meta["fallback"] is None


def test_insecure_without_variant_falls_back_to_correct_and_says_so(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", with_variant=False)
    res = run_agent(SimulatedAgent(forced("insecure")), task, tmp_path / "ws", seed=3)
    assert res.meta["behaviour"] == "correct"
    assert res.meta["intended_behaviour"] == "insecure"
    assert "no insecure variant" in res.meta["fallback"]
    assert "fallback" in res.log
    assert read_tree(tmp_path / "ws") == read_tree(task.solution)


def test_buggy_writes_a_compiling_mutant_and_records_sites(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    agent = SimulatedAgent(forced("buggy", mutations=2))
    res = run_agent(agent, task, tmp_path / "ws", seed=5)
    text = (tmp_path / "ws" / "mod.py").read_text()
    assert compiles(text)
    assert text != SOLUTION
    sites = res.meta["mutation_sites"]
    assert len(sites) == 2
    assert all(s["file"] == "mod.py" for s in sites)
    assert {"operator", "line", "col", "description"} <= set(sites[0])
    assert "AST mutation" in res.log


def test_buggy_without_mutation_site_falls_back_to_syntax_error(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t", solution="import os\n")
    res = run_agent(SimulatedAgent(forced("buggy")), task, tmp_path / "ws", seed=5)
    assert res.meta["behaviour"] == "syntax_error"
    assert res.meta["intended_behaviour"] == "buggy"
    assert "no mutation site" in res.meta["fallback"]
    assert not compiles((tmp_path / "ws" / "mod.py").read_text())


def test_hang_injects_infinite_loop_in_public_api(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    res = run_agent(SimulatedAgent(forced("hang")), task, tmp_path / "ws", seed=5)
    text = (tmp_path / "ws" / "mod.py").read_text()
    assert compiles(text)
    assert text.count("while True:") == 2
    assert res.meta["injected"] == ["mod.py:clamp:4", "mod.py:Box.__init__:16"]
    # and it really hangs: calling the function does not return within a second
    with pytest.raises(subprocess.TimeoutExpired):
        subprocess.run([sys.executable, "-c", "import mod; mod.clamp(1)"],
                       cwd=tmp_path / "ws", capture_output=True, timeout=1.0, check=False)


def test_syntax_error_does_not_compile(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    res = run_agent(SimulatedAgent(forced("syntax_error")), task, tmp_path / "ws", seed=5)
    assert not compiles((tmp_path / "ws" / "mod.py").read_text())
    assert res.meta["injected"]


def test_no_change_leaves_the_starter(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    run_agent(SimulatedAgent(forced("no_change")), task, tmp_path / "ws", seed=5)
    assert read_tree(tmp_path / "ws") == read_tree(task.workspace)


def test_no_solution_is_an_agent_error(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    req = AgentRequest("t", "p", ws, seed=1, rollout=0, timeout_s=1.0)
    res = SimulatedAgent(forced("correct"), references={"t": TaskReference(None)}).run(req)
    assert res.status == "agent_error"
    assert res.log.startswith("SIMULATED AGENT")
    assert "no reference solution; a simulated agent needs one" in res.log
    assert res.meta["simulated"] is True


# --------------------------------------------------------------------------------------- #
# determinism
# --------------------------------------------------------------------------------------- #


def test_same_seed_same_code_and_meta(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    agent = SimulatedAgent(get_profile("sim-flaky"))
    behaviours = set()
    for seed in range(25):
        a = run_agent(agent, task, tmp_path / f"a{seed}", seed=seed)
        b = run_agent(agent, task, tmp_path / f"b{seed}", seed=seed)
        assert read_tree(tmp_path / f"a{seed}") == read_tree(tmp_path / f"b{seed}")
        assert a.meta == b.meta
        assert a.log == b.log
        behaviours.add(a.meta["behaviour"])
    assert len(behaviours) >= 3  # and different seeds do differ


def test_agent_pickles_for_process_pools() -> None:
    agent = SimulatedAgent(get_profile("sim-flaky"), name="x")
    clone = pickle.loads(pickle.dumps(agent))
    assert (clone.name, clone.params) == ("x", agent.params)


def test_negative_and_huge_seeds_work(tmp_path: Path) -> None:
    task = make_task(tmp_path / "t")
    agent = SimulatedAgent(get_profile("sim-hasty"))
    for i, seed in enumerate((-1, 2**70 + 3)):
        assert run_agent(agent, task, tmp_path / f"w{i}", seed=seed).status == "completed"


# --------------------------------------------------------------------------------------- #
# behaviour frequencies against the configured probabilities (no test execution)
# --------------------------------------------------------------------------------------- #


def _within_binomial(count: int, n: int, p: float, z: float = 4.5) -> bool:
    # A count of n independent draws with probability p has sd sqrt(n p (1 - p)); 4.5 sd
    # (two-sided 7e-6) plus 1 for discreteness keeps this exact-seeded test far from flaky
    # while still catching any error in the drawing code larger than ~2 points at n = 6000.
    return abs(count - n * p) <= z * math.sqrt(n * p * (1 - p)) + 1


@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_behaviour_frequencies_match_probabilities(profile: str) -> None:
    params = get_profile(profile)
    n = 6000
    for task_id in ("interval_merge", "run_git_log", "roman_numerals"):
        probs = behaviour_probabilities(params, task_id)
        counts = Counter(
            choose_behaviour(params, task_id, np.random.default_rng(seed)) for seed in range(n)
        )
        for name in BEHAVIOURS:
            assert _within_binomial(counts[name], n, probs[name]), (task_id, name, counts)


def test_agent_frequencies_with_fallback_match(tmp_path: Path) -> None:
    # Whole agent, files included, on a task without insecure variant: the insecure share is
    # folded into "correct" exactly as behaviour_probabilities(has_insecure_variant=False) says.
    params = SimParams(skill=0.6, p_insecure=0.3, p_mutation=0.5, p_hang=0.2,
                       p_syntax_error=0.2, p_no_change=0.1)
    task = make_task(tmp_path / "t", with_variant=False)
    agent = SimulatedAgent(params)
    n = 400
    counts: Counter[str] = Counter()
    for seed in range(n):
        dest = tmp_path / "ws" / str(seed)
        counts[run_agent(agent, task, dest, seed=seed).meta["behaviour"]] += 1
        shutil.rmtree(dest)
    probs = behaviour_probabilities(params, "mini", has_insecure_variant=False)
    assert counts["insecure"] == 0
    for name in BEHAVIOURS:
        assert _within_binomial(counts[name], n, probs[name]), (name, counts, probs)


# --------------------------------------------------------------------------------------- #
# the task-difficulty model
# --------------------------------------------------------------------------------------- #


def test_difficulty_is_deterministic_uniform_and_spread() -> None:
    ids = [f"task_{i}" for i in range(2000)]
    d = np.array([task_difficulty(t) for t in ids])
    assert np.all((d >= -DIFFICULTY_SPREAD) & (d < DIFFICULTY_SPREAD))
    # uniform on [-2, 2): mean 0, sd 4 / sqrt(12) = 1.155
    assert abs(d.mean()) < 0.12
    assert abs(d.std() - 4 / math.sqrt(12)) < 0.06
    assert task_difficulty("x") == task_difficulty("x")
    digest = hashlib.sha256(b"x").digest()
    u = int.from_bytes(digest[:8], "big") / 2.0**64
    assert task_difficulty("x", 3.0) == pytest.approx(3.0 * (2 * u - 1))


def test_success_probability_formula_and_spread_across_tasks() -> None:
    params = get_profile("sim-hasty")
    tid = "semver_compare"
    logit = math.log(0.75 / 0.25)
    expected = 1 / (1 + math.exp(-(logit - task_difficulty(tid))))
    assert task_success_probability(params, tid) == pytest.approx(expected)
    probs = [task_success_probability(params, f"t{i}") for i in range(50)]
    assert max(probs) - min(probs) > 0.4  # tasks really differ: pass^k != pass@1
    assert task_success_probability(SimParams(skill=0.0), "t") == 0.0


# --------------------------------------------------------------------------------------- #
# implied rates
# --------------------------------------------------------------------------------------- #


def test_implied_reliability_worked_example() -> None:
    # spread 0: p_t = skill = 0.8 on every task; q = 0.25.
    # task a has a variant: pass 0.8, secure 0.8 * 0.75 = 0.6; task b has none: 0.8, 0.8.
    # means: pass 0.8, secure 0.7; buggy share (1 - 0.8) * 1.0 = 0.2.
    p = SimParams(skill=0.8, p_insecure=0.25, difficulty_spread=0.0)
    r = implied_reliability(p, ["a", "b"], {"a": True, "b": False})
    assert r.pass_at_1 == pytest.approx(0.8)
    assert r.secure_pass_at_1 == pytest.approx(0.7)
    assert r.buggy_rate == pytest.approx(0.2)
    assert [t.task_id for t in r.per_task] == ["a", "b"]
    # if the insecure code failed a functional test half of the time: a passes 0.8 * 0.875
    r = implied_reliability(p, ["a"], {"a": True}, insecure_fails_tests={"a": 0.5})
    assert r.pass_at_1 == pytest.approx(0.7)


def test_implied_reliability_by_profile_name_and_tasks() -> None:
    r = implied_reliability("sim-careful", ["x"], {})
    assert r.pass_at_1 == pytest.approx(task_success_probability(PROFILES["sim-careful"], "x"))


def test_implied_reliability_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="profile: unknown profile 'nope'"):
        implied_reliability("nope", ["x"], {})
    with pytest.raises(InvalidArgumentError, match="task_ids: expected at least one"):
        implied_reliability("sim-careful", [], {})
    with pytest.raises(InvalidArgumentError, match="insecure_fails_tests: expected values"):
        implied_reliability("sim-careful", ["x"], {}, insecure_fails_tests={"x": 2.0})
    with pytest.raises(InvalidArgumentError, match="profile_or_params: expected"):
        implied_reliability(3, ["x"], {})  # type: ignore[arg-type]


def test_profiles_are_clearly_ordered() -> None:
    ids = [f"t{i}" for i in range(30)]
    has = {t: i % 2 == 0 for i, t in enumerate(ids)}
    r = {name: implied_reliability(name, ids, has) for name in PROFILES}
    assert r["sim-careful"].pass_at_1 > r["sim-hasty"].pass_at_1 > r["sim-flaky"].pass_at_1
    gap = {n: x.pass_at_1 - x.secure_pass_at_1 for n, x in r.items()}
    assert gap["sim-hasty"] > 2 * gap["sim-careful"]
    assert gap["sim-hasty"] > gap["sim-flaky"]


# --------------------------------------------------------------------------------------- #
# configuration errors: one test per message
# --------------------------------------------------------------------------------------- #


def ctx(tmp_path: Path) -> AgentContext:
    return AgentContext(config_path=tmp_path / "agents.toml", table_index=2)


def config_error(tmp_path: Path, table: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as info:
        params_from_config({"name": "s", "kind": "simulated", **table}, ctx(tmp_path))
    return str(info.value)


def test_config_profile_and_overrides(tmp_path: Path) -> None:
    base = {"name": "s", "kind": "simulated"}
    p = params_from_config({**base, "profile": "sim-flaky"}, ctx(tmp_path))
    assert p == PROFILES["sim-flaky"]
    p = params_from_config({**base, "profile": "sim-flaky", "p_hang": 0.0}, ctx(tmp_path))
    assert p.name == "sim-flaky (modified)"
    assert p.p_hang == 0.0
    assert p.p_mutation == pytest.approx(0.7)  # the remainder
    p = params_from_config({**base, "skill": 0.7, "mutations": 3, "difficulty_spread": 0},
                           ctx(tmp_path))
    assert (p.name, p.skill, p.p_mutation, p.mutations, p.difficulty_spread) == (
        "custom", 0.7, 1.0, 3, 0.0)


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ({"profile": "sim-lazy"}, "agents[2].profile: unknown profile 'sim-lazy' (known: "),
        ({}, "agents[2].profile: give a profile (sim-careful, sim-hasty, sim-flaky) or at least"),
        ({"skill": 0.5, "p_hnag": 0.1}, "agents[2].p_hnag: unknown key for kind 'simulated'"),
        ({"skill": 1.5}, "agents[2].skill: expected a probability in [0, 1], got 1.5"),
        ({"skill": "high"}, "agents[2].skill: expected a number, got 'high'"),
        ({"skill": 0.5, "p_hang": 0.7, "p_no_change": 0.6},
         "agents[2].p_hang: p_hang + p_syntax_error + p_no_change = 1.3 exceeds 1"),
        ({"skill": 0.5, "p_mutation": 0.5}, "agents[2].p_mutation: p_mutation + p_hang + "
         "p_syntax_error + p_no_change must sum to 1"),
        ({"skill": 0.5, "mutations": 0}, "agents[2].mutations: expected an integer >= 1, got 0"),
        ({"skill": 0.5, "mutations": 99}, "agents[2].mutations: expected an integer in [1, 50]"),
        ({"skill": 0.5, "difficulty_spread": -1},
         "agents[2].difficulty_spread: expected a number >= 0, got -1"),
        ({"profile": 3}, "agents[2].profile: expected a string, got an integer"),
    ],
)
def test_config_errors(tmp_path: Path, table: dict[str, Any], message: str) -> None:
    msg = config_error(tmp_path, table)
    assert message in msg, msg
    assert msg.startswith(str(tmp_path / "agents.toml"))


def test_simparams_validation() -> None:
    with pytest.raises(InvalidArgumentError, match="p_insecure: expected a number in"):
        SimParams(skill=0.5, p_insecure=-0.1)
    with pytest.raises(InvalidArgumentError, match="must sum to 1"):
        SimParams(skill=0.5, p_hang=0.5)
    with pytest.raises(InvalidArgumentError, match="profile: unknown profile 'x'"):
        get_profile("x")


# --------------------------------------------------------------------------------------- #
# measured for real: each ready profile against implied_reliability (slow)
# --------------------------------------------------------------------------------------- #

TASKS_PER_PROFILE = 6
ROLLOUTS_PER_TASK = 20
WALL_S = 3.0  # the chosen references' tests take 0.4-0.7 s here; a hang is stopped after 3 s
# Cheap tasks (fast hidden tests), three with insecure variants and three without; any that
# is missing or whose reference fails is replaced by the next task of the same group.
PREFERRED = ("safe_path_join", "session_loader", "html_render",
             "semver_compare", "json_path_get", "duration_parse")
SLOTS = (3901, 3902)  # sandbox slots far from the runner's 0..workers-1 used by other tests
SURVIVAL_BOUND = 0.35  # measured 36/276 = 13% single-mutant survival on py30; 0.35 is generous


def _bundled_tasks() -> list[Task]:
    try:
        return list(load_suite(BUNDLED).tasks)
    except SuiteError:  # a task being written right now: use the ones that load
        from reliabench.tasks.suite import _load_task

        out = []
        for tdir in sorted((BUNDLED / "tasks").iterdir()):
            problems: list[str] = []
            t = _load_task(tdir, problems) if tdir.is_dir() else None
            if t is not None:
                out.append(t)
        return out


def _tree_hash(root: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(root.rglob("*")):
        if p.is_file() and "__pycache__" not in p.parts:
            h.update(p.relative_to(root).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    return h.hexdigest()


@dataclass(frozen=True)
class Verdict:
    passed: bool  # every functional hidden test passed (Rollout.passes)
    security_tests_ok: bool  # no security-marked hidden test failed
    status: str


class HiddenTests:
    """Runs the hidden tests via reliabench.hidden_tests.fresh in the sandbox, cached by workspace content.

    The outcome of a deterministic test suite is a function of the workspace's bytes, so
    rollouts that wrote identical files (every "correct" rollout of a task, for instance)
    share one real run: that is what keeps 360 rollouts within the time budget.
    """

    def __init__(self) -> None:
        from reliabench.sandbox import Limits, get_backend

        with warnings.catch_warnings():  # "no isolation" on hosts without namespaces: fine here
            warnings.simplefilter("ignore", RuntimeWarning)
            self.backend = get_backend("auto")
        self.limits = Limits(wall_s=WALL_S, cpu_s=WALL_S)
        self.expected: dict[str, Any] = {}
        self.cache: dict[tuple[str, str], Verdict] = {}
        self.slots: queue.Queue[int] = queue.Queue()
        for s in SLOTS:
            self.slots.put(s)

    def expect(self, task: Task) -> None:
        from reliabench.hidden_tests.fresh import collect_hidden_tests

        if task.id not in self.expected:
            self.expected[task.id] = collect_hidden_tests(
                task.workspace_dir, task.tests_dir, backend=self.backend, slot=SLOTS[0]
            )

    def _run(self, task: Task, ws: Path) -> Verdict:
        from reliabench.hidden_tests.fresh import run_hidden_tests

        slot = self.slots.get()
        try:
            run = run_hidden_tests(ws, task.tests_dir, expected=self.expected[task.id],
                                   backend=self.backend, limits=self.limits, slot=slot,
                                   starter=task.workspace_dir)
        finally:
            self.slots.put(slot)
        functional = [o for o in run.outcomes if not o.security]
        passed = (run.status == "completed" and bool(functional)
                  and all(o.outcome == "passed" for o in functional))
        sec_ok = all(o.outcome in ("passed", "skipped") for o in run.outcomes if o.security)
        return Verdict(passed, sec_ok, run.status)

    def run_many(self, jobs: list[tuple[Task, Path]]) -> list[Verdict]:
        keys = [(t.id, _tree_hash(ws)) for t, ws in jobs]
        todo: dict[tuple[str, str], tuple[Task, Path]] = {}
        for key, job in zip(keys, jobs, strict=True):
            if key not in self.cache and key not in todo:
                todo[key] = job
        with ThreadPoolExecutor(len(SLOTS)) as pool:
            results = list(pool.map(lambda j: self._run(*j), todo.values()))
        self.cache.update(zip(todo, results, strict=True))
        return [self.cache[k] for k in keys]


def _bandit_flagged(workspaces: list[Path]) -> set[Path]:
    """Workspaces with a bandit finding at reliabench's default threshold (high:medium)."""
    if not workspaces:
        return set()
    proc = subprocess.run(
        [sys.executable, "-m", "bandit", "-q", "-r", "-f", "json", "--severity-level", "high",
         "--confidence-level", "medium", *map(str, workspaces)],
        capture_output=True, text=True, check=False, timeout=300,
    )
    report = json.loads(proc.stdout)
    assert not report.get("errors"), report["errors"]
    flagged: set[Path] = set()
    for item in report["results"]:
        f = Path(item["filename"]).resolve()
        flagged.update(ws for ws in workspaces if ws.resolve() in f.parents)
    return flagged


@pytest.fixture(scope="module")
def measured_setup() -> Iterator[tuple[HiddenTests, list[Task], Path]]:
    pytest.importorskip("bandit")
    tasks = _bundled_tasks()
    if not tasks:
        pytest.skip("bundled suite not present")
    tests = HiddenTests()
    tmp = Path(tempfile.mkdtemp(prefix="rb-sim-measured-"))
    # Tasks: 3 with insecure variants and 3 without (PREFERRED first, then sorted ids), among
    # those whose reference passes its hidden tests here (a broken task is not our subject).
    tasks.sort(key=lambda t: (t.id not in PREFERRED, PREFERRED.index(t.id) if t.id in PREFERRED
                              else 0, t.id))
    with_v = [t for t in tasks if any(v.kind == "insecure" for v in t.variants)]
    without = [t for t in tasks if not any(v.kind == "insecure" for v in t.variants)]
    chosen: list[Task] = []
    for group in (with_v, without):
        picked = 0
        for t in group:
            if picked == TASKS_PER_PROFILE // 2 or t.solution_dir is None:
                continue
            tests.expect(t)
            ws = tmp / "ref" / t.id
            shutil.copytree(t.workspace_dir, ws)
            shutil.copytree(t.solution_dir, ws, dirs_exist_ok=True)
            (v,) = tests.run_many([(t, ws)])
            if v.passed and v.security_tests_ok:
                chosen.append(t)
                picked += 1
    if len(chosen) < 4:
        pytest.skip(f"only {len(chosen)} bundled tasks usable")
    try:
        yield tests, chosen, tmp
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["sim-careful", "sim-hasty", "sim-flaky"])
def test_measured_reliability_matches_implied(
    profile: str, measured_setup: tuple[HiddenTests, list[Task], Path]
) -> None:
    tests, tasks, tmp = measured_setup
    agent = SimulatedAgent(get_profile(profile), references={
        t.id: TaskReference(t.solution_dir, tuple((v.name, v.dir) for v in t.variants)) for t in tasks})
    p_index = sorted(PROFILES).index(profile)
    jobs: list[tuple[Task, Path]] = []
    metas: list[dict[str, Any]] = []
    for ti, task in enumerate(tasks):
        for r in range(ROLLOUTS_PER_TASK):
            ws = tmp / profile / task.id / str(r)
            shutil.copytree(task.workspace_dir, ws)
            assert task.solution_dir is not None
            res = agent.run(AgentRequest(
                task.id, task.prompt, ws, seed=100_000 * p_index + 1000 * ti + r, rollout=r,
                timeout_s=10.0))
            assert res.status == "completed"
            jobs.append((task, ws))
            metas.append(res.meta)
    verdicts = tests.run_many(jobs)
    flagged = _bandit_flagged([ws for (_, ws), v in zip(jobs, verdicts, strict=True)
                               if v.passed])
    n = len(jobs)
    passes = secure = survivors = 0
    by_behaviour: Counter[str] = Counter()
    for (task, ws), v, meta in zip(jobs, verdicts, metas, strict=True):
        b = meta["behaviour"]
        by_behaviour[b] += 1
        is_secure = v.passed and v.security_tests_ok and ws not in flagged
        passes += v.passed
        secure += is_secure
        # Per-rollout facts the model relies on (exact, not statistical):
        if b == "correct":
            assert v.passed, (task.id, meta)
            assert is_secure, (task.id, meta)
        elif b == "insecure":
            assert v.passed, (task.id, meta["variant"])
            assert not is_secure, (task.id, meta["variant"])
        elif b in ("hang", "syntax_error", "no_change"):
            assert not v.passed, (task.id, b)
        if b == "hang":
            assert v.status == "timeout", (task.id, v)
        if b == "buggy" and v.passed:
            survivors += 1
    implied = implied_reliability_for_tasks(profile, tasks)
    # Tolerance: the number of passes is a sum of n independent Bernoulli draws with the
    # per-task rates pass_t (20 rollouts per task), so its sd is sqrt(sum n_t pass_t (1 -
    # pass_t)); 4 sd (two-sided 6e-5) plus 1/n for discreteness. With 120 rollouts this is
    # at most 4 * 0.5 / sqrt(120) = 0.18, typically ~0.12.
    def tol(rates: list[float]) -> float:
        var = sum(ROLLOUTS_PER_TASK * p * (1 - p) for p in rates)
        return 4 * math.sqrt(var) / n + 1 / n

    pass_tol = tol([t.pass_rate for t in implied.per_task])
    sec_tol = tol([t.secure_pass_rate for t in implied.per_task])
    measured_pass, measured_secure = passes / n, secure / n
    survive_share = survivors / n
    print(
        f"\n{profile}: n={n} behaviours={dict(by_behaviour)} "
        f"pass measured={measured_pass:.3f} implied={implied.pass_at_1:.3f} (tol {pass_tol:.3f}) "
        f"secure measured={measured_secure:.3f} implied={implied.secure_pass_at_1:.3f} "
        f"(tol {sec_tol:.3f}) surviving mutants={survivors}/{by_behaviour['buggy']}"
    )
    # 1. The documented approximation, accounted exactly: without surviving mutants, the
    #    measured rates are unbiased estimates of the implied ones.
    assert abs(measured_pass - survive_share - implied.pass_at_1) <= pass_tol
    assert abs(measured_secure - survive_share - implied.secure_pass_at_1) <= sec_tol + 1e-12
    # 2. The raw measured rates within the tolerance, widened on the upper side by the
    #    largest bias the approximation allows (buggy_rate * SURVIVAL_BOUND).
    allowance = implied.buggy_rate * SURVIVAL_BOUND
    assert implied.pass_at_1 - pass_tol <= measured_pass <= implied.pass_at_1 + pass_tol + allowance
    assert (implied.secure_pass_at_1 - sec_tol <= measured_secure
            <= implied.secure_pass_at_1 + sec_tol + allowance)
    if by_behaviour["buggy"] >= 10:
        assert survivors <= SURVIVAL_BOUND * by_behaviour["buggy"]
