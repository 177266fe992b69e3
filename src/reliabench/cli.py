"""The ``reliabench`` command line: thin wrappers that parse, call the library, and render.

Each sub-command lives in its own module (:data:`COMMANDS`) and exposes ``command``; it is
imported only when it runs: ``reliabench --help`` lists the commands from the one-line
summaries below without importing any of them. Errors that reach the top are turned into one
line on stderr and the exit code of their class (see :mod:`reliabench.errors` and
``docs/guide.md``, "Exit codes").
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence
from dataclasses import dataclass

import click

from reliabench.errors import ReliabenchError

__all__ = ["COMMANDS", "CommandSpec", "main"]


@dataclass(frozen=True, slots=True)
class CommandSpec:
    """Where a sub-command lives and what ``--help`` says of it before it is imported.

    Attributes:
        module: The module that defines ``command`` (a ``click.Command``).
        summary: The first paragraph of its help (``--help`` shortens it as click would;
            ``tests/test_cli.py`` checks it against the command's own help).
    """

    module: str
    summary: str


_C = "reliabench.commands."

# sub-command name -> where it lives and its summary
COMMANDS: dict[str, CommandSpec] = {
    "audit": CommandSpec(_C + "audit", "Check PATH (rollout JSONL, a foreign result file or folder) for "
                         "misapplied pass@k."),
    "compare": CommandSpec(_C + "compare", "Compare agents on shared tasks: A - B with a paired CI and "
                           "p-value, or rank-first odds."),
    "demo": CommandSpec(_C + "demo", "Run the bundled suite with three simulated agents and print the "
                        "summary."),
    "export": CommandSpec(_C + "export", "Export the rollout records of RUN as JSONL, or as Inspect AI "
                          "logs (--format inspect)."),
    "import": CommandSpec(_C + "import_", "Convert PATH, another harness's results (file or folder), to "
                          "rollout JSONL."),
    "plan": CommandSpec(_C + "plan", "Plan rollouts per task and tasks for a CI half-width, or for power "
                        "to detect a difference."),
    "proxy": CommandSpec(_C + "proxy", "Rank-correlate single-rollout proxies with reliability@k "
                         "(SOURCE: any source `score` reads)."),
    "rank": CommandSpec(_C + "rank", "Rank the agents of SOURCE with rank intervals and groups no "
                        "corrected test separates."),
    "report": CommandSpec(_C + "report", "Report on SOURCE: a run directory, rollout JSONL (- for "
                          "stdin), or any file `import` reads."),
    "retest": CommandSpec(_C + "retest", "Re-run the hidden tests of every rollout of RUN on its "
                          "unchanged files; report flaky tests."),
    "run": CommandSpec(_C + "run", "Run every agent of the agents file n times on each task of SUITE "
                       "(a path or a bundled name)."),
    "sandbox": CommandSpec(_C + "sandbox", "Sandbox backends: check that one contains hostile code "
                           "(see docs/threat-model.md)."),
    "scan": CommandSpec(_C + "scan", "Re-scan the code each rollout of RUN wrote, and print the "
                        "security-adjusted figures."),
    "score": CommandSpec(_C + "score", "Score SOURCE: rollout JSONL (- for stdin), a run directory, "
                         "or any importable format."),
    "show": CommandSpec(_C + "show", "Show what RUN is: its effective run configuration, suite, agents "
                        "and what it holds."),
    "simulate": CommandSpec("reliabench.sim.command", "Generate a seeded synthetic benchmark, score it, "
                            "and run the proxy study."),
    "suites": CommandSpec(_C + "suites", "List the bundled task suites (use the name wherever a SUITE "
                          "path is expected)."),
    "validate": CommandSpec(_C + "validate", "Check SUITE (a path or a bundled name): exit 0 when every "
                            "task is valid, 1 otherwise."),
    "view": CommandSpec(_C + "view", "Serve the report of RUN on a loopback address; rollout details "
                        "are read on demand."),
}


class _LazyGroup(click.Group):
    """A group whose sub-commands are imported only when one runs (or its own help is asked for)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        try:
            mod = importlib.import_module(spec.module)
        except ModuleNotFoundError as exc:
            if exc.name == spec.module:
                return None
            raise
        cmd = getattr(mod, "command", None)
        return cmd if isinstance(cmd, click.Command) else None

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The command list of ``--help``, from :data:`COMMANDS` (no command module is imported)."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(n) for n in names)
        rows = [(n, click.Command(n, help=COMMANDS[n].summary).get_short_help_str(limit)) for n in names]
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="reliabench")
def cli() -> None:
    """Measure how reliably and how securely AI coding agents solve programming tasks."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (its error class's, never a traceback for a usage error)."""
    from reliabench.commands._common import set_invocation

    set_invocation(list(argv) if argv is not None else sys.argv[1:])
    try:
        cli.main(args=list(argv) if argv is not None else None, prog_name="reliabench",
                 standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("reliabench: aborted", err=True)
        return 130
    except click.ClickException as exc:
        exc.show()
        return exc.exit_code
    except ReliabenchError as exc:
        click.echo(f"reliabench: error: {exc}", err=True)
        return exc.exit_code
    except KeyboardInterrupt:
        click.echo("reliabench: interrupted", err=True)
        return 130
    except BrokenPipeError:
        return 0
    except SystemExit as exc:  # sys.exit() in a sub-command
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
