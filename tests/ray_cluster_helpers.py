"""A real multi-node Ray cluster on this machine: a head and worker nodes, each a `ray start`.

Each node is its own `ray start --block` process in a new session, with its own temporary
folder (so that nothing is written to /tmp/ray and no other Ray user on the machine finds
this cluster), free ports and a custom resource naming it. Teardown kills every process
descended from those `ray start` processes (raylets, GCS, Ray workers), by pid; `ray stop` is
not used because it would stop every Ray cluster of this user on the machine.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["LocalRayCluster", "RayNode", "local_ray_cluster"]

RAY_ENV = {
    "RAY_USAGE_STATS_ENABLED": "0",
    "RAY_AUTH_MODE": "disabled",
    # a dead node is noticed in ~3 s instead of ~30 s
    "RAY_health_check_initial_delay_ms": "1000",
    "RAY_health_check_period_ms": "1000",
    "RAY_health_check_timeout_ms": "1000",
    "RAY_health_check_failure_threshold": "3",
}


def _free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _children() -> dict[int, list[int]]:
    out: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        out.setdefault(ppid, []).append(int(entry))
    return out


def _descendants(pid: int) -> list[int]:
    tree = _children()
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(tree.get(p, []))
    return out


@dataclass
class RayNode:
    """One `ray start --block` process and the node it started."""

    name: str
    proc: subprocess.Popen[bytes]
    temp_dir: Path
    pids: set[int] = field(default_factory=set)

    def remember_pids(self) -> None:
        """Note every process of this node (called while it runs, before a kill)."""
        self.pids.update(_descendants(self.proc.pid))

    def kill(self) -> None:
        """SIGKILL every process of this node (a crashed machine), and reap the `ray start`."""
        self.remember_pids()
        for pid in sorted(self.pids):
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)


class LocalRayCluster:
    """A head node plus worker nodes started with `ray start` (see the module docstring)."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="rb-ray-", dir="/tmp"))  # short: socket paths
        os.chmod(self.root, 0o755)  # sandbox uids reach the files that workers unpack below it
        self.port = _free_ports(1)[0]
        self.address = f"127.0.0.1:{self.port}"
        self.nodes: dict[str, RayNode] = {}
        self.started = 0
        self.killed: list[RayNode] = []
        self.ray_bin = str(Path(sys.executable).with_name("ray"))

    def _start(self, name: str, head: bool, cpus: int, extra_env: dict[str, str] | None) -> RayNode:
        self.started += 1
        temp = self.root / f"{name}-{self.started}"
        temp.mkdir()
        tmpdir = self.root / f"{name}-{self.started}-tmp"  # the node's TMPDIR: workers unpack there
        tmpdir.mkdir(mode=0o755)
        ports = _free_ports(6)
        argv = [self.ray_bin, "start", "--block", f"--num-cpus={cpus}",
                "--object-store-memory=100000000", f"--temp-dir={temp}", "--disable-usage-stats",
                f"--resources={json.dumps({f'node_{name}': 1})}",
                f"--node-manager-port={ports[0]}", f"--object-manager-port={ports[1]}",
                f"--metrics-export-port={ports[2]}", f"--dashboard-agent-listen-port={ports[3]}",
                f"--dashboard-agent-grpc-port={ports[4]}", f"--runtime-env-agent-port={ports[5]}",
                "--min-worker-port=0", "--max-worker-port=0"]  # workers: ports the OS picks
        if head:
            argv += ["--head", f"--port={self.port}", "--include-dashboard=false"]
        else:
            argv += [f"--address={self.address}"]
        with (temp / "start.log").open("wb") as log:
            proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                    env={**os.environ, **RAY_ENV, "TMPDIR": str(tmpdir),
                                         **(extra_env or {})})
        node = RayNode(name, proc, temp)
        self.nodes[name] = node
        return node

    def start_head(self, cpus: int) -> RayNode:
        """Start the head node and wait until its GCS answers."""
        node = self._start("head", True, cpus, None)
        self.wait_nodes({"head"})
        return node

    def add_node(self, name: str, cpus: int, extra_env: dict[str, str] | None = None) -> RayNode:
        """Start a worker node joining the head and wait until the cluster lists it."""
        node = self._start(name, False, cpus, extra_env)
        self.wait_nodes(set(self.nodes))
        node.remember_pids()
        return node

    def node_ids(self) -> dict[str, str]:
        """``{node name: Ray node id}`` of the alive nodes (connects briefly as a driver)."""
        import ray

        ray.init(address=self.address, log_to_driver=False)
        try:
            out = {}
            for n in ray.nodes():
                names = [k[len("node_"):] for k in n["Resources"] if k.startswith("node_")
                         and not k.startswith("node:")]
                if n["Alive"] and names:
                    out[names[0]] = str(n["NodeID"])
            return out
        finally:
            ray.shutdown()

    def wait_nodes(self, names: set[str], timeout: float = 90.0) -> dict[str, str]:
        """Wait until exactly ``names`` are alive; return their node ids."""
        deadline = time.monotonic() + timeout
        last: object = None
        while time.monotonic() < deadline:
            for node in self.nodes.values():
                if node.name in names and node.proc.poll() is not None:
                    log = (node.temp_dir / "start.log").read_text(errors="replace")[-2000:]
                    raise RuntimeError(f"ray start for {node.name} exited:\n{log}")
            if any(self.root.glob("head-*/ray_current_cluster")) or "head" not in names:
                try:
                    ids = self.node_ids()
                except Exception as exc:  # the GCS is not up yet
                    last = exc
                else:
                    if set(ids) == names:
                        return ids
                    last = ids
            time.sleep(1.0)
        raise RuntimeError(f"the Ray cluster did not reach nodes {sorted(names)}: {last}")

    def teardown(self) -> None:
        """Kill every process of every node and remove the temporary folders."""
        for node in [*self.killed, *self.nodes.values()]:
            node.kill()
        shutil.rmtree(self.root, ignore_errors=True)


@contextlib.contextmanager
def local_ray_cluster(head_cpus: int) -> Iterator[LocalRayCluster]:
    """A cluster with a started head node, torn down on exit whatever happens."""
    cluster = LocalRayCluster()
    try:
        cluster.start_head(head_cpus)
        yield cluster
    finally:
        cluster.teardown()
