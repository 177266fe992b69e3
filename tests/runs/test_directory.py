"""The read side of a run (reliabench.runs.RunDirectory): one object opens the store, once.

Every part of a run -- records, run row, re-tests, artifacts, adaptive state -- is read through
it, and each command that reads a run opens the store exactly once (``score RUN --html`` used to
open it five times).
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest
from report_helpers import add_flaky_retests, copy_run, make_adaptive

from reliabench.cli import main
from reliabench.errors import InputError, UsageError
from reliabench.records import Finding
from reliabench.runs import RunDirectory
from reliabench.runs.adaptive_file import ADAPTIVE_FILE
from reliabench.store import RunStore, artifact_dir, read_records
from reliabench.tasks.suite import load_suite

BUNDLED = Path(__file__).resolve().parents[2] / "src" / "reliabench" / "tasks" / "bundled" / "py30"


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return copy_run(tmp_path)


@pytest.fixture
def opens(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, bool]]:
    """Every ``RunStore.open_existing`` call: (path, readonly)."""
    calls: list[tuple[str, bool]] = []
    real = RunStore.open_existing.__func__  # type: ignore[attr-defined]

    def counting(cls: type[RunStore], root: str | Path, *, readonly: bool = False) -> RunStore:
        calls.append((str(root), readonly))
        store: RunStore = real(cls, root, readonly=readonly)
        return store

    monkeypatch.setattr(RunStore, "open_existing", classmethod(counting))
    return calls


def test_each_part_is_read_through_one_open(run_dir: Path, opens: list[tuple[str, bool]]) -> None:
    with RunDirectory.open(run_dir) as run:
        records = run.records()
        assert run.records() is records  # read once, kept
        info = run.info()
        assert run.info() is info and info.agents == ("sim-flaky", "sim-hasty")
        assert run.retests() == ()
        assert run.adaptive() is None  # a fixed-n run
        r = records[0]
        stored = run.artifacts(r.task_id, r.agent, r.rollout)
        assert stored.directory == artifact_dir(run_dir, *r.key) and stored.present
    assert opens == [(str(run_dir), True)]
    assert list(records) == read_records(run_dir)


def test_what_is_not_a_run_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a run directory"):
        RunDirectory.open(tmp_path)
    assert not RunDirectory.is_run(tmp_path)


def test_reading_never_writes(run_dir: Path) -> None:
    with RunDirectory.open(run_dir) as run:
        r = run.records()[0]
        with pytest.raises(UsageError, match="opened read-only"):
            run.replace_security(r, (), (), r.meta)
    with RunDirectory.open(run_dir, writable=True) as run:
        f = Finding("bandit", "B999", "high", path="x.py", line=1)
        new = run.replace_security(r, (f,), (), r.meta)
        assert run.records()[0] == new  # what was read follows the write
    assert read_records(run_dir)[0].findings == (f,)


def test_retests_and_adaptive_state(run_dir: Path) -> None:
    key = add_flaky_retests(run_dir)
    make_adaptive(run_dir)
    with RunDirectory.open(run_dir) as run:
        assert {(row["task_id"], row["agent"], row["rollout"]) for row in run.retests()} >= {key}
        state = run.adaptive()
        assert state is not None and state.finished and state.design.first == 3
        assert state.history == ({"sim-flaky": 3, "sim-hasty": 3},) and state.tasks == 2


def test_a_broken_adaptive_document(run_dir: Path) -> None:
    path = run_dir / ADAPTIVE_FILE
    path.write_text(json.dumps({"finished": True, "design": {"first": 3}}), encoding="utf-8")
    with RunDirectory.open(run_dir) as run, pytest.raises(InputError, match="not an adaptive-run document"):
        run.adaptive()
    path.write_text("{not json", encoding="utf-8")
    with RunDirectory.open(run_dir) as run, pytest.raises(InputError, match=str(path)):
        run.adaptive()
    path.write_text(json.dumps({"finished": False, "rounds": "unreadable yet"}), encoding="utf-8")
    with RunDirectory.open(run_dir) as run:
        assert run.adaptive() is None  # a run still in its rounds


def test_an_adaptive_document_that_is_a_link_is_not_followed(run_dir: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text(json.dumps({"finished": True}), encoding="utf-8")
    (run_dir / ADAPTIVE_FILE).symlink_to(elsewhere)
    with RunDirectory.open(run_dir) as run, pytest.raises(InputError, match="not an adaptive-run document"):
        run.adaptive()


@pytest.mark.parametrize("args", [
    ["score", "{run}", "--html", "{tmp}/page.html", "--resamples", "20"],
    ["score", "{run}", "--format", "json", "--resamples", "0"],
    ["score", "{run}", "--exclude-flaky-tests", "--flaky-verdict", "majority", "--resamples", "0"],
    ["report", "{run}", "-o", "{tmp}/page.html", "--resamples", "20"],
    ["report", "{run}", "--format", "latex", "--resamples", "0"],
    ["export", "{run}", "-o", "{tmp}/out.jsonl"],
    ["rank", "{run}", "--resamples", "20"],
    ["plan", "--pilot", "{run}", "--max-n", "12", "--half-width", "0.2"],
    ["retest", "{run}", "--report-only"],
    ["scan", "{run}", "--dry-run"],
], ids=lambda a: " ".join(a[:3]))
def test_a_command_opens_the_store_once(args: list[str], run_dir: Path, tmp_path: Path,
                                        opens: list[tuple[str, bool]],
                                        capsys: pytest.CaptureFixture[str]) -> None:
    """The stored policy, the re-tests, the adaptive state, the page's provenance and artifacts:
    all through the one RunDirectory a command opens."""
    add_flaky_retests(run_dir)
    make_adaptive(run_dir)
    suite = load_suite(BUNDLED)  # where `scan` finds the starters
    with sqlite3.connect(run_dir / RunStore.FILENAME) as conn:
        conn.execute("UPDATE run SET config_json = json_set(config_json, '$.suite_path', ?), suite_hash = ?",
                     (str(suite.root), suite.content_hash))
    opens.clear()
    assert main([a.format(run=run_dir, tmp=tmp_path) for a in args]) == 0, capsys.readouterr().err
    assert opens == [(str(run_dir), True)]
