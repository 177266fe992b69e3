"""``reliabench compare RECORDS``: paired difference of two agents, or who ranks first."""

from __future__ import annotations

import json
from dataclasses import asdict

import click
from rich.table import Table

from reliabench.commands._common import agent_label, source_options
from reliabench.commands._common import console as make_console
from reliabench.errors import InvalidArgumentError
from reliabench.importers import load_source
from reliabench.metrics.analysis import count_pairs
from reliabench.studies.compare import compare_agents, rank_first

__all__ = ["command"]


@click.command("compare")
@click.argument("records", metavar="SOURCE")
@click.option("--a", "agent_a", default=None, help="First agent (difference = A - B).")
@click.option("--b", "agent_b", default=None, help="Second agent.")
@click.option("-k", "k", default=1, show_default=True, type=click.IntRange(min=1),
              help="k of reliability@k.")
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(min=1),
              help="Bootstrap resamples (and permutations).")
@click.option("--confidence", default=0.95, show_default=True,
              type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True))
@click.option("--seed", default=0, show_default=True, type=int)
@source_options()
@click.option("--format", "output", default="table", show_default=True,
              type=click.Choice(["table", "json"]))
def command(records: str, agent_a: str | None, agent_b: str | None, k: int, resamples: int,
            confidence: float, seed: int, input_format: str, leaderboard: str | None, output: str) -> None:
    """Compare agents on shared tasks: A - B with a paired CI and p-value, or rank-first odds.

    Without --a/--b: the bootstrap probability that each agent has the highest reliability@k.
    """
    if (agent_a is None) != (agent_b is None):
        raise InvalidArgumentError("give both --a and --b, or neither (to rank all agents)")
    table = count_pairs(load_source(records, input_format, leaderboard=leaderboard).records)
    console = make_console()
    if agent_a is not None and agent_b is not None:
        r = compare_agents(table, agent_a, agent_b, k, n_resamples=resamples,
                           confidence=confidence, seed=seed)
        if output == "json":
            click.echo(json.dumps({"comparison": asdict(r),
                                   "simulated_agents": sorted(table.simulated)}, indent=2))
            return
        t = Table(title=f"reliability@{k}: A - B on {r.tasks} shared task(s)")
        t.add_column("figure")
        t.add_column("value", overflow="fold")
        pct = round(100 * confidence)
        for label, value in (
            ("A", agent_label(r.agent_a, table.simulated)), ("B", agent_label(r.agent_b, table.simulated)),
            (f"reliability@{k} of A", f"{r.value_a:.4f}"), (f"reliability@{k} of B", f"{r.value_b:.4f}"),
            ("difference A - B", f"{r.difference:+.4f}"),
            (f"{pct}% CI (paired bootstrap over tasks)", f"[{r.ci_low:+.4f}, {r.ci_high:+.4f}]"),
            ("p-value (paired sign-flip permutation, two-sided)", f"{r.p_value:.4g}"),
            ("tasks where A > B / A < B", f"{r.wins} / {r.losses}"),
            ("resamples / seed", f"{r.n_resamples} / {r.seed}"),
        ):
            t.add_row(label, value)
        console.print(t)
        if r.excluded:
            console.print(f"note: {r.excluded} task(s) left out (not run >= {k} times by both)")
        return
    rf = rank_first(table, k, n_resamples=resamples, seed=seed)
    if output == "json":
        click.echo(json.dumps({"rank_first": asdict(rf), "simulated_agents": sorted(table.simulated)},
                              indent=2))
        return
    t = Table(title=f"who ranks first on reliability@{k} ({rf.tasks} shared task(s), "
                    f"{rf.n_resamples} bootstrap resamples)")
    for col in ("agent", f"reliability@{k}", "P(first)"):
        t.add_column(col)
    for name, mean, share in zip(rf.agents, rf.values, rf.p_first, strict=True):
        t.add_row(agent_label(name, table.simulated), f"{mean:.3f}", f"{share:.3f}")
    console.print(t)
    if rf.excluded:
        console.print(f"note: {rf.excluded} task(s) left out (not run >= {k} times by every agent)")
