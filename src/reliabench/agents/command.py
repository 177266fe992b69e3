"""The ``command`` kind: any agent CLI, run inside the sandbox.

::

    [[agents]]
    name = "aider-gpt4o"
    kind = "command"
    command = ["aider", "--yes-always", "--no-git", "--message-file", "{prompt_file}"]
    timeout_s = 600                 # optional: overrides the request's budget
    base_url = "https://api.openai.com/v1"  # optional: its model endpoint (checked before a run)
    api_key_env = "OPENAI_API_KEY"  # optional (needs base_url): the key's host variable
    network = "endpoint"            # optional: false | "endpoint" | true (see below)
    usage_parser = "aider"          # optional: read tokens and cost from the CLI's output
    sandbox = "auto"                # optional: auto | bubblewrap | namespaces | none | a plugin
    readonly = ["/opt/aider-venv"]  # optional: host paths visible read-only inside
    memory_mb = 4096                # optional (default 2048): address space per process
    max_procs = 256                 # optional (default 64): processes of the sandbox uid
    [agents.env]                    # optional: the command's whole environment
    OPENAI_API_KEY = "${OPENAI_API_KEY}"
    PATH = "/opt/aider-venv/bin:/usr/bin:/bin"

``command`` is an array of arguments or a string split like a shell (``shlex``), never run
through a shell. In every argument the placeholders ``{workspace}``, ``{prompt_file}``,
``{seed}``, ``{task_id}`` and ``{rollout}`` are replaced; other braces are left as they
are. ``{agents_dir}`` (the agents file's folder, absolute) is replaced when the file is
loaded, in ``command``, ``readonly`` and ``env`` values. A first argument with a ``/``
that is relative is resolved against the agents file's folder and made visible read-only
inside the sandbox.

The command runs in the rollout's environment (:attr:`reliabench.agents.base.AgentRequest.environment`,
opened on the agent's first command and closed by the runner): for a task on the host, in
the sandbox its ``sandbox`` key names (:mod:`reliabench.sandbox`; ``auto``: the strongest
that works here), for a task in a container image, in the task's image (the run's container
backend; ``sandbox`` must then be ``auto``). The workspace is its cwd and its only writable
folder (besides the environment's channel folder, where its usage file goes), seen at the
environment's ``workdir`` (``{workspace}``), the prompt file readable, ``/tmp`` private
(bubblewrap, containers). Outside a run (no ``environment`` in the request) it starts its own
host environment in that sandbox. Network:
``false`` (the default without ``base_url``) none; ``"endpoint"`` (the default with
``base_url``) only that endpoint (:mod:`reliabench.agents.netrelay`); ``true`` the host's
whole network. Its environment is ``PATH=/usr/local/bin:/usr/bin:/bin``, ``HOME=/tmp``,
``LANG=C.UTF-8``, the ``RELIABENCH_*`` variables (``RELIABENCH_WORKSPACE``,
``RELIABENCH_PROMPT_FILE``, ``RELIABENCH_TASK_ID``, ``RELIABENCH_ROLLOUT``,
``RELIABENCH_SEED``, ``RELIABENCH_USAGE_FILE`` -- see :mod:`reliabench.agents.usage`) and the
``env`` table, in which ``${VAR}`` is replaced by the host's ``VAR`` at run time; nothing else
of the host environment leaks in.

Outcomes: exit status 0 -> ``completed``; another status or a kill by a resource limit ->
``agent_error``; the wall-time limit -> ``timeout``; ``infra_error`` when the sandbox cannot
start, an ``env`` variable or ``api_key_env`` is unset, or (``network = "endpoint"``) every
connection the agent opened failed to reach the endpoint. The log holds the command, the exit
status and the (bounded) stdout and stderr.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from reliabench.agents.base import (
    AgentContext,
    AgentEnvironment,
    AgentRequest,
    AgentResult,
    AgentStatus,
)
from reliabench.agents.config import FieldReader
from reliabench.agents.infra import Endpoint, infra_result, parse_endpoint
from reliabench.agents.usage import USAGE_FILE, USAGE_PARSERS, read_usage_file
from reliabench.errors import InvalidArgumentError, SandboxError

if TYPE_CHECKING:
    from reliabench.agents.netrelay import EndpointRelay
    from reliabench.sandbox.base import Limits
    from reliabench.sandbox.environment import (
        Environment,
        EnvironmentBackend,
        EnvironmentSpec,
        Mount,
        NetworkMode,
    )

__all__ = [
    "PLACEHOLDERS",
    "CommandAgent",
    "HostAgentEnvironment",
    "expand_env",
    "format_argv",
    "sandbox_backend",
    "sandbox_name",
]

PLACEHOLDERS = ("{workspace}", "{prompt_file}", "{seed}", "{task_id}", "{rollout}")
"""What ``command`` arguments may contain; each is replaced by the rollout's value."""

_BASE_PATH = "/usr/local/bin:/usr/bin:/bin"
_ENV_REF = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def sandbox_backend(name: str) -> EnvironmentBackend:
    """The sandbox backend ``name``, created once per process (thread-safe).

    Raises:
        SandboxError: the backend does not work here.
    """
    from reliabench.sandbox.registry import shared_backend

    return shared_backend(name)


class HostAgentEnvironment:
    """An agent's own host environment, for a request made outside a run (no ``environment``).

    ``open`` starts it on the request's workspace in the backend ``sandbox`` names;
    :meth:`close` closes it (the agent that made it does).
    """

    def __init__(self, request: AgentRequest) -> None:
        from reliabench.sandbox.environment import HOST

        self.spec: EnvironmentSpec = HOST
        self._request = request
        self._env: Environment | None = None

    def open(self, *, mounts: Sequence[Mount] = (), network: NetworkMode = "none",
             limits: Limits | None = None, sandbox: str = "auto") -> Environment:
        """Start it (see :class:`reliabench.agents.base.AgentEnvironment`).

        Raises:
            SandboxError: It could not be started.
        """
        from reliabench.sandbox.base import Limits

        if self._env is not None:
            raise SandboxError("the agent's environment is already open")
        backend = sandbox_backend(sandbox)
        self._env = backend.start(backend.prepare(self.spec), workspace=self._request.workspace,
                                  slot=self._request.slot, mounts=mounts, network=network,
                                  limits=limits or Limits())
        return self._env

    def close(self) -> None:
        """Close what :meth:`open` started; idempotent."""
        if self._env is not None:
            self._env.close()
            self._env = None


def sandbox_name(reader: FieldReader) -> str:
    """Read and check the ``sandbox`` key of an agent table (default ``"auto"``).

    Raises:
        ConfigError: the name is not ``auto`` or a backend of :mod:`reliabench.sandbox`.
    """
    from reliabench.sandbox import available_backends

    names = ("auto", *available_backends())
    name = reader.string("sandbox", "auto") or "auto"
    if name not in names:
        raise reader.ctx.error(
            "sandbox", f"unknown sandbox {name!r} (choose one of: {', '.join(names)})"
        )
    return name


def format_argv(template: Sequence[str], request: AgentRequest, prompt_file: Path,
                workdir: str | None = None) -> list[str]:
    """Replace the placeholders in each argument (other braces are kept).

    ``{workspace}`` is ``workdir`` -- where the command sees the workspace -- when given.

    Example:
        >>> from pathlib import Path
        >>> req = AgentRequest("t1", "p", Path("/w"), seed=7, rollout=2, timeout_s=1.0)
        >>> format_argv(["run", "{task_id}-{rollout}", "--seed={seed}", "{x}"], req, Path("/p"))
        ['run', 't1-2', '--seed=7', '{x}']
    """
    values = {
        "{workspace}": workdir if workdir is not None else str(request.workspace),
        "{prompt_file}": str(prompt_file),
        "{seed}": str(request.seed),
        "{task_id}": request.task_id,
        "{rollout}": str(request.rollout),
    }
    pattern = re.compile("|".join(re.escape(k) for k in values))
    return [pattern.sub(lambda m: values[m.group(0)], arg) for arg in template]


def expand_env(env: Mapping[str, str], host: Mapping[str, str]) -> dict[str, str]:
    """Replace ``${VAR}`` in each value by ``host[VAR]``.

    Raises:
        KeyError: naming the first variable that ``host`` does not have.

    Example:
        >>> expand_env({"KEY": "${A}-x", "P": "$HOME"}, {"A": "1"})
        {'KEY': '1-x', 'P': '$HOME'}
    """
    out: dict[str, str] = {}
    for key, value in env.items():
        def sub(m: re.Match[str]) -> str:
            var = m.group(1)
            if var not in host:
                raise KeyError(var)
            return host[var]

        out[key] = _ENV_REF.sub(sub, value)
    return out


def _tail(text: str, limit: int = 200_000) -> str:
    return text if len(text) <= limit else "... (cut)\n" + text[-limit:]


class CommandAgent:
    """Runs an agent CLI in the sandbox for each rollout (see the module docstring).

    Thread-safe: no per-rollout state on ``self``.

    Args:
        name: The agent's name.
        command: The argument template.
        timeout_s: Overrides ``request.timeout_s`` when set.
        env: The ``env`` table (``${VAR}`` not yet expanded).
        network: ``False`` (no network), ``True`` (the host's network) or ``"endpoint"``
            (only ``endpoint``, see :mod:`reliabench.agents.netrelay`).
        sandbox: Sandbox backend name.
        readonly: Extra host paths visible read-only.
        memory_bytes: Address-space limit per process (None: the sandbox default).
        max_procs: Process limit (None: the sandbox default).
        endpoint: The model endpoint (``base_url`` + ``api_key_env``), checked before a run.
        usage_parser: A name of :data:`~reliabench.agents.usage.USAGE_PARSERS`.
    """

    kind = "command"
    simulated = False

    def __init__(
        self,
        name: str,
        command: Sequence[str],
        *,
        timeout_s: float | None = None,
        env: Mapping[str, str] | None = None,
        network: bool | str = False,
        sandbox: str = "auto",
        readonly: Sequence[Path] = (),
        memory_bytes: int | None = None,
        max_procs: int | None = None,
        endpoint: Endpoint | None = None,
        usage_parser: str | None = None,
    ) -> None:
        self.name = name
        self.endpoint = endpoint
        self.usage_parser = usage_parser
        self.command = tuple(command)
        self.timeout_s = timeout_s
        self.env = dict(env or {})
        self.network = network
        self.sandbox = sandbox
        self.readonly = tuple(readonly)
        self.memory_bytes = memory_bytes
        self.max_procs = max_procs

    def _relay(self, slot: int) -> EndpointRelay:
        """The host half of ``network = "endpoint"`` (bubblewrap only), for worker slot ``slot``.

        Raises:
            SandboxError: the backend cannot narrow the network, or the endpoint cannot be
                reached through the relay.
        """
        from reliabench.agents.netrelay import EndpointRelay
        from reliabench.sandbox.slots import slot_uid

        if self.endpoint is None:  # pragma: no cover - checked when the file is loaded
            raise SandboxError('network = "endpoint" without base_url')
        problem = self.check_network()
        if problem is not None:
            raise SandboxError(problem)
        # the sandbox runs as the slot's uid when root (bubblewrap + setpriv): only it is served
        return EndpointRelay(self.endpoint,
                             peer_uid=slot_uid(slot) if os.geteuid() == 0 else os.getuid())

    def check_network(self) -> str | None:
        """Why this agent's network level cannot work on this host (None: it can).

        Used by :func:`reliabench.agents.preflight.check_agents` before a run.
        """
        if self.network != "endpoint":
            return None
        try:
            from reliabench.agents.netrelay import relay_mode

            if self.endpoint is not None:
                relay_mode(self.endpoint)
            backend = sandbox_backend(self.sandbox).name
        except SandboxError as exc:
            return str(exc)
        if backend != "bubblewrap":
            return (f'network = "endpoint" needs the bubblewrap sandbox backend, but '
                    f"{self.sandbox!r} gives {backend!r} here: install bubblewrap, or set "
                    "network = true (the whole host network)")
        return None

    @property
    def env_refs(self) -> tuple[str, ...]:
        """The host variables the ``env`` table refers to (``${VAR}``), for the pre-run check."""
        return tuple(dict.fromkeys(m.group(1) for v in self.env.values()
                                   for m in _ENV_REF.finditer(v)))

    def run(self, request: AgentRequest) -> AgentResult:
        """Run the command once on ``request.workspace``; never raises."""
        try:
            env_extra = expand_env(self.env, os.environ)
        except KeyError as exc:
            return infra_result(
                "missing_api_key",
                f"agent {self.name!r}: env refers to ${{{exc.args[0]}}}, which is not set "
                "in the host environment",
            )
        if self.endpoint is not None and self.endpoint.api_key_env \
                and not os.environ.get(self.endpoint.api_key_env):
            return infra_result(
                "missing_api_key",
                f"agent {self.name!r}: environment variable {self.endpoint.api_key_env} "
                "(api_key_env) is not set")
        tmpdir: str | None = None
        try:
            prompt_file = request.prompt_file
            if prompt_file is None:
                tmpdir = tempfile.mkdtemp(prefix="rb-prompt-")
                os.chmod(tmpdir, 0o755)  # the sandbox's slot uid must be able to read it
                prompt_file = Path(tmpdir) / "prompt.md"
                prompt_file.write_text(request.prompt, encoding="utf-8")
                os.chmod(prompt_file, stat.S_IRUSR | stat.S_IWUSR | stat.S_IRGRP | stat.S_IROTH)
            return self._run(request, prompt_file, env_extra)
        except Exception as exc:  # defensive: run() must never raise
            return AgentResult(status="infra_error",
                               log=f"agent {self.name!r}: {type(exc).__name__}: {exc}")
        finally:
            if tmpdir is not None:
                shutil.rmtree(tmpdir, ignore_errors=True)

    def _run(self, request: AgentRequest, prompt_file: Path, env_extra: Mapping[str, str]
             ) -> AgentResult:
        from reliabench.sandbox.base import Limits
        from reliabench.sandbox.environment import Mount

        budget = self.timeout_s if self.timeout_s is not None else request.timeout_s
        kw: dict[str, Any] = {"wall_s": budget, "cpu_s": budget}
        if self.memory_bytes is not None:
            kw["memory_bytes"] = self.memory_bytes
        if self.max_procs is not None:
            kw["max_procs"] = self.max_procs
        limits = Limits(**kw)
        head = f"$ {' '.join(format_argv(self.command, request, prompt_file))}"
        relay_stats = None
        own = HostAgentEnvironment(request) if request.environment is None else None
        opener: AgentEnvironment = own if own is not None else cast("AgentEnvironment", request.environment)
        with contextlib.ExitStack() as stack:
            if own is not None:
                stack.callback(own.close)
            mounts = [Mount(prompt_file), *(Mount(Path(p)) for p in self.readonly)]
            wrap: Callable[[list[str]], list[str]] = list
            env_relay: dict[str, str] = {}
            try:
                if self.network == "endpoint":
                    relay = stack.enter_context(self._relay(request.slot))
                    wrap = relay.wrap
                    mounts += [Mount(Path(p)) for p in relay.readonly]
                    env_relay = relay.env()
                network: NetworkMode = ("host" if self.network is True else
                                        "endpoint" if self.network == "endpoint" else "none")
                environment = opener.open(mounts=mounts, network=network, sandbox=self.sandbox)
                argv = wrap(format_argv(self.command, request, prompt_file, environment.workdir))
                head = f"$ {' '.join(format_argv(self.command, request, prompt_file, environment.workdir))}"
                env = {
                    "PATH": _BASE_PATH,
                    "HOME": "/tmp",
                    "TMPDIR": "/tmp",
                    "LANG": "C.UTF-8",
                    "RELIABENCH_WORKSPACE": environment.workdir,
                    "RELIABENCH_PROMPT_FILE": str(prompt_file),
                    "RELIABENCH_TASK_ID": request.task_id,
                    "RELIABENCH_ROLLOUT": str(request.rollout),
                    "RELIABENCH_SEED": str(request.seed),
                    **env_extra,
                    **env_relay,
                    "RELIABENCH_USAGE_FILE": f"{environment.channel_dir}/{USAGE_FILE}",
                }
                res = environment.exec(argv, env=env, limits=limits)
            except SandboxError as exc:
                return infra_result("sandbox", f"the sandbox could not start: {exc}", log=head)
            if self.network == "endpoint":
                relay_stats = relay.stats()
            usage, usage_problem = read_usage_file(environment.channel_host)
        status: AgentStatus
        if res.timed_out:
            status = "timeout"
            what = f"killed after the time limit of {budget:g} s"
        elif res.returncode == 0:
            status = "completed"
            what = "exit status 0"
        else:
            status = "agent_error"
            what = f"exit status {res.returncode}"
            if res.killed_reason:
                what += f" ({res.killed_reason})"
        if usage is None and self.usage_parser is not None:
            try:  # the output is the agent's: a parser's failure is not the harness's
                usage = USAGE_PARSERS[self.usage_parser](res.stdout + "\n" + res.stderr)
            except Exception as exc:
                usage_problem = f"usage parser {self.usage_parser!r} failed: {type(exc).__name__}: {exc}"
        meta: dict[str, Any] = {"returncode": res.returncode, "wall_s": round(res.wall_s, 3),
                                "isolation": res.isolation, "killed_reason": res.killed_reason,
                                "network": _network_label(self.network)}
        notes = [usage_problem] if usage_problem else []
        if relay_stats is not None:
            meta["network_relay"] = {"endpoint": f"{relay.endpoint.host}:{relay.endpoint.port}",
                                     "mode": relay.mode, "connections": relay_stats.connections,
                                     "upstream_failures": relay_stats.upstream_failures,
                                     "refused": relay_stats.refused}
            for key in ("over_limit", "foreign"):  # only when it happened: records stay as they were
                if getattr(relay_stats, key):
                    meta["network_relay"][key] = getattr(relay_stats, key)
            if relay_stats.upstream_failures:
                notes.append(f"network relay: {relay_stats.upstream_failures} of "
                             f"{relay_stats.connections} connection(s) could not reach the "
                             f"endpoint ({relay_stats.last_error})")
            if relay_stats.refused:
                notes.append(f"network relay: refused {relay_stats.refused} connection(s) to "
                             "somewhere other than the endpoint")
            if relay_stats.over_limit:
                notes.append(f"network relay: refused {relay_stats.over_limit} connection(s) over "
                             f"the limit of {relay.max_open} open at once / {relay.max_total} in "
                             "all (or the relay's own descriptors)")
            if relay_stats.foreign:
                notes.append(f"network relay: refused {relay_stats.foreign} connection(s) from "
                             "another uid than the rollout's sandbox")
        if usage is not None:
            meta["usage_source"] = usage.source
            if usage.approx:
                meta["usage_approx"] = True
            if usage.dropped:  # out of range: dropped, never clamped (see agents.usage)
                meta["usage_dropped"] = [f"{k}: {why}" for k, why in usage.dropped.items()]
                notes.extend(f"usage: dropped {line}" for line in meta["usage_dropped"])
            notes.append(f"usage ({usage.source}): tokens_in={usage.tokens_in} "
                         f"tokens_out={usage.tokens_out} usd={usage.usd}")
        log = (f"{head}\n{what}; {res.wall_s:.2f} s; isolation {res.isolation}\n"
               + "".join(f"{n}\n" for n in notes)
               + f"--- stdout ---\n{_tail(res.stdout)}\n--- stderr ---\n{_tail(res.stderr)}")
        if (relay_stats is not None and relay_stats.connections
                and relay_stats.upstream_failures == relay_stats.connections):
            # the harness saw every connection of the agent fail to reach the endpoint: the
            # agent never talked to its model, whatever it did about it
            return infra_result(
                "unreachable",
                f"the endpoint {relay.endpoint.host}:{relay.endpoint.port} was unreachable during "
                f"the rollout: all {relay_stats.connections} connection(s) of the agent failed "
                f"({relay_stats.last_error})", log=log, meta=meta)
        return AgentResult(
            status=status,
            log=log,
            meta=meta,
            tokens=usage.tokens if usage else None,
            usd=usage.usd if usage else None,
            tokens_in=usage.tokens_in if usage else None,
            tokens_out=usage.tokens_out if usage else None,
        )


_COMMAND_KEYS = frozenset({"command", "timeout_s", "env", "network", "sandbox", "readonly",
                           "memory_mb", "max_procs", "base_url", "api_key_env", "usage_parser"})


def _agents_dir(value: str, base: Path) -> str:
    """Replace ``{agents_dir}`` by the agents file's folder (absolute, ``..`` resolved)."""
    if "{agents_dir}" not in value:
        return value
    out = value.replace("{agents_dir}", str(base.absolute()))
    return os.path.normpath(out) if value.startswith("{agents_dir}") else out


def _network_label(network: bool | str) -> str:
    return "host" if network is True else "none" if network is False else str(network)


def _read_network(r: FieldReader, endpoint: Endpoint | None) -> bool | str:
    value = r.table.get("network")
    if value is None:
        return "endpoint" if endpoint is not None else False
    if isinstance(value, bool):
        return value
    if value == "endpoint":
        if endpoint is None:
            raise r.ctx.error("network", "network = \"endpoint\" needs base_url (the endpoint)")
        return "endpoint"
    raise r.ctx.error("network", f"expected true, false or \"endpoint\", got {value!r}")


def _make_command(table: Mapping[str, Any], ctx: AgentContext) -> CommandAgent:
    r = FieldReader(table, ctx, _COMMAND_KEYS)
    name = r.required_string("name")
    argv = [_agents_dir(a, r.base_dir) for a in r.argv("command")]
    readonly = [r.resolve_path("readonly", _agents_dir(p, r.base_dir))
                for p in r.string_list("readonly")]
    prog = argv[0]
    if "/" in prog and not any(prog.startswith(ph) for ph in PLACEHOLDERS):
        resolved = r.resolve_path("command", prog)
        if not resolved.is_file():
            raise ctx.error("command", f"not a file: {resolved}")
        if not os.access(resolved, os.X_OK):
            raise ctx.error("command", f"not executable: {resolved} (chmod +x it)")
        argv[0] = str(resolved)
        readonly.append(resolved)
    env = {k: _agents_dir(v, r.base_dir) for k, v in r.string_table("env").items()}
    for key, value in env.items():
        if not key or "=" in key or "\0" in key:
            raise ctx.error(f"env.{key}", "invalid environment variable name")
        if "${" in _ENV_REF.sub("", value):
            raise ctx.error(f"env.{key}", f"malformed ${{...}} reference in {value!r} "
                                          "(expected ${NAME})")
    path_var = env.get("PATH", _BASE_PATH)
    if ("/" not in prog and "{" not in prog and "${" not in path_var
            and shutil.which(prog, path=path_var) is None):
        raise ctx.error("command", f"{prog!r} not found on the sandbox PATH {path_var} "
                                   "(give its full path, or set env.PATH)")
    sandbox = sandbox_name(r)
    memory_mb = r.integer("memory_mb", minimum=1)
    base_url = r.string("base_url")
    endpoint: Endpoint | None = None
    if base_url is not None:
        try:
            endpoint = parse_endpoint(base_url, r.string("api_key_env"))
        except InvalidArgumentError as exc:
            raise ctx.error("base_url", str(exc).partition(": ")[2]) from None
    elif "api_key_env" in table:
        raise ctx.error("api_key_env", "needs base_url (the endpoint the key is for)")
    parser = r.string("usage_parser")
    if parser is not None and parser not in USAGE_PARSERS:
        raise ctx.error("usage_parser", f"unknown parser {parser!r} (known: "
                                        f"{', '.join(sorted(USAGE_PARSERS))})")
    return CommandAgent(
        name=name,
        command=tuple(argv),
        timeout_s=r.number("timeout_s", positive=True),
        env=env,
        network=_read_network(r, endpoint),
        sandbox=sandbox,
        readonly=tuple(readonly),
        memory_bytes=memory_mb * 1024 * 1024 if memory_mb is not None else None,
        max_procs=r.integer("max_procs", minimum=1),
        endpoint=endpoint,
        usage_parser=parser,
    )
