"""A self-contained HTML report: tables and inline SVG figures, no scripts, no network.

Figures:

* reliability@k and pass^k against k, one line per agent, with CI bands;
* misapplied pass@k beside reliability@k at each k (the inflation, as paired bars);
* security-adjusted reliability@k beside reliability@k, when security data exist.
"""

from __future__ import annotations

import html
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from reliabench.files.output import open_output
from reliabench.metrics.analysis import AgentSummary, Estimate, ScoreReport
from reliabench.report.marks import (
    SIMULATED_MARK,
    agent_label,
    agent_label_html,
    fit_label,
    with_simulated_note,
)
from reliabench.report.numbers import r3
from reliabench.report.score_render import score_to_json
from reliabench.studies.noise import NoiseReport
from reliabench.studies.rank import RankOutcome

__all__ = ["figure_block", "render_html", "sweep_figures", "write_html_report"]

_PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf",
            "#bcbd22", "#7f7f7f", "#393b79", "#ad494a")
_CSS = """
body{font:15px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:1100px;
color:#222;padding:0 1rem}
h1{font-size:1.6rem;margin-bottom:.2rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.6rem 0;font-size:.9rem}
th,td{padding:.25rem .6rem;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}
th:first-child,td:first-child{text-align:left}th{background:#f6f6f6}
.sim{color:#a36a00;font-weight:600}.note{color:#666;font-size:.85rem}.ci{color:#777;font-size:.8rem}
.fig{display:inline-block;margin:.5rem 1rem .5rem 0;vertical-align:top}
.caption{font-size:.85rem;color:#444;max-width:520px}
"""


def _fmt(e: Estimate) -> str:
    if math.isnan(e.value):
        return "n/a"
    ci = "" if math.isnan(e.ci_low) else f' <span class="ci">[{r3(e.ci_low)}, {r3(e.ci_high)}]</span>'
    excl = f' <span class="ci">({e.excluded} excl.)</span>' if e.excluded else ""
    return f"{r3(e.value)}{ci}{excl}"


def _agent_cell(name: str, simulated: bool) -> str:
    return agent_label_html(name, simulated)


def _agent_table(heading: str, columns: Sequence[str], report: ScoreReport,
                 cell: Callable[[AgentSummary, int], str]) -> str:
    """``<h2>heading</h2>`` and a table of one row per agent, cell ``i`` from ``cell(agent, i)``.

    ``heading``, ``columns`` and the cells are HTML (escaped by the caller); the agent column
    carries the simulated mark.
    """
    head = "".join(f"<th>{c}</th>" for c in columns)
    rows = "".join(f"<tr><td>{_agent_cell(a.agent, a.simulated)}</td>"
                   + "".join(f"<td>{cell(a, i)}</td>" for i in range(len(columns))) + "</tr>"
                   for a in report.agents)
    return f"<h2>{heading}</h2><table><tr><th>agent</th>{head}</tr>{rows}</table>"


def _frame(title: str, width: int, height: int, left: float, pw: float,
           y: Callable[[float], float]) -> list[str]:
    """The opening of an SVG figure: title and a y grid over [0, 1]."""
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}">',
        f'<text x="{left}" y="18" font-size="13" font-weight="600">{html.escape(title)}</text>',
    ]
    for tick in (0, 0.25, 0.5, 0.75, 1.0):
        yt = y(tick)
        parts.append(f'<line x1="{left}" x2="{left + pw}" y1="{yt:.1f}" y2="{yt:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{left - 6}" y="{yt + 4:.1f}" font-size="11" '
                     f'text-anchor="end">{tick:g}</text>')
    return parts


def _line_chart(
    title: str,
    xs: Sequence[float],
    series: Sequence[tuple[str, list[Estimate]]],
    y_label: str,
    width: int = 520,
    height: int = 300,
    x_label: str = "k",
) -> str:
    """An SVG line chart with CI bands; xs evenly spaced (ordinal), y in [0, 1]."""
    left, right, top, bottom = 52, 190, 30, 40
    pw, ph = width - left - right, height - top - bottom
    x_of = {k: left + (pw * (i / max(1, len(xs) - 1)) if len(xs) > 1 else pw / 2) for i, k in enumerate(xs)}

    def y(v: float) -> float:
        return top + ph * (1 - v)

    parts = _frame(title, width, height, left, pw, y)
    for k in xs:
        parts.append(
            f'<text x="{x_of[k]:.1f}" y="{top + ph + 16}" font-size="11" text-anchor="middle">{k:g}</text>'
        )
    parts.append(
        f'<text x="{left + pw / 2}" y="{height - 6}" font-size="11" '
        f'text-anchor="middle">{html.escape(x_label)}</text>'
    )
    parts.append(
        f'<text x="12" y="{top + ph / 2}" font-size="11" transform="rotate(-90 12 {top + ph / 2})" '
        f'text-anchor="middle">{html.escape(y_label)}</text>'
    )
    for i, (name, ests) in enumerate(series):
        color = _PALETTE[i % len(_PALETTE)]
        pts = [(x_of[k], e) for k, e in zip(xs, ests, strict=True) if not math.isnan(e.value)]
        band = [(x, e) for x, e in pts if not math.isnan(e.ci_low)]
        if len(band) > 1:
            poly = [f"{x:.1f},{y(e.ci_high):.1f}" for x, e in band]
            poly += [f"{x:.1f},{y(e.ci_low):.1f}" for x, e in reversed(band)]
            parts.append(f'<polygon points="{" ".join(poly)}" fill="{color}" opacity="0.12"/>')
        if pts:
            path = " ".join(f"{x:.1f},{y(e.value):.1f}" for x, e in pts)
            parts.append(f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>')
            for x, e in pts:
                parts.append(
                    f'<circle cx="{x:.1f}" cy="{y(e.value):.1f}" r="3" fill="{color}">'
                    f"<title>{html.escape(name)}: {e.value:.3f}</title></circle>"
                )
        ly = top + 14 + 16 * i
        parts.append(f'<rect x="{left + pw + 12}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{left + pw + 26}" y="{ly}" font-size="11">{html.escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _bar_chart(
    title: str,
    agents: Sequence[str],
    groups: Sequence[tuple[str, str, list[Estimate]]],
    width: int = 520,
    height: int = 300,
) -> str:
    """Grouped bars per agent (one bar per (label, color, estimates)), with CI whiskers."""
    left, right, top, bottom = 52, 170, 30, 90
    pw, ph = width - left - right, height - top - bottom
    slot = pw / max(1, len(agents))
    bw = slot * 0.7 / max(1, len(groups))

    def y(v: float) -> float:
        return top + ph * (1 - v)

    parts = _frame(title, width, height, left, pw, y)
    # many agents, or labels wider than a bar group (~6 px a character): slanted, so that they do not overlap
    slant = len(agents) > 4 or any(len(fit_label(a, 22)) * 6 > slot for a in agents)
    for a, agent in enumerate(agents):
        x0 = left + slot * a + slot * 0.15
        for g, (label, color, ests) in enumerate(groups):
            e = ests[a]
            if math.isnan(e.value):
                continue
            x = x0 + g * bw
            parts.append(
                f'<rect x="{x:.1f}" y="{y(e.value):.1f}" width="{bw * 0.9:.1f}" '
                f'height="{ph * e.value:.1f}" fill="{color}"><title>{html.escape(agent)} '
                f"{html.escape(label)}: {e.value:.3f}</title></rect>"
            )
            if not math.isnan(e.ci_low):
                cx = x + bw * 0.45
                parts.append(
                    f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(e.ci_low):.1f}" y2="{y(e.ci_high):.1f}" '
                    'stroke="#333"/>'
                )
        lx, ly = left + slot * (a + 0.5), top + ph + 16
        if slant:
            parts.append(f'<text x="{lx:.1f}" y="{ly}" font-size="10" text-anchor="end" '
                         f'transform="rotate(-35 {lx:.1f} {ly})">{html.escape(fit_label(agent, 22))}</text>')
        else:
            parts.append(f'<text x="{lx:.1f}" y="{ly}" font-size="11" '
                         f'text-anchor="middle">{html.escape(fit_label(agent, 22))}</text>')
    for g, (label, color, _) in enumerate(groups):
        ly = top + 14 + 16 * g
        parts.append(f'<rect x="{left + pw + 12}" y="{ly - 9}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{left + pw + 26}" y="{ly}" font-size="11">{html.escape(label)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def figure_block(svg: str, caption: str) -> str:
    """One figure with its caption, for ``render_html(extra_sections=...)``."""
    return f'<div class="fig">{svg}<div class="caption">{html.escape(caption)}</div></div>'


def sweep_figures(rows: Sequence[Mapping[str, Any]]) -> str:
    """An HTML section with one figure per swept parameter (rows of ``SweepResult.to_rows()``).

    Each figure shows, at the first k swept, the misapplied pass@k, reliability@k and the
    inflation (means over agents) and Spearman's rho of the proxy study, against the values.
    """
    if not rows:
        return ""
    first_k = min(int(r["k"]) for r in rows)
    params = list(dict.fromkeys(str(r["param"]) for r in rows))
    nan = float("nan")
    blocks = ["<h2>Sweeps</h2>"]
    for param in params:
        pts = sorted((r for r in rows if r["param"] == param and int(r["k"]) == first_k),
                     key=lambda r: float(r["value"]))
        if not pts:
            continue
        xs = [float(r["value"]) for r in pts]
        series = [(label, [Estimate(float(r[key]), nan, nan, 0) for r in pts])
                  for label, key in (("misapplied pass@k", "misapplied_mean"),
                                     ("reliability@k", "reliability_mean"),
                                     ("inflation", "inflation_mean"), ("Spearman rho", "rho_pairs"))]
        svg = _line_chart(f"sweep of {param} (k={first_k})", xs, series, "mean over agents", x_label=param)
        blocks.append(figure_block(svg, f"How the figures move with {param}, other parameters fixed."))
    return "".join(blocks)


def _per_task_section(report: ScoreReport) -> str:
    """Per (task, agent) counts: n, c, c_secure and the first rollout's tests, collapsed."""
    t = report.counts
    head = "".join(f"<th>{_agent_cell(a, a in t.simulated)}</th>" for a in t.agents)
    rows = []
    for i, task in enumerate(t.tasks):
        cells = []
        for j in range(len(t.agents)):
            if t.n[i, j] == 0:
                cells.append("<td>-</td>")
                continue
            text = f"{t.c[i, j]}/{t.n[i, j]}"
            if report.security:
                text += f" ({t.c_secure[i, j]} secure)"
            if t.first_total[i, j] >= 0:
                text += f' <span class="ci">1st: {t.first_passed[i, j]}/{t.first_total[i, j]} tests</span>'
            cells.append(f"<td>{text}</td>")
        rows.append(f"<tr><td>{html.escape(task)}</td>{''.join(cells)}</tr>")
    return ("<details><summary>Per task: passing rollouts / rollouts (and the first rollout's tests)"
            f"</summary><table><tr><th>task</th>{head}</tr>{''.join(rows)}</table></details>")


def _rank_section(outcome: RankOutcome | None) -> str:
    """The rank-interval figure (``studies.rank.rank_for_report``), or why there is none."""
    from reliabench.report.rank_figure import rank_section

    if outcome is None:
        return ""
    if outcome.ranking is None:
        return f'<h2>Ranking</h2><p class="note">No ranking: {html.escape(outcome.problem or "")}</p>'
    return rank_section(outcome.ranking)


def render_html(report: ScoreReport, *, title: str = "reliabench report",
                extra_sections: Sequence[str] = (), lead_sections: Sequence[str] = (),
                noise: NoiseReport | None = None, ranking: RankOutcome | None = None) -> str:
    """Render ``report`` as one self-contained HTML document.

    ``extra_sections`` are trusted HTML fragments (e.g. ``sweep_figures``) placed after the
    tables; ``lead_sections`` likewise, placed before the figures (the report page's heatmap).
    ``noise`` (a run with re-tests) adds the harness-noise section after the tables;
    ``ranking`` (``studies.rank.rank_for_report(report)``) the rank-interval figure.
    """
    ks = report.ks
    names = [agent_label(a.agent, a.simulated) for a in report.agents]
    out = [
        f"<!doctype html><html lang=en><head><meta charset=utf-8><title>{html.escape(title)}</title>"
        "<meta name=viewport content='width=device-width,initial-scale=1'>"
        f"<style>{_CSS}</style></head><body>",
        f"<h1>{html.escape(title)}</h1>",
        f'<p class="note">Generated {time.strftime("%Y-%m-%d %H:%M:%S")} by reliabench. '
        f"{round(report.confidence * 100)}% percentile-bootstrap CIs over tasks "
        f"({report.n_resamples} resamples, seed {report.seed}).</p>",
    ]
    if any(a.simulated for a in report.agents):
        out.append(
            f'<p class="sim">Agents marked {SIMULATED_MARK} are simulated: they are not models; their '
            "behaviour is configured.</p>"
        )
    out.extend(lead_sections)
    out.append("<h2>Figures</h2>")
    series_rel = [
        (n, [a.metrics[f"reliability@{k}"] for k in ks]) for n, a in zip(names, report.agents, strict=True)
    ]
    series_hat = [
        (n, [a.metrics[f"pass^{k}"] for k in ks]) for n, a in zip(names, report.agents, strict=True)
    ]
    out.append(
        f'<div class="fig">{_line_chart("reliability@k (n = rollouts)", ks, series_rel, "reliability@k")}'
        '<div class="caption">Chance that at least one of k independent attempts passes all hidden '
        "tests.</div></div>"
    )
    out.append(
        f'<div class="fig">{_line_chart("pass^k (all k attempts pass)", ks, series_hat, "pass^k")}'
        '<div class="caption">Chance that k attempts ALL pass: consistency.</div></div>'
    )
    k_show = ks[-1] if len(ks) == 1 else ks[min(1, len(ks) - 1)]
    agents = names
    groups = [
        (
            f"misapplied pass@{k_show}",
            "#bbbbbb",
            [a.metrics[f"misapplied_pass@{k_show}"] for a in report.agents],
        ),
        (f"reliability@{k_show}", "#1f77b4", [a.metrics[f"reliability@{k_show}"] for a in report.agents]),
    ]
    if report.security:
        groups.append(
            (
                f"sec-adj reliability@{k_show}",
                "#2ca02c",
                [a.metrics[f"security_adjusted_reliability@{k_show}"] for a in report.agents],
            )
        )
    out.append(
        f'<div class="fig">{_bar_chart(f"What harnesses report vs reality (k={k_show})", agents, groups)}'
        '<div class="caption">Grey: the estimator fed the tests of one rollout (the misapplication). '
        "Blue: reliability over independent rollouts. Green: counting only secure passing rollouts."
        "</div></div>"
    )
    out.append(
        "<h2>Repeated runs vs the misapplied figure</h2><table><tr><th>agent</th><th>tasks</th><th>n</th>"
        "<th>k</th><th>reliability@k</th><th>pass^k</th><th>misapplied pass@k</th><th>inflation</th>"
        + ("<th>sec-adj reliability@k</th>" if report.security else "")
        + "</tr>"
    )
    for a in report.agents:
        n_text = str(a.min_n) if a.min_n == a.max_n else f"{a.min_n}-{a.max_n}"
        for i, k in enumerate(ks):
            cells = [
                a.metrics[f"reliability@{k}"],
                a.metrics[f"pass^{k}"],
                a.metrics[f"misapplied_pass@{k}"],
                a.metrics[f"inflation@{k}"],
            ]
            if report.security:
                cells.append(a.metrics[f"security_adjusted_reliability@{k}"])
            head = (
                f"<td>{_agent_cell(a.agent, a.simulated)}</td><td>{a.tasks}</td><td>{n_text}</td>"
                if i == 0
                else "<td></td><td></td><td></td>"
            )
            out.append(f"<tr>{head}<td>{k}</td>" + "".join(f"<td>{_fmt(e)}</td>" for e in cells) + "</tr>")
    out.append("</table>")
    single = ["strict_resolution_rate", "macro_test_pass_rate"] + (
        ["insecure_share_of_passing"] if report.security else []
    )
    out.append(_agent_table("Single-submission figures", [html.escape(m.replace("_", " ")) for m in single],
                            report, lambda a, i: _fmt(a.metrics[single[i]])))
    if report.security:
        cwe = report.counts.cwe_counts
        all_cwes = sorted({c for d in cwe.values() for c in d}, key=lambda c: (c is None, c or 0))
        if all_cwes:
            out.append(_agent_table(
                f"Findings at or above {html.escape(str(report.threshold))}, by CWE",
                ["CWE-" + str(c) if c is not None else "no CWE" for c in all_cwes], report,
                lambda a, i: str(cwe.get(a.agent, {}).get(all_cwes[i], 0))))
    if report.security and any(report.counts.lens_counts.values()):
        lenses = sorted({lens for d in report.counts.lens_counts.values() for lens in d})
        out.append(_agent_table(
            "Passing but insecure rollouts, by the lens that flagged them", [html.escape(x) for x in lenses],
            report, lambda a, i: str(report.counts.lens_counts.get(a.agent, {}).get(lenses[i], 0))))
    notes = with_simulated_note(report.notes, report.counts.simulated)
    if notes:
        out.append(
            "<h2>Notes</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>"
        )


    if noise is not None:
        from reliabench.report.noise_section import noise_section

        out.append(noise_section(noise, simulated={a.agent for a in report.agents if a.simulated}))
    out.append(_rank_section(ranking))
    out.append(_per_task_section(report))
    out.extend(extra_sections)
    out.append(
        "<details><summary>Data (JSON)</summary><pre>"
        + html.escape(json.dumps(score_to_json(report), indent=1))
        + "</pre></details>"
    )
    out.append("</body></html>\n")
    return "".join(out)


def write_html_report(report: ScoreReport, path: str | Path, *, title: str = "reliabench report",
                      extra_sections: Sequence[str] = (), ranking: RankOutcome | None = None) -> Path:
    """Write the report atomically (no half-written file) and return its path."""
    dest = Path(path)
    with open_output(dest) as fh:  # atomic; never replaces a device such as /dev/null
        fh.write(render_html(report, title=title, extra_sections=extra_sections, ranking=ranking))
    return dest
