"""Which backend each task gets for --sandbox, and the preflight: sweep, refuse, prepare (exit 2)."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip

from reliabench.errors import PreflightError
from reliabench.sandbox import HOST, EnvironmentSpec, PreparedSpec
from reliabench.sandbox import choice as choice_mod
from reliabench.sandbox.choice import TaskEnvironment, choose_backends, prepare_environments
from reliabench.sandbox.host import HostBackend
from reliabench.sandbox.none import NoSandboxBackend

IMAGE = EnvironmentSpec(image="debian:bookworm", source="s/tasks/b/task.toml:4")


class Counting(NoSandboxBackend):
    """Counts what the preflight asks; refuses images."""

    name = "counting"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def refuse(self, spec: EnvironmentSpec) -> str | None:
        self.asked.append("refuse")
        return super().refuse(spec)

    def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
        self.asked.append("prepare")
        return super().prepare(spec)

    def sweep(self) -> int:
        self.asked.append("sweep")
        return 0


def test_auto_gives_host_tasks_the_strongest_host_backend() -> None:
    backend_or_skip("bubblewrap")
    chosen = choose_backends("auto", {"a": HOST, "b": EnvironmentSpec(workdir="/testbed")})
    assert chosen["a"] is chosen["b"] and chosen["a"].name == "bubblewrap"


def test_auto_without_a_container_runtime_refuses_image_tasks_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(choice_mod, "CONTAINER_RUNTIMES", ("no-such-runtime",))
    with pytest.raises(PreflightError) as info:
        choose_backends("auto", {"a": HOST, "b": IMAGE})
    assert str(info.value) == ("s/tasks/b/task.toml:4: runs in a container (debian:bookworm) and no container "
                               "runtime works here (no-such-runtime: not installed): install podman or docker "
                               "(docs/containers.md), or leave such tasks out with --task")


def test_auto_passes_over_a_container_runtime_that_does_not_work(monkeypatch: pytest.MonkeyPatch) -> None:
    """podman not installed (or not answering) and docker set up: image tasks go to docker."""

    class Runtime(NoSandboxBackend):
        def __init__(self, name: str, why: str | None) -> None:
            self.name, self.why = name, why

        def unavailable(self) -> str | None:
            return self.why

    runtimes = {"first": Runtime("first", "first is not installed: apt-get install first"),
                "second": Runtime("second", None), "third": Runtime("third", "the third does not answer")}
    monkeypatch.setattr(choice_mod, "get_backend", runtimes.__getitem__)
    monkeypatch.setattr(choice_mod.SANDBOXES, "find", lambda name: name)
    monkeypatch.setattr(choice_mod, "CONTAINER_RUNTIMES", ("first", "second"))
    assert choose_backends("auto", {"b": IMAGE})["b"] is runtimes["second"]
    monkeypatch.setattr(choice_mod, "CONTAINER_RUNTIMES", ("first", "third"))
    with pytest.raises(PreflightError) as info:
        choose_backends("auto", {"b": IMAGE})
    assert ("no container runtime works here (first is not installed: apt-get install first; the third does "
            "not answer): install podman or docker") in str(info.value)


def test_an_explicit_backend_runs_every_task_and_warm_is_refused() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        chosen = choose_backends("none", {"a": HOST, "b": IMAGE})
    assert {b.name for b in chosen.values()} == {"none"}
    with pytest.raises(PreflightError, match="--sandbox warm: the warm jail is not a backend of a run"):
        choose_backends("warm", {"a": HOST})


def test_the_preflight_sweeps_once_refuses_every_task_and_prepares_each_spec_once() -> None:
    backend = Counting()
    envs = prepare_environments({"a": HOST, "b": HOST, "c": EnvironmentSpec(workdir=None)},
                                dict.fromkeys("abc", backend))
    # HOST == the third spec: prepared once (a host backend's prepare checks refuse itself)
    assert backend.asked == ["sweep", "refuse", "refuse", "refuse", "prepare", "refuse"]
    assert envs["a"] == TaskEnvironment(backend, PreparedSpec(HOST, "counting"))


def test_refused_tasks_refuse_the_run_in_one_line_with_how_many() -> None:
    backend = Counting()
    with pytest.raises(PreflightError) as info:
        prepare_environments({"a": HOST, "b": IMAGE, "c": IMAGE}, dict.fromkeys("abc", backend))
    assert str(info.value) == ("task b: s/tasks/b/task.toml:4: runs in a container (debian:bookworm); the "
                               "counting backend runs on the host only: use --sandbox auto (or --sandbox "
                               "podman, --sandbox docker) (2 of 3 tasks are refused)")
    assert "prepare" not in backend.asked  # nothing was prepared, nothing started


def test_a_prepare_failure_refuses_the_run(tmp_path: Path) -> None:
    class Broken(Counting):
        def prepare(self, spec: EnvironmentSpec) -> PreparedSpec:
            from reliabench.errors import SandboxError

            raise SandboxError("the runtime is not running: start it with systemctl start podman")

    with pytest.raises(PreflightError, match="task a: the runtime is not running: start it"):
        prepare_environments({"a": HOST}, {"a": Broken()})
    assert isinstance(Broken(), HostBackend)
