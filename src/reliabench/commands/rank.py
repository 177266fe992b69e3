"""``reliabench rank SOURCE``: every agent's rank interval, and which gaps are real."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import cast

import click
from rich.table import Table

from reliabench.commands._common import SIMULATED, source_options
from reliabench.commands._common import console as make_console
from reliabench.importers import load_source
from reliabench.studies.rank import (
    CORRECTIONS,
    METRICS,
    SAMPLINGS,
    Correction,
    Metric,
    Ranking,
    Sampling,
    rank_agents,
    ranking_to_dict,
)

__all__ = ["command", "render"]


def _f(x: float) -> str:
    return "-" if not math.isfinite(x) else f"{x:.3f}"


def render(r: Ranking) -> None:
    """Print a ranking as tables (agents, adjacent gaps, groups) and its notes."""
    console = make_console()
    pct = round(100 * r.level)
    t = Table(title=f"{r.metric_name} on {r.tasks} shared task(s): {pct}% CIs and rank intervals "
                    f"({r.n_resamples} paired bootstrap resamples, {r.sampling} sampling, seed {r.seed})")
    for col in ("rank", "agent", r.metric_name, f"{pct}% CI", "rank interval", "groups"):
        t.add_column(col, overflow="fold")
    membership = {a.agent: [str(i + 1) for i, g in enumerate(r.groups) if a.agent in g] for a in r.agents}
    for a in r.agents:
        t.add_row(str(a.rank), a.agent + (f" {SIMULATED}" if a.simulated else ""), _f(a.value),
                  f"[{_f(a.ci_low)}, {_f(a.ci_high)}]", f"{a.rank_low}-{a.rank_high}",
                  ",".join(membership[a.agent]))
    console.print(t)
    g = Table(title=f"adjacent gaps: decisive at alpha = {1 - r.level:.2g}, {r.correction_label} over "
                    f"{len(r.pairs)} pairs ({r.decisive_gaps} of {len(r.gaps)} decisive)")
    for col in ("upper", "lower", "difference", "corrected p", "decisive",
                f"tasks for power {r.power:g}"):
        g.add_column(col, overflow="fold")
    for gap in r.gaps:
        g.add_row(gap.upper, gap.lower, f"{gap.difference:+.3f}", f"{gap.p_adjusted:.3g}",
                  ("yes" if gap.decisive else "no") + (" (borderline)" if gap.borderline else ""),
                  "-" if gap.tasks_needed is None else str(gap.tasks_needed))
    console.print(g)
    console.print(f"groups (maximal runs of consecutive agents with no separated pair; {len(r.groups)}):")
    for i, group in enumerate(r.groups, start=1):
        console.print(f"  {i}: {', '.join(group)}")
    for note in r.notes:
        console.print(f"note: {note}")


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
    loaded = load_source(source, input_format, leaderboard=leaderboard)
    r = rank_agents(loaded.records, k, metric=cast(Metric, metric), level=level,
                    correction=cast(Correction, correction), sampling=cast(Sampling, sampling),
                    n_resamples=resamples, power=power, seed=seed)
    if output == "json":
        doc = ranking_to_dict(r) | {"source": str(source), "format": loaded.format}
        click.echo(json.dumps(doc, indent=2))
    else:
        render(r)
    if svg_path is not None:
        from reliabench.report.rank_figure import rank_figure_svg

        svg_path.parent.mkdir(parents=True, exist_ok=True)
        svg_path.write_text(rank_figure_svg(r) + "\n", encoding="utf-8")
        click.echo(f"figure: {svg_path}", err=True)
