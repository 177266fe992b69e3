"""``reliabench run``: n independent rollouts of each agent on each task, resumable."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

import click
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from reliabench.agents.config import load_agents
from reliabench.agents.preflight import check_agents, preflight_error
from reliabench.commands._common import (
    console,
    run_provenance,
    sandbox_option,
    security_config_option,
    test_workers_option,
)
from reliabench.commands._registry_choice import RegistryChoice
from reliabench.report.marks import simulated_agents_note
from reliabench.run.executors import EXECUTORS
from reliabench.run.runner import ProgressEvent, RunSettings, RunSummary, run_suite
from reliabench.tasks.suite import resolve_suite

__all__ = ["command", "execute_run"]


def execute_run(suite_spec: str, agents_file: Path, n: int, out: Path, *, workers: int, seed: int,
                sandbox: str, scanners: tuple[str, ...], tasks: tuple[str, ...] = (),
                test_timeout: float | None = None, security_config: Path | None = None,
                executor: str = "local", ray_address: str | None = None,
                quiet: bool = False, preflight: bool = True, retest: int = 0,
                test_workers: str = "auto") -> RunSummary:
    """Load suite and agents, check them, run with a progress display, return the summary.

    The checks are :mod:`reliabench.agents.preflight`'s.

    Raises:
        PreflightError: an agent's key variable is unset or its endpoint is not usable
            (``preflight=False`` checks only the variables).
    """
    suite = resolve_suite(suite_spec)
    agents = load_agents(agents_file, suite=suite)
    problems = check_agents(agents, network=preflight)
    if problems:
        raise preflight_error(problems)
    settings = RunSettings(
        n=n, seed=seed, workers=workers, sandbox=sandbox, scanners=scanners,
        agents_config_hash=hashlib.sha256(agents_file.read_bytes()).hexdigest(),
        test_timeout_s=test_timeout,
        security_policy=_policy(security_config),
        executor=executor,
        ray_address=ray_address,
        retest=retest,
        test_workers=test_workers,
    )
    err = console(stderr=True)
    simulated = [a.name for a in agents if a.simulated]
    if not quiet:
        err.print(f"suite [bold]{suite.name}[/] {suite.version}: {len(tasks) or len(suite.tasks)} task(s) x "
                  f"{len(agents)} agent(s) x n={n} -> {out}")
        if simulated:
            err.print(f"[yellow]{simulated_agents_note(simulated)}[/]")
    prov = run_provenance(agents_file)
    if quiet:
        return run_suite(suite, agents, out, settings, tasks=tasks or None, agents_file=agents_file,
                         provenance=prov)
    if err.is_terminal:
        with Progress(TextColumn("[bold]rollouts"), BarColumn(), MofNCompleteColumn(),
                      TextColumn("passed {task.fields[passed]}"), TimeElapsedColumn(),
                      TextColumn("ETA"), TimeRemainingColumn(), console=err) as bar:
            handle = bar.add_task("run", total=None, passed=0)

            def show(ev: ProgressEvent) -> None:
                bar.update(handle, completed=ev.done, total=ev.total, passed=ev.passed)

            summary = run_suite(suite, agents, out, settings, tasks=tasks or None, progress=show,
                                agents_file=agents_file, provenance=prov)
    else:
        step = max(1, (len(tasks) or len(suite.tasks)) * len(agents) * n // 20)

        def plain(ev: ProgressEvent) -> None:
            if ev.done % step == 0 or ev.done == ev.total:
                print(f"rollouts {ev.done}/{ev.total} passed {ev.passed}", file=sys.stderr, flush=True)

        summary = run_suite(suite, agents, out, settings, tasks=tasks or None, progress=plain,
                            agents_file=agents_file, provenance=prov)
    verb = "resumed" if summary.resumed else "ran"
    err.print(f"{verb}: {summary.executed} rollout(s) executed, {summary.skipped} already recorded, "
              f"{summary.infra_errors} infra error(s); isolation: {summary.isolation}"
              f"{f' (hidden tests: {summary.test_path} workers)' if summary.test_path else ''}; "
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


@click.command("run")
@click.argument("suite", metavar="SUITE")
@click.option("--agents", "agents_file", required=True, type=click.Path(path_type=Path, dir_okay=False),
              help="The agents file (TOML, one [[agents]] table per agent).")
@click.option("-n", "n", type=click.IntRange(min=1), default=10, show_default=True,
              help="Rollouts per (task, agent).")
@click.option("--out", "out", required=True, type=click.Path(path_type=Path, file_okay=False),
              help="Run directory (created; an existing one with the same config is resumed).")
@click.option("--workers", type=click.IntRange(min=1), default=os.cpu_count() or 1, show_default="CPU count",
              help="Parallel rollouts.")
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
              help="Address of a running Ray cluster (default: start a local one with --workers CPUs).")
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
def command(suite: str, agents_file: Path, n: int, out: Path, workers: int, seed: int, sandbox: str,
            scanners: tuple[str, ...], tasks: tuple[str, ...], test_timeout: float | None,
            security_config: Path | None, executor: str, ray_address: str | None,
            no_preflight: bool, retest: int, adaptive: bool, max_n: int | None,
            target_half_width: float | None, settle: tuple[str, ...], margin: float, k: int,
            test_workers: str) -> None:
    """Run every agent of the agents file n times on each task of SUITE (a path or a bundled name)."""
    if not agents_file.is_file():
        raise click.BadParameter(f"{agents_file}: no such file", param_hint="--agents")
    if adaptive:
        if max_n is None:
            raise click.BadParameter("--adaptive needs --max-n", param_hint="--max-n")
        from reliabench.commands._adaptive import execute_adaptive

        settings = RunSettings(n=n, seed=seed, workers=workers, sandbox=sandbox, scanners=scanners,
                               test_timeout_s=test_timeout, security_policy=_policy(security_config),
                               executor=executor, ray_address=ray_address, retest=retest,
                               test_workers=test_workers)
        execute_adaptive(suite, agents_file, out, settings, first=n, max_n=max_n, k=k,
                         half_width=target_half_width, settle=settle, margin=margin, tasks=tasks,
                         preflight=not no_preflight)
        click.echo(f"run directory: {out}  (score it with: reliabench score {out})")
        return
    if max_n is not None or target_half_width is not None or settle:
        raise click.BadParameter("--max-n, --target-half-width and --settle need --adaptive",
                                 param_hint="--adaptive")
    execute_run(suite, agents_file, n, out, workers=workers, seed=seed, sandbox=sandbox,
                scanners=scanners, tasks=tasks, test_timeout=test_timeout, security_config=security_config,
                executor=executor, ray_address=ray_address, preflight=not no_preflight, retest=retest,
                test_workers=test_workers)
    click.echo(f"run directory: {out}  (score it with: reliabench score {out})")
