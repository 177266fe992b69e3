"""The ``[test_command]`` table's type."""

from __future__ import annotations

import dataclasses

import pytest

from reliabench.tasks.test_command import TestCommand


def test_a_test_command_is_frozen_with_stdout_as_the_default_report() -> None:
    cmd = TestCommand(argv=("go", "test", "-json", "./..."), report="go-test-json")
    assert (cmd.report_file, cmd.cwd, cmd.timeout_s, dict(cmd.env)) == ("stdout", ".", None, {})
    with pytest.raises(dataclasses.FrozenInstanceError):
        cmd.report = "junit-xml"  # type: ignore[misc]
