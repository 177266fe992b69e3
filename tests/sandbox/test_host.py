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
    assert backend.refuse(HOST) is None
    for spec, word in ((EnvironmentSpec(user="root"), "user"), (EnvironmentSpec(writable_root=True), "writable_root")):
        why = backend.refuse(spec)
        assert why is not None and word in why


@pytest.mark.parametrize("name", ["namespaces", "none"])
def test_a_backend_without_a_private_view_refuses_what_it_cannot_give_by_name(base: Path, name: str) -> None:
    backend = backend_or_skip(name)
    ws = _workspace(base)
    why = backend.refuse(EnvironmentSpec(workdir="/testbed"))
    assert why is not None and "workdir" in why and name in why
    prepared = backend.prepare(HOST)
    other = base / "other"
    other.mkdir()
    for kwargs, message in (
        ({"mounts": [Mount(other, target="/elsewhere")]}, "own path"),
        ({"mounts": [Mount(other, writable=True)]}, "writable"),
        ({"network": "endpoint"}, "endpoint"),
    ):
        with pytest.raises(SandboxError, match=message):
            backend.start(prepared, workspace=ws, slot=2, **kwargs)  # type: ignore[arg-type]
    assert list(ws.iterdir()) == []  # nothing was started


def test_bubblewrap_shows_the_workspace_at_the_specs_workdir(base: Path) -> None:
    backend = backend_or_skip("bubblewrap")
    ws = _workspace(base)
    (ws / "setup.py").write_text("print('repo')\n")
    spec = EnvironmentSpec(workdir="/testbed")
    assert backend.refuse(spec) is None
    env = backend.start(backend.prepare(spec), workspace=ws, slot=2)
    try:
        assert env.workdir == "/testbed"
        res = env.exec(["sh", "-c", "pwd; cat setup.py; echo new > made.txt; mkdir -p sub && echo x > sub/y"])
        assert res.returncode == 0, res.stderr
        assert res.stdout.splitlines() == ["/testbed", "print('repo')"]
        assert (ws / "made.txt").read_text() == "new\n"  # the host's workspace, seen at /testbed
        res = env.exec(["pwd"], cwd="/testbed/sub")
        assert res.stdout == "/testbed/sub\n"
        env.copy_out("/testbed/sub", base / "sub-out", max_bytes=100)
        assert (base / "sub-out" / "y").read_text() == "x\n"
        env.copy_in(base / "sub-out", "/testbed/copied")
        assert (ws / "copied" / "y").read_text() == "x\n"
        with pytest.raises(SandboxError, match="outside"):
            env.exec(["pwd"], cwd="/etc")
    finally:
        env.close()
    for bad in ("testbed", "/usr/src", "/", "/proc/x", "/a/../b"):
        why = backend.refuse(EnvironmentSpec(workdir=bad))
        assert why is not None and "workdir" in why, bad


def test_bubblewrap_writable_mounts_are_writable_and_the_rest_read_only(base: Path) -> None:
    backend = backend_or_skip("bubblewrap")
    ws = _workspace(base)
    out, ro = base / "reports", base / "ro"
    for d in (out, ro):
        d.mkdir()
        os.chmod(d, 0o755)
    (ro / "data.txt").write_text("shared\n")
    env = backend.start(backend.prepare(HOST), workspace=ws, slot=2,
                        mounts=[Mount(out, target="/reports", writable=True), Mount(ro)])
    try:
        res = env.exec(["sh", "-c", f"echo r > /reports/r.xml && cat {ro}/data.txt && "
                                    f"(echo no > {ro}/new.txt || echo denied)"])
        assert res.returncode == 0, res.stderr
        assert res.stdout.splitlines() == ["shared", "denied"]
        assert (out / "r.xml").read_text() == "r\n"
        assert not (ro / "new.txt").exists()
        st = os.stat(out)
        assert (st.st_uid, st.st_gid) == (os.geteuid(), os.getegid())  # handed back after the run
    finally:
        env.close()


@pytest.mark.parametrize("name", HOST_BACKENDS)
def test_what_a_command_plants_in_the_channel_folder_is_never_followed(base: Path, name: str) -> None:
    backend = backend_or_skip(name)
    ws = _workspace(base)
    secret = base / "secret"
    secret.mkdir()
    (secret / "key.txt").write_text("host secret")
    env = backend.start(backend.prepare(HOST), workspace=ws, slot=2)
    try:
        chan = env.channel_dir
        res = env.exec(["sh", "-c", f"cd {chan} && ln -s {secret} up && ln -s {secret}/key.txt key && "
                                    "mkfifo fifo && echo ok > real.txt"])
        assert res.returncode == 0, res.stderr
        env.copy_out(chan, base / "chan-out", max_bytes=1000)
        assert sorted(p.name for p in (base / "chan-out").iterdir()) == ["real.txt"]
        for bad in ("up/key.txt", "key", "fifo"):
            with pytest.raises(SandboxError):
                env.copy_out(f"{chan}/{bad}", base / f"out-{bad.replace('/', '-')}", max_bytes=1000)
        with pytest.raises(SandboxError, match="link"):
            env.copy_in(base / "chan-out", f"{chan}/up/planted")
        assert not (secret / "planted").exists()
    finally:
        env.close()
    assert (secret / "key.txt").read_text() == "host secret"  # close removed the links, not their targets


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
