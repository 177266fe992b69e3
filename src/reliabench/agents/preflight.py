"""Checks made before a run starts, so that a broken set-up fails in one second, not in n rollouts.

For every agent that declares an endpoint (``openai`` agents always; ``command`` agents with
``base_url``) and every ``${VAR}`` its ``env`` table refers to:

1. the API key variable (``api_key_env``) and every ``${VAR}`` must be set in the host
   environment, and an agent's network level must work here (``network = "endpoint"``
   needs the bubblewrap backend and an endpoint it can narrow to);
2. ``GET {base_url}/models`` with the key, with a short timeout (default 5 s): a refused
   connection, an unknown host or no answer in time stops the run, and so do 401 and 403
   (the key is refused). Any other answer -- 200, or 404 from a server without ``/models`` --
   counts as reachable.

``reliabench run`` runs these checks and exits with status 2 and one line per problem when
one fails; ``--no-preflight`` skips the network part (the variables are still checked).
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reliabench.agents.base import Agent
from reliabench.agents.infra import Endpoint
from reliabench.errors import PreflightError

__all__ = ["PREFLIGHT_TIMEOUT_S", "PreflightProblem", "check_agents", "preflight_error",
           "probe_endpoint"]

PREFLIGHT_TIMEOUT_S = 5.0


@dataclass(frozen=True, slots=True)
class PreflightProblem:
    """One failed check.

    Attributes:
        agent: The agent's name.
        reason: The infra reason it would have caused (``missing_api_key``, ``unreachable``,
            ``endpoint_timeout``, ``auth``).
        message: One line for the user.
        network: The check needed the network (``--no-preflight`` skips it).
    """

    agent: str
    reason: str
    message: str
    network: bool = False


def probe_endpoint(endpoint: Endpoint, api_key: str | None, *,
                   timeout_s: float = PREFLIGHT_TIMEOUT_S) -> tuple[str, str] | None:
    """``GET {base_url}/models``; return ``(reason, message)`` when the endpoint is not usable.

    Honours the usual proxy variables (``HTTPS_PROXY``...), as the agents' clients do.
    """
    url = endpoint.base_url + "/models"
    req = urllib.request.Request(url, method="GET")
    if api_key:
        req.add_header("Authorization", f"Bearer {api_key}")
    try:
        with urllib.request.urlopen(req, timeout=timeout_s) as resp:
            resp.read(1 << 16)
        return None
    except urllib.error.HTTPError as exc:
        if exc.code in (401, 403):
            detail = _error_message(exc)
            return "auth", (f"{url} answered HTTP {exc.code}: the API key"
                            f"{' in $' + endpoint.api_key_env if endpoint.api_key_env else ''} "
                            f"was refused{': ' + detail if detail else ''}")
        return None  # reachable; a server without /models answers 404
    except TimeoutError:
        return "endpoint_timeout", f"{url} did not answer within {timeout_s:g} s"
    except urllib.error.URLError as exc:
        why = exc.reason
        if isinstance(why, TimeoutError):
            return "endpoint_timeout", f"{url} did not answer within {timeout_s:g} s"
        text = why.strerror if isinstance(why, OSError) and why.strerror else str(why)
        return "unreachable", f"cannot connect to {url}: {text}"
    except (OSError, ValueError) as exc:
        return "unreachable", f"cannot connect to {url}: {exc}"


def _error_message(exc: urllib.error.HTTPError) -> str:
    try:
        body = json.loads(exc.read(1 << 16) or b"{}")
        msg = body.get("error", {}).get("message") if isinstance(body, dict) else None
        return str(msg)[:200] if msg else ""
    except (ValueError, OSError, AttributeError):
        return ""


def check_agents(agents: Sequence[Agent], *, network: bool = True,
                 timeout_s: float = PREFLIGHT_TIMEOUT_S,
                 environ: Mapping[str, str] | None = None) -> list[PreflightProblem]:
    """Run the checks of the module docstring on every agent; return what failed.

    Agents may declare ``endpoint`` (an :class:`~reliabench.agents.infra.Endpoint` or None)
    and ``env_refs`` (names of host variables they read); others are not checked. Each
    distinct endpoint and key is probed once.

    Args:
        agents: The loaded agents.
        network: Probe the endpoints (False: only the variables are checked).
        timeout_s: Per probe.
        environ: The host environment (default ``os.environ``).
    """
    env = os.environ if environ is None else environ
    problems: list[PreflightProblem] = []
    probed: dict[tuple[str, str | None], tuple[str, str] | None] = {}
    for agent in agents:
        endpoint: Endpoint | None = getattr(agent, "endpoint", None)
        refs: tuple[str, ...] = tuple(getattr(agent, "env_refs", ()))
        missing = [v for v in dict.fromkeys(
            ((endpoint.api_key_env,) if endpoint and endpoint.api_key_env else ()) + refs)
            if not env.get(v)]
        for var in missing:
            problems.append(PreflightProblem(
                agent.name, "missing_api_key",
                f"environment variable {var} is not set (export it, or fix the agents file)"))
        check_network = getattr(agent, "check_network", None)
        why = check_network() if callable(check_network) else None
        if isinstance(why, str):
            problems.append(PreflightProblem(agent.name, "sandbox", why))
        if endpoint is None or missing or not network:
            continue
        key = env.get(endpoint.api_key_env) if endpoint.api_key_env else None
        cache_key = (endpoint.base_url, key)
        if cache_key not in probed:
            probed[cache_key] = probe_endpoint(endpoint, key, timeout_s=timeout_s)
        failed = probed[cache_key]
        if failed is not None:
            problems.append(PreflightProblem(agent.name, failed[0], failed[1], network=True))
    return problems


def preflight_error(problems: Sequence[PreflightProblem]) -> PreflightError:
    """One error (one line) listing every problem, with the hint to skip the network check."""
    text = "; ".join(f"agent {p.agent!r}: {p.message}" for p in problems)
    if any(p.network for p in problems):
        text += " (skip the endpoint check with --no-preflight)"
    return PreflightError(text)
