"""Tables for papers (markdown, LaTeX, CSV), pinned by golden files in tests/golden/.

Regenerate after an intended change with ``RELIABENCH_UPDATE_GOLDEN=1 pytest tests/report/test_tables.py``
and review the diff.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import score
from reliabench.records import Finding, Rollout, TestOutcome, write_jsonl
from reliabench.report.tables import latex_escape, render_tables

GOLDEN = Path(__file__).parents[1] / "golden"
UPDATE = os.environ.get("RELIABENCH_UPDATE_GOLDEN") == "1"


def records() -> list[Rollout]:
    """3 tasks x 3 agents x n=4 with known c: a 'careful' agent, a LaTeX-hostile name, a simulated one."""
    passes = {("careful", "t_1"): 4, ("careful", "t_2"): 3, ("careful", "t_3"): 4,
              ("a_b & 50%", "t_1"): 2, ("a_b & 50%", "t_2"): 0, ("a_b & 50%", "t_3"): 4,
              ("sim", "t_1"): 1, ("sim", "t_2"): 1, ("sim", "t_3"): 0}
    bad = Finding("bandit", "B602", "high", "high", 78, "m.py", 1, "shell=True")
    out = []
    for (agent, task), c in passes.items():
        for i in range(4):
            ok = i < c
            tests = tuple(TestOutcome(f"test_{j}", "passed" if ok or j else "failed") for j in range(3))
            out.append(Rollout(task, agent, i, tests=tests, simulated=agent == "sim",
                               findings=(bad,) if agent == "sim" and i == 0 else ()))
    return out


@pytest.mark.parametrize(("fmt", "name"), [("markdown", "tables.md"), ("latex", "tables.tex"),
                                           ("csv", "tables.csv")])
def test_tables_match_golden(fmt: str, name: str) -> None:
    text = render_tables(score(records(), [1, 2, 4], n_resamples=200, seed=0), fmt)
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert text == path.read_text(encoding="utf-8")


def test_leaderboard_values_are_the_estimator() -> None:
    rows = list(csv.DictReader(io.StringIO(render_tables(score(records(), [1, 2], n_resamples=0), "csv"))))
    by = {(r["agent"], r["metric"]): r for r in rows if r["table"] == "leaderboard"}
    # careful: c/n = 4/4, 3/4, 4/4 -> reliability@1 = mean(1, 3/4, 1) = 11/12
    assert float(by[("careful", "reliability@1")]["value"]) == pytest.approx(11 / 12)
    # reliability@2 of c=3 of 4: 1 - C(1,2)/C(4,2) = 1; of c=2: 1 - C(2,2)/C(4,2) = 5/6; of c=1: 1/2
    assert float(by[("a_b & 50%", "reliability@2")]["value"]) == pytest.approx((5 / 6 + 0 + 1) / 3)
    assert float(by[("sim", "reliability@2")]["value"]) == pytest.approx((1 / 2 + 1 / 2 + 0) / 3)
    order = [r["agent"] for r in rows if r["table"] == "leaderboard" and r["metric"] == "reliability@1"]
    assert order == ["careful", "a_b & 50%", "sim"]
    per_task = [r for r in rows if r["table"] == "per_task"]
    assert {(r["agent"], r["task"], r["c"], r["n"]) for r in per_task} >= {("careful", "t_2", "3", "4")}


def test_latex_escapes_and_markdown_marks_simulated() -> None:
    rep = score(records(), [1], n_resamples=0)
    tex = render_tables(rep, "latex")
    assert r"a\_b \& 50\%" in tex and r"t\_1" in tex and "a_b & 50%" not in tex
    assert tex.count(r"\begin{tabular}") == 2 and r"\toprule" in tex
    assert latex_escape("\\^~{}$#") == r"\textbackslash{}\textasciicircum{}\textasciitilde{}\{\}\$\#"
    md = render_tables(rep, "markdown")
    assert "sim [SIMULATED]" in md and "| careful | 3 | 4 |" in md
    with pytest.raises(InvalidArgumentError, match="format must be one of markdown, latex, csv, got 'xml'"):
        render_tables(rep, "xml")


def test_report_command_writes_tables(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "r.jsonl"
    write_jsonl(records(), src)
    out = tmp_path / "t.tex"
    assert main(["report", str(src), "--format", "latex", "-k", "1,2,4", "--resamples", "200",
                 "-o", str(out)]) == 0
    assert out.read_text() == (GOLDEN / "tables.tex").read_text()
    assert main(["report", str(src), "--format", "markdown", "-k", "1,2,4", "--resamples", "200"]) == 0
    assert capsys.readouterr().out == (GOLDEN / "tables.md").read_text()
