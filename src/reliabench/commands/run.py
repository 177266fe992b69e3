"""``reliabench run``: n independent rollouts of each agent on each task, resumable.

Every option can come from a run configuration file (``--config run.toml``,
:mod:`reliabench.run.config_file`); an option given on the command line overrides the file.
The effective configuration is kept with the run (``reliabench show RUN`` prints it).
"""

from __future__ import annotations

import dataclasses
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from reliabench.commands._common import (
    console,
    prepare_run,
    sandbox_option,
    security_config_option,
    test_workers_option,
)
from reliabench.commands._registry_choice import RegistryChoice
from reliabench.report.marks import simulated_agents_note
from reliabench.run.executors import EXECUTORS
from reliabench.run.runner import ProgressEvent, RunSettings, RunSummary, run_suite
from reliabench.run.settings import AdaptiveSettings

__all__ = ["command", "execute_run", "settings_from_command"]


def execute_run(settings: RunSettings, *, quiet: bool = False) -> RunSummary:
    """Load suite and agents, check them, run with a progress display, return the summary.

    The checks are :mod:`reliabench.agents.preflight`'s.

    Raises:
        PreflightError: an agent's key variable is unset or its endpoint is not usable
            (``settings.preflight`` False checks only the variables).
    """
    inputs = prepare_run(settings)
    suite, agents, settings = inputs.suite, inputs.agents, inputs.settings
    assert settings.out is not None
    out, tasks, n = settings.out, settings.tasks, settings.n
    err = console(stderr=True)
    simulated = [a.name for a in agents if a.simulated]
    if not quiet:
        err.print(f"suite [bold]{suite.name}[/] {suite.version}: {len(tasks) or len(suite.tasks)} task(s) x "
                  f"{len(agents)} agent(s) x n={n} -> {out}")
        if simulated:
            err.print(f"[yellow]{simulated_agents_note(simulated)}[/]")
    call = dict(tasks=tasks or None, agents_file=settings.agents, provenance=inputs.provenance)
    if quiet:
        return run_suite(suite, agents, out, settings, **call)  # type: ignore[arg-type]
    if err.is_terminal:
        with Progress(TextColumn("[bold]rollouts"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("passed {task.fields[passed]}"), TimeElapsedColumn(),
                      TextColumn("ETA"), TimeRemainingColumn(), console=err) as bar:
            handle = bar.add_task("run", total=None, passed=0)

            def show(ev: ProgressEvent) -> None:
                bar.update(handle, completed=ev.done, total=ev.total, passed=ev.passed)

            summary = run_suite(suite, agents, out, settings, progress=show, **call)  # type: ignore[arg-type]
    else:
        step = max(1, (len(tasks) or len(suite.tasks)) * len(agents) * n // 20)

        def plain(ev: ProgressEvent) -> None:
            if ev.done % step == 0 or ev.done == ev.total:
                print(f"rollouts {ev.done}/{ev.total} passed {ev.passed}", file=sys.stderr, flush=True)

        summary = run_suite(suite, agents, out, settings, progress=plain, **call)  # type: ignore[arg-type]
    verb = "resumed" if summary.resumed else "ran"
    path = summary.test_path
    tests = f" (hidden tests: {path}{' workers' if path in ('warm', 'fresh') else ''})" if path else ""
    err.print(f"{verb}: {summary.executed} rollout(s) executed, {summary.skipped} already recorded, "
              f"{summary.infra_errors} infra error(s); isolation: {summary.isolation}{tests}; "
              f"{summary.seconds:.1f} s")
    if summary.isolation == "none":
        err.print("[bold red]WARNING: no sandbox isolation: agent code ran with rlimits only[/]")
    return summary


def _policy(path: Path | None) -> dict[str, object] | None:
    """Read a security policy file (validated) to keep with the run."""
    if path is None:
        return None
    from reliabench.files.toml import read_toml
    from reliabench.metrics.security import load_security_config

    load_security_config(path)  # validates, with file:field messages
    return dict(read_toml(path, "a security policy file"))


# command-line parameter -> RunSettings field (the others are mapped by settings_from_command)
_FIELDS: dict[str, str] = {
    "suite": "suite", "agents_file": "agents", "out": "out", "n": "n", "workers": "workers",
    "seed": "seed", "sandbox": "sandbox", "scanners": "scanners", "tasks": "tasks",
    "test_timeout": "test_timeout_s", "executor": "executor", "retest": "retest",
    "test_workers": "test_workers", "agents_in_flight": "agents_in_flight",
}
_ADAPTIVE_PARAMS: dict[str, str] = {"max_n": "max_n", "target_half_width": "target_half_width",
                                    "settle": "settle", "margin": "margin", "k": "k"}


def settings_from_command(ctx: click.Context, params: Mapping[str, Any]) -> RunSettings:
    """The effective settings: the ``--config`` file's, with the options given on the command line over them.

    An option not given on the command line takes the file's value, else its default.

    Raises:
        ConfigError: the file is not a valid run configuration (``FILE:LINE: ...``).
        click.BadParameter: adaptive options without ``--adaptive`` (or ``[adaptive]``), or
            ``--adaptive`` without ``--max-n``.
    """
    from reliabench.run.config_file import read_run_config

    def given(name: str) -> bool:
        return ctx.get_parameter_source(name) in (click.core.ParameterSource.COMMANDLINE,
                                                  click.core.ParameterSource.ENVIRONMENT)

    config: Path | None = params["config"]
    values: dict[str, Any] = read_run_config(config) if config is not None else {}
    for param, name in _FIELDS.items():
        if given(param) or name not in values:
            values[name] = params[param]
    if given("security_config") or "security_policy" not in values:
        values["security_policy"] = _policy(params["security_config"])
    if given("no_preflight") or "preflight" not in values:
        values["preflight"] = not params["no_preflight"]
    if params["ray_address"] is not None:
        options = {name: dict(opts) for name, opts in values.get("executor_options", {}).items()}
        options.setdefault("ray", {})["address"] = params["ray_address"]
        values["executor_options"] = options
    adaptive: AdaptiveSettings | None = values.get("adaptive")
    cli_adaptive = {field: params[p] for p, field in _ADAPTIVE_PARAMS.items() if given(p)}
    if params["adaptive"] or adaptive is not None:
        if adaptive is None:
            if params["max_n"] is None:
                raise click.BadParameter("--adaptive needs --max-n", param_hint="--max-n")
            adaptive = AdaptiveSettings(max_n=params["max_n"], k=params["k"],
                                        target_half_width=params["target_half_width"],
                                        settle=tuple(params["settle"]), margin=params["margin"])
        elif cli_adaptive:
            if "settle" in cli_adaptive:
                cli_adaptive["settle"] = tuple(cli_adaptive["settle"])
            adaptive = dataclasses.replace(adaptive, **cli_adaptive)
    elif cli_adaptive.keys() & {"max_n", "target_half_width", "settle"}:
        raise click.BadParameter("--max-n, --target-half-width and --settle need --adaptive",
                                 param_hint="--adaptive")
    values["adaptive"] = adaptive
    if values.get("agents") is not None and given("agents_file") and not Path(values["agents"]).is_file():
        raise click.BadParameter(f"{values['agents']}: no such file", param_hint="--agents")
    return RunSettings(**values)


@click.command("run")
@click.argument("suite", metavar="SUITE", required=False)
@click.option("--config", "config", type=click.Path(path_type=Path, dir_okay=False), default=None,
              help="Run configuration file (TOML: every option below; see docs/guide.md). Options "
                   "given on the command line override it.")
@click.option("--agents", "agents_file", default=None, type=click.Path(path_type=Path, dir_okay=False),
              help="The agents file (TOML, one [[agents]] table per agent).")
@click.option("-n", "n", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rollouts per (task, agent).")
@click.option("--out", "out", default=None, type=click.Path(path_type=Path, file_okay=False),
              help="Run directory (created; an existing one with the same config is resumed).")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="CPU count",
              help="Test slots: rollouts' CPU-bound phases (scan, hidden tests) at once.")
@click.option("--agents-in-flight", "agents_in_flight", type=click.IntRange(min=1), default=None,
              show_default="--workers",
              help="Agent phases at once, apart from the test slots (an agent waiting on its model "
                   "holds no test slot).")
@click.option("--seed", type=int, default=0, show_default=True, help="Run seed.")
@sandbox_option()
@click.option("--scanner", "scanners", multiple=True, default=("bandit",), show_default=True,
              help="Scanner to run on what agents wrote (repeatable).")
@click.option("--task", "tasks", multiple=True, help="Only this task id (repeatable).")
@click.option("--test-timeout", type=click.FloatRange(min=0.5), default=None,
              help="Cap on each task's timeout_s (seconds) for the hidden tests.")
@security_config_option()
@click.option("--executor", type=RegistryChoice(EXECUTORS), default="local", show_default=True,
              help="Where rollouts run: threads here, or Ray actors (pip install 'reliabench[ray]').")
@click.option("--ray-address", default=None,
              help="Address of a running Ray cluster (default: start a local one with --workers CPUs); "
                   "in a --config file: [executors.ray] address.")
@click.option("--no-preflight", "no_preflight", is_flag=True, default=False,
              help="Do not probe the agents' endpoints (GET /models) before the run; key variables "
                   "are still checked.")
@click.option("--retest", type=click.IntRange(min=0), default=0, show_default=True,
              help="Re-run each rollout's hidden tests R times on its unchanged files (harness noise).")
@click.option("--adaptive", is_flag=True,
              help="Rounds: start with -n rollouts, add rollouts only where they narrow an interval "
                   "(docs/statistics.md).")
@click.option("--max-n", type=click.IntRange(min=1), default=None, help="Adaptive: most rollouts per task.")
@click.option("--target-half-width", type=float, default=None,
              help="Adaptive: stop an agent once its reliability@k interval is at most +-H.")
@click.option("--settle", multiple=True,
              help="Adaptive: settle the comparison of A,B (repeatable; 'all' for every pair).")
@click.option("--margin", type=float, default=0.0, show_default=True,
              help="Adaptive --settle: a pair whose interval lies inside +-margin is settled as equivalent.")
@click.option("-k", "k", type=click.IntRange(min=1), default=1, show_default=True,
              help="Adaptive: the k of reliability@k the target is about.")
@test_workers_option()
@click.pass_context
def command(ctx: click.Context, /, **params: Any) -> None:
    """Run every agent of the agents file n times on each task of SUITE (a path or a bundled name)."""
    settings = settings_from_command(ctx, params)
    if settings.adaptive is not None:
        from reliabench.commands._adaptive import execute_adaptive

        execute_adaptive(settings)
    else:
        execute_run(settings)
    click.echo(f"run directory: {settings.out}  (score it with: reliabench score {settings.out})")
