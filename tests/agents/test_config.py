"""load_agents: validation of the agents file, one test per error message."""

from __future__ import annotations

import importlib.util
import os
import re
from pathlib import Path
from typing import Any

import pytest

from reliabench.agents import (
    AGENT_KIND_REGISTRY,
    CommandAgent,
    OpenAIAgent,
    PythonAgent,
    ReplayAgent,
    load_agents,
)
from reliabench.errors import ConfigError, MissingExtraError

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "agents"


def write(tmp_path: Path, text: str, name: str = "agents.toml") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def error_of(path: Path) -> str:
    with pytest.raises(ConfigError) as info:
        load_agents(path)
    msg = str(info.value)
    assert "\n" not in msg, "ConfigError messages are one line"
    assert msg.startswith(str(path)), msg
    return msg


def test_builtin_kinds_registered() -> None:
    assert {"command", "openai", "replay", "python", "simulated"} <= set(AGENT_KIND_REGISTRY.names())


def test_loads_every_kind_in_order(tmp_path: Path) -> None:
    (tmp_path / "rec.jsonl").write_text('{"task_id": "t", "rollout": 0, "files": {}}\n')
    (tmp_path / "mod_cfg_a.py").write_text("def solve(request):\n    return None\n")
    p = write(tmp_path, """
[[agents]]
name = "cli"
kind = "command"
command = "echo {task_id}"

[[agents]]
name = "llm"
kind = "openai"
model = "m"

[[agents]]
name = "rec"
kind = "replay"
path = "rec.jsonl"

[[agents]]
name = "py"
kind = "python"
callable = "mod_cfg_a:solve"
path = "."
""")
    agents = load_agents(p)
    assert [a.name for a in agents] == ["cli", "llm", "rec", "py"]
    assert [a.kind for a in agents] == ["command", "openai", "replay", "python"]
    assert isinstance(agents[0], CommandAgent)
    assert isinstance(agents[1], OpenAIAgent)
    assert isinstance(agents[2], ReplayAgent)
    assert isinstance(agents[3], PythonAgent)
    assert not any(a.simulated for a in agents)
    assert agents[0].command == ("echo", "{task_id}")


def test_missing_file(tmp_path: Path) -> None:
    msg = error_of(tmp_path / "nope.toml")
    assert "no such file" in msg


def test_invalid_toml(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, "[[agents]\nname = 1"))
    assert "invalid TOML" in msg


def test_no_agents(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, "# nothing\n"))
    assert "agents: no [[agents]] table" in msg


def test_agents_not_tables(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, 'agents = ["a"]\n'))
    assert "agents: expected an array of tables" in msg


def test_unknown_top_level_key(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, 'version = 1\n[[agents]]\nname = "a"\nkind = "command"\n'
                                   'command = "true"\n'))
    assert "version: unknown top-level key" in msg


def test_unknown_kind_lists_known(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, '[[agents]]\nname = "a"\nkind = "gpt"\n'))
    assert "agents[1].kind: unknown kind 'gpt'" in msg
    for kind in ("command", "openai", "python", "replay"):
        assert kind in msg


def test_missing_kind(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, '[[agents]]\nname = "a"\n'))
    assert "agents[1].kind: missing required key" in msg


def test_missing_name(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, '[[agents]]\nkind = "command"\ncommand = "true"\n'))
    assert "agents[1].name: missing required key" in msg


def test_name_wrong_type(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, '[[agents]]\nname = 3\nkind = "command"\ncommand = "true"\n'))
    assert "agents[1].name: expected a non-empty string, got 3" in msg


def test_duplicate_names(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, """
[[agents]]
name = "a"
kind = "command"
command = "true"

[[agents]]
name = "a"
kind = "command"
command = "false"
"""))
    assert "agents[2].name: duplicate agent name 'a' (also agents[1])" in msg


def test_unknown_key(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, '[[agents]]\nname = "a"\nkind = "command"\ncommand = "true"\n'
                                   'timout_s = 3\n'))
    assert "agents[1].timout_s: unknown key for kind 'command'" in msg
    assert "timeout_s" in msg  # the allowed keys are listed


def test_missing_required_kind_key(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, '[[agents]]\nname = "a"\nkind = "openai"\n'))
    assert "agents[1].model: missing required key" in msg


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('timeout_s = "10"', "agents[1].timeout_s: expected a number, got '10'"),
        ("timeout_s = -1", "agents[1].timeout_s: expected a positive number, got -1"),
        ("timeout_s = true", "agents[1].timeout_s: expected a number, got True"),
        ('network = "yes"', "agents[1].network: expected true, false or \"endpoint\", got 'yes'"),
        ("env = 3", "agents[1].env: expected a table, got an integer"),
        ("env = { A = 1 }", "agents[1].env.A: expected a string, got an integer"),
        ('env = { A = "${oops" }', "agents[1].env.A: malformed ${...} reference"),
        ('sandbox = "lxc"', "agents[1].sandbox: unknown sandbox 'lxc'"),
        ('readonly = "x"', "agents[1].readonly: expected an array of strings"),
        ('readonly = ["does-not-exist"]', "agents[1].readonly: no such file or directory"),
        ("memory_mb = 0", "agents[1].memory_mb: expected an integer >= 1, got 0"),
    ],
)
def test_command_field_errors(tmp_path: Path, line: str, expected: str) -> None:
    msg = error_of(write(tmp_path, f'[[agents]]\nname = "a"\nkind = "command"\ncommand = "true"\n'
                                   f"{line}\n"))
    assert expected in msg


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ('command = ""', "agents[1].command: expected a non-empty command"),
        ("command = []", "agents[1].command: expected a non-empty command"),
        ("command = [1]", "agents[1].command: expected an array of strings"),
        ("command = 'a \"b'", "agents[1].command: cannot split the command line"),
        ('command = "./missing.sh"', "agents[1].command: no such file or directory"),
    ],
)
def test_command_errors(tmp_path: Path, line: str, expected: str) -> None:
    msg = error_of(write(tmp_path, f'[[agents]]\nname = "a"\nkind = "command"\n{line}\n'))
    assert expected in msg


def test_command_relative_program_resolved(tmp_path: Path) -> None:
    script = tmp_path / "bin" / "agent.sh"
    script.parent.mkdir()
    script.write_text("#!/bin/sh\n")
    sub = tmp_path / "conf"
    sub.mkdir()
    p = write(sub, '[[agents]]\nname = "a"\nkind = "command"\n'
                   'command = "../bin/agent.sh {workspace}"\n')
    msg = error_of(p)
    assert "not executable" in msg
    script.chmod(0o755)
    agent = load_agents(p)[0]
    assert isinstance(agent, CommandAgent)
    assert Path(agent.command[0]) == (sub / "../bin/agent.sh").absolute()
    assert Path(agent.command[0]) in agent.readonly


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("temperature = -1", "agents[1].temperature: expected a number >= 0, got -1"),
        ("max_turns = 0", "agents[1].max_turns: expected an integer >= 1, got 0"),
        ("max_turns = 1.5", "agents[1].max_turns: expected an integer, got 1.5"),
        ("max_tokens = 0", "agents[1].max_tokens: expected an integer >= 1"),
        ("seed = 3", "agents[1].seed: expected true or false, got 3"),
        ("usd_per_1k_input = 0.1", "agents[1].usd_per_1k_output: set both"),
        ('api_key_env = ""', "agents[1].api_key_env: expected a non-empty string"),
        ("extra_body = 1", "agents[1].extra_body: expected a table"),
        ("max_retries = -1", "agents[1].max_retries: expected an integer >= 0"),
    ],
)
def test_openai_field_errors(tmp_path: Path, line: str, expected: str) -> None:
    msg = error_of(write(tmp_path,
                         f'[[agents]]\nname = "a"\nkind = "openai"\nmodel = "m"\n{line}\n'))
    assert expected in msg


def test_openai_missing_sdk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = importlib.util.find_spec

    def fake(name: str, *args: object) -> object:
        return None if name == "openai" else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", fake)
    p = write(tmp_path, '[[agents]]\nname = "a"\nkind = "openai"\nmodel = "m"\n')
    with pytest.raises(MissingExtraError, match=re.escape("pip install 'reliabench[openai]'")):
        load_agents(p)


def test_error_in_second_table_is_numbered(tmp_path: Path) -> None:
    msg = error_of(write(tmp_path, """
[[agents]]
name = "a"
kind = "command"
command = "true"

[[agents]]
name = "b"
kind = "replay"
"""))
    assert "agents[2].path: missing required key" in msg


def test_examples_load(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil

    real_which = shutil.which

    def which(cmd: str, mode: int = os.F_OK | os.X_OK, path: str | None = None) -> str | None:
        # the aider example needs aider installed; pretend it is
        return f"/opt/aider/bin/{cmd}" if cmd == "aider" else real_which(cmd, mode, path)

    monkeypatch.setattr(shutil, "which", which)
    files = sorted(EXAMPLES.glob("*.toml"))
    assert {f.name for f in files} >= {"cli.toml", "openai.toml", "python.toml", "replay.toml"}
    kinds = set()
    real_clis = {"aider.toml": "aider", "aider_local.toml": "aider",
                 "mini_swe_agent.toml": "mini-swe-agent",
                 "mini_swe_agent_local.toml": "mini-swe-agent"}
    assert set(real_clis) <= {f.name for f in files}
    for f in files:
        venv = EXAMPLES.parents[1] / ".venv-agents" / real_clis.get(f.name, "")
        if f.name in real_clis and not venv.is_dir() and os.environ.get("CI") != "true":
            continue  # needs `make agents`; tests/test_agent_clis_e2e.py runs them
        agents = load_agents(f)
        assert agents, f
        kinds |= {a.kind for a in agents}
    assert kinds >= {"command", "openai", "python", "replay"}


def test_python_example_runs(tmp_path: Path) -> None:
    from reliabench.agents import AgentRequest

    (agent,) = load_agents(EXAMPLES / "python.toml")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "a.py").write_text("x = 1\n")
    res = agent.run(AgentRequest("t", "p", ws, seed=1, rollout=0, timeout_s=10.0))
    assert res.status == "completed", res.log
    assert (ws / "a.py").read_text().startswith("# written by the example python agent\n")



def test_command_sandbox_accepts_a_plugin_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from entry_point_helpers import fake_entry_points

    from reliabench.sandbox import ENTRY_POINT_GROUP

    fake_entry_points(monkeypatch, ENTRY_POINT_GROUP, lxd="my_sandbox.lxd_backend:LxdBackend")
    text = '[[agents]]\nname = "a"\nkind = "command"\ncommand = "true"\nsandbox = "lxd"\n'
    (agent,) = load_agents(write(tmp_path, text))
    assert agent.sandbox == "lxd"  # type: ignore[attr-defined]
    msg = error_of(write(tmp_path, text.replace("lxd", "lxc")))
    assert "unknown sandbox 'lxc' (choose one of: auto, bubblewrap, namespaces, none, podman, docker, lxd)" in msg


def test_broken_agent_kind_plugin_is_one_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from entry_point_helpers import fake_entry_points

    from reliabench.agents import config
    from reliabench.errors import UsageError

    fake_entry_points(monkeypatch, "reliabench.agents", mykind="no_such_module_for_reliabench:register")
    with pytest.raises(UsageError, match=r"agent kind plugin mykind \(no_such_module_for_reliabench:register\) "
                                         r"failed to load: ModuleNotFoundError"):
        config.load_builtin_kinds()


def test_agent_kinds_load_lazily_and_a_broken_one_only_when_named(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from entry_point_helpers import fake_entry_points

    from reliabench.agents import AGENT_KIND_REGISTRY
    from reliabench.errors import UsageError

    fake_entry_points(monkeypatch, "reliabench.agents", mykind="no_such_module_for_reliabench:make",
                      command="no_such_module_for_reliabench:make")
    # a built-in name is never the plugin's; the broken plugin is listed but not loaded
    assert AGENT_KIND_REGISTRY.names() == ["command", "openai", "replay", "python", "simulated", "mykind"]
    (agent,) = load_agents(write(tmp_path, '[[agents]]\nname = "a"\nkind = "command"\ncommand = "true"\n'))
    assert agent.kind == "command"
    with pytest.raises(UsageError, match=r"agent kind plugin mykind \(no_such_module_for_reliabench:make\)"):
        load_agents(write(tmp_path, '[[agents]]\nname = "a"\nkind = "mykind"\n'))


def test_register_agent_kind_in_process() -> None:
    from reliabench.agents import AGENT_KIND_REGISTRY, register_agent_kind
    from reliabench.errors import InvalidArgumentError

    def factory(table: Any, ctx: Any) -> Any:
        raise AssertionError("not called")

    try:
        assert register_agent_kind("tmp-kind")(factory) is factory
        assert AGENT_KIND_REGISTRY.get("tmp-kind") is factory
        register_agent_kind("tmp-kind")(print)  # a later registration replaces an earlier one
        assert AGENT_KIND_REGISTRY.get("tmp-kind") is print
    finally:
        AGENT_KIND_REGISTRY.unregister("tmp-kind")
    with pytest.raises(InvalidArgumentError, match=r"name: 'command' is a built-in agent kind"):
        register_agent_kind("command")(factory)
