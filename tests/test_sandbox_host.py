"""Host environments: the environment contract over bubblewrap, namespaces and none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from reliabench.errors import SandboxError
from reliabench.sandbox.environment import HOST, Environment, EnvironmentBackend, EnvironmentSpec, Mount
from reliabench.sandbox.host import copy_tree_bounded
from tests.sandbox_helpers import backend_or_skip

HOST_BACKENDS = ["bubblewrap", "namespaces", "none"]


def _workspace(base: Path) -> Path:
    ws = base / "ws"
    ws.mkdir()
    os.chmod(base, 0o755)
    os.chmod(ws, 0o755)
    return ws


@pytest.mark.parametrize("name", HOST_BACKENDS)
def test_a_host_environment_runs_commands_with_stdin_and_copies_out(base: Path, name: str) -> None:
    backend = backend_or_skip(name)
    assert isinstance(backend, EnvironmentBackend)
    ws = _workspace(base)
    env = backend.start(backend.prepare(HOST), workspace=ws, slot=2)
    assert isinstance(env, Environment)
    try:
        assert env.workdir == os.path.realpath(ws) and env.image is None
        res = env.exec(["sh", "-c", "cat > got.txt; echo done"], stdin=b"hello\n")
        assert (res.returncode, res.stdout.strip(), res.isolation) == (0, "done", name)
        env.copy_out(env.workdir + "/got.txt", base / "out.txt", max_bytes=100)
        assert (base / "out.txt").read_text() == "hello\n"
        with pytest.raises(SandboxError, match="more than 3 bytes"):
            env.copy_out(env.workdir + "/got.txt", base / "small.txt", max_bytes=3)
        assert not (base / "small.txt").exists()
        with pytest.raises(FileNotFoundError):
            env.copy_out(env.workdir + "/nothing", base / "none.txt", max_bytes=3)
    finally:
        env.close()
        env.close()  # idempotent
    assert not env.channel_host.exists()
    with pytest.raises(SandboxError, match="closed"):
        env.exec(["true"])


def test_copy_out_never_follows_a_link_the_agent_planted(base: Path) -> None:
    backend = backend_or_skip("bubblewrap")
    ws = _workspace(base)
    secret = base / "secret.txt"
    secret.write_text("host secret")
    (ws / "dir").mkdir()
    (ws / "dir" / "real.txt").write_text("ok")
    os.symlink(secret, ws / "dir" / "link.txt")
    os.symlink(base, ws / "up")
    env = backend.start(backend.prepare(HOST), workspace=ws, slot=2)
    try:
        env.copy_out(env.workdir + "/dir", base / "copy", max_bytes=1000)
        assert sorted(p.name for p in (base / "copy").iterdir()) == ["real.txt"]
        with pytest.raises(SandboxError):
            env.copy_out(env.workdir + "/dir/link.txt", base / "l.txt", max_bytes=1000)
        with pytest.raises(SandboxError, match="link"):
            env.copy_in(secret, env.workdir + "/up/planted.txt")  # never through the agent's link
        assert not (base / "planted.txt").exists()
        with pytest.raises(SandboxError, match="outside"):
            env.copy_in(secret, str(base / "elsewhere.txt"))
    finally:
        env.close()


def test_a_host_backend_refuses_images_and_other_workdirs_by_name() -> None:
    backend = backend_or_skip("none" if os.geteuid() else "bubblewrap")
    image = EnvironmentSpec(image="debian:bookworm", source="suite/tasks/t/task.toml:3")
    why = backend.refuse(image)
    assert why is not None and "suite/tasks/t/task.toml:3" in why and "--sandbox podman" in why
    with pytest.raises(SandboxError, match="container"):
        backend.prepare(image)
    assert backend.refuse(EnvironmentSpec(workdir="/testbed")) is not None
    assert backend.refuse(HOST) is None


def test_mounts_at_another_path_are_refused_on_the_host(base: Path) -> None:
    backend = backend_or_skip("bubblewrap")
    ws = _workspace(base)
    with pytest.raises(SandboxError, match="own path"):
        backend.start(backend.prepare(HOST), workspace=ws, slot=2,
                      mounts=[Mount(base, target="/elsewhere")])


def test_copy_tree_bounded_removes_a_partial_copy(base: Path) -> None:
    src = base / "src"
    src.mkdir()
    for i in range(5):
        (src / f"f{i}").write_bytes(b"x" * 10)
    with pytest.raises(SandboxError):
        copy_tree_bounded(src, base / "dst", max_bytes=25)
    assert not (base / "dst").exists()
    assert copy_tree_bounded(src, base / "dst2", max_bytes=50) == 50
    with pytest.raises(FileExistsError):
        copy_tree_bounded(src, base / "dst2", max_bytes=50)
