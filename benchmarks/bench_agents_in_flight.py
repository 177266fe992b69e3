"""Agents in flight apart from test slots: API agents against a fake endpoint with a fixed latency.

A local OpenAI-compatible endpoint (its own process, so it takes no CPU time or memory from the
run being measured) answers every chat completion after ``--latency`` seconds (2 s by
default) with a correct ``adder.py``. ``reliabench run`` (``run_suite``, the ``local``
executor, the sandbox on, warm test workers where they work) runs an ``openai`` agent
(``max_turns = 1``: one request per rollout) on a suite of small plain-test tasks, for each
configuration asked for (``--config WORKERS:AGENTS_IN_FLIGHT``, repeatable):

* ``2:64``: 2 test slots, 64 agents in flight (the target: >= 80% of 64 / latency rollouts/s);
* ``2:2``: what ``--workers 2`` gave before agents in flight existed (2 agent phases at once);
* ``64:64``: the old way to have 64 agents in flight: 64 workers (a slot, and a warm test
  server once it tests, per rollout in flight).

For each: rollouts, wall seconds, rollouts/s, the ideal (``agents_in_flight / latency``) and
the ratio, the endpoint's peak of requests at once, and memory: the peak of the summed RSS of
the run's whole process tree (this process and its children: warm servers, sandboxes),
sampled every 50 ms, and that peak minus the tree's RSS before the run, per agent in flight.
Every rollout must pass (a failed one would mean the run measured something else).

Usage::

    .venv/bin/python benchmarks/bench_agents_in_flight.py [--rollouts 256] [--latency 2] \\
        [--config 2:64 --config 2:2 --config 64:64]

Prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

KEY_ENV = "RB_BENCH_FLIGHT_KEY"
REPLY = "```python path=adder.py\ndef add(a, b):\n    return a + b\n```"
TESTS = ("from adder import add\n\n\ndef test_small():\n    assert add(1, 2) == 3\n\n\n"
         "def test_zero():\n    assert add(0, 0) == 0\n")


# --- the fake endpoint (run as its own process: --serve) ------------------------------------------


class _Stats:
    lock = threading.Lock()
    now = 0
    peak = 0
    requests = 0


def serve(port_file: Path, latency: float) -> None:
    """Serve ``POST /v1/chat/completions`` after ``latency`` s; ``GET /stats`` (and ``/v1/models``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.endswith("/stats"):
                with _Stats.lock:
                    self._send({"requests": _Stats.requests, "peak": _Stats.peak})
                    _Stats.peak = _Stats.now
                    _Stats.requests = 0
                return
            self._send({"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "bench"}]})

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            with _Stats.lock:
                _Stats.now += 1
                _Stats.requests += 1
                _Stats.peak = max(_Stats.peak, _Stats.now)
            try:
                time.sleep(latency)
            finally:
                # counted out before the answer is written: once the client has it, its agent may
                # start the next rollout's request before this thread would get the lock again
                with _Stats.lock:
                    _Stats.now -= 1
            self._send({"id": "x", "object": "chat.completion", "created": 0, "model": "fake",
                        "choices": [{"index": 0, "finish_reason": "stop",
                                     "message": {"role": "assistant", "content": REPLY}}],
                        "usage": {"prompt_tokens": 10, "completion_tokens": 10, "total_tokens": 20}})

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 512

    httpd = Server(("127.0.0.1", 0), Handler)
    port_file.write_text(str(httpd.server_address[1]))
    httpd.serve_forever()


def _stats(base: str) -> dict[str, int]:
    import urllib.request

    with urllib.request.urlopen(base.removesuffix("/v1") + "/stats", timeout=10) as r:
        return dict(json.loads(r.read()))


# --- memory of the process tree ---------------------------------------------------------------------


def _tree_rss_bytes(root: int) -> int:
    """Summed RSS of ``root`` and every descendant (from /proc)."""
    parents: dict[int, int] = {}
    rss: dict[int, int] = {}
    page = os.sysconf("SC_PAGE_SIZE")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as f:
                stat = f.read()
            with open(f"/proc/{entry}/statm", encoding="ascii") as f:
                pages = int(f.read().split()[1])
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()
        parents[int(entry)] = int(fields[1])
        rss[int(entry)] = pages * page
    total, todo, seen = 0, [root], set()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    while todo:
        pid = todo.pop()
        if pid in seen:
            continue
        seen.add(pid)
        total += rss.get(pid, 0)
        todo.extend(children.get(pid, ()))
    return total


class _Sampler:
    def __init__(self) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _tree_rss_bytes(os.getpid()))
            self._stop.wait(0.05)

    def __enter__(self) -> _Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


# --- the runs -----------------------------------------------------------------------------------------


def _suite(root: Path, tasks: int) -> Path:
    suite = root / "suite"
    for i in range(tasks):
        task = suite / "tasks" / f"adder{i}"
        (task / "workspace").mkdir(parents=True)
        (task / "tests").mkdir()
        (task / "task.toml").write_text(f'id = "adder{i}"\nlanguage = "python"\ntimeout_s = 20\n'
                                        'test_runner = "plain"\n')
        (task / "prompt.md").write_text("Implement add(a, b) in adder.py.\n")
        (task / "workspace" / "adder.py").write_text("def add(a, b):\n    raise NotImplementedError\n")
        (task / "tests" / "test_adder.py").write_text(TESTS)
    (suite / "suite.toml").write_text('name = "flight"\nversion = "0.1"\n')
    for p in [root, *root.rglob("*")]:
        os.chmod(p, 0o755 if p.is_dir() else 0o644)
    return suite


def one(root: Path, base_url: str, workers: int, in_flight: int, rollouts: int, tasks: int,
        latency: float) -> dict[str, Any]:
    """One run; its numbers."""
    from reliabench.agents.config import load_agents
    from reliabench.run.runner import RunSettings, run_suite
    from reliabench.store import RunStore
    from reliabench.tasks.suite import load_suite

    suite = load_suite(_suite(root, tasks))
    agents_file = root / "agents.toml"
    agents_file.write_text(f'[[agents]]\nname = "api"\nkind = "openai"\nmodel = "fake"\n'
                           f'base_url = "{base_url}"\napi_key_env = "{KEY_ENV}"\n'
                           'max_turns = 1\nmax_retries = 0\n')
    agents = load_agents(agents_file)
    settings = RunSettings(n=rollouts // tasks, workers=workers, agents_in_flight=in_flight, scanners=(),
                           agents_config_hash="bench")
    _stats(base_url)  # reset the endpoint's counters
    before = _tree_rss_bytes(os.getpid())
    t0 = time.perf_counter()
    with _Sampler() as sampler:
        summary = run_suite(suite, agents, root / "run", settings)
    wall = time.perf_counter() - t0
    stats = _stats(base_url)
    with RunStore.open_existing(root / "run") as store:
        records = store.rollouts()
    passed = sum(r.passes for r in records)
    if passed != len(records) or len(records) != summary.executed:
        bad = [r for r in records if not r.passes][:3]
        raise SystemExit(f"not every rollout passed ({passed}/{len(records)}): "
                         f"{[(r.status, r.meta.get('reason')) for r in bad]}")
    ideal = in_flight / latency
    return {"workers": workers, "in_flight": in_flight, "rollouts": len(records), "wall": wall,
            "rate": len(records) / wall, "ideal": ideal, "ratio": len(records) / wall / ideal,
            "peak_requests": stats["peak"], "requests": stats["requests"], "test_path": summary.test_path,
            "peak_mib": sampler.peak / 2**20, "before_mib": before / 2**20,
            "per_agent_mib": (sampler.peak - before) / 2**20 / in_flight}


def main() -> None:
    """Run the configurations, print the table."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rollouts", type=int, default=256, help="rollouts per configuration (default 256)")
    ap.add_argument("--tasks", type=int, default=8, help="tasks in the suite (default 8)")
    ap.add_argument("--latency", type=float, default=2.0, help="seconds per request (default 2)")
    ap.add_argument("--config", action="append", default=None, metavar="WORKERS:AGENTS_IN_FLIGHT")
    ap.add_argument("--serve", type=Path, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve is not None:
        serve(args.serve, args.latency)
        return
    configs = [tuple(int(x) for x in c.split(":")) for c in (args.config or ["2:64", "2:2", "64:64"])]
    os.environ[KEY_ENV] = "sk-bench"
    with tempfile.TemporaryDirectory(prefix="rb-flight-") as tmp:
        port_file = Path(tmp) / "port"
        server = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file),
                                   "--latency", str(args.latency)])
        try:
            for _ in range(200):
                if port_file.exists() and port_file.read_text():
                    break
                time.sleep(0.05)
            base = f"http://127.0.0.1:{port_file.read_text()}/v1"
            rows = []
            for i, (workers, in_flight) in enumerate(configs):
                root = Path(tmp) / f"run{i}"
                root.mkdir()
                os.chmod(root, 0o755)
                rows.append(one(root, base, workers, in_flight, args.rollouts, args.tasks, args.latency))
                print(f"# done {workers}:{in_flight}: {rows[-1]['rate']:.2f}/s", file=sys.stderr, flush=True)
        finally:
            server.terminate()
            server.wait()
    print(f"{os.cpu_count()} cores; latency {args.latency:g} s per request; {args.rollouts} rollouts "
          f"of {args.tasks} plain-test tasks per row; one request per rollout\n")
    print("| workers | agents in flight | rollouts | wall s | rollouts/s | ideal/s | ratio "
          "| peak requests at once | tests | peak RSS of the tree MiB | before MiB "
          "| MiB per agent in flight |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workers']} | {r['in_flight']} | {r['rollouts']} | {r['wall']:.1f} | {r['rate']:.2f} | "
              f"{r['ideal']:.1f} | {r['ratio']:.2f} | {r['peak_requests']} | {r['test_path']} | "
              f"{r['peak_mib']:.0f} | {r['before_mib']:.0f} | {r['per_agent_mib']:.1f} |")


if __name__ == "__main__":
    main()
