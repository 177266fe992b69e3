"""Options and helpers shared by the sub-commands."""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from reliabench.errors import InvalidArgumentError

if TYPE_CHECKING:  # imported where used: `reliabench --help` imports this module and nothing heavy
    from rich.console import Console

    from reliabench.agents.base import Agent
    from reliabench.metrics.security import FindingFilter, SecurityThreshold
    from reliabench.run.settings import RunSettings
    from reliabench.runs import RunDirectory, Source
    from reliabench.studies.scoring import ScoreResult, TaskLabels
    from reliabench.tasks.suite import Suite

__all__ = [
    "RunInputs",
    "by_option",
    "console",
    "emit",
    "format_option",
    "invocation",
    "k_option",
    "prepare_run",
    "resolve_security",
    "run_provenance",
    "sandbox_option",
    "security_config_option",
    "set_invocation",
    "source_options",
    "task_labels",
    "test_workers_option",
    "threshold_option",
    "write_page",
]

F = TypeVar("F", bound=Callable[..., Any])

_INVOCATION: list[str] = []


def set_invocation(args: list[str]) -> None:
    """Remember the arguments the CLI was called with (for provenance in run metadata)."""
    _INVOCATION[:] = args


def invocation() -> list[str]:
    """The command line of this CLI call: ``["reliabench", *args]``."""
    return ["reliabench", *_INVOCATION]


def source_options() -> Callable[[F], F]:
    """``--input-format`` and ``--leaderboard``: how ``importers.load_source`` reads the source."""
    from reliabench.commands._registry_choice import RegistryChoice
    from reliabench.importers import IMPORTERS

    fmt = click.option("--input-format", "input_format", default="auto", show_default=True,
                       type=RegistryChoice(IMPORTERS, ["auto"]),
                       help="Format of the source (auto: detected from its content).")
    board = click.option("--leaderboard", default=None,
                         help="SWE-bench leaderboards file: the leaderboard to read (e.g. bash-only).")

    def decorate(f: F) -> F:
        return fmt(board(f))

    return decorate


def bootstrap_options(resamples: int = 10_000) -> Callable[[F], F]:
    """``--confidence``, ``--resamples`` and ``--seed``: the bootstrap intervals over tasks."""
    level = click.option("--confidence", type=float, default=0.95, show_default=True, help="CI level.")
    count = click.option("--resamples", type=int, default=resamples, show_default=True,
                         help="Bootstrap resamples over tasks (0: no intervals).")
    seed = click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed.")

    def decorate(f: F) -> F:
        return level(count(seed(f)))

    return decorate


def _parse_threshold_cb(ctx: click.Context, param: click.Parameter, value: str) -> SecurityThreshold:
    from reliabench.metrics.security import parse_threshold

    try:
        return parse_threshold(value)
    except InvalidArgumentError as exc:
        raise click.BadParameter(str(exc)) from None


def k_option(default: str = "1,5,10") -> Callable[[F], F]:
    """``-k 1,5,10``: the k values."""
    return click.option("-k", "ks", default=default, show_default=True,
                        help="Comma-separated k values for reliability@k and pass^k.")


def by_option() -> Callable[[F], F]:
    """``--by language|tag``: the figures per group of tasks too (a run directory's tasks)."""
    return click.option("--by", type=click.Choice(["language", "tag"]), default=None,
                        help="Also give the figures per group of tasks: by each task's language, or "
                             "by each of its tags (a run directory: the run keeps them).")


def task_labels(src: Source, by: str | None) -> dict[str, TaskLabels] | None:
    """Each task's labels for ``--by`` (None when not asked).

    Raises:
        UsageError: ``--by`` was asked of a source whose tasks' labels are unknown.
    """
    if by is None:
        return None
    labels = src.run.task_labels() if src.run is not None else None
    if labels is None:
        from reliabench.errors import UsageError

        raise UsageError(f"--by {by}: {src.name} has no task labels (a run directory keeps each task's "
                         "language and tags; for records of another source there are none)")
    return labels


def format_option(choices: tuple[str, ...] = ("table", "json", "csv", "markdown")) -> Callable[[F], F]:
    """``--format``: output format."""
    return click.option("--format", "fmt", type=click.Choice(choices), default=choices[0],
                        show_default=True, help="Output format.")


def threshold_option() -> Callable[[F], F]:
    """``--security-threshold SEVERITY[:CONFIDENCE]``."""
    return click.option("--security-threshold", "threshold", default="high:medium", show_default=True,
                        callback=_parse_threshold_cb,
                        help="Findings at or above SEVERITY[:CONFIDENCE] make a rollout insecure "
                             "(severity: info|low|medium|high|critical; confidence: low|medium|high).")


def emit(text: str) -> None:
    """Write ``text`` to stdout (no extra newline)."""
    sys.stdout.write(text)
    sys.stdout.flush()


def security_config_option() -> Callable[[F], F]:
    """``--security-config FILE``: threshold and allow/deny lists (see docs/scanners.md)."""
    return click.option("--security-config", "security_config", default=None,
                        type=click.Path(path_type=Path, dir_okay=False),
                        help="Security policy TOML: threshold, allow_rules, deny_rules, allow_cwes, "
                             "deny_cwes.")


def sandbox_option(default: str | None = "auto",
                   help: str = "Sandbox backend: auto (the strongest that works here) or a name of the "
                               "registry (see docs/guide.md).") -> Callable[[F], F]:
    """``--sandbox``: ``auto`` or a backend of the registry (built-ins and plugins)."""
    from reliabench.commands._registry_choice import RegistryChoice
    from reliabench.sandbox import SANDBOXES

    return click.option("--sandbox", type=RegistryChoice(SANDBOXES, ["auto"]), default=default,
                        show_default=default is not None, help=help)


def test_workers_option() -> Callable[[F], F]:
    """``--test-workers auto|warm|fresh``: where the hidden tests run (see docs/guide.md)."""
    return click.option("--test-workers", "test_workers", type=click.Choice(["auto", "warm", "fresh"]),
                        default="auto", show_default=True,
                        help="Hidden tests in warm sandboxed workers (one forked jail per rollout; "
                             "warm), a fresh sandboxed process per rollout (fresh), or warm where "
                             "it works (auto).")


def resolve_security(
    ctx: click.Context, threshold: SecurityThreshold, config: Path | None, run: RunDirectory | None = None
) -> tuple[SecurityThreshold, FindingFilter | None]:
    """Combine ``--security-threshold`` and ``--security-config`` (or ``run``'s stored policy).

    An explicit ``--security-threshold`` wins over the policy's threshold.
    """
    from reliabench.metrics.security import load_security_config, security_config_from_dict

    policy = None
    if config is not None:
        policy = load_security_config(config)
    elif run is not None:
        stored = run.info().security_policy
        if stored:
            policy = security_config_from_dict(dict(stored), f"{run.path} (stored security policy)")
    if policy is None:
        return threshold, None
    explicit = ctx.get_parameter_source("threshold") is click.core.ParameterSource.COMMANDLINE
    chosen = threshold if explicit or policy.threshold is None else policy.threshold
    return chosen, policy.finding_filter


def console(*, stderr: bool = False) -> Console:
    """A rich console: the terminal's width on a terminal, 150 columns in a pipe or file."""
    from rich.console import Console

    probe = Console(stderr=stderr)
    return Console(stderr=stderr, highlight=False, width=None if probe.is_terminal else 150)


def run_provenance(agents_file: Path, settings: RunSettings | None = None) -> dict[str, object]:
    """What to keep with the run besides its identity, secrets masked.

    The command line, the agents' configuration and the effective run configuration (what
    ``reliabench show RUN`` prints).
    """
    from reliabench.files.toml import read_toml
    from reliabench.report.provenance import mask_argv, mask_secrets
    from reliabench.run.settings import settings_to_dict

    out: dict[str, object] = {"command_line": mask_argv(invocation()),
                              "agents_config": mask_secrets(dict(read_toml(agents_file, "an agents file")))}
    if settings is not None:
        out["settings"] = mask_secrets(settings_to_dict(settings))
    return out


@dataclass(frozen=True)
class RunInputs:
    """What ``reliabench run`` loaded before running: the suite, the agents, the settings to run.

    Attributes:
        suite: The suite.
        agents: The agents, checked (:mod:`reliabench.agents.preflight`).
        settings: The settings to run, with the agents file's hash.
        provenance: What the run keeps besides its identity (:func:`run_provenance`), the
            settings among it with absolute paths (``--config`` can take them from anywhere).
    """

    suite: Suite
    agents: list[Agent]
    settings: RunSettings
    provenance: dict[str, object]


def prepare_run(settings: RunSettings) -> RunInputs:
    """Load and check the suite and the agents ``settings`` names, as every run does.

    Raises:
        UsageError: no suite, agents file or run directory is given.
        PreflightError: an agent's key variable is unset or its endpoint is not usable
            (``settings.preflight`` False checks only the variables).
    """
    import hashlib
    from dataclasses import replace

    from reliabench.agents.config import load_agents
    from reliabench.agents.preflight import check_agents, preflight_error
    from reliabench.errors import UsageError
    from reliabench.tasks.suite import resolve_suite

    spec, agents_file, out = settings.suite, settings.agents, settings.out
    for value, flag in ((spec, "SUITE"), (agents_file, "--agents"), (out, "--out")):
        if value is None:
            raise UsageError(f"reliabench run needs {flag} (on the command line or in --config FILE)")
    assert spec is not None
    assert agents_file is not None
    assert out is not None
    suite = resolve_suite(spec)
    agents = load_agents(agents_file, suite=suite)
    problems = check_agents(agents, network=settings.preflight)
    if problems:
        raise preflight_error(problems)
    settings = replace(settings, agents_config_hash=hashlib.sha256(agents_file.read_bytes()).hexdigest())
    kept = replace(settings, agents=agents_file.resolve(), out=out.absolute(),
                   suite=str(suite.root.resolve()) if Path(spec).exists() else spec)
    return RunInputs(suite, agents, settings, run_provenance(agents_file, kept))


def write_page(src: Source, result: ScoreResult, path: Path, *, title: str | None = None,
               max_bytes: int | None = None) -> int:
    """Write the report page of ``result`` (read from ``src``) to ``path``; return its size in bytes.

    The page of ``reliabench report``, ``score --html`` and ``demo``: its figures are computed
    here (``studies.scoring.page_figures``), a run's artifacts and provenance come from
    ``src.run``.
    """
    from reliabench.report.explorer import DEFAULT_MAX_BYTES, render_report_page, write_report_page
    from reliabench.studies.scoring import page_figures

    page = render_report_page(result.records, result.report,
                              figures=page_figures(result.report, result.records), source=src.name,
                              source_format=src.format, run=src.run,
                              noise=None if result.noise is None else result.noise.report, title=title,
                              max_bytes=max_bytes or DEFAULT_MAX_BYTES, notes=src.notes,
                              groups=result.groups,
                              repository=result.repository)
    write_report_page(path, page)
    return len(page.encode())
