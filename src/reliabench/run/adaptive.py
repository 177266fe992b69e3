"""Drive a real adaptive run: rounds of ``run_suite``, per-agent n from ``reliabench.studies.adaptive``.

Round 1 runs ``first`` rollouts of every agent on every task. After each round the store's
records (only each task's first n rollouts of each agent, so a round never sees more than
its design allows) go to :func:`reliabench.studies.adaptive.evaluate`, which says which agents get
the next step of the schedule. Rollout i of a (task, agent) has the same seed as in a fixed-n
run, so an adaptive run is a prefix of the fixed run with the same seed.

Resuming: the same command replays the rounds from the store (every decision is a
deterministic function of the recorded rollouts) and runs only what is missing. The rounds
and the final decision are written atomically to ``RUN/adaptive.json`` after every round.
At the stop, the reported estimates and intervals are the Rao-Blackwellised ones of
``reliabench.studies.adaptive_estimate`` (unbiased under the stopping rule), seeded with the
run's seed; ``adaptive.json`` keeps them under ``estimate``.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from reliabench.agents.base import Agent
from reliabench.errors import InvalidArgumentError
from reliabench.records import Rollout
from reliabench.run.runner import ProgressEvent, RunSettings, RunSummary, run_suite
from reliabench.store import RunStore
from reliabench.studies.adaptive import AdaptiveDesign, AgentCounts, Step, evaluate
from reliabench.studies.adaptive_estimate import StopEstimates, stop_estimates
from reliabench.tasks.suite import Suite

__all__ = ["ADAPTIVE_FILE", "AdaptiveRunResult", "counts_at", "estimates_for_run", "estimates_to_json",
           "run_adaptive", "step_to_json"]

ADAPTIVE_FILE = "adaptive.json"


@dataclass(frozen=True, slots=True)
class AdaptiveRunResult:
    """What an adaptive run did.

    Attributes:
        steps: One ``Step`` per round, the last one final.
        history: The n of every agent at each round.
        rollouts: Rollouts the design used (per-task n summed over tasks and agents).
        fixed_rollouts: Rollouts of the fixed-n design at ``max_n``.
        stop_reason: ``target``, ``max_n`` or ``interrupted``.
        summaries: The ``RunSummary`` of each round.
        estimates: The Rao-Blackwellised estimates and intervals at the stop (None when the
            run was interrupted).
    """

    steps: tuple[Step, ...]
    history: tuple[Mapping[str, int], ...]
    rollouts: int
    fixed_rollouts: int
    stop_reason: str
    summaries: tuple[RunSummary, ...]
    estimates: StopEstimates | None = None


def counts_at(records: Sequence[Rollout], tasks: Sequence[str],
              now: Mapping[str, int]) -> dict[str, AgentCounts]:
    """Per agent, per-task counts among each task's first ``now[agent]`` rollouts (infra errors left out)."""
    index = {t: i for i, t in enumerate(tasks)}
    n = {a: np.zeros(len(tasks), np.int64) for a in now}
    c = {a: np.zeros(len(tasks), np.int64) for a in now}
    for r in records:
        if r.agent not in now or r.task_id not in index or r.rollout >= now[r.agent]:
            continue
        if r.status == "infra_error":
            continue
        n[r.agent][index[r.task_id]] += 1
        c[r.agent][index[r.task_id]] += r.passes
    return {a: AgentCounts(n[a], c[a]) for a in now}


def _num(x: float) -> float | None:
    return None if not math.isfinite(x) else round(x, 6)


def step_to_json(step: Step) -> dict[str, Any]:
    """A JSON-ready view of one look."""
    def iv(i: Any) -> dict[str, Any]:
        return {"value": _num(i.value), "ci_low": _num(i.low), "ci_high": _num(i.high),
                "se": _num(i.se), "tasks": i.tasks, "critical": _num(i.critical)}

    return {
        "agents": [{"agent": a.agent, "n": a.n, "met": a.met, **iv(a.interval),
                    "first_look_value": _num(a.first_value)} for a in step.agents],
        "pairs": [{"a": p.a, "b": p.b, "n_a": p.n_a, "n_b": p.n_b, "decision": p.decision,
                   "difference": iv(p.interval), "first_look_difference": _num(p.first_value)}
                  for p in step.pairs],
        "advance": dict(step.advance),
        "stop_reason": step.stop_reason,
    }


def estimates_for_run(records: Sequence[Rollout], tasks: Sequence[str], design: AdaptiveDesign,
                      history: Sequence[Mapping[str, int]], seed: int) -> StopEstimates:
    """The estimates at the stop of a finished run: ``history`` ends at the stopping look."""
    return stop_estimates(design, history, [counts_at(records, tasks, h) for h in history], seed=seed)


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


def _write_atomic(path: Path, doc: Mapping[str, Any]) -> None:
    fd, tmp = tempfile.mkstemp(prefix=".adaptive-", dir=path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        json.dump(doc, fh, indent=2, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def run_adaptive(
    suite: Suite,
    agents: Sequence[Agent],
    out_dir: str | Path,
    settings: RunSettings,
    design: AdaptiveDesign,
    *,
    tasks: Sequence[str] | None = None,
    progress: Callable[[ProgressEvent], None] | None = None,
    on_round: Callable[[int, Step], None] | None = None,
    stop: threading.Event | None = None,
    agents_file: str | Path | None = None,
    provenance: Mapping[str, Any] | None = None,
) -> AdaptiveRunResult:
    """Run rounds until the design's target is met or ``max_n`` is reached.

    ``settings.n`` is ignored (the design's ``first`` is stored as the run's n); ``provenance``
    goes to ``run_suite`` (kept with the run, not part of its identity).

    Raises:
        InvalidArgumentError: a settle pair names an agent that is not in ``agents``.
    """
    names = [a.name for a in agents]
    for pair in design.settle:
        for name in pair:
            if name not in names:
                raise InvalidArgumentError(f"--settle: no agent {name!r}; the agents file has "
                                           f"{', '.join(names)}")
    task_ids = sorted(tasks) if tasks else sorted(t.id for t in suite.tasks)
    base = replace(settings, n=design.first)
    history: list[dict[str, int]] = [{a: design.first for a in names}]
    steps: list[Step] = []
    summaries: list[RunSummary] = []
    reason = "interrupted"
    estimates: StopEstimates | None = None
    out = Path(out_dir)
    while True:
        summary = run_suite(suite, agents, out, base, tasks=tasks, progress=progress, stop=stop,
                            agents_file=agents_file, n_per_agent=history[-1], provenance=provenance)
        summaries.append(summary)
        if summary.skipped + summary.executed < summary.planned:
            break  # stopped before the round was complete: resume later
        with RunStore.open_existing(out, readonly=True) as store:
            records = store.rollouts()
        step = evaluate(design, counts_at(records, task_ids, history[-1]), history,
                        counts_at(records, task_ids, history[0]))
        steps.append(step)
        if not step.advance:
            estimates = estimates_for_run(records, task_ids, design, history, settings.seed)
        if on_round is not None:
            on_round(len(steps), step)
        _write_atomic(out / ADAPTIVE_FILE, _document(design, history, steps, len(task_ids), names,
                                                     estimates, settings.seed))
        if not step.advance:
            reason = step.stop_reason
            break
        history.append({**history[-1], **step.advance})
    used = len(task_ids) * sum(history[len(steps) - 1].values()) if steps else 0
    return AdaptiveRunResult(tuple(steps), tuple(history), used,
                             len(task_ids) * design.max_n * len(names), reason, tuple(summaries),
                             estimates)


def _document(design: AdaptiveDesign, history: Sequence[Mapping[str, int]], steps: Sequence[Step],
              n_tasks: int, names: Sequence[str], estimates: StopEstimates | None,
              seed: int) -> dict[str, Any]:
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
