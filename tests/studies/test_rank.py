"""reliabench.studies.rank: corrections, groups, rank intervals, two-level sampling, and simulations."""

from __future__ import annotations

import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from reliabench.cli import main
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import count_pairs, score
from reliabench.records import Rollout, write_jsonl
from reliabench.report.rank_figure import rank_figure_svg, rank_section
from reliabench.report.rank_tables import ranking_to_dict
from reliabench.studies.rank import adjust_p_values, consecutive_groups, rank_agents

FIXTURE = Path(__file__).parents[1] / "fixtures" / "swebench-leaderboard-synthetic.json"
FULL = (Path(__file__).resolve().parents[2].parent / "shared" / "data" / "public-results" / "swe-bench"
        / "leaderboard-verified-bash-only-per-instance.json")


def _records(outcomes: np.ndarray, names: list[str] | None = None, simulated: bool = False) -> list[Rollout]:
    """Records from a (tasks, agents, rollouts) boolean array."""
    t_n, a_n, n = outcomes.shape
    names = names or [f"a{j}" for j in range(a_n)]
    return [Rollout(f"t{t:03d}", names[j], i, verdict=bool(outcomes[t, j, i]), simulated=simulated)
            for t in range(t_n) for j in range(a_n) for i in range(n)]


def _simulate(rng: np.random.Generator, rates: np.ndarray, n: int) -> np.ndarray:
    """Outcomes (tasks, agents, n) with per-(task, agent) success rates ``rates``."""
    return rng.random((*rates.shape, n)) < rates[..., None]


# ----------------------------------------------------------------------------- corrections


def _holm_bruteforce(p: list[float], alpha: float) -> list[bool]:
    """Holm's step-down procedure as written in Holm (1979)."""
    order = sorted(range(len(p)), key=lambda i: p[i])
    reject = [False] * len(p)
    for step, i in enumerate(order):
        if p[i] > alpha / (len(p) - step):
            break
        reject[i] = True
    return reject


def _bh_bruteforce(p: list[float], alpha: float) -> list[bool]:
    """Benjamini-Hochberg step-up: reject the largest i with p_(i) <= i alpha / m and all below."""
    m = len(p)
    order = sorted(range(m), key=lambda i: p[i])
    largest = max((r + 1 for r, i in enumerate(order) if p[i] <= (r + 1) * alpha / m), default=0)
    cut = p[order[largest - 1]] if largest else -1.0
    return [x <= cut for x in p]


def test_adjusted_p_values_reject_exactly_like_the_procedures() -> None:
    rng = np.random.default_rng(3)
    for _ in range(300):
        m = int(rng.integers(1, 12))
        p = (rng.random(m) ** 3).round(4).tolist()  # rounded: ties happen
        for alpha in (0.01, 0.05, 0.2):
            holm = adjust_p_values(p, "holm")
            bh = adjust_p_values(p, "bh")
            assert list(holm <= alpha) == _holm_bruteforce(p, alpha)
            assert list(bh <= alpha) == _bh_bruteforce(p, alpha)
            assert np.all(bh <= holm + 1e-15) and np.all(holm >= np.asarray(p) - 1e-15)


def test_adjusted_p_values_exact_small_case() -> None:
    # p = (0.01, 0.04, 0.03), m = 3. Holm: sorted 0.01*3=0.03, 0.03*2=0.06, max(0.06, 0.04*1)=0.06.
    # BH: 0.04*3/3=0.04, 0.03*3/2=0.045 -> min with the next: 0.04, 0.01*3/1=0.03.
    assert adjust_p_values([0.01, 0.04, 0.03], "holm").tolist() == pytest.approx([0.03, 0.06, 0.06])
    assert adjust_p_values([0.01, 0.04, 0.03], "bh").tolist() == pytest.approx([0.03, 0.04, 0.04])
    with pytest.raises(InvalidArgumentError, match="correction must be one of holm, bh, got 'bonf'"):
        adjust_p_values([0.1], "bonf")  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match=r"p-values must lie in \[0, 1\]"):
        adjust_p_values([1.5], "holm")


def test_sign_flip_p_values_match_full_enumeration() -> None:
    from reliabench.metrics.stats import sign_flip_p_values

    rng = np.random.default_rng(12)
    d = rng.integers(-1, 2, size=(7, 5)).astype(float)  # 7 tasks, 5 columns (pairs)
    signs = np.array(list(itertools.product((-1.0, 1.0), repeat=7)))  # all 128 patterns
    exact = (np.abs(signs @ d) >= np.abs(d.sum(axis=0)) - 1e-12).mean(axis=0)
    mc = sign_flip_p_values(d, 40_000, np.random.default_rng(0), batch=7_000)
    assert np.allclose(mc, exact, atol=0.01)  # Monte Carlo sd <= 0.0025
    with pytest.raises(InvalidArgumentError, match="n_permutations must be >= 1, got 0"):
        sign_flip_p_values(d, 0, rng)


# ----------------------------------------------------------------------------- groups


def _groups_bruteforce(sep: np.ndarray) -> set[tuple[int, ...]]:
    n = sep.shape[0]
    ok = [(i, e) for i in range(n) for e in range(i, n)
          if not any(sep[a, b] for a in range(i, e + 1) for b in range(i, e + 1))]
    return {tuple(range(i, e + 1)) for i, e in ok
            if not any((i2 <= i and e <= e2) and (i2, e2) != (i, e) for i2, e2 in ok)}


def test_groups_are_the_maximal_runs_without_a_separated_pair() -> None:
    rng = np.random.default_rng(1)
    for _ in range(400):
        n = int(rng.integers(1, 8))
        upper = np.triu(rng.random((n, n)) < rng.random(), 1)
        sep = upper | upper.T
        groups = consecutive_groups(sep)
        assert set(groups) == _groups_bruteforce(sep)
        assert sorted(groups) == list(groups)  # top to bottom
        assert set(itertools.chain.from_iterable(groups)) == set(range(n))  # every agent in one


def test_groups_examples() -> None:
    assert consecutive_groups(np.zeros((3, 3), bool)) == ((0, 1, 2),)
    assert consecutive_groups(~np.eye(3, dtype=bool)) == ((0,), (1,), (2,))
    with pytest.raises(InvalidArgumentError, match="square matrix"):
        consecutive_groups(np.zeros((2, 3), bool))


# ----------------------------------------------------------------------------- rank_agents


def test_values_match_score_and_ranks_handle_ties() -> None:
    rng = np.random.default_rng(5)
    out = _simulate(rng, np.tile([0.7, 0.5, 0.5, 0.2], (30, 1)), 4)
    out[:, 2] = out[:, 1]  # a2 is a copy of a1: a tie
    recs = _records(out)
    r = rank_agents(recs, 2, n_resamples=500)
    rep = score(recs, [2], n_resamples=0)
    by = {a.agent: a.metrics["reliability@2"].value for a in rep.agents}
    for a in r.agents:
        assert a.value == pytest.approx(by[a.agent], abs=1e-12)
        assert a.ci_low <= a.value <= a.ci_high
        assert a.rank_low <= a.rank <= a.rank_high
    ranks = {a.agent: a.rank for a in r.agents}
    assert ranks["a1"] == ranks["a2"]  # competition ranking: ties share the better rank
    tie = next(p for p in r.pairs if {p.agent_a, p.agent_b} == {"a1", "a2"})
    assert tie.difference == 0.0 and tie.p_value == 1.0 and not tie.separated
    hat = rank_agents(recs, 2, metric="pass_hat", n_resamples=200)
    by_hat = {a.agent: a.metrics["pass^2"].value for a in rep.agents}
    assert {a.agent: a.value for a in hat.agents} == pytest.approx(by_hat)
    assert hat.metric_name == "pass^2"


def test_seeded_and_reproducible() -> None:
    recs = _records(_simulate(np.random.default_rng(2), np.tile([0.6, 0.5, 0.4], (25, 1)), 3))
    a = ranking_to_dict(rank_agents(recs, 1, n_resamples=300, seed=7, sampling="two-level"))
    b = ranking_to_dict(rank_agents(recs, 1, n_resamples=300, seed=7, sampling="two-level"))
    assert a == b
    assert set(a) >= {"agents", "groups"}
    assert set(a["agents"][0]) >= {"agent", "value", "ci_low", "ci_high", "rank", "rank_low", "rank_high"}


def test_excluded_tasks_and_notes() -> None:
    recs = _records(_simulate(np.random.default_rng(4), np.tile([0.6, 0.4], (10, 1)), 2))
    recs += [Rollout("extra", "a0", 0, verdict=True)]  # a1 never ran it
    r = rank_agents(recs, 1, n_resamples=200)
    assert r.tasks == 10 and r.excluded == 1
    assert any("1 of 11 task(s) left out" in n for n in r.notes)
    assert any("smallest p-value" not in n for n in r.notes)
    few = rank_agents(recs, 1, n_resamples=10)
    assert any("use at least 20 resamples" in n for n in few.notes)  # m=1 pair, alpha 0.05


def test_bad_arguments_name_the_parameter() -> None:
    recs = _records(np.ones((3, 2, 1), bool))
    cases = [({"k": 0}, "k must be an integer >= 1, got 0"),
             ({"metric": "mean"}, "metric must be one of reliability, pass_hat, got 'mean'"),
             ({"level": 1.0}, r"level must be in \(0, 1\), got 1.0"),
             ({"correction": "x"}, "correction must be one of holm, bh, got 'x'"),
             ({"sampling": "rollouts"}, "sampling must be one of tasks, two-level, got 'rollouts'"),
             ({"n_resamples": 0}, "n_resamples must be an integer >= 1, got 0"),
             ({"power": 1.2}, r"power must be in \(0, 1\), got 1.2"),
             ({"k": 2}, "no task where every agent has at least k=2 rollouts")]
    for kwargs, msg in cases:
        with pytest.raises(InvalidArgumentError, match=msg):
            rank_agents(recs, **kwargs)  # type: ignore[arg-type]
    with pytest.raises(InvalidArgumentError, match="at least 2 agents"):
        rank_agents([Rollout("t", "only", 0, verdict=True)])


def test_note_when_monte_carlo_error_straddles_the_decision() -> None:
    # 2 agents, 20 tasks where exactly one of them passes: 15 for a0, 5 for a1 (and 20 ties).
    # Exact sign-flip p = P(|Bin(20, 1/2) - 10| >= 5) = 0.0414: near alpha = 0.05
    out = np.zeros((40, 2, 1), bool)
    out[:15, 0] = True
    out[15:20, 1] = True
    recs = _records(out)
    few = rank_agents(recs, 1, n_resamples=200)  # Monte Carlo sd ~0.014: either side of 0.05
    assert any("1 pair(s) are within Monte Carlo error of the decision" in n for n in few.notes)
    assert few.pairs[0].borderline and few.gaps[0].borderline
    many = rank_agents(recs, 1, n_resamples=100_000)  # sd ~0.0006
    assert many.pairs[0].p_value == pytest.approx(0.0414, abs=0.003)
    assert many.pairs[0].separated and not many.pairs[0].borderline
    assert not any("Monte Carlo" in n for n in many.notes)


def test_tasks_needed_follows_the_formula() -> None:
    recs = _records(_simulate(np.random.default_rng(8), np.tile([0.7, 0.5], (40, 1)), 1))
    r = rank_agents(recs, 1, n_resamples=200, power=0.9)
    t = count_pairs(recs)
    d = (t.c[:, t.agents.index(r.gaps[0].upper)] - t.c[:, t.agents.index(r.gaps[0].lower)]).astype(float)
    z = sps.norm.ppf(1 - 0.05 / 2) + sps.norm.ppf(0.9)  # m = 1 pair
    assert r.gaps[0].tasks_needed == math.ceil(z * z * d.var(ddof=1) / d.mean() ** 2)


# ----------------------------------------------------------------------------- two-level sampling


def test_task_bootstrap_covers_rollout_noise_and_two_level_widens() -> None:
    """Two-stage model (task rates ~ Beta, n rollouts each): the task-only bootstrap's CI width
    matches the true sampling spread of the mean (both sources); two-level is wider."""
    rng = np.random.default_rng(11)
    t_n, n, sims = 40, 3, 150
    means, w_tasks, w_two = [], [], []
    for s in range(sims):
        base = rng.beta(1.2, 1.2, size=t_n)
        rates = np.stack([base, np.clip(base - 0.1, 0, 1)], axis=1)
        recs = _records(_simulate(rng, rates, n))
        r1 = rank_agents(recs, 1, n_resamples=400, seed=s)
        r2 = rank_agents(recs, 1, n_resamples=400, seed=s, sampling="two-level")
        a1 = next(a for a in r1.agents if a.agent == "a0")
        a2 = next(a for a in r2.agents if a.agent == "a0")
        means.append(a1.value)
        w_tasks.append(a1.ci_high - a1.ci_low)
        w_two.append(a2.ci_high - a2.ci_low)
        assert sum(x.rank_high - x.rank_low for x in r2.agents) >= sum(
            x.rank_high - x.rank_low for x in r1.agents)
    true_width = 2 * 1.96 * float(np.std(means, ddof=1))
    assert np.mean(w_tasks) == pytest.approx(true_width, rel=0.15)
    assert np.mean(w_two) > np.mean(w_tasks) * 1.03
    assert np.mean(np.array(w_two) > np.array(w_tasks)) > 0.8


def test_two_level_with_one_rollout_changes_nothing() -> None:
    recs = _records(_simulate(np.random.default_rng(9), np.tile([0.6, 0.4], (20, 1)), 1))
    a = rank_agents(recs, 1, n_resamples=300, seed=1)
    b = rank_agents(recs, 1, n_resamples=300, seed=1, sampling="two-level")
    assert [x.ci_low for x in a.agents] == [x.ci_low for x in b.agents]
    assert any("only tasks are resampled" in n for n in b.notes)


# ----------------------------------------------------------------------------- simulations


@pytest.mark.parametrize("correction", ["holm", "bh"])
def test_null_of_equal_agents_separates_no_pair_beyond_alpha(correction: str) -> None:
    """300 seeded simulations of 4 interchangeable agents: the share of simulations with ANY
    separated pair (family-wise error; under the complete null FDR = FWER) stays <= alpha."""
    rng = np.random.default_rng(2024)
    sims, alpha, hits = 300, 0.05, 0
    for s in range(sims):
        rates = np.repeat(rng.beta(0.8, 0.8, size=(30, 1)), 4, axis=1)  # tasks differ, agents do not
        r = rank_agents(_records(_simulate(rng, rates, 2)), 1, n_resamples=400, seed=s,
                        correction=correction)  # type: ignore[arg-type]
        hits += any(p.separated for p in r.pairs)
    # binomial(300, 0.05): mean 15, sd 3.8; allow 2.5 sd of Monte Carlo error above alpha
    assert hits / sims <= alpha + 2.5 * math.sqrt(alpha * (1 - alpha) / sims)


def test_known_gaps_are_recovered_at_the_expected_power() -> None:
    """Three agents 0.25 apart, independent outcomes, 60 tasks, one rollout each. Holm's power per
    adjacent pair lies between the Bonferroni z-test's and the unadjusted z-test's; a separated
    pair is never in the wrong order; the true order (three groups of one) comes out as often as
    the two powers imply."""
    q = np.array([0.8, 0.55, 0.3])
    t_n, sims, alpha = 60, 300, 0.05
    rng = np.random.default_rng(77)
    sep_counts = np.zeros(2)
    full = 0
    for s in range(sims):
        recs = _records(_simulate(rng, np.tile(q, (t_n, 1)), 1), names=["top", "mid", "low"])
        r = rank_agents(recs, 1, n_resamples=1000, seed=s)
        pairs = {(p.agent_a, p.agent_b): p for p in r.pairs}
        for p in r.pairs:
            if p.separated:  # never separated in the wrong direction
                assert ["top", "mid", "low"].index(p.agent_a) < ["top", "mid", "low"].index(p.agent_b)
        for i, (a, b) in enumerate((("top", "mid"), ("mid", "low"))):
            sep_counts[i] += pairs[a, b].separated if (a, b) in pairs else 0
        if r.groups == (("top",), ("mid",), ("low",)):
            full += 1
    m = 3
    lows = []
    for i in range(2):
        sd = math.sqrt(q[i] * (1 - q[i]) + q[i + 1] * (1 - q[i + 1]))
        effect = (q[i] - q[i + 1]) * math.sqrt(t_n) / sd
        low = sps.norm.cdf(effect - sps.norm.ppf(1 - alpha / (2 * m)))  # ~0.74
        high = sps.norm.cdf(effect - sps.norm.ppf(1 - alpha / 2))  # ~0.86
        share = sep_counts[i] / sims
        assert low - 0.08 <= share <= high + 0.08, (i, share, low, high)
        lows.append(low)
    # both adjacent gaps decisive (groups = the true order, one agent each): at least
    # P(A) + P(B) - 1 by the Bonferroni inequality, with the per-pair lower bounds (~0.48)
    assert full / sims >= lows[0] + lows[1] - 1 - 0.08


# ----------------------------------------------------------------------------- leaderboard data


def test_vendored_leaderboard_extract() -> None:
    from reliabench.importers import load_foreign

    res = load_foreign(FIXTURE)
    r = rank_agents(res.records, 1, n_resamples=10_000)
    values = [round(a.value, 3) for a in r.agents]
    assert values == [0.744, 0.742, 0.648, 0.102]
    assert [g.decisive for g in r.gaps] == [False, True, True]
    assert r.groups[0] == (r.agents[0].agent, r.agents[1].agent)  # the top two: not separable
    assert (r.agents[0].rank_low, r.agents[0].rank_high) == (1, 2)


@pytest.mark.skipif(not FULL.exists(), reason="public data not present (../shared)")
def test_full_leaderboard_study_numbers() -> None:
    """The numbers of docs/leaderboard-study.md (same command, same seed)."""
    from reliabench.importers import load_foreign

    records = load_foreign(FULL).records
    r = rank_agents(records, 1, n_resamples=100_000)
    assert len(r.agents) == 25 and r.tasks == 500 and len(r.pairs) == 300
    assert r.decisive_gaps == 4 and sum(p.separated for p in r.pairs) == 222 and len(r.groups) == 10
    assert [(p.agent_a, p.agent_b) for p in r.pairs if p.borderline] == [
        ("20250807_mini-v1.7.0_kimi-k2-instruct", "20250807_mini-v1.7.0_gpt-5-nano")]
    assert r.gaps[0].difference == pytest.approx(0.002) and r.gaps[0].tasks_needed == 605942
    assert [(a.rank_low, a.rank_high) for a in r.agents[:2]] == [(1, 2), (1, 2)]
    bh = rank_agents(records, 1, n_resamples=100_000, correction="bh")
    assert bh.decisive_gaps == 6 and sum(p.separated for p in bh.pairs) == 254


# ----------------------------------------------------------------------------- figure and CLI


def test_figure_marks_simulated_and_escapes() -> None:
    recs = _records(_simulate(np.random.default_rng(1), np.tile([0.9, 0.2], (20, 1)), 1),
                    names=["<x>", "y&z"], simulated=True)
    r = rank_agents(recs, 1, n_resamples=200)
    svg = rank_figure_svg(r)
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert "&lt;x&gt; [SIMULATED]" in svg and "y&amp;z [SIMULATED]" in svg
    assert svg.count("<circle") == 2
    assert "adjacent gaps are decisive" in rank_section(r)


def test_cli_rank_json_svg_and_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    svg = tmp_path / "fig" / "rank.svg"
    assert main(["rank", str(FIXTURE), "--format", "json", "--resamples", "2000", "--svg", str(svg)]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["correction"] == "holm" and doc["metric"] == "reliability@1" and doc["format"] == "swebench"
    assert len(doc["agents"]) == 4 and doc["groups"][0] == [a["agent"] for a in doc["agents"][:2]]
    assert svg.read_text().startswith("<svg")
    assert main(["rank", str(FIXTURE), "--correction", "bh", "--resamples", "500"]) == 0
    assert "Benjamini-Hochberg" in capsys.readouterr().out
    assert main(["rank", str(FIXTURE), "--leaderboard", "Lite"]) == 2
    assert "leaderboard must be one of bash-only, got 'Lite'" in capsys.readouterr().err
    jsonl = tmp_path / "r.jsonl"
    write_jsonl([Rollout("t", "a", 0, verdict=True)], jsonl)
    assert main(["rank", str(jsonl)]) == 2
    assert "at least 2 agents" in capsys.readouterr().err


def test_every_records_command_reads_a_foreign_source(capsys: pytest.CaptureFixture[str]) -> None:
    src = str(FIXTURE)
    for argv in (["score", src, "-k", "1", "--resamples", "50"],
                 ["compare", src, "--resamples", "50"],
                 ["proxy", src, "--resamples", "0"],
                 ["plan", "--pilot", src, "-k", "1", "--half-width", "0.05"],
                 ["audit", src, "--resamples", "50"],
                 ["rank", src, "--resamples", "50"]):
        code = main(argv)
        out = capsys.readouterr()
        if argv[0] == "plan":  # one rollout per task cannot fit a pilot: a clear usage error
            assert code == 2 and "needs at least 2 tasks with >= 2 rollouts" in out.err, out.err
        else:
            assert code == 0, (argv, out.err)
        # every one of them takes --leaderboard (a leaderboards file may hold several)
        code = main([*argv, "--leaderboard", "Lite"])
        err = capsys.readouterr().err
        assert code == 2 and "leaderboard must be one of bash-only, got 'Lite'" in err, (argv, err)
