"""The sandbox backends: API, probing, limits, output capture, workspace ownership."""

from __future__ import annotations

import importlib.metadata
import logging
import os
import shutil
import stat
import sys
import types
import warnings
from pathlib import Path

import pytest
from entry_point_helpers import fake_entry_points
from sandbox_helpers import backend_or_skip, python_for

from reliabench.errors import InvalidArgumentError, SandboxError, UnknownNameError, UsageError
from reliabench.sandbox import (
    BACKENDS,
    ENTRY_POINT_GROUP,
    HOST,
    SANDBOXES,
    HostBackend,
    Limits,
    SandboxBackend,
    SandboxResult,
    available_backends,
    get_backend,
    registry,
    slot_uid,
    slots,
)

IS_ROOT = os.geteuid() == 0
FAST = Limits(wall_s=10.0, cpu_s=10.0, memory_bytes=1024**3, max_procs=32)







@pytest.fixture(params=["bubblewrap", "namespaces", "none"])
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    return backend_or_skip(request.param)


def _workspace(base: Path, name: str = "ws") -> Path:
    ws = base / name
    ws.mkdir(mode=0o755)
    return ws


# ------------------------------------------------------------------------------------------
# API and registry
# ------------------------------------------------------------------------------------------


RUNTIMES = ["podman", "docker"]


def test_registry_names() -> None:
    assert list(BACKENDS) == ["bubblewrap", "namespaces", "none"]  # the host backends, strongest first
    for name, cls in BACKENDS.items():
        assert cls.name == name
    assert SANDBOXES.names() == [*BACKENDS, "warm", *RUNTIMES]
    assert available_backends() == [*BACKENDS, *RUNTIMES]  # warm is reached through --test-workers


class _PluginBackend(HostBackend):
    """A third-party backend: delegates to ``none`` but records its own isolation name."""

    name = "plugin-test"

    def spawn(self, argv: object, **kw: object) -> SandboxResult:
        from dataclasses import replace

        from reliabench.sandbox import NoSandboxBackend

        result = NoSandboxBackend().spawn(argv, **kw)  # type: ignore[arg-type]
        return replace(result, isolation=self.name)


def _fake_sandbox_entry_points(monkeypatch: pytest.MonkeyPatch, **targets: str) -> None:
    fake_entry_points(monkeypatch, ENTRY_POINT_GROUP, **targets)
    module = types.ModuleType("reliabench_fake_sandbox")
    module.PluginBackend = _PluginBackend  # type: ignore[attr-defined]
    module.not_a_backend = 42  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "reliabench_fake_sandbox", module)


def test_builtins_are_declared_as_entry_points() -> None:
    """pyproject.toml declares the built-ins in the group, pointing at the registry's classes."""
    declared = {ep.name: ep.value for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}
    for name, cls in BACKENDS.items():
        assert declared.get(name) == f"{cls.__module__}:{cls.__name__}"


def test_entry_point_backend_is_listed_probed_and_used(
    monkeypatch: pytest.MonkeyPatch, base: Path
) -> None:
    _fake_sandbox_entry_points(monkeypatch, **{"plugin-test": "reliabench_fake_sandbox:PluginBackend"})
    registry._probe.cache_clear()
    try:
        assert available_backends() == [*BACKENDS, *RUNTIMES, "plugin-test"]
        backend = get_backend("plugin-test")
        assert isinstance(backend, _PluginBackend)
        result = backend.run(["/bin/echo", "hi"], workdir=_workspace(base), limits=FAST)
        assert (result.returncode, result.stdout, result.isolation) == (0, "hi\n", "plugin-test")
        # auto never picks a plugin, and a plugin cannot shadow a built-in name
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            assert get_backend("auto").name in BACKENDS
    finally:
        registry._probe.cache_clear()


def test_entry_point_cannot_shadow_a_builtin(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_sandbox_entry_points(monkeypatch, none="reliabench_fake_sandbox:PluginBackend")
    assert available_backends() == [*BACKENDS, *RUNTIMES]
    with pytest.warns(RuntimeWarning, match="WITHOUT a sandbox"):
        assert get_backend("none").name == "none"


def test_broken_entry_point_backends_are_usage_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_sandbox_entry_points(monkeypatch, gone="reliabench_no_such_module_xyz:B",
                               odd="reliabench_fake_sandbox:not_a_backend")
    with pytest.raises(UsageError, match=r"sandbox backend plugin gone \(reliabench_no_such_module_xyz:B\) "
                                         r"failed to load: ModuleNotFoundError"):
        get_backend("gone")
    with pytest.raises(UsageError, match=r"sandbox backend plugin odd .* is not a backend class .* got 42"):
        get_backend("odd")


def test_unknown_backend_lists_plugins(monkeypatch: pytest.MonkeyPatch) -> None:
    _fake_sandbox_entry_points(monkeypatch, **{"plugin-test": "reliabench_fake_sandbox:PluginBackend"})
    with pytest.raises(UnknownNameError, match=r"choose one of: auto, bubblewrap, namespaces, none, podman, docker, "
                                               r"plugin-test$"):
        get_backend("lxc")


def test_cli_sandbox_choices_come_from_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    import click

    from reliabench.commands._common import sandbox_option

    _fake_sandbox_entry_points(monkeypatch, **{"plugin-test": "reliabench_fake_sandbox:PluginBackend"})

    @click.command()
    @sandbox_option()
    def cmd(sandbox: str) -> None:
        click.echo(sandbox)

    option = next(p for p in cmd.params if p.name == "sandbox")
    # warm is registered (a run refuses it with one line: it is reached through --test-workers)
    assert list(option.type.choices) == ["auto", *BACKENDS, "warm", *RUNTIMES, "plugin-test"]  # type: ignore[attr-defined]


def test_unknown_backend_raises() -> None:
    with pytest.raises(UnknownNameError, match="unknown sandbox backend 'lxc'"):  # a usage error (exit 2)
        get_backend("lxc")


def test_none_backend_warns_and_logs(caplog: pytest.LogCaptureFixture) -> None:
    with (
        caplog.at_level(logging.WARNING, logger="reliabench.sandbox"),
        pytest.warns(RuntimeWarning, match="WITHOUT a sandbox"),
    ):
        backend = get_backend("none")
    assert backend.name == "none"
    assert any("WITHOUT a sandbox" in r.message for r in caplog.records)


def test_explicit_unavailable_backend_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    registry._probe.cache_clear()
    monkeypatch.setenv("PATH", "/nonexistent")
    try:
        with pytest.raises(SandboxError, match="'bubblewrap' is not available"):
            get_backend("bubblewrap")
    finally:
        monkeypatch.undo()
        registry._probe.cache_clear()


def test_auto_picks_the_strongest_working_backend() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        auto = get_backend("auto")
    order = list(BACKENDS)
    for stronger in order[: order.index(auto.name)]:
        assert registry._probe(stronger) is not None  # each stronger one failed its probe


def test_limits_validation() -> None:
    # a bad argument is the user's (exit 2), not an infrastructure failure of the sandbox (exit 3)
    with pytest.raises(InvalidArgumentError, match=r"Limits.wall_s must be > 0, got 0"):
        Limits(wall_s=0)
    with pytest.raises(InvalidArgumentError, match=r"Limits.output_bytes must be >= 0"):
        Limits(output_bytes=-1)


def test_slot_uid_range() -> None:
    assert slot_uid(3) == slots.SLOT_UID_BASE + 3
    with pytest.raises(SandboxError, match="slot must be in"):
        slot_uid(-1)


def test_empty_argv_and_missing_workdir(base: Path) -> None:
    backend = backend_or_skip("none")
    with pytest.raises(SandboxError, match="argv must not be empty"):
        backend.run([], workdir=base)
    with pytest.raises(SandboxError, match="workspace is not a directory"):
        backend.run(["true"], workdir=base / "missing")


# ------------------------------------------------------------------------------------------
# behaviour every backend promises
# ------------------------------------------------------------------------------------------


def test_runs_in_workdir_with_clean_env(backend: SandboxBackend, base: Path) -> None:
    ws = _workspace(base)
    py = python_for(backend, 0)
    code = (
        "import os, sys, json; open('out.txt', 'w').write('hi'); "
        "print(json.dumps({'cwd': os.getcwd(), 'env': dict(os.environ)})); "
        "print('to-stderr', file=sys.stderr); sys.exit(3)"
    )
    os.environ["RB_SECRET_TEST_VAR"] = "leak"
    try:
        result = backend.run([py, "-c", code], workdir=ws, env={"ONLY": "this"}, limits=FAST)
    finally:
        del os.environ["RB_SECRET_TEST_VAR"]
    assert isinstance(result, SandboxResult)
    assert result.returncode == 3
    assert result.isolation == backend.name
    assert not result.timed_out
    assert result.killed_reason is None
    import json

    seen = json.loads(result.stdout)
    assert seen["cwd"] == os.path.realpath(ws)
    assert seen["env"].get("ONLY") == "this"
    assert "RB_SECRET_TEST_VAR" not in seen["env"]
    assert result.stderr.strip() == "to-stderr"
    # the file the sandbox wrote belongs to the caller again, and so does the workspace
    st = os.stat(ws / "out.txt")
    assert (st.st_uid, st.st_gid) == (os.getuid(), os.getgid())
    assert stat.S_IMODE(os.stat(ws).st_mode) == 0o755


def test_output_is_truncated_with_marker(backend: SandboxBackend, base: Path) -> None:
    ws = _workspace(base)
    py = python_for(backend, 0)
    limits = Limits(wall_s=10.0, output_bytes=1000)
    result = backend.run([py, "-c", "print('A' * 5000 + 'END')"], workdir=ws, limits=limits)
    assert result.returncode == 0
    assert "bytes cut by the reliabench sandbox" in result.stdout
    assert result.stdout.startswith("A" * 400)
    assert result.stdout.rstrip().endswith("END")  # the tail is kept
    assert len(result.stdout) < 1200


def test_output_flood_is_killed(backend: SandboxBackend, base: Path) -> None:
    ws = _workspace(base)
    py = python_for(backend, 0)
    limits = Limits(wall_s=10.0, output_bytes=10_000)
    code = "import sys\nwhile True: sys.stdout.write('x' * 65536)"
    result = backend.run([py, "-c", code], workdir=ws, limits=limits)
    assert result.killed_reason == "output limit"
    assert not result.timed_out
    assert result.wall_s < 8


def test_the_channel_folder_is_the_commands_and_nothing_else(backend: SandboxBackend, base: Path) -> None:
    """What used to pass a descriptor goes through the channel folder: written inside, read outside."""
    ws = _workspace(base)
    py = python_for(backend, 0)
    env = backend.start(backend.prepare(HOST), workspace=ws, slot=0)  # type: ignore[attr-defined]
    try:
        code = (f"import os; open(os.path.join({env.channel_dir!r}, 'usage.json'), 'w').write('through')\n"
                f"print(sorted(os.listdir({env.channel_dir!r})))")
        result = env.exec([py, "-c", code], limits=FAST)
        assert result.returncode == 0, result.stderr
        assert result.stdout == "['usage.json']\n"  # fresh and empty at start
        assert (env.channel_host / "usage.json").read_text() == "through"
    finally:
        env.close()
    assert not env.channel_host.exists()


@pytest.mark.parametrize("name", ["bubblewrap", "namespaces"])
def test_readonly_paths_are_readable_not_writable(name: str, base: Path) -> None:
    backend = backend_or_skip(name)
    ws = _workspace(base)
    ro = _workspace(base, "ro")
    (ro / "data.txt").write_text("shared", encoding="utf-8")
    py = python_for(backend, 0)
    code = (
        f"print(open({str(ro / 'data.txt')!r}).read())\n"
        f"try:\n    open({str(ro / 'new.txt')!r}, 'w')\nexcept OSError as e:\n"
        "    print('denied', e.errno)\n"
    )
    result = backend.run([py, "-c", code], workdir=ws, readonly=[ro], limits=FAST)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("shared\ndenied")
    assert not (ro / "new.txt").exists()


@pytest.mark.skipif(not IS_ROOT, reason="uid switching needs root")
@pytest.mark.parametrize("name", ["bubblewrap", "namespaces"])
def test_runs_as_the_slot_uid(name: str, base: Path) -> None:
    backend = backend_or_skip(name)
    ws = _workspace(base)
    py = python_for(backend, 0)
    code = "import os; print(os.getuid(), os.getgid(), os.getgroups())"
    result = backend.run([py, "-c", code], workdir=ws, limits=FAST, slot=2)
    assert result.stdout.split() == [str(slot_uid(2)), str(slot_uid(2)), "[]"]


@pytest.mark.skipif(not IS_ROOT, reason="uid switching needs root")
def test_namespaces_explains_an_unreachable_interpreter(base: Path) -> None:
    backend = backend_or_skip("namespaces")
    hidden = base / "private"
    hidden.mkdir(mode=0o700)
    exe = hidden / "python3"
    shutil.copy("/bin/true", exe)
    with pytest.raises(SandboxError, match=r"cannot use the program .* bubblewrap backend"):
        backend.run([str(exe)], workdir=_workspace(base), limits=FAST)


@pytest.mark.skipif(not IS_ROOT, reason="the case only arises as root")
def test_bubblewrap_runs_an_interpreter_the_slot_uid_cannot_reach(base: Path) -> None:
    backend = backend_or_skip("bubblewrap")
    hidden = base / "private"
    hidden.mkdir(mode=0o700)
    exe = hidden / "mytrue"
    shutil.copy("/bin/true", exe)
    result = backend.run([str(exe)], workdir=_workspace(base), limits=FAST)
    assert result.returncode == 0, result.stderr


def test_cpu_limit_is_reported(backend: SandboxBackend, base: Path) -> None:
    ws = _workspace(base)
    py = python_for(backend, 0)
    limits = Limits(wall_s=10.0, cpu_s=1.0)
    result = backend.run([py, "-c", "while True: pass"], workdir=ws, limits=limits)
    assert not result.timed_out
    assert result.killed_reason == "cpu time limit"
    assert result.wall_s < 5


@pytest.mark.skipif(not IS_ROOT, reason="permission checks for another uid need root to set up")
def test_reach_check_walks_the_literal_path_of_a_symlink(base: Path) -> None:
    # a venv's bin/python is a symlink to a reachable interpreter, but the venv may sit in a
    # directory the slot uid cannot traverse: the check must name that directory
    private = base / "private"
    private.mkdir(mode=0o700)
    (private / "python").symlink_to("/usr/bin/python3")
    uid = slot_uid(0)
    assert slots.uid_can_reach("/usr/bin/python3", uid, uid, need=5) is None
    assert slots.uid_can_reach(str(private / "python"), uid, uid, need=5) == str(private)
