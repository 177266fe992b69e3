"""Renderers: the HTML report is self-contained and marks simulated agents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import score
from reliabench.records import Finding, Rollout, TestOutcome
from reliabench.report import render_score
from reliabench.report.html import render_html, write_html_report
from reliabench.studies.rank import rank_for_report


def records() -> list[Rollout]:
    f = Finding("bandit", "B602", "high", "high", 78, "m.py", 3, "shell")
    out = []
    for t in range(4):
        for i in range(5):
            tests = tuple(TestOutcome(f"x{j}", "passed" if (i + j + t) % 4 else "failed") for j in range(6))
            out.append(Rollout(f"t{t}", "sim<b>", i, tests=tests, simulated=True,
                               findings=(f,) if i == 0 else ()))
            out.append(Rollout(f"t{t}", "real", i, verdict=i % 2 == 0))
    return out


def test_html_is_self_contained_and_escaped(tmp_path: Path) -> None:
    rep = score(records(), [1, 2, 5], n_resamples=200)
    text = render_html(rep, title="demo & test", ranking=rank_for_report(rep))
    assert text.startswith("<!doctype html>")
    assert "<script" not in text
    assert not re.search(r"(src|href)=[\"']https?://", text)  # nothing fetched from the network
    assert "sim&lt;b&gt; <span class=\"sim\">[SIMULATED]</span>" in text
    assert "demo &amp; test" in text
    assert text.count("<svg") == 4  # three metric figures and the rank intervals
    assert "<h2>Ranking by reliability@1</h2>" in text
    assert "sim&lt;b&gt; [SIMULATED]</text>" in text  # the rank figure marks simulated agents too
    assert "CWE-78" in text
    path = write_html_report(rep, tmp_path / "sub" / "r.html")
    assert path.read_text().startswith("<!doctype html>")
    assert [p.name for p in (tmp_path / "sub").iterdir()] == ["r.html"]  # no temp file left


def test_text_formats_mark_simulated() -> None:
    rep = score(records(), [1], n_resamples=0)
    for fmt in ("table", "markdown"):
        assert "[SIMULATED]" in render_score(rep, fmt)
    assert '"simulated": true' in render_score(rep, "json")
    assert "True" in render_score(rep, "csv")
    with pytest.raises(InvalidArgumentError, match="format must be one of"):
        render_score(rep, "xml")


def test_simulate_html_with_sweep_figures(tmp_path: Path) -> None:
    from reliabench.cli import main

    out = tmp_path / "sim.html"
    code = main(["simulate", "--resamples", "50", "--sweep", "rollouts=5,10", "--html", str(out)])
    assert code == 0
    text = out.read_text()
    assert "<h2>Sweeps</h2>" in text and "sweep of rollouts" in text
    assert text.count("<svg") == 5  # three standard figures, the rank intervals and one sweep
    assert "[SIMULATED]" in text


def test_score_html_option_writes_per_task_counts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from reliabench.cli import main
    from reliabench.records import write_jsonl

    src = tmp_path / "r.jsonl"
    write_jsonl(records(), src)
    out = tmp_path / "r.html"
    assert main(["score", str(src), "-k", "1,2", "--resamples", "50", "--html", str(out)]) == 0
    text = out.read_text()
    assert "Per task: passing rollouts / rollouts" in text
    # t0 of the real agent: rollouts 0, 2, 4 pass (verdict i % 2 == 0) -> 3/5
    assert "<td>t0</td>" in text and "3/5" in text
    assert f"HTML report: {out}" in capsys.readouterr().err
