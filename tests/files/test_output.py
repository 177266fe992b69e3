"""User-named outputs (reliabench.files.output): atomic for files, written through for devices."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from reliabench.errors import OutputError
from reliabench.files.output import open_output


def test_a_new_file_appears_whole_with_umask_permissions(tmp_path: Path) -> None:
    dest = tmp_path / "sub" / "dir" / "report.html"  # parents are made
    old = os.umask(0o027)
    try:
        with open_output(dest) as fh:
            fh.write("é" * 10)
            assert not dest.exists()  # nothing at the name until the write is complete
    finally:
        os.umask(old)
    assert dest.read_text(encoding="utf-8") == "é" * 10
    assert stat.S_IMODE(dest.stat().st_mode) == 0o640
    assert [p.name for p in dest.parent.iterdir()] == ["report.html"]  # no temporary left


def test_replacing_keeps_the_old_file_until_the_end_and_its_mode(tmp_path: Path) -> None:
    dest = tmp_path / "out.json"
    dest.write_text("old", encoding="utf-8")
    os.chmod(dest, 0o604)
    with open_output(dest) as fh:
        fh.write("new")
        assert dest.read_text(encoding="utf-8") == "old"  # a reader sees the whole old file
    assert dest.read_text(encoding="utf-8") == "new"
    assert stat.S_IMODE(dest.stat().st_mode) == 0o604


def test_an_error_while_writing_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    dest = tmp_path / "out.csv"
    dest.write_text("old", encoding="utf-8")
    def fail(path: Path, exc: BaseException) -> None:
        with open_output(path) as fh:
            fh.write("half")
            raise exc

    with pytest.raises(RuntimeError, match="renderer broke"):
        fail(dest, RuntimeError("renderer broke"))
    assert dest.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]
    # a new file that fails is not created at all
    with pytest.raises(KeyboardInterrupt):
        fail(tmp_path / "new.csv", KeyboardInterrupt())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.csv"]


def test_a_device_is_written_through_never_replaced() -> None:
    before = os.stat("/dev/null")
    with open_output("/dev/null") as fh:
        fh.write("discarded")
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode)
    assert (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev)


def test_a_fifo_is_written_through(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text(encoding="utf-8")))
    reader.start()
    with open_output(fifo) as fh:
        fh.write("through the pipe")
    reader.join(timeout=10)
    assert got == ["through the pipe"]
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_a_directory_is_refused(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="is a directory"), open_output(tmp_path) as fh:
        fh.write("x")
    assert list(tmp_path.iterdir()) == []


def test_what_cannot_be_written_is_one_output_error(tmp_path: Path) -> None:
    """A place that cannot take the file: one line naming it (exit 3, not a usage error)."""
    # a file nobody may replace, in a folder nobody may write
    with pytest.raises(OutputError, match=r"/proc/version: cannot write the output") as info, \
            open_output("/proc/version") as fh:
        fh.write("x")
    assert info.value.exit_code == 3
    full = tmp_path / "out.txt"
    with pytest.raises(OutputError, match="No space left on device"), open_output(full) as fh:
        raise OSError(28, "No space left on device")  # what a write to a full disk raises
    assert list(tmp_path.iterdir()) == []  # nothing half-written


def test_an_error_of_the_caller_is_its_own(tmp_path: Path) -> None:
    with pytest.raises(KeyError), open_output(tmp_path / "x.txt"):
        raise KeyError("not an output problem")
    assert list(tmp_path.iterdir()) == []
