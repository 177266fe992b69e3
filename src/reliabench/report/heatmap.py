"""The task x agent heatmap of c/n: which tasks fail, for whom, and which pairs are flaky.

One row per task, one column per agent; a cell shows c/n (passing rollouts / rollouts) on a
red-to-green scale. A pair with 0 < c < n is *flaky* (the agent sometimes solves the task and
sometimes not) and is outlined and marked with a tilde. Rows carry their *difficulty* (1 minus
the mean of c/n over the agents that ran the task) and their *gap* (the largest minus the
smallest c/n over agents), so the page's buttons can sort by task, difficulty or gap.

Examples:
    >>> cell_color(1.0), cell_color(0.0)
    ('hsl(120,55%,82%)', 'hsl(0,55%,82%)')
"""

from __future__ import annotations

import html
from dataclasses import dataclass

import numpy as np

from reliabench.metrics.analysis import CountTable
from reliabench.report.marks import agent_label_html

__all__ = ["HeatmapRow", "cell_color", "heatmap_html", "heatmap_rows"]


@dataclass(frozen=True, slots=True)
class HeatmapRow:
    """One task of the heatmap.

    Attributes:
        task: The task id.
        cells: Per agent (in the table's order), ``(c, n)``; n = 0 where the agent did not run it.
        difficulty: 1 - mean of c/n over agents that ran the task (NaN if none did).
        gap: max - min of c/n over those agents (0 with one agent).
        flaky: Number of agents with 0 < c < n on this task.
    """

    task: str
    cells: tuple[tuple[int, int], ...]
    difficulty: float
    gap: float
    flaky: int


def cell_color(rate: float) -> str:
    """A light red (0) to green (1) background for a pass rate."""
    return f"hsl({round(120 * rate)},55%,82%)"


def heatmap_rows(t: CountTable) -> list[HeatmapRow]:
    """The heatmap's rows, in the table's task order."""
    rows = []
    for i, task in enumerate(t.tasks):
        cells = tuple((int(t.c[i, j]), int(t.n[i, j])) for j in range(len(t.agents)))
        rates = np.array([c / n for c, n in cells if n > 0])
        rows.append(HeatmapRow(
            task=task, cells=cells,
            difficulty=float(1 - rates.mean()) if rates.size else float("nan"),
            gap=float(rates.max() - rates.min()) if rates.size else 0.0,
            flaky=sum(1 for c, n in cells if 0 < c < n),
        ))
    return rows


def heatmap_html(t: CountTable, *, clickable: bool) -> str:
    """The heatmap section (a sortable table; cells open the explorer when ``clickable``)."""
    rows = heatmap_rows(t)
    n_flaky = sum(r.flaky for r in rows)
    head = "".join(
        f'<th class="hm-agent">{agent_label_html(a, a in t.simulated)}</th>'
        for a in t.agents)
    body = []
    for r in rows:
        cells = []
        for agent, (c, n) in zip(t.agents, r.cells, strict=True):
            if n == 0:
                cells.append('<td class="hm-empty" title="not run">-</td>')
                continue
            flaky = 0 < c < n
            cls = "hm" + (" flaky" if flaky else "") + (" click" if clickable else "")
            title = f"{r.task} / {agent}: {c} of {n} rollouts pass" + (" (flaky)" if flaky else "")
            cells.append(
                f'<td class="{cls}" style="background:{cell_color(c / n)}" '
                f'data-task="{html.escape(r.task)}" data-agent="{html.escape(agent)}" '
                f'title="{html.escape(title)}" tabindex="0">{"~" if flaky else ""}{c}/{n}</td>')
        diff = "" if r.difficulty != r.difficulty else f"{r.difficulty:.2f}"
        body.append(
            f'<tr data-task="{html.escape(r.task)}" data-difficulty="{diff or -1}" '
            f'data-gap="{r.gap:.4f}" data-flaky="{r.flaky}"><td class="hm-task">{html.escape(r.task)}</td>'
            f'{"".join(cells)}<td class="ci">{diff}</td><td class="ci">{r.gap:.2f}</td></tr>')
    hint = " Click a cell to see its rollouts." if clickable else ""
    return (
        '<h2 id="heatmap">Tasks x agents: passing rollouts / rollouts</h2>'
        f'<p class="note">{n_flaky} flaky pair(s) (0 &lt; c &lt; n, outlined and marked ~).{hint} '
        f'Colour: c/n from <span class="hm-key" style="background:{cell_color(0.0)}">0</span>'
        f'<span class="hm-key" style="background:{cell_color(0.5)}">0.5</span>'
        f'<span class="hm-key" style="background:{cell_color(1.0)}">1</span>.</p>'
        '<div class="hm-tools">sort by <button type="button" data-sort="task">task</button>'
        '<button type="button" data-sort="difficulty">difficulty</button>'
        '<button type="button" data-sort="gap">gap between agents</button>'
        '<label><input type="checkbox" id="hm-flaky-only"> flaky pairs only</label></div>'
        f'<table class="heatmap" id="hm-table"><thead><tr><th>task</th>{head}<th>difficulty</th>'
        f'<th>gap</th></tr></thead><tbody>{"".join(body)}</tbody></table>'
    )
