"""``reliabench simulate``: the synthetic multi-rollout benchmark, scored like ``reliabench score``."""

from __future__ import annotations

import sys

import click

from reliabench.commands._common import emit, format_option, k_option
from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import parse_ks
from reliabench.records import write_jsonl
from reliabench.sim.simulation_tables import HTML_TITLE, render_simulation
from reliabench.sim.synthetic import load_config, run_simulation, sweep, to_records

__all__ = ["command", "parse_sweep"]


def parse_sweep(specs: tuple[str, ...]) -> dict[str, list[float]]:
    """Parse ``PARAM=v1,v2,...`` options into ``{param: [values]}``.

    Raises:
        InvalidArgumentError: naming the bad option.
    """
    out: dict[str, list[float]] = {}
    for spec in specs:
        name, sep, raw = spec.partition("=")
        name = name.strip()
        if not sep or not name or not raw.strip():
            raise InvalidArgumentError(f"--sweep must look like PARAM=v1,v2,..., got {spec!r}")
        values = []
        for item in raw.split(","):
            try:
                values.append(float(item))
            except ValueError:
                raise InvalidArgumentError(f"--sweep {name}: not a number: {item.strip()!r}") from None
        if name in out:
            raise InvalidArgumentError(f"--sweep {name} given twice")
        out[name] = values
    return out


@click.command("simulate")
@click.option("--config", "config_path", type=click.Path(dir_okay=False), default=None,
              help="TOML file overriding any of the default parameters (see docs/simulate.md).")
@click.option("--seed", type=int, default=None,
              help="Seed of the generator and of the bootstrap (default: the config's seed).")
@click.option("--records", "records_path", type=click.Path(dir_okay=False), default=None,
              help="Also write the simulated rollouts as JSONL records to this file.")
@k_option()
@format_option()
@click.option("--proxy-k", type=int, default=1, show_default=True,
              help="The k of reliability@k in the proxy study.")
@click.option("--sweep", "sweeps", multiple=True, metavar="PARAM=v1,v2,...",
              help="Vary one parameter (k, n, tests, or any config key); repeatable.")
@click.option("--confidence", type=float, default=0.95, show_default=True, help="CI level.")
@click.option("--resamples", type=int, default=2_000, show_default=True,
              help="Bootstrap resamples over tasks (0: no intervals).")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), default=None,
              help="Also write a self-contained HTML report (with a figure per sweep).")
def command(config_path: str | None, seed: int | None, records_path: str | None, ks: str, fmt: str,
            proxy_k: int, sweeps: tuple[str, ...], confidence: float, resamples: int,
            html_path: str | None) -> None:
    """Generate a seeded synthetic benchmark, score it, and run the proxy study.

    The default configuration reproduces claim (1) of arXiv:2608.14711 at k=1: the
    misapplied pass@1 is 0.96-0.98 while reliability@1 is 0.00-0.12. Output: the score
    table of `reliabench score`, then the proxy study (claim 2), then any sweep.
    """
    try:
        k_values = parse_ks(ks)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="-k") from None
    try:
        sweep_specs = parse_sweep(sweeps)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="--sweep") from None
    cfg = load_config(config_path)
    result = run_simulation(cfg, seed=seed, ks=k_values, proxy_k=proxy_k, confidence=confidence,
                            n_resamples=resamples)
    if records_path is not None:
        write_jsonl(to_records(result.benchmark), records_path)
    swept = sweep(cfg, sweep_specs, seed=seed, ks=k_values, proxy_k=proxy_k) if sweep_specs else None
    if html_path is not None:
        from reliabench.report.html import sweep_figures, write_html_report
        from reliabench.studies.rank import rank_for_report

        extra = [sweep_figures(swept.to_rows())] if swept is not None else []
        write_html_report(result.report, html_path, extra_sections=extra, title=HTML_TITLE,
                          ranking=rank_for_report(result.report))
    emit(render_simulation(result, cfg, swept, fmt, color=fmt == "table" and sys.stdout.isatty()))
