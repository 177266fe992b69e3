"""Infrastructure failures of agents: what they are called, which are transient, and endpoints.

A rollout whose agent could not work because of the harness or the model's service -- not
because of anything the agent did -- is recorded as ``infra_error``: it is excluded from n
(reliability is computed over the rollouts that really ran), counted and shown by ``score``
and the report, and its hidden tests are not run. Every such result carries
``meta["infra_reason"]``, one of :data:`INFRA_REASONS`::

    reason            transient  what happened
    missing_api_key   no         the variable named by api_key_env (or an ${VAR} of env) is unset
    auth              no         the endpoint answered 401 or 403 (the key is wrong or lacks rights)
    not_found         no         the endpoint answered 404 (wrong base_url or model name)
    unreachable       yes        the connection was refused or the host is unknown
    endpoint_timeout  yes        the endpoint accepted the request but did not answer in time
    rate_limited      yes        408, 409 or 429 after the client's own retries
    server_error      yes        5xx after the client's own retries
    sandbox           yes        the sandbox could not start
    test_error        yes        the hidden-test harness failed (not the agent's code)
    agent_infra       yes        an agent kind said infra_error without a reason

Transient reasons are retried by the runner with exponential back-off
(:func:`backoff_delay`, scaled by :func:`backoff_scale`); the others are not, since a retry
cannot fix a missing key. Whatever the reason, when the first :data:`EARLY_STOP_AFTER`
finished rollouts of an agent all failed for the same reason, the runner stops that agent
(see ``reliabench.run.runner``).
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlsplit

from reliabench.agents.base import AgentResult
from reliabench.errors import InvalidArgumentError
from reliabench.meta_keys import INFRA_REASON, REASON
from reliabench.records import Rollout

__all__ = [
    "BACKOFF_BASE_S",
    "BACKOFF_CAP_S",
    "EARLY_STOP_AFTER",
    "INFRA_REASONS",
    "OPENAI_BASE_URL",
    "Endpoint",
    "InfraStopWatch",
    "backoff_delay",
    "backoff_scale",
    "infra_reason_for_status",
    "infra_result",
    "is_transient",
    "parse_endpoint",
]

INFRA_REASONS: Final[dict[str, bool]] = {
    "missing_api_key": False,
    "auth": False,
    "not_found": False,
    "unreachable": True,
    "endpoint_timeout": True,
    "rate_limited": True,
    "server_error": True,
    "sandbox": True,
    "test_error": True,
    "agent_infra": True,
}
"""Infrastructure failure reason -> whether it is transient (worth retrying)."""

EARLY_STOP_AFTER: Final = 3
"""An agent whose first this-many finished rollouts failed for one infra reason is stopped."""

BACKOFF_BASE_S: Final = 2.0
BACKOFF_CAP_S: Final = 30.0

OPENAI_BASE_URL: Final = "https://api.openai.com/v1"
"""The endpoint of an ``openai`` agent without ``base_url``."""


def is_transient(reason: str | None) -> bool:
    """Whether an infra failure ``reason`` may go away on a retry (unknown reasons: yes)."""
    return INFRA_REASONS.get(reason or "", True)


def backoff_delay(attempt: int) -> float:
    """Seconds to wait before retry number ``attempt`` (1-based) of a rollout.

    ``min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2 ** (attempt - 1))``: 2, 4, 8, 16, 30, 30, ...

    Example:
        >>> [backoff_delay(a) for a in (1, 2, 3, 4, 5, 6)]
        [2.0, 4.0, 8.0, 16.0, 30.0, 30.0]
    """
    if attempt < 1:
        raise InvalidArgumentError(f"attempt must be >= 1, got {attempt!r}")
    return min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** min(attempt - 1, 30))


def backoff_scale(environ: Mapping[str, str] | None = None) -> float:
    """The factor on :func:`backoff_delay`: ``RELIABENCH_BACKOFF_SCALE`` (default 1; 0 = no wait).

    Raises:
        InvalidArgumentError: the variable is not a finite number >= 0.
    """
    env = os.environ if environ is None else environ
    raw = env.get("RELIABENCH_BACKOFF_SCALE", "1")
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not (math.isfinite(value) and value >= 0):
        raise InvalidArgumentError(f"RELIABENCH_BACKOFF_SCALE must be a number >= 0, got {raw!r}")
    return value


def infra_reason_for_status(status_code: int) -> str | None:
    """The infra reason of an HTTP error status, or None when the request itself was bad.

    Example:
        >>> [infra_reason_for_status(c) for c in (400, 401, 403, 404, 429, 500, 503)]
        [None, 'auth', 'auth', 'not_found', 'rate_limited', 'server_error', 'server_error']
    """
    if status_code in (401, 403):
        return "auth"
    if status_code == 404:
        return "not_found"
    if status_code in (408, 409, 429):
        return "rate_limited"
    if status_code >= 500:
        return "server_error"
    return None


def infra_result(reason: str, message: str, *, log: str = "", **fields: Any) -> AgentResult:
    """An ``infra_error`` result with ``meta["infra_reason"]`` and a one-line ``meta["reason"]``.

    Args:
        reason: One of :data:`INFRA_REASONS`.
        message: One line saying what failed (kept as ``meta["reason"]``).
        log: The attempt's log (``message`` is appended).
        **fields: Other ``AgentResult`` fields (tokens, transcript, meta...).
    """
    if reason not in INFRA_REASONS:
        raise InvalidArgumentError(f"reason must be one of {', '.join(INFRA_REASONS)}, got {reason!r}")
    meta = dict(fields.pop("meta", None) or {})
    meta.update({INFRA_REASON: reason, REASON: message})
    text = f"{log.rstrip()}\n{message}" if log.strip() else message
    return AgentResult(status="infra_error", log=text, meta=meta, **fields)


@dataclass(frozen=True, slots=True)
class Endpoint:
    """A model endpoint an agent talks to.

    Attributes:
        base_url: The OpenAI-compatible base URL, up to ``/v1``.
        api_key_env: The host variable holding the key (None: no key needed).
        scheme: ``http`` or ``https``.
        host: The host name or address.
        port: The TCP port (80/443 when the URL has none).
    """

    base_url: str
    api_key_env: str | None
    scheme: str
    host: str
    port: int

    @property
    def is_loopback(self) -> bool:
        """The host is this machine's loopback (``localhost``, ``127.x``, ``::1``)."""
        return self.host in ("localhost", "::1") or self.host.startswith("127.")


def parse_endpoint(base_url: str, api_key_env: str | None = None) -> Endpoint:
    """Check and split an endpoint URL.

    Raises:
        InvalidArgumentError: not an ``http``/``https`` URL with a host.

    Example:
        >>> parse_endpoint("http://127.0.0.1:8000/v1").port
        8000
        >>> parse_endpoint("https://api.openai.com/v1").port
        443
    """
    parts = urlsplit(base_url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgumentError(
            f"base_url {base_url!r}: expected an http:// or https:// URL with a host")
    try:
        port = parts.port
    except ValueError:
        raise InvalidArgumentError(f"base_url {base_url!r}: invalid port") from None
    if port is None:
        port = 443 if parts.scheme == "https" else 80
    return Endpoint(base_url.rstrip("/"), api_key_env, parts.scheme, parts.hostname, port)


class InfraStopWatch:
    """Watches the first finished rollouts of each agent; says when to stop one.

    When the first ``after`` rollouts of an agent (in the order they finish) are all
    ``infra_error`` with the same ``meta["infra_reason"]``, :meth:`observe` returns a message
    (once); otherwise None. A single success or agent failure among them clears the agent.

    Args:
        after: How many first rollouts decide (default :data:`EARLY_STOP_AFTER`).
    """

    def __init__(self, after: int = EARLY_STOP_AFTER) -> None:
        if after < 1:
            raise InvalidArgumentError(f"after must be >= 1, got {after!r}")
        self.after = after
        self._seen: dict[str, list[Rollout]] = {}

    def observe(self, rollout: Rollout) -> str | None:
        """Note one finished rollout; return why its agent must stop, or None."""
        seen = self._seen.setdefault(rollout.agent, [])
        if len(seen) >= self.after:
            return None
        seen.append(rollout)
        if len(seen) < self.after or any(r.status != "infra_error" for r in seen):
            return None
        reasons = {str(r.meta.get(INFRA_REASON, "infrastructure")) for r in seen}
        if len(reasons) != 1:
            return None
        detail = str(seen[-1].meta.get(REASON) or "").splitlines()
        return (f"its first {self.after} rollouts all failed on infrastructure "
                f"({reasons.pop()}{': ' + detail[0] if detail and detail[0] else ''})")
