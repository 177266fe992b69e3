"""The seccomp filter (reliabench.sandbox.seccomp): the program, and the calls it denies in every sandbox path.

The program is checked twice: by a classic-BPF interpreter written here (every denied call of
every group on both machines, the foreign ABIs, the argument checks of ``clone`` and
``personality``), and by the kernel, inside every sandbox path (bubblewrap, namespaces, the
warm jail's exec and its pytest and plain test runners), where one call per group must fail
and correct code (threads, fork, subprocess, multiprocessing, numpy) must still pass.
"""

from __future__ import annotations

import errno
import json
import os
import struct
import sys
import textwrap
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip, hidden_test_path_or_skip, python_for

from reliabench.errors import SandboxError
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, seccomp
from reliabench.sandbox.seccomp import (
    AUDIT_ARCH,
    CLONE_NAMESPACE_FLAGS,
    DENIED_GROUPS,
    RET_ALLOW,
    RET_ERRNO,
    RET_KILL_PROCESS,
    SYSCALL_NUMBERS,
    filter_program,
)

SLOT = 6
MACHINE = os.uname().machine
needs_filter = pytest.mark.skipif(seccomp.filter_unavailable_reason() is not None,
                                  reason=f"no seccomp filter here: {seccomp.filter_unavailable_reason()}")

# ------------------------------------------------------------------------------------------
# a classic-BPF interpreter for what the program uses (linux/filter.h)
# ------------------------------------------------------------------------------------------


def run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """What the kernel would return for one call: ``struct seccomp_data`` run through ``program``."""
    full = (*args, *(0,) * (6 - len(args)))
    data = struct.pack("=iIQ6Q", nr, arch, 0, *full)
    insns = [struct.unpack_from("=HBBI", program, off) for off in range(0, len(program), 8)]
    assert len(insns) <= 4096
    acc, pc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        pc += 1
        if code == 0x20:  # ld [k]
            acc = struct.unpack_from("=I", data, k)[0]
        elif code == 0x06:  # ret k
            return k
        elif code in (0x15, 0x35, 0x45):  # jeq, jge, jset
            hit = acc == k if code == 0x15 else acc >= k if code == 0x35 else bool(acc & k)
            pc += jt if hit else jf
        else:
            raise AssertionError(f"unexpected BPF instruction {code:#x}")


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_every_denied_call_is_denied_with_its_errno(machine: str) -> None:
    prog = filter_program(machine)
    numbers = SYSCALL_NUMBERS[machine]
    arch = AUDIT_ARCH[machine]
    seen = 0
    for group in DENIED_GROUPS:
        for name in group.syscalls:
            if name in numbers:
                assert run_bpf(prog, numbers[name], arch) == RET_ERRNO | group.errno, (machine, name)
                seen += 1
    assert seen >= 50
    assert run_bpf(prog, numbers["keyctl"], arch) == RET_ERRNO | errno.EPERM
    assert run_bpf(prog, numbers["clone3"], arch) == RET_ERRNO | errno.ENOSYS  # glibc falls back


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_other_calls_are_allowed(machine: str) -> None:
    prog = filter_program(machine)
    numbers = SYSCALL_NUMBERS[machine]
    denied = {numbers[n] for g in DENIED_GROUPS for n in g.syscalls if n in numbers}
    arch = AUDIT_ARCH[machine]
    for nr in range(0, 460):
        if nr not in denied and nr not in (numbers["clone"], numbers["personality"]):
            assert run_bpf(prog, nr, arch, (0xFFFFFFFF,)) == RET_ALLOW, (machine, nr)


def test_a_foreign_abi_kills_the_process() -> None:
    x86 = filter_program("x86_64")
    getpid = 39
    assert run_bpf(x86, getpid, AUDIT_ARCH["x86_64"]) == RET_ALLOW
    assert run_bpf(x86, 286, 0x40000003) == RET_KILL_PROCESS  # i386 add_key through int 0x80
    assert run_bpf(x86, 0x40000000 | 248, AUDIT_ARCH["x86_64"]) == RET_KILL_PROCESS  # x32 add_key
    assert run_bpf(x86, 0x40000000 | getpid, AUDIT_ARCH["x86_64"]) == RET_KILL_PROCESS
    arm = filter_program("aarch64")
    assert run_bpf(arm, 172, AUDIT_ARCH["aarch64"]) == RET_ALLOW  # getpid
    assert run_bpf(arm, 20, 0x40000028) == RET_KILL_PROCESS  # AArch32 (AUDIT_ARCH_ARM)
    assert run_bpf(arm, 172, AUDIT_ARCH["x86_64"]) == RET_KILL_PROCESS


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_clone_with_namespace_flags_is_denied(machine: str) -> None:
    prog = filter_program(machine)
    clone = SYSCALL_NUMBERS[machine]["clone"]
    arch = AUDIT_ARCH[machine]
    thread = 0x3D0F00  # what pthread_create passes (VM|FS|FILES|SIGHAND|THREAD|SYSVSEM|SETTLS|...)
    fork = 17  # SIGCHLD
    for flags in (thread, fork, fork | 0x80):  # 0x80 in clone(): part of the exit signal
        assert run_bpf(prog, clone, arch, (flags,)) == RET_ALLOW, hex(flags)
    for bit in range(32):
        flag = 1 << bit
        if flag & CLONE_NAMESPACE_FLAGS:
            assert run_bpf(prog, clone, arch, (fork | flag,)) == RET_ERRNO | errno.EPERM, hex(flag)
    assert CLONE_NAMESPACE_FLAGS == (0x00020000 | 0x02000000 | 0x04000000 | 0x08000000
                                     | 0x10000000 | 0x20000000 | 0x40000000)


@pytest.mark.parametrize("machine", sorted(SYSCALL_NUMBERS))
def test_personality_only_with_the_values_docker_allows(machine: str) -> None:
    prog = filter_program(machine)
    nr = SYSCALL_NUMBERS[machine]["personality"]
    arch = AUDIT_ARCH[machine]
    for value in (0, 8, 0x20000, 0x20008, 0xFFFFFFFF):
        assert run_bpf(prog, nr, arch, (value,)) == RET_ALLOW
    for value in (0x0040000, 0x0400000, 0x0200000, 1):  # ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, ...
        assert run_bpf(prog, nr, arch, (value,)) == RET_ERRNO | errno.EPERM


def test_unknown_machine_has_no_program() -> None:
    with pytest.raises(SandboxError, match="no seccomp system-call table for machine 'sparc64'"):
        filter_program("sparc64")


def test_every_machine_table_names_every_call_it_needs() -> None:
    for machine, numbers in SYSCALL_NUMBERS.items():
        for name in ("clone", "clone3", "personality", "keyctl", "add_key", "request_key",
                     "setresuid", "setresgid"):
            assert name in numbers, (machine, name)
        assert len(set(numbers.values())) == len(numbers), machine  # no number twice


# ------------------------------------------------------------------------------------------
# in the sandboxes, as the kernel runs it
# ------------------------------------------------------------------------------------------

# One call per group, with arguments that are harmless when the call is allowed; each prints
# its name and -errno (or its return value): what the filter must turn into -EPERM.
PROBE = textwrap.dedent("""
    import ctypes, json, os, sys
    nr = json.loads({numbers!r})
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    L = ctypes.c_long
    def call(name, *args):
        ctypes.set_errno(0)
        rc = libc.syscall(L(nr[name]), *(a if isinstance(a, bytes) else L(a) for a in args))
        return rc if rc >= 0 else -ctypes.get_errno()
    def clone_userns():
        rc = call("clone", 0x10000000 | 17, 0, 0, 0, 0)
        if rc == 0:
            os._exit(0)
        if rc > 0:
            os.waitpid(rc, 0)
        return rc
    def personality():
        rc = call("personality", 0x0040000)
        call("personality", 0)
        return rc
    probes = {{
        "keyring": lambda: call("add_key", b"user", b"rb-probe", b"x", 1, -2),
        "namespaces": lambda: call("setns", -1, 0),
        "namespaces_unshare": lambda: call("unshare", 0x10000000),
        "namespaces_clone": clone_userns,
        "namespaces_clone3": lambda: call("clone3", 0, 0),
        "mount": lambda: call("umount2", b"/nonexistent-rb", 0),
        "kernel_code": lambda: call("io_uring_setup", 1, 0),
        "modules": lambda: call("finit_module", -1, b"", 0),
        "other_processes": lambda: call("kcmp", os.getpid(), os.getpid(), 0, 0, 0),
        "file_handles": lambda: call("name_to_handle_at", -100, b".", 0, 0, 0),
        "numa": lambda: call("get_mempolicy", 0, 0, 0, 0, 0),
        "host_admin": lambda: call("syslog", 10, 0, 0),
        "obsolete": lambda: call("sysfs", 3) if "sysfs" in nr else -1,
        "personality": personality,
    }}
    for name in sys.argv[1:]:
        print(name, probes[name](), flush=True)
""")
PROBES = ("keyring", "namespaces", "namespaces_unshare", "namespaces_clone", "namespaces_clone3",
          "mount", "kernel_code", "modules", "other_processes", "file_handles", "numa",
          "host_admin", "obsolete", "personality")
WANTED = {name: -errno.EPERM for name in PROBES} | {"namespaces_clone3": -errno.ENOSYS}


def _probe_code() -> str:
    return PROBE.format(numbers=json.dumps(dict(SYSCALL_NUMBERS[MACHINE])))


def test_every_group_has_a_probe() -> None:
    assert {g.name for g in DENIED_GROUPS} <= set(PROBES)


@needs_filter
@pytest.mark.sandbox
@pytest.mark.parametrize("probe", PROBES)
@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", "warm"])
def test_each_denied_group_fails_inside_the_sandbox(name: str, probe: str, base: Path) -> None:
    backend = backend_or_skip(name)
    result = backend.run([python_for(backend, SLOT), "-c", _probe_code(), probe], workdir=base,
                         slot=SLOT, limits=Limits(wall_s=30.0))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout == f"{probe} {WANTED[probe]}\n", result.stderr[-500:]
    assert result.seccomp is True


@needs_filter
@pytest.mark.sandbox
@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", "warm"])
def test_the_filter_is_in_force_and_recorded(name: str, base: Path) -> None:
    backend = backend_or_skip(name)
    code = "print([l.split()[1] for l in open('/proc/self/status') if l.startswith('Seccomp:')][0])"
    result = backend.run([python_for(backend, SLOT), "-c", code], workdir=base, slot=SLOT)
    assert result.stdout == "2\n"  # SECCOMP_MODE_FILTER
    assert result.seccomp is True


def test_none_records_no_filter(base: Path) -> None:
    result = backend_or_skip("none").run([sys.executable, "-c", "pass"], workdir=base, slot=SLOT)
    assert result.seccomp is False


@needs_filter
@pytest.mark.sandbox
@pytest.mark.skipif(MACHINE != "x86_64", reason="the i386 and x32 ABIs are x86_64's")
@pytest.mark.parametrize("abi", ["i386-int80", "x32"])
@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", "warm"])
def test_a_foreign_abi_call_kills_the_process_in_the_sandbox(name: str, abi: str, base: Path) -> None:
    # add_key through the other ABIs: int 0x80 (i386 number 286) and the x32 bit (0x40000000)
    code = textwrap.dedent(f"""
        import ctypes, mmap, sys
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        if {abi!r} == "x32":
            rc = libc.syscall(ctypes.c_long(0x40000000 | 39))
        else:
            # mov eax, 20 (i386 getpid); int 0x80; ret
            code = bytes([0xB8, 20, 0, 0, 0, 0xCD, 0x80, 0xC3])
            buf = mmap.mmap(-1, 4096, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
            buf.write(code)
            addr = ctypes.addressof(ctypes.c_char.from_buffer(buf))
            rc = ctypes.CFUNCTYPE(ctypes.c_int)(addr)()
        print("survived", rc, flush=True)
    """)
    backend = backend_or_skip(name)
    result = backend.run([python_for(backend, SLOT), "-c", code], workdir=base, slot=SLOT)
    assert "survived" not in result.stdout
    # SIGSYS (bwrap, pid 1 of its namespace, reports it as 128 + 31)
    assert result.returncode in (-31, 128 + 31), (result.returncode, result.stderr[-500:])


# correct code under the filter: what the hidden tests of real suites do
CORRECT_TESTS = textwrap.dedent("""
    import multiprocessing, os, subprocess, sys, threading
    from concurrent.futures import ThreadPoolExecutor

    def _square(x):
        return x * x

    def test_threads():
        out = []
        ts = [threading.Thread(target=out.append, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        assert sorted(out) == list(range(8))
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(_square, range(5))) == [0, 1, 4, 9, 16]

    def test_os_fork():
        pid = os.fork()
        if pid == 0:
            os._exit(7)
        assert os.WEXITSTATUS(os.waitpid(pid, 0)[1]) == 7

    def test_subprocess():
        out = subprocess.run([sys.executable, "-c", "print(6 * 7)"], capture_output=True, text=True)
        assert out.stdout == "42\\n"
        assert subprocess.run(["sh", "-c", "echo hi | cat"], capture_output=True).stdout == b"hi\\n"

    def test_multiprocessing():
        for method in ("fork", "spawn"):
            ctx = multiprocessing.get_context(method)
            p = ctx.Process(target=_square, args=(3,))
            p.start()
            p.join()
            assert p.exitcode == 0
            r, w = ctx.Pipe()
            p = ctx.Process(target=w.send, args=("ok",))
            p.start()
            assert r.recv() == "ok"
            p.join()

    def test_numpy():
        try:
            import numpy as np
        except ImportError:
            return
        a = np.arange(100.0).reshape(10, 10)
        assert float(np.linalg.det(a @ a.T + np.eye(10))) > 0
""")
CORRECT_NAMES = ("test_threads", "test_os_fork", "test_subprocess", "test_multiprocessing",
                 "test_numpy")
# Not here: a multiprocessing Lock or Pool (a POSIX semaphore in /dev/shm, which bubblewrap's
# slot uid cannot write: docs/threat-model.md).


@needs_filter
@pytest.mark.sandbox
@pytest.mark.parametrize("path", ["bubblewrap", "namespaces", "warm"])
def test_correct_code_still_passes_under_the_filter(path: str, base: Path) -> None:
    ws, tests = base / "ws", base / "tests"
    for d in (ws, tests):
        d.mkdir()
        os.chmod(d, 0o755)
    os.chmod(base, 0o755)
    source, names = CORRECT_TESTS, CORRECT_NAMES
    (tests / "test_correct.py").write_text(source, encoding="utf-8")
    expected = tuple(TestOutcome(f"test_correct.py::{n}", "skipped") for n in names)
    run = hidden_test_path_or_skip(path, SLOT).run(
        ws, tests, expected=expected, slot=SLOT,
        limits=Limits(wall_s=60.0, cpu_s=60.0, memory_bytes=4 * 1024**3, max_procs=64))
    assert run.status == "completed", run.reason
    assert {o.name: o.outcome for o in run.outcomes} == {e.name: "passed" for e in expected}, run.log[-3000:]
