"""What a command reads records from (reliabench.runs.open_source): a run, or anything import reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from report_helpers import copy_run

from reliabench.errors import UsageError
from reliabench.importers import load_foreign, load_source
from reliabench.records import write_jsonl
from reliabench.runs import RUN_FORMAT, open_source, read_source
from reliabench.store import RunStore, read_records

FOREIGN = Path(__file__).parents[1] / "fixtures" / "foreign"


def test_a_run_directory_is_opened_once_and_kept(tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    with open_source(str(run_dir)) as src:
        assert src.format == RUN_FORMAT and src.run is not None and src.name == str(run_dir)
        assert list(src.records) == read_records(run_dir) and src.run.records() is src.records
        assert src.notes == () and src.reported == ()
        assert src.run.info().n == 3  # the store is still open inside the block


def test_anything_else_goes_to_the_importers(tmp_path: Path) -> None:
    jsonl = tmp_path / "r.jsonl"
    write_jsonl(read_records(copy_run(tmp_path)), jsonl)
    with open_source(jsonl) as src:
        assert src.run is None and src.format == "jsonl"
        assert src.records == load_source(jsonl).records
    tau = open_source(FOREIGN / "tau_bench.json", agent="me")
    assert tau.format == "tau-bench" and {r.agent for r in tau.records} == {"me"}


def test_the_agent_can_be_renamed_in_a_run_too(tmp_path: Path) -> None:
    src = read_source(copy_run(tmp_path), agent="renamed")
    assert {r.agent for r in src.records} == {"renamed"}


def test_read_source_closes_the_run(tmp_path: Path) -> None:
    src = read_source(copy_run(tmp_path))
    assert src.run is not None and src.records
    with pytest.raises(sqlite3.ProgrammingError):
        src.run.retests()  # nothing more is read from a closed store


def test_a_run_without_rollouts(tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    with sqlite3.connect(run_dir / RunStore.FILENAME) as conn:
        conn.execute("DELETE FROM rollouts")
    with pytest.raises(UsageError, match="the run has no recorded rollouts yet"):
        open_source(run_dir)


def test_the_importers_do_not_read_runs(tmp_path: Path) -> None:
    """One reader of run directories: the importers point at it instead of opening the store."""
    run_dir = copy_run(tmp_path)
    with pytest.raises(UsageError, match=r"a run directory of reliabench run.*reliabench\.runs\.open_source"):
        load_foreign(run_dir)
    with pytest.raises(UsageError, match=r"reliabench\.runs\.open_source"):
        load_source(run_dir)
