"""Building environments: cached by spec hash, a failed build removed and named, never half kept."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from reliabench.repository.envspec import RepoEnvSpec, spec_hash
from reliabench.repository.venv import EnvironmentBuildError, build_base, cache_root, task_key, venv_env


def test_a_failed_build_is_removed_and_its_log_kept(tmp_path: Path) -> None:
    calls: list[list[str]] = []

    def pip_fails(argv: Sequence[str], cwd: Path) -> tuple[int, str]:
        calls.append(list(argv))
        return (1, "ERROR: No matching distribution found for nothere==0") if "pip" in argv else (0, "")

    spec = RepoEnvSpec(packages=("nothere==0",))
    with pytest.raises(EnvironmentBuildError, match="No matching distribution") as info:
        build_base(spec, cache=tmp_path, runner=pip_fails, where="task t")
    assert "task t: building the environment failed" in str(info.value)
    root = tmp_path / "base" / spec_hash(spec)
    assert not root.exists() and root.with_name(root.name + ".failed.log").is_file()
    with pytest.raises(EnvironmentBuildError):  # tried again next time, not cached as a failure
        build_base(spec, cache=tmp_path, runner=pip_fails)
    assert sum("venv" in c for c in calls) == 2


def test_a_built_env_is_reused(tmp_path: Path) -> None:
    runs: list[list[str]] = []

    def fake(argv: Sequence[str], cwd: Path) -> tuple[int, str]:
        runs.append(list(argv))
        if argv[1:3] == ["-m", "venv"]:
            (Path(argv[3]) / "bin").mkdir(parents=True)
        return 0, "ok"

    spec = RepoEnvSpec(packages=("a==1",))
    first = build_base(spec, cache=tmp_path, runner=fake)
    again = build_base(spec, cache=tmp_path, runner=fake)
    assert first.built and not again.built and first.venv == again.venv and len(runs) == 2
    assert first.key == spec_hash(spec)
    assert task_key(first, "tree1", ["pip"], "/testbed") != task_key(first, "tree2", ["pip"], "/testbed")
    assert task_key(first, "t", ["pip"], "/testbed", {"A": "1"}) != task_key(first, "t", ["pip"], "/testbed")


def test_an_image_spec_has_no_venv(tmp_path: Path) -> None:
    with pytest.raises(EnvironmentBuildError, match="container backend"):
        build_base(RepoEnvSpec(image="x"), cache=tmp_path)


def test_cache_root_can_be_moved(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RELIABENCH_REPO_ENV_CACHE", str(tmp_path))
    assert cache_root() == tmp_path


def test_venv_env_has_no_network_index_and_the_venvs_first() -> None:
    from types import SimpleNamespace

    task = SimpleNamespace(venv=Path("/c/t/venv"), base=SimpleNamespace(venv=Path("/c/b/venv")))
    env = venv_env(task, {"X": "1"})  # type: ignore[arg-type]
    assert env["PATH"].startswith("/c/t/venv/bin:/c/b/venv/bin:") and env["PIP_NO_INDEX"] == "1"
    assert env["X"] == "1"
