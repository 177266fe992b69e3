"""The host toolchains' descriptions and the trusted compile caches."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reliabench.hidden_tests.toolchains import (
    CACHE_ENV,
    TOOLCHAINS_ENV,
    Toolchain,
    TrustedCache,
    cache_root,
    missing_toolchain,
    toolchain_for,
    toolchains_root,
)


def test_every_language_of_the_polyglot_suite_has_a_toolchain(tmp_path: Path) -> None:
    for language, programs in (("go", ("go",)), ("rust", ("cargo", "rustc")), ("java", ("javac", "java")),
                               ("javascript", ("node",)), ("cpp", ("cmake", "make", "c++")), ("python", ("python3",))):
        tc = toolchain_for(language, tmp_path)
        assert tc.programs == programs
        assert Path("/etc/alternatives") in tc.mounts
    rust = toolchain_for("rust", tmp_path)
    assert rust.files == {"cargo-home/config.toml": tmp_path / "cargo" / "config.toml"}
    assert rust.env["CARGO_TARGET_DIR"] == "{scratch}/target" and rust.cache_dirs == ("target",)
    assert toolchain_for("javascript", tmp_path).links == {"node_modules": tmp_path / "node" / "node_modules"}
    # the build outputs and caches of a run live in its own scratch folder, never in a shared place
    for language in ("go", "rust", "cpp"):
        tc = toolchain_for(language, tmp_path)
        assert tc.cache_dirs and all(v.startswith(("{scratch}", "{workdir}")) or "/" not in v
                                     for v in tc.env.values()), tc.env


def test_a_missing_program_or_file_says_how_to_install_it(tmp_path: Path) -> None:
    assert missing_toolchain(Toolchain("x")) is None
    why = missing_toolchain(Toolchain("x", programs=("no-such-program-here",)))
    assert why is not None and "no-such-program-here" in why and "make polyglot" in why
    why = missing_toolchain(Toolchain("x", links={"node_modules": tmp_path / "none"}))
    assert why is not None and str(tmp_path / "none") in why


def test_roots_come_from_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(TOOLCHAINS_ENV, str(tmp_path / "tc"))
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    assert (toolchains_root(), cache_root()) == (tmp_path / "tc", tmp_path / "cache")
    monkeypatch.delenv(TOOLCHAINS_ENV)
    monkeypatch.delenv(CACHE_ENV)
    assert toolchains_root() == Path("/opt/reliabench/toolchains")
    assert cache_root().name == "toolchains"


def test_a_trusted_cache_is_keyed_by_content_seeded_with_old_mtimes_and_grows_only_by_harvest(tmp_path: Path) -> None:
    task = tmp_path / "task"
    (task / "tests").mkdir(parents=True)
    (task / "tests" / "t.go").write_text("package t\n")
    tc = toolchain_for("go", tmp_path)
    cache = TrustedCache.of(task, tc, tmp_path / "caches")
    assert cache == TrustedCache.of(task, tc, tmp_path / "caches")
    (task / "tests" / "t.go").write_text("package t // changed\n")
    assert TrustedCache.of(task, tc, tmp_path / "caches") != cache

    scratch = tmp_path / "scratch"
    (scratch / "go-build" / "ab").mkdir(parents=True)
    (scratch / "go-build" / "ab" / "entry-d").write_bytes(b"object")
    (scratch / "elsewhere.txt").write_text("not a cache folder")
    os.symlink("/etc/passwd", scratch / "go-build" / "ab" / "link")
    assert cache.harvest(scratch) == 1
    assert cache.harvest(scratch) == 0  # present already
    assert sorted(p.name for p in cache.folder.rglob("*") if p.is_file()) == ["entry-d"]
    old = 1_000_000_000
    os.utime(cache.folder / "go-build" / "ab" / "entry-d", (old, old))

    run = tmp_path / "run"
    run.mkdir()
    cache.seed(run)
    seeded = run / "go-build" / "ab" / "entry-d"
    assert seeded.read_bytes() == b"object" and int(seeded.stat().st_mtime) == old
    seeded.write_bytes(b"poison")  # a run writes its own copy only
    assert (cache.folder / "go-build" / "ab" / "entry-d").read_bytes() == b"object"
    cache.clear()
    assert not cache.folder.exists()
