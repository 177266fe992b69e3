"""The report's added figures, as inline SVG: reliability@k for every k, the proxy, cost.

* ``reliability_curve``: reliability@k for k = 1..n per agent with its bootstrap CI band
  (``analysis.score_counts`` on the report's own counts: no metric computed twice);
* ``proxy_scatter``: per (task, agent) pair, the first rollout's test pass fraction against
  reliability@k over all n rollouts, with Spearman's rho over pairs and its CI from
  ``proxy.proxy_study``;
* ``cost_figures``: mean seconds (and tokens, USD when recorded) per rollout against
  reliability@k per agent, with the CI as a whisker.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from reliabench.metrics.analysis import Estimate, ScoreReport
from reliabench.metrics.costs import PHASES, CostPoints
from reliabench.report.html import _PALETTE, _frame, _line_chart, figure_block
from reliabench.report.marks import agent_label, fit_label
from reliabench.studies.proxy_validity import ProxyPoints

__all__ = ["ScatterPoint", "cost_figures", "proxy_scatter", "reliability_curve", "scatter_svg"]


@dataclass(frozen=True, slots=True)
class ScatterPoint:
    """One point of a scatter plot (y in [0, 1]); ``lo``/``hi`` draw a vertical whisker."""

    x: float
    y: float
    label: str
    series: int = 0
    lo: float = math.nan
    hi: float = math.nan


def _nice(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 100:
        return f"{v:.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}"
    return f"{v:.2g}"


def scatter_svg(title: str, points: Sequence[ScatterPoint], *, x_label: str, y_label: str,
                legend: Sequence[str] = (), x_range: tuple[float, float] | None = None,
                width: int = 520, height: int = 320, diagonal: bool = False) -> str:
    """An SVG scatter plot with y in [0, 1]; each point has a tooltip."""
    left, right, top, bottom = 52, 170 if legend else 20, 30, 44
    pw, ph = width - left - right, height - top - bottom
    xs = [p.x for p in points if math.isfinite(p.x)]
    lo_x, hi_x = x_range if x_range else ((min(xs), max(xs)) if xs else (0.0, 1.0))
    if hi_x <= lo_x:
        lo_x, hi_x = lo_x - 0.5 if lo_x > 0.5 else 0.0, hi_x + 0.5

    def x_of(v: float) -> float:
        return left + pw * (v - lo_x) / (hi_x - lo_x)

    def y_of(v: float) -> float:
        return top + ph * (1 - v)

    parts = _frame(title, width, height, left, pw, y_of)
    for i in range(5):
        v = lo_x + (hi_x - lo_x) * i / 4
        parts.append(f'<text x="{x_of(v):.1f}" y="{top + ph + 16}" font-size="11" '
                     f'text-anchor="middle">{_nice(v)}</text>')
    parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{top + ph}" y2="{top + ph}" stroke="#999"/>')
    if diagonal:
        parts.append(f'<line x1="{x_of(lo_x):.1f}" y1="{y_of(lo_x):.1f}" x2="{x_of(hi_x):.1f}" '
                     f'y2="{y_of(hi_x):.1f}" stroke="#ccc" stroke-dasharray="4 3"/>')
    parts.append(f'<text x="{left + pw / 2}" y="{height - 6}" font-size="11" '
                 f'text-anchor="middle">{html.escape(x_label)}</text>')
    parts.append(f'<text x="12" y="{top + ph / 2}" font-size="11" transform="rotate(-90 12 {top + ph / 2})" '
                 f'text-anchor="middle">{html.escape(y_label)}</text>')
    for p in points:
        if not (math.isfinite(p.x) and math.isfinite(p.y)):
            continue
        color = _PALETTE[p.series % len(_PALETTE)]
        cx, cy = x_of(p.x), y_of(p.y)
        if math.isfinite(p.lo) and math.isfinite(p.hi):
            parts.append(f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y_of(p.lo):.1f}" y2="{y_of(p.hi):.1f}" '
                         f'stroke="{color}" opacity="0.6"/>')
        parts.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4" fill="{color}" fill-opacity="0.55" '
                     f'stroke="{color}"><title>{html.escape(p.label)}</title></circle>')
    for i, name in enumerate(legend):
        ly = top + 14 + 16 * i
        color = _PALETTE[i % len(_PALETTE)]
        parts.append(f'<rect x="{left + pw + 12}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{left + pw + 26}" y="{ly}" font-size="11">'
                     f"{html.escape(fit_label(name, 24))}</text>")
    parts.append("</svg>")
    return "".join(parts)


def _names(report: ScoreReport) -> list[str]:
    return [agent_label(a.agent, a.simulated) for a in report.agents]


def reliability_curve(report: ScoreReport, curve: ScoreReport | None) -> str:
    """reliability@k for k = 1..max n, per agent, with CI bands (a figure block).

    ``curve`` is ``analysis.reliability_curve_scores(report)`` (None: no rollout, no figure).
    """
    if curve is None:
        return ""
    ks = list(curve.ks)
    max_n = int(report.counts.n.max())
    series = [(n, [a.metrics[f"reliability@{k}"] for k in ks])
              for n, a in zip(_names(report), curve.agents, strict=True)]
    svg = _line_chart(f"reliability@k for k = 1..{max_n}", ks, series, "reliability@k")
    return figure_block(svg, "Every k up to the number of rollouts, with the bootstrap CI band over "
                        "tasks; tasks with fewer than k rollouts leave the mean at that k.")


def proxy_scatter(report: ScoreReport, proxy: ProxyPoints | None) -> str:
    """The single-rollout proxy: first rollout's test pass fraction vs reliability@k per pair.

    ``proxy`` is ``proxy_validity.proxy_points(report, k)`` (None: no pair has per-test counts).
    """
    if proxy is None:
        return ('<p class="note">Single-rollout proxy: no pair has per-test counts for its first '
                "rollout, so there is nothing to plot.</p>")
    k = proxy.k
    rho = proxy.rho
    points = [ScatterPoint(p.proxy, p.reliability, f"{p.task} / {p.agent}: first rollout {p.first_passed}/"
                           f"{p.first_total} tests, reliability@{k} = {p.reliability:.3f} "
                           f"(c={p.c}, n={p.n})", p.series) for p in proxy.points]

    def r3(v: float) -> str:
        return "n/a" if math.isnan(v) else f"{v:.3f}"

    ci = "" if math.isnan(rho.ci_low) else f" [{r3(rho.ci_low)}, {r3(rho.ci_high)}]"
    title = f"single-rollout proxy (Spearman rho = {r3(rho.value)}{ci})"
    svg = scatter_svg(title, points, x_label="first rollout's test pass fraction",
                      y_label=f"reliability@{k} over n rollouts", legend=_names(report),
                      x_range=(0.0, 1.0), diagonal=True)
    pct = round(report.confidence * 100)
    return figure_block(svg, f"One point per (task, agent) pair ({rho.units} pairs). Spearman rho over "
                        f"pairs with its {pct}% bootstrap CI over tasks (reliabench proxy). A proxy "
                        "that substituted for repeated runs would put the points on a rising line.")


def cost_figures(report: ScoreReport, costs: CostPoints, k: int = 1) -> str:
    """Mean time (and tokens, USD when present) per rollout against reliability@k, per agent.

    ``costs`` is ``costs.cost_points(records, agents)`` for the report's agents, in its order.
    """
    blocks = []
    names = _names(report)
    axes = (("seconds", "mean seconds per rollout"), ("tokens", "mean tokens per rollout"),
            ("usd", "mean USD per rollout"))
    for attr, label in axes:
        points = []
        for j, (a, c) in enumerate(zip(report.agents, costs.agents, strict=True)):
            mean = getattr(c, attr)
            if mean is None:
                continue
            e: Estimate = a.metrics.get(f"reliability@{k}", Estimate(math.nan, math.nan, math.nan, 0))
            points.append(ScatterPoint(mean, e.value, f"{names[j]}: {label} {mean:.4g}, "
                                       f"reliability@{k} {e.value:.3f}", j, e.ci_low, e.ci_high))
        if not points:
            continue
        top = max(p.x for p in points)
        right = top * 1.1 if math.isfinite(top * 1.1) else top
        svg = scatter_svg(f"{label.split(' per')[0]} vs reliability@{k}", points, x_label=label,
                          y_label=f"reliability@{k}", legend=names, x_range=(0.0, right or 1.0))
        blocks.append(figure_block(svg, f"One point per agent: {label} (infra errors excluded) against "
                                   f"reliability@{k}, whisker = CI over tasks."))
    if costs.phases_recorded:
        rows = []
        for c in costs.agents:
            cells = [f"{c.phases[key]:.4g}" if key in c.phases else "-" for key in PHASES]
            rows.append(f"<tr><td>{html.escape(c.agent)}</td>" + "".join(f"<td>{x}</td>" for x in cells)
                        + "</tr>")
        blocks.append("<table><tr><th>agent</th><th>agent s</th><th>test s</th><th>tokens in</th>"
                      f"<th>tokens out</th></tr>{''.join(rows)}</table>"
                      '<p class="note">Means per rollout over the rollouts that record each phase.</p>')
    if not blocks:
        return '<p class="note">The records carry no cost or time: nothing to plot.</p>'
    return "".join(blocks)
