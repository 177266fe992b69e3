"""``reliabench show RUN``: what a run is -- its configuration, suite, agents and what it holds.

The configuration printed is the one the run was created with (``reliabench run`` keeps it);
``--format toml`` prints it alone, as a file ``reliabench run --config`` takes back.
"""

from __future__ import annotations

import datetime as _dt
import json
from collections import Counter
from pathlib import Path
from typing import Any

import click

from reliabench.commands._common import emit
from reliabench.errors import UsageError

__all__ = ["command"]


@click.command("show")
@click.argument("run_dir", metavar="RUN", type=click.Path(path_type=Path, file_okay=False, readable=False))
@click.option("--format", "fmt", type=click.Choice(["text", "toml", "json"]), default="text",
              show_default=True,
              help="text: the run and its configuration; toml: the configuration alone (a file "
                   "`reliabench run --config` takes); json: both.")
def command(run_dir: Path, fmt: str) -> None:
    """Show what RUN is: its effective run configuration, suite, agents and what it holds.

    The configuration is the one the run was created with; as TOML it is a file
    `reliabench run --config` takes back (to resume the run, or to start one like it).
    """
    from reliabench.report.marks import mark_agent
    from reliabench.run.config_file import settings_to_toml
    from reliabench.run.settings import settings_to_dict
    from reliabench.runs import RunDirectory

    with RunDirectory.open(run_dir) as run:
        info = run.info()
        settings = run.settings()
        records = run.records()
        retests = run.retests()
        adaptive = run.adaptive()
    stamp = _dt.datetime.fromtimestamp(info.created_at, tz=_dt.timezone.utc)
    created = stamp.strftime("%Y-%m-%d %H:%M:%S UTC")
    if fmt == "toml":
        if settings is None:
            raise UsageError(f"{run_dir}: the run does not keep its configuration (made before reliabench "
                             "kept it); `reliabench show RUN` prints its identity")
        emit(settings_to_toml(settings, header=[f"the configuration of the run {run_dir} (created {created})",
                                                "reliabench run --config THIS-FILE resumes it"]))
        return
    statuses = Counter(r.status for r in records)
    simulated = {r.agent for r in records if r.simulated}
    identity = {k: v for k, v in info.config.items()
                if k not in ("command_line", "agents_config", "settings", "n", "suite_path",
                             "security_policy")}
    doc: dict[str, Any] = {
        "run": str(run_dir), "created": created, "config_hash": info.config_hash,
        "suite": {**info.suite.as_dict(), "path": info.suite_path}, "agents": list(info.agents),
        "simulated_agents": sorted(simulated), "isolation": info.isolation,
        "rollouts": len(records), "statuses": dict(sorted(statuses.items())), "retests": len(retests),
        "adaptive": None if adaptive is None else {
            "finished": adaptive.finished, "rounds": len(adaptive.history), "rollouts": adaptive.rollouts,
            "fixed_rollouts": adaptive.fixed_rollouts},
        "packages": dict(info.packages), "identity": identity,
        "command_line": None if info.command_line is None else list(info.command_line),
        "settings": None if settings is None else settings_to_dict(settings),
    }
    if fmt == "json":
        emit(json.dumps(doc, indent=2) + "\n")
        return
    suite = " ".join(str(x) for x in (info.suite.name, info.suite.version) if x) or "unknown"
    lines = [
        f"run          {run_dir}",
        f"created      {created}",
        f"suite        {suite} (content hash {(info.suite.hash or '?')[:12]}) at {info.suite_path or '?'}",
        f"agents       {', '.join(mark_agent(a, simulated) for a in info.agents)}",
        f"isolation    {info.isolation or 'unknown'}",
        f"identity     {info.config_hash[:16]} (a resume must match it)",
        f"rollouts     {len(records)} recorded ("
        + ", ".join(f"{s} {c}" for s, c in sorted(statuses.items())) + f"); {len(retests)} re-test(s)",
    ]
    if adaptive is not None:
        lines.append(f"adaptive     {'finished' if adaptive.finished else 'in its rounds'} after "
                     f"{len(adaptive.history)} round(s): {adaptive.rollouts} of the fixed design's "
                     f"{adaptive.fixed_rollouts} rollouts")
    lines.append("packages     " + ", ".join(f"{k} {v}" for k, v in info.packages.items()))
    if info.command_line is not None:
        lines.append("command      " + " ".join(info.command_line))
    lines.append("")
    if settings is None:
        lines.append("configuration: not kept (the run was made before reliabench kept it); its identity:")
        lines += [f"  {k} = {json.dumps(v)}" for k, v in sorted(identity.items())]
        emit("\n".join(lines) + "\n")
        return
    lines.append("configuration (reliabench run --config FILE takes it back; show --format toml writes it):")
    emit("\n".join(lines) + "\n" + settings_to_toml(settings))
