"""The ``python`` kind: an agent written as a Python function, run IN-PROCESS (trusted code).

::

    [[agents]]
    name = "my-agent"
    kind = "python"
    callable = "my_agents:solve"     # module:function (module:Class.method works too)
    path = "agents_src"              # optional: folder(s) put on sys.path, relative to this file
    timeout_s = 120                  # optional: overrides the request's budget
    [agents.options]                 # optional: passed as keyword arguments
    temperature = 0.2

The function is called as ``function(request, **options)`` and returns an
:class:`~reliabench.agents.base.AgentResult` or ``None`` (= ``completed``). Options are
allowed only if the function accepts them (named parameters or ``**kwargs``); that is
checked when the agents file is loaded, as are the import and the attribute lookup.

An exception gives status ``agent_error`` with the traceback in the log. The function runs in
a worker thread of the calling process: it is NOT sandboxed, and it cannot be killed. When it
overruns its budget the rollout is reported as ``timeout`` and the thread is abandoned (it
may keep running in the background), so only use this kind with code you trust to stop.
The function must be thread-safe when the runner uses several workers.
"""

from __future__ import annotations

import importlib
import inspect
import sys
import threading
import traceback
from collections.abc import Callable, Mapping
from typing import Any

from reliabench.agents.base import AgentContext, AgentRequest, AgentResult
from reliabench.agents.config import FieldReader

__all__ = ["PythonAgent", "import_callable", "split_spec"]

_SYS_PATH_LOCK = threading.Lock()


def split_spec(spec: str) -> tuple[str, str]:
    """Split ``module:attr.attr`` into its module and attribute path.

    Raises:
        ValueError: ``spec`` is not of that form.
    """
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name.strip() or not attr.strip():
        raise ValueError(f"expected 'module:function', got {spec!r}")
    return module_name.strip(), attr.strip()


def import_callable(spec: str) -> Callable[..., Any]:
    """Import ``module:attr.attr`` and return the callable it names.

    Raises:
        ValueError: ``spec`` is not of the form ``module:name``.
        ImportError: the module cannot be imported (whatever importing it raises propagates).
        AttributeError: the attribute does not exist.
        TypeError: the object is not callable.
    """
    module_name, attr = split_spec(spec)
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    if not callable(obj):
        raise TypeError(f"{spec!r} is not callable ({type(obj).__name__})")
    return obj  # type: ignore[no-any-return]


def _check_options(fn: Callable[..., Any], options: Mapping[str, Any]) -> str | None:
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # builtins without a signature: let the call decide
        return None
    try:
        sig.bind(object(), **options)
    except TypeError as exc:
        names = ", ".join(options)
        return f"the function does not accept these arguments (request, {names}): {exc}"
    return None


class PythonAgent:
    """Calls a Python function for each rollout (see the module docstring).

    Args:
        name: The agent's name.
        function: ``function(request, **options) -> AgentResult | None``.
        options: Keyword arguments for the function.
        timeout_s: Budget that overrides ``request.timeout_s`` when given.
        spec: The ``module:function`` string, for logs.
    """

    kind = "python"
    simulated = False

    def __init__(self, name: str, function: Callable[..., Any],
                 options: Mapping[str, Any] | None = None, timeout_s: float | None = None,
                 spec: str = "") -> None:
        self.name = name
        self.function = function
        self.options = dict(options or {})
        self.timeout_s = timeout_s
        self.spec = spec or getattr(function, "__qualname__", repr(function))

    def _call(self, request: AgentRequest) -> AgentResult:
        try:
            out = self.function(request, **self.options)
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):
                raise
            return AgentResult(status="agent_error",
                               log=f"{self.spec} raised:\n{traceback.format_exc()}")
        if out is None:
            return AgentResult(status="completed", log=f"{self.spec} returned None (completed)")
        if isinstance(out, AgentResult):
            return out
        return AgentResult(
            status="agent_error",
            log=f"{self.spec} returned {type(out).__name__}; expected an AgentResult or None",
        )

    def run(self, request: AgentRequest) -> AgentResult:
        """Call the function in a worker thread, waiting at most the rollout's budget."""
        budget = self.timeout_s if self.timeout_s is not None else request.timeout_s
        box: list[AgentResult] = []

        def target() -> None:
            box.append(self._call(request))

        worker = threading.Thread(target=target, name=f"agent-{self.name}-{request.task_id}",
                                  daemon=True)
        worker.start()
        worker.join(budget if budget and budget > 0 else None)
        if worker.is_alive():
            return AgentResult(
                status="timeout",
                log=f"{self.spec} still running after {budget:g} s; its thread was abandoned "
                    "(python agents cannot be killed)",
                meta={"abandoned_thread": True},
            )
        if not box:  # pragma: no cover - _call always appends unless interrupted
            return AgentResult(status="agent_error", log=f"{self.spec} ended without a result")
        return box[0]


def _make_python(table: Mapping[str, Any], ctx: AgentContext) -> PythonAgent:
    r = FieldReader(table, ctx, {"callable", "path", "options", "timeout_s"})
    name = r.required_string("name")
    spec = r.required_string("callable")
    raw_paths = table.get("path")
    if isinstance(raw_paths, str):
        paths = [r.resolve_path("path", raw_paths)]
    elif raw_paths is None:
        paths = []
    else:
        paths = [r.resolve_path("path", p) for p in r.string_list("path")]
    options = r.table_of("options")
    timeout_s = r.number("timeout_s", positive=True)
    with _SYS_PATH_LOCK:
        for p in reversed(paths):
            if not p.is_dir():
                raise ctx.error("path", f"not a directory: {p}")
            if str(p) not in sys.path:
                sys.path.insert(0, str(p))
        try:
            split_spec(spec)
        except ValueError as exc:
            raise ctx.error("callable", str(exc)) from None
        try:
            fn = import_callable(spec)
        except ImportError as exc:
            raise ctx.error("callable", f"cannot import {spec!r}: {exc}") from None
        except AttributeError as exc:
            raise ctx.error("callable", f"cannot find {spec!r}: {exc}") from None
        except TypeError as exc:
            raise ctx.error("callable", str(exc)) from None
        except Exception as exc:
            raise ctx.error("callable", f"importing {spec!r} raised "
                                        f"{type(exc).__name__}: {exc}") from None
    problem = _check_options(fn, options)
    if problem is not None:
        raise ctx.error("options", problem)
    return PythonAgent(name, fn, options, timeout_s, spec)
