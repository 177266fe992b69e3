"""``reliabench sandbox check`` (reliabench.commands.sandbox): the self-check's verdict as an exit code.

0 every check passed, 1 one failed, 2 usage, 3 the backend does not work here. The checks
themselves are tested on every backend in tests/sandbox/test_selfcheck.py.
"""

from __future__ import annotations

import json
import sys
import types
from collections.abc import Iterator

import pytest
from sandbox_helpers import backend_or_skip

from reliabench.cli import main
from reliabench.errors import SandboxError
from reliabench.sandbox import HostBackend
from reliabench.sandbox.selfcheck import SelfCheckReport

SLOT = 5


def test_cli_check_passes_exit_0(capsys: pytest.CaptureFixture[str]) -> None:
    backend_or_skip("bubblewrap")
    code = main(["sandbox", "check", "--backend", "bubblewrap", "--slot", str(SLOT), "--check", "file_100mb",
                 "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert out["backend"] == "bubblewrap" and out["passed"] is True
    assert out["checks"] == [{"check": "file_100mb", "status": "passed", "detail": "stopped at 10485760 bytes"}]


def test_cli_none_fails_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sandbox", "check", "--backend", "none", "--slot", str(SLOT), "--check", "network",
                 "--check", "memory_10gb"])
    captured = capsys.readouterr()
    assert code == 1
    assert "none: 1/2 check(s) passed: does NOT pass the containment self-check" in captured.err
    assert "network" in captured.out and "failed" in captured.out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--backend", "bogus"], "--backend: unknown sandbox backend 'bogus'; choose one of: auto, bubblewrap"),
        (["--check", "nope"], "unknown containment check 'nope'"),
        (["--slot", "-3"], "Invalid value for '--slot'"),
    ],
)
def test_cli_usage_errors_exit_2(args: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "check", *args]) == 2
    assert message in capsys.readouterr().err


def test_cli_unavailable_backend_exit_3(monkeypatch: pytest.MonkeyPatch,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    from reliabench.sandbox import selfcheck

    def unavailable(name: str = "auto", **kw: object) -> SelfCheckReport:
        raise SandboxError(f"sandbox backend {name!r} is not available: not on this host")

    monkeypatch.setattr(selfcheck, "run_selfcheck", unavailable)
    assert main(["sandbox", "check", "--backend", "namespaces"]) == 3
    assert "sandbox backend 'namespaces' is not available" in capsys.readouterr().err


def test_help_lists_every_check_and_the_exit_codes(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "check", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--backend NAME" in out and "--check NAME" in out and "--slot" in out
    assert " ".join(out.split()).count("Exit status: 0 every check passed; 1 a check failed or could not run; "
                                      "2 usage error; 3 the backend does not work on this host.") == 1
    assert main(["sandbox", "--help"]) == 0
    assert "check" in capsys.readouterr().out


# a third-party backend, registered through the reliabench.sandboxes entry points


class _LeakyPlugin(HostBackend):
    """A plugin that isolates nothing (it runs commands as ``none`` does)."""

    name = "leaky-plugin"

    def spawn(self, argv: object, **kw: object) -> object:
        from dataclasses import replace

        from reliabench.sandbox import NoSandboxBackend

        return replace(NoSandboxBackend().spawn(argv, **kw), isolation=self.name)  # type: ignore[arg-type]


class _WrappingPlugin(HostBackend):
    """A plugin that delegates to bubblewrap."""

    name = "wrapping-plugin"

    def spawn(self, argv: object, **kw: object) -> object:
        from dataclasses import replace

        from reliabench.sandbox import BubblewrapBackend

        return replace(BubblewrapBackend().spawn(argv, **kw), isolation=self.name)  # type: ignore[arg-type]


@pytest.fixture
def plugins(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    from entry_point_helpers import fake_entry_points

    from reliabench.sandbox import ENTRY_POINT_GROUP, registry

    fake_entry_points(monkeypatch, ENTRY_POINT_GROUP, **{"leaky-plugin": "rb_selfcheck_plugins:Leaky",
                                                         "wrapping-plugin": "rb_selfcheck_plugins:Wrapping"})
    module = types.ModuleType("rb_selfcheck_plugins")
    module.Leaky = _LeakyPlugin  # type: ignore[attr-defined]
    module.Wrapping = _WrappingPlugin  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    registry._probe.cache_clear()
    yield
    registry._probe.cache_clear()


@pytest.mark.usefixtures("plugins")
def test_a_plugin_backend_that_leaks_fails_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["sandbox", "check", "--backend", "leaky-plugin", "--slot", str(SLOT), "--check", "network",
                 "--check", "read_private_dirs", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["backend"] == "leaky-plugin" and out["passed"] is False
    assert [c["status"] for c in out["checks"]] == ["failed", "failed"]


@pytest.mark.usefixtures("plugins")
def test_a_plugin_backend_that_contains_passes_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    backend_or_skip("bubblewrap")
    code = main(["sandbox", "check", "--backend", "wrapping-plugin", "--slot", str(SLOT), "--check", "network",
                 "--check", "read_world_readable_dirs", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0, out
    assert out["backend"] == "wrapping-plugin"
    assert [c["status"] for c in out["checks"]] == ["passed", "passed"]


def test_a_host_backend_refuses_an_image_by_name(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["sandbox", "check", "--backend", "none", "--image", "debian:bookworm",
                 "--check", "network"]) == 3
    err = capsys.readouterr().err
    assert "cannot run the self-check: --image: runs in a container (debian:bookworm)" in err
    assert "Traceback" not in err
