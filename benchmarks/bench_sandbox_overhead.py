"""Per-rollout overhead of run_hidden_tests (sandbox + fresh test process) against bare pytest.

Both sides run the same 10-test file on the same workspace, interleaved, in the same process:

* bare (the baseline): ``PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 python -m pytest -q
  -p no:cacheprovider <tests>`` (cwd = workspace, PYTHONPATH set), and the same with plugin
  autoloading (what a plain ``pytest`` call costs on a machine with many plugins installed)
* reliabench: ``run_hidden_tests`` with each backend that works here (bubblewrap, namespaces if
  the interpreter is reachable by the slot uid, none)

Usage::

    PYTHONPATH=src python3 benchmarks/bench_sandbox_overhead.py [--quick] [--reps N]

Prints a Markdown table (median and mean seconds per rollout, overhead in ms, ratio).
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

from reliabench.errors import SandboxError
from reliabench.hidden_tests.fresh import collect_hidden_tests, run_hidden_tests
from reliabench.sandbox import Limits, SandboxBackend, get_backend

SOLUTION = """
def add(a, b):
    return a + b
"""

TESTS = "import pytest\nfrom solution import add\n\n" + "\n".join(
    f"def test_add_{i}():\n    assert add({i}, {i}) == {2 * i}\n" for i in range(9)
) + "\n@pytest.mark.security\ndef test_security():\n    assert add(-1, 1) == 0\n"


def _bare(ws: Path, tests: Path, *, autoload: bool = False) -> float:
    env = dict(os.environ, PYTHONPATH=str(ws))
    if not autoload:
        env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tests)],
        cwd=ws,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        check=False,
    )
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"bare pytest failed with {proc.returncode}")
    return elapsed


def _sandboxed(ws: Path, tests: Path, backend: SandboxBackend, expected: tuple) -> float:  # type: ignore[type-arg]
    start = time.perf_counter()
    run = run_hidden_tests(ws, tests, expected=expected, backend=backend, limits=Limits(wall_s=60))
    elapsed = time.perf_counter() - start
    if run.status != "completed" or any(o.outcome != "passed" for o in run.outcomes):
        raise SystemExit(f"{backend.name}: unexpected result {run}")
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repetitions (smoke test)")
    parser.add_argument("--reps", type=int, default=15, help="repetitions per variant")
    args = parser.parse_args()
    reps = 3 if args.quick else args.reps

    backends: list[SandboxBackend] = []
    for name in ("bubblewrap", "namespaces", "none"):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                backends.append(get_backend(name))
        except SandboxError as exc:
            print(f"(skipping {name}: {exc})", file=sys.stderr)

    root = Path(tempfile.mkdtemp(prefix="rb-bench-"))
    os.chmod(root, 0o711)
    try:
        ws = root / "workspace"
        ws.mkdir()
        (ws / "solution.py").write_text(SOLUTION, encoding="utf-8")
        tests = root / "tests"
        tests.mkdir()
        (tests / "test_solution.py").write_text(TESTS, encoding="utf-8")
        usable: list[SandboxBackend] = []
        expected: tuple = ()  # type: ignore[type-arg]
        for backend in backends:
            try:
                expected = collect_hidden_tests(ws, tests, backend=backend)
                usable.append(backend)
            except SandboxError as exc:
                print(f"(skipping {backend.name}: {exc})", file=sys.stderr)
        times: dict[str, list[float]] = {"bare pytest": [], "bare pytest, plugins autoloaded": []}
        times.update({f"run_hidden_tests [{b.name}]": [] for b in usable})
        _bare(ws, tests)  # warm the page cache once
        for _ in range(reps):  # interleaved, so drift hits every variant alike
            times["bare pytest"].append(_bare(ws, tests))
            times["bare pytest, plugins autoloaded"].append(_bare(ws, tests, autoload=True))
            for backend in usable:
                times[f"run_hidden_tests [{backend.name}]"].append(
                    _sandboxed(ws, tests, backend, expected)
                )
    finally:
        shutil.rmtree(root, ignore_errors=True)

    base = statistics.median(times["bare pytest"])
    print(
        f"\n{len(expected)} tests, {reps} repetitions, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, uid {os.geteuid()}\n"
    )
    print("| variant | median s | mean s | overhead vs bare (median) | ratio |")
    print("|---|---:|---:|---:|---:|")
    for label, values in times.items():
        med = statistics.median(values)
        print(
            f"| {label} | {med:.3f} | {statistics.fmean(values):.3f} | "
            f"{(med - base) * 1000:+.0f} ms | {med / base:.2f}x |"
        )


if __name__ == "__main__":
    main()
