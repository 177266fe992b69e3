"""A run directory, read: the one object that opens a run's store and reads what it keeps.

A run directory (``reliabench run --out RUN``) holds three things::

    RUN/reliabench.sqlite                       the store: records, run row, re-tests
    RUN/artifacts/<task>/<agent>/<rollout>/     what each rollout left (logs, diff, files)
    RUN/adaptive.json                           an adaptive run's design and rounds

:class:`RunDirectory` is how everything that reads a run gets at them: commands, renderers,
exporters and studies ask it for :meth:`~RunDirectory.records`, :meth:`~RunDirectory.info`,
:meth:`~RunDirectory.retests`, :meth:`~RunDirectory.artifacts`, :meth:`~RunDirectory.adaptive`,
:meth:`~RunDirectory.settings` (the run's configuration) and :meth:`~RunDirectory.task_labels`
(each task's language and tags), and none of them opens the store or a file of the run itself.
The store is opened once, when the object is (read-only unless a writer such as
``reliabench scan`` asks for more), and each part is read at most once and kept.
:func:`reliabench.runs.open_source` gives a command one of these for a run directory, and the
records of any other source through :func:`reliabench.importers.load_source`.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from reliabench.errors import InputError, ReliabenchError, StoreError, UsageError
from reliabench.files.untrusted import file_kind, read_file
from reliabench.records import Finding, Rollout, ScanError
from reliabench.run.artifacts import StoredArtifacts
from reliabench.run.settings import RunSettings, settings_from_dict
from reliabench.runs.adaptive_file import ADAPTIVE_FILE, state_from_document
from reliabench.store import RetestRow, RunInfo, RunStore, artifact_dir, is_run_directory
from reliabench.studies.adaptive_score import AdaptiveState
from reliabench.studies.scoring import TaskLabels

__all__ = ["RunDirectory"]


class RunDirectory:
    """A run directory opened for reading (see the module docstring).

    Use :meth:`open`, as a context manager; :meth:`close` closes the store.

    Attributes:
        path: The run directory.
        writable: Whether the store was opened for writing (:meth:`replace_security`).
    """

    def __init__(self, path: Path, store: RunStore, *, writable: bool) -> None:
        self.path = path
        self.writable = writable
        self._store = store
        self._records: tuple[Rollout, ...] | None = None
        self._info: RunInfo | None = None
        self._retests: tuple[RetestRow, ...] | None = None
        self._adaptive: tuple[AdaptiveState | None] | None = None

    @classmethod
    def open(cls, path: str | Path, *, writable: bool = False) -> RunDirectory:
        """Open a run directory (its store read-only, unless ``writable``).

        Raises:
            UsageError: ``path`` is not a run directory.
            OutputError: it cannot be read (permissions).
            StoreError: its store is unreadable or of another schema version.
        """
        root = Path(path)
        return cls(root, RunStore.open_existing(root, readonly=not writable), writable=writable)

    @staticmethod
    def is_run(path: str | Path) -> bool:
        """Whether ``path`` is a run directory (holds a store); never a traceback."""
        return is_run_directory(path)

    def close(self) -> None:
        """Close the store (what was read stays available)."""
        self._store.close()

    def __enter__(self) -> RunDirectory:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"RunDirectory({str(self.path)!r})"

    # ------------------------------------------------------------------ the store

    def records(self) -> tuple[Rollout, ...]:
        """Every recorded rollout, ordered by (task, agent, rollout)."""
        if self._records is None:
            self._records = tuple(self._store.rollouts())
        return self._records

    def info(self) -> RunInfo:
        """The run row: its configuration, suite, package versions and isolation (checked)."""
        if self._info is None:
            self._info = self._store.run_info()
        return self._info

    def retests(self) -> tuple[RetestRow, ...]:
        """Every recorded re-test (``reliabench retest``), ordered; () when there are none."""
        if self._retests is None:
            self._retests = tuple(self._store.retest_rows())
        return self._retests

    def replace_security(self, r: Rollout, findings: Iterable[Finding], scan_errors: Iterable[ScanError],
                         meta: Mapping[str, Any]) -> Rollout:
        """Replace a recorded rollout's findings (``reliabench scan``); returns the new record.

        Raises:
            UsageError: the directory was opened read-only.
        """
        if not self.writable:
            raise UsageError(f"{self.path}: opened read-only; its findings cannot be replaced")
        new = self._store.replace_security(r, findings, scan_errors, meta)
        if self._records is not None:
            self._records = tuple(new if x.key == r.key else x for x in self._records)
        return new

    def settings(self) -> RunSettings | None:
        """The effective configuration the run was created with; None for runs made before it was kept.

        Raises:
            StoreError: the stored configuration is not one this reliabench can read.
        """
        stored = self.info().settings
        if stored is None:
            return None
        try:
            return settings_from_dict(stored)
        except (ReliabenchError, KeyError, TypeError, ValueError) as exc:
            raise StoreError(f"{self.path / RunStore.FILENAME}: run config.settings: not a run "
                             f"configuration this reliabench reads ({exc})") from None

    def task_labels(self) -> dict[str, TaskLabels] | None:
        """Each task's language and tags (``score --by``), as the run kept them.

        Runs made before reliabench kept them are read from the run's suite where it still
        is; None when neither has them. Entries that are not a language and a list of tags
        (a hand-edited or hostile store) are left out.
        """
        kept = self.info().config.get("task_labels")
        if isinstance(kept, dict):
            out: dict[str, TaskLabels] = {}
            for task_id, entry in kept.items():
                if not isinstance(entry, dict):
                    continue
                language, tags = entry.get("language"), entry.get("tags", [])
                if not isinstance(language, str) or not isinstance(tags, list):
                    continue
                out[str(task_id)] = TaskLabels(language, tuple(t for t in tags if isinstance(t, str)))
            return out
        suite_path = self.info().suite_path
        if not suite_path:
            return None
        from reliabench.tasks.suite import load_suite

        try:
            suite = load_suite(suite_path)
        except ReliabenchError:
            return None
        return {t.id: TaskLabels(t.language, t.tags) for t in suite.tasks}

    # ------------------------------------------------------------------ the files beside it

    def artifacts(self, task_id: str, agent: str, rollout: int) -> StoredArtifacts:
        """What a recorded rollout left (its folder may not exist: imported or old records)."""
        return StoredArtifacts(artifact_dir(self.path, task_id, agent, rollout))

    def adaptive(self) -> AdaptiveState | None:
        """The state of an adaptive run (``RUN/adaptive.json``); None for a fixed-n run.

        A run still in its rounds whose document cannot be read yet is None too.

        Raises:
            InputError: a finished run's ``adaptive.json`` is not an adaptive-run document.
        """
        if self._adaptive is None:
            self._adaptive = (self._read_adaptive(),)
        return self._adaptive[0]

    def _read_adaptive(self) -> AdaptiveState | None:
        path = self.path / ADAPTIVE_FILE
        if file_kind(path) in ("error", "dir"):
            return None
        doc: Any = None
        try:
            doc = json.loads(read_file(path, under=self.path).decode("utf-8"))  # no link followed
            return state_from_document(doc)
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            if isinstance(doc, dict) and not doc.get("finished"):
                return None
            raise InputError(path, f"not an adaptive-run document ({exc!r})") from None
