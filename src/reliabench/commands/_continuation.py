"""``reliabench plan --pilot RUN --max-n M``: is a finished run settled, and what would continuing cost?"""

from __future__ import annotations

import json
from pathlib import Path

import click
import numpy as np

from reliabench.commands._adaptive import parse_settle
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import count_pairs
from reliabench.report.adaptive_tables import continuation_to_json, render_estimates, render_step
from reliabench.runs import open_source
from reliabench.studies.adaptive import AdaptiveDesign, AgentCounts, continuation
from reliabench.studies.adaptive_estimate import stop_estimates
from reliabench.studies.adaptive_score import adaptive_score

__all__ = ["plan_continuation"]


def plan_continuation(pilot: str | Path, input_format: str, leaderboard: str | None = None, *,
                      k: int, max_n: int, half_width: float | None,
                      settle: tuple[str, ...], margin: float, confidence: float, output: str) -> None:
    """Print whether the pilot's decision is settled and what an adaptive continuation needs."""
    with open_source(str(pilot), input_format, leaderboard=leaderboard) as src:
        records = list(src.records)
        state = src.run.adaptive() if src.run is not None else None
    table = count_pairs(records)
    present = table.n[table.n > 0]
    if present.size == 0:
        raise InvalidArgumentError(f"{pilot}: no eligible rollouts")
    first = int(present.min())
    if first < k:
        raise InvalidArgumentError(f"{pilot}: some task has only {first} rollout(s), fewer than k={k}")
    if max_n < first:
        raise InvalidArgumentError(f"--max-n must be >= the pilot's n ({first}), got {max_n}")
    design = AdaptiveDesign(first=first, max_n=max_n, k=k, confidence=confidence,
                            target_half_width=half_width,
                            settle=parse_settle(settle, list(table.agents)) if settle else (), margin=margin)
    counts = {a: AgentCounts(table.n[:, j].astype(np.int64), table.c[:, j].astype(np.int64))
              for j, a in enumerate(table.agents)}
    result = continuation(design, counts)
    # the estimates to quote if the run stops here: an adaptive pilot's own (unbiased at its
    # stop); otherwise the pilot is one fixed look, whose plain estimate is unbiased
    adaptive = adaptive_score(records, state) if state is not None else None
    estimates = (adaptive.estimates if adaptive is not None
                 else stop_estimates(design, [{a: first for a in counts}], [counts]))
    if output == "json":
        click.echo(json.dumps(continuation_to_json(result, estimates), indent=2))
        return
    click.echo(f"pilot {pilot}: {len(table.tasks)} task(s), n = {first} (look 1 of {list(design.schedule)}); "
               f"repeated {round(100 * confidence)}% intervals of reliability@{k}")
    for line in render_step(result.now, k):
        if not line.lstrip().startswith("next:"):
            click.echo(line)
    shown = adaptive.design if adaptive is not None else design
    for line in render_estimates(estimates, shown, {r.agent for r in records if r.simulated}):
        click.echo(line)
    if result.settled:
        click.echo("settled: the target is met with the pilot's rollouts; no more are needed")
        return
    for look in result.looks:
        widths = ", ".join(f"{t} +-{w:.3f}" for t, w in look.half_widths.items())
        mark = "  <- target met (projected)" if look.met else ""
        click.echo(f"  n {dict(look.n)}: +{look.extra_rollouts} rollouts; {widths}{mark}")
    if result.extra_rollouts is None:
        click.echo(f"not settled, and not projected to settle by max-n = {max_n} (more tasks, not "
                   "more rollouts, may be what it needs: see the floor in docs/statistics.md)")
    else:
        click.echo(f"not settled yet: an adaptive continuation needs about {result.extra_rollouts} more "
                   "rollouts (projected with the pilot's estimates held fixed; they will move): "
                   f"reliabench run SUITE --agents F --out {pilot} -n {first} --adaptive --max-n {max_n} ...")
