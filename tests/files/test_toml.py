"""TOML configuration files (reliabench.files.toml): every failure one ConfigError naming the file."""

from __future__ import annotations

from pathlib import Path

import pytest

from reliabench.errors import ConfigError
from reliabench.files.toml import read_toml


def test_reads_a_table(tmp_path: Path) -> None:
    p = tmp_path / "agents.toml"
    p.write_text('[agents.a]\nkind = "replay"\nn = 3\n', encoding="utf-8")
    assert read_toml(p, "an agents file") == {"agents": {"a": {"kind": "replay", "n": 3}}}


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda d: d / "missing.toml", r"missing\.toml: no such file \(expected an agents file\)"),
        (lambda d: d, r": is a directory \(expected an agents file\)"),
    ],
    ids=["missing", "directory"],
)
def test_missing_and_directory(tmp_path: Path, make: object, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        read_toml(make(tmp_path), "an agents file")  # type: ignore[operator]
    assert "\n" not in str(info.value)


def test_invalid_toml_names_file_and_position(tmp_path: Path) -> None:
    p = tmp_path / "run.toml"
    p.write_text('a = 1\nb = = 2\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        read_toml(p, "a run file")
    assert str(info.value).startswith(f"{p}: invalid TOML (")
    assert "line 2" in str(info.value)
    assert info.value.path == str(p)


def test_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "sec.toml"
    p.write_bytes(b'name = "\xff"\n')
    with pytest.raises(ConfigError, match=r"sec\.toml: not UTF-8 \(.*position 8"):
        read_toml(p, "a security policy")
