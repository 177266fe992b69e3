"""Hostile code is contained: the containment self-check on every built-in backend and the warm jail.

The attacks live in ``reliabench.sandbox.selfcheck`` (so a third-party backend runs the same ones
with ``reliabench sandbox check --backend NAME``); here each check runs on each backend and must
give the result the backend promises: ``bubblewrap`` and ``warm`` pass everything, ``namespaces``
fails only ``read_world_readable_dirs`` (permissions are its barrier), and ``none`` FAILS what it
cannot contain -- the self-check must say so, never pass it.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import backend_or_skip, python_for

from reliabench.errors import SandboxError, UnknownNameError, UsageError
from reliabench.sandbox import HostBackend, Limits, SandboxResult
from reliabench.sandbox.selfcheck import (
    CHECKS,
    CheckResult,
    SelfCheckReport,
    check_backend,
    check_names,
    run_check,
    run_selfcheck,
)

IS_ROOT = os.geteuid() == 0
SLOT = 5

# What each backend is expected to fail (every other check must pass).
EXPECTED_FAILURES: dict[str, frozenset[str]] = {
    "bubblewrap": frozenset(),
    "warm": frozenset(),
    # no private file-system view: a 0755 directory outside the workspace is readable
    "namespaces": frozenset({"read_world_readable_dirs"}),
    # rlimits and a process-group kill only
    "none": frozenset({"network", "write_outside_workspace", "read_private_dirs",
                       "read_world_readable_dirs", "setsid_grandchild", "kernel_keyring",
                       "syscall_filter"}
                      | ({"fork_bomb"} if IS_ROOT else set())),
}


def _escaped_processes() -> list[int]:
    pids = []
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
            except OSError:
                continue
            if f"rb-selfcheck-{os.getpid()}-".encode() in cmdline:  # this process's attacks only
                pids.append(int(entry.name))
    return pids


@pytest.mark.sandbox
@pytest.mark.parametrize("check", check_names())
@pytest.mark.parametrize("name", ["bubblewrap", "namespaces", "none", "warm"])
def test_containment_check(name: str, check: str) -> None:
    backend = backend_or_skip(name)
    result = run_check(backend, check, slot=SLOT, python=python_for(backend, SLOT))
    assert result.check == check
    if check in EXPECTED_FAILURES[name]:
        assert result.status == "failed", f"{name} is expected to FAIL {check}: {result}"
    else:
        assert result.status == "passed", f"{name} must pass {check}: {result.detail}"
    assert result.detail
    # whatever got through was removed: no escaped process, no file in /usr
    assert _escaped_processes() == []
    assert not list(Path("/usr").glob(f"rb-escaped-{os.getpid()}-*"))


@pytest.mark.skipif(not IS_ROOT, reason="as a normal user RLIMIT_NPROC holds for none")
def test_none_fork_bomb_is_reported_without_being_run() -> None:
    result = run_check(backend_or_skip("none"), "fork_bomb", slot=SLOT)
    assert result.status == "failed"
    assert "not run" in result.detail
    assert "RLIMIT_NPROC" in result.detail


def test_auto_is_the_backend_a_run_would_use() -> None:
    backend_or_skip("bubblewrap")
    report = run_selfcheck("auto", slot=SLOT, checks=["memory_10gb"])
    assert report.backend == "bubblewrap"  # auto picks the strongest that works here
    assert report.results == (CheckResult("memory_10gb", "passed", "MemoryError"),)


def test_the_checks_are_the_documented_ones() -> None:
    assert check_names() == (
        "fork_bomb", "infinite_loop", "sleep_forever", "memory_10gb", "file_100mb", "network",
        "write_outside_workspace", "read_private_dirs", "read_world_readable_dirs", "setsid_grandchild",
        "background_child", "kernel_keyring", "syscall_filter",
    )
    assert len({c.name for c in CHECKS}) == len(CHECKS)
    assert all(c.promise for c in CHECKS)
    doc = (Path(__file__).parents[2] / "docs" / "threat-model.md").read_text(encoding="utf-8")
    for name in check_names():
        assert f"`{name}`" in doc, f"docs/threat-model.md does not describe the check {name}"


# --------------------------------------------------------------------------------------------
# the self-check itself: broken backends fail, never pass; the report
# (the CLI, `reliabench sandbox check`, is tested in tests/commands/test_sandbox.py)
# --------------------------------------------------------------------------------------------


class _Refusing(HostBackend):
    """A backend that cannot start anything."""

    name = "refusing"

    def spawn(self, argv: object, **kw: object) -> SandboxResult:
        raise SandboxError("no sandbox here")


class _Crashing(HostBackend):
    """A backend with a bug."""

    name = "crashing"

    def spawn(self, argv: object, **kw: object) -> SandboxResult:
        raise RuntimeError("oops")


class _Silent(HostBackend):
    """A backend that pretends every command ran and printed nothing."""

    name = "silent"

    def spawn(self, argv: object, **kw: object) -> SandboxResult:
        return SandboxResult(returncode=0, timed_out=False, wall_s=0.01, stdout="", stderr="",
                             isolation="silent")


def test_a_backend_that_cannot_run_anything_fails() -> None:
    report = check_backend(_Refusing(), slot=SLOT, python="/usr/bin/python3")
    assert not report.passed
    assert {r.status for r in report.results} == {"failed"}
    assert "could not run the attack: no sandbox here" in report.result("memory_10gb").detail


def test_a_crashing_backend_fails_with_the_error() -> None:
    result = run_check(_Crashing(), "network", slot=SLOT, python="/usr/bin/python3")
    assert result == CheckResult("network", "failed", "the backend raised RuntimeError: oops")


def test_a_backend_that_runs_nothing_passes_nothing() -> None:
    report = check_backend(_Silent(), slot=SLOT)
    assert report.python is None  # nothing printed "ok": no interpreter runs in it
    assert not report.passed
    assert report.backend == "silent"
    # no python found: every Python attack is skipped with the reason; sleep is not killed
    assert report.result("sleep_forever").status == "failed"
    assert report.result("sleep_forever").detail.startswith("`sleep 1000` was not timed out")
    assert report.result("network") == CheckResult("network", "skipped",
                                                   "no Python interpreter runs in this backend")
    assert all(r.status != "passed" for r in report.results)


def test_no_python_skips_with_a_reason() -> None:
    report = check_backend(_Silent(), slot=SLOT, checks=["memory_10gb", "sleep_forever"])
    assert report.python is None
    assert report.result("memory_10gb") == CheckResult(
        "memory_10gb", "skipped", "no Python interpreter runs in this backend")
    assert [r.check for r in report.results] == ["memory_10gb", "sleep_forever"]
    assert not report.passed


def test_report_properties() -> None:
    report = SelfCheckReport("x", 0, None, (CheckResult("a", "passed", "ok"), CheckResult("b", "failed", "no")))
    assert not report.passed
    assert report.failed == (CheckResult("b", "failed", "no"),)
    with pytest.raises(UsageError, match="no check named 'c' in this report; it has: a, b"):
        report.result("c")
    assert SelfCheckReport("x", 0, None, (CheckResult("a", "passed", "ok"),)).passed


def test_validation_messages() -> None:
    with pytest.raises(UsageError, match="unknown containment check 'nope'; choose one of: fork_bomb, "):
        run_check(_Silent(), "nope")
    with pytest.raises(UsageError, match=r"slot must be an integer in \[0, 4000\), got -1"):
        check_backend(_Silent(), slot=-1)
    with pytest.raises(UsageError, match="got True"):
        run_selfcheck("none", slot=True)  # type: ignore[arg-type]
    with pytest.raises(UsageError, match="unknown containment check 'nope'"):
        run_selfcheck("none", checks=["nope"])
    with pytest.raises(UnknownNameError, match="unknown sandbox backend 'bogus'"):
        run_selfcheck("bogus")


def test_run_selfcheck_by_name() -> None:
    backend_or_skip("bubblewrap")
    report = run_selfcheck("bubblewrap", slot=SLOT, checks=["memory_10gb", "network"])
    assert report.backend == "bubblewrap"
    assert report.passed, report.results
    assert [r.status for r in report.results] == ["passed", "passed"]


def test_limits_of_the_attacks_are_what_the_docs_say() -> None:
    from reliabench.sandbox.selfcheck import SMALL

    expected = Limits(wall_s=5.0, cpu_s=5.0, memory_bytes=512 * 1024**2, max_procs=32,
                      file_size_bytes=10 * 1024**2, output_bytes=64 * 1024)
    assert expected == SMALL
