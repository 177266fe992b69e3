"""The adaptive part of ``reliabench run`` (``--adaptive``): parse the target, run rounds, print them."""

from __future__ import annotations

import itertools
import sys

from reliabench.commands._common import console, prepare_run
from reliabench.errors import InvalidArgumentError
from reliabench.report.adaptive_tables import render_estimates, render_step
from reliabench.report.marks import simulated_agents_note
from reliabench.run.adaptive import AdaptiveRunResult, run_adaptive
from reliabench.run.runner import ProgressEvent, RunSettings
from reliabench.runs.adaptive_file import ADAPTIVE_FILE
from reliabench.studies.adaptive import AdaptiveDesign, Step

__all__ = ["execute_adaptive", "parse_settle"]


def parse_settle(values: tuple[str, ...], agents: list[str]) -> tuple[tuple[str, str], ...]:
    """``--settle A,B`` (repeatable) or ``--settle all`` (every pair of agents).

    Examples:
        >>> parse_settle(("a,b",), ["a", "b", "c"])
        (('a', 'b'),)
        >>> parse_settle(("all",), ["a", "b", "c"])
        (('a', 'b'), ('a', 'c'), ('b', 'c'))
    """
    pairs: list[tuple[str, str]] = []
    for text in values:
        if text.strip() == "all":
            pairs += list(itertools.combinations(agents, 2))
            continue
        parts = [p.strip() for p in text.split(",")]
        if len(parts) != 2 or not all(parts) or parts[0] == parts[1]:
            raise InvalidArgumentError(f"--settle expects A,B (two different agents) or all, got {text!r}")
        for name in parts:
            if name not in agents:
                raise InvalidArgumentError(f"--settle {text}: no agent {name!r}; the agents file has "
                                           f"{', '.join(agents)}")
        pairs.append((parts[0], parts[1]))
    return tuple(dict.fromkeys(pairs))


def execute_adaptive(settings: RunSettings) -> AdaptiveRunResult:
    """Load suite and agents, check them (as ``run`` does), run adaptively, print each round.

    ``settings.adaptive`` is the target; ``settings.n`` the first round's n.
    """
    target = settings.adaptive
    if target is None:
        raise InvalidArgumentError("execute_adaptive needs settings.adaptive (the target)")
    inputs = prepare_run(settings)
    suite, agents, settings = inputs.suite, inputs.agents, inputs.settings
    assert settings.out is not None
    out, tasks, first, k = settings.out, settings.tasks, settings.n, target.k
    max_n, half_width, settle = target.max_n, target.target_half_width, target.settle
    names = [a.name for a in agents]
    if (half_width is None) == (not settle):
        raise InvalidArgumentError("--adaptive needs one target: --target-half-width H or --settle A,B")
    design = AdaptiveDesign(first=first, max_n=max_n, k=k, target_half_width=half_width,
                            settle=parse_settle(settle, names) if settle else (), margin=target.margin)
    err = console(stderr=True)
    n_tasks = len(tasks) or len(suite.tasks)
    err.print(f"suite [bold]{suite.name}[/] {suite.version}: {n_tasks} task(s) x {len(agents)} agent(s), "
              f"adaptive n on {list(design.schedule)} -> {out}")
    simulated = [a.name for a in agents if a.simulated]
    if simulated:
        err.print(f"[yellow]{simulated_agents_note(simulated)}[/]")

    def on_round(i: int, step: Step) -> None:
        err.print(f"round {i}:")
        for line in render_step(step, k):
            err.print(line, highlight=False)

    def progress(ev: ProgressEvent) -> None:
        step = max(1, ev.total // 10)
        if (ev.done - ev.total) % step == 0 or ev.done == ev.total:
            print(f"rollouts {ev.done}/{ev.total} (this round's plan) passed {ev.passed}",
                  file=sys.stderr, flush=True)

    result = run_adaptive(suite, agents, out, settings, design, tasks=tasks or None, on_round=on_round,
                          agents_file=settings.agents, progress=progress, provenance=inputs.provenance)
    if result.estimates is not None:
        for line in render_estimates(result.estimates, design, simulated):
            err.print(line, highlight=False, markup=False)
    if result.stop_reason == "interrupted":
        err.print("stopped before the round finished: run the same command again to resume")
    else:
        what = {"target": "target met", "max_n": "max-n reached before the target"}[result.stop_reason]
        err.print(f"adaptive run finished ({what}): {result.rollouts} rollouts used, "
                  f"{result.fixed_rollouts} for the fixed design at n={max_n} "
                  f"({result.rollouts / result.fixed_rollouts:.0%}); rounds in {out / ADAPTIVE_FILE}")
    return result
