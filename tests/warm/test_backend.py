"""The warm jail as a sandbox backend (reliabench.warm.backend): what it runs, and what it refuses.

Its containment is the self-check's (tests/sandbox/test_selfcheck.py runs every check on it).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from sandbox_helpers import warm_or_skip

from reliabench.errors import SandboxError
from reliabench.sandbox import Limits, SandboxBackend

SLOT = 6


@pytest.fixture
def backend() -> SandboxBackend:
    warm: SandboxBackend = warm_or_skip("backend")
    return warm


@pytest.fixture
def ws(base: Path) -> Path:
    work = base / "ws"
    work.mkdir()
    return work


def test_runs_a_command_in_the_workdir(backend: SandboxBackend, ws: Path) -> None:
    result = backend.run([sys.executable, "-c", "import os; print(os.getcwd()); open('out.txt', 'w').write('x')"],
                         workdir=ws, limits=Limits(wall_s=20.0), slot=SLOT)
    assert (result.returncode, result.stdout, result.isolation) == (0, f"{ws}\n", "warm")
    assert (ws / "out.txt").read_text() == "x"


def test_readonly_paths_are_visible_and_read_only(backend: SandboxBackend, ws: Path) -> None:
    data = ws.parent / "data"
    data.mkdir()
    (data / "f.txt").write_text("shared")
    os.chmod(data, 0o755)
    code = (f"print(open({str(data / 'f.txt')!r}).read())\n"
            f"try:\n    open({str(data / 'g.txt')!r}, 'w')\nexcept OSError as e:\n    print('denied', e.errno)\n")
    result = backend.run([sys.executable, "-c", code], workdir=ws, readonly=[data], limits=Limits(wall_s=20.0),
                         slot=SLOT)
    assert result.stdout.splitlines()[0] == "shared"
    assert result.stdout.splitlines()[1].startswith("denied")
    assert not (data / "g.txt").exists()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"network": True}, r"the warm backend cannot give network = 'host' \(it gives none\)"),
        ({"stdin": Path("/dev/null")}, "the warm backend does not feed standard input, got stdin=/dev/null"),
    ],
    ids=["network", "stdin"],
)
def test_refuses_what_it_cannot_give_before_starting(backend: SandboxBackend, ws: Path,
                                                     kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(SandboxError, match=message):
        backend.run([sys.executable, "-c", "open('started', 'w')"], workdir=ws, slot=SLOT,
                    **kwargs)  # type: ignore[arg-type]
    assert not (ws / "started").exists()  # nothing ran


def test_is_in_the_registry_and_refuses_what_a_jail_cannot_place(backend: SandboxBackend, ws: Path) -> None:
    from reliabench.sandbox import HOST, SANDBOXES, EnvironmentSpec, Mount, available_backends

    assert "warm" in SANDBOXES.names() and "warm" not in available_backends()
    start = backend.start  # type: ignore[attr-defined]
    prepared = backend.prepare(HOST)  # type: ignore[attr-defined]
    assert "workdir" in backend.refuse(EnvironmentSpec(workdir="/testbed"))  # type: ignore[attr-defined]
    for kwargs, message in (({"network": "endpoint"}, "endpoint"),
                            ({"mounts": [Mount(ws.parent, target="/x")]}, "own path")):
        with pytest.raises(SandboxError, match=message):
            start(prepared, workspace=ws, slot=SLOT, **kwargs)
    env = start(prepared, workspace=ws, slot=SLOT)
    try:
        with pytest.raises(SandboxError, match="standard input"):
            env.exec(["cat"], stdin=b"x")
        res = env.exec(["sh", "-c", f"echo used > {env.channel_dir}/usage.json"])
        assert res.returncode == 0, res.stderr
        assert (env.channel_host / "usage.json").read_text() == "used\n"
    finally:
        env.close()
