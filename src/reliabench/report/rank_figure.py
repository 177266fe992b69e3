"""The rank-interval figure (SVG) and its HTML section, for ``reliabench rank`` and the report.

One row per agent, best first: a bar over the agent's bootstrap rank interval, a dot at its
rank, the value and CI at the right, and at the left one vertical mark per group of agents that
no corrected test separates (groups can overlap, so each has its own column).
"""

from __future__ import annotations

import html

from reliabench.report.marks import agent_label
from reliabench.studies.rank import Ranking

__all__ = ["rank_figure_svg", "rank_section"]

def rank_figure_svg(ranking: Ranking, *, width: int = 760, row: int = 18) -> str:
    """An SVG of the rank intervals, agents ordered by their point value (best on top)."""
    agents = ranking.agents
    n = len(agents)
    label_w = 250.0
    bands_w = 6.0 * min(len(ranking.groups), 12) + 6.0
    right_w = 150.0
    top, bottom = 34.0, 34.0
    left = label_w + bands_w
    pw = max(80.0, width - left - right_w)
    height = int(top + bottom + row * n)

    def x(rank: float) -> float:
        return left + pw * ((rank - 0.5) / max(1, n))

    def y(i: int) -> float:
        return top + row * (i + 0.5)

    title = (f"{ranking.metric_name}: rank intervals ({round(100 * ranking.level)}%, "
             f"{ranking.tasks} tasks)")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" role="img" '
        f'aria-label="{html.escape(title)}">',
        f'<text x="8" y="18" font-size="13" font-weight="600">{html.escape(title)}</text>',
    ]
    pos = {a.agent: i for i, a in enumerate(agents)}
    for g, group in enumerate(ranking.groups[:12]):
        i0, i1 = pos[group[0]], pos[group[-1]]
        gx = label_w + 3 + 6.0 * g
        parts.append(f'<rect x="{gx:.1f}" y="{y(i0) - row / 2 + 1:.1f}" width="4" '
                     f'height="{row * (i1 - i0 + 1) - 2:.1f}" fill="#7a9cc6">'
                     f"<title>group {g + 1}: {html.escape(', '.join(group))}</title></rect>")
    if ranking.groups:
        parts.append(f'<text x="{label_w + 3:.1f}" y="{top - 4:.1f}" font-size="9" fill="#555">groups</text>')
    for i in range(0, n, 2):  # light stripes for reading across
        parts.append(f'<rect x="{left:.1f}" y="{y(i) - row / 2:.1f}" width="{pw:.1f}" height="{row}" '
                     'fill="#f4f6f9"/>')
    step = max(1, n // 10)
    for r in range(1, n + 1):
        if r == 1 or r % step == 0 or (r == n and (n - 1) % step != 0):
            parts.append(f'<line x1="{x(r):.1f}" x2="{x(r):.1f}" y1="{top:.1f}" y2="{top + row * n:.1f}" '
                         'stroke="#eee"/>')
            parts.append(f'<text x="{x(r):.1f}" y="{top + row * n + 14:.1f}" font-size="10" '
                         f'text-anchor="middle">{r}</text>')
    parts.append(f'<text x="{left + pw / 2:.1f}" y="{height - 4}" font-size="11" text-anchor="middle">'
                 "rank (1 = best)</text>")
    for i, a in enumerate(agents):
        label = a.agent if len(a.agent) <= 40 else a.agent[:39] + "…"
        if a.simulated:
            label = agent_label(label, True)
        yi = y(i)
        parts.append(f'<text x="{label_w - 4:.1f}" y="{yi + 4:.1f}" font-size="11" text-anchor="end">'
                     f"<title>{html.escape(a.agent)}</title>{html.escape(label)}</text>")
        parts.append(f'<line x1="{x(a.rank_low) - 4:.1f}" x2="{x(a.rank_high) + 4:.1f}" y1="{yi:.1f}" '
                     f'y2="{yi:.1f}" stroke="#1f77b4" stroke-width="6" stroke-linecap="round">'
                     f"<title>{html.escape(a.agent)}: rank {a.rank}, interval {a.rank_low}-{a.rank_high}"
                     "</title></line>")
        parts.append(f'<circle cx="{x(a.rank):.1f}" cy="{yi:.1f}" r="3.5" fill="#0b3d6b"/>')
        ci = "" if a.ci_low != a.ci_low else f" [{a.ci_low:.3f}, {a.ci_high:.3f}]"
        parts.append(f'<text x="{left + pw + 8:.1f}" y="{yi + 4:.1f}" font-size="10">'
                     f"{a.value:.3f}{ci}</text>")
    parts.append("</svg>")
    return "".join(parts)


def rank_section(ranking: Ranking) -> str:
    """An HTML section (heading, figure, caption) for the self-contained report."""
    caption = (f"Bars: the {round(100 * ranking.level)}% bootstrap range of each agent's rank over "
               f"paired resamples of the {ranking.tasks} shared tasks ({ranking.sampling} sampling, "
               f"{ranking.n_resamples} resamples); dots: the rank of the point value. Marks at the "
               "left: groups of consecutive agents that no pair test separates "
               f"at alpha = {1 - ranking.level:.2g} with the {ranking.correction_label} correction over "
               f"all pairs. {ranking.decisive_gaps} of {len(ranking.gaps)} adjacent gaps are decisive.")
    return (f"<h2>Ranking by {html.escape(ranking.metric_name)}</h2>"
            f'<div class="fig">{rank_figure_svg(ranking)}'
            f'<div class="caption">{html.escape(caption)}</div></div>')
