"""The Ray executor gives the same records as the local thread pool (skipped without ray)."""

from __future__ import annotations

import builtins
import os
from pathlib import Path
from typing import Any

import pytest
from test_run_e2e import make_agents, make_suite  # tests/ is on sys.path (pythonpath in pyproject.toml)

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


class _FakeRay:
    """Just enough of the ``ray`` module for a worker to be built outside a cluster."""

    class util:
        @staticmethod
        def get_node_ip_address() -> str:
            return "10.0.0.9"

    @staticmethod
    def get_runtime_context() -> Any:
        class _Ctx:
            def get_node_id(self) -> str:
                return "node-9"

        return _Ctx()


@pytest.mark.parametrize("node_has", ["other-digest", "nothing"])
def test_a_node_without_the_drivers_image_takes_no_rollout(setup: tuple[Path, Path], tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch, node_has: str) -> None:
    """Each actor prepares every task on its node and refuses, naming the image, when it differs."""
    import sys

    from fake_container import NAME, FakeBox, digest_of, fakebox

    from reliabench.errors import SandboxError
    from reliabench.run.executors import ray as ray_mod
    from reliabench.run.executors.ray_bundle import pack_run_bundle
    from reliabench.sandbox import choice as choice_mod

    monkeypatch.setitem(sys.modules, "ray", _FakeRay)
    monkeypatch.setattr(choice_mod, "CONTAINER_RUNTIMES", (NAME,))
    suite_dir, agents_file = setup
    toml = suite_dir / "tasks" / "adder" / "task.toml"
    toml.write_text(toml.read_text() + '[environment]\nimage = "fake/python:1"\n')
    suite = load_suite(suite_dir)
    settings = RunSettings(n=1, workers=1, test_workers="fresh")
    driver = {"adder": ray_mod.EnvironmentKey(NAME, "fake/python:1", digest_of("fake/python:1"))}
    bundle = pack_run_bundle(suite, agents_file, settings.agents_config_hash)
    spec = ray_mod.WorkerSpec(bundle.manifest, settings, {}, driver, ray_mod._versions())
    with fakebox("fake/python:1" if node_has == "other-digest" else "fake/other:2"):
        if node_has == "other-digest":
            FakeBox.catalogue["fake/python:1"] = "sha256:" + "0" * 64  # another build of the same tag
        worker = ray_mod.RayRolloutWorker(spec, bundle.data, slot=0)
        try:
            status = worker.ready()
            assert status.node_ip == "10.0.0.9" and status.problem is not None
            assert "fake/python:1" in status.problem and "\n" not in status.problem
            if node_has == "other-digest":
                assert f"the driver's is {digest_of('fake/python:1')}" in status.problem
            else:
                assert "is not in fakebox: load it first" in status.problem
            with pytest.raises(SandboxError, match="is not set up"):  # no rollout of this node is run
                worker.run("adder", "recorded", 0, 1)
            assert not [c for c, _ in FakeBox.calls if c == "start"]
        finally:
            worker.close()


def test_environment_keys_compare_backend_and_digest() -> None:
    from reliabench.run.executors.ray import EnvironmentKey, check_environments

    host = {"a": EnvironmentKey("bubblewrap")}
    assert check_environments(host, host) is None
    assert "the sandbox backend here is 'namespaces', the driver's 'bubblewrap'" in (
        check_environments({"a": EnvironmentKey("namespaces")}, host) or "")
    boxed = {"b": EnvironmentKey("podman", "img:1", "sha256:aa")}
    assert check_environments({"b": EnvironmentKey("podman", "img:1", "sha256:aa")}, boxed) is None
    assert check_environments({"b": EnvironmentKey("podman", "img:1", "sha256:bb")}, boxed) == (
        "task b: image img:1 is sha256:bb here, the driver's is sha256:aa: load the same image on every node")
