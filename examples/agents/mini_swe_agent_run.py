"""Run mini-swe-agent (``mini``) once, non-interactively, for one reliabench rollout.

Used by ``mini_swe_agent.toml`` (kind = "command"): reliabench starts this script inside the
sandbox with the workspace as the working directory. It runs ``mini`` in yolo mode on the
prompt, exits with mini's exit status, and reports tokens and cost from mini's trajectory
through reliabench's usage file (``$RELIABENCH_USAGE_FILE``, see docs/agents.md).

Usage: python3 mini_swe_agent_run.py MINI_EXECUTABLE MODEL [EXTRA MINI ARGS...]
Standard library only (it runs under /usr/bin/python3, not mini's venv).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path


def usage_from_trajectory(path: Path) -> dict[str, float]:
    """Sum the per-call token usage of a mini trajectory; its cost when mini priced it."""
    data = json.loads(path.read_text(encoding="utf-8"))
    tokens_in = tokens_out = 0
    for msg in data.get("messages", []):
        usage = ((msg.get("extra") or {}).get("response") or {}).get("usage") or {}
        tokens_in += int(usage.get("prompt_tokens") or 0)
        tokens_out += int(usage.get("completion_tokens") or 0)
    out: dict[str, float] = {"tokens_in": tokens_in, "tokens_out": tokens_out}
    cost = ((data.get("info") or {}).get("model_stats") or {}).get("instance_cost")
    if isinstance(cost, (int, float)) and cost > 0:  # 0: the model has no price in litellm
        out["usd"] = float(cost)
    return out


def main(argv: list[str]) -> int:
    """Run mini on the prompt, report its usage, return its exit status."""
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    mini, model, extra = argv[1], argv[2], argv[3:]
    prompt = Path(os.environ["RELIABENCH_PROMPT_FILE"]).read_text(encoding="utf-8")
    home = Path(tempfile.mkdtemp(prefix="mini-home-"))  # private per run, outside the workspace
    env = dict(os.environ)
    env.setdefault("MSWEA_GLOBAL_CONFIG_DIR", str(home))
    env.setdefault("MSWEA_CONFIGURED", "true")  # no interactive first-run set-up
    env.setdefault("MSWEA_SILENT_STARTUP", "1")
    env.setdefault("MSWEA_COST_TRACKING", "ignore_errors")  # local models have no price
    env.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no download of litellm's price map
    traj = home / "trajectory.json"
    cmd = [mini, "--yolo", "--exit-immediately", "--cost-limit", "0", "--model", model,
           "--task", prompt, "--output", str(traj), *extra]
    rc = subprocess.call(cmd, env=env, stdin=subprocess.DEVNULL)
    usage_file = os.environ.get("RELIABENCH_USAGE_FILE")
    if usage_file and traj.is_file():
        try:
            usage = usage_from_trajectory(traj)
            exit_status = json.loads(traj.read_text(encoding="utf-8"))["info"].get("exit_status")
            print(f"mini-swe-agent: exit_status={exit_status} usage={usage}", file=sys.stderr)
            with open(usage_file, "w", encoding="utf-8") as fh:
                json.dump(usage, fh)
        except (OSError, ValueError, KeyError) as exc:
            print(f"mini-swe-agent: no usage from the trajectory: {exc}", file=sys.stderr)
    if rc < 0:  # mini died of a signal: die of the same one, so reliabench sees it
        signal.signal(-rc, signal.SIG_DFL)
        os.kill(os.getpid(), -rc)
    return rc if rc >= 0 else 128 - rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
