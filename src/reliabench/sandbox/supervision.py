"""Supervision of one sandboxed process: rlimits, wall time, output size, clean-up.

Every fresh-process backend starts its command through :func:`run_supervised`: output goes
to *files* (an escaped grandchild holding a pipe would hang a pipe reader), the parent kills
the run at the wall-time limit or when a stream grows past 8 times the output limit, and each
stream is cut to the output limit (head and tail kept).
"""

from __future__ import annotations

import contextlib
import math
import os
import select
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.records import Isolation
from reliabench.sandbox.base import Limits, SandboxResult
from reliabench.sandbox.slots import procs_of_uid

__all__ = [
    "max_output",
    "nproc_for_current_user",
    "rlimit_args",
    "rlimit_preexec",
    "run_supervised",
    "signal_reason",
]

_CUT_MARKER = "\n[... {n} bytes cut by the reliabench sandbox (output limit) ...]\n"
_OUTPUT_KILL_FACTOR = 8  # a stream larger than 8 x output_bytes gets the process killed
_POLL_S = 0.05


def rlimit_args(limits: Limits, nproc: int) -> list[str]:
    """``prlimit`` options; soft CPU limit sends SIGXCPU, the hard one a second later SIGKILL."""
    cpu = max(1, math.ceil(limits.cpu_s))
    return [
        f"--cpu={cpu}:{cpu + 1}",
        f"--as={limits.memory_bytes}",
        f"--nproc={nproc}",
        f"--fsize={limits.file_size_bytes}",
        "--core=0",
    ]


def rlimit_preexec(limits: Limits, nproc: int) -> Callable[[], None]:
    """Fallback when ``prlimit(1)`` is missing (not thread-safe, like every preexec_fn)."""
    import resource

    cpu = max(1, math.ceil(limits.cpu_s))
    pairs = (
        (resource.RLIMIT_CPU, (cpu, cpu + 1)),
        (resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes)),
        (resource.RLIMIT_NPROC, (nproc, nproc)),
        (resource.RLIMIT_FSIZE, (limits.file_size_bytes, limits.file_size_bytes)),
        (resource.RLIMIT_CORE, (0, 0)),
    )

    def apply() -> None:
        for which, value in pairs:
            resource.setrlimit(which, value)

    return apply


def nproc_for_current_user(limits: Limits) -> int:
    """As a normal user RLIMIT_NPROC counts all of the user's processes, so allow those too."""
    return len(procs_of_uid(os.getuid())) + limits.max_procs


def _read_capped(path: Path, cap: int) -> str:
    size = path.stat().st_size
    with open(path, "rb") as fh:
        if size <= cap:
            data = fh.read()
            return data.decode("utf-8", "replace")
        head_n = cap // 2
        tail_n = cap - head_n
        head = fh.read(head_n)
        fh.seek(size - tail_n)
        tail = fh.read(tail_n)
    cut = size - head_n - tail_n
    return (
        head.decode("utf-8", "replace")
        + _CUT_MARKER.format(n=cut)
        + tail.decode("utf-8", "replace")
    )


def signal_reason(returncode: int | None) -> str | None:
    """The limit a signal (or a shell's ``128 + signal`` status) says stopped a run, if it is one of ours."""
    if returncode is None:
        return None
    sig = -returncode if returncode < 0 else returncode - 128 if returncode > 128 else 0
    if sig == signal.SIGXCPU:
        return "cpu time limit"
    if sig == signal.SIGXFSZ:
        return "file size limit"
    return None


def run_supervised(
    cmd: Sequence[str],
    *,
    cwd: Path,
    env: Mapping[str, str],
    limits: Limits,
    isolation: Isolation,
    pass_fds: Sequence[int],
    preexec_fn: Callable[[], None] | None,
    user: int | None,
    cleanup: Callable[[subprocess.Popen[bytes]], None],
    stdin: Path | None = None,
    seccomp: bool = False,
) -> SandboxResult:
    """Start ``cmd`` with output to files, enforce wall time and output size, clean up.

    ``seccomp`` says whether ``cmd`` installs the filter of :mod:`reliabench.sandbox.seccomp`
    before it runs anything of the caller's (recorded in the result).
    """
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rb-out-") as tmp:
        out_path = Path(tmp) / "stdout"
        err_path = Path(tmp) / "stderr"
        with open(out_path, "wb") as out_fh, open(err_path, "wb") as err_fh, \
                (open(stdin, "rb") if stdin is not None else contextlib.nullcontext()) as in_fh:
            try:
                proc = subprocess.Popen(
                    list(cmd),
                    cwd=cwd,
                    env=dict(env),
                    stdin=in_fh if in_fh is not None else subprocess.DEVNULL,
                    stdout=out_fh,
                    stderr=err_fh,
                    pass_fds=tuple(pass_fds),
                    start_new_session=True,
                    preexec_fn=preexec_fn,
                    user=user,
                    group=user,
                    extra_groups=[] if user is not None else None,
                )
            except (OSError, subprocess.SubprocessError) as exc:  # the latter: preexec_fn failed
                raise SandboxError(f"{isolation} sandbox could not start {cmd[0]!r}: {exc}") from exc
        timed_out = False
        reason: str | None = None
        try:
            reason = _wait(proc, start + limits.wall_s, (out_path, err_path), limits)
            timed_out = reason == "wall time limit"
        finally:
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
            proc.wait()
            cleanup(proc)
        cap = limits.output_bytes
        out_size = out_path.stat().st_size
        err_size = err_path.stat().st_size
        stdout = _read_capped(out_path, cap)
        stderr = _read_capped(err_path, cap)
    returncode = proc.returncode
    if reason is None:
        reason = signal_reason(returncode)
    if reason is None and max(out_size, err_size) > max_output(limits):
        reason = "output limit"  # the file size limit stopped the writer before we looked
    return SandboxResult(
        returncode=returncode,
        timed_out=timed_out,
        wall_s=time.monotonic() - start,
        stdout=stdout,
        stderr=stderr,
        isolation=isolation,
        killed_reason=reason,
        seccomp=seccomp,
    )


def max_output(limits: Limits) -> int:
    """The size of a stream past which a run is killed ("output limit")."""
    return max(limits.output_bytes * _OUTPUT_KILL_FACTOR, 64 * 1024)


def _wait(
    proc: subprocess.Popen[bytes], deadline: float, outputs: Sequence[Path], limits: Limits
) -> str | None:
    """Wait for ``proc``; return why it was killed, or None if it ended by itself."""
    pidfd: int | None = None
    with contextlib.suppress(AttributeError, OSError):
        pidfd = os.pidfd_open(proc.pid)
    poller = None
    if pidfd is not None:
        poller = select.poll()
        poller.register(pidfd, select.POLLIN)
    max_out = max_output(limits)
    try:
        while True:
            now = time.monotonic()
            if proc.poll() is not None:
                return None
            if now >= deadline:
                proc.kill()
                return "wall time limit"
            for path in outputs:
                with contextlib.suppress(OSError):
                    if path.stat().st_size > max_out:
                        proc.kill()
                        return "output limit"
            step = min(_POLL_S, deadline - now)
            if poller is not None:
                poller.poll(max(1, int(step * 1000)))
            else:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout=step)
    finally:
        if pidfd is not None:
            os.close(pidfd)


