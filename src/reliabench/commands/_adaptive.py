"""The adaptive part of ``reliabench run`` (``--adaptive``): parse the target, run rounds, print them."""

from __future__ import annotations

import hashlib
import itertools
import sys
from dataclasses import replace
from pathlib import Path

from reliabench.agents.config import load_agents
from reliabench.commands._common import console, run_provenance
from reliabench.errors import InvalidArgumentError
from reliabench.report.adaptive_tables import render_estimates, render_step
from reliabench.report.marks import simulated_agents_note
from reliabench.run.adaptive import AdaptiveRunResult, run_adaptive
from reliabench.run.runner import ProgressEvent, RunSettings
from reliabench.runs.adaptive_file import ADAPTIVE_FILE
from reliabench.studies.adaptive import AdaptiveDesign, Step
from reliabench.tasks.suite import resolve_suite

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


def execute_adaptive(suite_spec: str, agents_file: Path, out: Path, settings: RunSettings, *,
                     first: int, max_n: int, k: int, half_width: float | None, settle: tuple[str, ...],
                     margin: float, tasks: tuple[str, ...] = (), preflight: bool = True) -> AdaptiveRunResult:
    """Load suite and agents, check them (as ``run`` does), run adaptively, print each round."""
    from reliabench.agents.preflight import check_agents, preflight_error

    suite = resolve_suite(suite_spec)
    agents = load_agents(agents_file, suite=suite)
    problems = check_agents(agents, network=preflight)
    if problems:
        raise preflight_error(problems)
    names = [a.name for a in agents]
    if (half_width is None) == (not settle):
        raise InvalidArgumentError("--adaptive needs one target: --target-half-width H or --settle A,B")
    design = AdaptiveDesign(first=first, max_n=max_n, k=k, target_half_width=half_width,
                            settle=parse_settle(settle, names) if settle else (), margin=margin)
    settings = replace(settings, n=first,
                       agents_config_hash=hashlib.sha256(agents_file.read_bytes()).hexdigest())
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
                          agents_file=agents_file, progress=progress, provenance=run_provenance(agents_file))
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
