"""The figures per group of tasks (``score --by``, ``report --by``) in every format, pinned byte for byte.

The input is a run directory made here: two agents, n = 3, Go and Rust tasks with per-test
outcomes, a shell task with coarse outcomes (one per rollout, from a reward), and a task the run
has no labels for. Regenerate with ``RELIABENCH_REGEN_GOLDEN=1`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.records import Rollout, TestOutcome, write_jsonl
from reliabench.report.group_tables import group_section_html
from reliabench.runs import RunDirectory
from reliabench.store import RunStore
from reliabench.studies.scoring import TaskLabels, group_scores

GOLDEN = Path(__file__).parents[1] / "golden" / "render"
REGEN = os.environ.get("RELIABENCH_REGEN_GOLDEN") == "1"

LABELS = {
    "go-bowling": {"language": "go", "tags": ["go", "aider-polyglot"]},
    "go-series": {"language": "go", "tags": ["go", "aider-polyglot"]},
    "rust-luhn": {"language": "rust", "tags": ["rust", "aider-polyglot"]},
    "hello-file": {"language": "shell", "tags": ["harbor", "files"]},
}


def _tests(task: str, passed: int, total: int) -> tuple[TestOutcome, ...]:
    return tuple(TestOutcome(f"{task}::t{i}", "passed" if i < passed else "failed") for i in range(total))


def _records() -> list[Rollout]:
    out = []
    for agent, quality in (("strong", 0), ("weak", 1)):
        for task, total in (("go-bowling", 4), ("go-series", 3), ("rust-luhn", 5), ("orphan", 2)):
            for i in range(3):
                failing = (i + quality + len(task)) % 3 if quality else int(i == 2 and task == "rust-luhn")
                out.append(Rollout(task, agent, i, tests=_tests(task, total - failing, total)))
        for i in range(3):
            ok = i != 1 or agent == "strong"
            out.append(Rollout("hello-file", agent, i, tests=(TestOutcome("reward", "passed" if ok else "failed"),),
                               meta={"coarse_outcomes": True}))
    return out


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("grouped") / "run"
    store, _ = RunStore.create_or_resume(out, config={"n": 3, "task_labels": LABELS}, config_hash="h",
                                         suite={"name": "s", "version": "1", "hash": "x"}, packages={},
                                         isolation="bubblewrap")
    with store:
        for r in _records():
            store.add(r)
    return out


def check(name: str, text: str) -> None:
    path = GOLDEN / f"{name}.txt"
    if REGEN:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text


CASES = {
    "score_by_language_table": ["score", "RUN", "--by", "language", "-k", "1,2", "--resamples", "50"],
    "score_by_language_markdown": ["score", "RUN", "--by", "language", "-k", "1,2", "--resamples", "50",
                                   "--format", "markdown"],
    "score_by_language_csv": ["score", "RUN", "--by", "language", "-k", "1", "--resamples", "50", "--format",
                              "csv"],
    "score_by_language_json": ["score", "RUN", "--by", "language", "-k", "1", "--resamples", "50", "--format",
                               "json"],
    "score_by_tag_table": ["score", "RUN", "--by", "tag", "-k", "1", "--resamples", "50"],
    "report_by_language_markdown": ["report", "RUN", "--by", "language", "-k", "1,2", "--resamples", "50",
                                    "--format", "markdown"],
    "report_by_language_latex": ["report", "RUN", "--by", "language", "-k", "1", "--resamples", "50",
                                 "--format", "latex"],
    "report_by_language_csv": ["report", "RUN", "--by", "language", "-k", "1", "--resamples", "50",
                               "--format", "csv"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_grouped_outputs_are_golden(name: str, run: Path, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main([str(run) if a == "RUN" else a for a in CASES[name]]) == 0
    check(name, capsys.readouterr().out)


def test_the_html_section_is_golden(run: Path) -> None:
    with RunDirectory.open(run) as rd:
        labels = rd.task_labels()
        assert labels is not None
        groups = group_scores(rd.records(), labels, "language", [1], n_resamples=50)
    check("group_section_html", group_section_html(groups) + "\n")


def test_the_page_has_the_section_only_when_asked(run: Path, tmp_path: Path) -> None:
    assert main(["report", str(run), "-o", str(tmp_path / "plain.html"), "--resamples", "20"]) == 0
    assert main(["report", str(run), "-o", str(tmp_path / "by.html"), "--resamples", "20", "--by", "language"]) == 0
    assert 'id="by-language"' not in (tmp_path / "plain.html").read_text()
    page = (tmp_path / "by.html").read_text()
    assert 'id="by-language"' in page and "Not in any group (no language): orphan" in page


def test_groups_are_their_tasks_alone_and_coarse_tasks_are_marked(run: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    assert main(["score", str(run), "--by", "language", "-k", "1,2", "--resamples", "0", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    groups = {g["group"]: g for g in doc["by"]["groups"]}
    assert sorted(groups) == ["go", "rust", "shell"] and doc["by"]["unlabelled_tasks"] == ["orphan"]
    strong = {name: next(a for a in g["agents"] if a["agent"] == "strong") for name, g in groups.items()}
    # rust-luhn alone: the strong agent's third rollout fails one test -> reliability@1 = 2/3, pass^2 = 1/3
    assert strong["rust"]["metrics"]["reliability@1"]["value"] == pytest.approx(2 / 3)
    assert strong["rust"]["metrics"]["pass^2"]["value"] == pytest.approx(1 / 3)
    # the misapplied figure (first rollout, n = its tests): rust-luhn's first rollout passes 5 of 5
    assert strong["rust"]["metrics"]["misapplied_pass@2"]["value"] == 1.0
    # the coarse task: its verdicts count, its per-test figures do not (and say so)
    shell = strong["shell"]["metrics"]
    assert groups["shell"]["coarse_tasks"] == 1 and shell["reliability@1"]["value"] == 1.0
    assert shell["misapplied_pass@1"]["value"] is None and shell["misapplied_pass@1"]["excluded_tasks"] == 1
    assert shell["macro_test_pass_rate"]["value"] is None
    assert any("coarse outcomes" in n for n in groups["shell"]["notes"])
    assert any("strong: 1 of 5 task(s) have coarse outcomes" in n for n in doc["notes"])


def test_by_needs_task_labels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records = tmp_path / "r.jsonl"
    write_jsonl(_records()[:3], records)
    assert main(["score", str(records), "--by", "language"]) == 2
    assert "has no task labels (a run directory keeps each task's language and tags" in capsys.readouterr().err


def test_labels_of_a_run_are_checked_and_older_runs_read_their_suite(tmp_path: Path) -> None:
    hostile = tmp_path / "hostile"
    store, _ = RunStore.create_or_resume(hostile, config={"task_labels": {
        "a": {"language": "go", "tags": ["x", 3]}, "b": "not a table", "c": {"language": 7}}},
        config_hash="h", suite={}, packages={}, isolation="none")
    store.close()
    with RunDirectory.open(hostile) as rd:
        assert rd.task_labels() == {"a": TaskLabels("go", ("x",))}
    from reliabench.tasks.suite import bundled_suites

    older = tmp_path / "older"
    store, _ = RunStore.create_or_resume(older, config={"suite_path": str(bundled_suites()["py30"])},
                                         config_hash="h", suite={}, packages={}, isolation="none")
    store.close()
    with RunDirectory.open(older) as rd:
        labels = rd.task_labels()
        assert labels is not None and {x.language for x in labels.values()} == {"python"}
    gone = tmp_path / "gone"
    store, _ = RunStore.create_or_resume(gone, config={"suite_path": str(tmp_path / "nowhere")},
                                         config_hash="h", suite={}, packages={}, isolation="none")
    store.close()
    with RunDirectory.open(gone) as rd:
        assert rd.task_labels() is None
