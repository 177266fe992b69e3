"""What a rollout leaves beside its record, within a per-rollout budget.

Every rollout keeps, under ``RUN/artifacts/<task>/<agent>/<rollout>/`` (see
:func:`reliabench.store.artifact_dir`): ``agent.log``, ``diff.patch``, ``tests.log`` and ``files/`` (the
regular files the agent added or changed, for ``reliabench scan``). All of it was produced by
untrusted code, so all of it is bounded (:class:`ArtifactBudget`):

* the files kept: at most ``max_files`` files and ``max_bytes`` bytes in total; source files
  that scanners read come first, smaller before larger, so one huge file cannot crowd out
  the code. A single file may use the whole byte budget (a large file with findings is
  kept, not dropped);
* each log ``max_log_bytes`` and the diff ``max_diff_bytes`` (head and tail kept, a marker
  in between);
* the record: at most ``max_listed`` paths per list in ``meta`` and ``max_findings``
  findings (the most severe are kept).

Whatever is left out is said: ``meta["artifacts_omitted"]`` in the record and an
``OMITTED.txt`` beside the artifacts name every file not kept and why, and ``meta`` keeps
the full counts. ``reliabench scan`` turns a changed file it cannot find into a scan error,
never into a silently clean file.

The layout of a rollout's folder is known here only: :func:`write_artifacts` writes it and
:class:`StoredArtifacts` reads it back (the read side, :class:`reliabench.runs.RunDirectory`,
hands one out per recorded rollout). Reading is bounded and never follows a link:
a run directory may come from elsewhere, so every read goes through
:func:`~reliabench.files.untrusted.read_bounded`, and a file longer than anything the
runner writes is cut with a marker.

Writing: a file of the agent's that cannot be stored under the run directory (a path too
long for it, a name the file system refuses) is left out and listed; a run directory that is
full, read-only or not ours raises :class:`~reliabench.errors.OutputError` before the record
is committed, so the rollout reruns when the run is resumed.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import Any, Final

from reliabench.errors import OutputError
from reliabench.files.untrusted import file_kind, read_bounded, remove_tree, walk_tree
from reliabench.meta_keys import CAPPED_LISTS, FINDINGS_TOTAL, SCAN_ERRORS_TOTAL, total_key
from reliabench.records import SEVERITY_LEVELS, Finding, Rollout
from reliabench.store import artifact_dir
from reliabench.tasks.suite import materialize

__all__ = [
    "AGENT_LOG",
    "DEFAULT_BUDGET",
    "DIFF",
    "FILES",
    "OMITTED",
    "TEST_LOG",
    "TRANSCRIPT",
    "ArtifactBudget",
    "RolloutArtifacts",
    "Snapshot",
    "StoredArtifacts",
    "cap_record",
    "cap_text",
    "open_artifacts",
    "restore_workspace",
    "take_snapshot",
    "write_artifacts",
]

AGENT_LOG: Final = "agent.log"
"""The agent's log (``AgentResult.log``, cut to ``max_log_bytes``)."""
DIFF: Final = "diff.patch"
"""The unified diff of the workspace against the starter (cut to ``max_diff_bytes``)."""
TEST_LOG: Final = "tests.log"
"""The hidden-test run's output (cut to ``max_log_bytes``)."""
TRANSCRIPT: Final = "transcript.json"
"""A chat transcript (a JSON list of messages), when an importer or an older run left one."""
FILES: Final = "files"
"""The folder of the agent files kept for re-scans and re-tests (relative paths kept)."""
OMITTED: Final = "OMITTED.txt"
"""The changed agent files not kept under ``files/``, one ``path: why`` a line."""

_SOURCE_SUFFIXES: Final = frozenset({
    ".py", ".pyi", ".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".sh", ".toml", ".cfg", ".ini",
    ".json", ".yaml", ".yml", ".txt", ".md",
})
_OUTPUT_ERRNOS: Final = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM,
                                   errno.EIO})
_PATH_MAX: Final = 4096  # Linux; a longer path cannot be opened by name
_CUT: Final = "\n[... {n} characters cut by reliabench (artifact budget) ...]\n"


@dataclass(frozen=True, slots=True)
class ArtifactBudget:
    """Per-rollout caps on what is kept (see the module docstring).

    Attributes:
        max_bytes: Total bytes of agent files kept under ``files/``.
        max_files: Number of agent files kept under ``files/``.
        max_log_bytes: Characters kept of each log (agent and tests).
        max_diff_bytes: Characters kept of ``diff.patch``.
        max_listed: Paths kept per list in the record's ``meta``.
        max_findings: Findings kept in the record (the most severe first).
    """

    max_bytes: int = 32 * 1024 * 1024
    max_files: int = 1000
    max_log_bytes: int = 1024 * 1024
    max_diff_bytes: int = 8 * 1024 * 1024
    max_listed: int = 1000
    max_findings: int = 5000

    def __post_init__(self) -> None:
        for name in ("max_bytes", "max_files", "max_log_bytes", "max_diff_bytes", "max_listed",
                     "max_findings"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"ArtifactBudget.{name} must be an integer >= 1, got {value!r}")


DEFAULT_BUDGET: Final = ArtifactBudget()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The agent files kept for re-scanning, and those left out.

    Attributes:
        files: Relative path -> content, within the budget.
        omitted: ``(path, reason)`` for each changed regular file not kept.
    """

    files: dict[str, bytes]
    omitted: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class RolloutArtifacts:
    """What is kept beside a rollout's record under ``RUN/artifacts/<task>/<agent>/<rollout>/``.

    Built by the worker and written by the driver (the store's single writer), so workers
    on other machines need no access to the run directory.

    Attributes:
        agent_log: The agent's log.
        diff: The unified diff of the workspace against the starter.
        test_log: The hidden-test run's output.
        files: Agent files kept for re-scanning (relative path -> bytes).
        omitted: ``(path, reason)`` of changed files not kept (named in ``OMITTED.txt``).
        retests: Rows of hidden-test re-runs (``run --retest``), stored with the record.
        written: A worker thread already wrote the files (what is left: the re-tests).
    """

    agent_log: str
    diff: str
    test_log: str
    files: dict[str, bytes]
    omitted: tuple[tuple[str, str], ...] = field(default=())
    retests: tuple[Any, ...] = ()
    written: bool = False


def cap_text(text: str, limit: int) -> str:
    r"""``text`` cut to about ``limit`` characters, head and tail kept, with a marker.

    Example:
        >>> cap_text("abcdefghij", 4)
        'ab\n[... 6 characters cut by reliabench (artifact budget) ...]\nij'
    """
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return text[:head] + _CUT.format(n=len(text) - head - tail) + text[len(text) - tail:]


def take_snapshot(workspace: Path, rels: Sequence[str],
                  budget: ArtifactBudget = DEFAULT_BUDGET) -> Snapshot:
    """Read the changed regular files ``rels`` of ``workspace`` within ``budget``.

    Source files first, then by size, then by path; each read is a bounded ``O_NOFOLLOW``
    read (a file that turned into a link or FIFO is omitted, never followed).
    """
    sized: list[tuple[bool, int, str]] = []
    omitted: list[tuple[str, str]] = []
    for rel in rels:
        try:
            size = os.lstat(workspace / rel).st_size
        except (OSError, ValueError):
            omitted.append((rel, "cannot be examined"))
            continue
        sized.append((PurePosixPath(rel).suffix.lower() not in _SOURCE_SUFFIXES, size, rel))
    files: dict[str, bytes] = {}
    used = 0
    for _other, size, rel in sorted(sized):
        if len(files) >= budget.max_files:
            omitted.append((rel, f"over the budget of {budget.max_files} files per rollout"))
            continue
        room = budget.max_bytes - used
        if size > room:
            omitted.append((rel, f"{size} bytes, over the {budget.max_bytes}-byte budget per "
                                 f"rollout ({room} left)"))
            continue
        data = read_bounded(workspace / rel, room)
        if data is None:
            omitted.append((rel, "not a readable regular file"))
        elif len(data) > room:
            omitted.append((rel, f"grew past the {budget.max_bytes}-byte budget per rollout"))
        else:
            files[rel] = data
            used += len(data)
    return Snapshot(files, tuple(sorted(omitted)))


def _safe_rel(rel: str) -> bool:
    parts = PurePosixPath(rel).parts
    return bool(parts) and not rel.startswith("/") and ".." not in parts and "\0" not in rel


def _output_error(path: Path, exc: OSError) -> OutputError:
    return OutputError(f"{path}: cannot write the run's artifacts ({exc.strerror or exc}); "
                       "free space or fix permissions, then run the same command again to resume")


def write_artifacts(adir: Path, art: RolloutArtifacts) -> tuple[tuple[str, str], ...]:
    """Write (replace) one rollout's artifacts; return the agent files left out, with why.

    The returned tuple holds ``art.omitted`` plus any file that could not be stored under
    ``adir`` (a name or depth the file system refuses); all of them are listed in
    ``OMITTED.txt``.

    Raises:
        OutputError: The run directory is full, read-only or not writable: nothing of this
            rollout is recorded, and resuming the run redoes it.
    """
    try:
        if os.path.lexists(adir):
            remove_tree(adir)
        adir.mkdir(parents=True)
        (adir / AGENT_LOG).write_text(art.agent_log, encoding="utf-8", errors="replace")
        (adir / DIFF).write_text(art.diff, encoding="utf-8", errors="replace")
        (adir / TEST_LOG).write_text(art.test_log, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise _output_error(adir, exc) from None
    left_out = list(art.omitted)
    files_dir = adir / FILES
    for rel, data in art.files.items():
        if not _safe_rel(rel):
            left_out.append((rel, "not a relative path inside the workspace"))
            continue
        target = files_dir / rel
        if len(os.fsencode(str(target.absolute()))) >= _PATH_MAX:
            # refused before any directory is made: no half-made chain for readers to trip on
            left_out.append((rel, f"cannot be stored under the run directory (path longer than "
                                  f"{_PATH_MAX} bytes there)"))
            continue
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:
            if exc.errno in _OUTPUT_ERRNOS:
                raise _output_error(target, exc) from None
            left_out.append((rel, f"cannot be stored under the run directory ({exc.strerror or exc})"))
        except ValueError as exc:  # an embedded NUL or the like
            left_out.append((rel, f"cannot be stored under the run directory ({exc})"))
    if left_out:
        lines = ["# agent files changed by this rollout but not kept under files/ (path: why)"]
        lines += [f"{os.fsencode(rel)!r}: {why}" for rel, why in sorted(left_out)]
        try:
            (adir / OMITTED).write_text("\n".join(lines) + "\n", encoding="utf-8")
        except OSError as exc:
            raise _output_error(adir, exc) from None
    return tuple(sorted(left_out))


_READ_CUT: Final = "\n[... cut by reliabench: {name} is longer than {limit} bytes ...]\n"


def _text_limit(chars: int) -> int:
    """Bytes that a text of ``chars`` characters cut by :func:`cap_text` can take as UTF-8."""
    return 4 * chars + len(_CUT) + 32


@dataclass(frozen=True, slots=True)
class StoredArtifacts:
    """A recorded rollout's artifacts, read back: every read bounded, no link followed.

    Each reader returns None when its file is absent, not a regular file (a link, a FIFO) or
    unreadable; a file longer than its limit (by default: more than the runner writes under
    :data:`DEFAULT_BUDGET`) is read up to the limit and cut with a marker.

    Attributes:
        directory: ``RUN/artifacts/<task>/<agent>/<rollout>/`` (see :func:`open_artifacts`).

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     _ = write_artifacts(Path(d) / "a", RolloutArtifacts("log", "", "", {"x.py": b"1"}))
        ...     stored = StoredArtifacts(Path(d) / "a")
        ...     stored.agent_log(), stored.transcript(), stored.kept_files()
        ('log', None, {'x.py': b'1'})
    """

    directory: Path

    @property
    def present(self) -> bool:
        """The rollout's folder exists (records imported from other harnesses have none)."""
        return file_kind(self.directory) == "dir"

    def has_diff(self) -> bool:
        """``diff.patch`` is there: the rollout got as far as its workspace being diffed."""
        return file_kind(self.directory / DIFF) == "file"

    def _bytes(self, name: str, limit: int) -> bytes | None:
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
            raise ValueError(f"limit must be an integer >= 1, got {limit!r}")
        return read_bounded(self.directory / name, limit)

    def _text(self, name: str, limit: int) -> str | None:
        data = self._bytes(name, limit)
        if data is None:
            return None
        if len(data) > limit:
            return (data[:limit].decode("utf-8", errors="replace")
                    + _READ_CUT.format(name=name, limit=limit))
        return data.decode("utf-8", errors="replace")

    def agent_log(self, limit: int | None = None) -> str | None:
        """``agent.log``, at most ``limit`` bytes read."""
        return self._text(AGENT_LOG, _text_limit(DEFAULT_BUDGET.max_log_bytes) if limit is None else limit)

    def diff(self, limit: int | None = None) -> str | None:
        """``diff.patch``, at most ``limit`` bytes read."""
        return self._text(DIFF, _text_limit(DEFAULT_BUDGET.max_diff_bytes) if limit is None else limit)

    def diff_bytes(self, limit: int | None = None) -> bytes | None:
        """``diff.patch`` as stored (for hashing), at most ``limit + 1`` bytes read."""
        return self._bytes(DIFF, _text_limit(DEFAULT_BUDGET.max_diff_bytes) if limit is None else limit)

    def test_log(self, limit: int | None = None) -> str | None:
        """``tests.log``, at most ``limit`` bytes read."""
        return self._text(TEST_LOG, _text_limit(DEFAULT_BUDGET.max_log_bytes) if limit is None else limit)

    def transcript(self, limit: int | None = None) -> str | None:
        """``transcript.json`` as text (the caller parses it), at most ``limit`` bytes read."""
        return self._text(TRANSCRIPT, _text_limit(DEFAULT_BUDGET.max_log_bytes) if limit is None else limit)

    def kept_files(self, max_bytes: int | None = None, max_files: int | None = None) -> dict[str, bytes]:
        """The agent files kept under ``files/``: relative POSIX path -> content.

        Regular files only (links and special files are not read), in path order, until
        ``max_files`` files or ``max_bytes`` bytes (by default the current
        :data:`DEFAULT_BUDGET`'s, what the runner may have written). A file not returned is
        not kept as far as the caller can tell: re-scans and re-tests compare the record's
        ``changed_files`` with these keys and say which they lack.
        """
        budget = DEFAULT_BUDGET
        room = max_bytes if max_bytes is not None else budget.max_bytes
        count = max_files if max_files is not None else budget.max_files
        out: dict[str, bytes] = {}
        root = self.directory / FILES
        if file_kind(root) != "dir":
            return out
        for entry in walk_tree(root):
            if entry.kind != "file" or len(out) >= count or entry.size > room:
                continue
            data = read_bounded(root / entry.rel, room)
            if data is None or len(data) > room:
                continue
            out[entry.rel] = data
            room -= len(data)
        return out


def open_artifacts(run_dir: str | Path, task_id: str, agent: str, rollout: int) -> StoredArtifacts:
    """The artifacts of a recorded rollout of ``run_dir`` (its folder may not exist).

    The folder is ``RUN/artifacts/<task>/<agent>/<rollout>/`` with names encoded by
    :func:`reliabench.store.artifact_component` (:func:`reliabench.store.artifact_dir`).
    """
    return StoredArtifacts(artifact_dir(run_dir, task_id, agent, rollout))


def restore_workspace(dest: Path, starter: Path | None, files: Mapping[str, bytes],
                      deleted: Iterable[str]) -> tuple[tuple[str, str], ...]:
    """Rebuild a rollout's workspace in ``dest``: the starter, minus ``deleted``, plus ``files``.

    ``starter`` None: ``dest`` already holds it (a repository task's checkout, copied as it is).

    What re-scans (:mod:`reliabench.scanners.rescan`) and re-tests
    (:mod:`reliabench.run.retest`) start from. ``deleted`` paths that are directories are
    left alone; a kept file that cannot be written (not a relative path inside the
    workspace, a file of the starter where the agent made a directory) is not written and
    returned with why, for the caller to report.

    Returns:
        ``(path, why)`` of each file of ``files`` not restored.
    """
    if starter is not None:
        materialize(dest, [starter])
    for rel in deleted:
        target = dest / rel
        with contextlib.suppress(OSError, ValueError):
            if file_kind(target) not in ("dir", "error"):
                target.unlink()
    unwritten: list[tuple[str, str]] = []
    for rel, data in files.items():
        if not _safe_rel(rel):
            unwritten.append((rel, "not a relative path inside the workspace"))
            continue
        target = dest / rel
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except (OSError, ValueError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            unwritten.append((rel, f"cannot be written into the rebuilt workspace ({why})"))
    return tuple(unwritten)


def _severity_rank(f: Finding) -> int:
    try:
        return SEVERITY_LEVELS.index(f.severity)
    except ValueError:
        return -1


def cap_record(r: Rollout, budget: ArtifactBudget = DEFAULT_BUDGET) -> Rollout:
    """Bound the lists a rollout carries; what is cut is counted in ``meta``.

    Paths listed in ``meta`` (``changed_files``, ``tamper_files``, ``deleted_files``) keep
    their first ``max_listed`` entries with ``<key>_total`` set to the full count; findings
    keep the ``max_findings`` most severe (``meta["findings_total"]``), scan errors the
    first ``max_listed`` (``meta["scan_errors_total"]``).
    """
    meta: dict[str, Any] = dict(r.meta)
    changed = False
    for key in CAPPED_LISTS:
        value = meta.get(key)
        if isinstance(value, list) and len(value) > budget.max_listed:
            meta[key] = value[: budget.max_listed]
            meta[total_key(key)] = len(value)
            changed = True
    findings = r.findings
    if len(findings) > budget.max_findings:
        ordered = sorted(range(len(findings)), key=lambda i: (-_severity_rank(findings[i]), i))
        keep = sorted(ordered[: budget.max_findings])
        meta[FINDINGS_TOTAL] = len(findings)
        findings = tuple(findings[i] for i in keep)
        changed = True
    scan_errors = r.scan_errors
    if len(scan_errors) > budget.max_listed:
        meta[SCAN_ERRORS_TOTAL] = len(scan_errors)
        scan_errors = scan_errors[: budget.max_listed]
        changed = True
    if not changed:
        return r
    return replace(r, findings=findings, scan_errors=scan_errors, meta=meta)
