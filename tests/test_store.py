"""The run store (reliabench.store): create, resume, refuse a different run, write atomically, read only.

Names, surrogates and the artifact-folder encoding are pinned in tests/test_names.py; a full
disk and read-only mounts through the CLI in tests/test_hostile_rollouts.py.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from reliabench.errors import OutputError, RunMismatchError, StoreError, UsageError
from reliabench.records import Cost, Finding, Rollout, ScanError, TestOutcome
from reliabench.store import (
    STORE_SCHEMA_VERSION,
    RunStore,
    artifact_component,
    artifact_dir,
    is_run_directory,
    read_records,
)

SUITE = {"name": "s", "version": "1", "hash": "abc"}
PACKAGES = {"reliabench": "0.0"}


def _open(root: Path, config: dict[str, object] | None = None, config_hash: str = "h1") -> tuple[RunStore, bool]:
    return RunStore.create_or_resume(root, config=config or {"n": 2, "seed": 0}, config_hash=config_hash,
                                     suite=SUITE, packages=PACKAGES, isolation="bubblewrap")


def _rollout(i: int, *, task: str = "t", agent: str = "a", status: str = "completed",
             ok: bool = True) -> Rollout:
    return Rollout(
        task_id=task, agent=agent, rollout=i, status=status,
        tests=(TestOutcome("test_a", "passed" if ok else "failed"), TestOutcome("test_sec", "passed", security=True)),
        findings=(Finding(tool="bandit", rule_id="B101", severity="low", confidence="high", cwe=703,
                          path="solution.py", line=3, message="assert used"),),
        cost=Cost(seconds=1.5, tokens=100, usd=0.01), isolation="bubblewrap",
    )


def _run_row(root: Path) -> tuple[object, ...]:
    conn = sqlite3.connect(root / RunStore.FILENAME)
    try:
        row = conn.execute("SELECT store_schema, config_json, config_hash, suite_name, suite_version, suite_hash, "
                           "packages_json, isolation FROM run").fetchall()
    finally:
        conn.close()
    assert len(row) == 1  # one run row
    schema, config, chash, name, version, shash, packages, isolation = row[0]
    return (schema, json.loads(config), chash, name, version, shash, json.loads(packages), isolation)


def _count(root: Path, table: str) -> int:
    conn = sqlite3.connect(root / RunStore.FILENAME)
    try:
        return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    finally:
        conn.close()


# ------------------------------------------------------------------ create, resume, mismatch


def test_create_then_resume(tmp_path: Path) -> None:
    root = tmp_path / "run"
    store, resumed = _open(root)
    with store:
        assert not resumed
        store.add(_rollout(0))
    # what was stored (the typed accessor, run_info, is tested on its own)
    assert _run_row(root) == (STORE_SCHEMA_VERSION, {"n": 2, "seed": 0}, "h1", "s", "1", "abc", PACKAGES,
                              "bubblewrap")
    assert is_run_directory(root)
    store, resumed = _open(root)
    with store:
        assert resumed
        assert store.done_keys() == {("t", "a", 0)}
        assert store.rollouts() == [_rollout(0)]


def test_a_different_configuration_is_refused_naming_what_changed(tmp_path: Path) -> None:
    root = tmp_path / "run"
    store, _ = _open(root, {"n": 2, "seed": 0, "command_line": ["x"]})
    store.close()
    with pytest.raises(RunMismatchError, match=r"holds a run with a different configuration \(changed: n, seed\)"):
        _open(root, {"n": 3, "seed": 1, "command_line": ["y"]}, config_hash="h2")
    # only provenance differs but the hash does too: the message says content hashes
    with pytest.raises(RunMismatchError, match=r"\(changed: content hashes\)"):
        _open(root, {"n": 2, "seed": 0, "command_line": ["z"]}, config_hash="h3")
    # the refused attempt changed nothing
    assert _run_row(root)[2] == "h1"


def test_a_non_empty_non_run_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("x")
    with pytest.raises(UsageError, match="exists, is not empty and is not a run directory"):
        _open(tmp_path / "other")
    (tmp_path / "file").write_text("x")
    with pytest.raises(UsageError, match="exists and is not a directory"):
        _open(tmp_path / "file")
    assert not (tmp_path / "other" / RunStore.FILENAME).exists()


def test_an_empty_directory_becomes_a_run(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    store, resumed = _open(tmp_path / "empty")
    store.close()
    assert not resumed
    assert is_run_directory(tmp_path / "empty")


def test_open_existing_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="not a run directory"):
        RunStore.open_existing(tmp_path)
    (tmp_path / "f").write_text("x")
    with pytest.raises(UsageError, match="not a directory"):
        RunStore.open_existing(tmp_path / "f")
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / RunStore.FILENAME).mkdir()
    with pytest.raises(UsageError, match="is not a file"):
        RunStore.open_existing(tmp_path / "d")
    (tmp_path / "g").mkdir()
    (tmp_path / "g" / RunStore.FILENAME).write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StoreError, match="unreadable run store"):
        RunStore.open_existing(tmp_path / "g")


def test_an_interrupted_set_up_and_another_schema_are_store_errors(tmp_path: Path) -> None:
    root = tmp_path / "run"
    store, _ = _open(root)
    store.close()
    conn = sqlite3.connect(root / RunStore.FILENAME)
    conn.execute("UPDATE run SET store_schema = ?", (STORE_SCHEMA_VERSION + 1,))
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=f"store schema {STORE_SCHEMA_VERSION + 1}, this reliabench reads "
                                         f"{STORE_SCHEMA_VERSION}"):
        RunStore.open_existing(root)
    conn = sqlite3.connect(root / RunStore.FILENAME)
    conn.execute("DELETE FROM run")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match=r"no run row \(interrupted set-up\?\)"):
        RunStore.open_existing(root)


# ------------------------------------------------------------------ writing


def test_add_writes_children_and_refuses_a_duplicate(tmp_path: Path) -> None:
    root = tmp_path / "run"
    store, _ = _open(root)
    with store:
        store.add(_rollout(0))
        with pytest.raises(StoreError, match=r"rollout \('t', 'a', 0\) is already recorded"):
            store.add(_rollout(0, ok=False))
        assert store.rollouts() == [_rollout(0)]  # the first record is untouched
    assert (_count(root, "rollouts"), _count(root, "tests"), _count(root, "findings")) == (1, 2, 1)


def test_replace_status_replaces_only_that_status(tmp_path: Path) -> None:
    root = tmp_path / "run"
    store, _ = _open(root)
    with store:
        store.add(_rollout(0, status="infra_error"))
        store.add(_rollout(1))
        assert store.done_keys(except_status="infra_error") == {("t", "a", 1)}
        store.add(_rollout(0), replace_status="infra_error")  # the rerun replaces it
        with pytest.raises(StoreError, match="already recorded"):
            store.add(_rollout(1, ok=False), replace_status="infra_error")  # completed: kept
        assert [r.status for r in store.rollouts()] == ["completed", "completed"]
        assert store.rollouts()[1] == _rollout(1)
        assert store.done_keys(except_status="infra_error") == {("t", "a", 0), ("t", "a", 1)}
    # no orphan children of the replaced record
    assert (_count(root, "rollouts"), _count(root, "tests"), _count(root, "findings")) == (2, 4, 2)


def test_rollouts_are_ordered_by_key(tmp_path: Path) -> None:
    store, _ = _open(tmp_path / "run")
    with store:
        for task, agent, i in [("t2", "a", 0), ("t1", "b", 1), ("t1", "b", 0), ("t1", "a", 3)]:
            store.add(_rollout(i, task=task, agent=agent))
        assert [r.key for r in store.rollouts()] == [("t1", "a", 3), ("t1", "b", 0), ("t1", "b", 1),
                                                      ("t2", "a", 0)]


def test_replace_security_swaps_findings_only(tmp_path: Path) -> None:
    root = tmp_path / "run"
    store, _ = _open(root)
    with store:
        store.add(_rollout(0))
        new_finding = Finding(tool="semgrep", rule_id="R1", severity="high", confidence="medium", cwe=78,
                              path="solution.py", line=9, message="shell")
        new = store.replace_security(store.rollouts()[0], [new_finding], [ScanError("bandit", "x.py", "boom")],
                                     {"rescanned": True})
        assert store.rollouts() == [new]
        assert new.findings == (new_finding,)
        assert new.tests == _rollout(0).tests
        assert new.meta == {"rescanned": True}
    assert _count(root, "findings") == 1


def test_retests(tmp_path: Path) -> None:
    store, _ = _open(tmp_path / "run")
    row = {"task_id": "t", "agent": "a", "rollout": 0, "rep": 1, "status": "completed", "order_seed": 7,
           "seconds": 0.5, "reason": None, "tests": [["test_a", "passed", False]]}
    with store:
        assert store.retest_rows() == []  # no table yet: older stores stay readable
        store.add_retests([])
        store.add_retests([row, {**row, "rep": 0, "order_seed": None, "seconds": None}])
        rows = store.retest_rows()
        assert [r["rep"] for r in rows] == [0, 1]
        assert rows[1] == row
        with pytest.raises(StoreError, match="a re-test is already recorded"):
            store.add_retests([row])
        assert len(store.retest_rows()) == 2  # the refused batch left nothing


def test_writers_are_serialised_and_lose_nothing(tmp_path: Path) -> None:
    """Two handles on one run, each written from its own thread: every rollout recorded once."""
    root = tmp_path / "run"
    first, _ = _open(root)
    second, resumed = _open(root)
    assert resumed
    errors: list[BaseException] = []

    def write(store: RunStore, agent: str) -> None:
        try:
            for i in range(40):
                store.add(_rollout(i, agent=agent))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, a)) for s, a in ((first, "x"), (second, "y"))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    first.close()
    second.close()
    assert errors == []
    assert read_records(root) == sorted([_rollout(i, agent=a) for a in "xy" for i in range(40)],
                                        key=lambda r: r.key)
    assert _count(root, "tests") == 160


_WRITER = textwrap.dedent("""
    import sys
    from reliabench.records import Rollout, TestOutcome
    from reliabench.store import RunStore

    store, _ = RunStore.create_or_resume(sys.argv[1], config={}, config_hash="h", suite={}, packages={},
                                         isolation="none")
    tests = tuple(TestOutcome(f"test_{j}", "passed") for j in range(50))
    i = 0
    while True:
        store.add(Rollout("t", "a", i, tests=tests))
        print(i, flush=True)
        i += 1
""")


def test_kill_9_mid_write_loses_nothing_recorded(tmp_path: Path) -> None:
    root = tmp_path / "run"
    proc = subprocess.Popen([sys.executable, "-c", _WRITER, str(root)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    acknowledged = []
    for line in proc.stdout:
        acknowledged.append(int(line))
        if len(acknowledged) >= 30:
            break
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    with RunStore.open_existing(root, readonly=True) as store:
        recorded = store.rollouts()
    keys = {r.rollout for r in recorded}
    assert set(acknowledged) <= keys  # every acknowledged commit is there
    assert keys == set(range(len(keys)))  # and nothing after a gap
    assert all(len(r.tests or ()) == 50 for r in recorded)
    assert _count(root, "tests") == 50 * len(recorded)  # no half-written rollout
    # the run resumes: the store opens for writing and takes the next rollout
    store, resumed = RunStore.create_or_resume(root, config={}, config_hash="h", suite={}, packages={},
                                               isolation="none")
    with store:
        assert resumed
        store.add(Rollout("t", "a", len(keys), verdict=True))


# ------------------------------------------------------------------ reading only


def test_read_only_open_changes_nothing_and_cannot_write(tmp_path: Path) -> None:
    root = tmp_path / "run"
    store, _ = _open(root)
    with store:
        store.add(_rollout(0))
    db = root / RunStore.FILENAME
    before = (db.read_bytes(), db.stat().st_mtime_ns)
    with RunStore.open_existing(root, readonly=True) as ro:
        assert ro.rollouts() == [_rollout(0)]
        assert ro.done_keys() == {("t", "a", 0)}
        with pytest.raises(OutputError, match="cannot write the run store"):
            ro.add(_rollout(1))
    # the database is untouched (SQLite may leave its -wal/-shm side files in a writable
    # directory; on a read-only mount nothing is created: tests/test_hostile_rollouts.py)
    assert (db.read_bytes(), db.stat().st_mtime_ns) == before
    assert read_records(root) == [_rollout(0)]


def test_is_run_directory(tmp_path: Path) -> None:
    assert not is_run_directory(tmp_path)
    assert not is_run_directory(tmp_path / "missing")
    (tmp_path / "f").write_text("x")
    assert not is_run_directory(tmp_path / "f")
    store, _ = _open(tmp_path / "run")
    store.close()
    assert is_run_directory(tmp_path / "run")


# ------------------------------------------------------------------ artifact folders


def test_artifact_dirs(tmp_path: Path) -> None:
    store, _ = _open(tmp_path / "run")
    with store:
        d = store.artifact_dir("task/1", "model v1", 3)
        assert d == tmp_path / "run" / "artifacts" / "task%2F1" / "model%20v1" / "3"
        assert artifact_dir(tmp_path / "run", "task/1", "model v1", 3) == d  # one layout, one function


def test_artifact_component_is_injective_and_bounded() -> None:
    names = ["a", "a b", "a/b", "a_b", "a%20b", ".", "..", "...", "", "é", "x" * 500, "x" * 501]
    encoded = [artifact_component(n) for n in names]
    assert len(set(encoded)) == len(names)
    assert all(len(e) <= 200 for e in encoded)
    assert all("/" not in e and e not in {".", ".."} and e for e in encoded)
    assert artifact_component("é") == "%C3%A9"
    assert artifact_component("") == "%"
