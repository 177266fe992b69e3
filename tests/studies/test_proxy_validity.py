from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from reliabench.commands.proxy import command as proxy_command
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import count_pairs
from reliabench.records import Rollout, write_jsonl
from reliabench.report.proxy_tables import render_proxy
from reliabench.studies.proxy_validity import (
    ProxyStudy,
    _pair_spearman,
    _rowwise_kendall,
    _rowwise_spearman,
    proxy_study,
)


def pair_records(spec: dict[tuple[str, str], tuple[list[int], int]]) -> list[Rollout]:
    """(task, agent) -> (tests passed per rollout, tests per rollout)."""
    return [Rollout(task_id=t, agent=a, rollout=r, tests_total=total, tests_passed=got)
            for (t, a), (passed, total) in spec.items() for r, got in enumerate(passed)]


def perfect(n_tasks: int = 30, agents: tuple[str, ...] = ("a", "b", "c"), n: int = 10) -> list[Rollout]:
    # Pair (t, j) has c = (t + 3 j) % (n + 1) passing rollouts out of n; its first rollout
    # passes 100 + c of 110 tests when it is not a passing one: the fraction rises with c.
    spec = {}
    for t in range(n_tasks):
        for j, a in enumerate(agents):
            c = (t + 3 * j + j * j) % (n + 1)
            first = 110 if c == n else 100 + c
            passed = [first] + [110] * (c - (first == 110)) + [0] * (n - 1 - (c - (first == 110)))
            spec[(f"t{t:02d}", a)] = (passed, 110)
    return pair_records(spec)


def test_perfect_proxy_gives_rho_one() -> None:
    study = proxy_study(perfect(), k=1, n_resamples=300, seed=1)
    frac = study.get("first_fraction", "pairs", "spearman")
    assert frac.value == pytest.approx(1.0)
    assert frac.ci_low == pytest.approx(1.0)
    assert frac.ci_high == pytest.approx(1.0)
    assert frac.units == 90
    assert study.pairs == 90
    assert study.tasks == 30


def test_independent_proxy_gives_rho_near_zero() -> None:
    rng = np.random.default_rng(0)
    spec = {}
    for t in range(400):
        for a in ("a", "b", "c", "d", "e"):
            c = int(rng.integers(0, 11))
            ok = [20] * c + [0] * (10 - c)
            rng.shuffle(ok)
            ok[0] = int(rng.integers(0, 20))  # the first rollout: an independent fraction, never passing
            spec[(f"t{t}", a)] = (ok, 20)
    study = proxy_study(pair_records(spec), k=1, n_resamples=300, seed=2)
    rho = study.get("first_fraction", "pairs", "spearman")
    # 2000 independent pairs: sd of rho ~ 1 / sqrt(2000) = 0.022
    assert abs(rho.value) < 0.09
    assert rho.ci_low < 0.0 < rho.ci_high or abs(rho.value) < 0.05


def test_point_estimates_are_scipys() -> None:
    recs = perfect()
    rng = np.random.default_rng(3)
    noisy = [Rollout(task_id=r.task_id, agent=r.agent, rollout=r.rollout, tests_total=110,
                     tests_passed=int(rng.integers(90, 111)) if r.rollout == 0 else r.tests_passed)
             for r in recs]
    study = proxy_study(noisy, k=1, n_resamples=0)
    table = count_pairs(noisy)
    frac = (table.first_passed / table.first_total).ravel()
    rel = (table.c / table.n).ravel()
    rho = study.get("first_fraction", "pairs", "spearman")
    assert rho.value == pytest.approx(sps.spearmanr(frac, rel).statistic)
    assert rho.pvalue == pytest.approx(sps.spearmanr(frac, rel).pvalue)
    agent_frac = (table.first_passed / table.first_total).mean(axis=0)
    agent_rel = (table.c / table.n).mean(axis=0)
    assert study.get("first_fraction", "agents", "kendall").value == pytest.approx(
        sps.kendalltau(agent_frac, agent_rel).statistic)
    assert [a.reliability for a in study.agents] == pytest.approx(agent_rel)
    assert np.isnan(rho.ci_low)
    assert study.n_resamples == 0


def test_deterministic_per_seed_and_ci_brackets() -> None:
    recs = perfect(agents=("a", "b", "c", "d"))
    rng = np.random.default_rng(4)
    recs = [Rollout(task_id=r.task_id, agent=r.agent, rollout=r.rollout, tests_total=110,
                    tests_passed=int(rng.integers(95, 111)) if r.rollout == 0 else r.tests_passed)
            for r in recs]
    a = proxy_study(recs, n_resamples=400, seed=7)
    b = proxy_study(recs, n_resamples=400, seed=7)
    c = proxy_study(recs, n_resamples=400, seed=8)
    assert a == b
    assert a.correlations != c.correlations
    for corr in a.correlations:
        if not np.isnan(corr.value):
            assert corr.ci_low <= corr.ci_high


def test_accepts_a_count_table_and_k_leaves_pairs_out() -> None:
    spec = {("t1", "a"): ([5, 5, 0], 5), ("t2", "a"): ([5, 0], 5), ("t1", "b"): ([4, 5, 5], 5),
            ("t2", "b"): ([5, 5, 5], 5)}
    recs = pair_records(spec)
    study = proxy_study(count_pairs(recs), k=3, n_resamples=0)
    assert study.pairs == 3
    assert any("fewer than k=3" in n for n in study.notes)
    assert study == proxy_study(recs, k=3, n_resamples=0)


def test_verdict_only_records_and_constant_input_give_nan_without_warnings() -> None:
    recs = [Rollout(task_id=f"t{t}", agent=a, rollout=r, verdict=True)
            for t in range(3) for a in ("a", "b") for r in range(2)]
    study = proxy_study(recs, n_resamples=50)  # every value is 1: rank correlation undefined
    for corr in study.correlations:
        assert np.isnan(corr.value)
        assert np.isnan(corr.pvalue)
    assert study.get("first_fraction", "pairs", "spearman").units == 0
    assert any("without test counts" in n for n in study.notes)
    assert "nan" in render_proxy(study)


def test_argument_validation() -> None:
    recs = perfect(n_tasks=3)
    for kwargs, msg in (
        ({"k": 0}, "k must be an integer >= 1, got 0"),
        ({"confidence": 1.5}, r"confidence must be in \(0, 1\), got 1.5"),
        ({"n_resamples": -1}, "n_resamples must be an integer >= 0, got -1"),
        ({"seed": -2}, "seed must be an integer >= 0, got -2"),
    ):
        with pytest.raises(InvalidArgumentError, match=msg):
            proxy_study(recs, **kwargs)
    with pytest.raises(InvalidArgumentError, match="records is empty"):
        proxy_study([])
    with pytest.raises(InvalidArgumentError, match="no correlation for proxy='x'"):
        proxy_study(recs, n_resamples=0).get("x", "pairs", "spearman")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.integers(0, 6), st.integers(0, 3)), min_size=2,
                max_size=25))
def test_weighted_spearman_equals_scipy_on_expanded_data(rows: list[tuple[int, int, int]]) -> None:
    x = np.array([r[0] for r in rows], float)
    y = np.array([r[1] for r in rows], float)
    w = np.array([[r[2]] for r in rows], float)
    got = _pair_spearman(x, y, w)[0]
    xe, ye = np.repeat(x, w[:, 0].astype(int)), np.repeat(y, w[:, 0].astype(int))
    if xe.size < 2 or np.ptp(xe) == 0 or np.ptp(ye) == 0:
        assert np.isnan(got)
    else:
        assert got == pytest.approx(sps.spearmanr(xe, ye).statistic, abs=1e-12)


def test_rowwise_statistics_equal_scipy() -> None:
    rng = np.random.default_rng(5)
    x = rng.integers(0, 4, (6, 9)).astype(float)
    y = rng.random((6, 9))
    x[0, 3] = np.nan
    y[2, 5] = np.nan
    taus = _rowwise_kendall(x, y)
    rhos = _rowwise_spearman(x, y)
    for i in range(6):
        ok = ~(np.isnan(x[i]) | np.isnan(y[i]))
        assert taus[i] == pytest.approx(sps.kendalltau(x[i][ok], y[i][ok]).statistic)
        assert rhos[i] == pytest.approx(sps.spearmanr(x[i][ok], y[i][ok]).statistic)


def test_render_formats() -> None:
    study = proxy_study(perfect(), n_resamples=20)
    assert isinstance(study, ProxyStudy)
    doc = json.loads(render_proxy(study, "json"))
    assert doc["k"] == 1
    assert len(doc["correlations"]) == 6
    assert len(doc["agents"]) == 3
    assert render_proxy(study, "csv").splitlines()[0].startswith("proxy,level,statistic,value")
    md = render_proxy(study, "markdown")
    assert "| first_fraction | pairs | spearman |" in md
    table = render_proxy(study, "table")
    assert "Proxy study" in table
    assert "reliability@1" in table
    with pytest.raises(InvalidArgumentError, match="fmt must be one of"):
        render_proxy(study, "html")


def test_cli(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    write_jsonl(perfect(), path)
    result = CliRunner().invoke(proxy_command, [str(path), "-k", "2", "--resamples", "50"])
    assert result.exit_code == 0, result.output
    assert "reliability@2" in result.output
    assert "first_verdict" in result.output
    result = CliRunner().invoke(proxy_command, [str(path), "--format", "json", "--resamples", "0"])
    assert json.loads(result.output)["n_resamples"] == 0
    result = CliRunner().invoke(proxy_command, [str(tmp_path / "missing.jsonl")])
    assert result.exit_code != 0
