"""``reliabench view RUN``: serve a run's report with its explorer on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import click

from reliabench.commands._common import k_option, resolve_security, security_config_option, threshold_option
from reliabench.errors import InvalidArgumentError, UsageError
from reliabench.metrics.analysis import parse_ks
from reliabench.metrics.security import SecurityThreshold

__all__ = ["command"]


@click.command("view")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False, readable=False))
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Loopback address to bind (anything else is refused).")
@click.option("--port", type=click.IntRange(min=0, max=65535), default=8765, show_default=True,
              help="Port (0: any free port).")
@k_option()
@threshold_option()
@security_config_option()
@click.option("--resamples", type=int, default=2_000, show_default=True,
              help="Bootstrap resamples over tasks (0: no intervals).")
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")
@click.pass_context
def command(ctx: click.Context, run_dir: Path, host: str, port: int, ks: str,
            threshold: SecurityThreshold, security_config: Path | None, resamples: int,
            seed: int) -> None:
    """Serve the report of RUN on a loopback address; rollout details are read on demand.

    The same page as `reliabench report RUN -o FILE`, for runs too large for one file.
    Stop with Ctrl-C.
    """
    from reliabench.report.serve import check_loopback, make_server
    from reliabench.runs import open_source
    from reliabench.studies.scoring import page_figures, score_result

    try:
        k_values = parse_ks(ks)
        check_loopback(host)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc), param_hint="-k" if "k must" in str(exc) else "--host") from None
    with open_source(str(run_dir)) as src:
        run = src.run
        if run is None:  # a folder of another harness's results
            raise click.BadParameter(f"{run_dir}: not a run directory", param_hint="RUN")
        threshold, finding_filter = resolve_security(ctx, threshold, security_config, run)
        result = score_result(src.records, k_values, threshold=threshold, finding_filter=finding_filter,
                              n_resamples=resamples, seed=seed, retests=run.retests(), source=str(run_dir))
        try:
            figures = page_figures(result.report, result.records)
            server = make_server(run, result.records, result.report, figures,
                                 noise=None if result.noise is None else result.noise.report,
                                 host=host, port=port, background=False)
        except OSError as exc:
            raise UsageError(f"cannot listen on {host}:{port} ({exc.strerror or exc}); "
                             "pick another --port (0: any free port)") from None
        click.echo(f"serving the report of {run_dir} at {server.url} (loopback only; Ctrl-C stops)", err=True)
        try:
            server.httpd.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.httpd.server_close()
