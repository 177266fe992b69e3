"""The floor under a warm pytest rollout: pytest's own session in a bare fork of a primed process.

For each task of the bundled py30 suite, its hidden tests are staged as a run stages them
(``reliabench.hidden_tests.staging.staged``: a private copy with bytecode, pytest's
assertion-rewritten bytecode included, and the one ini file), the task's reference solution is
the workspace, and pytest's configuration is prepared once as the warm server prepares it
(``reliabench.warm.pytest_session.prepare``, with the plugins the suite does not need blocked)
after one trivial session in the parent (the server's own priming, which loads what pytest
loads lazily) and with the heap frozen (``gc.freeze``), as the server freezes it after priming.
Then ``--forks`` times: ``os.fork`` and, in the child, ``run_session`` with the arguments of the
run's pytest command line (``staging.pytest_command``), timed from the call to its return.

What it leaves out, on purpose: the jail (namespaces, mounts, seccomp, privilege drop), the
outcome plugin and the import guard (a stand-in module of the same name, empty, is registered
instead: the real one needs the harness's channel) and the request and answer. So the figure
is what pytest alone spends on a task's tests on this machine: no warm rollout of that task
can have a shorter test phase. Also printed: how much of it is pytest's ``FixtureManager``
start (it parses the fixtures of every registered plugin module, once per session).

Usage::

    .venv/bin/python benchmarks/bench_pytest_floor.py [--forks 8]

Prints one line per task (median of the forks after the first) and the median over tasks.
"""

from __future__ import annotations

import argparse
import gc
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from reliabench.hidden_tests.staging import PLUGIN_MODULE, pytest_command, staged, unneeded_plugins
from reliabench.warm.pytest_session import blocked_plugins, prepare, run_session
from reliabench.warm.server import _prime_pytest_session  # the warm server's priming, as it is

PY30 = Path(__file__).resolve().parents[1] / "src/reliabench/tasks/bundled/py30/tasks"


def one_fork(args: list[str], prepared: object, workspace: Path) -> tuple[float, float, int]:
    """(session seconds, FixtureManager seconds, exit code) of one session in a fresh fork."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: one session, its figures through the pipe, then _exit
        os.close(read)
        try:
            import _pytest.fixtures

            spent = [0.0]
            start_manager = _pytest.fixtures.FixtureManager.__init__

            def timed(self: object, session: object) -> None:
                t0 = time.perf_counter()
                start_manager(self, session)  # type: ignore[arg-type]
                spent[0] += time.perf_counter() - t0

            _pytest.fixtures.FixtureManager.__init__ = timed  # type: ignore[method-assign]
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            os.chdir(workspace)
            t = time.perf_counter()
            rc = run_session(args, PLUGIN_MODULE, prepared)
            os.write(write, f"{time.perf_counter() - t} {spent[0]} {rc}".encode())
        finally:
            os._exit(0)
    os.close(write)
    with os.fdopen(read) as fh:
        text = fh.read()
    os.waitpid(pid, 0)
    wall, manager, rc = text.split()
    return float(wall), float(manager), int(rc)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--forks", type=int, default=8, help="sessions per task (the first is not counted)")
    opts = ap.parse_args()
    os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
    sys.dont_write_bytecode = True
    stand_in = Path(tempfile.mkdtemp(prefix="rb-floor-"))
    (stand_in / f"{PLUGIN_MODULE}.py").write_text("# stand-in for the outcome plugin\n", encoding="utf-8")
    sys.path.insert(0, str(stand_in))
    _prime_pytest_session()  # it removes PYTEST_DISABLE_PLUGIN_AUTOLOAD when done
    os.environ["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"  # as on both test paths
    sessions: list[float] = []
    managers: list[float] = []
    print("| task | pytest session, median ms | of it FixtureManager ms |")
    print("|---|---:|---:|")
    try:
        for task in sorted(p for p in PY30.iterdir() if (p / "tests").is_dir()):
            workspace = stand_in / "ws"
            shutil.rmtree(workspace, ignore_errors=True)
            shutil.copytree(task / "solution", workspace)
            sys.path.insert(0, str(workspace))
            with staged(task / "tests", 0) as staging:
                args = pytest_command(sys.executable, staging, [], unneeded_plugins(staging / "tests"))
                args = args[args.index(str(staging / "pytest.ini")) - 1:]  # after the -c program
                prepared = prepare(blocked_plugins(args))
                gc.freeze()  # as the warm server does: a collection in a fork leaves the heap alone
                runs = [one_fork(args, prepared, workspace) for _ in range(opts.forks)][1:]
            sys.path.remove(str(workspace))
            if any(rc != 0 for _, _, rc in runs):
                print(f"{task.name}: pytest exit codes {[rc for _, _, rc in runs]} on the reference solution",
                      file=sys.stderr)
                return 1
            wall = statistics.median(w for w, _, _ in runs)
            manager = statistics.median(m for _, m, _ in runs)
            sessions.append(wall)
            managers.append(manager)
            print(f"| {task.name} | {1000 * wall:.1f} | {1000 * manager:.1f} |")
    finally:
        shutil.rmtree(stand_in, ignore_errors=True)
    print(f"\nmedian over {len(sessions)} tasks: pytest session {1000 * statistics.median(sessions):.1f} ms, "
          f"FixtureManager {1000 * statistics.median(managers):.1f} ms "
          f"(p10 {1000 * statistics.quantiles(sessions, n=10)[0]:.1f}, "
          f"p90 {1000 * statistics.quantiles(sessions, n=10)[-1]:.1f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
