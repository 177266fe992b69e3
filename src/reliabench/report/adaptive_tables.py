"""Adaptive runs as text and JSON: each round's look, the estimates at the stop, a continuation.

``reliabench run --adaptive`` prints each round with :func:`render_step` and the reported
estimates with :func:`render_estimates`; ``score`` of a finished adaptive run adds the section
of :func:`score_adaptive_lines` (JSON: :func:`score_adaptive_json`); ``plan --pilot RUN
--max-n`` prints a continuation (JSON: :func:`continuation_to_json`). The JSON views of a look
and of the estimates are those ``RUN/adaptive.json`` keeps (:mod:`reliabench.runs.adaptive_file`).
"""

from __future__ import annotations

import math
from collections.abc import Collection
from typing import Any

from reliabench.report.marks import mark_agent
from reliabench.runs.adaptive_file import estimates_to_json, step_to_json
from reliabench.studies.adaptive import AdaptiveDesign, Continuation, Step
from reliabench.studies.adaptive_estimate import StopEstimates
from reliabench.studies.adaptive_score import AdaptiveScore

__all__ = ["continuation_to_json", "render_estimates", "render_step", "score_adaptive_json",
           "score_adaptive_lines"]


def render_step(step: Step, k: int) -> list[str]:
    """Lines describing one look."""
    lines = []
    for a in step.agents:
        iv = a.interval
        lines.append(f"  {a.agent:<20} n={a.n:<3} reliability@{k} {iv.value:.3f} "
                     f"[{iv.low:.3f}, {iv.high:.3f}] (+-{iv.half_width:.3f}); first-look {a.first_value:.3f}"
                     + (" target met" if a.met else ""))
    for p in step.pairs:
        iv = p.interval
        lines.append(f"  {p.a} - {p.b}: {iv.value:+.3f} [{iv.low:+.3f}, {iv.high:+.3f}] -> {p.decision}; "
                     f"first-look {p.first_value:+.3f}")
    if step.advance:
        lines.append("  next: " + ", ".join(f"{a} to n={n}" for a, n in sorted(step.advance.items())))
    return lines


def render_estimates(est: StopEstimates, design: AdaptiveDesign,
                     simulated: Collection[str] = ()) -> list[str]:
    """Lines with the reported estimates at the stop (Rao-Blackwellised, unbiased).

    Agents named in ``simulated`` are marked ``[SIMULATED]``.
    """
    k = design.k
    if est.draws:
        accepted = ", ".join(f"{a} {n}" for a, n in est.accepted.items())
        lines = [f"estimates at the stop (Rao-Blackwellised first-look estimate, unbiased under the "
                 f"stopping rule; {est.draws} orderings drawn, consistent: {accepted}; seed {est.seed}):"]
    else:
        lines = ["estimates at the stop (one look: the plain estimate, unbiased; t-interval over tasks):"]
    level = round(100 * design.confidence)
    for e in est.agents:
        iv = e.interval
        name = mark_agent(e.target, simulated)
        lines.append(f"  {name:<20} reliability@{k} {iv.value:.3f} [{iv.low:.3f}, {iv.high:.3f}] "
                     f"({level}% t-interval over {iv.tasks} tasks); plain at stop {e.plain_value:.3f}, "
                     f"first-look {e.first_value:.3f}")
    pair_level = 100 * (1 - design.pair_alpha)
    for e in est.pairs:
        iv = e.interval
        lines.append(f"  {e.target}: {iv.value:+.3f} [{iv.low:+.3f}, {iv.high:+.3f}] "
                     f"({pair_level:.4g}% interval); "
                     f"plain at stop {e.plain_value:+.3f}, first-look {e.first_value:+.3f}")
    return lines


def score_adaptive_lines(adaptive: AdaptiveScore, simulated: Collection[str] = ()) -> list[str]:
    """``score``'s section of a finished adaptive run, as lines of text (table and Markdown)."""
    head = [f"== adaptive run: stopped after {adaptive.rollouts} of the fixed design's "
            f"{adaptive.fixed_rollouts} rollouts; the plain figures above can be biased by the "
            "data-dependent stop =="]
    return ["", *head, *render_estimates(adaptive.estimates, adaptive.design, simulated)]


def score_adaptive_json(adaptive: AdaptiveScore) -> dict[str, Any]:
    """``score --format json``'s ``adaptive`` key."""
    return {"rollouts": adaptive.rollouts, "fixed_rollouts": adaptive.fixed_rollouts,
            "estimate": estimates_to_json(adaptive.estimates)}


def continuation_to_json(c: Continuation, estimates: StopEstimates | None = None) -> dict[str, object]:
    """JSON view of a continuation (``estimate``: the estimates if the run stops here)."""
    extra = {} if estimates is None else {"estimate": estimates_to_json(estimates)}

    def num(x: float) -> float | None:
        return round(x, 6) if math.isfinite(x) else None

    return {
        **extra,
        "pilot_n": c.design.first, "max_n": c.design.max_n, "schedule": list(c.design.schedule),
        "settled": c.settled, "now": step_to_json(c.now),
        "extra_rollouts": c.extra_rollouts,
        "projected_looks": [{"n": dict(x.n), "extra_rollouts": x.extra_rollouts, "met": x.met,
                             "half_widths": {k: num(v) for k, v in x.half_widths.items()}}
                            for x in c.looks],
    }
