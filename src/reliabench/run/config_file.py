"""``reliabench run --config run.toml``: a run's configuration in a file, checked line by line.

Every option of ``reliabench run`` has a key (docs/guide.md, "A run's configuration file")::

    suite = "py30"                  # a path (relative to this file) or a bundled suite's name
    agents = "agents.toml"          # paths are relative to this file
    out = "runs/py30"
    n = 10
    seed = 0
    workers = 4
    agents_in_flight = 64           # agent phases at once (default: workers)
    sandbox = "auto"
    scanners = ["bandit"]
    tasks = ["rle_codec"]           # none: every task
    test_timeout_s = 8.0
    test_workers = "auto"
    retest = 0
    preflight = true
    security_config = "policy.toml" # or an inline [security_policy] table
    executor = "ray"

    [executors.ray]                 # each executor's own options
    address = "ray://head:10001"

    [limits]                        # the hidden tests' resource limits
    memory_bytes = 1073741824

    [adaptive]                      # an adaptive run (its first round runs n)
    max_n = 40
    target_half_width = 0.1         # or settle = ["a,b"] (or ["all"]) and margin

A problem is one line, ``FILE:LINE: key: what was expected`` (exit 2), and nothing runs.
:func:`read_run_config` returns the values the file gives, by :class:`RunSettings` field;
``reliabench run`` lays the flags given on its command line over them. :func:`settings_to_toml`
writes a :class:`RunSettings` back as such a file (``reliabench show RUN --format toml``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import fields
from pathlib import Path
from typing import Any, Final

from reliabench.errors import ConfigError, InvalidArgumentError, ReliabenchError
from reliabench.files.toml import tomllib
from reliabench.run.settings import TEST_WORKERS, AdaptiveSettings, RunSettings
from reliabench.sandbox import Limits

__all__ = ["KNOWN_EXECUTOR_OPTIONS", "read_run_config", "settings_to_toml"]

KNOWN_EXECUTOR_OPTIONS: Final[Mapping[str, frozenset[str]]] = {"local": frozenset(),
                                                                "ray": frozenset({"address"})}
"""The options of the built-in executors' tables (a plugin's table is kept as given)."""

_SCALARS: Final = {
    "suite": "a string", "n": "an integer >= 1", "seed": "an integer", "workers": "an integer >= 1",
    "agents_in_flight": "an integer >= 1",
    "sandbox": "a string", "test_timeout_s": "a number of seconds", "test_workers": "auto, warm or fresh",
    "retest": "an integer >= 0", "preflight": "true or false", "executor": "a string",
    "agents": "a path", "out": "a path", "security_config": "a path",
}
_LISTS: Final = {"scanners": "a list of scanner names", "tasks": "a list of task ids"}
_TABLES: Final = ("limits", "adaptive", "executors", "security_policy")
_ADAPTIVE: Final = {"max_n": "an integer >= 1", "k": "an integer >= 1", "target_half_width": "a number",
                    "settle": "a list of 'A,B' pairs or ['all']", "margin": "a number >= 0"}


class _File:
    """The file's text, for the line of a key and for errors."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, dotted: str) -> int | None:
        """The line where ``dotted`` (``key`` or ``table.key``) is set or its table opens."""
        want = dotted.split(".")
        table: list[str] = []
        header = re.compile(r"^\s*\[\s*([^\[\]]+?)\s*\]\s*(#.*)?$")
        assign = re.compile(r"^\s*([A-Za-z0-9_.\"'-]+?)\s*=")
        for i, raw in enumerate(self.lines, start=1):
            m = header.match(raw)
            if m:
                table = [p.strip().strip("\"'") for p in m.group(1).split(".")]
                if table == want:
                    return i
                continue
            m = assign.match(raw)
            if m and table + [p.strip("\"'") for p in m.group(1).split(".")] == want:
                return i
        return None

    def error(self, dotted: str, message: str) -> ConfigError:
        return ConfigError(self.path, message, line=self.line_of(dotted), field=dotted)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v: Any) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


def _path(f: _File, key: str, value: Any) -> Path:
    if not isinstance(value, str) or not value:
        raise f.error(key, f"expected a path, got {value!r}")
    p = Path(value)
    return p if p.is_absolute() else f.path.parent / p


def _scalar(f: _File, key: str, value: Any) -> Any:
    ok = {
        "n": _is_int(value) and value >= 1, "workers": _is_int(value) and value >= 1,
        "agents_in_flight": _is_int(value) and value >= 1,
        "seed": _is_int(value), "retest": _is_int(value) and value >= 0,
        "test_timeout_s": _is_number(value) and value > 0, "preflight": isinstance(value, bool),
        "test_workers": value in TEST_WORKERS,
    }.get(key, isinstance(value, str) and bool(value))
    if not ok:
        raise f.error(key, f"expected {_SCALARS[key]}, got {value!r}")
    if key in ("agents", "out"):
        return _path(f, key, value)
    if key == "suite":  # a path next to this file, else a bundled suite's name
        p = _path(f, key, value)
        return str(p) if p.exists() else value
    return float(value) if key == "test_timeout_s" else value


def _strings(f: _File, key: str, value: Any, what: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise f.error(key, f"expected {what}, got {value!r}")
    return tuple(value)


def _limits(f: _File, doc: Any) -> Limits:
    if not isinstance(doc, dict):
        raise f.error("limits", f"expected a table, got {doc!r}")
    floats = {k.name for k in fields(Limits) if k.type in (float, "float")}
    names = [k.name for k in fields(Limits)]
    values: dict[str, Any] = {}
    for key, value in doc.items():
        if key not in names:
            raise f.error(f"limits.{key}", f"unknown limit (known: {', '.join(names)})")
        if key in floats and _is_number(value):
            values[key] = float(value)  # 60 and 60.0 are one limit (and one run identity)
        elif key not in floats and _is_int(value):
            values[key] = value
        else:
            kind = "a number of seconds" if key in floats else "an integer"
            raise f.error(f"limits.{key}", f"expected {kind}, got {value!r}")
    try:
        return Limits(**values)
    except ReliabenchError as exc:  # a value out of range: the message names the limit
        bad = next((k for k in values if f"Limits.{k} " in str(exc)), next(iter(values)))
        raise f.error(f"limits.{bad}", str(exc)) from None


def _adaptive(f: _File, doc: Any) -> AdaptiveSettings:
    if not isinstance(doc, dict):
        raise f.error("adaptive", f"expected a table, got {doc!r}")
    for key, value in doc.items():
        where = f"adaptive.{key}"
        if key not in _ADAPTIVE:
            raise f.error(where, f"unknown key (known: {', '.join(_ADAPTIVE)})")
        good = {"max_n": _is_int(value) and value >= 1, "k": _is_int(value) and value >= 1,
                "target_half_width": _is_number(value), "margin": _is_number(value) and value >= 0,
                "settle": isinstance(value, list) and all(isinstance(v, str) and v for v in value)}[key]
        if not good:
            raise f.error(where, f"expected {_ADAPTIVE[key]}, got {value!r}")
    if "max_n" not in doc:
        raise f.error("adaptive", "missing key max_n (the most rollouts per task)")
    return AdaptiveSettings(max_n=doc["max_n"], k=doc.get("k", 1),
                            target_half_width=None if "target_half_width" not in doc
                            else float(doc["target_half_width"]),
                            settle=tuple(doc.get("settle", ())), margin=float(doc.get("margin", 0.0)))


def _executors(f: _File, doc: Any) -> dict[str, dict[str, Any]]:
    if not isinstance(doc, dict) or not all(isinstance(v, dict) for v in doc.values()):
        raise f.error("executors", "expected one table per executor ([executors.NAME])")
    for name, table in doc.items():
        known = KNOWN_EXECUTOR_OPTIONS.get(name)
        for key, value in table.items():
            if known is not None and key not in known:
                raise f.error(f"executors.{name}.{key}", "unknown option of executor "
                              f"{name!r} (known: {', '.join(sorted(known)) or 'none'})")
            if not isinstance(value, (str, int, float, bool)):
                raise f.error(f"executors.{name}.{key}",
                              f"expected a string, number or boolean, got {value!r}")
    return {name: dict(table) for name, table in doc.items()}


def _security_policy(f: _File, doc: dict[str, Any]) -> dict[str, Any] | None:
    from reliabench.files.toml import read_toml
    from reliabench.metrics.security import load_security_config, security_config_from_dict

    if "security_config" in doc and "security_policy" in doc:
        raise f.error("security_policy", "give security_config (a file) or [security_policy], not both")
    if "security_config" in doc:
        path = _path(f, "security_config", doc["security_config"])
        load_security_config(path)  # validates, with file:field messages
        return dict(read_toml(path, "a security policy file"))
    if "security_policy" in doc:
        policy = doc["security_policy"]
        if not isinstance(policy, dict):
            raise f.error("security_policy", f"expected a table, got {policy!r}")
        try:
            security_config_from_dict(policy, f.path)
        except ConfigError as exc:
            raise f.error(f"security_policy.{exc.field}" if exc.field else "security_policy",
                          exc.detail) from None
        return dict(policy)
    return None


def read_run_config(path: str | Path) -> dict[str, Any]:
    """The values a run configuration file gives, by :class:`RunSettings` field, checked.

    Relative paths are resolved against the file's folder; ``security_config`` is read into
    ``security_policy``.

    Raises:
        ConfigError: ``FILE:LINE: key: what was expected`` for the first problem.
    """
    p = Path(path)
    try:
        text = p.read_bytes().decode("utf-8")
    except FileNotFoundError:
        raise ConfigError(p, "no such file (expected a run configuration file)") from None
    except IsADirectoryError:
        raise ConfigError(p, "is a directory (expected a run configuration file)") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(p, f"not UTF-8 ({exc})") from None
    except OSError as exc:
        raise ConfigError(p, f"cannot be read ({exc.strerror or exc})") from None
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"\(at line (\d+)", str(exc))
        line = int(m.group(1)) if m else None
        if line is None and "end of document" in str(exc):
            line = len(text.splitlines()) or 1
        raise ConfigError(p, f"invalid TOML ({exc})", line=line) from None
    f = _File(p, text)
    known = set(_SCALARS) | set(_LISTS) | set(_TABLES)
    for key in doc:
        if key not in known:
            raise f.error(key, f"unknown key (known: {', '.join(sorted(known))})")
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key in _SCALARS and key != "security_config":
            out[key] = _scalar(f, key, value)
        elif key in _LISTS:
            out[key] = _strings(f, key, value, _LISTS[key])
    if "limits" in doc:
        out["limits"] = _limits(f, doc["limits"])
    if "adaptive" in doc:
        out["adaptive"] = _adaptive(f, doc["adaptive"])
    if "executors" in doc:
        out["executor_options"] = _executors(f, doc["executors"])
    policy = _security_policy(f, doc)
    if policy is not None:
        out["security_policy"] = policy
    try:  # what RunSettings itself refuses, said at its key
        RunSettings(**{"n": 1, **{k: v for k, v in out.items() if k in _CHECKED}})
    except InvalidArgumentError as exc:
        key = str(exc).split(" ", 1)[0]
        raise f.error(key if key in doc else "executor", str(exc)) from None
    return out


_CHECKED: Final = ("n", "workers", "agents_in_flight", "test_timeout_s", "executor", "retest", "test_workers")


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    if isinstance(value, Sequence):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    raise InvalidArgumentError(f"cannot write {value!r} as TOML")


def _toml_key(key: str) -> str:
    return key if re.fullmatch(r"[A-Za-z0-9_-]+", key) else _toml_value(key)


def settings_to_toml(settings: RunSettings, *, header: Sequence[str] = ()) -> str:
    """``settings`` as a run configuration file (``--config`` reads it back to the same settings).

    ``agents_config_hash`` is left out: ``reliabench run`` computes it from the agents file.
    """
    from reliabench.run.settings import settings_to_dict

    doc = settings_to_dict(settings)
    doc.pop("agents_config_hash", None)
    lines = [f"# {h}" for h in header]
    tables: list[tuple[str, Mapping[str, Any]]] = []
    for key, value in doc.items():
        if key == "executor_options":
            tables += [(f"executors.{_toml_key(name)}", opts) for name, opts in value.items()]
        elif isinstance(value, Mapping):
            tables.append((key, value))
        else:
            lines.append(f"{key} = {_toml_value(value)}")
    for name, table in tables:
        lines += ["", f"[{name}]"] + [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in table.items()]
    return "\n".join(lines) + "\n"
