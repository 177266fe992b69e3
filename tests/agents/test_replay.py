"""The replay kind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reliabench.agents import AgentRequest, ReplayAgent, load_agents, read_replay_file
from reliabench.errors import ConfigError


def jsonl(path: Path, *lines: Any) -> Path:
    path.write_text("".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines))
    return path


def agent_file(tmp_path: Path, extra: str = "", name: str = "a") -> Path:
    p = tmp_path / "agents.toml"
    p.write_text(f'[[agents]]\nname = "{name}"\nkind = "replay"\npath = "rec.jsonl"\n{extra}')
    return p


def request(ws: Path, task: str = "t1", rollout: int = 0) -> AgentRequest:
    ws.mkdir(exist_ok=True)
    return AgentRequest(task, "p", ws, seed=0, rollout=rollout, timeout_s=5.0)


def test_replays_files_and_filters_agents(tmp_path: Path) -> None:
    jsonl(
        tmp_path / "rec.jsonl",
        {"agent": "a", "task_id": "t1", "rollout": 0, "files": {"pkg/m.py": "x = 1\n"},
         "tokens": 12, "usd": 0.5, "log": "recorded"},
        {"agent": "b", "task_id": "t1", "rollout": 1, "files": {"m.py": "other"}},
        {"task_id": "t1", "rollout": 2, "files": {"m.py": "shared"}},
        "",
    )
    (agent,) = load_agents(agent_file(tmp_path))
    assert isinstance(agent, ReplayAgent)
    assert len(agent) == 2
    res = agent.run(request(tmp_path / "w0"))
    assert res.status == "completed"
    assert (tmp_path / "w0/pkg/m.py").read_text() == "x = 1\n"
    assert (res.tokens, res.usd) == (12, 0.5)
    assert "recorded" in res.log
    assert res.meta["replay_line"] == 1
    res = agent.run(request(tmp_path / "w1", rollout=1))
    assert res.status == "agent_error"
    assert "no recorded generation for task t1 rollout 1" in res.log
    assert agent.run(request(tmp_path / "w2", rollout=2)).status == "completed"


def test_agent_filter(tmp_path: Path) -> None:
    jsonl(tmp_path / "rec.jsonl", {"agent": "gpt", "task_id": "t1", "rollout": 0, "files": {}})
    (agent,) = load_agents(agent_file(tmp_path, 'agent_filter = "gpt"\n', name="gpt-replayed"))
    assert agent.run(request(tmp_path / "w")).status == "completed"


def test_missing_task(tmp_path: Path) -> None:
    jsonl(tmp_path / "rec.jsonl", {"task_id": "t1", "rollout": 0, "files": {}})
    (agent,) = load_agents(agent_file(tmp_path))
    res = agent.run(request(tmp_path / "w", task="t9", rollout=3))
    assert res.status == "agent_error"
    assert "no recorded generation for task t9 rollout 3" in res.log


def test_delete_then_write(tmp_path: Path) -> None:
    jsonl(tmp_path / "rec.jsonl",
          {"task_id": "t1", "rollout": 0, "files": {"new.py": "n"}, "delete": ["old.py"]})
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "old.py").write_text("o")
    (agent,) = load_agents(agent_file(tmp_path))
    res = agent.run(request(ws))
    assert res.status == "completed"
    assert sorted(p.name for p in ws.iterdir()) == ["new.py"]


def test_symlink_escape_at_run_time(tmp_path: Path) -> None:
    jsonl(tmp_path / "rec.jsonl", {"task_id": "t1", "rollout": 0, "files": {"out/x.py": "evil"}})
    (tmp_path / "outside").mkdir()
    ws = tmp_path / "w"
    ws.mkdir()
    (ws / "out").symlink_to(tmp_path / "outside")
    (agent,) = load_agents(agent_file(tmp_path))
    res = agent.run(request(ws))
    assert res.status == "agent_error"
    assert "outside the workspace" in res.log
    assert list((tmp_path / "outside").iterdir()) == []


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("{not json", ":2: malformed JSON"),
        ("[1, 2]", ":2: expected a JSON object"),
        ('{"rollout": 0, "files": {}}', ":2: task_id: expected a non-empty string"),
        ('{"task_id": "t", "rollout": -1, "files": {}}', ":2: rollout: expected an integer >= 0"),
        ('{"task_id": "t", "rollout": true, "files": {}}', ":2: rollout: expected an integer"),
        ('{"task_id": "t", "rollout": 1}', ":2: files: expected an object"),
        ('{"task_id": "t", "rollout": 1, "files": {"a.py": 3}}', ":2: files['a.py']: expected"),
        ('{"task_id": "t", "rollout": 1, "files": {"/etc/x": ""}}', ":2: files: path '/etc/x'"),
        ('{"task_id": "t", "rollout": 1, "files": {"../x": ""}}', ":2: files: path '../x'"),
        ('{"task_id": "t", "rollout": 1, "files": {}, "delete": "a"}', ":2: delete: expected"),
        ('{"task_id": "t", "rollout": 1, "files": {}, "delete": ["../a"]}', ":2: delete: path"),
        ('{"task_id": "t", "rollout": 1, "files": {}, "fils": {}}', ":2: fils: unknown key"),
        ('{"task_id": "t", "rollout": 1, "files": {}, "tokens": -3}', ":2: tokens: expected"),
        ('{"task_id": "t", "rollout": 0, "files": {}}', ":2: second generation for task 't'"),
    ],
)
def test_malformed_lines(tmp_path: Path, line: str, expected: str) -> None:
    rec = jsonl(tmp_path / "rec.jsonl", {"task_id": "t", "rollout": 0, "files": {}}, line)
    with pytest.raises(ConfigError) as info:
        load_agents(agent_file(tmp_path))
    assert str(info.value).startswith(f"{rec}:2: ")
    assert expected in str(info.value)


def test_other_agents_lines_still_validated_but_not_duplicates(tmp_path: Path) -> None:
    rec = jsonl(tmp_path / "rec.jsonl",
                {"agent": "x", "task_id": "t", "rollout": 0, "files": {}},
                {"agent": "y", "task_id": "t", "rollout": 0, "files": {}})
    assert list(read_replay_file(rec, "x")) == [("t", 0)]
    assert read_replay_file(rec, "z") == {}


def test_missing_replay_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"agents\[1\]\.path: no such file"):
        load_agents(agent_file(tmp_path))


def test_unreadable_utf8(tmp_path: Path) -> None:
    (tmp_path / "rec.jsonl").write_bytes(b'{"task_id": "t", "rollout": 0, "files": {}}\n\xff\xfe\n')
    with pytest.raises(ConfigError, match=r"rec\.jsonl:2: not UTF-8"):
        load_agents(agent_file(tmp_path))
