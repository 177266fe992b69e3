"""The ``reliabench`` command line: thin wrappers that parse, call the library, and render.

Each sub-command lives in ``reliabench.commands.<name>`` and exposes ``command``; errors
that reach the top are turned into one line on stderr and the exit code of their class.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import click

from reliabench.errors import ReliabenchError

__all__ = ["COMMANDS", "main"]

# sub-command name -> module under reliabench.commands
COMMANDS: dict[str, str] = {
    "score": "score",
    "run": "run",
    "validate": "validate",
    "export": "export",
    "suites": "suites",
    "scan": "scan",
    "demo": "demo",
    "simulate": "simulate",
    "audit": "audit",
    "plan": "plan",
    "compare": "compare",
    "proxy": "proxy",
    "rank": "rank",
    "import": "import_",
    "report": "report",
    "view": "view",
    "retest": "retest",
    "sandbox": "sandbox",
}


class _LazyGroup(click.Group):
    """A group whose sub-commands are imported only when used (fast start-up)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(name for name in COMMANDS if self._load(name) is not None)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        return self._load(cmd_name)

    @staticmethod
    def _load(name: str) -> click.Command | None:
        module = COMMANDS.get(name)
        if module is None:
            return None
        try:
            mod = importlib.import_module(f"reliabench.commands.{module}")
        except ModuleNotFoundError as exc:
            if exc.name == f"reliabench.commands.{module}":
                return None
            raise
        cmd = getattr(mod, "command", None)
        return cmd if isinstance(cmd, click.Command) else None


@click.group(cls=_LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="reliabench")
def cli() -> None:
    """Measure how reliably and how securely AI coding agents solve programming tasks."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code (2 for usage errors, never a traceback for them)."""
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
