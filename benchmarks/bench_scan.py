"""Per-file cost of the security scanners, side by side in one run.

Modes (all on the same generated small Python files, 20-40 lines each, a third of them with
an insecure pattern):

* ``bandit one call``      -- BanditScanner.scan over all files: ONE BanditManager
* ``bandit call per file`` -- BanditScanner.scan once per file: one manager per file
* ``bandit subprocess/file`` -- ``python -m bandit -q -f json FILE`` per file (a subset)
* ``bandit subprocess once`` -- ``python -m bandit -q -f json FILES...`` (reference)
* ``semgrep one call``     -- SemgrepScanner.scan over all files (only if installed)

Usage::

    PYTHONPATH=src python3 benchmarks/bench_scan.py            # 400 files, best of 3
    PYTHONPATH=src python3 benchmarks/bench_scan.py --quick    # 60 files, best of 2
"""

from __future__ import annotations

import argparse
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import bandit

from reliabench.scanners import get_scanner
from reliabench.scanners.bandit_scanner import BanditScanner
from reliabench.scanners.semgrep_scanner import find_semgrep

TEMPLATES = [
    '''import subprocess


def run_{i}(cmd):
    """Run a command."""
    return subprocess.run(cmd, shell=True, capture_output=True)
''',
    '''import sqlite3


def lookup_{i}(conn: sqlite3.Connection, name: str) -> list:
    """Find users."""
    return conn.execute("SELECT * FROM users WHERE name = ?", (name,)).fetchall()
''',
    '''import hashlib
import json


def digest_{i}(payload: dict) -> str:
    """Stable digest of a payload."""
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()
''',
]
FILLER = '''

def helper_{i}_{j}(values: list[int]) -> int:
    """Sum the even values."""
    total = 0
    for v in values:
        if v % 2 == 0:
            total += v
    return total
'''


def make_files(root: Path, n: int) -> list[str]:
    rels = []
    for i in range(n):
        text = TEMPLATES[i % len(TEMPLATES)].format(i=i)
        text += "".join(FILLER.format(i=i, j=j) for j in range(1 + i % 3))
        rel = f"pkg{i % 10}/mod_{i}.py"
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
        rels.append(rel)
    return rels


def best_of(reps: int, fn: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer files and repetitions")
    parser.add_argument("--files", type=int, default=None, help="number of generated files")
    args = parser.parse_args()
    n = args.files or (60 if args.quick else 400)
    reps = 2 if args.quick else 3
    n_sub = min(n, 10 if args.quick else 30)

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        files = make_files(root, n)
        scanner = BanditScanner()
        scanner.scan(root, files[:3])  # warm-up: plugin loading, imports

        rows: list[tuple[str, int, float]] = []
        t = best_of(reps, lambda: scanner.scan(root, files))
        rows.append(("bandit one call (in-process)", n, t))
        t = best_of(reps, lambda: [scanner.scan(root, [f]) for f in files])
        rows.append(("bandit call per file (in-process)", n, t))
        cmd = [sys.executable, "-m", "bandit", "-q", "-f", "json"]
        t = best_of(1, lambda: [
            subprocess.run([*cmd, f], cwd=root, capture_output=True, check=False)
            for f in files[:n_sub]
        ])
        rows.append(("bandit subprocess per file", n_sub, t))
        t = best_of(1, lambda: subprocess.run(
            [*cmd, *files], cwd=root, capture_output=True, check=False))
        rows.append(("bandit subprocess, one for all files", n, t))
        if find_semgrep() is not None:
            semgrep = get_scanner("semgrep")
            t = best_of(reps, lambda: semgrep.scan(root, files))
            rows.append(("semgrep one call (--experimental)", n, t))
            plain = get_scanner("semgrep", experimental=False)
            t = best_of(1, lambda: plain.scan(root, files))
            rows.append(("semgrep one call (no --experimental)", n, t))

    base = rows[0][2] / rows[0][1]
    print(f"python {platform.python_version()}, bandit {bandit.__version__}, "
          f"{platform.machine()}, {n} files, best of {reps}")
    print(f"{'mode':40s} {'files':>6s} {'total s':>9s} {'ms/file':>9s} {'vs one call':>12s}")
    for name, count, total in rows:
        per = total / count
        print(f"{name:40s} {count:6d} {total:9.3f} {per * 1e3:9.2f} {per / base:11.1f}x")


if __name__ == "__main__":
    main()
