"""Tasks in a container image, run end to end on the real podman and docker backends.

The runner's side of the contract is tested on a fake backend in tests/test_run_environments.py;
here the same runs go through reliabench's own container backends (the test image of
scripts/containers/images.sh): a replay agent's rollouts get the verdicts a bubblewrap run of
the same suite on the host gives, rollout by rollout, records carry the image and its digest,
and a command agent runs in the image, reports its usage through the channel folder and, with
``tests = "same"``, hands its machine to the tests.
"""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest
from container_helpers import RUNTIMES, container_backend_or_skip
from sandbox_helpers import backend_or_skip
from suite_helpers import write_adder_suite

from reliabench.agents.config import load_agents
from reliabench.records import Rollout
from reliabench.run.runner import RunSettings, run_suite
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE
from reliabench.store import RunStore
from reliabench.tasks.suite import load_suite

TESTS = textwrap.dedent("""
    import os
    from adder import add

    def test_small():
        assert add(1, 2) == 3

    def test_zero():
        assert add(0, 0) == 0

    def test_where():
        assert os.getcwd() == os.environ.get("RELIABENCH_EXPECTED_CWD", os.getcwd())
""")
GOOD = "def add(a, b):\n    return a + b\n"
BUGGY = "def add(a, b):\n    return a + b + (a == 0)\n"
CRASH = "import os\n\ndef add(a, b):\n    os._exit(0)\n"


def _suite(root: Path, environment: str = "") -> Path:
    suite = write_adder_suite(root, "containers", TESTS, world_readable=True)
    toml = suite / "tasks" / "adder" / "task.toml"
    toml.write_text(toml.read_text() + environment)
    os.chmod(toml, 0o644)
    return suite


def _records(out: Path) -> list[Rollout]:
    with RunStore.open_existing(out, readonly=True) as store:
        return sorted(store.rollouts(), key=lambda r: r.key)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_image_tasks_get_the_verdicts_of_the_host(base: Path, runtime: str) -> None:
    container_backend_or_skip(runtime)
    backend_or_skip("bubblewrap")
    os.chmod(base, 0o755)
    gens = [{"task_id": "adder", "rollout": i, "files": {"adder.py": code}}
            for i, code in enumerate((GOOD, BUGGY, CRASH))]
    (base / "gens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    (base / "agents.toml").write_text('[[agents]]\nname = "replayed"\nkind = "replay"\npath = "gens.jsonl"\n')
    agents = load_agents(base / "agents.toml")
    host = load_suite(_suite(base / "host"))
    boxed = load_suite(_suite(base / "boxed", f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\n'))
    run_suite(host, agents, base / "host-run", RunSettings(n=3, workers=1, sandbox="bubblewrap",
                                                            test_workers="fresh"))
    run_suite(boxed, agents, base / "boxed-run", RunSettings(n=3, workers=1, sandbox=runtime))
    on_host, in_image = _records(base / "host-run"), _records(base / "boxed-run")
    assert [(r.key, r.status, r.tests) for r in in_image] == [(r.key, r.status, r.tests) for r in on_host]
    assert [r.passes for r in in_image] == [True, False, False]
    for r in in_image:
        assert r.isolation == runtime and r.meta["test_path"] == "fresh", r.meta
        assert r.meta["image"] == DEFAULT_TEST_IMAGE and r.meta["image_digest"].startswith("sha256:")


AGENT = textwrap.dedent("""
    import json, os
    assert os.getcwd() == os.environ["RELIABENCH_WORKSPACE"] == "/workspace", os.getcwd()
    open("adder.py", "w").write("def add(a, b):\\n    return a + b\\n")
    open("/tmp/set-up-by-the-agent", "w").write("yes")
    json.dump({"tokens_in": 5, "tokens_out": 1, "usd": 0.25}, open(os.environ["RELIABENCH_USAGE_FILE"], "w"))
""")


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
@pytest.mark.parametrize("handover", ["fresh", "same"])
def test_a_command_agent_runs_in_the_image_and_hands_over_as_declared(base: Path, runtime: str,
                                                                      handover: str) -> None:
    container_backend_or_skip(runtime)
    os.chmod(base, 0o755)
    (base / "agent.py").write_text(AGENT)
    os.chmod(base / "agent.py", 0o644)
    (base / "agents.toml").write_text(
        '[[agents]]\nname = "boxer"\nkind = "command"\n'
        'command = ["/usr/bin/python3", "{agents_dir}/agent.py"]\nreadonly = ["{agents_dir}/agent.py"]\n')
    suite_dir = _suite(base / "s", f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\ntests = "{handover}"\n')
    tests = suite_dir / "tasks" / "adder" / "tests" / "test_adder.py"
    tests.write_text(TESTS + textwrap.dedent("""

        def test_the_machine_the_agent_set_up():
            assert os.path.exists("/tmp/set-up-by-the-agent")
    """))
    run_suite(load_suite(suite_dir), load_agents(base / "agents.toml"), base / "run",
              RunSettings(n=1, workers=1, sandbox=runtime))
    (r,) = _records(base / "run")
    outcomes = {t.name.split("::")[-1]: t.outcome for t in r.tests or ()}
    assert r.status == "completed" and r.isolation == runtime, r.meta.get("reason")
    assert outcomes["test_small"] == outcomes["test_zero"] == "passed", r.meta.get("reason")
    # tests = "same": the agent's own container, its processes stopped; "fresh": a new one
    assert outcomes["test_the_machine_the_agent_set_up"] == ("passed" if handover == "same" else "failed")
    assert r.cost is not None and (r.cost.tokens_in, r.cost.usd) == (5, 0.25)  # usage via the channel folder
