"""The run store: one directory per run, an SQLite database plus artifacts.

::

    RUN/reliabench.sqlite                 WAL mode, one writer (the runner's main thread)
    RUN/artifacts/<task>/<agent>/<rollout>/   agent.log, diff.patch, tests.log

Tables: ``run`` (one row: configuration, its hash, suite name/version/hash, package
versions, isolation), ``rollouts`` (one row per recorded rollout, with the full record as
JSON), ``tests`` (one row per hidden test outcome), ``findings`` (one row per finding) and,
once ``reliabench retest`` or ``run --retest`` wrote some, ``retests`` (one row per re-run of
a rollout's hidden tests on its unchanged files; created on first use, so older stores stay
readable).
A rollout is written in ONE transaction with its tests and findings, so after a crash or
``kill -9`` every rollout is either fully there or not at all; resuming runs the missing ones.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

from reliabench.errors import RunMismatchError, StoreError, UsageError
from reliabench.records import Finding, Rollout, ScanError, rollout_from_dict, rollout_to_dict

__all__ = ["STORE_SCHEMA_VERSION", "RunStore", "artifact_path", "read_records"]

STORE_SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS run (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    store_schema INTEGER NOT NULL,
    created_at REAL NOT NULL,
    config_json TEXT NOT NULL,
    config_hash TEXT NOT NULL,
    suite_name TEXT, suite_version TEXT, suite_hash TEXT,
    packages_json TEXT, isolation TEXT
);
CREATE TABLE IF NOT EXISTS rollouts (
    task_id TEXT NOT NULL, agent TEXT NOT NULL, rollout INTEGER NOT NULL,
    status TEXT NOT NULL, passes INTEGER NOT NULL, isolation TEXT,
    tests_total INTEGER, tests_passed INTEGER, seconds REAL, tokens INTEGER, usd REAL,
    simulated INTEGER NOT NULL, tamper_suspected INTEGER NOT NULL,
    record_json TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (task_id, agent, rollout)
);
CREATE TABLE IF NOT EXISTS tests (
    task_id TEXT NOT NULL, agent TEXT NOT NULL, rollout INTEGER NOT NULL,
    idx INTEGER NOT NULL, name TEXT NOT NULL, outcome TEXT NOT NULL, security INTEGER NOT NULL,
    PRIMARY KEY (task_id, agent, rollout, idx)
);
CREATE TABLE IF NOT EXISTS findings (
    task_id TEXT NOT NULL, agent TEXT NOT NULL, rollout INTEGER NOT NULL,
    tool TEXT NOT NULL, rule_id TEXT NOT NULL, severity TEXT NOT NULL, confidence TEXT NOT NULL,
    cwe INTEGER, path TEXT, line INTEGER, message TEXT
);
CREATE INDEX IF NOT EXISTS findings_by_rollout ON findings (task_id, agent, rollout);
"""

_RETEST_SCHEMA = """
CREATE TABLE IF NOT EXISTS retests (
    task_id TEXT NOT NULL, agent TEXT NOT NULL, rollout INTEGER NOT NULL, rep INTEGER NOT NULL,
    status TEXT NOT NULL, order_seed INTEGER, seconds REAL, reason TEXT,
    tests_json TEXT NOT NULL, created_at REAL NOT NULL,
    PRIMARY KEY (task_id, agent, rollout, rep)
);
"""


# kept in the run's configuration for reports, never part of its identity
_PROVENANCE_KEYS = frozenset({"command_line", "agents_config"})


class RunStore:
    """An open run directory. Use as a context manager; only one process should write.

    Attributes:
        root: The run directory.
    """

    FILENAME = "reliabench.sqlite"

    def __init__(self, root: Path, conn: sqlite3.Connection) -> None:
        self.root = root
        self._conn = conn

    # ------------------------------------------------------------------ opening

    @classmethod
    def _connect(cls, root: Path) -> sqlite3.Connection:
        conn = sqlite3.connect(root / cls.FILENAME, timeout=30.0, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA foreign_keys=ON")
        return conn

    @classmethod
    def open_existing(cls, root: str | Path) -> RunStore:
        """Open a run directory that must already exist (for reading or re-scanning)."""
        path = Path(root)
        if not (path / cls.FILENAME).is_file():
            raise UsageError(f"{path}: not a run directory (no {cls.FILENAME})")
        try:
            conn = cls._connect(path)
            row = conn.execute("SELECT store_schema FROM run WHERE id = 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{path / cls.FILENAME}: unreadable run store ({exc})") from None
        if row is None:
            raise StoreError(f"{path / cls.FILENAME}: run store has no run row (interrupted set-up?)")
        if row[0] != STORE_SCHEMA_VERSION:
            raise StoreError(f"{path / cls.FILENAME}: store schema {row[0]}, this reliabench reads "
                             f"{STORE_SCHEMA_VERSION}")
        return cls(path, conn)

    @classmethod
    def create_or_resume(
        cls,
        root: str | Path,
        *,
        config: Mapping[str, Any],
        config_hash: str,
        suite: Mapping[str, str],
        packages: Mapping[str, str],
        isolation: str,
    ) -> tuple[RunStore, bool]:
        """Open ``root`` for a run with this configuration, creating it if needed.

        Returns:
            ``(store, resumed)``; ``resumed`` is True when the directory held this run already.

        Raises:
            RunMismatchError: when the directory holds a run with another configuration.
        """
        path = Path(root)
        if path.exists() and not path.is_dir():
            raise UsageError(f"{path}: exists and is not a directory")
        if path.is_dir() and any(path.iterdir()) and not (path / cls.FILENAME).exists():
            raise UsageError(f"{path}: exists, is not empty and is not a run directory; "
                             "give a new --out directory")
        path.mkdir(parents=True, exist_ok=True)
        conn = cls._connect(path)
        conn.executescript(_SCHEMA)
        row = conn.execute("SELECT config_hash, config_json FROM run WHERE id = 1").fetchone()
        if row is not None:
            if row[0] != config_hash:
                old = json.loads(row[1])
                changed = sorted(k for k in set(old) | set(config)
                                 if old.get(k) != config.get(k) and k not in _PROVENANCE_KEYS)
                conn.close()
                raise RunMismatchError(
                    f"{path}: holds a run with a different configuration (changed: "
                    f"{', '.join(changed) or 'content hashes'}); give a new --out directory to "
                    "start another run, or the original arguments to resume this one"
                )
            return cls(path, conn), True
        conn.execute(
            "INSERT INTO run (id, store_schema, created_at, config_json, config_hash, suite_name, "
            "suite_version, suite_hash, packages_json, isolation) VALUES (1, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (STORE_SCHEMA_VERSION, time.time(), json.dumps(dict(config), sort_keys=True), config_hash,
             suite.get("name"), suite.get("version"), suite.get("hash"),
             json.dumps(dict(packages), sort_keys=True), isolation),
        )
        return cls(path, conn), False

    def close(self) -> None:
        """Close the database."""
        self._conn.close()

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # ------------------------------------------------------------------ writing

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        self._conn.execute("BEGIN IMMEDIATE")
        try:
            yield self._conn
        except BaseException:
            self._conn.execute("ROLLBACK")
            raise
        self._conn.execute("COMMIT")

    @staticmethod
    def _insert_children(conn: sqlite3.Connection, r: Rollout) -> None:
        conn.executemany(
            "INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(r.task_id, r.agent, r.rollout, i, t.name, t.outcome, int(t.security))
             for i, t in enumerate(r.tests or ())],
        )
        conn.executemany(
            "INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(r.task_id, r.agent, r.rollout, f.tool, f.rule_id, f.severity, f.confidence, f.cwe,
              f.path, f.line, f.message) for f in r.findings],
        )

    def add(self, r: Rollout, *, replace_status: str | None = None) -> None:
        """Record one rollout with its tests and findings, atomically.

        Args:
            r: The rollout.
            replace_status: When set, a recorded rollout with the same key AND this status
                (e.g. ``infra_error``, rerun on resume) is replaced in the same transaction.
        """
        cost = r.cost
        with self._transaction() as conn:
            if replace_status is not None:
                old = conn.execute("SELECT status FROM rollouts WHERE task_id = ? AND agent = ? "
                                   "AND rollout = ?", r.key).fetchone()
                if old is not None and old[0] == replace_status:
                    for table in ("rollouts", "tests", "findings"):
                        conn.execute(f"DELETE FROM {table} WHERE task_id = ? AND agent = ? "
                                     "AND rollout = ?", r.key)
            try:
                conn.execute(
                    "INSERT INTO rollouts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (r.task_id, r.agent, r.rollout, r.status, int(r.passes), r.isolation, r.n_tests,
                     r.n_tests_passed, cost.seconds if cost else None, cost.tokens if cost else None,
                     cost.usd if cost else None, int(r.simulated), int(r.tamper_suspected),
                     json.dumps(rollout_to_dict(r), ensure_ascii=False), time.time()),
                )
            except sqlite3.IntegrityError:
                raise StoreError(f"rollout {r.key!r} is already recorded in {self.root}") from None
            self._insert_children(conn, r)

    def replace_security(self, r: Rollout, findings: Iterable[Finding],
                         scan_errors: Iterable[ScanError], meta: Mapping[str, Any]) -> Rollout:
        """Replace the findings of a recorded rollout (``reliabench scan``); returns the new record."""
        from dataclasses import replace

        new = replace(r, findings=tuple(findings), scan_errors=tuple(scan_errors), meta=dict(meta))
        with self._transaction() as conn:
            conn.execute("DELETE FROM findings WHERE task_id = ? AND agent = ? AND rollout = ?", r.key)
            conn.execute(
                "UPDATE rollouts SET record_json = ? WHERE task_id = ? AND agent = ? AND rollout = ?",
                (json.dumps(rollout_to_dict(new), ensure_ascii=False), *r.key),
            )
            conn.executemany(
                "INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*r.key, f.tool, f.rule_id, f.severity, f.confidence, f.cwe, f.path, f.line, f.message)
                 for f in new.findings],
            )
        return new

    def add_retests(self, rows: Iterable[Mapping[str, Any]]) -> None:
        """Record re-runs of hidden tests (``reliabench.retest``), atomically.

        Each row has ``task_id, agent, rollout, rep, status, order_seed, seconds, reason``
        and ``tests`` (a list of ``[name, outcome, security]``).
        """
        items = list(rows)
        if not items:
            return
        self._conn.executescript(_RETEST_SCHEMA)
        with self._transaction() as conn:
            try:
                conn.executemany(
                    "INSERT INTO retests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(r["task_id"], r["agent"], int(r["rollout"]), int(r["rep"]), r["status"],
                      r.get("order_seed"), r.get("seconds"), r.get("reason"),
                      json.dumps(r["tests"], ensure_ascii=False), time.time()) for r in items],
                )
            except sqlite3.IntegrityError:
                raise StoreError(f"a re-test is already recorded in {self.root}") from None

    def retest_rows(self) -> list[dict[str, Any]]:
        """Every recorded re-test, ordered by (task, agent, rollout, rep); [] when none."""
        has = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'retests'").fetchone()
        if has is None:
            return []
        out = []
        for row in self._conn.execute(
                "SELECT task_id, agent, rollout, rep, status, order_seed, seconds, reason, tests_json "
                "FROM retests ORDER BY task_id, agent, rollout, rep"):
            out.append({"task_id": row[0], "agent": row[1], "rollout": int(row[2]), "rep": int(row[3]),
                        "status": row[4], "order_seed": row[5], "seconds": row[6], "reason": row[7],
                        "tests": json.loads(row[8])})
        return out

    # ------------------------------------------------------------------ reading

    def done_keys(self, *, except_status: str | None = None) -> set[tuple[str, str, int]]:
        """Keys of the recorded rollouts (without those of status ``except_status``)."""
        return {(t, a, int(i)) for t, a, i, st in
                self._conn.execute("SELECT task_id, agent, rollout, status FROM rollouts")
                if st != except_status}

    def rollouts(self) -> list[Rollout]:
        """Every recorded rollout, ordered by (task, agent, rollout)."""
        out = []
        for text, in self._conn.execute(
                "SELECT record_json FROM rollouts ORDER BY task_id, agent, rollout"):
            out.append(rollout_from_dict(json.loads(text), path=str(self.root / self.FILENAME)))
        return out

    def run_info(self) -> dict[str, Any]:
        """The run row: configuration, suite and package versions, isolation."""
        row = self._conn.execute(
            "SELECT created_at, config_json, config_hash, suite_name, suite_version, suite_hash, "
            "packages_json, isolation FROM run WHERE id = 1").fetchone()
        if row is None:
            raise StoreError(f"{self.root}: run store has no run row")
        return {"created_at": row[0], "config": json.loads(row[1]), "config_hash": row[2],
                "suite": {"name": row[3], "version": row[4], "hash": row[5]},
                "packages": json.loads(row[6] or "{}"), "isolation": row[7]}

    def artifact_dir(self, task_id: str, agent: str, rollout: int) -> Path:
        """``RUN/artifacts/<task>/<agent>/<rollout>/`` (names made safe for a path)."""
        return artifact_path(self.root, task_id, agent, rollout)


def artifact_path(run_dir: str | Path, task_id: str, agent: str, rollout: int) -> Path:
    """``RUN/artifacts/<task>/<agent>/<rollout>/`` of a run directory (names made safe for a path)."""
    def safe(s: str) -> str:
        return "".join(ch if ch.isalnum() or ch in "-_.@+" else "_" for ch in s) or "_"

    return Path(run_dir) / "artifacts" / safe(task_id) / safe(agent) / str(rollout)


def read_records(run_dir: str | Path) -> list[Rollout]:
    """Every rollout record of a run directory."""
    with RunStore.open_existing(run_dir) as store:
        return store.rollouts()
