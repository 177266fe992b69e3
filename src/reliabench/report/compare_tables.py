"""Render paired comparisons (``studies.compare``): terminal tables and ``compare --format json``.

Both JSON documents carry ``simulated_agents``; the tables mark simulated agents.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict
from typing import Any

from rich.table import Table

from reliabench.report.marks import mark_agent
from reliabench.report.terminal import Parts
from reliabench.studies.compare import PairedComparison, RankFirst

__all__ = ["comparison_table", "comparison_to_dict", "rank_first_table", "rank_first_to_dict"]


def comparison_table(r: PairedComparison, simulated: Collection[str]) -> Parts:
    """A - B with its paired CI and p-value, and a note on the tasks left out."""
    t = Table(title=f"reliability@{r.k}: A - B on {r.tasks} shared task(s)")
    t.add_column("figure")
    t.add_column("value", overflow="fold")
    pct = round(100 * r.confidence)
    for label, value in (
        ("A", mark_agent(r.agent_a, simulated)), ("B", mark_agent(r.agent_b, simulated)),
        (f"reliability@{r.k} of A", f"{r.value_a:.4f}"), (f"reliability@{r.k} of B", f"{r.value_b:.4f}"),
        ("difference A - B", f"{r.difference:+.4f}"),
        (f"{pct}% CI (paired bootstrap over tasks)", f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]"),
        ("p-value (paired sign-flip permutation, two-sided)", f"{r.p_value:.4g}"),
        ("tasks where A > B / A < B", f"{r.wins} / {r.losses}"),
        ("resamples / seed", f"{r.n_resamples} / {r.seed}"),
    ):
        t.add_row(label, value)
    parts: Parts = [t]
    if r.excluded:
        parts.append(f"note: {r.excluded} task(s) left out (not run >= {r.k} times by both)")
    return parts


def rank_first_table(rf: RankFirst, simulated: Collection[str]) -> Parts:
    """Each agent's reliability@k and bootstrap probability of ranking first."""
    t = Table(title=f"who ranks first on reliability@{rf.k} ({rf.tasks} shared task(s), "
                    f"{rf.n_resamples} bootstrap resamples)")
    for col in ("agent", f"reliability@{rf.k}", "P(first)"):
        t.add_column(col)
    for name, mean, share in zip(rf.agents, rf.values, rf.p_first, strict=True):
        t.add_row(mark_agent(name, simulated), f"{mean:.3f}", f"{share:.3f}")
    parts: Parts = [t]
    if rf.excluded:
        parts.append(f"note: {rf.excluded} task(s) left out (not run >= {rf.k} times by every agent)")
    return parts


def comparison_to_dict(r: PairedComparison, simulated: Collection[str]) -> dict[str, Any]:
    """The JSON document of ``compare --a A --b B --format json``."""
    return {"comparison": asdict(r), "simulated_agents": sorted(simulated)}


def rank_first_to_dict(rf: RankFirst, simulated: Collection[str]) -> dict[str, Any]:
    """The JSON document of ``compare --format json`` without ``--a``/``--b``."""
    return {"rank_first": asdict(rf), "simulated_agents": sorted(simulated)}
