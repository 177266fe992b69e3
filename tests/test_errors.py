"""The exception tree (reliabench.errors): the drawing in its docstring, exit codes, messages.

How the CLI turns an escaped error into one line and its exit code: tests/test_cli.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reliabench import errors
from reliabench.errors import (
    ConfigError,
    InfraStopError,
    InfrastructureError,
    InputError,
    InvalidArgumentError,
    MissingExtraError,
    OutputError,
    PluginError,
    RecordError,
    ReliabenchError,
    SandboxError,
    SuiteError,
    UnknownNameError,
    UsageError,
)


def _drawn_tree() -> dict[str, tuple[str | None, int | None]]:
    """class name -> (parent drawn above it, exit code written beside it) from the module docstring."""
    doc = errors.__doc__ or ""
    drawn: dict[str, tuple[str | None, int | None]] = {}
    stack: list[tuple[int, str]] = []
    for line in doc.splitlines():
        m = re.match(r"^(?P<lead>[ |+\-]*?)(?P<name>[A-Z][A-Za-z]+Error)\b(?P<rest>.*)$", line)
        if m is None or m["name"] not in errors.__all__:
            continue
        col = len(m["lead"])
        while stack and stack[-1][0] >= col:
            stack.pop()
        code = re.search(r"\bexit (\d)\b", m["rest"])
        drawn[m["name"]] = (stack[-1][1] if stack else None, int(code[1]) if code else None)
        stack.append((col, m["name"]))
    return drawn


def test_every_error_is_drawn_with_its_real_parent() -> None:
    drawn = _drawn_tree()
    assert set(drawn) == set(errors.__all__), "the docstring's tree and __all__ differ"
    for name, (parent, _) in drawn.items():
        cls = getattr(errors, name)
        if parent is None:
            assert cls is ReliabenchError
        else:
            assert cls.__bases__[0] is getattr(errors, parent), f"{name} is drawn under {parent}"


def test_exit_codes_are_the_drawn_ones() -> None:
    for name, (parent, code) in _drawn_tree().items():
        cls = getattr(errors, name)
        expected = code if code is not None else getattr(errors, parent or "ReliabenchError").exit_code
        assert cls.exit_code == expected, name
    # the mapping the CLI promises: usage 2, infrastructure 3, the rest 1
    assert {c.exit_code for c in (UsageError, InputError, RecordError, ConfigError, SuiteError,
                                   InvalidArgumentError, MissingExtraError, UnknownNameError,
                                   PluginError)} == {2}
    assert SandboxError.exit_code == InfraStopError.exit_code == OutputError.exit_code == 3
    assert ReliabenchError.exit_code == 1


def test_a_full_disk_is_not_a_usage_error() -> None:
    """The machine failed, not the request: exit 3 with the infrastructure, never 2."""
    assert issubclass(OutputError, InfrastructureError) and not issubclass(OutputError, UsageError)


def test_every_exit_code_is_in_the_guide() -> None:
    guide = (Path(__file__).resolve().parents[1] / "docs" / "guide.md").read_text(encoding="utf-8")
    section = guide[guide.index("## Exit codes"):]
    section = section[:section.index("\n## ", 5)]
    for code in ("0", "1", "2", "3", "130"):
        assert f"| {code} |" in section, code
    for name in errors.__all__:
        assert name in section, f"{name} is not in docs/guide.md's exit codes"


def test_invalid_argument_is_also_a_value_error() -> None:
    with pytest.raises(ValueError, match="k must be"):
        raise InvalidArgumentError("k must be >= 1, got 0")


def test_input_error_message_names_file_line_and_field() -> None:
    e = InputError("runs/a.jsonl", "expected an integer", line=7, field="rollout")
    assert str(e) == "runs/a.jsonl:7: rollout: expected an integer"
    assert (e.path, e.line, e.field, e.detail) == ("runs/a.jsonl", 7, "rollout", "expected an integer")
    assert str(InputError("-", "empty")) == "-: empty"
    assert str(RecordError("x.json", "bad", field="task_id")) == "x.json: task_id: bad"


def test_suite_error_lists_every_problem() -> None:
    e = SuiteError(["a/task.toml: no tests", "b/task.toml: no starter"])
    assert str(e) == "task suite has 2 problem(s)\n  a/task.toml: no tests\n  b/task.toml: no starter"
    assert e.problems == ("a/task.toml: no tests", "b/task.toml: no starter")


def test_missing_extra_names_the_install_command() -> None:
    e = MissingExtraError("ray", "--executor ray")
    assert e.extra == "ray"
    assert str(e) == "--executor ray needs the optional extra 'ray': pip install 'reliabench[ray]'"


def test_infra_stop_keeps_the_summary() -> None:
    summary = object()
    assert InfraStopError("stopped", summary=summary).summary is summary
    assert InfraStopError("stopped").summary is None
