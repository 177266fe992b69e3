"""The real agent CLIs (mini-swe-agent, aider) end to end, through the runner and the sandbox.

Each CLI runs as the example agents file under examples/agents/ configures it (kind =
"command", its own venv under .venv-agents/, network = "endpoint"), pointed at a local
OpenAI-compatible server on 127.0.0.1 that plays a scripted conversation. The CLI edits the
workspace with its own tools; the hidden tests decide. Scripts:

    correct    the right file                     -> completed, passes
    wrong      a wrong file                       -> completed, fails the hidden tests
    malformed  replies the CLI cannot act on      -> no_change (it gave up, wrote nothing)
    hang       the endpoint never answers         -> timeout
    crash      the CLI process dies (SIGSEGV) while waiting for the model -> agent_error

The venvs come from ``make agents`` (scripts/install-agent-clis.sh). Without one the test
skips -- except in CI (CI=true), where a missing venv fails.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
import tomllib

sys.path.insert(0, str(Path(__file__).parent))

import contextlib

from fake_openai_server import FakeOpenAIServer, Reply
from sandbox_helpers import endpoint_narrowing_or_skip
from suite_helpers import write_adder_suite

from reliabench.agents.config import load_agents
from reliabench.metrics.analysis import score
from reliabench.report import render_score
from reliabench.run.runner import RunSettings, run_suite
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

pytestmark = [pytest.mark.slow, pytest.mark.sandbox]

REPO = Path(__file__).parents[1]
EXAMPLES = REPO / "examples" / "agents"
VENVS = REPO / ".venv-agents"
KEY_ENV = "RB_CLI_E2E_KEY"
KEY = "sk-cli-e2e"
MODEL = "openai/fake-model"
GOOD = "def add(a, b):\n    return a + b\n"
WRONG = "def add(a, b):\n    return a + b if a >= 0 else a - b\n"
HANG_TIMEOUT_S = 20


def cli_venv(name: str, exe: str) -> Path:
    """The CLI's executable, or skip (fail in CI) when ``make agents`` has not been run."""
    path = VENVS / name / "bin" / exe
    if not path.is_file():
        msg = f"{path} is missing: run `make agents` (scripts/install-agent-clis.sh)"
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(msg + " -- CI must run the real agent CLIs")
        pytest.skip(msg)
    return path


@pytest.fixture(scope="module")
def bubblewrap() -> None:
    endpoint_narrowing_or_skip()


def make_suite(root: Path) -> Path:
    return write_adder_suite(root, "cli-e2e", textwrap.dedent("""
        from adder import add

        def test_small():
            assert add(1, 2) == 3

        def test_negative():
            assert add(-4, 1) == -3
    """), prompt="Implement add(a, b) in adder.py: return the sum of a and b.\n", timeout_s=30)


def crash_cli(marker: str) -> Reply:
    """Kill, with SIGSEGV, every process whose environment holds ``marker``, then answer."""
    needle = f"RB_SCENARIO={marker}".encode()
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            env = Path(f"/proc/{entry.name}/environ").read_bytes().split(b"\0")
            cmdline = Path(f"/proc/{entry.name}/cmdline").read_bytes()
        except OSError:
            continue
        if needle in env and b"_relay_inside.py" not in cmdline \
                and b"mini_swe_agent_run.py" not in cmdline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGSEGV)
    return Reply("too late", delay_s=1.0)


def scripts(cli: str) -> dict[str, list[Any]]:
    if cli == "mini-swe-agent":  # tool calls of the bash tool; the task ends with the magic echo
        def write(code: str) -> Reply:
            return Reply.bash(f"cat > adder.py <<'PYEOF'\n{code}PYEOF", "I will write adder.py.")

        done = Reply.bash("echo COMPLETE_TASK_AND_SUBMIT_FINAL_OUTPUT", "Done.")
        return {
            "correct": [write(GOOD), done],
            "wrong": [write(WRONG), done],
            # no tool call at all, three times in a row: mini stops (RepeatedFormatError)
            "malformed": ["I would return a + b, but I will not call any tool."],
        }
    # aider, "whole" edit format: the file name, then the complete file in a fence
    return {
        "correct": [f"adder.py\n```python\n{GOOD}```\n"],
        "wrong": [f"adder.py\n```python\n{WRONG}```\n"],
        # prose and no file: nothing aider can apply
        "malformed": ["The function should return a + b; I am not sending a file."],
    }


EXPECTED = {"correct": ("completed", True), "wrong": ("completed", False),
            "malformed": ("no_change", False), "hang": ("timeout", False),
            "crash": ("agent_error", False)}


def _here(arg: str) -> str:
    """``{agents_dir}`` as the example file's own folder (the copy lives elsewhere)."""
    return os.path.normpath(arg.replace("{agents_dir}", str(EXAMPLES))) if "{agents_dir}" in arg else arg


def agents_file(tmp: Path, cli: str, servers: dict[str, FakeOpenAIServer]) -> Path:
    """The example agents file, one table per scenario, pointed at that scenario's server."""
    example = EXAMPLES / ("mini_swe_agent.toml" if cli == "mini-swe-agent" else "aider.toml")
    (base,) = tomllib.loads(example.read_text())["agents"]
    metadata = tmp / "model-metadata.json"
    metadata.write_text(json.dumps({MODEL: {
        "max_input_tokens": 32768, "max_output_tokens": 4096, "input_cost_per_token": 1e-6,
        "output_cost_per_token": 2e-6, "litellm_provider": "openai", "mode": "chat"}}))
    out = []
    for scen, srv in servers.items():
        t = json.loads(json.dumps(base))
        t["name"] = f"{cli}-{scen}"
        t["base_url"] = srv.base_url
        t["api_key_env"] = KEY_ENV
        t["command"] = [MODEL if a == "openai/gpt-4o-mini" else _here(a) for a in t["command"]]
        t["readonly"] = [str((EXAMPLES / p).resolve()) for p in t.get("readonly", [])]
        if "--model-metadata-file" in t["command"]:  # aider: a price for the fake model
            i = t["command"].index("--model-metadata-file") + 1
            t["command"][i] = str(metadata)
            t["readonly"].append(str(metadata))
        env = t["env"]
        for k in ("OPENAI_BASE_URL", "OPENAI_API_BASE"):
            if k in env:
                env[k] = srv.base_url
        env["OPENAI_API_KEY"] = "${" + KEY_ENV + "}"
        env["RB_SCENARIO"] = f"{cli}-{scen}"
        env["MSWEA_MODEL_RETRY_STOP_AFTER_ATTEMPT"] = "1"
        t["timeout_s"] = HANG_TIMEOUT_S if scen == "hang" else 240
        out.append(t)
    lines = []
    for t in out:
        lines.append("[[agents]]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in t.items() if k != "env"]
        lines.append("[agents.env]")
        lines += [f"{k} = {json.dumps(v)}" for k, v in t["env"].items()]
        lines.append("")
    p = tmp / "agents.toml"
    p.write_text("\n".join(lines))
    return p


@pytest.mark.parametrize(("cli", "exe"), [("mini-swe-agent", "mini"), ("aider", "aider")])
def test_real_cli_end_to_end(cli: str, exe: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                             bubblewrap: None) -> None:
    cli_venv(cli, exe)
    os.chmod(tmp_path, 0o755)
    monkeypatch.setenv(KEY_ENV, KEY)
    monkeypatch.setenv("RELIABENCH_BACKOFF_SCALE", "0")
    script = scripts(cli)
    script["hang"] = [Reply("never sent", delay_s=HANG_TIMEOUT_S * 3)]
    marker = f"{cli}-crash"
    script["crash"] = [lambda body, i: crash_cli(marker)]
    servers = {s: FakeOpenAIServer(r, api_key=KEY, per_conversation=True, lifetime_s=600)
               for s, r in script.items()}
    for srv in servers.values():
        srv.start()
    try:
        path = agents_file(tmp_path, cli, servers)
        agents = load_agents(path)
        assert all(getattr(a, "network", None) == "endpoint" for a in agents)
        suite = load_suite(make_suite(tmp_path))
        out = tmp_path / "run"
        summary = run_suite(suite, agents, out, RunSettings(n=1, workers=2, scanners=(),
                                                            agents_config_hash="e2e"))
        assert summary.executed == len(EXPECTED)
        with RunStore.open_existing(out) as store:
            recs = {r.agent.rsplit("-", 1)[1]: r for r in store.rollouts()}
    finally:
        for srv in servers.values():
            srv.stop()
    logs = {s: (out / "artifacts" / "adder" / f"{cli}-{s}" / "0" / "agent.log").read_text()
            for s in recs}
    for scen, (status, passes) in EXPECTED.items():
        r = recs[scen]
        assert (r.status, r.passes) == (status, passes), f"{scen}:\n{logs[scen][-3000:]}"
        assert r.meta["network"] == "endpoint"
        assert r.cost is not None and r.cost.agent_s is not None and r.cost.agent_s > 0
    for scen in ("correct", "wrong", "malformed"):
        assert servers[scen].requests, scen  # the CLI really talked to the scripted endpoint
        assert recs[scen].meta["network_relay"]["upstream_failures"] == 0
    good = recs["correct"]
    assert good.tests is not None and [t.outcome for t in good.tests] == ["passed", "passed"]
    assert [t.outcome for t in recs["wrong"].tests or ()] == ["passed", "failed"]
    assert good.cost is not None and good.cost.tokens_in and good.cost.tokens_out
    assert good.cost.test_s is not None and good.cost.test_s > 0
    assert recs["hang"].cost is not None and recs["hang"].cost.agent_s >= HANG_TIMEOUT_S  # type: ignore[operator]
    assert "killed after the time limit" in logs["hang"]
    assert recs["crash"].meta["returncode"] != 0
    # what `score --format json` shows for the run
    doc = json.loads(render_score(score(list(recs.values()), (1,), n_resamples=0), "json"))
    by = {a["agent"]: a for a in doc["agents"]}
    cost = by[f"{cli}-correct"]["cost"]
    assert cost["agent_s"]["mean"] > 0 and cost["test_s"]["mean"] > 0
    assert cost["tokens_in"]["mean"] > 0 and cost["tokens_out"]["mean"] > 0
    assert cost["passes_per_minute"] > 0
    if cli == "aider":  # aider prints a cost for a model with a price (the metadata file)
        assert good.cost.usd is not None and good.cost.usd > 0
        assert cost["passes_per_usd"] is not None and cost["passes_per_usd"] > 0
