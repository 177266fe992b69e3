"""Inspect AI logs, one file or a folder as `inspect eval` leaves ./logs/ (reliabench.importers.inspect_log).

The logs here are written by Inspect itself (``inspect_ai.log.write_eval_log``, the ``inspect``
test extra), as ``.eval`` and as ``.json``, and by ``reliabench export --format inspect``; each
(sample, epoch) is one rollout, in a folder as in one file.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import inspect_ai.log as ilog  # the test extra: Inspect's own writer and reader
import pytest
from report_helpers import copy_run

from reliabench.cli import main
from reliabench.errors import InputError
from reliabench.importers import detect_format, load_foreign
from reliabench.importers.inspect_log import log_files
from reliabench.records import rollout_to_dict
from reliabench.store import read_records

STAMP = "2026-01-01T00-00-00+00-00"


def _log(model: str, verdicts: dict[str, list[str]], task: str = "tiny") -> Any:
    """An Inspect log as Inspect writes one: one sample per id, one epoch per verdict."""
    from inspect_ai.scorer import Score

    samples = [ilog.EvalSample(id=sid, epoch=i + 1, input=f"do {sid}", target="x",
                               scores={"match": Score(value=v)})
               for sid, vs in verdicts.items() for i, v in enumerate(vs)]
    epochs = max(len(vs) for vs in verdicts.values())
    spec = ilog.EvalSpec(created="2026-01-01T00:00:00+00:00", task=task, model=model,
                         dataset=ilog.EvalDataset(name=task, samples=len(verdicts)),
                         config=ilog.EvalConfig(epochs=epochs))
    results = ilog.EvalResults(total_samples=len(samples), completed_samples=len(samples),
                               scores=[ilog.EvalScore(name="match", scorer="match", reducer="mean", metrics={
                                   "accuracy": ilog.EvalMetric(name="accuracy", value=0.5)})])
    return ilog.EvalLog(status="success", eval=spec, samples=samples, results=results)


def _keyed(records: Any) -> list[str]:
    return sorted(json.dumps(rollout_to_dict(r), sort_keys=True) for r in records)


def test_a_folder_of_eval_and_json_logs_as_inspect_eval_leaves_it(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    a = _log("openai/a", {"s1": ["C", "I", "C"], "s2": ["I", "I", "C"]})
    b = _log("openai/b", {"s1": ["C", "C", "C"], "s2": ["C", "I", "P"]})
    ilog.write_eval_log(a, str(logs / f"{STAMP}_tiny_aaaa.eval"))
    ilog.write_eval_log(b, str(logs / f"{STAMP}_tiny_bbbb.json"))
    (logs / "logs.json").write_text('{"not": "a log"}')  # Inspect's manifest: not a log
    (logs / "notes.json").write_text("{}")  # nor is any .json not named as a log
    assert [p.name for p in log_files(logs)] == [f"{STAMP}_tiny_aaaa.eval", f"{STAMP}_tiny_bbbb.json"]
    assert detect_format(logs)[0] == "inspect"
    res = load_foreign(logs)
    assert res.format == "inspect" and len(res.records) == 12
    # one rollout per (sample, epoch), as each file alone gives them
    alone = [*load_foreign(logs / f"{STAMP}_tiny_aaaa.eval").records,
             *load_foreign(logs / f"{STAMP}_tiny_bbbb.json").records]
    assert _keyed(res.records) == _keyed(alone)
    assert {(r.agent, r.task_id, r.rollout, r.passes) for r in res.records if r.task_id == "s2"} >= {
        ("openai/a", "s2", 2, True), ("openai/b", "s2", 2, False)}  # "P": a partial credit fails
    assert any("2 Inspect log(s) read" in n for n in res.notes)
    assert any(n.startswith(f"{STAMP}_tiny_bbbb.json: 1 partial-credit") for n in res.notes)


def test_the_export_of_a_run_reads_back_whole(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`export --format inspect -o logs/` then `import logs/`, `score logs/`, `report logs/`."""
    run_dir = copy_run(tmp_path)
    logs = tmp_path / "logs"
    assert main(["export", str(run_dir), "--format", "inspect", "-o", str(logs)]) == 0
    # Inspect's own reader opens each, and its own writer gives the same log as .json
    first = sorted(logs.glob("*.eval"))[0]
    log = ilog.read_eval_log(str(first))
    ilog.write_eval_log(log, str(logs / f"{STAMP}_{first.stem}.json"))
    first.unlink()
    assert main(["import", str(logs), "-o", str(tmp_path / "back.jsonl")]) == 0
    back = load_foreign(tmp_path / "back.jsonl").records
    assert _keyed(back) == _keyed(read_records(run_dir))
    capsys.readouterr()
    assert main(["score", str(logs), "--format", "json", "--resamples", "50"]) == 0
    from_logs = json.loads(capsys.readouterr().out)
    assert main(["score", str(run_dir), "--format", "json", "--resamples", "50"]) == 0
    from_run = json.loads(capsys.readouterr().out)
    assert from_logs == from_run
    assert main(["report", str(logs), "-o", str(tmp_path / "page.html"), "--resamples", "20"]) == 0
    assert "(inspect)" in (tmp_path / "page.html").read_text()


def test_the_same_rollout_in_two_logs_is_refused(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    log = _log("openai/a", {"s1": ["C"]})
    ilog.write_eval_log(log, str(logs / f"{STAMP}_tiny_one.eval"))
    ilog.write_eval_log(log, str(logs / f"{STAMP}_tiny_two.json"))
    with pytest.raises(InputError, match=r"sample 's1' epoch 1 of 'openai/a' is in .*one\.eval too"):
        load_foreign(logs)


def test_a_folder_without_logs_and_links_in_it(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="looked for SWE-bench and Terminal-Bench and Inspect results"):
        load_foreign(tmp_path / "empty")
    logs = tmp_path / "logs"
    logs.mkdir()
    elsewhere = tmp_path / f"{STAMP}_secret.eval"
    ilog.write_eval_log(_log("openai/a", {"s1": ["C"]}), str(elsewhere))
    (logs / f"{STAMP}_linked.eval").symlink_to(elsewhere)  # a link is neither listed nor followed
    shutil.copy(elsewhere, logs / f"{STAMP}_real.eval")
    assert [p.name for p in log_files(logs)] == [f"{STAMP}_real.eval"]
    assert len(load_foreign(logs).records) == 1
