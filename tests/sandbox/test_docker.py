"""The docker backend (sandbox/docker.py): the containment self-check, finding the daemon, a
daemon that is not running or dies mid-run, and the user's Docker configuration kept out. The
contract itself is tested on both runtimes in tests/sandbox/test_containers.py."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from container_helpers import (
    SLOTS,
    SocketProxy,
    container_backend_or_skip,
    container_exists,
    documented_selfcheck,
    started,
    workspace_dir,
)

from reliabench.errors import SandboxError
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE
from reliabench.sandbox.docker import RELIABENCH_DOCKER_SOCKET, DockerBackend
from reliabench.sandbox.environment import EnvironmentSpec
from reliabench.sandbox.selfcheck import check_backend, run_selfcheck

DEAD = "unix:///nonexistent/reliabench-test/docker.sock"


def test_the_containment_self_check_runs_and_gives_the_documented_table() -> None:
    """Every check in an environment of an image task (the workspace at /workspace, as runs give it)."""
    backend = container_backend_or_skip("docker")
    report = check_backend(backend, slot=SLOTS["docker"], spec=EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    assert report.python == "python3"
    assert {r.check: r.status for r in report.results} == documented_selfcheck("docker"), \
        [r for r in report.results if r.status != "passed"]


def test_sandbox_check_through_the_registry() -> None:
    container_backend_or_skip("docker")
    report = run_selfcheck("docker", slot=SLOTS["docker"], checks=["network", "kernel_keyring"])
    assert report.backend == "docker" and report.passed


def test_the_daemon_is_found_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "unix:///from/env.sock")
    assert DockerBackend(host="unix:///given.sock").docker_host() == "unix:///given.sock"
    assert DockerBackend().docker_host() == "unix:///from/env.sock"
    monkeypatch.delenv("DOCKER_HOST")
    monkeypatch.setattr("reliabench.sandbox.docker.RELIABENCH_DOCKER_SOCKET", "/nonexistent/docker.sock")
    assert DockerBackend().docker_host() == "unix:///var/run/docker.sock"
    assert RELIABENCH_DOCKER_SOCKET.endswith("/reliabench-docker/docker.sock")


def test_a_daemon_that_does_not_answer_is_refused_with_the_fix() -> None:
    backend = DockerBackend(host=DEAD)
    if backend._binary() is None:
        pytest.skip("docker is not installed")
    why = backend.refuse(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    assert why is not None and DEAD in why and "scripts/containers/dockerd.sh start" in why and "\n" not in why
    with pytest.raises(SandboxError, match="does not answer"):
        backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    with workspace_dir() as ws, pytest.raises(SandboxError, match="does not answer"):
        backend.run(["true"], workdir=ws)


def test_a_daemon_lost_mid_run_is_the_harness_failure() -> None:
    backend = container_backend_or_skip("docker", host=DockerBackend().docker_host())
    assert isinstance(backend, DockerBackend)
    with workspace_dir() as ws, started(backend, ws) as env:
        assert env.exec(["true"]).returncode == 0
        live = backend.host
        backend.host = DEAD  # every later call of this backend finds no daemon
        try:
            with pytest.raises(SandboxError, match=r"failed to run a command .* does not answer"):
                env.exec(["true"])
        finally:
            backend.host = live


def test_a_daemon_that_dies_during_a_command_is_the_harness_failure(base: Path) -> None:
    """The client of a command in flight loses its daemon: exit 255, nothing on stderr.

    That status is also what a command's own ``exit(255)`` gives, so the daemon is asked: gone,
    the command's result is the harness's failure (``SandboxError``: infra_error), never the
    command's; alive, the status is the command's own.
    """
    live = container_backend_or_skip("docker")
    proxy = SocketProxy(base / "docker.sock", live.docker_host().removeprefix("unix://"))
    backend = DockerBackend(host=proxy.address)
    with workspace_dir() as ws:
        env = backend.start(backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE)), workspace=ws,
                            slot=SLOTS["docker"])
        try:
            assert env.exec(["sh", "-c", "exit 255"]).returncode == 255  # the command's own status
            threading.Timer(1.0, proxy.cut).start()
            with pytest.raises(SandboxError, match="does not answer"):
                env.exec(["sh", "-c", "echo started; sleep 20"])
            with pytest.raises(SandboxError):
                env.close()  # it cannot be removed without its daemon: a later sweep does it
        finally:
            proxy.cut()
            env.close()
            live._remove(env.container_id)
        assert not container_exists(live, env.container_id)


def test_the_users_docker_config_plays_no_part(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A ~/.docker/config.json with proxies would put them into every container the CLI makes."""
    backend = container_backend_or_skip("docker", host=DockerBackend().docker_host())
    config = tmp_path / ".docker"
    config.mkdir()
    proxy = {"proxies": {"default": {"httpProxy": "http://user-proxy:3128", "noProxy": "x"}}}
    (config / "config.json").write_text(json.dumps(proxy))
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DOCKER_CONFIG", str(config))
    with workspace_dir() as ws, started(backend, ws) as env:
        assert "user-proxy" not in env.exec(["cat", "/proc/1/environ"]).stdout
        assert "user-proxy" not in env.exec(["sh", "-c", "env"], env=None).stdout
    assert backend._client_env()["DOCKER_CONFIG"] != str(config)
