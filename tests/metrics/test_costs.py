"""Cost and time per agent (reliabench.metrics.costs) and how ``score`` shows them."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.metrics.analysis import score
from reliabench.metrics.costs import cost_summary
from reliabench.records import Cost, Rollout, write_jsonl
from reliabench.report import render_score


def recs() -> list[Rollout]:
    out = []
    # agent "a": 4 counted rollouts, 3 pass; usd 0.01 + 0.02 + 0.03 + 0.04 = 0.10 -> 30 passes/usd
    # seconds 30 each -> 2 minutes in all -> 1.5 passes per minute
    for i in range(4):
        out.append(Rollout("t", "a", i, verdict=i < 3,
                           cost=Cost(tokens=150, usd=0.01 * (i + 1), seconds=30.0, tokens_in=100,
                                     tokens_out=50, agent_s=25.0, test_s=5.0)))
    # an infra error: neither counted nor costed
    out.append(Rollout("t", "a", 4, verdict=False, status="infra_error",
                       cost=Cost(usd=9.0, seconds=999.0)))
    # agent "b": one rollout without usd -> per-dollar undefined; v1-style cost (seconds only)
    out.append(Rollout("t", "b", 0, verdict=True, cost=Cost(seconds=12.0)))
    out.append(Rollout("t", "b", 1, verdict=False, cost=Cost(seconds=12.0, usd=0.5)))
    # agent "c": nothing reported
    out.append(Rollout("t", "c", 0, verdict=True))
    return out


def test_cost_summary_math() -> None:
    a, b, c = cost_summary(recs())
    assert (a.agent, a.rollouts, a.passes) == ("a", 4, 3)
    assert a.usd.total == pytest.approx(0.10) and a.usd.reported == 4
    assert a.usd.mean == pytest.approx(0.025)
    assert a.passes_per_usd == pytest.approx(float(Fraction(3) / Fraction(1, 10)))  # 30
    assert a.passes_per_minute == pytest.approx(1.5)
    assert (a.agent_s.mean, a.test_s.mean, a.tokens_in.mean, a.tokens_out.mean) == (25, 5, 100, 50)
    assert b.usd.reported == 1 and b.passes_per_usd is None  # a partial sum would flatter b
    assert b.passes_per_minute == pytest.approx(1 / (24 / 60))
    assert b.agent_s.mean is None and b.agent_s.reported == 0
    assert not c.known and c.passes_per_minute is None


def test_score_json_and_table_show_costs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = score(recs(), (1,), n_resamples=0)
    doc = json.loads(render_score(report, "json"))
    by = {a["agent"]: a for a in doc["agents"]}
    assert by["a"]["infra_errors"] == 1 and by["a"]["rollouts"] == 4
    cost = by["a"]["cost"]
    assert cost["agent_s"] == {"mean": 25.0, "total": 100.0, "rollouts": 4}
    assert cost["tokens_in"]["mean"] == 100 and cost["tokens_out"]["mean"] == 50
    assert cost["passes_per_usd"] == pytest.approx(30.0)
    assert cost["passes_per_minute"] == pytest.approx(1.5)
    assert by["b"]["cost"]["passes_per_usd"] is None
    assert by["c"]["cost"] is None
    md = render_score(report, "markdown")
    table = render_score(report, "table", width=200)
    assert "cost and time per rollout" in table
    assert "30.00" in table and "1.50" in table
    assert "infra errors" in table and "rollouts lost to infrastructure" in md
    assert "| a | 25.0 | 5.00 | 100 | 50 | 0.0250 | 30.00 | 1.50 |" in md
    # the CLI: the same through a JSONL file
    p = tmp_path / "r.jsonl"
    write_jsonl(recs(), p)
    assert main(["score", str(p), "--format", "json", "--resamples", "0"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["agents"][0]["cost"]["usd"]["total"] == pytest.approx(0.10)


def test_no_cost_no_cost_table() -> None:
    report = score([Rollout("t", "a", 0, verdict=True)], (1,), n_resamples=0)
    assert "cost and time" not in render_score(report, "table")
    assert "infrastructure" not in render_score(report, "table")
