"""The podman backend (sandbox/podman.py): the containment self-check, reliabench's containers.conf,
and misconfigurations that name their fix. The contract itself is tested on both runtimes in
tests/sandbox/test_containers.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from container_helpers import (
    SLOTS,
    container_backend_or_skip,
    documented_selfcheck,
    started,
    workspace_dir,
)

from reliabench.cli import main
from reliabench.errors import SandboxError
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE
from reliabench.sandbox.environment import EnvironmentSpec
from reliabench.sandbox.podman import CONTAINERS_CONF, PodmanBackend
from reliabench.sandbox.selfcheck import check_backend, check_names, run_selfcheck


def test_the_containment_self_check_runs_and_gives_the_documented_table() -> None:
    """Every check in an environment of an image task (the workspace at /workspace, as runs give it)."""
    backend = container_backend_or_skip("podman")
    report = check_backend(backend, slot=SLOTS["podman"], spec=EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    assert report.python == "python3"  # the image's: this venv's interpreter is not inside
    assert {r.check: r.status for r in report.results} == documented_selfcheck("podman"), \
        [r for r in report.results if r.status != "passed"]
    assert set(documented_selfcheck("podman")) == set(check_names())


def test_sandbox_check_through_the_registry_and_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    container_backend_or_skip("podman")
    report = run_selfcheck("podman", slot=SLOTS["podman"], checks=["network"])
    assert report.backend == "podman" and report.passed
    code = main(["sandbox", "check", "--backend", "podman", "--slot", str(SLOTS["podman"]),
                 "--check", "setsid_grandchild"])
    assert code == 0, capsys.readouterr()


def test_every_podman_call_reads_reliabenchs_containers_conf() -> None:
    backend = container_backend_or_skip("podman")
    assert backend._client_env()["CONTAINERS_CONF"] == str(CONTAINERS_CONF)
    assert CONTAINERS_CONF.is_file() and 'runtime = "runc"' in CONTAINERS_CONF.read_text()
    info = backend._call(["info", "--format", "{{.Host.OCIRuntime.Name}} {{.Host.CgroupManager}}"])
    assert info.stdout.split() == ["runc", "cgroupfs"]


def test_a_conf_naming_crun_is_refused_with_the_fix(tmp_path: Path) -> None:
    container_backend_or_skip("podman")
    conf = tmp_path / "containers.conf"
    conf.write_text('[engine]\nruntime = "crun-not-here"\n')
    backend = PodmanBackend(containers_conf=conf)
    why = backend.refuse(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    assert why is not None and "runc" in why and str(conf) in why and "\n" not in why
    with pytest.raises(SandboxError, match="runc"):
        backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))


def test_the_measured_misconfigurations_name_their_fix() -> None:
    backend = PodmanBackend()
    hybrid = ('Error: OCI runtime error: crun: cgroups in hybrid mode not supported, drop all controllers '
              'from cgroupv2')
    assert 'runtime = "runc"' in (backend._explain(hybrid) or "")
    ulimits = "Error: OCI runtime error: runc: ... setrlimit RLIMIT_NOFILE: Operation not permitted"
    assert "default_ulimits" in (backend._explain(ulimits) or "")
    assert backend._explain("Error: something else") is None


def test_ulimits_above_the_hosts_in_a_conf_are_capped(tmp_path: Path) -> None:
    """A containers.conf asking for more than this host's hard limits still starts containers."""
    container_backend_or_skip("podman")
    conf = tmp_path / "containers.conf"
    conf.write_text(CONTAINERS_CONF.read_text().replace("nofile=20000:20000", "nofile=100000000:100000000"))
    backend = PodmanBackend(containers_conf=conf)
    with workspace_dir() as ws, started(backend, ws) as env:
        assert int(env.exec(["sh", "-c", "ulimit -Hn"]).stdout) <= 20000


def test_not_root_is_refused_with_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    backend = PodmanBackend()
    if backend._binary() is None:
        pytest.skip("podman is not installed")
    why = backend.refuse(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    assert why is not None and "needs root" in why and "--sandbox bubblewrap" in why


def test_a_missing_podman_names_the_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", "/nonexistent")
    backend = PodmanBackend()
    assert backend.refuse(EnvironmentSpec(image=DEFAULT_TEST_IMAGE)) == (
        "podman is not installed: apt-get install podman runc catatonit (or scripts/containers/setup.sh)")
    with pytest.raises(SandboxError, match="podman is not installed"):
        backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
