"""``reliabench rank SOURCE``: every agent's rank interval, and which gaps are real."""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

import click

from reliabench.commands._common import console as make_console
from reliabench.commands._common import source_options
from reliabench.report.rank_tables import ranking_tables, ranking_to_dict
from reliabench.report.terminal import print_parts
from reliabench.studies.rank import (
    CORRECTIONS,
    METRICS,
    SAMPLINGS,
    Correction,
    Metric,
    Sampling,
    rank_agents,
)

__all__ = ["command"]


@click.command("rank")
@click.argument("source", metavar="SOURCE")
@source_options()
@click.option("-k", "k", default=1, show_default=True, type=click.IntRange(min=1), help="The k.")
@click.option("--metric", default="reliability", show_default=True, type=click.Choice(METRICS),
              help="reliability (reliability@k) or pass_hat (pass^k).")
@click.option("--level", default=0.95, show_default=True,
              type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              help="Confidence level of intervals; tests use alpha = 1 - level.")
@click.option("--correction", default="holm", show_default=True, type=click.Choice(CORRECTIONS),
              help="Over all pairs: holm (family-wise error) or bh (false discovery rate).")
@click.option("--sampling", default="tasks", show_default=True, type=click.Choice(SAMPLINGS),
              help="Resample tasks (covers rollout noise too) or two-level (also rollouts; wider).")
@click.option("--resamples", default=10_000, show_default=True, type=click.IntRange(min=1),
              help="Bootstrap resamples and sign-flip permutations.")
@click.option("--power", default=0.8, show_default=True,
              type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              help="Target power for the tasks a gap needs.")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--format", "output", default="table", show_default=True,
              type=click.Choice(["table", "json"]))
@click.option("--svg", "svg_path", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Also write the rank-interval figure as SVG.")
def command(source: str, input_format: str, leaderboard: str | None, k: int, metric: str, level: float,
            correction: str, sampling: str, resamples: int, power: float, seed: int, output: str,
            svg_path: Path | None) -> None:
    """Rank the agents of SOURCE with rank intervals and groups no corrected test separates.

    SOURCE: rollout JSONL (- for stdin), a run directory, or any format `import` reads.
    """
    from reliabench.runs import read_source

    loaded = read_source(source, input_format, leaderboard=leaderboard)
    r = rank_agents(loaded.records, k, metric=cast(Metric, metric), level=level,
                    correction=cast(Correction, correction), sampling=cast(Sampling, sampling),
                    n_resamples=resamples, power=power, seed=seed)
    if output == "json":
        doc = ranking_to_dict(r) | {"source": str(source), "format": loaded.format}
        click.echo(json.dumps(doc, indent=2))
    else:
        print_parts(make_console(), ranking_tables(r))
    if svg_path is not None:
        from reliabench.report.rank_figure import rank_figure_svg

        svg_path.parent.mkdir(parents=True, exist_ok=True)
        svg_path.write_text(rank_figure_svg(r) + "\n", encoding="utf-8")
        click.echo(f"figure: {svg_path}", err=True)
