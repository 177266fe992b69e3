"""Tasks in a container image, run end to end on the real podman and docker backends.

The runner's side of the contract is tested on a fake backend in tests/run/test_environments.py;
here the same runs go through reliabench's own container backends: a suite whose tasks declare
the test image of scripts/containers/images.sh and a Dockerfile of the suite's own runs -n 5
with a replay agent under podman and under docker and gets the verdicts a bubblewrap run of the
same tasks on the host gives, rollout by rollout; records carry the image and its digest,
and a command agent runs in the image, reports its usage through the channel folder and, with
``tests = "same"``, hands its machine to the tests.
"""

from __future__ import annotations

import json
import os
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from container_helpers import RUNTIMES, container_backend_or_skip
from sandbox_helpers import backend_or_skip
from suite_helpers import write_adder_suite

from reliabench.agents.config import load_agents
from reliabench.files.untrusted import remove_tree
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
FLAGGED = "def add(a, b):\n    return eval(f'{a} + {b}')\n"  # right, and a Bandit finding (B307)
FORGER = ("import pytest\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
          "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
SOLUTIONS = ({"adder.py": GOOD}, {"adder.py": BUGGY}, {"adder.py": CRASH}, {"adder.py": FLAGGED},
             {"adder.py": BUGGY, "conftest.py": FORGER})
"""Rollout i of a task writes SOLUTIONS[(i + shift) % 5]: right, wrong, a crash, right with a
finding, wrong with a conftest that would forge every pass (flagged, never loaded)."""
BUILT = "FROM reliabench/python3-pytest:bookworm\nRUN mkdir /opt/from-the-suite\n"
"""The suite's own Dockerfile (built by the runtime with the network off)."""
TASKS = {"from-image": f'[environment]\nimage = "{DEFAULT_TEST_IMAGE}"\n',
         "from-dockerfile": '[environment]\ndockerfile = "environment/Dockerfile"\n'}


def _suite(root: Path, environment: str = "") -> Path:
    suite = write_adder_suite(root, "containers", TESTS, world_readable=True)
    toml = suite / "tasks" / "adder" / "task.toml"
    toml.write_text(toml.read_text() + environment)
    os.chmod(toml, 0o644)
    return suite


def two_task_suite(root: Path, *, boxed: bool) -> Path:
    """The image task and the Dockerfile task (``boxed``), or the same tasks on the host."""
    suite = write_adder_suite(root, "containers", TESTS, task_ids=tuple(TASKS), world_readable=True)
    for task, environment in TASKS.items():
        folder = suite / "tasks" / task
        (folder / "environment").mkdir(mode=0o755)
        (folder / "environment" / "Dockerfile").write_text(BUILT)
        if boxed:
            (folder / "task.toml").write_text((folder / "task.toml").read_text() + environment)
    for f in suite.rglob("*"):
        os.chmod(f, 0o755 if f.is_dir() else 0o644)
    return suite


def replay_agent(root: Path, n: int = 5) -> Path:
    """An agents file with one replay agent: rollout i of each task writes one of SOLUTIONS."""
    gens = [{"task_id": task, "rollout": i, "files": SOLUTIONS[(i + shift) % len(SOLUTIONS)]}
            for shift, task in enumerate(TASKS) for i in range(n)]
    (root / "gens.jsonl").write_text("".join(json.dumps(g) + "\n" for g in gens))
    (root / "agents.toml").write_text('[[agents]]\nname = "replayed"\nkind = "replay"\npath = "gens.jsonl"\n')
    return root / "agents.toml"


def verdicts(records: list[Rollout]) -> list[tuple[object, ...]]:
    """What must not depend on where a rollout ran: status, every outcome, findings, tamper flags."""
    return [(r.key, r.status, r.passes, tuple((t.name, t.outcome) for t in r.tests or ()),
             tuple(sorted((f.tool, f.rule_id, f.path, f.line) for f in r.findings)),
             r.tamper_suspected, tuple(r.meta.get("tamper_files") or ())) for r in records]


def _records(out: Path) -> list[Rollout]:
    with RunStore.open_existing(out, readonly=True) as store:
        return sorted(store.rollouts(), key=lambda r: r.key)


@pytest.fixture(scope="module")
def on_the_host() -> Iterator[tuple[Path, list[Rollout]]]:
    """The suite's tasks on the host under bubblewrap, -n 5: the verdicts every container run must give."""
    backend_or_skip("bubblewrap")
    root = Path(tempfile.mkdtemp(prefix="rb-test-"))
    os.chmod(root, 0o755)
    try:
        agents = load_agents(replay_agent(root))
        run_suite(load_suite(two_task_suite(root / "host", boxed=False)), agents, root / "host-run",
                  RunSettings(n=5, workers=2, sandbox="bubblewrap", test_workers="fresh"))
        yield root, _records(root / "host-run")
    finally:
        remove_tree(root)


@pytest.mark.slow
@pytest.mark.parametrize("runtime", RUNTIMES)
def test_an_image_and_a_dockerfile_suite_gets_the_verdicts_of_the_host(on_the_host: tuple[Path, list[Rollout]],
                                                                       runtime: str) -> None:
    """Issue 21's acceptance run: -n 5, a replay agent, two workers; rollout by rollout as on the host."""
    container_backend_or_skip(runtime)
    root, on_host = on_the_host
    out = root / f"{runtime}-run"
    summary = run_suite(load_suite(two_task_suite(root / runtime, boxed=True)), load_agents(root / "agents.toml"),
                        out, RunSettings(n=5, workers=2, sandbox=runtime))
    in_image = _records(out)
    assert summary.executed == 10 and summary.infra_errors == 0
    assert verdicts(in_image) == verdicts(on_host)
    # the run is not trivially equal: each kind of solution gave its own verdict, in both tasks
    right = [(shift, i) for shift, task in enumerate(TASKS) for i in range(5) if (i + shift) % 5 in (0, 3)]
    assert {(list(TASKS).index(r.task_id), r.rollout) for r in in_image if r.passes} == set(right)
    assert {f.rule_id for r in in_image for f in r.findings} >= {"B307"}
    assert sum(r.tamper_suspected for r in in_image) == 2
    images = {r.task_id: (r.meta["image"], r.meta["image_digest"]) for r in in_image}
    assert images["from-image"][0] == DEFAULT_TEST_IMAGE
    assert images["from-dockerfile"][0].startswith("reliabench-build/environment:")
    for r in in_image:
        assert r.isolation == runtime and r.meta["test_path"] == "fresh", r.meta
        assert r.meta["image_digest"] == images[r.task_id][1] and r.meta["image_digest"].startswith("sha256:")


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
