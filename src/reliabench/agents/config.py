"""The agents file (``agents.toml``): one ``[[agents]]`` table per agent.

::

    [[agents]]
    name = "gpt-4o-mini"          # unique within the file
    kind = "openai"               # command | openai | replay | python | any registered kind
    model = "gpt-4o-mini"         # ... the kind's own keys

:func:`load_agents` validates the whole file once, at the entry: TOML syntax, the
``agents`` array, each table's ``name`` and ``kind``, duplicate names, then every
kind's own keys (unknown keys, missing keys, wrong types), and the ``[[endpoints]]`` tables
(per-endpoint limits, :mod:`reliabench.agents.endpoint_limits`). Every problem raises a
:class:`~reliabench.errors.ConfigError` whose one-line message names the file and the field,
for example ``agents.toml: agents[2].timeout_s: expected a positive number, got -1``.
Relative paths in the file are relative to the file's folder.

Kind factories use :class:`FieldReader` to read their keys with the same messages; third-party
kinds can use it too: a kind is a factory ``(table, context) -> Agent`` named by an entry point
``kind = "module:factory"`` in the group ``reliabench.agents`` (or registered in-process with
``register_agent_kind``). Kinds load when a file names them.
"""

from __future__ import annotations

import contextlib
import math
import shlex
from collections.abc import Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reliabench.agents.base import AGENT_KIND_REGISTRY, Agent, AgentContext
from reliabench.errors import ConfigError
from reliabench.files.toml import read_toml

if TYPE_CHECKING:
    from reliabench.tasks.suite import Suite

__all__ = ["COMMON_KEYS", "FieldReader", "PathReference", "load_agents", "load_builtin_kinds",
           "recording_paths"]

COMMON_KEYS: frozenset[str] = frozenset({"name", "kind"})
"""Keys every ``[[agents]]`` table has, whatever its kind."""


@dataclass(frozen=True, slots=True)
class PathReference:
    """A path an agents file refers to (:meth:`FieldReader.resolve_path` resolved it).

    Attributes:
        config_path: The agents file.
        field: ``agents[i].key``, as in error messages.
        written: The value as written (after ``{agents_dir}`` is replaced).
        resolved: The absolute path it resolves to.
    """

    config_path: Path
    field: str
    written: str
    resolved: Path


_path_log: ContextVar[list[PathReference] | None] = ContextVar("reliabench_agent_paths", default=None)


@contextlib.contextmanager
def recording_paths() -> Iterator[list[PathReference]]:
    """Collect every path that agents files loaded inside the block refer to.

    Executors that run agents on other machines use it to know which files to ship
    (:mod:`reliabench.run.executors.ray_bundle`).
    """
    log: list[PathReference] = []
    token = _path_log.set(log)
    try:
        yield log
    finally:
        _path_log.reset(token)


def load_builtin_kinds() -> None:
    """Load every agent kind now: the built-ins and the entry points of ``reliabench.agents``.

    Kinds otherwise load when an agents file names them; this finds a broken plugin early.

    Raises:
        UsageError: an agent kind plugin fails to load or is not an agent factory.
    """
    AGENT_KIND_REGISTRY.load_all()


def _type_name(value: object) -> str:
    return {
        bool: "a boolean", int: "an integer", float: "a number", str: "a string",
        list: "an array", dict: "a table",
    }.get(type(value), type(value).__name__)


class FieldReader:
    """Read and check the keys of one ``[[agents]]`` table, with ConfigError on any problem.

    Construction rejects keys that are neither common (``name``, ``kind``) nor in ``keys``.

    Args:
        table: The agent's table.
        ctx: Where the table comes from (file and position).
        keys: The keys this kind accepts besides ``name`` and ``kind``.

    Raises:
        ConfigError: naming ``agents[i].key`` for the first unknown key.
    """

    def __init__(self, table: Mapping[str, Any], ctx: AgentContext, keys: Iterable[str]) -> None:
        self.table = table
        self.ctx = ctx
        allowed = COMMON_KEYS | frozenset(keys)
        for key in table:
            if key not in allowed:
                kind = table.get("kind", "?")
                raise ctx.error(
                    key,
                    f"unknown key for kind {kind!r} (allowed: {', '.join(sorted(allowed))})",
                )

    @property
    def base_dir(self) -> Path:
        """The agents file's folder (relative paths are relative to it)."""
        return self.ctx.config_path.parent

    def _get(self, key: str, required: bool) -> Any:
        if key not in self.table:
            if required:
                raise self.ctx.error(key, "missing required key")
            return None
        return self.table[key]

    def string(self, key: str, default: str | None = None, *, required: bool = False,
               allow_empty: bool = False) -> str | None:
        """A string value (``default`` when absent)."""
        value = self._get(key, required)
        if value is None:
            return default
        if not isinstance(value, str):
            raise self.ctx.error(key, f"expected a string, got {_type_name(value)}")
        if not value and not allow_empty:
            raise self.ctx.error(key, "expected a non-empty string")
        return value

    def required_string(self, key: str) -> str:
        """A required non-empty string."""
        value = self._get(key, True)
        if not isinstance(value, str):
            raise self.ctx.error(key, f"expected a string, got {_type_name(value)}")
        if not value:
            raise self.ctx.error(key, "expected a non-empty string")
        return value

    def boolean(self, key: str, default: bool) -> bool:
        """A boolean value."""
        value = self._get(key, False)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise self.ctx.error(key, f"expected true or false, got {value!r}")
        return value

    def number(self, key: str, default: float | None = None, *, minimum: float | None = None,
               positive: bool = False) -> float | None:
        """A finite number (integer or float), optionally bounded below."""
        value = self._get(key, False)
        if value is None:
            return default
        if (isinstance(value, bool) or not isinstance(value, (int, float))
                or not math.isfinite(value)):
            raise self.ctx.error(key, f"expected a number, got {value!r}")
        if positive and value <= 0:
            raise self.ctx.error(key, f"expected a positive number, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.ctx.error(key, f"expected a number >= {minimum:g}, got {value!r}")
        return float(value)

    def integer(self, key: str, default: int | None = None, *, minimum: int | None = None
                ) -> int | None:
        """An integer, optionally bounded below."""
        value = self._get(key, False)
        if value is None:
            return default
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.ctx.error(key, f"expected an integer, got {value!r}")
        if minimum is not None and value < minimum:
            raise self.ctx.error(key, f"expected an integer >= {minimum}, got {value!r}")
        return value

    def table_of(self, key: str) -> dict[str, Any]:
        """A table of anything (``{}`` when absent)."""
        value = self._get(key, False)
        if value is None:
            return {}
        if not isinstance(value, dict):
            raise self.ctx.error(key, f"expected a table, got {_type_name(value)}")
        return dict(value)

    def string_table(self, key: str) -> dict[str, str]:
        """A table whose values are all strings (``{}`` when absent)."""
        value = self.table_of(key)
        for k, v in value.items():
            if not isinstance(v, str):
                raise self.ctx.error(f"{key}.{k}", f"expected a string, got {_type_name(v)}")
        return value

    def string_list(self, key: str, *, required: bool = False) -> list[str]:
        """An array of strings (``[]`` when absent)."""
        value = self._get(key, required)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise self.ctx.error(key, "expected an array of strings")
        return list(value)

    def argv(self, key: str) -> list[str]:
        """A required command line: an array of strings, or a string split like a shell."""
        value = self._get(key, True)
        if isinstance(value, str):
            try:
                args = shlex.split(value)
            except ValueError as exc:
                raise self.ctx.error(key, f"cannot split the command line ({exc})") from None
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            args = list(value)
        else:
            raise self.ctx.error(key, "expected an array of strings or a command-line string")
        if not args or not args[0]:
            raise self.ctx.error(key, "expected a non-empty command")
        return args

    def path(self, key: str, *, required: bool = False, must_exist: bool = True) -> Path | None:
        """A path, relative to the agents file's folder; it must exist unless told otherwise."""
        value = self.string(key, required=required)
        if value is None:
            return None
        return self.resolve_path(key, value, must_exist=must_exist)

    def required_path(self, key: str, *, must_exist: bool = True) -> Path:
        """A required path, relative to the agents file's folder."""
        return self.resolve_path(key, self.required_string(key), must_exist=must_exist)

    def resolve_path(self, key: str, value: str, *, must_exist: bool = True) -> Path:
        """Resolve ``value`` against the agents file's folder (``~`` is expanded)."""
        p = Path(value).expanduser()
        if not p.is_absolute():
            p = self.base_dir / p
        p = p.absolute()
        log = _path_log.get()
        if log is not None:
            log.append(PathReference(self.ctx.config_path,
                                     f"agents[{self.ctx.table_index}].{key}", value, p))
        if must_exist and not p.exists():
            raise self.ctx.error(key, f"no such file or directory: {p}")
        return p


def _read_toml(path: Path) -> dict[str, Any]:
    return read_toml(path, "an agents file")


def load_agents(path: str | Path, *, suite: Suite | None = None) -> list[Agent]:
    """Load and validate an agents file.

    Args:
        path: The agents file (TOML with one ``[[agents]]`` table per agent).
        suite: The suite the agents will run on; kinds that need more of a task than its
            request (``simulated`` agents copy its reference files) get it through their
            :class:`~reliabench.agents.base.AgentContext`.

    Returns:
        The agents in file order.

    Raises:
        ConfigError: on the first problem found, naming the file and ``agents[i].field``
            (``i`` is 1-based).
        MissingExtraError: when a kind needs an optional extra that is not installed.
    """
    config_path = Path(path)
    doc = _read_toml(config_path)
    extra = sorted(set(doc) - {"agents", "endpoints"})
    if extra:
        raise ConfigError(config_path, "unknown top-level key (only [[agents]] and [[endpoints]] tables "
                          "are allowed)", field=extra[0])
    tables = doc.get("agents")
    if tables is None:
        raise ConfigError(config_path, "no [[agents]] table", field="agents")
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(config_path, "expected an array of tables ([[agents]])", field="agents")
    if not tables:
        raise ConfigError(config_path, "no [[agents]] table", field="agents")
    agents: list[Agent] = []
    seen: dict[str, int] = {}
    for i, table in enumerate(tables, start=1):
        ctx = AgentContext(config_path=config_path, table_index=i, suite=suite)
        name = table.get("name")
        if name is None:
            raise ctx.error("name", "missing required key")
        if not isinstance(name, str) or not name.strip():
            raise ctx.error("name", f"expected a non-empty string, got {name!r}")
        if name in seen:
            raise ctx.error("name", f"duplicate agent name {name!r} (also agents[{seen[name]}])")
        seen[name] = i
        kind = table.get("kind")
        known = ", ".join(sorted(AGENT_KIND_REGISTRY.names()))
        if kind is None:
            raise ctx.error("kind", f"missing required key (known kinds: {known})")
        factory = AGENT_KIND_REGISTRY.find(kind) if isinstance(kind, str) else None
        if factory is None:
            raise ctx.error("kind", f"unknown kind {kind!r} (known kinds: {known})")
        agents.append(factory(table, ctx))
    _gate_endpoints(config_path, doc, agents)
    return agents


def _gate_endpoints(config_path: Path, doc: Mapping[str, Any], agents: list[Agent]) -> None:
    """Give each agent whose endpoint has an ``[[endpoints]]`` table that endpoint's shared gate."""
    from reliabench.agents.endpoint_limits import EndpointGate, read_endpoint_limits
    from reliabench.agents.infra import Endpoint

    used: dict[str, str] = {}
    ungated: dict[str, str] = {}
    gated: list[tuple[Agent, str]] = []  # the agents that ask a gate before each request
    for agent in agents:
        endpoint = getattr(agent, "endpoint", None)
        if not isinstance(endpoint, Endpoint):
            continue
        if hasattr(agent, "gate"):
            used.setdefault(endpoint.base_url, agent.name)
            gated.append((agent, endpoint.base_url))
        else:
            ungated.setdefault(endpoint.base_url, f"{agent.name!r} (kind {agent.kind})")
    limits = read_endpoint_limits(config_path, doc, used, ungated)
    gates = {url: EndpointGate(lim) for url, lim in limits.items()}
    for agent, url in gated:
        if url in gates:
            agent.gate = gates[url]  # type: ignore[attr-defined]
