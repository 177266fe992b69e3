"""Scanning what an agent changed (reliabench.scanners.workspace): only changed files and lines,
every scanner, and what could not be examined reported, never clean.

The change set itself is pinned in tests/test_scanners_changes.py; Bandit's findings in
tests/test_scanners.py.
"""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from reliabench.files.untrusted import MAX_DEPTH
from reliabench.records import Finding, ScanError
from reliabench.scanners.bandit_scanner import BanditScanner
from reliabench.scanners.base import ScanResult
from reliabench.scanners.workspace import scan_changes, scan_workspace


@dataclass
class Recorder:
    """A scanner that records what it was asked to scan and reports one finding per file."""

    name: str
    calls: list[tuple[tuple[str, ...], dict[str, frozenset[int]]]] = field(default_factory=list)

    def scan(self, root: Path, files: Sequence[str],
             changed_lines: Mapping[str, frozenset[int]] | None = None) -> ScanResult:
        self.calls.append((tuple(files), dict(changed_lines or {})))
        return ScanResult(
            findings=tuple(Finding(self.name, "R1", "high", "high", None, f, 1, "x") for f in files),
            errors=(ScanError(self.name, "odd.bin", "not parsed"),),
            files_scanned=len(files),
        )


def _trees(tmp_path: Path) -> tuple[Path, Path]:
    starter = tmp_path / "starter"
    starter.mkdir()
    (starter / "keep.py").write_text("a = 1\nb = 2\n", encoding="utf-8")
    (starter / "edit.py").write_text("x = 1\ny = 2\nz = 3\n", encoding="utf-8")
    (starter / "gone.py").write_text("q = 1\n", encoding="utf-8")
    ws = tmp_path / "ws"
    shutil.copytree(starter, ws)
    (ws / "edit.py").write_text("x = 1\ny = 20\nz = 3\nw = 4\n", encoding="utf-8")
    (ws / "new.py").write_text("import os\nos.system('ls')\n", encoding="utf-8")
    (ws / "gone.py").unlink()
    return starter, ws


def test_every_scanner_sees_only_changed_files_and_lines(tmp_path: Path) -> None:
    starter, ws = _trees(tmp_path)
    one, two = Recorder("one"), Recorder("two")
    findings, errors, touched = scan_workspace([one, two], starter, ws)
    assert touched == ("edit.py", "gone.py", "new.py")  # added, modified and deleted, sorted
    for scanner in (one, two):
        assert scanner.calls == [(("edit.py", "new.py"), {"edit.py": frozenset({2, 4}),
                                                         "new.py": frozenset({1, 2})})]
    assert [(f.tool, f.path) for f in findings] == [("one", "edit.py"), ("one", "new.py"),
                                                   ("two", "edit.py"), ("two", "new.py")]
    assert errors == (ScanError("one", "odd.bin", "not parsed"), ScanError("two", "odd.bin", "not parsed"))


def test_nothing_changed_calls_no_scanner(tmp_path: Path) -> None:
    starter, _ = _trees(tmp_path)
    same = tmp_path / "same"
    shutil.copytree(starter, same)
    rec = Recorder("r")
    assert scan_workspace([rec], starter, same) == ((), (), ())
    assert rec.calls == []


def test_what_cannot_be_examined_is_a_scan_error_not_clean(tmp_path: Path) -> None:
    starter, ws = _trees(tmp_path)
    deep = ws / "deep"
    deep.mkdir()
    d = deep
    for _ in range(MAX_DEPTH + 2):
        d = d / "d"
    d.mkdir(parents=True)
    (d / "evil.py").write_text("import os\nos.system('rm -rf /')\n", encoding="utf-8")
    findings, errors, changes = scan_changes([], starter, ws)
    assert findings == ()
    assert len(errors) == 1
    err = errors[0]
    assert err.tool == "reliabench" and err.path.startswith("deep/d/")
    assert err.message == ("not examined (nested too deep, path too long or not readable): "
                           "its content was not scanned")
    assert changes.unreadable == (err.path,)


def test_with_bandit_findings_are_on_the_agents_lines_only(tmp_path: Path) -> None:
    starter = tmp_path / "starter"
    starter.mkdir()
    (starter / "old.py").write_text("import subprocess\nsubprocess.call('ls', shell=True)\n", encoding="utf-8")
    ws = tmp_path / "ws"
    shutil.copytree(starter, ws)
    with (ws / "old.py").open("a", encoding="utf-8") as fh:
        fh.write("subprocess.call('id', shell=True)\n")
    findings, errors, touched = scan_workspace([BanditScanner()], starter, ws)
    assert touched == ("old.py",)
    assert errors == ()
    assert {f.line for f in findings if f.rule_id == "B602"} == {3}  # the starter's own line 2 is not counted
    assert all(f.tool == "bandit" and f.path == "old.py" for f in findings)
