"""The Ray executor gives the same records as the local thread pool (skipped without ray)."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest
from test_run_e2e import make_agents, make_suite  # tests/ is on sys.path (pytest's rootdir insertion)

from reliabench.agents.config import load_agents
from reliabench.errors import MissingExtraError
from reliabench.run.runner import RunSettings, run_suite
from reliabench.store import RunStore, read_records
from reliabench.tasks.suite import load_suite


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    os.chmod(tmp_path, 0o755)
    monkeypatch.syspath_prepend(str(tmp_path))
    return make_suite(tmp_path), make_agents(tmp_path)


def _comparable(path: Path) -> list[tuple[Any, ...]]:
    return [(r.key, r.status, r.passes, r.tests, tuple(f.rule_id for f in r.findings), r.isolation)
            for r in read_records(path)]


@pytest.mark.slow
def test_ray_executor_matches_local(setup: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("ray")
    suite_dir, agents_file = setup
    suite = load_suite(suite_dir)
    agents = load_agents(agents_file)
    local = run_suite(suite, agents, tmp_path / "local", RunSettings(n=3, workers=2))
    remote = run_suite(suite, agents, tmp_path / "ray", RunSettings(n=3, workers=2, executor="ray"),
                       agents_file=agents_file)
    assert local.executed == remote.executed == 6
    assert _comparable(tmp_path / "local") == _comparable(tmp_path / "ray")
    with RunStore.open_existing(tmp_path / "ray") as store:
        art = store.artifact_dir("adder", "recorded", 1)
    assert "a - b" in (art / "diff.patch").read_text()  # artifacts written by the driver
    assert (art / "files" / "adder.py").is_file()
    # resuming a Ray run with the local executor is the same run (the executor is not identity)
    again = run_suite(suite, agents, tmp_path / "ray", RunSettings(n=3, workers=2))
    assert again.resumed and again.executed == 0


def test_ray_missing_is_a_clear_error(setup: tuple[Path, Path], tmp_path: Path,
                                      monkeypatch: pytest.MonkeyPatch) -> None:
    suite_dir, agents_file = setup
    real_import = builtins.__import__

    def no_ray(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "ray" or name.startswith("ray."):
            raise ImportError("No module named 'ray'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_ray)
    suite = load_suite(suite_dir)
    agents = [a for a in load_agents(agents_file) if a.name == "recorded"]
    with pytest.raises(MissingExtraError, match=r"pip install 'reliabench\[ray\]'"):
        run_suite(suite, agents, tmp_path / "run", RunSettings(n=1, executor="ray"), agents_file=agents_file)


def test_executor_is_validated() -> None:
    with pytest.raises(ValueError, match="executor must be one of local, ray, got 'dask'"):
        RunSettings(n=1, executor="dask")
