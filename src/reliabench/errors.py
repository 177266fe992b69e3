"""The one exception tree of reliabench, and the CLI exit codes that go with it.

::

    ReliabenchError                      exit 1   anything reliabench raises on purpose
     +-- UsageError                      exit 2   the user asked for something invalid
     |    +-- InvalidArgumentError                 a bad argument to a public function (also ValueError)
     |    +-- InputError                           a bad input file: names file, line and field
     |    |    +-- RecordError                     a rollout record that breaks the schema
     |    |    +-- ConfigError                     an agents / run / simulation config file
     |    +-- SuiteError                           a task suite with problems (lists them all)
     |    +-- RunMismatchError                     resuming a run with a different configuration
     |    +-- UnknownNameError                     a name no registry knows (lists the known ones)
     |    +-- PluginError                          a plugin that fails to load or is not of its kind
     |    +-- MissingExtraError                    an optional extra is not installed
     |    +-- PreflightError                       an agent's API key or endpoint fails the pre-run check
     +-- InfrastructureError             exit 3   the machine failed, not the request nor the agent:
     |    |                                       fix the cause and run the same command again
     |    +-- SandboxError                         the sandbox could not start
     |    +-- OutputError                          a run directory or an output file cannot be written
     |    |                                        or read (disk full, read-only, no permission)
     |    +-- InfraStopError                       agents stopped: their first rollouts all failed on infra
     |    +-- WorkersLostError                     an executor lost its workers (Ray nodes died): resumable
     +-- AgentError                      exit 1   an agent adapter failed in a way it cannot record
     +-- StoreError                      exit 1   the run store is unreadable or inconsistent

Every class carries ``exit_code``; the CLI maps an escaped ``ReliabenchError`` to a one-line
message and that code, and never prints a traceback for one. The CLI's other codes: 0 (done),
2 for what ``click`` refuses (an unknown option or command), 130 when interrupted (Ctrl-C);
``audit --strict`` exits 1 when it has findings and ``validate`` 1 when a task is invalid. The
whole table is in ``docs/guide.md`` ("Exit codes").
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "AgentError",
    "ConfigError",
    "InfraStopError",
    "InfrastructureError",
    "InputError",
    "InvalidArgumentError",
    "MissingExtraError",
    "OutputError",
    "PluginError",
    "PreflightError",
    "RecordError",
    "ReliabenchError",
    "RunMismatchError",
    "SandboxError",
    "StoreError",
    "SuiteError",
    "UnknownNameError",
    "UsageError",
    "WorkersLostError",
]


class ReliabenchError(Exception):
    """Base class of every error reliabench raises on purpose."""

    exit_code: int = 1


class UsageError(ReliabenchError):
    """The user asked for something that cannot be done as asked (exit code 2)."""

    exit_code = 2


class InvalidArgumentError(UsageError, ValueError):
    """A public function got an argument outside its domain.

    It is also a ``ValueError``, so ``except ValueError`` works as for numpy and scipy.
    """


class InputError(UsageError):
    """A user-supplied file is malformed.

    The message has the form ``FILE:LINE: FIELD: what was expected`` so that editors and
    terminals can jump to the position.

    Args:
        path: The file (or ``-`` for standard input).
        message: What was wrong and what was expected.
        line: 1-based line number, when the format has lines.
        field: The key or column at fault, when known.
    """

    def __init__(
        self,
        path: str | Path,
        message: str,
        *,
        line: int | None = None,
        field: str | None = None,
    ) -> None:
        self.path = str(path)
        self.line = line
        self.field = field
        self.detail = message
        where = self.path if line is None else f"{self.path}:{line}"
        what = message if field is None else f"{field}: {message}"
        super().__init__(f"{where}: {what}")


class RecordError(InputError):
    """A rollout record that breaks the record schema."""


class ConfigError(InputError):
    """A configuration file (agents, run, simulation) that cannot be used."""


class SuiteError(UsageError):
    """A task suite with one or more problems; all of them are listed at once.

    Args:
        problems: One ``path: problem`` string per problem found.
    """

    def __init__(self, problems: Iterable[str]) -> None:
        self.problems = tuple(problems)
        head = f"task suite has {len(self.problems)} problem(s)"
        super().__init__(head + "".join(f"\n  {p}" for p in self.problems))


class RunMismatchError(UsageError):
    """An existing run directory was made with a different configuration."""


class UnknownNameError(UsageError):
    """A name that no registry knows; the message lists the names that are known.

    A plugin kind, a sandbox backend, a scanner, an executor, an importer's format, an agent
    kind: every lookup of a name says it the same way (:meth:`reliabench.plugins.Registry.get`,
    :func:`reliabench.sandbox.get_backend`).
    """


class PluginError(UsageError):
    """A plugin that fails to import, or is not what its kind needs (names the plugin and its target)."""


class MissingExtraError(UsageError):
    """An optional dependency is missing; the message carries the install command.

    Args:
        extra: The name of the extra (``pip install 'reliabench[extra]'``).
        feature: What needed it.
    """

    def __init__(self, extra: str, feature: str) -> None:
        self.extra = extra
        super().__init__(
            f"{feature} needs the optional extra '{extra}': pip install 'reliabench[{extra}]'"
        )


class PreflightError(UsageError):
    """A run cannot start: an agent's API key is unset or its endpoint is not usable."""


class InfrastructureError(ReliabenchError):
    """The machine failed, not the user's request nor the agent (exit code 3).

    Nothing half-written is kept: fix the cause (free space, start the sandbox, bring the
    workers back) and run the same command again.
    """

    exit_code = 3


class OutputError(InfrastructureError):
    """A run directory or an output file that cannot be written or read (full, read-only, no permission).

    Raised before anything half-written is recorded, so a run stopped by it resumes once the
    cause is fixed (free space, permissions).
    """


class InfraStopError(InfrastructureError):
    """Agents were stopped early: their first rollouts all failed for one infrastructure reason.

    The rollouts that ran are recorded; a re-run with the same arguments resumes (and reruns
    the rollouts recorded as ``infra_error``).

    Args:
        message: Which agents were stopped and why.
        summary: What the run did (a ``reliabench.run.runner.RunSummary``), when known.
    """

    def __init__(self, message: str, *, summary: object = None) -> None:
        super().__init__(message)
        self.summary = summary


class SandboxError(InfrastructureError):
    """The sandbox could not be started or set up (an infrastructure failure)."""


class WorkersLostError(InfrastructureError):
    """An executor lost its workers (e.g. Ray nodes died) before every rollout ran.

    The rollouts that finished are recorded, none twice; a re-run with the same arguments
    runs the rest.
    """


class AgentError(ReliabenchError):
    """An agent adapter failed in a way that cannot be recorded as a failed rollout."""


class StoreError(ReliabenchError):
    """The run store is unreadable or inconsistent."""
