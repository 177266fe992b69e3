"""Workspace confinement helpers shared by the adapters (agents.base)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reliabench.agents import (
    AgentRequest,
    WorkspacePathError,
    delete_workspace_paths,
    resolve_in_workspace,
    write_prompt_file,
    write_workspace_files,
)
from reliabench.errors import InvalidArgumentError


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "ws"
    w.mkdir()
    return w


@pytest.mark.parametrize(
    ("path", "why"),
    [
        ("/etc/passwd", "absolute"),
        ("../x.py", "'..'"),
        ("a/../../x.py", "'..'"),
        ("a\\b.py", "separator"),
        ("", "non-empty"),
        (".", "names no file"),
        ("a\0b", "non-empty relative"),
    ],
)
def test_rejects_bad_paths(ws: Path, path: str, why: str) -> None:
    with pytest.raises(WorkspacePathError, match=why):
        resolve_in_workspace(ws, path)


def test_rejects_symlink_escape(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / "link").symlink_to(outside)
    (ws / "flink").symlink_to(outside / "f.py")
    with pytest.raises(WorkspacePathError, match="outside the workspace"):
        write_workspace_files(ws, {"link/evil.py": "x"})
    with pytest.raises(WorkspacePathError, match="outside the workspace"):
        write_workspace_files(ws, {"flink": "x"})
    assert list(outside.iterdir()) == []


def test_symlink_inside_is_fine(ws: Path) -> None:
    (ws / "real").mkdir()
    (ws / "alias").symlink_to(ws / "real")
    assert write_workspace_files(ws, {"alias/a.py": "A"}) == ["alias/a.py"]
    assert (ws / "real" / "a.py").read_text() == "A"


def test_bad_path_writes_nothing(ws: Path) -> None:
    with pytest.raises(WorkspacePathError):
        write_workspace_files(ws, {"good.py": "x", "../bad.py": "y"})
    assert list(ws.iterdir()) == []


def test_write_creates_folders_and_refuses_dirs(ws: Path) -> None:
    write_workspace_files(ws, {"pkg/sub/m.py": "m = 1\n"})
    assert (ws / "pkg/sub/m.py").read_text() == "m = 1\n"
    with pytest.raises(WorkspacePathError, match="is a directory"):
        write_workspace_files(ws, {"pkg": "x"})


def test_delete(ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "keep.txt"
    outside.write_text("keep")
    write_workspace_files(ws, {"a.py": "", "d/b.py": ""})
    (ws / "link").symlink_to(outside)
    assert delete_workspace_paths(ws, ["a.py", "d", "link", "missing.py"]) == ["a.py", "d", "link"]
    assert sorted(os.listdir(ws)) == []
    assert outside.read_text() == "keep"  # the link was removed, not its target
    with pytest.raises(WorkspacePathError):
        delete_workspace_paths(ws, ["../keep.txt"])


def test_write_prompt_file(ws: Path, tmp_path: Path) -> None:
    req = AgentRequest("t", "do it", ws, seed=1, rollout=0, timeout_s=1.0)
    out = write_prompt_file(req, tmp_path / "prompts")
    assert out.prompt_file is not None
    assert out.prompt_file.read_text() == "do it"
    assert write_prompt_file(out, tmp_path / "elsewhere") is out
    with pytest.raises(InvalidArgumentError, match="outside the workspace"):
        write_prompt_file(req, ws / "sub")
