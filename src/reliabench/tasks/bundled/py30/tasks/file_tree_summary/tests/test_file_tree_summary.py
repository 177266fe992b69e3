import os

import pytest

from file_tree_summary import TreeSummary, summarize_tree


def write(path, size):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"x" * size)


@pytest.fixture
def tree(tmp_path):
    root = tmp_path / "root"
    write(root / "README.md", 100)
    write(root / "setup.py", 40)
    write(root / "src" / "main.py", 300)
    write(root / "src" / "util.PY", 60)
    write(root / "src" / "data" / "table.csv", 500)
    write(root / "src" / "data" / "archive.tar.gz", 300)
    write(root / "Makefile", 10)
    write(root / "empty.txt", 0)
    return root


@pytest.fixture
def hidden_tree(tmp_path):
    root = tmp_path / "h"
    write(root / "visible.txt", 5)
    write(root / ".env", 7)
    write(root / ".git" / "config", 20)
    write(root / ".git" / "objects" / "ab.pack", 900)
    write(root / "docs" / ".draft.md", 3)
    write(root / "docs" / "guide.md", 11)
    return root


def test_returns_tree_summary(tree):
    assert isinstance(summarize_tree(tree), TreeSummary)


def test_total_size_and_file_count(tree):
    summary = summarize_tree(tree)
    assert summary.total_size == 1310
    assert summary.file_count == 8


def test_dir_count_excludes_root(tree):
    assert summarize_tree(tree).dir_count == 2


def test_by_extension_counts(tree):
    assert summarize_tree(tree).by_extension == {".md": 1, ".py": 3, ".csv": 1, ".gz": 1, "": 1, ".txt": 1}


def test_bytes_by_extension(tree):
    assert summarize_tree(tree).bytes_by_extension == {
        ".md": 100, ".py": 400, ".csv": 500, ".gz": 300, "": 10, ".txt": 0,
    }


def test_largest_files_sorted_with_tie_break(tree):
    assert summarize_tree(tree).largest_files == [
        ("src/data/table.csv", 500),
        ("src/data/archive.tar.gz", 300),
        ("src/main.py", 300),
    ]


def test_largest_parameter(tree):
    assert summarize_tree(tree, largest=1).largest_files == [("src/data/table.csv", 500)]
    assert summarize_tree(tree, largest=0).largest_files == []
    everything = summarize_tree(tree, largest=100).largest_files
    assert len(everything) == 8
    assert everything[-2:] == [("Makefile", 10), ("empty.txt", 0)]


def test_accepts_str_path(tree):
    assert summarize_tree(str(tree)).total_size == 1310


def test_empty_directory(tmp_path):
    summary = summarize_tree(tmp_path)
    assert (summary.total_size, summary.file_count, summary.dir_count) == (0, 0, 0)
    assert summary.by_extension == {}
    assert summary.largest_files == []


def test_nested_empty_directories_counted(tmp_path):
    (tmp_path / "a" / "b" / "c").mkdir(parents=True)
    summary = summarize_tree(tmp_path)
    assert summary.dir_count == 3
    assert summary.file_count == 0


def test_symlinks_are_ignored(tree, tmp_path):
    outside = tmp_path / "outside"
    write(outside / "huge.bin", 5000)
    os.symlink(outside, tree / "linked_dir")
    os.symlink(tree / "src" / "main.py", tree / "main_link.py")
    os.symlink(tmp_path / "does-not-exist", tree / "broken")
    summary = summarize_tree(tree)
    assert summary.total_size == 1310
    assert summary.file_count == 8
    assert summary.dir_count == 2
    assert all("link" not in path for path, _ in summary.largest_files)


def test_hidden_included_by_default(hidden_tree):
    summary = summarize_tree(hidden_tree)
    assert summary.file_count == 6
    assert summary.dir_count == 3
    assert summary.largest_files[0] == (".git/objects/ab.pack", 900)
    assert summary.by_extension[""] == 2


def test_hidden_excluded(hidden_tree):
    summary = summarize_tree(hidden_tree, include_hidden=False)
    assert summary.file_count == 2
    assert summary.total_size == 16
    assert summary.dir_count == 1
    assert summary.largest_files == [("docs/guide.md", 11), ("visible.txt", 5)]
    assert summary.by_extension == {".txt": 1, ".md": 1}


def test_negative_largest_raises(tree):
    with pytest.raises(ValueError):
        summarize_tree(tree, largest=-1)


def test_missing_root_raises(tmp_path):
    with pytest.raises(FileNotFoundError):
        summarize_tree(tmp_path / "nope")


def test_file_root_raises(tree):
    with pytest.raises(NotADirectoryError):
        summarize_tree(tree / "README.md")


def test_files_are_not_modified(tree):
    before = {p: p.stat().st_mtime_ns for p in tree.rglob("*")}
    summarize_tree(tree)
    assert {p: p.stat().st_mtime_ns for p in tree.rglob("*")} == before
