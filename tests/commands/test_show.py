"""``reliabench show RUN``: what a run is, and the configuration it keeps (a file --config takes)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from report_helpers import copy_run, make_adaptive

from reliabench.cli import main
from reliabench.commands.demo import DEMO_AGENTS
from reliabench.runs import RunDirectory


def test_a_run_made_before_the_configuration_was_kept(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = copy_run(tmp_path)
    make_adaptive(run_dir)
    assert main(["show", str(run_dir)]) == 0
    out = capsys.readouterr().out
    assert "agents       sim-flaky [SIMULATED], sim-hasty [SIMULATED]" in out
    assert "rollouts     12 recorded (" in out and "adaptive     finished after 1 round(s)" in out
    assert "configuration: not kept (the run was made before reliabench kept it); its identity:" in out
    assert '  test_timeout_s = 3.0' in out
    assert main(["show", str(run_dir), "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["settings"] is None and doc["rollouts"] == 12 and doc["simulated_agents"] == ["sim-flaky", "sim-hasty"]
    assert doc["identity"]["tasks"] == ["interval_merge", "run_git_log"]
    assert main(["show", str(run_dir), "--format", "toml"]) == 2
    assert "does not keep its configuration" in capsys.readouterr().err


def test_a_run_shows_the_configuration_it_was_made_with(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["run", "py30", "--agents", str(DEMO_AGENTS), "-n", "1", "--out", "run", "--workers", "1",
                 "--task", "rle_codec", "--retest", "1", "--ray-address", "ray://h:1"]) == 0
    capsys.readouterr()
    assert main(["show", "run"]) == 0
    out = capsys.readouterr().out
    assert "configuration (reliabench run --config FILE takes it back" in out
    assert 'tasks = ["rle_codec"]\n' in out and "retest = 1\n" in out
    assert '[executors.ray]\naddress = "ray://h:1"\n' in out
    with RunDirectory.open(tmp_path / "run") as run:
        settings = run.settings()
    assert settings is not None and settings.out == tmp_path / "run" and settings.n == 1
    assert settings.agents_config_hash == run.info().agents_config_hash  # the stored config, whole


def test_not_a_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(tmp_path)]) == 2
    assert "not a run directory" in capsys.readouterr().err
