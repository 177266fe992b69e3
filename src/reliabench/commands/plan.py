"""``reliabench plan``: rollouts per task and tasks needed, from pilot data or assumed rates."""

from __future__ import annotations

import json

import click

from reliabench.commands._common import console, source_options
from reliabench.errors import InvalidArgumentError
from reliabench.report.plan_tables import plan_tables, plan_to_dict
from reliabench.report.terminal import print_parts
from reliabench.studies.planning import (
    AgentModel,
    default_spread,
    fit_pilot,
    pilot_correlation,
    plan_difference,
    plan_half_width,
    shift_to_difference,
    variance_components,
)

__all__ = ["command"]


def _named(values: tuple[str, ...], option: str) -> dict[str | None, float]:
    out: dict[str | None, float] = {}
    for text in values:
        name, sep, num = text.rpartition("=")
        key = name if sep else None
        try:
            value = float(num)
        except ValueError:
            raise InvalidArgumentError(f"{option} expects NUMBER or AGENT=NUMBER, got {text!r}") from None
        if key in out:
            raise InvalidArgumentError(f"{option} given twice for {key or 'all agents'}: {text!r}")
        out[key] = value
    return out


def _models(rates: tuple[str, ...], spreads: tuple[str, ...], icc: float) -> list[AgentModel]:
    rate_map = _named(rates, "--rate")
    spread_map = _named(spreads, "--spread")
    if None in rate_map and len(rate_map) > 1:
        raise InvalidArgumentError("--rate: give one unnamed rate, or AGENT=RATE for each agent")
    models = []
    for name, mean in rate_map.items():
        label = name or "A"
        spread = spread_map.get(name, spread_map.get(None))
        if spread is None:
            spread = default_spread(mean, icc) if 0.0 <= mean <= 1.0 else 0.0
        models.append(AgentModel(label, mean, spread))
    unknown = sorted(k for k in spread_map if k is not None and k not in rate_map)
    if unknown:
        raise InvalidArgumentError(f"--spread for agent(s) without a --rate: {', '.join(unknown)}")
    return models


@click.command("plan")
@click.option("--pilot", default=None, metavar="SOURCE",
              help="Pilot records (any importable format) to estimate the rate model from.")
@source_options()
@click.option("--rate", "rates", multiple=True,
              help="Assumed mean per-task success rate: 0.3, or AGENT=0.3 (repeat for two agents).")
@click.option("--spread", "spreads", multiple=True,
              help="Sd of per-task rates: 0.2, or AGENT=0.2 (default: from --icc).")
@click.option("--icc", default=0.5, show_default=True, type=float,
              help="Default spread: share of rollout variance between tasks.")
@click.option("-k", "k", default=1, show_default=True, type=click.IntRange(min=1))
@click.option("--half-width", type=float, default=None, help="Target CI half-width of reliability@k.")
@click.option("--confidence", default=0.95, show_default=True, type=float)
@click.option("--difference", type=float, default=None,
              help="Difference in reliability@k to detect between two agents.")
@click.option("--power", default=0.8, show_default=True, type=float)
@click.option("--alpha", default=0.05, show_default=True, type=float)
@click.option("--correlation", type=float, default=None,
              help="Correlation of the two agents' per-task rates (default: pilot, else 0.5).")
@click.option("--a", "agent_a", default=None, help="Agent A (pilot or named rates).")
@click.option("--b", "agent_b", default=None, help="Agent B.")
@click.option("--max-tasks", type=click.IntRange(min=2), default=None,
              help="Tasks available: recommend the fewest rollouts that fit.")
@click.option("--rollouts", default=None, help="Candidate rollouts per task, e.g. 1,2,5,10.")
@click.option("--max-n", type=click.IntRange(min=1), default=None,
              help="With --pilot (a finished run): is its decision settled, and what would an adaptive "
                   "continuation up to this many rollouts per task need? (with --half-width or --settle)")
@click.option("--settle", multiple=True, help="With --max-n: settle A,B (repeatable; 'all' for every pair).")
@click.option("--margin", type=float, default=0.0, show_default=True,
              help="With --settle: equivalence margin.")
@click.option("--format", "output", default="table", show_default=True,
              type=click.Choice(["table", "json"]))
def command(pilot: str | None, input_format: str, leaderboard: str | None, rates: tuple[str, ...],
            spreads: tuple[str, ...], icc: float, k: int, half_width: float | None, confidence: float,
            difference: float | None, power: float, alpha: float, correlation: float | None,
            agent_a: str | None, agent_b: str | None, max_tasks: int | None, rollouts: str | None,
            max_n: int | None, settle: tuple[str, ...], margin: float, output: str) -> None:
    """Plan rollouts per task and tasks for a CI half-width, or for power to detect a difference."""
    if (pilot is None) == (not rates):
        raise InvalidArgumentError("give either --pilot RECORDS or --rate (not both)")
    if max_n is not None or settle:
        if pilot is None or max_n is None:
            raise InvalidArgumentError("--max-n and --settle need --pilot (a finished run) and --max-n")
        from reliabench.commands._continuation import plan_continuation

        plan_continuation(pilot, input_format, leaderboard, k=k, max_n=max_n, half_width=half_width,
                          settle=settle, margin=margin, confidence=confidence, output=output)
        return
    if pilot is not None:
        from reliabench.runs import read_source

        records = read_source(pilot, input_format, leaderboard=leaderboard).records
        models = list(fit_pilot(records))
        simulated: set[str] | None = {r.agent for r in records if r.simulated}
    else:
        records = ()
        models = _models(rates, spreads, icc)
        simulated = None
    by_name = {m.name: m for m in models}
    for name in (agent_a, agent_b):
        if name is not None and name not in by_name:
            raise InvalidArgumentError(f"no agent {name!r}; known: {', '.join(by_name)}")
    options = None
    if rollouts:
        try:
            options = [int(x) for x in rollouts.split(",") if x.strip()]
        except ValueError:
            raise InvalidArgumentError(f"--rollouts expects integers like 1,2,5, got {rollouts!r}") from None
    two = len(models) >= 2 and (pilot is None or (agent_a and agent_b))
    if half_width is not None and difference is not None:
        raise InvalidArgumentError("give --half-width or --difference, not both")
    if half_width is not None or (difference is None and not two):
        if half_width is None:
            raise InvalidArgumentError("give --half-width (or --difference with two agents)")
        chosen = [by_name[n] for n in (agent_a, agent_b) if n] or models
        plan = plan_half_width(chosen, k, half_width, confidence=confidence,
                               rollout_options=options, max_tasks=max_tasks)
    else:
        a = by_name[agent_a] if agent_a else models[0]
        if agent_b:
            b = by_name[agent_b]
        elif len(models) >= 2 and pilot is None:
            b = models[1]
        else:
            if difference is None:
                raise InvalidArgumentError("give --difference (or two agents' rates)")
            b = shift_to_difference(a, difference, k, name=f"{a.name} + {difference}")
        if difference is None:
            difference = variance_components(b, k, k).value - variance_components(a, k, k).value
            if abs(difference) < 1e-9:
                raise InvalidArgumentError("the two rates give the same reliability@k: give --difference")
        if correlation is None:
            correlation = pilot_correlation(records, a.name, b.name) if (pilot and agent_b) else 0.5
        plan = plan_difference(a, b, k, difference, correlation=correlation, alpha=alpha, power=power,
                               rollout_options=options, max_tasks=max_tasks)
    if output == "json":
        click.echo(json.dumps(plan_to_dict(plan, simulated), indent=2))
    else:
        print_parts(console(), plan_tables(plan, simulated or ()))
