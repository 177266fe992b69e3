"""A rollout's artifacts: written and read back by one module, reads bounded (run/artifacts.py)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reliabench.run import artifacts
from reliabench.run.artifacts import (
    AGENT_LOG,
    DIFF,
    FILES,
    OMITTED,
    TEST_LOG,
    TRANSCRIPT,
    ArtifactBudget,
    RolloutArtifacts,
    StoredArtifacts,
    open_artifacts,
    restore_workspace,
    write_artifacts,
)
from reliabench.store import RunStore

ART = RolloutArtifacts(
    agent_log="agent said \u00e9\n", diff="--- a/x.py\n+++ b/x.py\n", test_log="1 passed\n",
    files={"x.py": b"print(1)\n", "pkg/deep/y.py": b"\x00\xffbinary", "bad\udcffname.py": b"z = 1\n"},
    omitted=(("big.py", "over the budget"),),
)


def test_round_trip(tmp_path: Path) -> None:
    left_out = write_artifacts(tmp_path / "a", ART)
    assert left_out == ART.omitted
    stored = StoredArtifacts(tmp_path / "a")
    assert stored.present and stored.has_diff()
    assert stored.agent_log() == ART.agent_log
    assert stored.diff() == ART.diff and stored.diff_bytes() == ART.diff.encode()
    assert stored.test_log() == ART.test_log
    assert stored.transcript() is None  # the runner writes none
    assert stored.kept_files() == ART.files  # non-UTF-8 names and binary content survive
    assert "big.py" in (tmp_path / "a" / OMITTED).read_text()
    assert sorted(p.name for p in (tmp_path / "a").iterdir()) == sorted(
        [AGENT_LOG, DIFF, TEST_LOG, FILES, OMITTED])


def test_a_missing_folder_reads_as_nothing(tmp_path: Path) -> None:
    stored = StoredArtifacts(tmp_path / "none")
    assert not stored.present and not stored.has_diff()
    assert (stored.agent_log(), stored.diff(), stored.test_log(), stored.transcript()) == (None,) * 4
    assert stored.diff_bytes() is None and stored.kept_files() == {}


def test_rewriting_replaces_the_old_artifacts(tmp_path: Path) -> None:
    write_artifacts(tmp_path / "a", ART)
    write_artifacts(tmp_path / "a", RolloutArtifacts("", "", "", {"new.py": b"1"}))
    stored = StoredArtifacts(tmp_path / "a")
    assert stored.kept_files() == {"new.py": b"1"} and not (tmp_path / "a" / OMITTED).exists()


def test_reads_are_bounded_and_say_so(tmp_path: Path) -> None:
    adir = tmp_path / "a"
    write_artifacts(adir, RolloutArtifacts("x" * 1000, "d" * 1000, "", {}))
    stored = StoredArtifacts(adir)
    text = stored.agent_log(limit=100)
    assert text is not None and text.startswith("x" * 100)
    assert "cut by reliabench: agent.log is longer than 100 bytes" in text
    assert stored.agent_log(limit=1000) == "x" * 1000  # exactly the limit is not cut
    assert len(stored.diff_bytes(limit=10) or b"") == 11  # limit + 1: the caller can tell
    with pytest.raises(ValueError, match="limit must be an integer >= 1, got 0"):
        stored.diff(limit=0)


def test_the_default_limits_read_whatever_the_runner_writes(tmp_path: Path) -> None:
    budget = artifacts.DEFAULT_BUDGET
    log = artifacts.cap_text("\U0001F600" * (budget.max_log_bytes + 10), budget.max_log_bytes)  # 4 bytes each
    write_artifacts(tmp_path / "a", RolloutArtifacts(log, "", log, {}))
    stored = StoredArtifacts(tmp_path / "a")
    assert stored.agent_log() == log and stored.test_log() == log


def test_links_and_fifos_are_not_read(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("host secret")
    adir = tmp_path / "a"
    write_artifacts(adir, RolloutArtifacts("log", "", "", {"ok.py": b"1"}))
    (adir / AGENT_LOG).unlink()
    (adir / AGENT_LOG).symlink_to(secret)
    (adir / TEST_LOG).unlink()
    os.mkfifo(adir / TEST_LOG)
    (adir / FILES / "leak.py").symlink_to(secret)
    (adir / FILES / "dirlink").symlink_to(tmp_path)
    stored = StoredArtifacts(adir)
    assert stored.agent_log() is None  # a link is never followed
    assert stored.test_log() is None  # a FIFO neither blocks nor is read
    assert stored.kept_files() == {"ok.py": b"1"}


def test_kept_files_stay_within_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = {f"f{i}.py": b"x" * 100 for i in range(5)}
    write_artifacts(tmp_path / "a", RolloutArtifacts("", "", "", files))
    stored = StoredArtifacts(tmp_path / "a")
    assert stored.kept_files() == files
    assert list(stored.kept_files(max_files=2)) == ["f0.py", "f1.py"]
    assert list(stored.kept_files(max_bytes=250)) == ["f0.py", "f1.py"]
    monkeypatch.setattr(artifacts, "DEFAULT_BUDGET", ArtifactBudget(max_files=3))
    assert len(stored.kept_files()) == 3  # the current budget is the default


def test_transcript_is_read_as_text(tmp_path: Path) -> None:
    write_artifacts(tmp_path / "a", ART)
    (tmp_path / "a" / TRANSCRIPT).write_text('[{"role": "user", "content": "hi"}]')
    assert StoredArtifacts(tmp_path / "a").transcript() == '[{"role": "user", "content": "hi"}]'


def test_open_artifacts_finds_the_folder_the_store_writes(tmp_path: Path) -> None:
    store, _ = RunStore.create_or_resume(tmp_path / "run", config={}, config_hash="h", suite={},
                                         packages={}, isolation="none")
    with store:
        adir = store.artifact_dir("task 1", "m/v1", 2)
    write_artifacts(adir, ART)
    stored = open_artifacts(tmp_path / "run", "task 1", "m/v1", 2)
    assert stored.directory == adir and stored.agent_log() == ART.agent_log
    assert not open_artifacts(tmp_path / "run", "task 1", "m/v1", 3).present


def test_restore_workspace(tmp_path: Path) -> None:
    starter = tmp_path / "starter"
    (starter / "sub").mkdir(parents=True)
    (starter / "keep.py").write_text("k\n")
    (starter / "gone.py").write_text("g\n")
    (starter / "sub" / "edit.py").write_text("old\n")
    (starter / "file").write_text("a file the agent turned into a directory\n")
    ws = tmp_path / "ws"
    unwritten = restore_workspace(ws, starter, {"sub/edit.py": b"new\n", "new/n.py": b"n\n",
                                                "file/inner.py": b"i\n", "../out.py": b"o\n"},
                                  ["gone.py", "sub", "never-there.py"])
    assert (ws / "keep.py").read_text() == "k\n" and not (ws / "gone.py").exists()
    assert (ws / "sub" / "edit.py").read_text() == "new\n" and (ws / "new" / "n.py").read_text() == "n\n"
    assert not (tmp_path / "out.py").exists()
    assert dict(unwritten).keys() == {"file/inner.py", "../out.py"}
    assert "cannot be written into the rebuilt workspace" in dict(unwritten)["file/inner.py"]
    assert (starter / "gone.py").exists()  # the starter itself is untouched


def test_the_explorer_reads_through_the_bounded_reader(tmp_path: Path) -> None:
    from reliabench.records import Rollout
    from reliabench.report.rollout_detail import build_detail

    secret = tmp_path / "secret"
    secret.write_text("host secret")
    adir = tmp_path / "a"
    write_artifacts(adir, RolloutArtifacts("", "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n", "", {}))
    (adir / AGENT_LOG).unlink()
    (adir / AGENT_LOG).symlink_to(secret)
    (adir / TRANSCRIPT).symlink_to(secret)
    detail = build_detail(Rollout("t", "a", 0, verdict=True), StoredArtifacts(adir))
    assert detail.artifacts and [f.path for f in detail.diff] == ["x.py"]
    assert "host secret" not in detail.log and detail.log_kind == "none"
