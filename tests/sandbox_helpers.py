"""Helpers shared by the sandbox, containment and hidden-test tests."""

from __future__ import annotations

import atexit
import sys
import warnings
from typing import Any

import pytest

from reliabench import sandbox
from reliabench.errors import SandboxError
from reliabench.sandbox import SandboxBackend, get_backend, slot_uid

_WARM: dict[str, Any] = {}


def warm_or_skip(kind: str = "tests") -> Any:
    """The process-wide warm test workers (``tests``) or warm backend (``backend``), or skip."""
    from reliabench.warm import warm_unavailable_reason

    why = warm_unavailable_reason()
    if why is not None:
        pytest.skip(f"warm test workers unavailable here: {why}")
    if not _WARM:
        from reliabench.warm import WarmTests, WarmWorkers
        from reliabench.warm.backend import WarmBackend

        workers = WarmWorkers()
        atexit.register(workers.close)
        _WARM["tests"] = WarmTests(workers)
        _WARM["backend"] = WarmBackend(workers)
    return _WARM[kind]


def backend_or_skip(name: str) -> SandboxBackend:
    """The named backend (``warm`` included), or skip the test when it does not work here."""
    if name == "warm":
        backend: SandboxBackend = warm_or_skip("backend")
        return backend
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
