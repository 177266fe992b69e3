"""``reliabench proxy``: do single-rollout proxies agree with reliability@k over repeated runs?"""

from __future__ import annotations

import click

from reliabench.commands._common import emit, format_option, source_options
from reliabench.report.marks import simulated_agents_note
from reliabench.report.proxy_tables import render_proxy_output
from reliabench.studies.proxy_validity import proxy_study

__all__ = ["command"]


@click.command("proxy")
@click.argument("source", metavar="SOURCE")
@source_options()
@click.option("-k", "k", type=int, default=1, show_default=True,
              help="The k of reliability@k (pairs with fewer than k rollouts are left out).")
@format_option()
@click.option("--confidence", type=float, default=0.95, show_default=True, help="CI level.")
@click.option("--resamples", type=int, default=2_000, show_default=True,
              help="Bootstrap resamples over tasks (0: no intervals).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
def command(source: str, input_format: str, leaderboard: str | None, k: int, fmt: str, confidence: float,
            resamples: int, seed: int) -> None:
    """Rank-correlate single-rollout proxies with reliability@k (SOURCE: any source `score` reads).

    Proxies: the first rollout's test pass fraction and its verdict. Reported: Spearman rho
    over (task, agent) pairs and over agents, Kendall tau of the agent ranking, each with a
    seeded bootstrap CI over tasks.
    """
    from reliabench.runs import read_source

    records = list(read_source(source, input_format, leaderboard=leaderboard).records)
    study = proxy_study(records, k=k, confidence=confidence, n_resamples=resamples, seed=seed)
    simulated = sorted({r.agent for r in records if r.simulated})
    emit(render_proxy_output(study, fmt, simulated))
    if simulated and fmt == "csv":  # the CSV rows are correlations, not agents: say it beside them
        click.echo(f"note: {simulated_agents_note(simulated)}", err=True)
