"""``reliabench export --format inspect``: Inspect AI eval logs that import back to the same figures."""

from __future__ import annotations

import builtins
import json
import zipfile
from pathlib import Path
from typing import Any

import pytest
from report_helpers import copy_run

from reliabench.cli import main
from reliabench.errors import MissingExtraError, UsageError
from reliabench.importers import load_foreign
from reliabench.metrics.analysis import score
from reliabench.records import rollout_to_dict
from reliabench.report.score_render import score_to_json
from reliabench.runs import RunDirectory
from reliabench.store import RunStore

ilog = pytest.importorskip("inspect_ai.log")


def _records(run_dir: Path) -> list[Any]:
    with RunStore.open_existing(run_dir) as store:
        return store.rollouts()


def test_export_round_trips_to_the_same_records_and_figures(tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    out = tmp_path / "logs"
    assert main(["export", str(run_dir), "--format", "inspect", "-o", str(out)]) == 0
    original = _records(run_dir)
    back = []
    for agent in ("sim-flaky", "sim-hasty"):
        path = out / f"{agent}.eval"
        log = ilog.read_eval_log(str(path))  # Inspect's own reader accepts it
        assert log.eval.model == agent and log.eval.config.epochs == 3
        assert log.samples is not None and len(log.samples) == 6
        assert {s.id for s in log.samples} == {"interval_merge", "run_git_log"}
        assert sorted(s.epoch for s in log.samples if s.id == "run_git_log") == [1, 2, 3]
        for s in log.samples:
            rec = next(r for r in original if (r.task_id, r.agent, r.rollout) == (s.id, agent, s.epoch - 1))
            assert s.scores["reliabench"].value == ("C" if rec.passes else "I")
            per_test = s.scores["tests"].value
            assert per_test == {t.name: 1.0 if t.outcome == "passed" else 0.0 for t in rec.tests or ()
                                if t.outcome != "skipped"}
            if rec.status == "timeout":
                assert s.limit is not None
        back += load_foreign(path).records
    assert sorted(json.dumps(rollout_to_dict(r), sort_keys=True) for r in back) == \
        sorted(json.dumps(rollout_to_dict(r), sort_keys=True) for r in original)
    a = score_to_json(score(original, [1, 2, 3], n_resamples=200))
    b = score_to_json(score(back, [1, 2, 3], n_resamples=200))
    assert a == b


def test_one_file_needs_one_agent(tmp_path: Path) -> None:
    from reliabench.exporters import export_inspect

    run_dir = copy_run(tmp_path)
    with RunDirectory.open(run_dir) as run:
        with pytest.raises(UsageError, match=r"one \.eval file holds one model, the run has 2 agents"):
            export_inspect(run, tmp_path / "x.eval")
        [path] = export_inspect(run, tmp_path / "x.eval", agent="sim-hasty")
    assert zipfile.is_zipfile(path)
    assert main(["import", str(path), "-o", str(tmp_path / "x.jsonl")]) == 0
    assert main(["export", str(run_dir), "--format", "inspect", "-o", str(tmp_path / "y.eval"),
                 "--agent", "nobody"]) == 2


def test_missing_extra_prints_the_install_command(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    real_import = builtins.__import__

    def fake_import(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("inspect_ai"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    from reliabench.exporters.inspect_eval import export_inspect

    with RunDirectory.open(copy_run(tmp_path)) as run, pytest.raises(MissingExtraError):
        export_inspect(run, tmp_path / "x.eval")
    assert main(["export", str(tmp_path / "run"), "--format", "inspect", "-o", str(tmp_path / "z")]) == 2
    assert "pip install 'reliabench[inspect]'" in capsys.readouterr().err
