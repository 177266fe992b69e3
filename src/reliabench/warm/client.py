"""Warm test workers, the caller's side: one warm server per worker slot, started on demand.

:class:`WarmWorkers` keeps one :mod:`reliabench.warm.server` process per slot (root, started
with ``python -I -B``). :meth:`WarmWorkers.run_raw` runs one rollout's hidden tests there,
with what :func:`reliabench.hidden_tests.fresh.run_hidden_tests` gives the fresh-process path: the tests
staged to a private read-only copy, the workspace lent to the slot uid, the host-wide slot
lock held, a per-run secret for the signed outcome channel. A server that died (whatever
killed it) is restarted before the next request; a request whose server died under it is
retried once on a new server, then reported as a :class:`~reliabench.errors.SandboxError`
(the runner records an ``infra_error`` and retries the rollout).

:func:`reliabench.warm.hidden.warm_unavailable_reason` probes once per process whether warm workers work here
(root, namespaces, a jailed round trip); where they do not, the fresh-process path runs.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import reliabench
from reliabench.errors import SandboxError
from reliabench.hidden_tests.staging import fd_channel, hidden_test_env
from reliabench.sandbox import DEFAULT_PATH, Limits, SandboxResult, slot_uid
from reliabench.sandbox.rootfs import ETC_FILES, SHM_BYTES, SYSTEM_DIRS, python_prefixes, under
from reliabench.sandbox.seccomp import active_filter
from reliabench.sandbox.slots import hold_slot, lend_workdir
from reliabench.sandbox.supervision import max_output, signal_reason
from reliabench.warm.protocol import Message, ProtocolError, read_message, write_frame

__all__ = [
    "ISOLATION",
    "TEST_PATHS",
    "WarmRaw",
    "WarmWorkers",
]

ISOLATION: Final = "warm"
"""The isolation level recorded for tests run by a warm worker (see docs/threat-model.md)."""

TEST_PATHS: Final = ("auto", "warm", "fresh")
"""Choices of ``--test-workers``: warm where it works (auto), warm only, fresh processes."""

_START_TIMEOUT_S = 60.0
_BOOT: Final = (
    "import sys, types\n"
    "for name, path in {packages!r}:\n"
    "    package = types.ModuleType(name, 'stub: the warm server runs no package __init__')\n"
    "    package.__path__ = [path]\n"
    "    sys.modules[name] = package\n"
    "from reliabench.warm.server import main\n"
    "main()\n"
)
"""The server's ``-c`` program: ``reliabench`` and ``reliabench.warm`` as bare packages.

Their ``__init__`` modules import the public API (numpy, whose OpenBLAS starts threads on
import) and the caller's side of the warm workers; the server needs neither, and a thread in
the server deadlocks a rollout that forks or calls BLAS (the single-threaded clone child
inherits locks and thread pools whose threads it does not have). The server checks that it
has one thread at start and before every fork (:func:`reliabench.warm.server.require_one_thread`).
"""


def _boot_packages() -> list[tuple[str, str]]:
    pkg = Path(reliabench.__file__).resolve().parent
    return [("reliabench", str(pkg)), ("reliabench.warm", str(pkg / "warm"))]


@dataclass(frozen=True, slots=True)
class WarmRaw:
    """What one warm request returned: the sandbox result and the raw outcome stream.

    Attributes:
        result: The run, as a sandbox backend reports it.
        channel: The raw outcome stream.
        setup_failed: The jail could not be set up (nothing of the rollout ran).
        setup_s: Server-side seconds from the request to a ready jail (fork, namespaces, mounts).
        run_s: Server-side seconds from a ready jail to the end of every process in it.
        cpu: CPU seconds ``(user, system)`` by part: ``setup`` (the jail's process until its
            jail was ready), ``run`` (the same process after that: the tests, its exit),
            ``server`` (the server's own work for the request: the fork, the supervision, the
            answer). Empty when the server did not report it.
        faults: Minor page faults by the same parts (copy-on-write of the server's pages,
            mostly).
    """

    result: SandboxResult
    channel: bytes
    setup_failed: bool
    setup_s: float = 0.0
    run_s: float = 0.0
    cpu: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    faults: Mapping[str, int] = field(default_factory=dict)


def _jail_base() -> dict[str, Any]:
    """The read-only part of every rollout's root (same choices as the bubblewrap backend)."""
    system: list[str] = []
    symlinks: list[list[str]] = []
    for d in SYSTEM_DIRS:
        if os.path.islink(d):
            symlinks.append([d, os.readlink(d)])
        elif os.path.isdir(d):
            system.append(d)
    files = [f for f in ETC_FILES if os.path.exists(f)]
    prefixes = [p for p in python_prefixes()
                if not any(under(p, s) for s in system)]
    return {"system": system, "symlinks": symlinks, "files": files, "prefixes": prefixes}


class _Server:
    """One server process (the slot's), owned by one :class:`_Slot`."""

    def __init__(self, log_dir: Path, slot: int) -> None:
        self.log_path = log_dir / f"warm-server-{slot}.log"
        log = open(self.log_path, "ab")  # noqa: SIM115 - handed to the child
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-I", "-B", "-c", _BOOT.format(packages=_boot_packages())],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                cwd="/", env={"PATH": DEFAULT_PATH, "LANG": "C.UTF-8"},
                start_new_session=True, close_fds=True,
            )
        finally:
            log.close()
        if self.proc.stdin is None or self.proc.stdout is None:  # pragma: no cover - PIPE given
            raise SandboxError("warm test server started without pipes")
        self.req_fd = self.proc.stdin.fileno()
        self.resp_fd = self.proc.stdout.fileno()
        hello = self._read(_START_TIMEOUT_S).frame
        if not hello.get("ready"):
            self.stop()
            raise SandboxError(f"warm test server did not start: {hello}")

    def _read(self, timeout: float) -> Message:
        import select

        ready, _, _ = select.select([self.resp_fd], [], [], timeout)
        if not ready:
            self.stop()
            raise SandboxError(f"warm test server did not answer within {timeout:g} s")
        try:
            return read_message(self.resp_fd)
        except ProtocolError as exc:
            tail = ""
            with contextlib.suppress(OSError):
                tail = self.log_path.read_text(errors="replace")[-800:]
            self.stop()
            raise SandboxError(f"warm test server died ({exc}); its log ends: {tail}") from None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def request(self, req: dict[str, Any], key: bytes, timeout: float) -> Message:
        try:
            write_frame(self.req_fd, req, [key])
        except OSError as exc:
            self.stop()
            raise SandboxError(f"warm test server is gone: {exc}") from None
        return self._read(timeout)

    def stop(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            with contextlib.suppress(OSError):
                if stream is not None:
                    stream.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class _Slot:
    def __init__(self, slot: int, log_dir: Path) -> None:
        self.slot = slot
        self.log_dir = log_dir
        self.lock = threading.Lock()
        self.server: _Server | None = None
        self.restarts = 0

    def request(self, req: dict[str, Any], key: bytes, timeout: float) -> Message:
        with self.lock:
            for attempt in range(2):
                if self.server is None or not self.server.alive():
                    if self.server is not None:
                        self.server.stop()
                    if self.server is not None or attempt:
                        self.restarts += 1
                    self.server = _Server(self.log_dir, self.slot)
                try:
                    answer = self.server.request(req, key, timeout)
                    if answer.frame.get("fatal"):  # the server refused and stops: not reused
                        self.server.stop()
                        self.server = None
                    return answer
                except SandboxError:
                    self.server = None
                    if attempt:
                        raise
            raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        with self.lock:
            if self.server is not None:
                self.server.stop()
                self.server = None


class WarmWorkers:
    """One warm test server per worker slot (started on first use); close() stops them all.

    Usable as a context manager. Thread-safe: requests of one slot are serialised, slots run
    in parallel.
    """

    def __init__(self) -> None:
        if os.geteuid() != 0:
            raise SandboxError("warm test workers need root (they switch to a slot uid)")
        if not hasattr(os, "pidfd_open"):
            raise SandboxError("warm test workers need os.pidfd_open (Linux 5.3+, Python 3.9+)")
        self._log_dir = Path(tempfile.mkdtemp(prefix="rb-warm-logs-"))
        self._slots: dict[int, _Slot] = {}
        self._lock = threading.Lock()
        self._base = _jail_base()

    def __enter__(self) -> WarmWorkers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def restarts(self) -> int:
        """How many times a dead server was replaced."""
        return sum(s.restarts for s in self._slots.values())

    def server_pid(self, slot: int) -> int | None:
        """The pid of the slot's running server, if any (for tests and diagnostics)."""
        s = self._slots.get(slot)
        if s is None or s.server is None or not s.server.alive():
            return None
        return s.server.proc.pid

    def _slot(self, slot: int) -> _Slot:
        with self._lock:
            if slot not in self._slots:
                self._slots[slot] = _Slot(slot, self._log_dir)
            return self._slots[slot]

    def close(self) -> None:
        """Stop every server."""
        with self._lock:
            slots = list(self._slots.values())
            self._slots.clear()
        for s in slots:
            s.close()
        shutil.rmtree(self._log_dir, ignore_errors=True)

    def run_raw(
        self,
        workspace: Path,
        staging: Path,
        *,
        runner: str,
        pytest_args: Sequence[str],
        key: bytes,
        limits: Limits,
        slot: int,
        order_seed: int | None = None,
        pytest: bool = True,
    ) -> WarmRaw:
        """Run the staged hidden tests on ``workspace`` in a jailed fork of the slot's server.

        Args:
            workspace: The rollout's workspace (real path); lent to the slot uid for the run.
            staging: The private staged copy (``tests/``, ``plugin/``) from ``testing``.
            runner: ``pytest`` or ``plain``.
            pytest_args: pytest's arguments (``pytest`` runner).
            key: The per-run secret of the outcome channel.
            limits: Resource limits.
            slot: The worker slot.
            order_seed: Run the tests in a seeded random order (re-tests); None: as collected.
            pytest: The tests need pytest imported (the ``pytest`` runner always does; plain
                tests that import it): the server imports it before it forks, once.

        Returns:
            The result and the raw outcome stream.

        Raises:
            SandboxError: The server could not run the request (twice).
        """
        if runner not in ("pytest", "plain"):
            raise SandboxError(f"warm worker: runner must be 'pytest' or 'plain', got {runner!r}")
        ws = os.path.realpath(workspace)
        env = {**hidden_test_env(fd_channel(3, 4), ws, order_seed), "PWD": ws}  # as bwrap --chdir sets it
        extra = {"tests": str(staging / "tests"), "plugin_dir": str(staging / "plugin"),
                 "pytest_args": list(pytest_args), "pytest": pytest or runner == "pytest"}
        return self.request(runner, Path(ws), readonly=[str(staging)], env=env, limits=limits,
                            slot=slot, fields=extra, key=key)

    def request(self, runner: str, workspace: Path, *, readonly: Sequence[str],
                env: dict[str, str], limits: Limits, slot: int,
                fields: dict[str, Any], key: bytes = b"\0", writable: Sequence[str] = (),
                cwd: str | None = None) -> WarmRaw:
        """Send one request to the slot's server (see :meth:`run_raw`).

        ``runner`` ``exec`` runs ``fields["argv"]`` in the jail instead of tests. ``key`` goes
        as an attachment (the server splices it to the rollout and never reads it).
        ``writable`` folders are bound writable at their own path (they must be the slot
        uid's already: the channel folder); ``cwd`` (default: the workspace) is where the
        command starts.

        Raises:
            SandboxError: The server could not run the request (twice).
        """
        uid = slot_uid(slot)
        ws = str(workspace)
        cpu = max(1, int(-(-limits.cpu_s // 1)))
        req = {
            **fields,
            "op": "run",
            "runner": runner,
            "workspace": ws,
            "readonly": [*self._base["prefixes"], *readonly],
            "writable": list(writable),
            "cwd": cwd or ws,
            "env": env,
            "uid": uid,
            "seccomp": active_filter(),
            "jail": {k: self._base[k] for k in ("system", "symlinks", "files")},
            "limits": {
                "wall_s": limits.wall_s,
                "cpu_s": cpu,
                "memory_bytes": limits.memory_bytes,
                "max_procs": limits.max_procs,
                "file_size_bytes": limits.file_size_bytes,
                "output_bytes": limits.output_bytes,
                "max_output": max_output(limits),
                "tmp_bytes": max(64 * 1024**2, 2 * limits.file_size_bytes),
                "shm_bytes": SHM_BYTES,
            },
        }
        started = time.monotonic()
        with contextlib.ExitStack() as lent:
            lent.enter_context(hold_slot(uid))
            for folder in (ws, *writable):
                if os.path.isdir(folder):
                    lent.enter_context(lend_workdir(Path(folder), uid))
            answer = self._slot(slot).request(req, key, timeout=limits.wall_s + 60.0)
        resp = answer.frame
        if "error" in resp:
            raise SandboxError(f"warm test worker failed: {resp['error']}")
        reason = resp["killed_reason"] or signal_reason(resp["returncode"])
        streams = _streams(resp, answer.attachments)
        result = SandboxResult(
            returncode=resp["returncode"],
            timed_out=bool(resp["timed_out"]),
            wall_s=time.monotonic() - started,
            stdout=streams["stdout"].decode("utf-8", "replace"),
            stderr=streams["stderr"].decode("utf-8", "replace"),
            isolation=ISOLATION,
            killed_reason=reason,
            seccomp=bool(req["seccomp"]) and not resp["setup_failed"],
        )
        return WarmRaw(result, streams["channel"], bool(resp["setup_failed"]),
                       float(resp.get("setup_s", 0.0)), float(resp.get("run_s", 0.0)), _cpu(resp),
                       {str(k): v for k, v in dict(resp.get("faults") or {}).items() if isinstance(v, int)})


def _cpu(frame: dict[str, Any]) -> dict[str, tuple[float, float]]:
    """The answer's CPU report (see :class:`WarmRaw`); what is malformed is left out."""
    out: dict[str, tuple[float, float]] = {}
    cpu = frame.get("cpu")
    if isinstance(cpu, dict):
        for part, pair in cpu.items():
            if isinstance(pair, list) and len(pair) == 2 and all(isinstance(x, (int, float)) for x in pair):
                out[str(part)] = (float(pair[0]), float(pair[1]))
    return out


_CUT_MARKER: Final = "\n[... {n} bytes cut by the reliabench sandbox (output limit) ...]\n"


def _streams(frame: dict[str, Any], attachments: Sequence[bytes]) -> dict[str, bytes]:
    """The stdout, stderr and channel of an answer, from its attachments (see server.py).

    A capped output comes as its head and tail; the bytes between them are replaced by a
    marker that says how many were cut.

    Raises:
        SandboxError: The answer's attachments do not match its ``streams``.
    """
    out: dict[str, bytes] = {}
    at = 0
    try:
        for name in ("stdout", "stderr", "channel"):
            parts, cut = frame["streams"][name]
            pieces = attachments[at:at + parts]
            at += parts
            if len(pieces) != parts:
                raise ValueError(f"{name}: {len(pieces)} of {parts} parts")
            marker = _CUT_MARKER.format(n=cut).encode("utf-8") if cut else b""
            out[name] = marker.join(pieces) if len(pieces) > 1 else b"".join(pieces)
    except (KeyError, TypeError, ValueError) as exc:
        raise SandboxError(f"warm test worker sent a malformed answer: {exc}") from None
    return out


def new_key() -> bytes:
    """A fresh per-run secret for the outcome channel (same form as the fresh path's)."""
    return secrets.token_hex(32).encode("ascii")
