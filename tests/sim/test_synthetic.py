from __future__ import annotations

import json
import math
import sys
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from reliabench.cli import main
from reliabench.errors import ConfigError, InvalidArgumentError
from reliabench.metrics.analysis import score
from reliabench.records import read_jsonl
from reliabench.sim.command import command as simulate_command
from reliabench.sim.command import parse_sweep

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

from reliabench.sim.sweep_tables import render_sweep
from reliabench.sim.synthetic import (
    GENERATOR,
    PARAMETERS,
    SimulationConfig,
    default_config,
    generate,
    load_config,
    run_simulation,
    sweep,
    to_records,
)

DOCS = Path(__file__).resolve().parents[2] / "docs" / "simulate.md"


def small(**changes: object) -> SimulationConfig:
    return default_config().replace(**{"tasks": 20, "agents": 3, "rollouts": 5, **changes})


def iid(p: float, tests: int, **changes: object) -> SimulationConfig:
    """No spread, no core failures, no edge tests: tests_passed ~ Binomial(tests, p)."""
    return default_config().replace(**{
        "tests_min": tests, "tests_max": tests, "edge_fraction": 0.0, "test_pass_prob": p,
        "skill_min": 0.0, "skill_max": 0.0, "difficulty_sd": 0.0, "interaction_sd": 0.0,
        "rollout_sd": 0.0, "core_prob": 1.0, **changes})


# ------------------------------------------------------------------------------ the config


def test_default_toml_sets_every_parameter_exactly() -> None:
    text = resources.files("reliabench.sim").joinpath("simulate_default.toml").read_text("utf-8")
    assert list(tomllib.loads(text)) == list(PARAMETERS)
    assert default_config().to_dict() == tomllib.loads(text)


def test_every_parameter_is_documented() -> None:
    doc = DOCS.read_text(encoding="utf-8")
    for name in PARAMETERS:
        assert f"`{name}`" in doc, name


def test_load_config_overrides_a_subset(tmp_path: Path) -> None:
    f = tmp_path / "c.toml"
    f.write_text("tasks = 7\nrollouts = 3\n")
    cfg = load_config(f)
    assert (cfg.tasks, cfg.rollouts, cfg.agents) == (7, 3, default_config().agents)
    assert load_config(None) == default_config()


@pytest.mark.parametrize(
    ("text", "key", "fragment"),
    [
        ("taskz = 3\n", "taskz", "unknown key"),
        ("tasks = 0\n", "tasks", "tasks must be >= 1, got 0"),
        ("tasks = 2.5\n", "tasks", "must be an integer"),
        ("tasks = true\n", "tasks", "must be an integer"),
        ("test_pass_prob = 1.5\n", "test_pass_prob", "in [0, 1], got 1.5"),
        ("rollout_sd = -1\n", "rollout_sd", ">= 0"),
        ("edge_pass_prob = 'high'\n", "edge_pass_prob", "must be a number"),
        ("tests_min = 50\ntests_max = 10\n", "tests_max", "tests_max must be >= tests_min=50"),
        ("skill_min = 1.0\nskill_max = 0.0\n", "skill_max", "skill_max must be >= skill_min"),
        ("seed = -1\n", "seed", "seed must be >= 0"),
        ("[section]\ntasks = 3\n", "section", "unknown key"),
    ],
)
def test_config_errors_name_file_and_key(tmp_path: Path, text: str, key: str, fragment: str) -> None:
    f = tmp_path / "bad.toml"
    f.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(f)
    assert info.value.path == str(f)
    assert info.value.field == key
    assert fragment in str(info.value)
    assert str(f) in str(info.value)


def test_config_file_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_config(tmp_path / "missing.toml")
    bad = tmp_path / "bad.toml"
    bad.write_text("tasks = = 3\n")
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_config(bad)


def test_size_guard_and_replace_errors() -> None:
    with pytest.raises(InvalidArgumentError, match="tasks x agents x rollouts must be <="):
        default_config().replace(tasks=10**6, agents=100, rollouts=100)
    with pytest.raises(InvalidArgumentError, match="unknown simulation parameter 'nope'"):
        default_config().replace(nope=1)
    with pytest.raises(InvalidArgumentError, match=r"core_prob must be in \[0, 1\], got 2.0"):
        default_config().replace(core_prob=2.0)
    with pytest.raises(InvalidArgumentError, match="core_prob must be finite"):
        default_config().replace(core_prob=math.nan)


# ------------------------------------------------------------------------------ generation


def test_deterministic_per_seed() -> None:
    cfg = small()
    a, b, c = generate(cfg, seed=3), generate(cfg, seed=3), generate(cfg, seed=4)
    assert np.array_equal(a.tests_passed, b.tests_passed)
    assert np.array_equal(a.tests_total, b.tests_total)
    assert not np.array_equal(a.tests_passed, c.tests_passed)
    assert np.array_equal(generate(cfg).tests_passed, generate(cfg, seed=cfg.seed).tests_passed)


def test_blocks_do_not_change_the_draws_of_earlier_tasks() -> None:
    # Each block of tasks has its own stream: adding agents changes blocks, not determinism.
    cfg = default_config().replace(tasks=300, agents=100, rollouts=100)  # several blocks
    bench = generate(cfg, seed=1)
    assert bench.tests_passed.shape == (300, 100, 100)
    assert np.array_equal(bench.tests_passed[-5:], generate(cfg, seed=1).tests_passed[-5:])


def test_bad_seed() -> None:
    with pytest.raises(InvalidArgumentError, match="seed must be an integer >= 0, got -1"):
        generate(small(), seed=-1)
    with pytest.raises(InvalidArgumentError, match="config must be a SimulationConfig"):
        generate({"tasks": 1})  # type: ignore[arg-type]


def test_shapes_bounds_and_names() -> None:
    cfg = small(tests_min=3, tests_max=9)
    bench = generate(cfg, seed=0)
    assert bench.tests_passed.shape == (20, 3, 5)
    assert bench.tests_passed.dtype == np.int32
    assert ((bench.tests_total >= 3) & (bench.tests_total <= 9)).all()
    assert ((bench.tests_passed >= 0) & (bench.tests_passed <= bench.tests_total[:, None, None])).all()
    assert (bench.edge_tests <= bench.tests_total).all()
    assert bench.task_ids[0] == "sim-task-0000"
    assert bench.agent_ids == ("sim-agent-00", "sim-agent-01",
                                                                        "sim-agent-02")
    assert np.allclose(bench.skill, [cfg.skill_min, 0.0, cfg.skill_max])


def test_iid_case_matches_binomial_expectations() -> None:
    # tests_passed ~ Binomial(T=20, p=0.95): E[fraction] = 0.95, P(all pass) = 0.95**20 = 0.3585.
    # 200 tasks x 2 agents x 50 rollouts = 20000 rollouts: sd of the all-pass share ~ 0.0034,
    # sd of the mean fraction ~ 0.0003; tolerances are about 4 sd.
    bench = generate(iid(0.95, 20, tasks=200, agents=2, rollouts=50), seed=11)
    assert abs(bench.tests_passed.mean() / 20 - 0.95) < 0.002
    assert abs(bench.passed.mean() - 0.95**20) < 0.015
    # through the analysis layer: misapplied pass@1 = first rollout's fraction (200 x 2 draws,
    # sd ~ 0.0024); reliability@1 = c/n per task (sd ~ 0.0034).
    report = score(to_records(bench), (1,), n_resamples=0)
    for agent in report.agents:
        assert abs(agent.metrics["misapplied_pass@1"].value - 0.95) < 0.012
        assert abs(agent.metrics["reliability@1"].value - 0.95**20) < 0.025


def test_variance_of_passed_counts_is_binomial_without_correlation() -> None:
    # Var[P] = T p (1 - p) = 40 * 0.9 * 0.1 = 3.6 without any rollout-level correlation ...
    flat = generate(iid(0.9, 40, tasks=100, agents=2, rollouts=100), seed=2).tests_passed
    assert abs(flat.var() - 3.6) < 0.25
    # ... and strictly larger with a rollout factor shared by the tests of one rollout.
    corr = generate(iid(0.9, 40, tasks=100, agents=2, rollouts=100, rollout_sd=1.0), seed=2).tests_passed
    assert corr.var() > 2 * 3.6


def test_core_and_edge_components() -> None:
    # core always wrong: every test passes with broken_pass_prob, skills do not matter.
    broken = generate(iid(0.99, 30, core_prob=0.0, broken_pass_prob=0.5, tasks=100, rollouts=40), seed=0)
    assert abs(broken.tests_passed.mean() / 30 - 0.5) < 0.01
    # every test an edge-case test: pass probability edge_pass_prob.
    edge = generate(iid(0.99, 30, edge_fraction=1.0, edge_pass_prob=0.7, tasks=100, rollouts=40), seed=0)
    assert (edge.edge_tests == 30).all()
    assert abs(edge.tests_passed.mean() / 30 - 0.7) < 0.01
    # probabilities at the bounds are exact.
    assert (generate(iid(1.0, 10, tasks=5), seed=0).tests_passed == 10).all()
    assert (generate(iid(0.0, 10, tasks=5), seed=0).tests_passed == 0).all()


def test_records_are_marked_simulated_and_round_trip(tmp_path: Path) -> None:
    bench = generate(small(), seed=5)
    records = list(to_records(bench))
    assert len(records) == 20 * 3 * 5
    first = records[0]
    assert first.simulated
    assert first.meta["generator"] == GENERATOR
    assert first.meta["seed"] == 5
    assert first.tests_total == int(bench.tests_total[0])
    assert first.tests_passed == int(bench.tests_passed[0, 0, 0])
    assert sum(r.passes for r in records) == int(bench.passed.sum())
    from reliabench.records import write_jsonl

    path = tmp_path / "sim.jsonl"
    assert write_jsonl(records, path) == len(records)
    assert read_jsonl(path) == records


# ------------------------------------------------------------------------------ claim (1)


def test_default_config_reproduces_claim_1() -> None:
    """Paper: misapplied 0.96-0.98 vs corrected 0.00-0.12, inflation 0.85-0.97 (our reading: k=1)."""
    result = run_simulation(default_config(), ks=(1,), n_resamples=0)
    agents = result.report.agents
    assert len(agents) == 10
    assert all(a.simulated for a in agents)
    mis = [a.metrics["misapplied_pass@1"].value for a in agents]
    rel = [a.metrics["reliability@1"].value for a in agents]
    inf = [a.metrics["inflation@1"].value for a in agents]
    # the paper's figures are rounded to two decimals
    assert min(mis) >= 0.955
    assert max(mis) < 0.985
    assert min(rel) >= 0.0
    assert max(rel) < 0.125
    assert min(inf) >= 0.845
    assert max(inf) < 0.975
    # claim (2): a moderate rank correlation, far from a substitute (paper: rho = 0.417)
    rho = result.proxy.get("first_fraction", "pairs", "spearman").value
    assert 0.3 < rho < 0.55


def test_run_simulation_intervals_and_proxy_k() -> None:
    result = run_simulation(small(), ks=(1, 2), proxy_k=2, n_resamples=200, seed=1)
    est = result.report.agents[0].metrics["reliability@2"]
    assert est.ci_low <= est.value <= est.ci_high
    assert result.proxy.k == 2
    assert result.proxy.n_resamples == 200


# ------------------------------------------------------------------------------ sweeps


def test_sweep_moves_inflation_with_tests_and_k() -> None:
    base = small(tasks=60, rollouts=10)
    res = sweep(base, {"tests": [5, 200], "k": [1, 10]}, seed=0)
    by = {(p.param, p.value, p.k): p for p in res.points}
    assert set(by) == {("tests", 5.0, 1), ("tests", 200.0, 1), ("k", 1.0, 1), ("k", 10.0, 10)}
    # more tests per task: the misapplied figure stays high while reliability collapses
    assert by[("tests", 200.0, 1)].inflation_mean > by[("tests", 5.0, 1)].inflation_mean
    # larger k: reliability@k rises, so the gap narrows
    assert by[("k", 10.0, 10)].reliability_mean > by[("k", 1.0, 1)].reliability_mean
    p = by[("tests", 200.0, 1)]
    assert p.inflation_min <= p.inflation_mean <= p.inflation_max
    rows = res.to_rows()
    assert rows[0]["param"] == "tests"
    assert "rho_pairs" in rows[0]
    assert json.loads(render_sweep(res, "json"))["points"][0]["param"] == "tests"
    assert render_sweep(res, "csv").splitlines()[0].startswith("param,value,k,")
    assert "| param |" in render_sweep(res, "markdown")
    assert "inflation_mean" in render_sweep(res, "table")


def test_sweep_n_alias_and_errors() -> None:
    res = sweep(small(), {"n": [2, 4]})
    assert [p.value for p in res.points] == [2.0, 4.0]
    with pytest.raises(InvalidArgumentError, match="sweep parameter must be one of"):
        sweep(small(), {"bogus": [1]})
    with pytest.raises(InvalidArgumentError, match=r"expected integers, got 2\.5"):
        sweep(small(), {"tasks": [2.5]})
    with pytest.raises(InvalidArgumentError, match=r"sweep test_pass_prob=2.0: .*in \[0, 1\]"):
        sweep(small(), {"test_pass_prob": [2.0]})
    with pytest.raises(InvalidArgumentError, match="'seed' is not a model parameter"):
        sweep(small(), {"seed": [1]})


def test_parse_sweep() -> None:
    assert parse_sweep(("k=1,5", "tests=10")) == {"k": [1.0, 5.0], "tests": [10.0]}
    for bad, msg in (("k", "PARAM=v1"), ("k=", "PARAM=v1"), ("k=1,x", "not a number: 'x'")):
        with pytest.raises(InvalidArgumentError, match=msg):
            parse_sweep((bad,))
    with pytest.raises(InvalidArgumentError, match="given twice"):
        parse_sweep(("k=1", "k=2"))


# ------------------------------------------------------------------------------ CLI


@pytest.fixture
def small_config(tmp_path: Path) -> Path:
    f = tmp_path / "small.toml"
    f.write_text("tasks = 12\nagents = 3\nrollouts = 6\ntests_min = 10\ntests_max = 20\n")
    return f


def test_cli_table_then_proxy(small_config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["simulate", "--config", str(small_config), "--resamples", "50", "-k", "1,5"]) == 0
    out = capsys.readouterr().out
    assert "sim-agent-00" in out
    assert "[SIMULATED]" in out
    assert "Proxy study" in out
    assert out.index("Proxy study") > out.index("sim-agent-00")


def test_cli_records_json_and_sweep(small_config: Path, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    rec = tmp_path / "out.jsonl"
    code = main(["simulate", "--config", str(small_config), "--seed", "9", "--records", str(rec),
                 "--format", "json", "--resamples", "0", "--sweep", "k=1,2", "--sweep", "tests=5,50"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["seed"] == 9
    assert doc["config"]["tasks"] == 12
    assert {"score", "proxy", "sweep"} <= set(doc)
    assert len(doc["sweep"]["points"]) == 2 + 2 * 3  # k: one row per k; tests: one per value and k
    records = read_jsonl(rec)
    assert len(records) == 12 * 3 * 6
    assert all(r.simulated for r in records)


@pytest.mark.parametrize("fmt", ["csv", "markdown"])
def test_cli_other_formats(small_config: Path, fmt: str) -> None:
    result = CliRunner().invoke(simulate_command, ["--config", str(small_config), "--resamples", "0",
                                                   "--format", fmt, "--sweep", "n=3"])
    assert result.exit_code == 0, result.output
    assert "first_fraction" in result.output


def test_cli_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text("tasks = -3\n")
    assert main(["simulate", "--config", str(bad)]) == 2
    err = capsys.readouterr().err
    assert str(bad) in err
    assert "tasks" in err
    assert err.count("\n") == 1
    assert main(["simulate", "--sweep", "nonsense"]) == 2
    assert "--sweep" in capsys.readouterr().err
    assert main(["simulate", "-k", "0"]) == 2


def test_count_table_equals_count_pairs_of_the_records() -> None:
    import numpy as np

    from reliabench.metrics.analysis import count_pairs
    from reliabench.sim.synthetic import count_table, default_config, generate, to_records

    bench = generate(default_config().replace(tasks=7, agents=3, rollouts=4), seed=3)
    fast = count_table(bench)
    slow = count_pairs(to_records(bench))
    assert fast.tasks == slow.tasks and fast.agents == slow.agents
    for name in ("n", "c", "c_secure", "infra_errors", "first_total", "first_passed", "first_pass"):
        assert np.array_equal(getattr(fast, name), getattr(slow, name)), name
    assert fast.simulated == slow.simulated and fast.secure_known == slow.secure_known
