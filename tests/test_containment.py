"""Hostile code is contained: nothing reaches the host or the network, nothing is left running.

Each scenario runs on every backend that can promise it; ``none`` promises only rlimits and a
process-group kill, so the scenarios it cannot contain are skipped for it (and say why).
"""

from __future__ import annotations

import os
import select
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip, python_for, warm_or_skip

from reliabench import sandbox
from reliabench.hidden_tests.fresh import run_hidden_tests
from reliabench.records import TestOutcome
from reliabench.sandbox import Limits, SandboxBackend, slot_uid, slots

IS_ROOT = os.geteuid() == 0
SMALL = Limits(wall_s=5.0, cpu_s=5.0, memory_bytes=512 * 1024**2, max_procs=32,
               file_size_bytes=10 * 1024**2, output_bytes=64 * 1024)
SLOT = 5






@pytest.fixture
def base() -> Iterator[Path]:
    path = Path(tempfile.mkdtemp(prefix="rb-contain-"))
    os.chmod(path, 0o711)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(params=["bubblewrap", "namespaces", "none", "warm"])
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    return backend_or_skip(request.param)


@pytest.fixture(params=["bubblewrap", "namespaces", "warm"])
def strong(request: pytest.FixtureRequest) -> SandboxBackend:
    """The backends that isolate (none does not); warm is the warm test workers' jail."""
    return backend_or_skip(request.param)


def _ws(base: Path, name: str = "ws") -> Path:
    ws = base / name
    ws.mkdir()
    return ws


def _no_procs_left() -> None:
    if IS_ROOT:
        assert slots._procs_of_uid(slot_uid(SLOT)) == []


def _run(backend: SandboxBackend, base: Path, code: str, limits: Limits = SMALL,
         **kw: object) -> sandbox.SandboxResult:
    ws = base / "ws"
    ws.mkdir(exist_ok=True)
    return backend.run([python_for(backend, SLOT), "-c", code], workdir=ws, limits=limits,
                       slot=SLOT, **kw)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------------


def test_fork_bomb(backend: SandboxBackend, base: Path) -> None:
    if backend.name == "none" and IS_ROOT:
        pytest.skip("none cannot stop a fork bomb as root (RLIMIT_NPROC is ignored for root)")
    code = (
        "import os, time\n"
        "for _ in range(100000):\n"
        "    try:\n        os.fork()\n    except OSError:\n        time.sleep(0.01)\n"
    )
    limits = Limits(wall_s=3.0, cpu_s=5.0, max_procs=24)
    start = time.monotonic()
    result = _run(backend, base, code, limits)
    assert result.timed_out or result.returncode != 0
    assert time.monotonic() - start < 15
    _no_procs_left()
    # the run goes on: the same slot works right afterwards
    assert _run(backend, base, "print('next')").stdout == "next\n"


def test_infinite_loop(backend: SandboxBackend, base: Path) -> None:
    result = _run(backend, base, "while True: pass", Limits(wall_s=1.5, cpu_s=30.0))
    assert result.timed_out
    assert result.killed_reason == "wall time limit"
    assert 1.4 < result.wall_s < 5
    _no_procs_left()


def test_sleep_1000(backend: SandboxBackend, base: Path) -> None:
    result = backend.run(["sleep", "1000"], workdir=_ws(base), limits=Limits(wall_s=1.0),
                         slot=SLOT)
    assert result.timed_out
    assert result.killed_reason == "wall time limit"
    assert result.wall_s < 4
    _no_procs_left()


def test_10gb_allocation(backend: SandboxBackend, base: Path) -> None:
    result = _run(backend, base, "b = bytearray(10 * 1024**3)\nprint('allocated')")
    assert result.returncode != 0
    assert "allocated" not in result.stdout
    assert "MemoryError" in result.stderr


def test_100mb_file_write(backend: SandboxBackend, base: Path) -> None:
    code = "with open('big.bin', 'wb') as f:\n    for _ in range(100):\n        f.write(b'x' * 2**20)"
    result = _run(backend, base, code)
    assert result.returncode != 0
    assert "File too large" in result.stderr or result.killed_reason == "file size limit"
    assert (base / "ws" / "big.bin").stat().st_size <= SMALL.file_size_bytes


def test_no_network(strong: SandboxBackend, base: Path) -> None:
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.bind(("127.0.0.1", 0))
    server.listen(5)
    port = server.getsockname()[1]
    try:
        code = (
            "import socket\n"
            f"try:\n    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
            "    print('connected')\nexcept OSError as e:\n    print('refused', e)\n"
        )
        result = _run(strong, base, code)
        readable, _, _ = select.select([server], [], [], 0.2)
        assert readable == [], "the local server saw a connection from the sandbox"
        assert "connected" not in result.stdout
        assert result.stdout.startswith("refused")
    finally:
        server.close()


def test_write_outside_workspace(strong: SandboxBackend, base: Path,
                                 tmp_path: Path) -> None:
    target = tmp_path / "escaped.txt"
    host_tmp = Path("/tmp") / f"rb-escape-{os.getpid()}.txt"
    code = (
        f"for p in ({str(target)!r}, {str(host_tmp)!r}, '/usr/escaped.txt'):\n"
        "    try:\n        open(p, 'w').write('x'); print('wrote', p)\n"
        "    except OSError as e:\n        print('denied', p, e.errno)\n"
    )
    result = _run(strong, base, code)
    assert f"denied {target}" in result.stdout
    assert "denied /usr/escaped.txt" in result.stdout
    assert not target.exists()
    assert not Path("/usr/escaped.txt").exists()
    # bubblewrap: /tmp is a private tmpfs; namespaces: files of the slot uid are removed
    assert not host_tmp.exists()
    _no_procs_left()


def test_cannot_read_other_workspace_or_hidden_tests(strong: SandboxBackend,
                                                     base: Path) -> None:
    other = _ws(base, "other-rollout")
    (other / "solution.py").write_text("SECRET_OTHER = 1\n", encoding="utf-8")
    tests = _ws(base, "hidden-tests")
    (tests / "test_x.py").write_text("SECRET_TESTS = 1\n", encoding="utf-8")
    if strong.name == "namespaces":
        # no private file system view: permissions are the barrier (as a runner sets them)
        os.chmod(other, 0o700)
        os.chmod(tests, 0o700)
    else:
        # bubblewrap: not even world-readable directories outside the binds are visible
        os.chmod(other, 0o755)
        os.chmod(tests, 0o755)
    code = (
        f"for p in ({str(other / 'solution.py')!r}, {str(tests / 'test_x.py')!r}):\n"
        "    try:\n        print('read', open(p).read())\n"
        "    except OSError as e:\n        print('denied', e.errno)\n"
    )
    result = _run(strong, base, code)
    assert "SECRET" not in result.stdout
    assert result.stdout.count("denied") == 2


def test_setsid_grandchild_is_gone(strong: SandboxBackend, base: Path) -> None:
    code = (
        "import subprocess, sys\n"
        "loop = 'import time\\nwhile True:\\n    open(\"marker\", \"a\").write(\"x\")\\n"
        "    time.sleep(0.05)'\n"
        "subprocess.Popen([sys.executable, '-c', loop], start_new_session=True,\n"
        "                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)\n"
        "import time; time.sleep(0.5)\n"
    )
    result = _run(strong, base, code)
    assert result.returncode == 0, result.stderr
    marker = base / "ws" / "marker"
    assert marker.exists()
    size = marker.stat().st_size
    time.sleep(0.4)
    assert marker.stat().st_size == size, "the setsid grandchild is still writing"
    _no_procs_left()


def test_none_kills_its_process_group(base: Path) -> None:
    backend = backend_or_skip("none")
    code = (
        "import subprocess, sys\n"
        "loop = 'import time\\nwhile True:\\n    open(\"marker\", \"a\").write(\"x\")\\n"
        "    time.sleep(0.05)'\n"
        "subprocess.Popen([sys.executable, '-c', loop], stdout=subprocess.DEVNULL,\n"
        "                 stderr=subprocess.DEVNULL)\n"
        "import time; time.sleep(0.5)\n"
    )
    result = _run(backend, base, code)
    assert result.returncode == 0
    marker = base / "ws" / "marker"
    size = marker.stat().st_size
    time.sleep(0.4)
    assert marker.stat().st_size == size


# ------------------------------------------------------------------------------------------
# the same attacks inside hidden tests: the rollout is recorded failed, with a reason
# ------------------------------------------------------------------------------------------


def _suite(base: Path, body: str) -> tuple[Path, Path]:
    ws = _ws(base, "rollout")
    (ws / "solution.py").write_text(body, encoding="utf-8")
    tests = base / "suite-tests"
    tests.mkdir()
    (tests / "test_solution.py").write_text(
        "import solution\n\n"
        "def test_one():\n    assert solution.f() == 1\n\n"
        "def test_two():\n    assert True\n",
        encoding="utf-8",
    )
    return ws, tests


EXPECTED = (TestOutcome("test_solution.py::test_one", "skipped"),
            TestOutcome("test_solution.py::test_two", "skipped"))


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ("def f():\n    while True:\n        pass\n", "timeout"),
        ("import os\ndef f():\n    while True:\n        try:\n            os.fork()\n"
         "        except OSError:\n            pass\n", "timeout"),
        ("def f():\n    return len(bytearray(10 * 1024**3))\n", "completed"),
    ],
    ids=["infinite-loop", "fork-bomb", "10gb"],
)
@pytest.mark.parametrize("path", ["fresh", "warm-pytest", "warm-plain"])
def test_hostile_solution_fails_the_rollout(base: Path, body: str, status: str, path: str) -> None:
    ws, tests = _suite(base, body)
    limits = Limits(wall_s=3.0, cpu_s=10.0, memory_bytes=1024**3, max_procs=24)
    if path == "fresh":
        run = run_hidden_tests(ws, tests, expected=EXPECTED, backend=backend_or_skip("bubblewrap"),
                               limits=limits, slot=SLOT)
    else:
        run = run_hidden_tests(ws, tests, expected=EXPECTED, worker=warm_or_skip(), limits=limits,
                               slot=SLOT, test_runner=path.removeprefix("warm-"))
        assert run.isolation == "warm"
    assert run.status == status
    assert run.outcomes[0] == TestOutcome("test_solution.py::test_one", "failed")
    assert run.reason
    _no_procs_left()
