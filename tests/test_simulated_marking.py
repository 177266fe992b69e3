"""Simulated agents are labelled simulated in every command's output."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reliabench.cli import main


@pytest.fixture(scope="module")
def records(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = tmp_path_factory.mktemp("sim") / "small.toml"
    cfg.write_text("tasks = 12\nagents = 3\nrollouts = 4\n")
    out = cfg.parent / "r.jsonl"
    assert main(["simulate", "--config", str(cfg), "--records", str(out), "--resamples", "0", "-k", "1"]) == 0
    return out


@pytest.mark.parametrize(
    "args",
    [
        ["score", "{r}", "-k", "1", "--resamples", "0"],
        ["score", "{r}", "-k", "1", "--resamples", "0", "--format", "markdown"],
        ["compare", "{r}", "-k", "1", "--resamples", "100"],
        ["compare", "{r}", "--a", "sim-agent-00", "--b", "sim-agent-01", "--resamples", "100"],
        ["proxy", "{r}", "--resamples", "50"],
        ["audit", "{r}", "-k", "1"],
    ],
)
def test_text_outputs_say_simulated(records: Path, args: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main([a.format(r=records) for a in args]) == 0
    assert "SIMULATED" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (["score", "{r}", "-k", "1", "--resamples", "0", "--format", "json"], "agents"),
        (["audit", "{r}", "-k", "1", "--format", "json"], "agents"),
        (["compare", "{r}", "--resamples", "100", "--format", "json"], "simulated_agents"),
        (["proxy", "{r}", "--resamples", "50", "--format", "json"], "simulated_agents"),
    ],
)
def test_json_outputs_say_simulated(records: Path, args: list[str], key: str,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main([a.format(r=records) for a in args]) == 0
    doc = json.loads(capsys.readouterr().out)
    if key == "agents":
        assert all(a["simulated"] for a in doc["agents"])
    else:
        assert doc[key] == ["sim-agent-00", "sim-agent-01", "sim-agent-02"]
