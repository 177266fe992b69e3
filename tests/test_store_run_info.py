"""Typed store rows: ``run_info()`` -> ``RunInfo`` (checked once), ``retest_rows()`` -> ``RetestRow``."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from reliabench.errors import RecordError, StoreError
from reliabench.store import RetestRow, RunInfo, RunStore, SuiteInfo

FIXTURE_RUN = Path(__file__).parent / "fixtures" / "report" / "run"


def row(**config: Any) -> dict[str, Any]:
    return {"created_at": 12.5, "config_hash": "h", "config": config,
            "suite": {"name": "s", "version": "1", "hash": "abc"},
            "packages": {"reliabench": "0.1.0"}, "isolation": "bubblewrap"}


def test_a_stored_run_reads_into_typed_fields() -> None:
    with RunStore.open_existing(FIXTURE_RUN, readonly=True) as store:
        info = store.run_info()
    assert info.suite == SuiteInfo("py30", info.suite.version, info.suite.hash)
    assert info.suite.hash and len(info.suite.hash) == 64
    assert info.isolation == "bubblewrap"
    assert info.n == 3 and info.seed == 0 and info.sandbox == "auto"
    assert info.scanners == ("bandit",)
    assert info.tasks == ("interval_merge", "run_git_log")
    assert info.agents == ("sim-flaky", "sim-hasty")
    assert info.test_timeout_s == 3.0
    assert info.limits["max_procs"] == 64 and isinstance(info.limits["max_procs"], int)
    assert info.command_line is not None and info.command_line[:2] == ("reliabench", "run")
    assert info.agents_config is not None and len(info.agents_config["agents"]) == 2
    assert info.security_policy is None  # this run was given none
    assert info.packages["reliabench"]
    assert info.suite_path == info.config["suite_path"]
    # the whole configuration is kept as stored
    assert info.config["suite_hash"] == info.suite.hash


def test_an_old_run_without_the_newer_keys() -> None:
    info = RunInfo.from_stored(row(seed=1, sandbox="auto"))
    assert (info.n, info.suite_path, info.security_policy, info.command_line, info.agents_config,
            info.test_timeout_s) == (None, None, None, None, None, None)
    assert info.scanners == () and info.limits == {}
    assert info.created_at == 12.5 and info.config_hash == "h"
    assert info.suite.as_dict() == {"name": "s", "version": "1", "hash": "abc"}


def test_security_policy_is_kept_as_given() -> None:
    policy = {"threshold": "medium", "allow": [{"rule": "B101"}]}
    assert RunInfo.from_stored(row(security_policy=policy)).security_policy == policy


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"n": "3"}, r"run config\.n: expected an integer >= 1, got '3'"),
        ({"n": 0}, r"run config\.n: expected an integer >= 1, got 0"),
        ({"n": True}, r"run config\.n: expected an integer >= 1, got True"),
        ({"seed": 1.5}, r"run config\.seed: expected an integer, got 1\.5"),
        ({"scanners": "bandit"}, r"run config\.scanners: expected a list of strings, got 'bandit'"),
        ({"command_line": ["a", 1]}, r"run config\.command_line: expected a list of strings"),
        ({"limits": {"cpu_s": "x"}}, r"run config\.limits\.cpu_s: expected a number, got 'x'"),
        ({"limits": [1]}, r"run config\.limits: expected an object, got \[1\]"),
        ({"suite_path": 3}, r"run config\.suite_path: expected a string, got 3"),
        ({"test_timeout_s": "3"}, r"run config\.test_timeout_s: expected a number, got '3'"),
        ({"security_policy": "strict"}, r"run config\.security_policy: expected an object, got 'strict'"),
        ({"agents_config": []}, r"run config\.agents_config: expected an object, got \[\]"),
    ],
)
def test_a_bad_value_names_its_key(bad: dict[str, Any], message: str) -> None:
    with pytest.raises(StoreError, match="^some.sqlite: " + message):
        RunInfo.from_stored(row(**bad), where="some.sqlite")


def test_bad_row_parts_name_their_key() -> None:
    with pytest.raises(StoreError, match=r"run config: expected an object, got \[\]"):
        RunInfo.from_stored({**row(), "config": []})
    with pytest.raises(StoreError, match=r"run packages: expected versions as strings"):
        RunInfo.from_stored({**row(), "packages": {"x": 1}})
    with pytest.raises(StoreError, match=r"run suite\.hash: expected a string, got 5"):
        RunInfo.from_stored({**row(), "suite": {"hash": 5}})
    with pytest.raises(StoreError, match=r"run isolation: expected a string, got 1"):
        RunInfo.from_stored({**row(), "isolation": 1})


def test_a_damaged_store_row_is_a_store_error(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, run)
    with sqlite3.connect(run / RunStore.FILENAME) as conn:
        conn.execute("UPDATE run SET config_json = ?", ("{not json",))
    with RunStore.open_existing(run, readonly=True) as store, \
            pytest.raises(StoreError, match=r"reliabench\.sqlite: run configuration is not JSON"):
        store.run_info()
    with sqlite3.connect(run / RunStore.FILENAME) as conn:
        conn.execute("UPDATE run SET config_json = ?", (json.dumps({"n": "many"}),))
    with RunStore.open_existing(run, readonly=True) as store, \
            pytest.raises(StoreError, match=r"reliabench\.sqlite: run config\.n: expected an integer"):
        store.run_info()


def test_retest_rows_round_trip_and_a_bad_status_is_named(tmp_path: Path) -> None:
    run = tmp_path / "run"
    shutil.copytree(FIXTURE_RUN, run)
    row: RetestRow = {"task_id": "t", "agent": "a", "rollout": 0, "rep": 0, "status": "completed",
                      "order_seed": 7, "seconds": 0.5, "reason": None,
                      "tests": [["test_x", "passed", False]]}
    with RunStore.open_existing(run) as store:
        assert store.retest_rows() == []
        store.add_retests([row, {**row, "rep": 1, "status": "test_error", "reason": "no start"}])
        rows = store.retest_rows()
    assert rows[0] == row
    assert (rows[1]["status"], rows[1]["rep"], rows[1]["reason"]) == ("test_error", 1, "no start")
    with sqlite3.connect(run / RunStore.FILENAME) as conn:
        conn.execute("UPDATE retests SET status = 'done' WHERE rep = 1")
    with RunStore.open_existing(run, readonly=True) as store, \
            pytest.raises(RecordError, match=r"reliabench\.sqlite: retests\['t', 'a', 0, 1\]\.status: "
                                             r"expected one of completed, .*, got 'done'"):
        store.retest_rows()
