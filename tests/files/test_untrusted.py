"""The helpers every host-side read of an agent's workspace goes through, and the budgets."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest
from sandbox_helpers import deep_chain

from reliabench.files.untrusted import chown_tree, file_kind, read_bounded, remove_tree, walk_tree
from reliabench.records import Finding, Rollout, read_jsonl, write_jsonl
from reliabench.run.artifacts import (
    ArtifactBudget,
    RolloutArtifacts,
    cap_record,
    take_snapshot,
    write_artifacts,
)


def test_read_bounded_reads_only_regular_files(base: Path) -> None:
    (base / "f").write_bytes(b"0123456789")
    os.mkfifo(base / "fifo")
    (base / "link").symlink_to(base / "f")
    (base / "d").mkdir()
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(base / "sock"))
    try:
        assert read_bounded(base / "f", 4) == b"01234"  # limit + 1: "larger than 4"
        assert read_bounded(base / "f", 100) == b"0123456789"
        for other in ("fifo", "link", "d", "sock", "missing"):
            assert read_bounded(base / other, 100) is None, other
        assert [file_kind(base / n) for n in ("f", "fifo", "link", "d", "sock", "missing")] == [
            "file", "special", "link", "dir", "special", "error"]
    finally:
        sock.close()


def test_walk_tree_is_iterative_and_bounded(base: Path) -> None:
    deep_chain(base, 3000)  # past the recursion limit and PATH_MAX (2 bytes a level)
    entries = list(walk_tree(base, max_depth=50))
    assert len(entries) == 51
    assert entries[-1].kind == "error" and "deeper than 50" in entries[-1].error


def test_walk_tree_reports_what_it_cannot_list(base: Path) -> None:
    deep_chain(base, 2100, "ddd")  # 8400 bytes of path: past PATH_MAX within the depth bound
    entries = list(walk_tree(base, max_depth=5000))
    errors = [e for e in entries if e.kind == "error"]
    assert errors and all("too long" in e.error.lower() for e in errors)


def test_chown_tree_never_raises_for_entries(base: Path) -> None:
    deep_chain(base, 3000)
    report = chown_tree(base, 61990, 61990)
    assert report.changed > 100 and report.failed >= 1
    assert os.lstat(base / "d").st_uid == 61990
    st = os.lstat(base)
    assert st.st_uid == 61990


def test_chown_tree_skips_hard_links_and_clears_setuid(base: Path) -> None:
    outside = base / "outside"
    outside.write_text("x")
    tree = base / "tree"
    tree.mkdir()
    os.link(outside, tree / "hard")
    (tree / "suid").write_text("x")
    os.chmod(tree / "suid", 0o4755)
    chown_tree(tree, 61990, 61990)
    assert os.lstat(outside).st_uid == os.getuid()  # not handed over through the hard link
    assert not os.lstat(tree / "suid").st_mode & stat.S_ISUID


def test_remove_tree_handles_deep_and_unreadable_trees(base: Path) -> None:
    target = base / "t"
    target.mkdir()
    deep_chain(target, 3000)
    (target / "locked").mkdir()
    (target / "locked" / "f").write_text("x")
    os.chmod(target / "locked", 0)
    # (shutil.rmtree, which the runner used before, recurses: RecursionError on Python 3.11)
    assert remove_tree(target)
    assert not target.exists()
    assert remove_tree(base / "never-existed")


# ------------------------------------------------------------------------------------------
# the per-rollout budget
# ------------------------------------------------------------------------------------------


def test_snapshot_prefers_source_and_small_files(base: Path) -> None:
    (base / "a.py").write_text("x" * 100)
    (base / "blob.bin").write_bytes(b"\0" * 50)
    (base / "huge.py").write_text("y" * 10_000)
    (base / "b.py").write_text("z" * 10)
    snap = take_snapshot(base, ["a.py", "blob.bin", "huge.py", "b.py"],
                         ArtifactBudget(max_bytes=1000, max_files=2))
    assert sorted(snap.files) == ["a.py", "b.py"]
    assert {rel for rel, _ in snap.omitted} == {"blob.bin", "huge.py"}


def test_one_large_file_may_use_the_whole_budget(base: Path) -> None:
    (base / "big.py").write_text("e" * 5000)
    snap = take_snapshot(base, ["big.py"], ArtifactBudget(max_bytes=5000))
    assert list(snap.files) == ["big.py"]


def test_write_artifacts_lists_what_it_left_out(base: Path) -> None:
    art = RolloutArtifacts("log", "diff", "tests", {"ok.py": b"1", "../escape.py": b"2", "a/\0b": b"3"},
                           (("big.py", "over budget"),))
    left = write_artifacts(base / "adir", art)
    assert {rel for rel, _ in left} == {"big.py", "../escape.py", "a/\0b"}
    assert (base / "adir" / "files" / "ok.py").read_bytes() == b"1"
    assert not (base / "escape.py").exists()
    assert "big.py" in (base / "adir" / "OMITTED.txt").read_text()


def test_cap_record_keeps_the_most_severe_findings_and_counts() -> None:
    findings = (*(Finding("t", f"R{i}", "low", path="a.py", line=i) for i in range(10)),
                Finding("t", "CRIT", "critical", path="a.py", line=99))
    r = Rollout(task_id="t", agent="a", rollout=0, verdict=True, findings=findings,
                meta={"changed_files": [f"f{i}" for i in range(30)]})
    capped = cap_record(r, ArtifactBudget(max_findings=3, max_listed=5))
    assert len(capped.findings) == 3 and any(f.rule_id == "CRIT" for f in capped.findings)
    assert capped.meta["findings_total"] == 11
    assert capped.meta["changed_files"] == [f"f{i}" for i in range(5)]
    assert capped.meta["changed_files_total"] == 30


def test_writing_to_a_device_never_replaces_it(base: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("making a device node needs root")
    node = base / "null"
    os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a private /dev/null
    write_jsonl([Rollout(task_id="t", agent="a", rollout=0, verdict=True)], node)
    assert stat.S_ISCHR(os.stat(node).st_mode)
    out = base / "f.jsonl"
    write_jsonl([Rollout(task_id="t", agent="a", rollout=0, verdict=True)], out)
    assert len(read_jsonl(out)) == 1
