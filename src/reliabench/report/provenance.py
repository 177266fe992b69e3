"""Where a set of figures came from: suite, agents (secrets masked), versions, isolation, seeds.

A report is only as good as what it says about its inputs. ``collect_provenance`` gathers,
for a run directory, what ``reliabench run`` stored (suite name/version/hash, the agents'
configuration, package versions, sandbox, seeds, the command line) and, for any source, what
the records themselves say (isolation levels, simulated agents). Secrets never reach a page:
``mask_secrets`` replaces every value whose key names a key, token, secret or password, and
every value of an environment table, before anything is rendered.

Examples:
    >>> mask_secrets({"api_key": "sk-123", "model": "m", "env": {"HOME": "/root"}, "max_tokens": 5})
    {'api_key': '***', 'model': 'm', 'env': {'HOME': '***'}, 'max_tokens': 5}
    >>> mask_argv(["reliabench", "run", "--api-key", "sk-1", "--token=abc", "-n", "3"])
    ['reliabench', 'run', '--api-key', '***', '--token=***', '-n', '3']
"""

from __future__ import annotations

import importlib.metadata
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from reliabench.meta_keys import SEED
from reliabench.records import Rollout

if TYPE_CHECKING:
    from reliabench.store import RunInfo

__all__ = ["MASK", "Provenance", "collect_provenance", "mask_argv", "mask_secrets"]

MASK: Final = "***"
_SECRET_NAME: Final = re.compile(r"key|token|secret|passw(or)?d|credential|auth", re.IGNORECASE)
_ENV_NAME: Final = re.compile(r"^(env|environment|environ)$", re.IGNORECASE)


def _secret_name(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def mask_secrets(value: Any, *, _under_env: bool = False) -> Any:
    """A copy of ``value`` (JSON-like) with secrets replaced by ``***``.

    Masked: the value of any key whose name contains ``key``, ``token``, ``secret``,
    ``password``, ``credential`` or ``auth`` (numbers and booleans excepted: ``max_tokens = 512``
    is no secret), and every value inside a table named ``env``/``environment``.
    """
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = str(k)
            if _under_env and not isinstance(v, Mapping):
                out[name] = MASK
            elif _ENV_NAME.match(name) and isinstance(v, Mapping):
                out[name] = mask_secrets(v, _under_env=True)
            elif _secret_name(name) and not isinstance(v, (bool, int, float, Mapping)) and v is not None:
                out[name] = MASK
            else:
                out[name] = mask_secrets(v, _under_env=_under_env)
        return out
    if isinstance(value, (list, tuple)):
        return [mask_secrets(v, _under_env=_under_env) for v in value]
    return value


def mask_argv(argv: Sequence[str]) -> list[str]:
    """A command line with the values of secret-named options masked (``--api-key X``, ``--token=X``)."""
    out: list[str] = []
    hide_next = False
    for arg in argv:
        if hide_next:
            out.append(MASK)
            hide_next = False
            continue
        if arg.startswith("-") and _secret_name(arg.split("=", 1)[0]):
            if "=" in arg:
                out.append(arg.split("=", 1)[0] + "=" + MASK)
            else:
                out.append(arg)
                hide_next = True
            continue
        if "=" in arg and not arg.startswith("-") and _secret_name(arg.split("=", 1)[0]):
            out.append(arg.split("=", 1)[0] + "=" + MASK)  # KEY=VALUE environment assignments
            continue
        out.append(arg)
    return out


@dataclass(frozen=True)
class Provenance:
    """What produced the figures of a report.

    Attributes:
        source: The path the report was made from.
        source_format: ``run`` for a run directory, else the importer's format name.
        reliabench_version: The version that rendered the report.
        run_reliabench_version: The version that made the run (run directories only).
        suite: Suite name, version and content hash (empty when unknown).
        agents: Agent names.
        simulated_agents: Agents whose rollouts are simulated.
        agents_config: The agents' configuration, secrets masked (None when not stored).
        agents_config_hash: Hash of the agents file (run directories).
        packages: Package versions of the run (run directories).
        sandbox: The sandbox backend asked for (run directories).
        isolation: Isolation levels of the rollouts with their counts.
        run_seed: The run seed (run directories).
        rollout_seeds: Whether per-rollout seeds are recorded (in each rollout's ``meta.seed``).
        command_line: The command that made the run, secrets masked (None when not stored).
        settings: Other stored run settings (scanners, limits, test timeout, tasks).
        created_at: When the run was created (epoch seconds), when known.
    """

    source: str
    source_format: str
    reliabench_version: str
    run_reliabench_version: str | None = None
    suite: Mapping[str, str | None] = field(default_factory=dict)
    agents: tuple[str, ...] = ()
    simulated_agents: tuple[str, ...] = ()
    agents_config: Any = None
    agents_config_hash: str | None = None
    packages: Mapping[str, str] = field(default_factory=dict)
    sandbox: str | None = None
    isolation: Mapping[str, int] = field(default_factory=dict)
    run_seed: int | None = None
    rollout_seeds: bool = False
    command_line: tuple[str, ...] | None = None
    settings: Mapping[str, Any] = field(default_factory=dict)
    created_at: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (already masked)."""
        return {
            "source": self.source, "source_format": self.source_format,
            "reliabench_version": self.reliabench_version,
            "run_reliabench_version": self.run_reliabench_version, "suite": dict(self.suite),
            "agents": list(self.agents), "simulated_agents": list(self.simulated_agents),
            "agents_config": self.agents_config, "agents_config_hash": self.agents_config_hash,
            "packages": dict(self.packages), "sandbox": self.sandbox, "isolation": dict(self.isolation),
            "run_seed": self.run_seed, "rollout_seeds": self.rollout_seeds,
            "command_line": list(self.command_line) if self.command_line is not None else None,
            "settings": dict(self.settings), "created_at": self.created_at,
        }


def _version() -> str:
    try:
        return importlib.metadata.version("reliabench")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - running from a checkout
        return "unknown"


def collect_provenance(records: Sequence[Rollout], source: str, source_format: str,
                       run_info: RunInfo | None = None) -> Provenance:
    """Gather the provenance of ``records`` (and of the run, given its ``RunStore.run_info()``)."""
    isolation = Counter(r.isolation or "unknown" for r in records)
    agents = tuple(sorted({r.agent for r in records}))
    simulated = tuple(sorted({r.agent for r in records if r.simulated}))
    seeds = any(SEED in r.meta for r in records)
    if run_info is None:
        return Provenance(source, source_format, _version(), agents=agents, simulated_agents=simulated,
                          isolation=dict(sorted(isolation.items())), rollout_seeds=seeds)
    config = run_info.config
    packages = dict(run_info.packages)
    argv = run_info.command_line
    agents_cfg = run_info.agents_config
    keep = ("scanners", "limits", "test_timeout_s", "tasks", "n", "security_policy")
    return Provenance(
        source=source, source_format=source_format, reliabench_version=_version(),
        run_reliabench_version=packages.get("reliabench"),
        suite=run_info.suite.as_dict(), agents=agents, simulated_agents=simulated,
        agents_config=mask_secrets(agents_cfg) if agents_cfg is not None else None,
        agents_config_hash=run_info.agents_config_hash, packages=packages,
        sandbox=run_info.sandbox, isolation=dict(sorted(isolation.items())),
        run_seed=run_info.seed, rollout_seeds=seeds,
        command_line=tuple(mask_argv(list(argv))) if argv is not None else None,
        settings=mask_secrets({k: config[k] for k in keep if k in config}),
        created_at=run_info.created_at,
    )

