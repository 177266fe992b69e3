"""Per-endpoint limits: requests in flight and per minute, shared by every agent of one endpoint.

An agents file may hold, besides its ``[[agents]]``, one ``[[endpoints]]`` table per model
endpoint it wants bounded::

    [[endpoints]]
    base_url = "http://127.0.0.1:8000/v1"   # as an agent's base_url (the OpenAI API: its default)
    max_in_flight = 8                       # requests at once, over every agent of this endpoint
    requests_per_minute = 600               # requests started per minute (evenly spaced)

:func:`read_endpoint_limits` checks the tables once, at the entry: a problem is one line,
``FILE:LINE: endpoints[i].key: what was expected`` (exit 2). Every agent whose endpoint has a
table gets that endpoint's :class:`EndpointGate` (one per endpoint per process: agents of one
endpoint share it; a Ray worker has its own). An ``openai`` agent with a gate asks it before
each request (:meth:`EndpointGate.request`) and retries 408/409/429/5xx and connection errors
itself (``max_retries`` times, as the SDK did), honouring the endpoint's ``Retry-After`` (or
``retry-after-ms``) for every agent of the endpoint (:meth:`EndpointGate.pause`); what still
fails is ``infra_error`` as before (``rate_limited``, ``server_error``, ``unreachable``), never
the model's failure, and so is a rollout whose budget ran out while it waited for the gate.
"""

from __future__ import annotations

import contextlib
import email.utils
import math
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from reliabench.agents.infra import parse_endpoint
from reliabench.errors import ConfigError, InvalidArgumentError

__all__ = [
    "ENDPOINT_KEYS",
    "MAX_RETRY_AFTER_S",
    "EndpointBusyError",
    "EndpointGate",
    "EndpointLimits",
    "parse_retry_after",
    "read_endpoint_limits",
]

ENDPOINT_KEYS: Final = frozenset({"base_url", "max_in_flight", "requests_per_minute"})
"""The keys of an ``[[endpoints]]`` table."""

MAX_RETRY_AFTER_S: Final = 60.0
"""A longer ``Retry-After`` is capped (a rollout's budget caps it further)."""


@dataclass(frozen=True, slots=True)
class EndpointLimits:
    """One ``[[endpoints]]`` table, checked.

    Attributes:
        base_url: The endpoint (normalised: no trailing ``/``).
        max_in_flight: Requests at once (None: no bound).
        requests_per_minute: Requests started per minute (None: no bound).
        source: ``FILE:LINE`` of its table.
    """

    base_url: str
    max_in_flight: int | None = None
    requests_per_minute: float | None = None
    source: str = ""


class EndpointBusyError(Exception):
    """The rollout's budget ran out while it waited for its endpoint's gate (infra, not the model's)."""


class EndpointGate:
    """The gate of one endpoint: a bound on requests in flight, an even spacing of starts, pauses.

    Thread-safe. Args ``clock`` and ``sleep`` are for tests.

    Args:
        limits: The endpoint's limits.
        clock: A monotonic clock in seconds.
        sleep: Waits that many seconds.
    """

    def __init__(self, limits: EndpointLimits, *, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> None:
        self.limits = limits
        self._clock = clock
        self._sleep = sleep
        self._lock = threading.Lock()
        self._slots = (threading.BoundedSemaphore(limits.max_in_flight)
                       if limits.max_in_flight is not None else None)
        self._spacing = 60.0 / limits.requests_per_minute if limits.requests_per_minute else 0.0
        self._next_start = -math.inf  # when the next request may start (the rate, a pause)

    def pause(self, seconds: float) -> None:
        """No request of this endpoint starts for ``seconds`` (its ``Retry-After``)."""
        with self._lock:
            self._next_start = max(self._next_start, self._clock() + max(0.0, seconds))

    def _start_at(self) -> float:
        """Reserve the next start time (rate and pauses)."""
        with self._lock:
            at = max(self._clock(), self._next_start)
            self._next_start = max(self._next_start, at + self._spacing)
            return at

    @contextlib.contextmanager
    def request(self, deadline: float) -> Iterator[None]:
        """Hold a place in flight for one request, started no earlier than the rate allows.

        Raises:
            EndpointBusyError: the ``deadline`` (of :attr:`clock`) passes first.
        """
        if self._slots is not None:
            timeout = deadline - self._clock()
            if timeout <= 0 or not self._slots.acquire(timeout=timeout):
                raise EndpointBusyError(f"{self.limits.max_in_flight} request(s) already in flight to "
                                        f"{self.limits.base_url} until the rollout's budget ran out")
        try:
            at = self._start_at()
            if at > deadline:
                raise EndpointBusyError(f"the requests per minute (or a Retry-After) of "
                                        f"{self.limits.base_url} let no request start before the "
                                        "rollout's budget ran out")
            wait = at - self._clock()
            if wait > 0:
                self._sleep(wait)
            yield
        finally:
            if self._slots is not None:
                self._slots.release()


def parse_retry_after(headers: Mapping[str, str], *, now: float | None = None) -> float | None:
    """Seconds a ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms`` header asks for.

    Capped at :data:`MAX_RETRY_AFTER_S`; None when there is none or it cannot be read.

    Example:
        >>> parse_retry_after({"retry-after": "3"}), parse_retry_after({"retry-after-ms": "250"})
        (3.0, 0.25)
        >>> parse_retry_after({"retry-after": "soon"}) is None
        True
    """
    lower = {k.lower(): v for k, v in headers.items()}
    for header, divisor in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        raw = lower.get(header)
        if raw is None:
            continue
        try:
            value = float(raw) / divisor
        except ValueError:
            continue
        if math.isfinite(value) and value >= 0:
            return min(value, MAX_RETRY_AFTER_S)
    raw = lower.get("retry-after")
    if raw is None:
        return None
    try:
        when = email.utils.parsedate_to_datetime(raw).timestamp()
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    return min(max(0.0, when - (time.time() if now is None else now)), MAX_RETRY_AFTER_S)


def _line_of(lines: list[str], index: int, key: str | None) -> int:
    """The line of the ``index``-th (1-based) ``[[endpoints]]`` table, or of ``key = ...`` in it."""
    header = re.compile(r"^\s*\[\[\s*endpoints\s*\]\]\s*(#.*)?$")
    any_header = re.compile(r"^\s*\[")
    seen = 0
    start = None
    for number, text in enumerate(lines, start=1):
        if start is None:
            if header.match(text):
                seen += 1
                if seen == index:
                    start = number
                    if key is None:
                        return number
            continue
        if any_header.match(text):
            break
        if re.match(rf"^\s*{re.escape(key or '')}\s*=", text):
            return number
    return start or 1


def read_endpoint_limits(path: Path, doc: Mapping[str, Any], used: Mapping[str, str],
                         ungated: Mapping[str, str] | None = None) -> dict[str, EndpointLimits]:
    """The ``[[endpoints]]`` tables of the agents file ``path`` (parsed as ``doc``), checked.

    Args:
        path: The agents file (for the lines of its problems).
        doc: Its parsed content.
        used: Normalised base URL -> the name of an agent that uses it and asks a gate before
            each request (a table for an endpoint no agent uses is a typo).
        ungated: Normalised base URL -> ``"NAME (kind KIND)"`` of an agent that reaches it but
            whose requests reliabench does not see (a ``command`` agent: its program talks to
            the endpoint itself, through the relay as TCP connections or CONNECT tunnels). A
            table for such an endpoint alone is refused: it would bound nothing.

    Returns:
        Normalised base URL -> its limits.

    Raises:
        ConfigError: ``FILE:LINE: endpoints[i].key: what was expected`` for the first problem.
    """
    tables = doc.get("endpoints")
    if tables is None:
        return {}
    ungated_by_url = ungated or {}
    lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise ConfigError(path, "expected an array of tables ([[endpoints]])", field="endpoints",
                          line=next((i for i, t in enumerate(lines, 1) if "endpoints" in t), 1))
    out: dict[str, EndpointLimits] = {}
    for i, table in enumerate(tables, start=1):
        def error(key: str | None, message: str, i: int = i) -> ConfigError:
            return ConfigError(path, message, line=_line_of(lines, i, key),
                               field=f"endpoints[{i}]" + (f".{key}" if key else ""))

        for key in table:
            if key not in ENDPOINT_KEYS:
                raise error(key, f"unknown key (allowed: {', '.join(sorted(ENDPOINT_KEYS))})")
        raw = table.get("base_url")
        if not isinstance(raw, str) or not raw:
            raise error("base_url" if "base_url" in table else None,
                        "expected base_url, an http:// or https:// URL of an agent's endpoint")
        try:
            url = parse_endpoint(raw).base_url
        except InvalidArgumentError as exc:
            raise error("base_url", str(exc).partition(": ")[2]) from None
        if url in out:
            raise error("base_url", f"{url} has a table already ({out[url].source})")
        if url not in used:
            if url in ungated_by_url:
                raise error("base_url", f"agent {ungated_by_url[url]} reaches {url} with requests "
                            "reliabench does not see; endpoint limits bound openai agents only "
                            "(limit the program's own concurrency, or drop this table)")
            known = ", ".join(sorted(used)) or "none"
            raise error("base_url", f"no agent of this file uses {url} (their endpoints: {known})")
        n = table.get("max_in_flight")
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
            raise error("max_in_flight", f"expected an integer >= 1, got {n!r}")
        rpm = table.get("requests_per_minute")
        if rpm is not None and (isinstance(rpm, bool) or not isinstance(rpm, (int, float))
                                or not math.isfinite(rpm) or rpm <= 0):
            raise error("requests_per_minute", f"expected a number > 0, got {rpm!r}")
        if n is None and rpm is None:
            raise error(None, "expected max_in_flight or requests_per_minute (or both)")
        out[url] = EndpointLimits(url, n, None if rpm is None else float(rpm),
                                  f"{path}:{_line_of(lines, i, None)}")
    return out
