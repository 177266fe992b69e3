"""Cost of the podman and docker environments next to a plain ``run --rm`` of the same test command.

The test command is a 5-test pytest file in a workspace bind-mounted at ``/workspace``, run in
reliabench's test image (``reliabench/python3-pytest:bookworm``, built by
``scripts/containers/images.sh``). For each runtime that works here, interleaved in one process
(A B C ... A B C ..., so that a drift of the machine hits every variant alike):

* ``run --rm`` (the yardstick): ``RUNTIME run --rm --network none -v WS:/workspace -w /workspace
  IMAGE python3 -m pytest -q -p no:cacheprovider tests`` -- what a harness that starts one
  container per test run pays;
* ``environment: start+exec+close``: reliabench's environment of one rollout phase (a container
  with every limit of docs/containers.md, the slot lock, the lent workspace, the channel folder),
  the same pytest command through ``exec``, then ``close`` (the container removed);
* ``environment: start+close``: the same without the command (the per-environment cost);
* ``hidden tests of one rollout``: what the test phase of a rollout of an image task costs on
  the container path -- the runner's fresh pytest path (:class:`~reliabench.hidden_tests.fresh.FreshPytest`:
  the tests staged, the outcome socket in the channel folder, a container with the staged tests
  mounted, pytest with the outcome plugin, the container removed, the outcomes judged against
  the expected tests); a replay agent's rollout pays this plus the host's scan and record, a
  command agent's one more environment for its own phase;
* ``exec in a running environment``: only ``exec`` of the pytest command (the per-command
  cost: what each further command of a rollout pays), next to ``RUNTIME exec`` of the same
  command in a plain running container, and ``exec`` of ``true`` next to ``RUNTIME exec ... true``.

Usage::

    PYTHONPATH=src python3 benchmarks/bench_containers.py [--reps N] [--quick] [--runtime podman|docker]
    PYTHONPATH=src python3 benchmarks/bench_containers.py --one-rollout podman   # one rollout, for a
                                                             # whole-process timer (fresh interpreter)

Prints a Markdown table: median and mean seconds per run, and the ratio of medians to the
yardstick of the row's group. Run as root with the images set up (scripts/containers/setup.sh);
for docker, with reliabench's daemon running (scripts/containers/dockerd.sh start).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from reliabench.files.untrusted import remove_tree
from reliabench.hidden_tests.fresh import FreshPytest
from reliabench.hidden_tests.judging import judge_hidden_tests
from reliabench.hidden_tests.layer import fresh_open_at
from reliabench.sandbox.base import Limits
from reliabench.sandbox.containers import DEFAULT_TEST_IMAGE, ContainerBackend
from reliabench.sandbox.docker import DockerBackend
from reliabench.sandbox.environment import EnvironmentSpec
from reliabench.sandbox.podman import PodmanBackend

SOLUTION = "def add(a, b):\n    return a + b\n"
TESTS = "from solution import add\n\n" + "\n".join(
    f"def test_add_{i}():\n    assert add({i}, 1) == {i + 1}\n" for i in range(5))
PYTEST = ["python3", "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]
ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": "/tmp", "LANG": "C.UTF-8", "PYTHONPATH": "/workspace",
       "PYTHONDONTWRITEBYTECODE": "1"}
SLOTS = {"podman": 390, "docker": 392}  # and the next one: a running environment


def _workspace() -> Path:
    parent = Path(tempfile.mkdtemp(prefix="rb-bench-containers-"))
    os.chmod(parent, 0o711)
    ws = parent / "ws"
    (ws / "tests").mkdir(parents=True)
    (ws / "solution.py").write_text(SOLUTION)
    (ws / "tests" / "test_add.py").write_text(TESTS)
    os.chmod(ws, 0o755)
    return ws


def _timed(fn: Callable[[], None]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _check(proc: subprocess.CompletedProcess[bytes], what: str) -> None:
    if proc.returncode != 0 or b"5 passed" not in proc.stdout:
        raise SystemExit(f"{what} failed ({proc.returncode}): {proc.stdout[-300:]!r} {proc.stderr[-300:]!r}")


def variants(backend: ContainerBackend, ws: Path,
             with_running: bool = True) -> tuple[dict[str, Callable[[], None]], Callable[[], None]]:
    """The timed variants of one runtime, and a clean-up.

    ``with_running=False``: only the variants that need no running container (the running
    containers get a workspace of their own).
    """
    binary = backend._binary()
    assert binary is not None
    client_env = backend._client_env()
    prepared = backend.prepare(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
    env_flags = [f"--env={k}={v}" for k, v in ENV.items()]
    plain_run = [binary, "run", "--rm", "--network", "none", "-v", f"{ws}:/workspace", "-w",
                 "/workspace", *env_flags, DEFAULT_TEST_IMAGE, *PYTEST]
    slot = SLOTS[backend.name]
    limits = Limits(wall_s=120)

    def run_rm() -> None:
        _check(subprocess.run(plain_run, env=client_env, capture_output=True, check=False), "run --rm")

    def environment_rollout() -> None:
        env = backend.start(prepared, workspace=ws, slot=slot)
        try:
            result = env.exec(PYTEST, env=ENV, limits=limits)
            if "5 passed" not in result.stdout:
                raise SystemExit(f"exec failed: {result}")
        finally:
            env.close()

    def environment_only() -> None:
        backend.start(prepared, workspace=ws, slot=slot).close()

    open_at = fresh_open_at(backend, prepared, slot=slot, limits=limits)
    expected = [f"test_add.py::test_add_{i}" for i in range(5)]

    def hidden_tests() -> None:
        raw = FreshPytest().raw_runner(lambda mounts: open_at(ws, mounts), ws / "tests", slot=slot,
                                       limits=limits, open_at=open_at)
        run = judge_hidden_tests(raw, workspace=ws, tests_dir=ws / "tests", expected=expected,
                                 wall_s=limits.wall_s)
        if [o.outcome for o in run.outcomes] != ["passed"] * 5:
            raise SystemExit(f"hidden tests failed: {run.reason}")

    timed: dict[str, Callable[[], None]] = {
        "run --rm (yardstick)": run_rm,
        "environment: start+exec+close": environment_rollout,
        "environment: start+close": environment_only,
        "hidden tests of one rollout (fresh pytest path)": hidden_tests,
    }
    if not with_running:
        return timed, lambda: None
    ws_running = _workspace()
    name = f"rb-bench-{backend.name}-{os.getpid()}"
    subprocess.run([binary, "run", "-d", "--name", name, "--network", "none", "-v",
                    f"{ws_running}:/workspace", "-w", "/workspace", *env_flags, "--entrypoint", "sleep",
                    DEFAULT_TEST_IMAGE, "infinity"], env=client_env, check=True, stdout=subprocess.DEVNULL)

    def remove_plain() -> None:
        subprocess.run([binary, *backend._remove_args([name])], env=client_env, capture_output=True,
                       check=False)

    try:
        running = backend.start(prepared, workspace=ws_running, slot=slot + 1)
    except BaseException:
        remove_plain()
        raise

    def exec_pytest() -> None:
        result = running.exec(PYTEST, env=ENV, limits=limits)
        if "5 passed" not in result.stdout:
            raise SystemExit(f"exec failed: {result}")

    def plain_exec_pytest() -> None:
        plain = subprocess.run([binary, "exec", name, *PYTEST], env=client_env, capture_output=True,
                               check=False)
        _check(plain, "plain exec")

    def exec_true() -> None:
        running.exec(["true"], env=ENV, limits=limits)

    def plain_exec_true() -> None:
        subprocess.run([binary, "exec", name, "true"], env=client_env, capture_output=True, check=True)

    def cleanup() -> None:
        try:
            running.close()
        finally:
            remove_plain()
            remove_tree(ws_running.parent)

    timed.update({
        "plain exec of pytest (yardstick)": plain_exec_pytest,
        "exec of pytest in a running environment": exec_pytest,
        "plain exec of true (yardstick)": plain_exec_true,
        "exec of true in a running environment": exec_true,
    })
    return timed, cleanup


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--quick", action="store_true", help="3 repetitions")
    parser.add_argument("--runtime", choices=["podman", "docker"], action="append")
    parser.add_argument("--one-rollout", choices=["podman", "docker"],
                        help="run one start+exec+close and exit (to time the whole process from outside)")
    args = parser.parse_args()
    if args.one_rollout:
        one: ContainerBackend = PodmanBackend() if args.one_rollout == "podman" else DockerBackend()
        ws = _workspace()
        try:
            timed, _ = variants(one, ws, with_running=False)
            timed["environment: start+exec+close"]()
        finally:
            remove_tree(ws.parent)
        return
    reps = 3 if args.quick else args.reps
    chosen = args.runtime or ["podman", "docker"]
    backends: list[ContainerBackend] = []
    classes: tuple[type[ContainerBackend], ...] = (PodmanBackend, DockerBackend)
    for cls in classes:
        backend = cls()
        if cls.name not in chosen:
            continue
        why = backend.refuse(EnvironmentSpec(image=DEFAULT_TEST_IMAGE))
        if why is not None:
            print(f"skipping {cls.name}: {why}")
            continue
        backends.append(backend)
    ws = _workspace()
    groups: dict[str, dict[str, Callable[[], None]]] = {}
    cleanups: list[Callable[[], None]] = []
    try:
        for chosen_backend in backends:
            timed, cleanup = variants(chosen_backend, ws)
            groups[chosen_backend.name] = timed
            cleanups.append(cleanup)
        samples: dict[tuple[str, str], list[float]] = {(g, v): [] for g, vs in groups.items() for v in vs}
        for fn_group in groups.values():  # warm-up: one of each
            for fn in fn_group.values():
                fn()
        for _ in range(reps):
            for group, timed in groups.items():
                for label, fn in timed.items():
                    samples[(group, label)].append(_timed(fn))
    finally:
        for cleanup in cleanups:
            cleanup()
        remove_tree(ws.parent)
    print(f"{platform.node()}: {os.cpu_count()} CPUs, load {os.getloadavg()[0]:.1f}, {reps} repetitions, "
          f"interleaved")
    print()
    print("| runtime | variant | median s | mean s | ratio to the yardstick |")
    print("|---|---|---|---|---|")
    for group, timed in groups.items():
        yardstick = 0.0
        for label in timed:
            values = samples[(group, label)]
            median = statistics.median(values)
            if "yardstick" in label:
                yardstick = median
            ratio = "1.00" if "yardstick" in label else f"{median / yardstick:.2f}" if yardstick else "-"
            print(f"| {group} | {label} | {median:.3f} | {statistics.fmean(values):.3f} | {ratio} |")


if __name__ == "__main__":
    main()
