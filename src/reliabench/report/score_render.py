"""Render a ``ScoreReport`` as a rich table, JSON, CSV or Markdown; ``score``'s output with its sections.

All formats show the same figures; simulated agents are marked in every one of them.
:func:`render_score_result` renders a whole :class:`~reliabench.studies.scoring.ScoreResult`:
the figures, then the harness-noise and adaptive sections of a run that has them, macro vs
strict on repository tasks (JSON: the keys ``harness_noise``, ``flaky_policy``, ``adaptive`` and
``repository``; CSV: the figures alone), and the figures per group of tasks of ``score --by``
(:mod:`reliabench.report.group_tables`; JSON: the key ``by``; CSV: the same rows with a
``group`` column, the whole score's rows first with an empty group).
"""

from __future__ import annotations

import csv
import io
import json
import math
from typing import Any

from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import AgentSummary, Estimate, ScoreReport
from reliabench.metrics.costs import AgentCost, CostFigure
from reliabench.report.adaptive_tables import score_adaptive_json, score_adaptive_lines
from reliabench.report.group_tables import group_csv_rows, group_grid, group_scores_json
from reliabench.report.marks import SIMULATED_MARK, agent_label, with_simulated_note
from reliabench.report.noise_tables import score_noise_json, score_noise_lines
from reliabench.report.numbers import estimate_cell
from reliabench.report.resolution_tables import render_resolution, resolution_to_json
from reliabench.studies.scoring import ScoreResult

__all__ = ["FORMATS", "cost_to_json", "render_score", "render_score_result", "score_result_to_json",
           "score_to_json"]

FORMATS = ("table", "json", "csv", "markdown")


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _est_json(e: Estimate) -> dict[str, Any]:
    return {"value": _num(e.value), "ci_low": _num(e.ci_low), "ci_high": _num(e.ci_high),
            "tasks": e.tasks, "excluded_tasks": e.excluded}


def _fig_json(f: CostFigure) -> dict[str, Any]:
    return {"mean": f.mean, "total": f.total, "rollouts": f.reported}


def cost_to_json(c: AgentCost | None) -> dict[str, Any] | None:
    """The ``cost`` object of one agent in ``score --format json`` (None: nothing reported)."""
    if c is None or not c.known:
        return None
    return {
        "rollouts": c.rollouts,
        **{name: _fig_json(getattr(c, name)) for name in _COST_FIGS},
        "passes_per_usd": c.passes_per_usd,
        "passes_per_minute": c.passes_per_minute,
    }


_COST_FIGS = ("agent_s", "test_s", "seconds", "tokens_in", "tokens_out", "tokens", "usd")


def score_to_json(report: ScoreReport) -> dict[str, Any]:
    """The JSON document of ``reliabench score --format json``."""
    costs = {c.agent: c for c in report.costs}
    return {
        "agents": [
            {
                "agent": a.agent,
                "simulated": a.simulated,
                "tasks": a.tasks,
                "rollouts": a.rollouts,
                "infra_errors": a.infra_errors,
                "rollouts_per_task": {"min": a.min_n, "max": a.max_n},
                "metrics": {name: _est_json(a.metrics[name]) for name in report.metric_names},
                "cost": cost_to_json(costs.get(a.agent)),
            }
            for a in report.agents
        ],
        "settings": {
            "k": list(report.ks),
            "confidence": report.confidence,
            "bootstrap_resamples": report.n_resamples,
            "seed": report.seed,
            "security_threshold": str(report.threshold) if report.security else None,
            "ci_method": "percentile bootstrap over tasks",
        },
        "notes": list(with_simulated_note(report.notes, report.counts.simulated)),
    }


def _per_k_columns(report: ScoreReport) -> list[str]:
    cols = ["reliability@{k}", "pass^{k}", "misapplied_pass@{k}", "inflation@{k}"]
    if report.security:
        cols.append("security_adjusted_reliability@{k}")
    return cols


def _per_agent_columns(report: ScoreReport) -> list[str]:
    cols = ["strict_resolution_rate", "macro_test_pass_rate"]
    if report.security:
        cols.append("insecure_share_of_passing")
    return cols


_HEADERS = {
    "reliability@{k}": "reliability@k",
    "pass^{k}": "pass^k",
    "misapplied_pass@{k}": "misapplied pass@k",
    "inflation@{k}": "inflation",
    "security_adjusted_reliability@{k}": "sec-adj reliability@k",
    "strict_resolution_rate": "strict resolution (1st rollout)",
    "macro_test_pass_rate": "macro test pass rate (1st rollout)",
    "insecure_share_of_passing": "insecure share of passing",
}


def _n_text(a: AgentSummary) -> str:
    return str(a.min_n) if a.min_n == a.max_n else f"{a.min_n}-{a.max_n}"


def _grid(report: ScoreReport) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of the two tables every text format shows."""
    ci = report.n_resamples > 0
    per_k = _per_k_columns(report)
    head1 = ["agent", "tasks", "n", "k", *(_HEADERS[c] for c in per_k)]
    rows1 = []
    for a in report.agents:
        for i, k in enumerate(report.ks):
            first = i == 0
            rows1.append([agent_label(a.agent, a.simulated) if first else "",
                          str(a.tasks) if first else "", _n_text(a) if first else "", str(k),
                          *(estimate_cell(a.metrics[c.format(k=k)], ci) for c in per_k)])
    per_agent = _per_agent_columns(report)
    head2 = ["agent", *(_HEADERS[c] for c in per_agent)]
    rows2 = [[agent_label(a.agent, a.simulated), *(estimate_cell(a.metrics[c], ci) for c in per_agent)]
             for a in report.agents]
    title1 = "reliability@k over n independent rollouts vs the misapplied pass@k (n = tests of one rollout)"
    if report.security:
        title1 += f"; security threshold {report.threshold}"
    grids = [(title1, head1, rows1), ("single-submission figures", head2, rows2)]
    head0 = ["agent", "infra errors"]
    rows0 = [[agent_label(a.agent, a.simulated), str(a.infra_errors)] for a in report.agents]
    costs = {c.agent: c for c in report.costs if c.known}
    if costs:
        head3 = ["agent", "agent s", "test s", "tokens in", "tokens out", "usd",
                 "passes per usd", "passes per min"]
        rows3 = []
        for a in report.agents:
            c = costs.get(a.agent)
            if c is None:
                continue
            rows3.append([agent_label(a.agent, a.simulated), _mean(c.agent_s, 1),
                          _mean(c.test_s, 2), _mean(c.tokens_in, 0), _mean(c.tokens_out, 0),
                          _mean(c.usd, 4), _opt(c.passes_per_usd, 2),
                          _opt(c.passes_per_minute, 2)])
        grids.append(("cost and time per rollout (means; infra errors excluded)", head3, rows3))
    if any(a.infra_errors for a in report.agents):
        grids.append(("rollouts lost to infrastructure errors (excluded from n)", head0, rows0))
    return grids


def _opt(x: float | None, digits: int) -> str:
    return "n/a" if x is None else f"{x:.{digits}f}"


def _mean(f: CostFigure, digits: int) -> str:
    if f.mean is None:
        return "n/a"
    return f"{f.mean:,.{digits}f}" if digits else f"{f.mean:,.0f}"


def _rich_table(report: ScoreReport, console: Console,
                grids: list[tuple[str, list[str], list[list[str]]]] | None = None) -> None:
    pct = round(report.confidence * 100)
    for title, header, rows in _grid(report) if grids is None else grids:
        table = Table(title=title, box=box.SIMPLE_HEAVY, title_justify="left",
                      caption=f"value [{pct}% bootstrap CI over tasks]" if report.n_resamples else None,
                      caption_justify="left")
        narrow = console.width < 150
        for i, h in enumerate(header):
            # in a narrow terminal, long headers break where they can instead of being cut
            text = h.replace("@", "\n@", 1) if narrow and "@" in h else h
            table.add_column(text, justify="left" if i == 0 else "right", no_wrap=i == 0 and not narrow)
        for row in rows:
            label = Text(row[0])
            if row[0].endswith(SIMULATED_MARK):
                label = Text(row[0][: -len(SIMULATED_MARK)])
                if narrow:
                    label.append("\n")
                label.append(SIMULATED_MARK, style="yellow")
            table.add_row(label, *row[1:])
        console.print(table)
    if grids is not None:
        return
    for note in with_simulated_note(report.notes, report.counts.simulated):
        console.print(Text(f"note: {note}", style="dim"))


def _rows(report: ScoreReport) -> list[dict[str, Any]]:
    rows = []
    for a in report.agents:
        for name in report.metric_names:
            e = a.metrics[name]
            rows.append({"agent": a.agent, "simulated": a.simulated, "metric": name,
                         "value": _num(e.value), "ci_low": _num(e.ci_low), "ci_high": _num(e.ci_high),
                         "tasks": e.tasks, "excluded_tasks": e.excluded})
    return rows


def _markdown_grids(grids: list[tuple[str, list[str], list[list[str]]]]) -> list[str]:
    lines: list[str] = []
    for title, header, rows in grids:
        lines += [f"**{title}**", ""]
        lines.append("| " + " | ".join(header) + " |")
        lines.append("|" + "|".join([":---"] + ["---:"] * (len(header) - 1)) + "|")
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
        lines.append("")
    return lines


def _markdown(report: ScoreReport) -> str:
    lines = _markdown_grids(_grid(report))
    if report.n_resamples:
        lines.append(f"Values with {round(report.confidence * 100)}% percentile-bootstrap CIs over tasks.")
    lines += [f"- note: {n}" for n in with_simulated_note(report.notes, report.counts.simulated)]
    return "\n".join(lines).rstrip() + "\n"


def render_score(report: ScoreReport, fmt: str = "table", *, width: int | None = None,
                 color: bool = False) -> str:
    """Render ``report`` in ``fmt`` (``table``, ``json``, ``csv`` or ``markdown``)."""
    if fmt == "json":
        return json.dumps(score_to_json(report), indent=2) + "\n"
    if fmt == "csv":
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=["agent", "simulated", "metric", "value", "ci_low",
                                                 "ci_high", "tasks", "excluded_tasks"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(_rows(report))
        return buf.getvalue()
    if fmt == "markdown":
        return _markdown(report)
    if fmt == "table":
        console = Console(file=io.StringIO(), width=width or 160, force_terminal=color,
                          color_system="auto" if color else None, highlight=False)
        _rich_table(report, console)
        out = console.file
        assert isinstance(out, io.StringIO)
        return out.getvalue()
    raise InvalidArgumentError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")


def score_result_to_json(result: ScoreResult) -> dict[str, Any]:
    """The JSON document of ``reliabench score --format json``: the figures and the sections."""
    doc = score_to_json(result.report)
    if result.groups is not None:
        doc["by"] = group_scores_json(result.groups)
    if result.noise is not None:
        doc.update(score_noise_json(result.noise))
    if result.adaptive is not None:
        doc["adaptive"] = score_adaptive_json(result.adaptive)
    if result.repository is not None:
        doc["repository"] = resolution_to_json(result.repository)
    return doc


def render_score_result(result: ScoreResult, fmt: str = "table", *, width: int | None = None,
                        color: bool = False) -> str:
    """Render ``score``'s output in ``fmt``: :func:`render_score` and the run's sections."""
    if fmt == "json":
        return json.dumps(score_result_to_json(result), indent=2) + "\n"
    text = render_score(result.report, fmt, width=width, color=color)
    if fmt == "csv":
        return text if result.groups is None else _grouped_csv(result)
    if result.groups is not None:
        grids = [group_grid(result.groups)]
        if fmt == "markdown":
            text += "\n" + "\n".join(_markdown_grids(grids)).rstrip() + "\n"
        else:
            console = Console(file=io.StringIO(), width=width or 160, force_terminal=color,
                              color_system="auto" if color else None, highlight=False)
            _rich_table(result.report, console, grids)
            out = console.file
            assert isinstance(out, io.StringIO)
            text += out.getvalue()
    if result.noise is not None:
        text += "\n".join(score_noise_lines(result.noise)) + "\n"
    if result.adaptive is not None:
        text += "\n".join(score_adaptive_lines(result.adaptive, result.report.counts.simulated)) + "\n"
    if result.repository is not None:
        text += ("\n" if fmt == "markdown" else "") + render_resolution(result.repository, fmt, width=width,
                                                                        color=color)
    return text


def _grouped_csv(result: ScoreResult) -> str:
    """CSV of ``score --by``: the whole score's rows (empty ``group``), then each group's."""
    assert result.groups is not None
    buf = io.StringIO()
    fields = ["group", "agent", "simulated", "metric", "value", "ci_low", "ci_high", "tasks",
              "excluded_tasks", "coarse_tasks"]
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows({"group": "", "coarse_tasks": "", **row} for row in _rows(result.report))
    writer.writerows(group_csv_rows(result.groups))
    return buf.getvalue()
