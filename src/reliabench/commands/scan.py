"""``reliabench scan``: re-scan a finished run with other scanners, without rerunning agents.

The runner keeps every file an agent added or changed under ``artifacts/.../files/``; the
starter workspaces come from the run's suite (its content hash must match). Each rollout's
workspace is rebuilt, scanned on the agent's changed lines only, and its findings replaced
in the store (``--dry-run`` only prints).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from contextlib import suppress
from dataclasses import replace
from pathlib import Path

import click

from reliabench.commands._common import console as make_console
from reliabench.commands._common import (
    k_option,
    resolve_security,
    security_config_option,
    threshold_option,
)
from reliabench.errors import UsageError
from reliabench.meta_keys import ARTIFACTS_OMITTED, CHANGED_FILES, DELETED_FILES, SCANNED, total_key
from reliabench.metrics.analysis import parse_ks, score
from reliabench.metrics.security import SecurityThreshold
from reliabench.records import Rollout, ScanError
from reliabench.report.scan_tables import security_tables
from reliabench.report.terminal import print_parts
from reliabench.scanners import get_scanner
from reliabench.scanners.changes import quote_path
from reliabench.scanners.workspace import scan_workspace
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite, materialize

__all__ = ["command", "rebuild_deletions"]


def rebuild_deletions(r: Rollout, adir: Path, starter: Path, ws: Path) -> tuple[ScanError, ...]:
    """Delete from ``ws`` what the agent deleted; return scan errors for files not kept.

    A changed file without a kept copy is either deleted by the agent or left out of the
    artifacts (over the per-rollout budget, or a name the run directory refused). Runs made
    since the artifact budget record both (``meta["deleted_files"]``,
    ``meta["artifacts_omitted"]``); for older runs, the diff tells: a file whose ``b/`` side
    or "Large file" line is in ``diff.patch`` was changed, not deleted. Either way a file that
    cannot be re-scanned is a scan error, never a clean file.
    """
    meta = r.meta
    changed = [c for c in meta.get(CHANGED_FILES, []) if isinstance(c, str)]
    deleted = meta.get(DELETED_FILES)
    omitted = {c for c in meta.get(ARTIFACTS_OMITTED, []) if isinstance(c, str)}
    diff_text: str | None = None
    errors: list[ScanError] = []
    for rel in changed:
        if os.path.lexists(adir / "files" / rel):  # False, not an error, for a too-long path
            continue
        if isinstance(deleted, list):
            gone = rel not in omitted  # deleted, or no longer a regular file (a link...)
        else:  # a run from before the artifact budget: read the diff
            if diff_text is None:
                try:
                    diff_text = (adir / "diff.patch").read_text(encoding="utf-8", errors="replace")
                except OSError:
                    diff_text = ""
            name = quote_path(f"b/{rel}")
            kept_side = (f"+++ {name}\n" in diff_text or f"Large file {quote_path(rel)} differs" in diff_text
                         or f"+++ b/{rel}\n" in diff_text or f"Large file {rel} differs" in diff_text)
            gone = os.path.lexists(starter / rel) and not kept_side
        if gone:
            with suppress(OSError):
                if not (ws / rel).is_dir():
                    (ws / rel).unlink()
        else:
            errors.append(ScanError("reliabench", rel, "changed by the agent but not kept with the "
                                    "run's artifacts (over the per-rollout budget): not re-scanned"))
    total = meta.get(total_key(CHANGED_FILES))
    if isinstance(total, int) and total > len(changed):
        errors.append(ScanError("reliabench", "", f"{total - len(changed)} more changed file(s) are not "
                                "listed in the record (over the per-rollout budget): not re-scanned"))
    return tuple(errors)


@click.command("scan")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False, readable=False))
@click.option("--scanner", "scanners", multiple=True, default=("bandit",), show_default=True,
              help="Scanner(s) to run (repeatable): bandit, semgrep, or a plugin.")
@threshold_option()
@security_config_option()
@k_option("1,5,10")
@click.option("--dry-run", is_flag=True, help="Print the result; leave the stored findings as they are.")
@click.pass_context
def command(ctx: click.Context, run_dir: Path, scanners: tuple[str, ...], threshold: SecurityThreshold,
            security_config: Path | None, ks: str, dry_run: bool) -> None:
    """Re-scan the code each rollout of RUN wrote, and print the security-adjusted figures.

    The figures use the run's stored security policy, as ``score RUN`` does (``--security-config``
    replaces it; an explicit ``--security-threshold`` wins over its threshold).
    """
    k_values = parse_ks(ks)
    threshold, finding_filter = resolve_security(ctx, threshold, security_config, str(run_dir))
    scanner_objs = [get_scanner(name) for name in scanners]
    console = make_console()
    with RunStore.open_existing(run_dir, readonly=dry_run) as store:
        info = store.run_info()
        suite_path = info.suite_path
        if not suite_path:
            raise UsageError(f"{run_dir}: the run does not record its suite path; it cannot be re-scanned")
        suite = load_suite(suite_path)
        if suite.content_hash != info.suite.hash:
            raise UsageError(f"{run_dir}: the suite at {suite_path} changed since the run (content hash "
                             "differs); re-scanning would compare against other starters")
        records = store.rollouts()
        updated: list[Rollout] = []
        scratch = Path(tempfile.mkdtemp(prefix="reliabench-scan-"))
        try:
            for r in records:
                adir = store.existing_artifact_dir(r.task_id, r.agent, r.rollout)
                if r.status == "infra_error" or not (adir / "diff.patch").exists():
                    updated.append(r)
                    continue
                task = suite.task(r.task_id)
                ws = scratch / f"{len(updated)}"
                layers = [task.workspace_dir] + ([adir / "files"] if (adir / "files").is_dir() else [])
                materialize(ws, layers)
                missing = rebuild_deletions(r, adir, task.workspace_dir, ws)
                findings, errors, _ = scan_workspace(scanner_objs, task.workspace_dir, ws)
                errors = errors + missing
                meta = {**r.meta, SCANNED: [s.name for s in scanner_objs]}
                new = (store.replace_security(r, findings, errors, meta) if not dry_run
                       else replace(r, findings=findings, scan_errors=errors, meta=meta))
                updated.append(new)
                shutil.rmtree(ws, ignore_errors=True)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
    console.print(f"re-scanned {len(updated)} rollout(s) with {', '.join(scanners)}"
                  + (" (dry run: store unchanged)" if dry_run else ""))
    report = score(updated, k_values, threshold=threshold, finding_filter=finding_filter)
    print_parts(console, security_tables(report))
