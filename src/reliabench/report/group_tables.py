r"""The figures per group of tasks (``score --by language|tag``), in every format.

:class:`~reliabench.studies.scoring.GroupScores` is computed by ``studies.scoring``; this module
only renders it: one table of one row per (group, agent, k) -- the group's tasks, how many of
them have *coarse* outcomes (one per rollout: the per-test figures leave them out, marked), n,
reliability@k, pass^k and the misapplied pass@k, each with its bootstrap interval over the
group's tasks -- as rows for the terminal and Markdown (:func:`group_grid`), JSON
(:func:`group_scores_json`), CSV rows (:func:`group_csv_rows`), LaTeX (:func:`group_latex`) and
the HTML report's section (:func:`group_section_html`).

Example:
    >>> from reliabench.records import Rollout
    >>> from reliabench.studies.scoring import TaskLabels, group_scores
    >>> recs = [Rollout("t1", "a", 0, verdict=True), Rollout("t2", "a", 0, verdict=False)]
    >>> g = group_scores(recs, {"t1": TaskLabels("go"), "t2": TaskLabels("rust")}, "language", [1],
    ...                  n_resamples=0)
    >>> title, head, rows = group_grid(g)
    >>> rows[0][:6]
    ['go', '1', '0', 'a', '1', '1']
"""

from __future__ import annotations

import html
import math
from typing import Any

from reliabench.metrics.analysis import AgentSummary
from reliabench.report.marks import agent_label, agent_label_html
from reliabench.report.numbers import estimate_cell
from reliabench.studies.scoring import GroupScores

__all__ = ["group_csv_rows", "group_grid", "group_latex", "group_scores_json", "group_section_html"]

_METRICS = (("reliability@{k}", "reliability@k"), ("pass^{k}", "pass^k"),
            ("misapplied_pass@{k}", "misapplied pass@k"))


def _title(groups: GroupScores) -> str:
    return (f"reliability@k by {groups.by} (each group: mean over its tasks, CIs over its tasks; "
            "coarse = tasks with one outcome per rollout, left out of misapplied pass@k)")


def _lines(groups: GroupScores) -> list[tuple[list[str], AgentSummary | None, list[str]]]:
    """Per row: the group's cells (empty after its first row), the agent (its first row), the rest."""
    out: list[tuple[list[str], AgentSummary | None, list[str]]] = []
    for g in groups.groups:
        ci = g.report.n_resamples > 0
        first = True
        for a in g.report.agents:
            n = str(a.min_n) if a.min_n == a.max_n else f"{a.min_n}-{a.max_n}"
            for i, k in enumerate(g.report.ks):
                lead = [g.group, str(len(g.tasks)), str(g.coarse_tasks)] if first else ["", "", ""]
                figures = [estimate_cell(a.metrics[m.format(k=k)], ci) for m, _ in _METRICS]
                out.append((lead, a if i == 0 else None, [n if i == 0 else "", str(k), *figures]))
                first = False
    return out


def group_grid(groups: GroupScores) -> tuple[str, list[str], list[list[str]]]:
    """(title, header, rows) of the groups' table, for the terminal and Markdown."""
    head = [groups.by, "tasks", "coarse", "agent", "n", "k", *(h for _, h in _METRICS)]
    rows = [[*lead, agent_label(a.agent, a.simulated) if a else "", *rest]
            for lead, a, rest in _lines(groups)]
    return _title(groups), head, rows


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def group_scores_json(groups: GroupScores) -> dict[str, Any]:
    """The ``by`` object of ``score --format json``: one entry per group, its agents' figures."""
    out = []
    for g in groups.groups:
        agents = []
        for a in g.report.agents:
            metrics = {name: {"value": _num(e.value), "ci_low": _num(e.ci_low), "ci_high": _num(e.ci_high),
                              "tasks": e.tasks, "excluded_tasks": e.excluded}
                       for name, e in a.metrics.items()}
            agents.append({"agent": a.agent, "simulated": a.simulated, "tasks": a.tasks,
                           "rollouts": a.rollouts, "infra_errors": a.infra_errors, "metrics": metrics})
        out.append({"group": g.group, "tasks": len(g.tasks), "task_ids": list(g.tasks),
                    "coarse_tasks": g.coarse_tasks, "agents": agents, "notes": list(g.report.notes)})
    return {"by": groups.by, "groups": out, "unlabelled_tasks": list(groups.unlabelled)}


def group_csv_rows(groups: GroupScores) -> list[dict[str, Any]]:
    """Long-format rows (group, agent, metric, value, interval, tasks, excluded tasks, coarse tasks)."""
    rows = []
    for g in groups.groups:
        for a in g.report.agents:
            for name, e in a.metrics.items():
                rows.append({"group": g.group, "agent": a.agent, "simulated": a.simulated, "metric": name,
                             "value": _num(e.value), "ci_low": _num(e.ci_low), "ci_high": _num(e.ci_high),
                             "tasks": e.tasks, "excluded_tasks": e.excluded, "coarse_tasks": g.coarse_tasks})
    return rows


def group_latex(groups: GroupScores, escape: Any) -> list[str]:
    """The groups' table as LaTeX lines (``booktabs``); ``escape`` escapes a cell."""
    title, head, rows = group_grid(groups)
    out = ["\\begin{table}[t]", "\\centering", "\\small",
           "\\begin{tabular}{lrrl" + "r" * (len(head) - 4) + "}", "\\toprule",
           " & ".join(escape(h) for h in head) + " \\\\", "\\midrule"]
    out += [" & ".join(escape(c) for c in row) + " \\\\" for row in rows]
    out += ["\\bottomrule", "\\end{tabular}", f"\\caption{{{escape(title)}.}}",
            f"\\label{{tab:reliabench-by-{escape(groups.by)}}}", "\\end{table}", ""]
    return out


def group_section_html(groups: GroupScores) -> str:
    """The HTML report's section: the groups' table (escaped), with the unlabelled tasks named."""
    title, head, _ = group_grid(groups)
    cells = []
    for lead, a, rest in _lines(groups):
        agent = agent_label_html(a.agent, a.simulated) if a else ""
        tds = [html.escape(c) for c in lead] + [agent] + [html.escape(c) for c in rest]
        cells.append("<tr>" + "".join(f"<td>{c}</td>" for c in tds) + "</tr>")
    header = "".join(f"<th>{html.escape(h)}</th>" for h in head)
    by = html.escape(groups.by)
    note = ""
    if groups.unlabelled:
        note = f'<p class="note">Not in any group (no {by}): {html.escape(", ".join(groups.unlabelled))}</p>'
    return (f'<h2 id="by-{by}">By {by}</h2><p class="note">{html.escape(title)}</p>'
            f'<table><tr>{header}</tr>{"".join(cells)}</table>{note}')
