"""Render a sample-size plan (``studies.planning``): terminal tables and ``plan --format json``."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import asdict
from typing import Any

from rich.table import Table

from reliabench.report.marks import mark_agent, marked_agents_note
from reliabench.report.terminal import Parts
from reliabench.studies.planning import Plan, variance_components

__all__ = ["plan_tables", "plan_to_dict"]


def plan_to_dict(plan: Plan, simulated: Collection[str] | None = None) -> dict[str, Any]:
    """The plan as a JSON-ready dict, with each agent's reliability@k under its model (``values``).

    ``simulated``: the pilot's simulated agents (a plan from a pilot gets ``simulated_agents``;
    one from assumed rates, None, has no pilot and no such key).
    """
    doc = asdict(plan) | {"values": {a.name: variance_components(a, plan.k, plan.k).value
                                     for a in plan.agents}}
    if simulated is not None:
        doc["simulated_agents"] = sorted(simulated)
    return doc


def plan_tables(plan: Plan, simulated: Collection[str] = ()) -> Parts:
    """The agents' rate models, the design options (the recommended one marked) and the notes.

    ``simulated``: the pilot's simulated agents, marked in the table and named in a note.
    """
    t = Table(title="per-task rate model (Beta across tasks)")
    for col in ("agent", "mean rate", "spread (sd across tasks)", f"reliability@{plan.k}",
                "between-task var"):
        t.add_column(col)
    for a in plan.agents:
        v = variance_components(a, plan.k, plan.k)
        t.add_row(mark_agent(a.name, simulated), f"{a.mean:.4f}", f"{a.spread:.4f}", f"{v.value:.4f}",
                  f"{v.between:.5f}")
    if plan.mode == "half_width":
        title = (f"CI half-width <= {plan.target} for reliability@{plan.k} "
                 f"({round(100 * plan.confidence)}% CI)")
        achieved = "half-width" + (f" with {plan.max_tasks} tasks" if plan.max_tasks else "")
    else:
        title = (f"detect a difference of {plan.difference} in reliability@{plan.k} with power "
                 f"{plan.target} at alpha {1 - plan.confidence:.3g} (two-sided, paired)")
        achieved = "power" + (f" with {plan.max_tasks} tasks" if plan.max_tasks else "")
    o_table = Table(title=title)
    for col in ("rollouts per task", "tasks needed", "total rollouts per agent", achieved, ""):
        o_table.add_column(col)
    for o in plan.options:
        mark = "<- recommended" if o == plan.recommended else ""
        o_table.add_row(str(o.rollouts), str(o.tasks), str(o.total_rollouts), f"{o.achieved:.4f}", mark)
    notes = [*plan.notes, *([marked_agents_note(sorted(simulated))] if simulated else [])]
    return [t, o_table, *(f"note: {note}" for note in notes)]
