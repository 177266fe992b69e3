"""Helpers shared by the sandbox, containment and hidden-test tests."""

from __future__ import annotations

import sys
import warnings

import pytest

from reliabench import sandbox
from reliabench.errors import SandboxError
from reliabench.sandbox import SandboxBackend, get_backend, slot_uid


def backend_or_skip(name: str) -> SandboxBackend:
    """The named backend, or skip the test when it does not work on this host."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return get_backend(name)
    except SandboxError as exc:
        pytest.skip(f"{name} backend unavailable here: {exc}")


def python_for(backend: SandboxBackend, slot: int) -> str:
    """An interpreter the backend can run: namespaces needs one the slot uid can reach."""
    if backend.name != "namespaces":
        return sys.executable
    for cand in (sys.executable, "/usr/bin/python3"):
        if sandbox._uid_can_reach(cand, slot_uid(slot), slot_uid(slot), need=5) is None:
            return cand
    pytest.skip("no interpreter reachable by the slot uid")


def endpoint_narrowing_or_skip() -> None:
    """Skip unless the agents' sandbox (``auto``) is bubblewrap, which ``network = "endpoint"`` needs."""
    from reliabench.agents import command as command_mod

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            name = command_mod.sandbox_backend("auto").name
        except SandboxError as exc:  # pragma: no cover - depends on the host
            pytest.skip(f"no sandbox: {exc}")
    if name != "bubblewrap":  # pragma: no cover - depends on the host
        pytest.skip(f'network = "endpoint" needs the bubblewrap backend; this host has {name}')
