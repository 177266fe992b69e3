"""A task's test command: how a language's own test tool runs the hidden tests, and its report.

::

    # task.toml of a task whose tests are run by their language's tool
    language = "go"
    test_runner = "command"
    [test_command]
    argv = ["go", "test", "-json", "./..."]   # run in the task's environment
    cwd = "."                                 # relative to the workspace
    report = "go-test-json"                   # a report format of the registry, or "exit-code"
    report_file = "stdout"                    # "stdout", or a path under {report_dir}
    timeout_s = 120                           # optional: the task's timeout_s otherwise

The hidden tests (the task's ``tests/`` folder) are laid over a copy of the workspace at
their relative paths after the agent is done; ``{report_dir}`` in ``argv`` and ``env`` values
is a folder the harness makes fresh for the run, where the agent phase could never write.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["TestCommand"]


@dataclass(frozen=True, slots=True)
class TestCommand:
    """The ``[test_command]`` table of a task.

    Attributes:
        argv: The command (placeholders ``{workdir}`` and ``{report_dir}``).
        report: The report format (a name in the report-format registry) or ``exit-code``
            (one coarse outcome from the exit status).
        report_file: ``stdout`` or a file name under ``{report_dir}``.
        cwd: The working directory, relative to the workspace.
        timeout_s: Wall-clock seconds (None: the task's ``timeout_s``).
        env: Variables added to the command's environment.
        adjustments: What was changed from the benchmark's own files, one line each (the
            Aider harness's adjustments), listed for the reader.
    """

    __test__ = False  # not a pytest test class

    argv: tuple[str, ...]
    report: str
    report_file: str = "stdout"
    cwd: str = "."
    timeout_s: float | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    adjustments: tuple[str, ...] = ()
