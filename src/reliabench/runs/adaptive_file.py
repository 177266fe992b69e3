"""``RUN/adaptive.json``: what an adaptive run keeps of itself, written after every round.

The document holds the design (with the run's seed), the n of every agent and the look at
each round, the final look, whether the run reached its stop, the rollouts it used against
the fixed design's and, at the stop, the reported estimates (``estimate``). The run loop
(:mod:`reliabench.run.adaptive`) writes it with :func:`adaptive_document`; the read side
(:meth:`reliabench.runs.RunDirectory.adaptive`) turns it back into an
:class:`~reliabench.studies.adaptive_score.AdaptiveState` with :func:`state_from_document`.
:func:`step_to_json` and :func:`estimates_to_json` are the document's views of a look and of
the estimates, which ``score --format json`` and ``plan --pilot --format json`` show as well.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from reliabench.studies.adaptive import AdaptiveDesign, Interval, Step
from reliabench.studies.adaptive_estimate import StopEstimates
from reliabench.studies.adaptive_score import AdaptiveState

__all__ = ["ADAPTIVE_FILE", "adaptive_document", "estimates_to_json", "state_from_document", "step_to_json"]

ADAPTIVE_FILE: Final = "adaptive.json"
"""The file's name in the run directory."""


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else round(x, 6)


def _interval(i: Interval) -> dict[str, Any]:
    return {"value": _num(i.value), "ci_low": _num(i.low), "ci_high": _num(i.high),
            "se": _num(i.se), "tasks": i.tasks, "critical": _num(i.critical)}


def step_to_json(step: Step) -> dict[str, Any]:
    """A JSON-ready view of one look."""
    return {
        "agents": [{"agent": a.agent, "n": a.n, "met": a.met, **_interval(a.interval),
                    "first_look_value": _num(a.first_value)} for a in step.agents],
        "pairs": [{"a": p.a, "b": p.b, "n_a": p.n_a, "n_b": p.n_b, "decision": p.decision,
                   "difference": _interval(p.interval), "first_look_difference": _num(p.first_value)}
                  for p in step.pairs],
        "advance": dict(step.advance),
        "stop_reason": step.stop_reason,
    }


def estimates_to_json(est: StopEstimates) -> dict[str, Any]:
    """A JSON-ready view of the estimates at the stop."""
    def row(key: str, e: Any) -> dict[str, Any]:
        i = e.interval
        return {key: e.target, "value": _num(i.value), "ci_low": _num(i.low), "ci_high": _num(i.high),
                "se": _num(i.se), "tasks": i.tasks, "first_look_value": _num(e.first_value),
                "plain_value": _num(e.plain_value)}

    return {"method": "Rao-Blackwellised first-look estimate (unbiased under the stopping rule), "
                      "Student-t interval over tasks",
            "draws": est.draws, "accepted": dict(est.accepted), "seed": est.seed,
            "agents": [row("agent", e) for e in est.agents],
            "pairs": [{**row("pair", e), "a": e.target.split(" - ")[0], "b": e.target.split(" - ")[1]}
                      for e in est.pairs]}


def adaptive_document(design: AdaptiveDesign, history: Sequence[Mapping[str, int]], steps: Sequence[Step],
                      n_tasks: int, names: Sequence[str], estimates: StopEstimates | None,
                      seed: int) -> dict[str, Any]:
    """The document after ``len(steps)`` rounds (``history`` holds at least as many looks)."""
    last = steps[-1]
    used = n_tasks * sum(history[len(steps) - 1].values())
    extra = {} if estimates is None else {"estimate": estimates_to_json(estimates)}
    return {**extra,
        "design": {"first": design.first, "max_n": design.max_n, "k": design.k,
                   "confidence": design.confidence, "target_half_width": design.target_half_width,
                   "settle": [list(p) for p in design.settle], "margin": design.margin,
                   "boundary": design.boundary, "schedule": list(design.schedule),
                   "interval": "repeated confidence interval (group-sequential, Student-t over tasks)",
                   "seed": seed, "half_width_rule": design.half_width_rule},
        "tasks": n_tasks,
        "rounds": [{"round": i + 1, "n": dict(history[i]), **step_to_json(s)} for i, s in enumerate(steps)],
        "final": step_to_json(last),
        "finished": not last.advance,
        "rollouts": used,
        "fixed_rollouts": n_tasks * design.max_n * len(names),
    }


def state_from_document(doc: Any) -> AdaptiveState:
    """The state an adaptive document describes.

    Raises:
        KeyError, TypeError, ValueError, AttributeError: the document is not one of this module's
            (the caller names the file).
    """
    d = doc["design"]
    design = AdaptiveDesign(first=int(d["first"]), max_n=int(d["max_n"]), k=int(d["k"]),
                            confidence=float(d["confidence"]), target_half_width=d.get("target_half_width"),
                            settle=tuple((str(a), str(b)) for a, b in d.get("settle", [])),
                            margin=float(d.get("margin", 0.0)),
                            boundary=str(d.get("boundary", "obrien-fleming")),
                            half_width_rule=str(d.get("half_width_rule", "two-stage")))
    history = tuple({str(a): int(n) for a, n in r["n"].items()} for r in doc["rounds"])
    tasks = doc.get("tasks")
    return AdaptiveState(design, history, int(d.get("seed", 0)), None if tasks is None else int(tasks),
                         int(doc.get("rollouts", 0)), int(doc.get("fixed_rollouts", 0)),
                         bool(doc.get("finished")))
