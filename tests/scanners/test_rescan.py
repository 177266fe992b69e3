"""Re-scanning a finished run (scanners/rescan.py): rebuilt workspaces, never a silently clean file."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from suite_helpers import one_task_suite

from reliabench.errors import UsageError
from reliabench.records import Finding, Rollout
from reliabench.run.artifacts import RolloutArtifacts, StoredArtifacts, write_artifacts
from reliabench.runs import RunDirectory
from reliabench.scanners import get_scanner
from reliabench.scanners.base import Scanner
from reliabench.scanners.rescan import RescanResult, plan_rebuild, rescan_rollout, rescan_run
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

BAD = "import subprocess\n\ndef run(cmd):\n    return subprocess.call(cmd, shell=True)\n"
OLD_FINDING = Finding("old-scanner", "X1", "low", "low", None, "gone.py", 1, "stale")


def _suite(root: Path) -> Path:
    return one_task_suite(root, {"main.py": "def run(cmd):\n    raise NotImplementedError\n", "gone.py": "x = 1\n"},
                          {"test_main.py": "def test_x():\n    assert True\n"}, name="rescan")


def _record(i: int, **meta: object) -> Rollout:
    return Rollout("t1", "agent", i, verdict=True, findings=(OLD_FINDING,), meta={"scanned": ["old"], **meta})


def _run(tmp_path: Path, rollouts: list[tuple[Rollout, RolloutArtifacts | None]]) -> Path:
    suite = load_suite(_suite(tmp_path))
    out = tmp_path / "run"
    store, _ = RunStore.create_or_resume(
        out, config={"suite_path": str(suite.root)}, config_hash="h",
        suite={"name": suite.name, "version": suite.version, "hash": suite.content_hash},
        packages={}, isolation="none")
    with store:
        for r, art in rollouts:
            if art is not None:
                write_artifacts(store.artifact_dir(r.task_id, r.agent, r.rollout), art)
            store.add(r)
    return out


def _rescan(run_dir: Path, scanners: list[Scanner], *, dry_run: bool = False) -> RescanResult:
    with RunDirectory.open(run_dir, writable=not dry_run) as run:
        return rescan_run(run, scanners, dry_run=dry_run)


def _art(files: dict[str, bytes], diff: str = "diff\n") -> RolloutArtifacts:
    return RolloutArtifacts("", diff, "", files)


def test_a_rescan_finds_what_the_kept_files_hold_and_replaces_the_findings(tmp_path: Path) -> None:
    r = _record(0, changed_files=["gone.py", "main.py"], deleted_files=["gone.py"])
    run = _run(tmp_path, [(r, _art({"main.py": BAD.encode()}))])
    result = _rescan(run, [get_scanner("bandit")])
    assert (result.rescanned, result.kept) == (1, 0)
    (new,) = result.records
    assert {f.rule_id for f in new.findings} == {"B404", "B602"} and all(f.path.endswith("main.py") for f in new.findings)
    assert new.scan_errors == () and new.meta["scanned"] == ["bandit"]
    with RunStore.open_existing(run, readonly=True) as store:
        assert store.rollouts() == [new]  # stored


def test_a_dry_run_leaves_the_store_alone(tmp_path: Path) -> None:
    r = _record(0, changed_files=["main.py"], deleted_files=[])
    run = _run(tmp_path, [(r, _art({"main.py": BAD.encode()}))])
    result = _rescan(run, [get_scanner("bandit")], dry_run=True)
    assert result.records[0].findings != (OLD_FINDING,)
    with RunStore.open_existing(run, readonly=True) as store:
        assert store.rollouts()[0].findings == (OLD_FINDING,)


def test_infra_errors_and_rollouts_without_artifacts_are_kept_as_recorded(tmp_path: Path) -> None:
    infra = Rollout("t1", "agent", 0, tests=(), status="infra_error", meta={"reason": "x"})
    bare = _record(1, changed_files=["main.py"])
    run = _run(tmp_path, [(infra, _art({})), (bare, None)])
    result = _rescan(run, [get_scanner("bandit")])
    assert (result.rescanned, result.kept) == (0, 2)
    assert list(result.records) == [infra, bare]


def test_a_changed_file_not_kept_is_a_scan_error(tmp_path: Path) -> None:
    r = _record(0, changed_files=["main.py", "big.py"], deleted_files=[], artifacts_omitted=["big.py"],
                changed_files_total=5)
    run = _run(tmp_path, [(r, _art({"main.py": b"x = 1\n"}))])
    (new,) = _rescan(run, [get_scanner("bandit")]).records
    errors = {e.path: e.message for e in new.scan_errors}
    assert "not kept with the run's artifacts" in errors["big.py"]
    assert "3 more changed file(s) are not listed" in errors[""]


def test_a_file_turned_into_a_directory_is_rebuilt(tmp_path: Path) -> None:
    # the agent replaced the starter's file main.py by a directory main.py/ (not a regular file: not kept)
    r = _record(0, changed_files=["main.py", "main.py/inner.py"], deleted_files=[])
    run = _run(tmp_path, [(r, _art({"main.py/inner.py": BAD.encode()}))])
    (new,) = _rescan(run, [get_scanner("bandit")]).records
    assert new.scan_errors == () and any(f.path.endswith("main.py/inner.py") for f in new.findings)


def test_a_kept_file_that_cannot_be_restored_is_a_scan_error(tmp_path: Path) -> None:
    # a record that does not list main.py as changed: its file stays and blocks main.py/inner.py
    r = _record(0, changed_files=["main.py/inner.py"], deleted_files=[])
    run = _run(tmp_path, [(r, _art({"main.py/inner.py": BAD.encode()}))])
    (new,) = _rescan(run, [get_scanner("bandit")]).records
    assert any(e.path == "main.py/inner.py" and "cannot be written" in e.message for e in new.scan_errors)
    assert new.findings == ()


def test_the_suite_must_be_the_runs(tmp_path: Path) -> None:
    run = _run(tmp_path, [])
    (tmp_path / "suite" / "tasks" / "t1" / "workspace" / "main.py").write_text("changed\n")
    with pytest.raises(UsageError, match="changed since the run"):
        _rescan(run, [get_scanner("bandit")])


@pytest.mark.parametrize(("diff", "expected_deleted"), [
    ("--- a/gone.py\n+++ /dev/null\n", ("gone.py",)),  # deleted: no b/ side
    ("--- a/gone.py\n+++ b/gone.py\n", ()),  # changed, so a missing copy is an error
    ("Large file gone.py differs\n", ()),
])
def test_old_runs_tell_deletions_by_the_diff(tmp_path: Path, diff: str, expected_deleted: tuple[str, ...]) -> None:
    starter = _suite(tmp_path) / "tasks" / "t1" / "workspace"
    write_artifacts(tmp_path / "a", _art({}, diff))
    r = _record(0, changed_files=["gone.py"])  # no deleted_files: made before the artifact budget
    plan = plan_rebuild(r, StoredArtifacts(tmp_path / "a"), set(), starter)
    assert plan.deleted == expected_deleted
    assert bool(plan.errors) == (not expected_deleted)


def test_rescan_rollout_removes_what_the_agent_deleted(tmp_path: Path) -> None:
    suite = load_suite(_suite(tmp_path))
    write_artifacts(tmp_path / "a", _art({}))
    r = _record(0, changed_files=["gone.py"], deleted_files=["gone.py"])
    new = rescan_rollout([get_scanner("bandit")], r, StoredArtifacts(tmp_path / "a"), suite.task("t1"),
                         tmp_path / "ws")
    assert not (tmp_path / "ws" / "gone.py").exists() and (tmp_path / "ws" / "main.py").exists()
    assert new.findings == () and new.scan_errors == ()


@pytest.mark.parametrize("module", ["reliabench.commands.scan", "reliabench.tasks.validate",
                                    "reliabench.scanners.rescan"])
def test_scanning_does_not_import_the_runner(module: str) -> None:
    code = (f"import sys, {module}\n"
            "bad = sorted(m for m in sys.modules if m in ('reliabench.run.runner', 'reliabench.run.rollout',"
            " 'reliabench.run.executors.local', 'reliabench.run.executors.ray'))\n"
            "print(bad)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
