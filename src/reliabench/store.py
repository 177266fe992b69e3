r"""The run store: one directory per run, an SQLite database plus artifacts.

::

    RUN/reliabench.sqlite                 WAL mode, one writer (the runner's main thread)
    RUN/artifacts/<task>/<agent>/<rollout>/   agent.log, diff.patch, tests.log, files/

Names are data. ``<task>`` and ``<agent>`` are percent-encoded byte for byte (see
:func:`artifact_component`): the encoding is injective, so ``"m v1"`` and ``"m/v1"`` get two
folders, and ``"."``/``".."`` cannot climb out.

The full record is JSON in ``rollouts.record_json``: UTF-8 when it can be, otherwise
``\uXXXX`` escapes (a lone surrogate -- from a non-UTF-8 file name or a JSON ``"\ud800"``
escape -- survives the round trip exactly). The other text columns are for queries: a string
that is not valid Unicode is stored there with backslash escapes.

Reading never writes: :meth:`RunStore.open_existing` with ``readonly=True`` (what the read
side, :class:`reliabench.runs.RunDirectory`, uses for ``score``, ``export`` and the reports)
opens the database with SQLite's ``mode=ro``, so a run on a read-only mount can be read.

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

import hashlib
import json
import os
import sqlite3
import stat
import time
import urllib.parse
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from types import TracebackType
from typing import Any, Final, TypedDict

from reliabench.errors import OutputError, RecordError, RunMismatchError, StoreError, UsageError
from reliabench.files import json_input
from reliabench.records import (
    Finding,
    Isolation,
    Rollout,
    RolloutStatus,
    ScanError,
    parse_status,
    rollout_from_dict,
    rollout_to_dict,
)

__all__ = [
    "REFERENCE_AGENT",
    "STORE_SCHEMA_VERSION",
    "RunInfo",
    "RetestRow",
    "RunStore",
    "SuiteInfo",
    "artifact_component",
    "artifact_dir",
    "is_run_directory",
    "read_records",
]

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
_PROVENANCE_KEYS = frozenset({"command_line", "agents_config", "settings"})


REFERENCE_AGENT: Final = ""
"""The agent of the re-test rows of a task's reference solution (no agent can have this name;
their ``rollout`` is the index of the execution path in ``reliabench.run.retest.RETEST_PATHS``)."""


class RetestRow(TypedDict):
    """One re-run of a rollout's hidden tests on its unchanged files (a ``retests`` row).

    ``status`` is ``completed``, ``timeout`` or ``test_error`` (the harness could not run);
    ``tests`` holds ``[name, outcome, security]`` per test.
    """

    task_id: str
    agent: str
    rollout: int
    rep: int
    status: RolloutStatus
    order_seed: int | None
    seconds: float | None
    reason: str | None
    tests: list[list[Any]]


@dataclass(frozen=True, slots=True)
class SuiteInfo:
    """The suite a run was made on, as stored (None for what an old run did not store).

    Attributes:
        name: The suite's name.
        version: Its version.
        hash: Its content hash (a re-scan or re-test refuses a suite that changed).
    """

    name: str | None = None
    version: str | None = None
    hash: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        """``{"name", "version", "hash"}``, as reports and exports show it."""
        return {"name": self.name, "version": self.version, "hash": self.hash}


@dataclass(frozen=True, slots=True)
class RunInfo:
    """The run row of a store: configuration, suite, package versions, isolation; checked once.

    The typed fields are the configuration keys reliabench itself reads back (``scan``,
    ``retest``, ``score`` with the stored security policy, the reports' provenance,
    the Inspect export); ``config`` keeps the whole stored configuration as it was written.
    A key that runs made before it existed did not store is None (or empty).

    Attributes:
        created_at: When the run was created (seconds since the epoch).
        config: The whole stored configuration (identity, ``n``, provenance).
        config_hash: The hash of the run's identity (a resume must match it).
        suite: The suite's name, version and content hash.
        packages: Versions of Python and of the packages that ran it.
        isolation: The sandbox backend of the run (a built-in level or a plugin's name).
        n: Rollouts per task and agent asked for.
        seed: The run seed.
        sandbox: The sandbox asked for (``auto`` or a backend name).
        scanners: The scanners that ran.
        tasks: The task ids of the run.
        agents: The agent names of the run.
        agents_config_hash: Hash of the agents' configuration.
        suite_path: Where the suite was (``scan`` and ``retest`` rebuild workspaces from it).
        limits: The sandbox limits of the hidden tests (``cpu_s``, ``memory_bytes``, ...).
        test_timeout_s: ``--test-timeout``, when given.
        security_policy: The security policy given to the run (``--security-config``).
        command_line: The command line of the run, secrets masked.
        agents_config: The agents file's content, secrets masked.
        settings: The effective run configuration (``reliabench.run.settings.settings_to_dict``
            of the settings the run was created with), secrets masked; None for runs made before
            reliabench kept it.
    """

    created_at: float
    config: Mapping[str, Any]
    config_hash: str
    suite: SuiteInfo
    packages: Mapping[str, str]
    isolation: Isolation | None
    n: int | None = None
    seed: int | None = None
    sandbox: str | None = None
    scanners: tuple[str, ...] = ()
    tasks: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    agents_config_hash: str | None = None
    suite_path: str | None = None
    limits: Mapping[str, int | float] = field(default_factory=dict)
    test_timeout_s: float | None = None
    security_policy: Mapping[str, Any] | None = None
    command_line: tuple[str, ...] | None = None
    agents_config: Mapping[str, Any] | None = None
    settings: Mapping[str, Any] | None = None

    @classmethod
    def from_stored(cls, row: Mapping[str, Any], *, where: str = "run store") -> RunInfo:
        """Check a stored run row (``created_at, config, config_hash, suite, packages, isolation``).

        Args:
            row: The decoded row; ``config`` and ``packages`` are the stored JSON objects.
            where: The store, for error messages.

        Raises:
            StoreError: naming ``where`` and the bad key, with what was expected.

        Example:
            >>> info = RunInfo.from_stored({"created_at": 1.0, "config_hash": "h",
            ...     "config": {"n": 3, "scanners": ["bandit"]}, "suite": {"name": "s"},
            ...     "packages": {}, "isolation": "bubblewrap"})
            >>> info.n, info.scanners, info.suite.name, info.suite_path
            (3, ('bandit',), 's', None)
        """
        def bad(key: str, expected: str, value: Any) -> StoreError:
            text = repr(value)
            text = text if len(text) <= 80 else text[:77] + "..."
            return StoreError(f"{where}: run {key}: expected {expected}, got {text}")

        def obj(value: Any, key: str) -> dict[str, Any]:
            if not isinstance(value, dict):
                raise bad(key, "an object", value)
            return value

        def opt(value: Any, key: str, kind: type | tuple[type, ...], expected: str) -> Any:
            if value is not None and ((isinstance(value, bool) and kind is not bool)
                                      or not isinstance(value, kind)):
                raise bad(key, expected, value)
            return value

        def strings(value: Any, key: str) -> tuple[str, ...] | None:
            if value is None:
                return None
            if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                raise bad(key, "a list of strings", value)
            return tuple(value)

        config = obj(row.get("config"), "config")
        suite = obj(row.get("suite") or {}, "suite")
        packages = obj(row.get("packages") or {}, "packages")
        if not all(isinstance(v, str) for v in packages.values()):
            raise bad("packages", "versions as strings", packages)
        limits = obj(config.get("limits") or {}, "config.limits")
        for k, v in limits.items():
            opt(v, f"config.limits.{k}", (int, float), "a number")
        created = opt(row.get("created_at"), "created_at", (int, float), "a time in seconds")
        n = opt(config.get("n"), "config.n", int, "an integer >= 1")
        if n is not None and n < 1:
            raise bad("config.n", "an integer >= 1", n)
        timeout = opt(config.get("test_timeout_s"), "config.test_timeout_s", (int, float), "a number")
        policy = config.get("security_policy")
        return cls(
            created_at=float(created or 0.0),
            config=config,
            config_hash=str(opt(row.get("config_hash"), "config_hash", str, "a string") or ""),
            suite=SuiteInfo(*(opt(suite.get(k), f"suite.{k}", str, "a string")
                              for k in ("name", "version", "hash"))),
            packages=packages,
            isolation=opt(row.get("isolation"), "isolation", str, "a string"),
            n=n,
            seed=opt(config.get("seed"), "config.seed", int, "an integer"),
            sandbox=opt(config.get("sandbox"), "config.sandbox", str, "a string"),
            scanners=strings(config.get("scanners"), "config.scanners") or (),
            tasks=strings(config.get("tasks"), "config.tasks") or (),
            agents=strings(config.get("agents"), "config.agents") or (),
            agents_config_hash=opt(config.get("agents_config_hash"), "config.agents_config_hash",
                                   str, "a string"),
            suite_path=opt(config.get("suite_path"), "config.suite_path", str, "a string"),
            limits={k: v for k, v in limits.items() if v is not None},
            test_timeout_s=None if timeout is None else float(timeout),
            security_policy=obj(policy, "config.security_policy") if policy else None,
            command_line=strings(config.get("command_line"), "config.command_line"),
            agents_config=(obj(config["agents_config"], "config.agents_config")
                           if config.get("agents_config") is not None else None),
            settings=(obj(config["settings"], "config.settings")
                      if config.get("settings") is not None else None),
        )


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
    def _connect_readonly(cls, root: Path) -> sqlite3.Connection:
        """``mode=ro``; on read-only media without the WAL side files, ``immutable=1``."""
        base = "file:" + urllib.parse.quote(str((root / cls.FILENAME).absolute()))
        last: sqlite3.Error | None = None
        for query in ("?mode=ro", "?mode=ro&immutable=1"):
            try:
                conn = sqlite3.connect(base + query, uri=True, timeout=30.0, isolation_level=None,
                                       check_same_thread=False)
                conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
                return conn
            except sqlite3.Error as exc:
                last = exc
        assert last is not None
        raise last

    @classmethod
    def open_existing(cls, root: str | Path, *, readonly: bool = False) -> RunStore:
        """Open a run directory that must already exist.

        Args:
            root: The run directory.
            readonly: Open for reading only (``score``, ``export``, reports): nothing in the
                directory is created or changed, and a read-only mount works.

        Raises:
            UsageError: ``root`` is not a run directory.
            OutputError: ``root`` cannot be read (permissions).
            StoreError: the database is unreadable or from another schema version.
        """
        path = Path(root)
        db = path / cls.FILENAME
        try:
            st = os.lstat(db)  # a link is not followed: SQLite would read (and write) its target
        except FileNotFoundError:
            raise UsageError(f"{path}: not a run directory (no {cls.FILENAME})") from None
        except NotADirectoryError:
            raise UsageError(f"{path}: not a directory") from None
        except OSError as exc:
            raise OutputError(f"{path}: cannot read the run directory ({exc.strerror or exc})") from None
        if not stat.S_ISREG(st.st_mode):
            raise UsageError(f"{path}: not a run directory ({cls.FILENAME} is not a file)")
        for side in _SIDE_FILES:
            try:
                side_mode = os.lstat(path / (cls.FILENAME + side)).st_mode
            except FileNotFoundError:
                continue
            except OSError as exc:
                raise OutputError(f"{path}: cannot read the run directory ({exc.strerror or exc})") from None
            if not stat.S_ISREG(side_mode):
                raise StoreError(f"{path / (cls.FILENAME + side)}: not a regular file (a link, FIFO or "
                                 "device beside the run store is never opened: SQLite would read and "
                                 "write through it)")
        if not os.access(db, os.R_OK):
            raise OutputError(f"{db}: cannot read the run store (permission denied)")
        try:
            conn = cls._connect_readonly(path) if readonly else cls._connect(path)
            row = conn.execute("SELECT store_schema FROM run WHERE id = 1").fetchone()
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{db}: unreadable run store ({exc})") from None
        if row is None:
            raise StoreError(f"{db}: run store has no run row (interrupted set-up?)")
        if row[0] != STORE_SCHEMA_VERSION:
            raise StoreError(f"{db}: store schema {row[0]}, this reliabench reads "
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
        isolation: Isolation,
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
        try:
            path.mkdir(parents=True, exist_ok=True)
            conn = cls._connect(path)
            conn.executescript(_SCHEMA)
        except OSError as exc:
            raise OutputError(f"{path}: cannot create the run directory ({exc.strerror or exc})") from None
        except sqlite3.OperationalError as exc:
            raise OutputError(f"{path / cls.FILENAME}: cannot write the run store ({exc})") from None
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
        try:
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            raise self._output_error(exc) from None
        try:
            yield self._conn
        except BaseException as exc:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):
                raise self._output_error(exc) from None
            raise
        try:
            self._conn.execute("COMMIT")
        except sqlite3.OperationalError as exc:
            with suppress(sqlite3.Error):
                self._conn.execute("ROLLBACK")
            raise self._output_error(exc) from None

    def _output_error(self, exc: sqlite3.Error) -> OutputError:
        return OutputError(f"{self.root / self.FILENAME}: cannot write the run store ({exc}); free "
                           "space or fix permissions, then run the same command again to resume")

    @staticmethod
    def _insert_children(conn: sqlite3.Connection, r: Rollout) -> None:
        key = RunStore.stored_key(r.task_id, r.agent, r.rollout)
        conn.executemany(
            "INSERT INTO tests VALUES (?, ?, ?, ?, ?, ?, ?)",
            [(*key, i, _text(t.name), _text(t.outcome), int(t.security))
             for i, t in enumerate(r.tests or ())],
        )
        conn.executemany(
            "INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*key, _text(f.tool), _text(f.rule_id), _text(f.severity), _text(f.confidence),
              _int64(f.cwe), _text(f.path), _int64(f.line), _text(f.message)) for f in r.findings],
        )

    def _record_json(self, r: Rollout) -> str:
        """The ``record_json`` of ``r``, once it is known to read back as ``r``.

        What the store accepts, :meth:`rollouts` reads: the text is decoded and validated by
        the reader (:func:`rollout_from_dict`) before it is written, and must give the same
        record (``meta`` as JSON gives it back). So a value the reader refuses -- a token
        count past 64 bits, a NaN -- is refused here, at write time, instead of making every
        later ``score``, ``export``, report and resume of the run fail.

        Raises:
            RecordError: naming the field that would not read back.
        """
        where = f"{self.root / self.FILENAME} (writing {r.key!r})"
        try:
            text = _dumps(rollout_to_dict(r))
        except (ValueError, TypeError, RecursionError) as exc:  # NaN, a non-JSON value, depth
            raise RecordError(where, f"the record cannot be written as JSON: {exc}") from None
        try:
            back = rollout_from_dict(json_input.loads(text), path=where)
        except json.JSONDecodeError as exc:
            raise RecordError(where, f"the record would not read back: {exc.msg}") from None
        if back != replace(r, meta=back.meta):
            bad = next((f.name for f in fields(Rollout) if getattr(back, f.name) != getattr(r, f.name)),
                       "record")
            raise RecordError(where, "the record would not read back as written",
                              field=bad)
        return text

    @staticmethod
    def stored_key(task_id: str, agent: str, rollout: int) -> tuple[str, str, int]:
        """The key columns as stored (what :meth:`done_keys` returns for this rollout)."""
        return (_text(task_id) or "", _text(agent) or "", rollout)

    def add(self, r: Rollout, *, replace_status: RolloutStatus | None = None) -> None:
        """Record one rollout with its tests and findings, atomically.

        Args:
            r: The rollout.
            replace_status: When set, a recorded rollout with the same key AND this status
                (e.g. ``infra_error``, rerun on resume) is replaced in the same transaction.

        Raises:
            StoreError: The rollout is recorded already.
            RecordError: The record would not read back as it is (see :meth:`_record_json`);
                nothing is written.
            OutputError: The database cannot be written (disk full, read-only).
        """
        cost = r.cost
        record_json = self._record_json(r)
        with self._transaction() as conn:
            if replace_status is not None:
                key = self.stored_key(*r.key)
                old = conn.execute("SELECT status FROM rollouts WHERE task_id = ? AND agent = ? "
                                   "AND rollout = ?", key).fetchone()
                if old is not None and old[0] == replace_status:
                    for table in ("rollouts", "tests", "findings"):
                        conn.execute(f"DELETE FROM {table} WHERE task_id = ? AND agent = ? "
                                     "AND rollout = ?", key)
            try:
                conn.execute(
                    "INSERT INTO rollouts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (*self.stored_key(r.task_id, r.agent, r.rollout), _text(r.status), int(r.passes),
                     _text(r.isolation), _int64(r.n_tests), _int64(r.n_tests_passed),
                     cost.seconds if cost else None, _int64(cost.tokens) if cost else None,
                     cost.usd if cost else None, int(r.simulated), int(r.tamper_suspected),
                     record_json, time.time()),
                )
            except sqlite3.IntegrityError:
                raise StoreError(f"rollout {r.key!r} is already recorded in {self.root}") from None
            self._insert_children(conn, r)

    def replace_security(self, r: Rollout, findings: Iterable[Finding],
                         scan_errors: Iterable[ScanError], meta: Mapping[str, Any]) -> Rollout:
        """Replace the findings of a recorded rollout (``reliabench scan``); returns the new record."""
        new = replace(r, findings=tuple(findings), scan_errors=tuple(scan_errors), meta=dict(meta))
        key = self.stored_key(*r.key)
        with self._transaction() as conn:
            conn.execute("DELETE FROM findings WHERE task_id = ? AND agent = ? AND rollout = ?", key)
            conn.execute(
                "UPDATE rollouts SET record_json = ? WHERE task_id = ? AND agent = ? AND rollout = ?",
                (self._record_json(new), *key),
            )
            conn.executemany(
                "INSERT INTO findings VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(*key, _text(f.tool), _text(f.rule_id), _text(f.severity), _text(f.confidence),
                  _int64(f.cwe), _text(f.path), _int64(f.line), _text(f.message)) for f in new.findings],
            )
        return new

    def add_retests(self, rows: Iterable[RetestRow]) -> None:
        """Record re-runs of hidden tests (``reliabench.run.retest``), atomically."""
        items = list(rows)
        if not items:
            return
        self._conn.executescript(_RETEST_SCHEMA)
        with self._transaction() as conn:
            try:
                conn.executemany(
                    "INSERT INTO retests VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [(r["task_id"], r["agent"], int(r["rollout"]), int(r["rep"]), r["status"],
                      r["order_seed"], r["seconds"], r["reason"],
                      json.dumps(r["tests"], ensure_ascii=False), time.time()) for r in items],
                )
            except sqlite3.IntegrityError:
                raise StoreError(f"a re-test is already recorded in {self.root}") from None

    def retest_rows(self) -> list[RetestRow]:
        """Every recorded re-test, ordered by (task, agent, rollout, rep); [] when none.

        Raises:
            RecordError: a row's status is not a rollout status (naming the store and the row).
        """
        has = self._conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'retests'").fetchone()
        if has is None:
            return []
        out: list[RetestRow] = []
        where = str(self.root / self.FILENAME)
        for row in self._conn.execute(
                "SELECT task_id, agent, rollout, rep, status, order_seed, seconds, reason, tests_json "
                "FROM retests ORDER BY task_id, agent, rollout, rep"):
            status = parse_status(row[4], path=where, fieldname=f"retests[{row[0]!r}, {row[1]!r}, "
                                                                 f"{row[2]}, {row[3]}].status")
            out.append({"task_id": row[0], "agent": row[1], "rollout": int(row[2]), "rep": int(row[3]),
                        "status": status, "order_seed": row[5], "seconds": row[6], "reason": row[7],
                        "tests": json.loads(row[8])})
        return out

    # ------------------------------------------------------------------ reading

    def done_keys(self, *, except_status: RolloutStatus | None = None) -> set[tuple[str, str, int]]:
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

    def run_info(self) -> RunInfo:
        """The run row: configuration, suite and package versions, isolation (checked).

        Raises:
            StoreError: The row is missing, or holds a value of the wrong type (naming its key).
        """
        row = self._conn.execute(
            "SELECT created_at, config_json, config_hash, suite_name, suite_version, suite_hash, "
            "packages_json, isolation FROM run WHERE id = 1").fetchone()
        where = str(self.root / self.FILENAME)
        if row is None:
            raise StoreError(f"{self.root}: run store has no run row")
        try:
            config, packages = json.loads(row[1]), json.loads(row[6] or "{}")
        except json.JSONDecodeError as exc:
            raise StoreError(f"{where}: run configuration is not JSON ({exc.msg})") from None
        return RunInfo.from_stored(
            {"created_at": row[0], "config": config, "config_hash": row[2],
             "suite": {"name": row[3], "version": row[4], "hash": row[5]},
             "packages": packages, "isolation": row[7]}, where=where)

    def artifact_dir(self, task_id: str, agent: str, rollout: int) -> Path:
        """``RUN/artifacts/<task>/<agent>/<rollout>/`` of this run (:func:`artifact_dir`)."""
        return artifact_dir(self.root, task_id, agent, rollout)


_SIDE_FILES: Final = ("-wal", "-shm", "-journal")
"""The files SQLite opens beside a database (write-ahead log, shared memory index, rollback journal)."""


def artifact_dir(run_dir: str | Path, task_id: str, agent: str, rollout: int) -> Path:
    """``RUN/artifacts/<task>/<agent>/<rollout>/``, names encoded by :func:`artifact_component`.

    Examples:
        >>> artifact_dir("RUN", "task 1", "m/v1", 2).as_posix()
        'RUN/artifacts/task%201/m%2Fv1/2'
    """
    return (Path(run_dir) / "artifacts" / artifact_component(task_id) / artifact_component(agent)
            / str(int(rollout)))


_SAFE_BYTES: Final = frozenset(b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.@+")
_MAX_COMPONENT: Final = 200


def artifact_component(name: str) -> str:
    """A file-name-safe, injective encoding of ``name`` for the artifact folders.

    Bytes of ``name`` (UTF-8; lone surrogates encoded as themselves with ``surrogatepass``)
    outside ``[A-Za-z0-9-_.@+]`` become ``%XX``; a name of dots only is fully escaped (so
    ``..`` stays inside), and an encoding longer than 200 characters is cut and completed
    with ``~`` and a SHA-256 of the name (``~`` is never produced otherwise).

    Examples:
        >>> artifact_component("m v1"), artifact_component("m/v1"), artifact_component("..")
        ('m%20v1', 'm%2Fv1', '%2E%2E')
    """
    raw = name.encode("utf-8", "surrogatepass")
    out = "".join(chr(b) if b in _SAFE_BYTES else f"%{b:02X}" for b in raw)
    if not raw.strip(b"."):
        out = "".join(f"%{b:02X}" for b in raw) or "%"
    if len(out) > _MAX_COMPONENT:
        out = out[:_MAX_COMPONENT - 65] + "~" + hashlib.sha256(raw).hexdigest()
    return out


def _text(value: str | None) -> str | None:
    """A string SQLite can store: itself when it is valid Unicode, else backslash-escaped."""
    if value is None:
        return None
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def _int64(value: int | None) -> int | None:
    """An integer column value: None when it does not fit SQLite's 64 bits (the JSON keeps it)."""
    if value is None or not -(2**63) <= value < 2**63:
        return None
    return value


def _dumps(obj: Any) -> str:
    r"""JSON text: readable UTF-8 when possible, ``\uXXXX`` escapes for lone surrogates.

    Standard JSON only: NaN and infinities raise ``ValueError`` (other tools cannot read them).
    """
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return json.dumps(obj, ensure_ascii=True, allow_nan=False)
    return text


def is_run_directory(path: str | Path) -> bool:
    """Whether ``path`` is a run directory (holds the store); never a traceback.

    Raises:
        OutputError: ``path`` is a directory this user cannot look into (permissions): said
            in one line instead of being mistaken for "not a run".
    """
    try:
        os.stat(Path(path) / RunStore.FILENAME)
    except (FileNotFoundError, NotADirectoryError):
        return False
    except PermissionError as exc:
        if os.path.isdir(path):
            raise OutputError(f"{path}: cannot read the run directory ({exc.strerror})") from None
        return False
    except (OSError, ValueError):
        return False
    return True


def read_records(run_dir: str | Path) -> list[Rollout]:
    """Every rollout record of a run directory (opened read-only), for scripts and tests.

    reliabench's own commands, renderers and exporters read a run through
    :class:`reliabench.runs.RunDirectory` instead (one open per command, artifacts and
    adaptive state included).
    """
    with RunStore.open_existing(run_dir, readonly=True) as store:
        return store.rollouts()
