"""``reliabench compare RECORDS``: paired difference of two agents, or who ranks first."""

from __future__ import annotations

import json

import click

from reliabench.commands._common import console as make_console
from reliabench.commands._common import source_options
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import count_pairs
from reliabench.report.compare_tables import (
    comparison_table,
    comparison_to_dict,
    rank_first_table,
    rank_first_to_dict,
)
from reliabench.report.terminal import print_parts
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
    from reliabench.runs import read_source

    table = count_pairs(read_source(records, input_format, leaderboard=leaderboard).records)
    if agent_a is not None and agent_b is not None:
        r = compare_agents(table, agent_a, agent_b, k, n_resamples=resamples,
                           confidence=confidence, seed=seed)
        if output == "json":
            click.echo(json.dumps(comparison_to_dict(r, table.simulated), indent=2))
        else:
            print_parts(make_console(), comparison_table(r, table.simulated))
        return
    rf = rank_first(table, k, n_resamples=resamples, seed=seed)
    if output == "json":
        click.echo(json.dumps(rank_first_to_dict(rf, table.simulated), indent=2))
    else:
        print_parts(make_console(), rank_first_table(rf, table.simulated))
