"""Golden outputs of the study renderers (proxy, sweep, audit, compare, rank, plan, scan, suites).

Every command's table and JSON output on one fixed input is pinned byte for byte, so that
moving or changing a renderer cannot change what users see unnoticed. Regenerate with
``RELIABENCH_REGEN_GOLDEN=1 pytest tests/test_report_render_golden.py`` and review the diff.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from reliabench.cli import main
from reliabench.tasks.validate import TaskCheck, VariantCheck

GOLDEN = Path(__file__).parent / "golden" / "render"
REGEN = os.environ.get("RELIABENCH_REGEN_GOLDEN") == "1"

CASES: dict[str, list[str]] = {
    "proxy_table": ["proxy", "mixed.jsonl", "--resamples", "50"],
    "proxy_markdown": ["proxy", "mixed.jsonl", "--resamples", "50", "--format", "markdown"],
    "proxy_csv": ["proxy", "mixed.jsonl", "--resamples", "50", "--format", "csv"],
    "proxy_json": ["proxy", "mixed.jsonl", "--resamples", "50", "--format", "json"],
    "proxy_real_table": ["proxy", "real.jsonl", "--resamples", "50"],
    "proxy_real_json": ["proxy", "real.jsonl", "--resamples", "50", "--format", "json"],
    "simulate_table": ["simulate", "--config", "small.toml", "--resamples", "20", "-k", "1,2",
                       "--sweep", "n=2,3", "--sweep", "k=1,2"],
    "simulate_markdown": ["simulate", "--config", "small.toml", "--resamples", "20", "-k", "1,2",
                          "--sweep", "n=2,3", "--format", "markdown"],
    "simulate_csv": ["simulate", "--config", "small.toml", "--resamples", "20", "-k", "1,2",
                     "--sweep", "n=2,3", "--format", "csv"],
    "simulate_json": ["simulate", "--config", "small.toml", "--resamples", "20", "-k", "1,2",
                      "--sweep", "n=2,3", "--format", "json"],
    "audit_table": ["audit", "mixed.jsonl", "-k", "1,2", "--resamples", "50"],
    "audit_json": ["audit", "mixed.jsonl", "-k", "1,2", "--resamples", "50", "--format", "json"],
    "compare_pair_table": ["compare", "mixed.jsonl", "--a", "sim-agent-00", "--b", "sim-agent-02",
                           "--resamples", "100"],
    "compare_pair_json": ["compare", "mixed.jsonl", "--a", "sim-agent-00", "--b", "sim-agent-02",
                          "--resamples", "100", "--format", "json"],
    "compare_rank_table": ["compare", "mixed.jsonl", "-k", "2", "--resamples", "100"],
    "compare_rank_json": ["compare", "mixed.jsonl", "-k", "2", "--resamples", "100", "--format", "json"],
    "rank_table": ["rank", "mixed.jsonl", "--resamples", "100"],
    "rank_json": ["rank", "mixed.jsonl", "--resamples", "100", "--format", "json"],
    "plan_rate_table": ["plan", "--rate", "0.3", "--half-width", "0.1"],
    "plan_rate_json": ["plan", "--rate", "0.3", "--half-width", "0.1", "--format", "json"],
    "plan_difference_table": ["plan", "--rate", "a=0.3", "--rate", "b=0.5", "--rollouts", "1,2,5",
                              "--max-tasks", "200"],
    "plan_pilot_table": ["plan", "--pilot", "mixed.jsonl", "--half-width", "0.15"],
    "plan_pilot_json": ["plan", "--pilot", "mixed.jsonl", "--half-width", "0.15", "--format", "json"],
}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``small.toml``, ``mixed.jsonl`` (agent 02 not simulated) and ``real.jsonl`` (none simulated)."""
    d = tmp_path_factory.mktemp("render")
    (d / "small.toml").write_text("tasks = 12\nagents = 3\nrollouts = 4\n")
    sim = d / "sim.jsonl"
    assert main(["simulate", "--config", str(d / "small.toml"), "--records", str(sim),
                 "--resamples", "0", "-k", "1"]) == 0
    rows = [json.loads(line) for line in sim.read_text().splitlines()]
    for r in rows:
        if r["agent"] == "sim-agent-02":
            r.pop("simulated", None)
    (d / "mixed.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for r in rows:
        r.pop("simulated", None)
    (d / "real.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


def check(name: str, text: str) -> None:
    """Compare ``text`` with the golden file ``name`` (or write it when regenerating)."""
    path = GOLDEN / f"{name}.txt"
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text


@pytest.mark.parametrize("name", sorted(CASES))
def test_command_output_is_golden(name: str, inputs: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(inputs)
    capsys.readouterr()
    assert main(CASES[name]) == 0
    check(name, capsys.readouterr().out)


def test_scan_tables_are_golden(tmp_path: Path) -> None:
    from report_helpers import copy_run

    from reliabench.metrics.analysis import score
    from reliabench.metrics.security import parse_threshold
    from reliabench.report.scan_tables import security_tables
    from reliabench.report.terminal import to_text
    from reliabench.store import RunStore

    with RunStore.open_existing(copy_run(tmp_path), readonly=True) as store:
        records = store.rollouts()
    text = "".join(to_text(security_tables(score(records, ks, threshold=parse_threshold(level))))
                   for ks, level in (((1, 2), "low:low"), ((1,), "high:medium")))
    check("scan_tables", text)



def _checks() -> list[TaskCheck]:
    return [
        TaskCheck("parse_ini", 6, 2, 8, 6, (VariantCheck("eval_value", True, ("bandit",), ("bandit",)),),
                  (), "bubblewrap"),
        TaskCheck("run_git_log", 4, 1, 4, 3, (VariantCheck("shell_fstring", True, (), ("bandit",)),
                                              VariantCheck("os_popen", True, ("bandit", "semgrep"), ())),
                  ("variant shell_fstring: not caught by bandit", "reference fails 1 test"), "namespaces"),
        TaskCheck("plain", 3, 0, 3, 3, (), (), "bubblewrap"),
    ]


def test_suite_tables_are_golden() -> None:
    from reliabench.report.suite_tables import (
        SuiteRow,
        suites_table,
        validation_line,
        validation_summary,
        validation_table,
    )
    from reliabench.report.terminal import to_text

    checks = _checks()
    rows = [SuiteRow("py30", "1.0.0", 31, 8, Path("/suites/py30")), SuiteRow("tiny", "0.1", 2, 0, Path("/x/tiny"))]
    text = to_text([suites_table(rows), *(validation_line(c) for c in checks),
                    validation_table(checks, "py30 1.0.0"), *validation_summary(checks)])
    check("suite_tables", text)


def test_validation_exceptions_by_reason_are_golden() -> None:
    """``validate`` on a converted benchmark: exceptions named by the first check failed, declared deviations noted."""
    from reliabench.report.suite_tables import validation_line, validation_summary
    from reliabench.report.terminal import to_text

    checks = [
        TaskCheck("go-dnd-character", 0, 0, 0, 0, (), ("tasks/go-dnd-character/tests: the test command lists no "
                                                     "test on the reference (exit status 1): package slices is "
                                                     "not in GOROOT",), "bubblewrap", exception="cannot collect"),
        TaskCheck("java-mazy-mice", 6, 0, 4, 6, (), ("solution: reference fails 2 hidden test(s): a, b",),
                  "bubblewrap", exception="reference fails"),
        TaskCheck("go-ledger", 9, 0, 9, 0, (), (), "bubblewrap",
                  notes=("go-ledger: the untouched starter passes every hidden test, as the task declares "
                         "(tag 'starter-passes')",)),
        TaskCheck("rust-poker", 0, 0, 0, 0, (), ("rust-poker: the test command lists no test",), "bubblewrap",
                  exception="cannot collect"),
    ]
    check("validation_exceptions", to_text([*(validation_line(c) for c in checks), *validation_summary(checks)]))


def test_html_report_is_golden(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The HTML report of the fixture run (tables, figures, rank intervals), its timestamp fixed."""
    from report_helpers import copy_run

    from reliabench.metrics.analysis import score
    from reliabench.metrics.security import parse_threshold
    from reliabench.report import html
    from reliabench.store import RunStore
    from reliabench.studies.rank import rank_for_report

    monkeypatch.setattr(html.time, "strftime", lambda *a, **k: "2026-01-01 00:00:00")
    with RunStore.open_existing(copy_run(tmp_path), readonly=True) as store:
        records = store.rollouts()
    report = score(records, (1, 2), threshold=parse_threshold("low:low"), n_resamples=50)
    check("html_report", html.render_html(report, title="fixture run", ranking=rank_for_report(report)))
