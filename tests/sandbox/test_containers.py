"""The container environments (sandbox/containers.py): the contract on podman and on docker.

The first part needs no runtime (the seccomp profile against the host filter, owners, tar
streams); the rest runs every promise of the environment contract on both runtimes, and
skips where a runtime is missing (fails in CI, where scripts/containers/setup.sh installs them).
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from container_helpers import (
    RUNTIMES,
    SHARED_SLOTS,
    SLOTS,
    container_backend_or_skip,
    container_exists,
    started,
    workspace_dir,
)
from hypothesis import given, settings
from hypothesis import strategies as st

from reliabench.errors import SandboxError
from reliabench.files.untrusted import remove_tree
from reliabench.sandbox import containers as containers_mod
from reliabench.sandbox.base import Limits
from reliabench.sandbox.containers import (
    DEFAULT_TEST_IMAGE,
    LABEL_OWNER,
    ContainerBackend,
    ContainerEnvironment,
    _bad_workdir,
    _exited,
    _extract_bounded,
    _ns_pids,
    _write_tar,
    owner_alive,
    owner_token,
    seccomp_profile,
)
from reliabench.sandbox.environment import EnvironmentSpec, Mount
from reliabench.sandbox.seccomp import (
    _PERSONALITY_ALLOWED,
    CLONE_NAMESPACE_FLAGS,
    DENIED_GROUPS,
    SYSCALL_NUMBERS,
)
from reliabench.sandbox.slots import slot_uid

# ------------------------------------------------------------------------------------------
# the seccomp profile says what the host filter says
# ------------------------------------------------------------------------------------------


def _denied(profile: dict[str, object], name: str, arg0: int = 0) -> int | None:
    """The errno a profile returns for ``name(arg0, ...)``, or None when it allows the call."""
    rules = profile["syscalls"]
    assert isinstance(rules, list)
    for rule in rules:
        if name not in rule["names"]:
            continue
        ok = True
        for cond in rule.get("args", []):
            if cond["op"] == "SCMP_CMP_MASKED_EQ":
                ok &= arg0 & cond["value"] == cond["valueTwo"]
            elif cond["op"] == "SCMP_CMP_EQ":
                ok &= arg0 == cond["value"]
            else:  # pragma: no cover - the profile uses no other comparison
                raise AssertionError(cond)
        if ok:
            assert rule["action"] == "SCMP_ACT_ERRNO"
            return int(rule["errnoRet"])
    return None


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_profile_denies_every_call_of_the_host_filter(machine: str) -> None:
    profile = seccomp_profile(machine)
    assert profile["defaultAction"] == "SCMP_ACT_ALLOW"
    assert profile["architectures"] == [{"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}[machine]]
    for group in DENIED_GROUPS:
        for name in group.syscalls:
            if name in SYSCALL_NUMBERS[machine]:
                assert _denied(profile, name) == group.errno, name
    assert _denied(profile, "read") is None and _denied(profile, "clone", 0x11) is None  # fork's flags


def test_profile_clone_rule_is_the_host_filters() -> None:
    profile = seccomp_profile("x86_64")
    for bit in range(32):
        flag = 1 << bit
        assert (_denied(profile, "clone", flag | 0x11) is not None) == bool(flag & CLONE_NAMESPACE_FLAGS), hex(flag)


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.sampled_from(_PERSONALITY_ALLOWED), st.integers(0, 2**32 - 1),
                 st.sampled_from([0xFFFFFFFF & ~v for v in (0x8, 0x20000, 0x20008)])))
def test_profile_personality_rule_is_the_host_filters(value: int) -> None:
    # the host filter allows exactly Docker's values (compared on the low 32 bits)
    assert (_denied(seccomp_profile("x86_64"), "personality", value) is None) == (value in _PERSONALITY_ALLOWED)


def test_profile_unknown_machine() -> None:
    with pytest.raises(SandboxError, match="no seccomp system-call table for machine 'mips'"):
        seccomp_profile("mips")


# ------------------------------------------------------------------------------------------
# owners, paths, tar streams
# ------------------------------------------------------------------------------------------


def test_owner_token_names_a_live_process_and_no_other() -> None:
    token = owner_token()
    assert owner_alive(token)
    pid, start, boot = token.split(":")
    assert not owner_alive(f"{pid}:{int(start) + 1}:{boot}")  # the pid reused by a later process
    assert not owner_alive(f"{pid}:{start}:another-boot")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    dead = owner_token(proc.pid)
    proc.wait()
    assert not owner_alive(dead)
    assert not owner_alive("garbage") and not owner_alive("x:1:2")


def test_threads_starting_containers_at_once_share_one_seccomp_profile() -> None:
    """Each writes its own temporary file and swaps it in (one shared name raced: FileNotFoundError)."""
    from concurrent.futures import ThreadPoolExecutor

    from reliabench.sandbox.docker import DockerBackend
    from reliabench.sandbox.seccomp import filter_unavailable_reason

    if filter_unavailable_reason() is not None:
        pytest.skip(f"no seccomp filter here: {filter_unavailable_reason()}")
    for _ in range(200):
        backend = DockerBackend()
        barrier = threading.Barrier(8)

        def write(_: int, backend: DockerBackend = backend, barrier: threading.Barrier = barrier) -> Path | None:
            barrier.wait()
            return backend._seccomp_path()

        with ThreadPoolExecutor(8) as pool:
            paths = set(pool.map(write, range(8)))
        assert len(paths) == 1
        (path,) = paths
        assert path is not None and json.loads(path.read_text()) == seccomp_profile()
        assert sorted(p.name for p in path.parent.iterdir()) == ["seccomp.json"]  # no temporary file left
        shutil.rmtree(path.parent)


def test_a_zombie_is_no_live_process_of_its_namespace() -> None:
    """A process that exited and was not reaped is left out (the kill loop cannot kill it)."""
    own_ns = os.readlink("/proc/self/ns/pid")
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    try:
        deadline = time.monotonic() + 30
        while not _exited(proc.pid):
            assert time.monotonic() < deadline, "the child did not exit"
            time.sleep(0.01)
        assert proc.pid not in _ns_pids(own_ns)  # a zombie now: not reaped yet
        assert os.getpid() in _ns_pids(own_ns)
        assert not _exited(os.getpid())
    finally:
        proc.wait()
    assert _exited(proc.pid)  # gone


@pytest.mark.parametrize(("workdir", "why"), [
    ("workspace", "absolute"), ("/", "absolute"), ("/a/../b", "normalised"), ("/proc/x", "/proc"),
    ("/run/reliabench", "/run/reliabench"), ("/dev", "/dev"), ("/a,b", "comma"),
])
def test_bad_workdirs(workdir: str, why: str) -> None:
    assert why in (_bad_workdir(workdir) or "")


def test_good_workdirs() -> None:
    assert _bad_workdir("/testbed") is None and _bad_workdir("/workspace") is None


def _archive(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _member(name: str, kind: bytes = tarfile.REGTYPE, data: bytes | None = b"x", link: str = "") -> tuple[
        tarfile.TarInfo, bytes | None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info, data if kind == tarfile.REGTYPE else None


def test_extract_keeps_files_and_folders_and_skips_links(tmp_path: Path) -> None:
    secret = tmp_path / "secret"
    secret.write_text("SECRET")
    arc = _archive(tmp_path / "a.tar", [
        _member("./out", tarfile.DIRTYPE), _member("./out/a.txt", data=b"hello"),
        _member("./out/sub", tarfile.DIRTYPE), _member("./out/sub/b.txt", data=b"b"),
        _member("./out/link", tarfile.SYMTYPE, link=str(secret)),
        _member("./out/hard", tarfile.LNKTYPE, link="out/a.txt"),
        _member("./out/fifo", tarfile.FIFOTYPE),
        _member("./out/dev", tarfile.CHRTYPE),
        _member("./out/a.txt", data=b"second copy"),  # a duplicate never overwrites
    ])
    target = tmp_path / "copy"
    _extract_bounded(arc, "out", target, max_bytes=100, what="/x/out")
    assert sorted(p.relative_to(target).as_posix() for p in target.rglob("*")) == ["a.txt", "sub", "sub/b.txt"]
    assert (target / "a.txt").read_text() == "hello"


@pytest.mark.parametrize("name", ["./out/../../escaped", "/abs/out", "./other", "./out/../out2/x"])
def test_extract_refuses_names_outside_the_source(tmp_path: Path, name: str) -> None:
    arc = _archive(tmp_path / "a.tar", [_member("./out", tarfile.DIRTYPE), _member(name)])
    with pytest.raises(SandboxError, match="the archive holds"):
        _extract_bounded(arc, "out", tmp_path / "copy", max_bytes=100, what="/x/out")
    assert not (tmp_path / "copy").exists() and not (tmp_path / "escaped").exists()


def test_extract_is_bounded_and_removes_what_it_wrote(tmp_path: Path) -> None:
    arc = _archive(tmp_path / "a.tar", [_member("./out", tarfile.DIRTYPE), _member("./out/a", data=b"x" * 60),
                                        _member("./out/b", data=b"y" * 60)])
    with pytest.raises(SandboxError, match="more than 100 bytes"):
        _extract_bounded(arc, "out", tmp_path / "copy", max_bytes=100, what="/x/out")
    assert not (tmp_path / "copy").exists()


def test_extract_refuses_a_link_at_the_top(tmp_path: Path) -> None:
    arc = _archive(tmp_path / "a.tar", [_member("./out", tarfile.SYMTYPE, link="/etc/passwd")])
    with pytest.raises(SandboxError, match="not a regular file or folder"):
        _extract_bounded(arc, "out", tmp_path / "copy", max_bytes=100, what="/x/out")
    empty = _archive(tmp_path / "e.tar", [])
    with pytest.raises(FileNotFoundError):
        _extract_bounded(empty, "out", tmp_path / "copy", max_bytes=100, what="/x/out")


def test_write_tar_skips_links_and_keeps_modes(tmp_path: Path) -> None:
    src = tmp_path / "src"
    (src / "d").mkdir(parents=True)
    (src / "d" / "run.sh").write_text("#!/bin/sh\n")
    os.chmod(src / "d" / "run.sh", 0o755)
    (src / "link").symlink_to("/etc/passwd")
    buf = io.BytesIO()
    _write_tar(src, "tmp/tests", buf)
    buf.seek(0)
    with tarfile.open(fileobj=buf) as tar:
        members = {m.name: m for m in tar}
    assert sorted(members) == ["tmp/tests", "tmp/tests/d", "tmp/tests/d/run.sh"]
    assert members["tmp/tests/d/run.sh"].mode == 0o755
    with pytest.raises(SandboxError, match="not a regular file or folder"):
        _write_tar(src / "link", "x", io.BytesIO())


# ------------------------------------------------------------------------------------------
# the contract on both runtimes
# ------------------------------------------------------------------------------------------


@pytest.fixture(params=RUNTIMES)
def backend(request: pytest.FixtureRequest) -> ContainerBackend:
    return container_backend_or_skip(request.param)


@pytest.fixture(scope="module", params=RUNTIMES)
def shared(request: pytest.FixtureRequest) -> Iterator[tuple[ContainerBackend, ContainerEnvironment, Path]]:
    """One environment per runtime for the checks that change nothing but its workspace."""
    backend = container_backend_or_skip(request.param)
    with workspace_dir() as ws:
        (ws / "hello.txt").write_text("hello\n")
        with started(backend, ws, limits=Limits(memory_bytes=512 * 1024**2, tmp_bytes=32 * 1024**2),
                     slot=SHARED_SLOTS[backend.name]) as env:
            yield backend, env, ws


def _py(env: ContainerEnvironment, code: str, **kw: object) -> tuple[int | None, str, str]:
    result = env.exec(["python3", "-c", textwrap.dedent(code)], **kw)  # type: ignore[arg-type]
    return result.returncode, result.stdout, result.stderr


def test_exec_runs_in_the_workspace_with_stdin_and_cwd(shared: tuple[ContainerBackend, ContainerEnvironment,
                                                                     Path]) -> None:
    backend, env, _ws = shared
    assert (env.backend, env.isolation, env.workdir, env.channel_dir) == (backend.name, backend.name,
                                                                           "/workspace", "/run/reliabench")
    assert env.image is not None and env.image.digest.startswith("sha256:") and env.keeps_processes
    result = env.exec(["cat", "hello.txt", "-"], stdin=b"from stdin")
    assert (result.returncode, result.stdout, result.isolation) == (0, "hello\nfrom stdin", backend.name)
    assert result.seccomp is True and result.killed_reason is None and not result.timed_out
    assert env.exec(["pwd"]).stdout == "/workspace\n"
    assert env.exec(["pwd"], cwd="/tmp").stdout == "/tmp\n"
    assert env.exec(["sh", "-c", "exit 3"]).returncode == 3
    missing = env.exec(["no-such-command-xyz"])
    assert missing.returncode == 127 and "no-such-command-xyz" in missing.stderr


def test_exec_gets_exactly_the_environment_given(shared: tuple[ContainerBackend, ContainerEnvironment, Path],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    _, env, _ = shared
    monkeypatch.setenv("RB_HOST_SECRET", "must-not-leak")
    monkeypatch.setenv("HTTP_PROXY", "http://host-proxy:3128")
    odd = {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "SPACES": " a b ", "EQ": "=x=", "QUOTES": "'\"", "DOLLAR": "$HOME ${PATH}",
           "UNICODE": "é✓", "EMPTY": "", "HASH": "#not a comment"}
    out = env.exec(["python3", "-c", "import os, json; print(json.dumps(dict(os.environ)))"], env=odd)
    assert json.loads(out.stdout) == odd
    default = json.loads(env.exec(["python3", "-c", "import os, json; print(json.dumps(dict(os.environ)))"]).stdout)
    assert default["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"  # the image's
    assert default["LANG"] == "C.UTF-8" and default["HOME"] == "/tmp"
    assert not {"RB_HOST_SECRET", "HTTP_PROXY", "HOSTNAME", "container"} & set(default)
    with pytest.raises(SandboxError, match="newline"):
        env.exec(["true"], env={"A": "x\ny"})
    with pytest.raises(SandboxError, match="cannot be given"):
        env.exec(["true"], env={"A B": "x"})


def test_the_user_the_capabilities_and_the_filter(shared: tuple[ContainerBackend, ContainerEnvironment,
                                                                Path]) -> None:
    backend, env, ws = shared
    uid = slot_uid(SHARED_SLOTS[backend.name])
    assert env.exec(["id", "-u"]).stdout == f"{uid}\n"
    status = env.exec(["cat", "/proc/self/status"]).stdout
    fields = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    assert fields["CapEff"] == fields["CapPrm"] == fields["CapBnd"] == "0000000000000000"
    assert fields["NoNewPrivs"] == "1" and fields["Seccomp"] == "2"
    init = env.exec(["cat", "/proc/1/status"]).stdout
    assert f"Uid:\t{65534}" in init  # pid 1 is nobody's: no command can signal it
    _rc, out, _ = _py(env, """
        import os, signal
        for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGINT):
            try:
                os.kill(1, sig)
            except OSError as e:
                print(e.errno)
    """)
    assert out.split() == ["1", "1", "1"]  # EPERM
    assert env.exec(["true"]).returncode == 0
    made = env.exec(["sh", "-c", "echo x > made.txt"])
    assert made.returncode == 0 and (ws / "made.txt").stat().st_uid == uid  # the lent workspace


_FOREIGN_ABI = """
import ctypes, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
print("before", flush=True)
libc.syscall(ctypes.c_long({number}))
print("survived", flush=True)
"""


def test_a_call_of_another_abi_kills_the_process(shared: tuple[ContainerBackend, ContainerEnvironment,
                                                               Path]) -> None:
    _, env, _ = shared
    import platform

    if platform.machine() != "x86_64":
        pytest.skip("the x32 ABI exists on x86_64 only")
    result = env.exec(["python3", "-c", _FOREIGN_ABI.format(number=0x40000000 | 39)])  # x32 getpid
    assert result.stdout == "before\n" and result.returncode == 128 + signal.SIGSYS


def test_read_only_root_sized_tmp_and_no_network(shared: tuple[ContainerBackend, ContainerEnvironment,
                                                               Path]) -> None:
    _, env, _ = shared
    _rc, out, _ = _py(env, """
        import os
        for p in ("/etc/x", "/usr/x", "/x", "/var/tmp/x", "/run/x"):
            try:
                open(p, "w"); print("wrote", p)
            except OSError as e:
                print("denied", p)
        st = os.statvfs("/tmp")
        print("tmp", st.f_blocks * st.f_frsize)
        try:
            with open("/tmp/fill", "wb") as f:
                for _ in range(40):
                    f.write(b"x" * 2**20)
            print("filled")
        except OSError as e:
            print("tmp full", e.errno)
        os.unlink("/tmp/fill")
    """)
    assert out.count("denied") == 5 and "wrote" not in out
    assert "tmp 33554432" in out and "tmp full 28" in out  # ENOSPC at 32 MiB
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    try:
        _rc, out, _ = _py(env, f"""
            import socket
            print(open("/proc/net/dev").read().split("\\n")[2:])
            for host in ("127.0.0.1", "10.0.2.2", "8.8.8.8"):
                try:
                    socket.create_connection((host, {server.getsockname()[1]}), timeout=2); print("connected", host)
                except OSError as e:
                    print("no", host, e.errno)
        """)
    finally:
        server.close()
    assert "connected" not in out and "'    lo:" in out and "eth0" not in out
    assert "no 8.8.8.8 101" in out  # ENETUNREACH: only loopback


def test_limits_cpu_time_file_size_and_wall(shared: tuple[ContainerBackend, ContainerEnvironment, Path]) -> None:
    _, env, _ = shared
    cpu = env.exec(["python3", "-c", "while True: pass"], limits=Limits(cpu_s=1, wall_s=20))
    assert cpu.killed_reason == "cpu time limit" and not cpu.timed_out
    big = env.exec(["python3", "-c", "open('/tmp/big', 'wb').write(b'x' * 5 * 2**20)"],
                   limits=Limits(file_size_bytes=2**20))
    assert big.returncode != 0 and ("File too large" in big.stderr or big.killed_reason == "file size limit")
    start = time.monotonic()
    slow = env.exec(["sleep", "60"], limits=Limits(wall_s=1.0))
    assert slow.timed_out and slow.killed_reason == "wall time limit" and time.monotonic() - start < 5
    assert env.processes() == set()  # the command is gone
    memory = env.exec(["python3", "-c", "bytearray(900 * 2**20)"], limits=Limits(memory_bytes=256 * 2**20))
    assert "MemoryError" in memory.stderr  # RLIMIT_AS through prlimit


def test_output_is_cut_and_a_flood_is_stopped(shared: tuple[ContainerBackend, ContainerEnvironment, Path]) -> None:
    _, env, _ = shared
    cut = env.exec(["python3", "-c", "print('a' * 5000 + 'b' * 5000)"], limits=Limits(output_bytes=1000))
    assert cut.stdout.startswith("a" * 500) and cut.stdout.rstrip().endswith("b" * 400)
    assert "cut by the reliabench sandbox" in cut.stdout
    flood = env.exec(["yes"], limits=Limits(output_bytes=10_000, wall_s=30))
    assert flood.killed_reason == "output limit" and len(flood.stdout) < 12_000
    assert env.processes() == set()


def test_background_processes_live_until_stop_processes(shared: tuple[ContainerBackend, ContainerEnvironment,
                                                                      Path]) -> None:
    _, env, _ws = shared
    started_bg = env.exec(["sh", "-c", "(while true; do date +%s%N >> /tmp/ticks; sleep 0.05; done) "
                                        ">/dev/null 2>&1 & echo started"])
    assert started_bg.stdout == "started\n"
    assert len(env.processes()) >= 1  # keeps_processes: the loop lives on
    timed_out = env.exec(["sleep", "30"], limits=Limits(wall_s=1))
    assert timed_out.timed_out and len(env.processes()) >= 1  # a command's limit spares earlier ones
    env.stop_processes()
    assert env.processes() == set()
    size = int(env.exec(["stat", "-c", "%s", "/tmp/ticks"]).stdout)
    time.sleep(0.3)
    assert int(env.exec(["stat", "-c", "%s", "/tmp/ticks"]).stdout) == size  # files stay, nothing writes


def test_copies_in_and_out_of_workspace_and_container(shared: tuple[ContainerBackend, ContainerEnvironment,
                                                                    Path], tmp_path: Path) -> None:
    backend, env, ws = shared
    src = tmp_path / "tests"
    (src / "sub").mkdir(parents=True)
    (src / "test_a.py").write_text("def test_a():\n    assert True\n")
    (src / "sub" / "data.txt").write_text("data")
    (src / "link").symlink_to("/etc/passwd")
    env.copy_in(src, "/tmp/rb-tests")  # the container's own /tmp: through tar
    listing = env.exec(["find", "/tmp/rb-tests", "-printf", "%P %u\\n"]).stdout.split("\n")
    uid = slot_uid(SHARED_SLOTS[backend.name])
    assert sorted(x for x in listing if x.strip()) == [f" {uid}", f"sub {uid}", f"sub/data.txt {uid}",
                                                       f"test_a.py {uid}"]
    env.copy_in(src / "test_a.py", "/workspace/in/test_a.py")  # the workspace: a host copy
    assert (ws / "in" / "test_a.py").stat().st_uid == uid
    env.copy_out("/tmp/rb-tests", tmp_path / "back", max_bytes=10_000)
    assert (tmp_path / "back" / "sub" / "data.txt").read_text() == "data"
    env.copy_out("/workspace/in/test_a.py", tmp_path / "one.py", max_bytes=1000)
    assert (tmp_path / "one.py").read_text().startswith("def test_a")
    with pytest.raises(FileNotFoundError):
        env.copy_out("/tmp/no-such", tmp_path / "x", max_bytes=1000)
    with pytest.raises(FileNotFoundError):
        env.copy_out("/workspace/no-such", tmp_path / "x", max_bytes=1000)
    with pytest.raises(SandboxError, match="the workspace or channel folder itself"):
        env.copy_in(src, "/workspace")
    with pytest.raises(SandboxError, match="absolute"):
        env.exec(["true"], cwd="tmp")
    assert (ws / "hello.txt").exists()


@pytest.mark.parametrize("where", ["/tmp/planted", "/workspace/planted"])
def test_copy_out_follows_no_link_and_is_bounded(shared: tuple[ContainerBackend, ContainerEnvironment, Path],
                                                 tmp_path: Path, where: str) -> None:
    _, env, _ = shared
    rc, _, err = _py(env, f"""
        import os
        d = {where!r}
        os.makedirs(d + "/dir", exist_ok=True)
        open(d + "/dir/real.txt", "w").write("real")
        for name, target in (("passwd", "/etc/passwd"), ("up", ".."), ("root", "/")):
            if not os.path.lexists(d + "/dir/" + name):
                os.symlink(target, d + "/dir/" + name)
        if not os.path.lexists(d + "/top"):
            os.symlink("/etc", d + "/top")
        os.mkfifo(d + "/dir/fifo") if not os.path.exists(d + "/dir/fifo") else None
        with open(d + "/huge", "wb") as f:
            f.truncate(0)
            f.write(b"z" * (3 * 2**20))
    """)
    assert rc == 0, err
    out = tmp_path / "out"
    env.copy_out(f"{where}/dir", out, max_bytes=1000)
    assert sorted(p.name for p in out.iterdir()) == ["real.txt"]
    with pytest.raises(SandboxError, match=r"not a regular file or folder|is a link"):
        env.copy_out(f"{where}/top", tmp_path / "top", max_bytes=1000)
    assert not (tmp_path / "top").exists()
    with pytest.raises(SandboxError, match="more than 1000000 bytes"):
        env.copy_out(f"{where}/huge", tmp_path / "huge", max_bytes=1_000_000)
    assert not (tmp_path / "huge").exists()
    with pytest.raises(SandboxError, match="is a link"):
        env.copy_out(f"{where}/top/passwd", tmp_path / "p", max_bytes=10_000)
    assert not (tmp_path / "p").exists()


_CHILDREN_ALLOCATE = """
import os, time
pids = []
for _ in range(4):
    pid = os.fork()
    if pid == 0:
        b = bytearray(100 * 2**20)
        for i in range(0, len(b), 4096):
            b[i] = 1
        time.sleep(3)
        os._exit(0)
    pids.append(pid)
print(sorted(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids))
"""


def test_memory_is_bounded_per_container(backend: ContainerBackend) -> None:
    """Memory is bounded per rollout, not only per process (the cgroup), and an OOM says so."""
    with workspace_dir() as ws, started(backend, ws, limits=Limits(memory_bytes=256 * 2**20)) as env:
        limit = env.cgroup_value("memory", "memory.limit_in_bytes") or env.cgroup_value("memory", "memory.max")
        assert limit == str(256 * 2**20)
        # one process within its address-space limit (2 GiB), past the container's 256 MiB
        big = env.exec(["python3", "-c", "b = bytearray(400 * 2**20)\nfor i in range(0, len(b), 4096): b[i] = 1"],
                       limits=Limits(memory_bytes=2 * 2**30, wall_s=60))
        assert big.returncode == 137 and big.killed_reason == "memory limit", big
        # four processes of 100 MiB each, every one within its limit: together they are not
        children = env.exec(["python3", "-c", _CHILDREN_ALLOCATE], limits=Limits(memory_bytes=512 * 2**20, wall_s=60))
        assert children.returncode == 0 and "-9" in children.stdout, children
        assert env.exec(["echo", "ok"]).stdout == "ok\n"  # the environment survives its OOMs
    assert not (Path.cwd() / "oom").exists()  # podman's conmon writes one into its cwd: never the caller's


def test_processes_are_bounded_per_container(backend: ContainerBackend) -> None:
    limits = Limits(max_procs=20, wall_s=4)
    with workspace_dir() as ws, started(backend, ws, limits=limits) as env:
        assert env.cgroup_value("pids", "pids.max") == "24"
        bomb = env.exec(["python3", "-c", "import os, time\nwhile True:\n    try: os.fork()\n"
                         "    except OSError: time.sleep(0.01)\n"], limits=limits)
        assert bomb.timed_out or bomb.returncode != 0
        assert env.processes() == set()
        assert env.exec(["echo", "after"], limits=limits).stdout == "after\n"
        quota = env.cgroup_value("cpu", "cpu.cfs_quota_us") or env.cgroup_value("cpu", "cpu.max") or ""
        assert quota.split()[0] in ("100000",)  # --cpus 1


def test_root_and_writable_root_when_the_spec_asks(backend: ContainerBackend) -> None:
    spec = EnvironmentSpec(image=DEFAULT_TEST_IMAGE, user="root", writable_root=True, workdir="/testbed")
    with workspace_dir() as ws:
        with started(backend, ws, spec) as env:
            assert env.workdir == "/testbed" and env.exec(["pwd"]).stdout == "/testbed\n"
            assert env.exec(["id", "-u"]).stdout == "0\n"
            assert env.exec(["sh", "-c", "echo x > /etc/installed && cat /etc/installed"]).stdout == "x\n"
            status = env.exec(["grep", "CapEff", "/proc/self/status"]).stdout
            assert status.split()[-1] == "0000000000000000"  # root, but without capabilities
            assert env.exec(["sh", "-c", "echo w > /testbed/w"]).returncode == 0
        assert (ws / "w").read_text() == "w\n" and (ws / "w").stat().st_uid == 0


def test_mounts_network_host_and_pass_fds(backend: ContainerBackend, tmp_path: Path) -> None:
    shown = tmp_path / "shown"
    shown.mkdir()
    os.chmod(tmp_path, 0o755)
    (shown / "f.txt").write_text("mounted")
    os.chmod(shown, 0o755)
    os.chmod(shown / "f.txt", 0o644)
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]
    try:
        with workspace_dir() as ws, started(backend, ws, mounts=[Mount(shown, "/opt/shown")],
                                            network="host") as env:
            assert env.exec(["cat", "/opt/shown/f.txt"]).stdout == "mounted"
            assert env.exec(["sh", "-c", "echo x > /opt/shown/g"]).returncode != 0  # read-only
            _rc, out, _ = _py(env, f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=5); "
                                  "print('connected')")
            assert out == "connected\n"  # network = host: the agents that ask for it
    finally:
        server.close()
    with workspace_dir() as ws, pytest.raises(SandboxError, match="cannot pass file descriptors"):
        backend.run(["true"], workdir=ws, pass_fds=[0])


def test_close_removes_everything_and_is_idempotent(backend: ContainerBackend) -> None:
    with workspace_dir() as ws:
        before = os.stat(ws)
        prepared = backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
        env = backend.start(prepared, workspace=ws, slot=SLOTS[backend.name])
        env.exec(["sh", "-c", "sleep 1000 & touch /workspace/x"])
        cid, channel = env.container_id, env.channel_host
        assert container_exists(backend, cid) and channel.is_dir()
        assert os.stat(ws).st_uid == slot_uid(SLOTS[backend.name])
        env.close()
        env.close()
        assert not container_exists(backend, cid) and not channel.parent.exists()
        assert (os.stat(ws).st_uid, os.stat(ws).st_mode) == (before.st_uid, before.st_mode)
        assert (ws / "x").stat().st_uid == before.st_uid  # handed back
        with pytest.raises(SandboxError, match="closed"):
            env.exec(["true"])


def test_a_container_removed_under_it_is_the_harness_failure(backend: ContainerBackend) -> None:
    with workspace_dir() as ws, started(backend, ws) as env:
        backend._remove(env.container_id)
        with pytest.raises(SandboxError, match=r"stopped|failed to run"):
            env.exec(["true"])


def test_start_failures_leave_nothing(backend: ContainerBackend) -> None:
    spec = EnvironmentSpec(image=DEFAULT_TEST_IMAGE)
    prepared = backend.prepare(spec)
    def ours() -> set[str]:
        listed = backend._call(["ps", "-a", "-q", "--filter", f"label={LABEL_OWNER}={owner_token()}"])
        return set(listed.stdout.split())

    with workspace_dir() as ws:
        before, containers = os.stat(ws), ours()
        with pytest.raises(SandboxError, match="comma"):
            backend.start(prepared, workspace=ws, slot=SLOTS[backend.name],
                          mounts=[Mount(ws, "/opt/a,b")])
        with pytest.raises(SandboxError, match=f"{backend.name} could not start a container"):
            backend.start(prepared, workspace=ws, slot=SLOTS[backend.name],
                          mounts=[Mount(Path("/nonexistent-rb-source"), "/opt/x")])
        assert os.stat(ws).st_uid == before.st_uid
        assert ours() == containers


_KILLED_OWNER = """
import sys, time
from pathlib import Path
from reliabench.sandbox.{module} import {cls}
from reliabench.sandbox.environment import EnvironmentSpec
b = {cls}()
env = b.start(b.prepare(EnvironmentSpec(image={image!r})), workspace=Path(sys.argv[1]), slot={slot})
env.exec(["sh", "-c", "sleep 1000 &"])
print(env.container_id, env.channel_host, flush=True)
time.sleep(1000)
"""


def test_sweep_removes_what_a_killed_reliabench_left(backend: ContainerBackend) -> None:
    module, cls = {"podman": ("podman", "PodmanBackend"), "docker": ("docker", "DockerBackend")}[backend.name]
    with workspace_dir() as ws, workspace_dir() as live_ws, started(backend, live_ws) as live:
        env = {**os.environ}
        if backend.name == "docker":
            env["DOCKER_HOST"] = backend.docker_host()  # type: ignore[attr-defined]
        code = _KILLED_OWNER.format(module=module, cls=cls, image=DEFAULT_TEST_IMAGE, slot=SLOTS[backend.name] + 10)
        proc = subprocess.Popen([sys.executable, "-c", code, str(ws)], stdout=subprocess.PIPE, text=True, env=env)
        try:
            assert proc.stdout is not None
            line = proc.stdout.readline().split()
            assert len(line) == 2, line
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
            if proc.stdout is not None:
                proc.stdout.close()
        cid, channel = line[0], Path(line[1])
        private = list(Path(tempfile.gettempdir()).glob(f"rb-{backend.name}-{proc.pid}-*"))
        assert container_exists(backend, cid) and channel.exists() and len(private) == 1
        assert backend.sweep() >= 1
        assert not container_exists(backend, cid) and not channel.parent.exists() and not private[0].exists()
        assert backend._private_dir().exists()  # this live process's own stays
        assert container_exists(backend, live.container_id)  # a live reliabench's container stays
        assert live.exec(["true"]).returncode == 0


def test_sweep_removes_a_channel_folder_whose_owner_died_before_its_container(backend: ContainerBackend) -> None:
    """``kill -9`` between making the channel folder and the container: the folder's name says whose it is."""
    dead = Path(tempfile.mkdtemp(prefix=f"rb-chan-{os.getpid()}-0-"))  # this pid, another start: gone
    live = Path(tempfile.mkdtemp(prefix=f"rb-chan-{containers_mod._owner_stem()}-"))
    host = Path(tempfile.mkdtemp(prefix="rb-chan-"))  # a host backend's channel folder (no owner in it)
    try:
        backend.sweep()
        assert not dead.exists() and live.exists() and host.exists()
    finally:
        for folder in (dead, live, host):
            remove_tree(folder)


def test_refusals_name_the_fix(backend: ContainerBackend, tmp_path: Path) -> None:
    where = "suite/tasks/t/task.toml:4"
    why = backend.refuse(EnvironmentSpec(image="reliabench/no-such-image:1", source=where))
    assert why is not None and why.startswith(where) and "never pulls" in why and "load" in why
    with pytest.raises(SandboxError, match=r"not in .* local storage"):
        backend.prepare(EnvironmentSpec(image="reliabench/no-such-image:1", source=where))
    assert "does not exist" in (backend.refuse(EnvironmentSpec(dockerfile=tmp_path / "Dockerfile")) or "")
    assert "absolute" in (backend.refuse(EnvironmentSpec(image=DEFAULT_TEST_IMAGE, workdir="rel")) or "")
    assert backend.refuse(EnvironmentSpec()) is None  # a host task runs in the default image


def test_one_slot_one_environment_per_process(backend: ContainerBackend) -> None:
    with workspace_dir() as ws, workspace_dir() as ws2, started(backend, ws):
        with pytest.raises(SandboxError, match="held by another open environment of this process"):
            backend.start(backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE)), workspace=ws2,
                          slot=SLOTS[backend.name])
        assert (os.stat(ws2).st_uid, os.stat(ws2).st_mode & 0o777) == (0, 0o755)  # untouched


_HANDOVER_TEST = '''
import os
import solution

def test_the_solution():
    assert solution.answer() == 42

def test_the_machine_the_agent_set_up():
    assert open("/tmp/setup.txt").read() == "configured\\n"
'''


def test_tests_same_and_tests_fresh(backend: ContainerBackend, tmp_path: Path) -> None:
    """``tests = "same"``: stop the agent, copy the tests in, run them there; ``fresh``: a new container."""
    tests = tmp_path / "hidden"
    tests.mkdir()
    (tests / "test_handover.py").write_text(_HANDOVER_TEST)
    env_vars = {"PATH": "/usr/bin:/bin", "PYTHONPATH": "/workspace", "PYTHONDONTWRITEBYTECODE": "1", "HOME": "/tmp"}
    pytest_argv = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    with workspace_dir() as ws:
        (ws / "solution.py").write_text("def answer():\n    return 42\n")
        with started(backend, ws) as agent:
            agent.exec(["sh", "-c", "echo configured > /tmp/setup.txt; sleep 1000 >/dev/null 2>&1 &"])
            assert agent.processes()
            agent.stop_processes()
            assert agent.processes() == set()
            agent.copy_in(tests, "/tmp/rb-tests-1f2e")
            same = agent.exec([*pytest_argv, "/tmp/rb-tests-1f2e"], env=env_vars)
            assert "2 passed" in same.stdout, same
        with started(backend, ws) as fresh:
            fresh.copy_in(tests, "/tmp/rb-tests-9a8b")
            run = fresh.exec([*pytest_argv, "/tmp/rb-tests-9a8b"], env=env_vars)
            assert "1 failed, 1 passed" in run.stdout, run  # nothing the agent left outside the workspace
