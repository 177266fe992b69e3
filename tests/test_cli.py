"""The command line (reliabench.cli): lazy sub-commands, and how an escaped error ends.

Each command's behaviour is tested with what it runs (tests/test_layout.py lists where); every
error class's exit code is pinned in tests/test_errors.py.
"""

from __future__ import annotations

import importlib
import subprocess
import sys
import types

import click
import pytest

from reliabench.cli import COMMANDS, CommandSpec, cli, main
from reliabench.errors import (
    AgentError,
    InfraStopError,
    InputError,
    ReliabenchError,
    SandboxError,
    StoreError,
    UsageError,
)


def test_every_command_module_exposes_a_click_command() -> None:
    for name, spec in COMMANDS.items():
        mod = importlib.import_module(spec.module)
        assert isinstance(mod.command, click.Command), name
        assert mod.command.name == name
        assert "command" in mod.__all__


def test_each_summary_is_the_first_paragraph_of_its_commands_help() -> None:
    """``--help`` lists the summaries of :data:`COMMANDS`: they must say what the commands say."""
    for name, spec in COMMANDS.items():
        command = importlib.import_module(spec.module).command
        assert command.help is not None, name
        assert spec.summary == " ".join(command.help.split("\n\n")[0].split()), name


def _all_commands(cmd: click.Command, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    out = [path]
    if isinstance(cmd, click.Group):
        for name in cmd.list_commands(click.Context(cmd)):
            sub = cmd.get_command(click.Context(cmd), name)
            assert sub is not None
            out += _all_commands(sub, (*path, name))
    return out


def test_no_help_text_shows_click_markup(capsys: pytest.CaptureFixture[str]) -> None:
    # a raw docstring turns click's no-rewrap marker into a literal backslash-b in --help
    paths = _all_commands(cli, ())
    assert ("suites", "import") in paths
    for path in paths:
        assert main([*path, "--help"]) == 0
        out = capsys.readouterr().out
        assert "\\b" not in out, path
        assert "\x08" not in out, path


def test_help_lists_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    listed = {line.split()[0] for line in out.split("Commands:")[1].splitlines() if line.strip()}
    assert listed == set(COMMANDS)


@pytest.mark.parametrize("args", [["--version"], ["--help"], []], ids=["version", "help", "bare"])
def test_sub_commands_are_imported_only_when_used(args: list[str]) -> None:
    """Listing the commands imports none of them (nor the renderers, runner or sandbox)."""
    code = (f"import sys; from reliabench.cli import main; main({args!r}); "
            "print(sorted(m for m in sys.modules if m.startswith(('reliabench.commands.', "
            "'reliabench.sim', 'reliabench.report', 'reliabench.run', 'reliabench.sandbox'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "['reliabench.commands._common']"


def test_a_commands_own_help_imports_only_that_command() -> None:
    code = ("import sys; from reliabench.cli import main; main(['proxy', '--help']); "
            "print(sorted(m for m in sys.modules if m.startswith('reliabench.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines()[-1] == "['reliabench.commands._common', 'reliabench.commands._registry_choice', " \
                                   "'reliabench.commands.proxy']"


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--version"]) == 0
    assert capsys.readouterr().out.startswith("reliabench, version ")


def test_an_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["frobnicate"]) == 2
    assert "No such command 'frobnicate'" in capsys.readouterr().err


def _fake(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    @click.command("boom")
    def boom() -> None:
        raise exc

    module = types.ModuleType("reliabench.commands._boom_for_cli_tests")
    module.command = boom  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(COMMANDS, "boom", CommandSpec(module.__name__, "Boom."))


@pytest.mark.parametrize(
    ("exc", "code", "err"),
    [
        (KeyboardInterrupt(), 130, "\nreliabench: aborted\n"),  # click turns Ctrl-C into Abort
        (click.exceptions.Abort(), 130, "reliabench: aborted\n"),
        (BrokenPipeError(), 0, ""),
        (SystemExit(4), 4, ""),
        (SystemExit(None), 0, ""),
        (SystemExit("bye"), 1, ""),
    ],
    ids=["ctrl-c", "abort", "broken-pipe", "exit-4", "exit-none", "exit-str"],
)
def test_how_a_command_ends(exc: BaseException, code: int, err: str, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    _fake(monkeypatch, exc)
    assert main(["boom"]) == code
    assert capsys.readouterr().err == err


def test_a_bug_is_not_swallowed(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake(monkeypatch, RuntimeError("a real bug"))
    with pytest.raises(RuntimeError, match="a real bug"):
        main(["boom"])


def test_a_module_that_fails_to_import_is_not_hidden(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(COMMANDS, "ghost", CommandSpec("reliabench.commands._no_such_module_for_tests", "G."))
    assert cli.get_command(click.Context(cli), "ghost") is None  # a missing module: no such command
    broken = types.ModuleType("reliabench.commands._broken_for_tests")
    monkeypatch.setitem(COMMANDS, "broken", CommandSpec(broken.__name__, "Broken."))
    monkeypatch.setitem(sys.modules, broken.__name__, broken)  # imports, but has no command
    assert cli.get_command(click.Context(cli), "broken") is None


@pytest.mark.parametrize(
    ("exc", "code"),
    [
        (UsageError("bad --k"), 2),
        (InputError("f.jsonl", "expected an object", line=3), 2),
        (SandboxError("bwrap failed"), 3),
        (InfraStopError("agents stopped"), 3),
        (StoreError("unreadable"), 1),
        (AgentError("adapter broke"), 1),
    ],
)
def test_the_cli_maps_each_error_to_one_line_and_its_code(exc: ReliabenchError, code: int,
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    _fake(monkeypatch, exc)
    assert main(["boom"]) == code
    err = capsys.readouterr().err
    assert err == f"reliabench: error: {exc}\n"
    assert "Traceback" not in err
