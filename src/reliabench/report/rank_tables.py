"""Render a ranking (``studies.rank``): terminal tables and the JSON document of ``rank --format json``.

The SVG figure of the rank intervals is ``report.rank_figure``. Simulated agents are marked
wherever an agent is named.
"""

from __future__ import annotations

import math
from typing import Any

from rich.table import Table

from reliabench.report.marks import agent_label, mark_agent, with_simulated_note
from reliabench.report.terminal import Parts
from reliabench.studies.rank import Ranking

__all__ = ["ranking_tables", "ranking_to_dict"]


def _f(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def ranking_tables(r: Ranking) -> Parts:
    """The agents with CIs, rank intervals and groups; the adjacent gaps; the groups; the notes."""
    pct = round(100 * r.level)
    t = Table(title=f"{r.metric_name} on {r.tasks} shared task(s): {pct}% CIs and rank intervals "
                    f"({r.n_resamples} paired bootstrap resamples, {r.sampling} sampling, seed {r.seed})")
    for col in ("rank", "agent", r.metric_name, f"{pct}% CI", "rank interval", "groups"):
        t.add_column(col, overflow="fold")
    membership = {a.agent: [str(i + 1) for i, g in enumerate(r.groups) if a.agent in g] for a in r.agents}
    for a in r.agents:
        t.add_row(str(a.rank), agent_label(a.agent, a.simulated), _f(a.value),
                  f"[{_f(a.ci_low)}, {_f(a.ci_high)}]", f"{a.rank_low}-{a.rank_high}",
                  ",".join(membership[a.agent]))
    g = Table(title=f"adjacent gaps: decisive at alpha = {1 - r.level:.2g}, {r.correction_label} over "
                    f"{len(r.pairs)} pairs ({r.decisive_gaps} of {len(r.gaps)} decisive)")
    for col in ("upper", "lower", "difference", "corrected p", "decisive",
                f"tasks for power {r.power:g}"):
        g.add_column(col, overflow="fold")
    simulated = {a.agent for a in r.agents if a.simulated}
    for gap in r.gaps:
        g.add_row(mark_agent(gap.upper, simulated), mark_agent(gap.lower, simulated),
                  f"{gap.difference:+.3f}", f"{gap.p_adjusted:.3g}",
                  ("yes" if gap.decisive else "no") + (" (borderline)" if gap.borderline else ""),
                  "-" if gap.tasks_needed is None else str(gap.tasks_needed))
    parts: Parts = [t, g,
                    f"groups (maximal runs of consecutive agents with no separated pair; {len(r.groups)}):"]
    parts += [f"  {i}: {', '.join(mark_agent(a, simulated) for a in group)}"
              for i, group in enumerate(r.groups, start=1)]
    parts += [f"note: {note}" for note in with_simulated_note(r.notes, simulated)]
    return parts


def _num(x: float) -> float | None:
    return round(float(x), 6) if math.isfinite(x) else None


def ranking_to_dict(r: Ranking) -> dict[str, Any]:
    """A JSON-ready view of a ``Ranking`` (NaN written as null)."""
    return {
        "metric": r.metric_name,
        "k": r.k,
        "level": r.level,
        "correction": r.correction,
        "correction_label": r.correction_label,
        "sampling": r.sampling,
        "tasks": r.tasks,
        "excluded": r.excluded,
        "rollouts_per_task": {"min": r.min_n, "max": r.max_n},
        "n_resamples": r.n_resamples,
        "seed": r.seed,
        "agents": [{"agent": a.agent, "value": _num(a.value), "ci_low": _num(a.ci_low),
                    "ci_high": _num(a.ci_high), "rank": a.rank, "rank_low": a.rank_low,
                    "rank_high": a.rank_high, "simulated": a.simulated} for a in r.agents],
        "groups": [list(g) for g in r.groups],
        "gaps": [{"upper": g.upper, "lower": g.lower, "difference": _num(g.difference),
                  "p_adjusted": _num(g.p_adjusted), "decisive": g.decisive, "borderline": g.borderline,
                  "sd": _num(g.sd), "tasks_needed": g.tasks_needed} for g in r.gaps],
        "decisive_gaps": r.decisive_gaps,
        "power": r.power,
        "pairs": [{"a": p.agent_a, "b": p.agent_b, "difference": _num(p.difference),
                   "p_value": _num(p.p_value), "p_adjusted": _num(p.p_adjusted),
                   "separated": p.separated, "borderline": p.borderline} for p in r.pairs],
        "simulated_agents": sorted(a.agent for a in r.agents if a.simulated),
        "notes": list(with_simulated_note(r.notes, {a.agent for a in r.agents if a.simulated})),
    }
