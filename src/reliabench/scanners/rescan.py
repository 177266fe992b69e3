"""Re-scanning a finished run with other scanners, without rerunning its agents.

The runner keeps every file an agent added or changed with the rollout's artifacts
(:mod:`reliabench.run.artifacts`); the starter workspaces come from the run's suite, whose
content hash must still match. Each rollout's workspace is rebuilt -- the starter, minus the
files the agent deleted, plus the files it kept -- and scanned on the agent's changed lines
only, through the same path the runner uses (:func:`~reliabench.scanners.workspace.scan_workspace`).

Nothing is silently clean: a changed file the run did not keep (over the per-rollout
artifact budget, a name the run directory refused) or that cannot be written back is a
scan error of its rollout, never a file without findings. Rollouts lost to infrastructure
errors, and rollouts without artifacts (imported records), keep their record as it is.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from reliabench.errors import UsageError
from reliabench.files.untrusted import remove_tree
from reliabench.meta_keys import ARTIFACTS_OMITTED, CHANGED_FILES, DELETED_FILES, SCANNED, total_key
from reliabench.records import Rollout, ScanError
from reliabench.run.artifacts import StoredArtifacts, restore_workspace
from reliabench.scanners.base import Scanner
from reliabench.scanners.changes import quote_path
from reliabench.scanners.workspace import scan_workspace
from reliabench.tasks.suite import Task, load_suite

if TYPE_CHECKING:
    from reliabench.runs import RunDirectory

__all__ = ["RebuildPlan", "RescanResult", "plan_rebuild", "rescan_rollout", "rescan_run"]

_TOOL = "reliabench"


@dataclass(frozen=True, slots=True)
class RebuildPlan:
    """How a rollout's workspace is rebuilt for a re-scan.

    Attributes:
        deleted: Changed paths the agent deleted (removed from the starter).
        errors: One scan error per changed file that cannot be re-scanned.
    """

    deleted: tuple[str, ...]
    errors: tuple[ScanError, ...]


@dataclass(frozen=True, slots=True)
class RescanResult:
    """What :func:`rescan_run` did.

    Attributes:
        records: Every record of the run, re-scanned ones with their new findings (as
            stored, or as they would be stored with ``dry_run``).
        rescanned: Rollouts re-scanned.
        kept: Rollouts kept as recorded (infrastructure errors, no artifacts).
    """

    records: tuple[Rollout, ...]
    rescanned: int
    kept: int


def plan_rebuild(r: Rollout, stored: StoredArtifacts, kept: Collection[str], starter: Path) -> RebuildPlan:
    """Which changed files of ``r`` were deleted, and which cannot be re-scanned.

    A changed file without a kept copy was either deleted by the agent or left out of the
    artifacts (over the per-rollout budget, or a name the run directory refused). Runs made
    since the artifact budget record both (``meta["deleted_files"]``,
    ``meta["artifacts_omitted"]``); for older runs, the diff tells: a file whose ``b/`` side
    or "Large file" line is in ``diff.patch`` was changed, not deleted. Either way a file
    that cannot be re-scanned is a scan error, never a clean file.

    Args:
        r: The rollout's record.
        stored: Its artifacts (the diff is read for runs that did not record deletions).
        kept: The relative paths of its kept files.
        starter: The task's starter workspace.
    """
    meta = r.meta
    changed = [c for c in meta.get(CHANGED_FILES, []) if isinstance(c, str)]
    recorded = meta.get(DELETED_FILES)
    omitted = {c for c in meta.get(ARTIFACTS_OMITTED, []) if isinstance(c, str)}
    diff_text: str | None = None
    deleted: list[str] = []
    errors: list[ScanError] = []
    for rel in changed:
        if rel in kept:
            continue
        if isinstance(recorded, list):
            gone = rel not in omitted  # deleted, or no longer a regular file (a link...)
        else:  # a run from before the artifact budget: read the diff
            if diff_text is None:
                diff_text = stored.diff() or ""
            name = quote_path(f"b/{rel}")
            kept_side = (f"+++ {name}\n" in diff_text or f"Large file {quote_path(rel)} differs" in diff_text
                         or f"+++ b/{rel}\n" in diff_text or f"Large file {rel} differs" in diff_text)
            gone = os.path.lexists(starter / rel) and not kept_side
        if gone:
            deleted.append(rel)
        else:
            errors.append(ScanError(_TOOL, rel, "changed by the agent but not kept with the run's "
                                    "artifacts (over the per-rollout budget): not re-scanned"))
    total = meta.get(total_key(CHANGED_FILES))
    if isinstance(total, int) and total > len(changed):
        errors.append(ScanError(_TOOL, "", f"{total - len(changed)} more changed file(s) are not "
                                "listed in the record (over the per-rollout budget): not re-scanned"))
    return RebuildPlan(tuple(deleted), tuple(errors))


def rescan_rollout(scanners: Sequence[Scanner], r: Rollout, stored: StoredArtifacts, task: Task,
                   workspace: Path, *, starter: Path | None = None) -> Rollout:
    """``r`` with the findings and scan errors of ``scanners`` on its rebuilt workspace.

    Args:
        scanners: The scanners to run.
        r: The rollout's record.
        stored: Its artifacts.
        task: Its task (the starter workspace).
        workspace: Where to rebuild the workspace (must not exist; the caller removes it).
        starter: What the rollout started from (default: the task's ``workspace/``; a
            repository task's checkout at its base commit).

    Returns:
        The record with new ``findings``, ``scan_errors`` and ``meta["scanned"]`` (not stored).
    """
    start = starter or task.workspace_dir
    files = stored.kept_files()
    plan = plan_rebuild(r, stored, files.keys(), start)
    unwritten = restore_workspace(workspace, start, files, plan.deleted)
    findings, errors, _ = scan_workspace(scanners, start, workspace)
    errors = errors + plan.errors + tuple(
        ScanError(_TOOL, rel, f"kept with the run's artifacts but {why}: not re-scanned")
        for rel, why in unwritten)
    meta = {**r.meta, SCANNED: [s.name for s in scanners]}
    return replace(r, findings=findings, scan_errors=errors, meta=meta)


def _checkout(task: Task, dest: Path) -> Path:
    """A repository task's checkout at its base commit (what its rollouts started from).

    Raises:
        UsageError: The repository is not there any more, or not at the base commit.
    """
    from reliabench.repository.source import RepositorySourceError, checkout

    cfg = task.repository
    assert cfg is not None  # the caller's choice
    if cfg.source is None:
        raise UsageError(f"task {task.id}: no repository to rebuild its rollouts' workspaces from")
    try:
        checkout(cfg.source, cfg.base_commit, dest, where=f"task {task.id}: {cfg.source}")
    except RepositorySourceError as exc:
        raise UsageError(str(exc)) from None
    return dest


def rescan_run(run: RunDirectory, scanners: Sequence[Scanner], *, dry_run: bool = False) -> RescanResult:
    """Re-scan every rollout of ``run`` and replace its stored findings.

    Args:
        run: The run directory (opened writable, unless ``dry_run``).
        scanners: The scanners to run.
        dry_run: Leave the store as it is; return what would be stored.

    Raises:
        UsageError: the run does not record its suite, or the suite changed since the run.
    """
    updated: list[Rollout] = []
    rescanned = 0
    info = run.info()
    suite_path = info.suite_path
    if not suite_path:
        raise UsageError(f"{run.path}: the run does not record its suite path; it cannot be re-scanned")
    suite = load_suite(suite_path)
    if suite.content_hash != info.suite.hash:
        raise UsageError(f"{run.path}: the suite at {suite_path} changed since the run (content hash "
                         "differs); re-scanning would compare against other starters")
    scratch = Path(tempfile.mkdtemp(prefix="reliabench-scan-"))
    starters: dict[str, Path] = {}  # a repository task's checkout at its base commit
    try:
        for r in run.records():
            stored = run.artifacts(r.task_id, r.agent, r.rollout)
            if r.status == "infra_error" or not stored.has_diff():
                updated.append(r)
                continue
            ws = scratch / str(len(updated))
            task = suite.task(r.task_id)
            if task.repository is not None and task.id not in starters:
                starters[task.id] = _checkout(task, scratch / "starters" / task.id)
            try:
                new = rescan_rollout(scanners, r, stored, task, ws, starter=starters.get(task.id))
            finally:
                remove_tree(ws)
            if not dry_run:
                new = run.replace_security(r, new.findings, new.scan_errors, new.meta)
            updated.append(new)
            rescanned += 1
    finally:
        remove_tree(scratch)
    return RescanResult(tuple(updated), rescanned, len(updated) - rescanned)
