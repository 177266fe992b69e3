"""The ``openai`` kind: any OpenAI-compatible chat-completions endpoint, through the ``openai`` SDK.

::

    [[agents]]
    name = "gpt-4o-mini"
    kind = "openai"
    model = "gpt-4o-mini"
    base_url = "https://api.openai.com/v1"   # optional; any OpenAI-compatible server
    api_key_env = "OPENAI_API_KEY"           # optional (this default); read at run time
    temperature = 0.8                        # optional (default: the endpoint's)
    max_turns = 3                            # optional (default 3): model calls per rollout
    max_tokens = 4096                        # optional: per reply
    seed = true                              # optional (default true): send the rollout seed
    usd_per_1k_input = 0.00015               # optional: cost per 1000 prompt tokens
    usd_per_1k_output = 0.0006               # optional: cost per 1000 completion tokens

Other optional keys: ``system_prompt`` (replaces the default one; the reply-format rules are
always sent in the user message, so they cannot be lost), ``max_retries`` (SDK retries of
transient errors: connection errors, timeouts, 408/409/429/5xx; default 2),
``request_timeout_s`` (per call, default 300; a call never gets more than the budget left
divided by ``max_retries + 1``, so retries cannot overrun the rollout's budget),
``timeout_s`` (whole rollout; overrides the request's budget),
``sandbox`` (backend for the visible tests, default ``"auto"``), ``extra_body`` (a table
merged into each request body, for provider-specific parameters).

The protocol with the model. The first user message holds the task prompt, the content of
every text file of the workspace and the reply format: each file to create or replace is
sent back whole, in a fenced block whose info string names the path::

    ```python path=src/roman.py
    def to_roman(n: int) -> str:
        ...
    ```

(``path="a b.py"`` with quotes for spaces; ``file=`` is accepted too, as is a bare info
string that looks like a file name, e.g. ```` ```roman.py ````; a longer fence such as
```` ```` ```` may enclose content that itself holds ```` ``` ````). Blocks without a path are
ignored. Paths must be relative to the workspace: absolute paths, ``..`` and symlinks leading
out are refused, reported in the log and told to the model.

Turns. When the task has visible tests (``request.feedback_dir``), the files are written and
the tests run in the sandbox with the same harness as the hidden tests
(:func:`reliabench.hidden_tests.fresh.run_hidden_tests`); while they fail and turns remain, their
output goes back to the model for another reply. Without visible tests the rollout ends after
the first reply whose files were all written; refused paths are told to the model and cost a
turn. A reply with no file blocks ends the rollout.

The result: status ``completed`` (the hidden tests decide success), ``timeout`` when the
rollout's budget runs out, ``agent_error`` for a request the endpoint refused as invalid (400,
422) or a response that cannot be read, and ``infra_error`` -- not the agent's fault, excluded
from n -- with ``meta["infra_reason"]`` (:mod:`reliabench.agents.infra`) for a missing API key
(``missing_api_key``), 401/403 (``auth``), 404 (``not_found``), 408/409/429 (``rate_limited``)
and 5xx (``server_error``) after the SDK's retries, a refused connection (``unreachable``), a
call that timed out before the budget did (``endpoint_timeout``), and a sandbox for the
visible tests that cannot start (``sandbox``). ``tokens`` is the sum of ``total_tokens`` over
calls, ``tokens_in``/``tokens_out`` the sums of prompt and completion tokens; ``usd`` is set
when both prices are configured; the transcript holds every message plus per-call usage. A
reply whose usage is out of the range a record holds (``1e300``, ``-1``, ``NaN``, a string:
:func:`reliabench.records.cost_count`) counts as a reply without usage, and
``meta["usage_dropped"]`` says why.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import time
import traceback
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reliabench.agents.base import (
    AgentContext,
    AgentRequest,
    AgentResult,
    AgentStatus,
    WorkspacePathError,
    write_workspace_files,
)
from reliabench.agents.command import sandbox_name
from reliabench.agents.config import FieldReader
from reliabench.agents.endpoint_limits import EndpointBusyError, EndpointGate, parse_retry_after
from reliabench.agents.infra import OPENAI_BASE_URL, Endpoint, infra_reason_for_status, parse_endpoint
from reliabench.errors import InvalidArgumentError, MissingExtraError, SandboxError
from reliabench.meta_keys import INFRA_REASON, REASON
from reliabench.records import Isolation, cost_count

__all__ = [
    "DEFAULT_SYSTEM_PROMPT",
    "FORMAT_INSTRUCTIONS",
    "FeedbackRun",
    "FileBlock",
    "OpenAIAgent",
    "OpenAISettings",
    "parse_file_blocks",
    "run_feedback_tests",
    "workspace_snapshot",
]

DEFAULT_SYSTEM_PROMPT = (
    "You are an expert software engineer. You solve programming tasks by writing complete, "
    "correct, secure files into the user's workspace. Follow the reply format exactly."
)

FORMAT_INSTRUCTIONS = """\
## Reply format

To create or replace a file, give its COMPLETE new content in a fenced code block whose
opening line names the file with `path=`, relative to the workspace root, for example:

```python path=package/module.py
def f() -> int:
    return 1
```

One block per file. Files you do not send stay as they are. Absolute paths and `..` are
refused. Text outside the blocks is ignored."""

_SKIP_DIRS = frozenset({"__pycache__", ".git", ".pytest_cache", ".mypy_cache", ".ruff_cache",
                        ".venv", "venv", "node_modules", ".hg", ".tox"})
_MAX_FILE_CHARS = 64_000
_MAX_SNAPSHOT_CHARS = 256_000
_MAX_FEEDBACK_CHARS = 12_000

_FENCE_OPEN = re.compile(r"^ {0,3}(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
_PATH_ATTR = re.compile(
    r"""(?:^|\s)(?:path|file|filename)\s*[=:]\s*(?:"(?P<dq>[^"]+)"|'(?P<sq>[^']+)'|(?P<bare>\S+))"""
)


@dataclass(frozen=True, slots=True)
class FileBlock:
    """A file the model asked to write.

    Attributes:
        path: The path as the model wrote it (relative to the workspace).
        content: The new content (ends with a newline).
    """

    path: str
    content: str


def _path_from_info(info: str) -> str | None:
    info = info.strip()
    if not info:
        return None
    m = _PATH_ATTR.search(info)
    if m:
        return m.group("dq") or m.group("sq") or m.group("bare")
    words = info.split()
    # A bare file name: "foo.py", "pkg/foo.py", "python:foo.py".
    for w in (words[0], words[0].partition(":")[2]) if len(words) == 1 else ():
        if w and ("." in w.strip(".") or "/" in w) and not w.startswith("."):
            return w
    return None


def parse_file_blocks(text: str) -> tuple[list[FileBlock], list[str]]:
    r"""Extract the files of a reply (see the module docstring for the format).

    A later block for the same path replaces an earlier one.

    Args:
        text: The assistant message.

    Returns:
        ``(blocks, problems)``; problems are human-readable notes (an unclosed block).

    Example:
        >>> blocks, _ = parse_file_blocks("Here:\n```python path=a.py\nx = 1\n```\n")
        >>> blocks
        [FileBlock(path='a.py', content='x = 1\n')]
    """
    lines = text.split("\n")
    out: dict[str, FileBlock] = {}
    problems: list[str] = []
    i = 0
    while i < len(lines):
        m = _FENCE_OPEN.match(lines[i].rstrip("\r"))
        if not m:
            i += 1
            continue
        fence = m.group("fence")
        path = _path_from_info(m.group("info"))
        close = re.compile(rf"^ {{0,3}}{re.escape(fence[0])}{{{len(fence)},}}\s*$")
        j = i + 1
        while j < len(lines) and not close.match(lines[j].rstrip("\r")):
            j += 1
        if j >= len(lines):
            if path is not None:
                problems.append(f"block for {path!r} is not closed (reply cut off?); not written")
            break
        if path is not None:
            body = "\n".join(ln.rstrip("\r") for ln in lines[i + 1 : j])
            out[path] = FileBlock(path, body + "\n" if body else "")
        i = j + 1
    return list(out.values()), problems


def _fence_for(content: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", content)), default=0)
    return "`" * max(3, longest + 1)


def workspace_snapshot(workspace: Path) -> str:
    """Render the workspace's text files for the prompt (bounded in size).

    Binary files are named but not shown; beyond the size budget only names are listed.
    """
    root = workspace
    files: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS)
        files.extend(Path(dirpath) / f for f in sorted(filenames) if not f.endswith(".pyc"))
    if not files:
        return "The workspace is empty."
    parts = ["The workspace (paths relative to its root) contains:"]
    used = 0
    for p in files:
        rel = p.relative_to(root).as_posix()
        try:
            data = p.read_bytes()
        except OSError:
            parts.append(f"\n### `{rel}` (unreadable)")
            continue
        if b"\0" in data[:8192]:
            parts.append(f"\n### `{rel}` (binary, {len(data)} bytes, not shown)")
            continue
        text = data.decode("utf-8", errors="replace")
        if used >= _MAX_SNAPSHOT_CHARS:
            parts.append(f"\n### `{rel}` ({len(text)} characters, not shown: prompt budget)")
            continue
        note = ""
        if len(text) > _MAX_FILE_CHARS:
            text, note = text[:_MAX_FILE_CHARS], " (truncated)"
        used += len(text)
        lang = "python" if rel.endswith(".py") else ""
        fence = _fence_for(text)
        parts.append(f"\n### `{rel}`{note}\n{fence}{lang}\n{text.rstrip(chr(10))}\n{fence}")
    return "\n".join(parts)


@dataclass(frozen=True, slots=True)
class FeedbackRun:
    """The outcome of running the visible tests once.

    Attributes:
        passed: At least one visible test ran and none failed or errored.
        returncode: 0 when passed, 1 when not, ``None`` on a timeout.
        output: The failing tests, then pytest's output (bounded).
        timed_out: The run hit its time limit.
        isolation: The sandbox's isolation level.
        tests: How many tests had an outcome.
        failed: How many of them failed or errored.
    """

    passed: bool
    returncode: int | None
    output: str
    timed_out: bool
    isolation: Isolation
    tests: int = 0
    failed: int = 0


def run_feedback_tests(request: AgentRequest, *, sandbox: str = "auto",
                       timeout_s: float = 60.0) -> FeedbackRun:
    """Run the task's visible tests on the workspace, in the sandbox.

    Uses :func:`reliabench.hidden_tests.fresh.run_hidden_tests` (the same trustworthy harness as the
    hidden tests: tests staged read-only outside the workspace, one outcome per test) on
    ``request.feedback_dir``, as the request's worker slot, without network.

    Raises:
        SandboxError: the sandbox could not start.
        InvalidArgumentError: the request has no ``feedback_dir``.
    """
    from reliabench.agents.command import sandbox_backend
    from reliabench.hidden_tests.fresh import run_hidden_tests
    from reliabench.sandbox import Limits

    if request.feedback_dir is None:
        raise InvalidArgumentError("request.feedback_dir: the task has no visible tests")
    run = run_hidden_tests(
        request.workspace, request.feedback_dir, expected=None,
        backend=sandbox_backend(sandbox), limits=Limits(wall_s=timeout_s, cpu_s=timeout_s),
        slot=request.slot,
    )
    bad = [o for o in run.outcomes if o.failing]
    passed = run.status == "completed" and bool(run.outcomes) and not bad
    lines = [f"{o.outcome.upper()} {o.name}" for o in bad]
    if not run.outcomes:
        lines.append("no test ran (collection failed?)")
    if run.reason:
        lines.append(f"note: {run.reason}")
    out = "\n".join(lines) + ("\n\n" if lines else "") + run.log.strip()
    if len(out) > _MAX_FEEDBACK_CHARS:
        out = out[: _MAX_FEEDBACK_CHARS // 4] + "\n... (output cut) ...\n" + out[
            -(_MAX_FEEDBACK_CHARS * 3 // 4):]
    return FeedbackRun(
        passed=passed,
        returncode=None if run.status == "timeout" else (0 if passed else 1),
        output=out.strip(),
        timed_out=run.status == "timeout",
        isolation=run.isolation,
        tests=len(run.outcomes),
        failed=len(bad),
    )


@dataclass(frozen=True, slots=True)
class OpenAISettings:
    """The validated keys of an ``openai`` agent (see the module docstring)."""

    model: str
    base_url: str | None = None
    api_key_env: str = "OPENAI_API_KEY"
    temperature: float | None = None
    max_turns: int = 3
    max_tokens: int | None = None
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    seed: bool = True
    usd_per_1k_input: float | None = None
    usd_per_1k_output: float | None = None
    max_retries: int = 2
    request_timeout_s: float = 300.0
    timeout_s: float | None = None
    sandbox: str = "auto"
    extra_body: Mapping[str, Any] = field(default_factory=dict)


class _Usage:
    def __init__(self) -> None:
        self.prompt = 0
        self.completion = 0
        self.total = 0
        self.calls = 0
        self.known = False
        self.problems: list[str] = []

    def add(self, usage: Any) -> dict[str, int] | None:
        """Count one reply's usage; one the endpoint reported out of range is left out."""
        self.calls += 1
        if usage is None:
            return None
        try:  # the endpoint's numbers, as untrusted as an agent's (records.cost_count)
            pt = cost_count(getattr(usage, "prompt_tokens", 0) or 0)
            ct = cost_count(getattr(usage, "completion_tokens", 0) or 0)
            tt = cost_count(getattr(usage, "total_tokens", 0) or (pt + ct))
        except ValueError as exc:
            self.problems.append(f"call {self.calls}: usage left out: {exc}")
            return None
        self.prompt += pt
        self.completion += ct
        self.total += tt
        self.known = True
        return {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": tt}


@functools.lru_cache(maxsize=1)
def _tls_context() -> Any:
    """The default TLS context of httpx (certifi's roots), made once per process and shared by the clients.

    Making it costs ~20 ms of CPU; a client made with its own, once per rollout, was a third of
    the CPU of a rollout of an API agent (docs/benchmarks.md, "Agents in flight"). An
    ``ssl.SSLContext`` may be shared by connections of any thread.
    """
    import httpx

    return httpx.create_ssl_context()


class OpenAIAgent:
    """An agent backed by an OpenAI-compatible chat endpoint (see the module docstring).

    ``run`` keeps no state on ``self`` (a fresh SDK client per rollout, closed after it), so it
    is thread-safe. The clients share one TLS context (:func:`_tls_context`).

    Args:
        name: The agent's name.
        settings: Its validated settings.
    """

    kind = "openai"
    simulated = False

    def __init__(self, name: str, settings: OpenAISettings) -> None:
        self.name = name
        self.settings = settings
        self.endpoint: Endpoint = parse_endpoint(settings.base_url or OPENAI_BASE_URL,
                                                 settings.api_key_env)
        self.gate: EndpointGate | None = None  # the endpoint's limits ([[endpoints]]), shared

    def _create(self, client: Any, kwargs: dict[str, Any], deadline: float, log: list[str], turn: int) -> Any:
        """One chat completion; through the endpoint's gate, with retries of ours, when it has one.

        Without a gate the SDK retries (``max_retries``). With one, the SDK does not: each try
        waits for the gate, and a 408/409/429/5xx or a connection error is retried up to
        ``max_retries`` times after the endpoint's ``Retry-After`` (which pauses every agent of
        the endpoint) or a back-off; the last error is raised as the SDK would have.

        Raises:
            EndpointBusyError: the budget ran out while waiting for the gate.
            openai.OpenAIError: as ``client.chat.completions.create``.
        """
        import openai

        gate = self.gate
        if gate is None:
            return client.chat.completions.create(**kwargs)
        tries = 0
        while True:
            with gate.request(deadline):
                try:
                    return client.chat.completions.create(**kwargs)
                except openai.APIStatusError as exc:
                    if infra_reason_for_status(exc.status_code) not in ("rate_limited", "server_error") \
                            or tries >= self.settings.max_retries:
                        raise
                    wait = parse_retry_after(exc.response.headers)
                    why = f"HTTP {exc.status_code}"
                except openai.APIConnectionError as exc:  # a timeout too
                    if tries >= self.settings.max_retries:
                        raise
                    wait, why = None, type(exc).__name__
            tries += 1
            if wait is not None:
                gate.pause(wait)  # every agent of the endpoint waits
            delay = wait if wait is not None else min(8.0, 0.5 * 2.0 ** (tries - 1))
            log.append(f"turn {turn}: {why}; retry {tries} of {self.settings.max_retries} in {delay:.3g} s"
                       + (" (Retry-After)" if wait is not None else ""))
            if time.monotonic() + delay >= deadline:
                raise EndpointBusyError(f"{why}: no time left in the budget for retry {tries}")
            if wait is None:
                time.sleep(delay)

    def _first_message(self, request: AgentRequest) -> str:
        snapshot = workspace_snapshot(request.workspace)
        parts = [request.prompt.rstrip(), "", "## Workspace", "", snapshot]
        if request.feedback_dir is not None:
            parts += ["", "After your reply the task's visible tests are run on the workspace; if "
                      "they fail you get their output and may send corrected files."]
        parts += ["", FORMAT_INSTRUCTIONS]
        return "\n".join(parts)

    def run(self, request: AgentRequest) -> AgentResult:
        """Run one rollout; never raises (every failure becomes a result)."""
        log: list[str] = []
        transcript: list[dict[str, Any]] = []
        usage = _Usage()
        meta: dict[str, Any] = {"model": self.settings.model, "turns": 0}
        status: AgentStatus
        try:
            status = self._run(request, log, transcript, usage, meta)
        except Exception:  # pragma: no cover - defensive: run() must never raise
            status = "agent_error"
            log.append("unexpected error in the openai adapter:\n" + traceback.format_exc())
        if status == "infra_error" and REASON not in meta:
            meta[REASON] = log[-1] if log else "infrastructure failure"
        s = self.settings
        usd: float | None = None
        if usage.known and s.usd_per_1k_input is not None and s.usd_per_1k_output is not None:
            usd = (usage.prompt / 1000 * s.usd_per_1k_input
                   + usage.completion / 1000 * s.usd_per_1k_output)
        if usage.known:
            meta.update(prompt_tokens=usage.prompt, completion_tokens=usage.completion)
        if usage.problems:
            meta["usage_dropped"] = usage.problems[:20]
            log.extend(usage.problems[:20])
        meta["calls"] = usage.calls
        return AgentResult(
            status=status,
            tokens=usage.total if usage.known else None,
            usd=usd,
            log="\n".join(log),
            transcript=transcript,
            meta=meta,
            tokens_in=usage.prompt if usage.known else None,
            tokens_out=usage.completion if usage.known else None,
        )

    def _run(self, request: AgentRequest, log: list[str], transcript: list[dict[str, Any]],
             usage: _Usage, meta: dict[str, Any]) -> AgentStatus:
        s = self.settings
        budget = s.timeout_s if s.timeout_s is not None else request.timeout_s
        deadline = time.monotonic() + budget
        api_key = os.environ.get(s.api_key_env)
        if not api_key:
            log.append(f"environment variable {s.api_key_env} is not set: the API key of agent "
                       f"{self.name!r} is read from it (api_key_env)")
            meta[INFRA_REASON] = "missing_api_key"
            return "infra_error"
        try:
            import openai
        except ImportError:  # pragma: no cover - checked when the agents file is loaded
            log.append(str(MissingExtraError("openai", "agent kind 'openai'")))
            return "agent_error"
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": s.system_prompt},
            {"role": "user", "content": self._first_message(request)},
        ]
        transcript.extend(dict(m) for m in messages)
        meta["written"] = []
        meta["rejected"] = []
        # with a gate, retries are ours (each one through the gate), not the SDK's
        client = openai.OpenAI(api_key=api_key, base_url=s.base_url,
                               max_retries=s.max_retries if self.gate is None else 0,
                               timeout=s.request_timeout_s,
                               http_client=openai.DefaultHttpxClient(verify=_tls_context()))
        try:
            for turn in range(1, s.max_turns + 1):
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    log.append(f"turn {turn}: budget of {budget:g} s used up")
                    return "timeout"
                # the SDK retries timed-out calls too: share what is left between the tries
                call_timeout = min(s.request_timeout_s, remaining / (s.max_retries + 1))
                kwargs: dict[str, Any] = {"model": s.model, "messages": messages,
                                          "timeout": call_timeout}
                if s.temperature is not None:
                    kwargs["temperature"] = s.temperature
                if s.max_tokens is not None:
                    kwargs["max_tokens"] = s.max_tokens
                if s.seed:
                    kwargs["seed"] = request.seed % (2**31)
                if s.extra_body:
                    kwargs["extra_body"] = dict(s.extra_body)
                meta["turns"] = turn
                try:
                    resp = self._create(client, kwargs, deadline, log, turn)
                except EndpointBusyError as exc:  # our own limits held it back: infra, not the model
                    log.append(f"turn {turn}: {exc}")
                    meta[INFRA_REASON] = "rate_limited"
                    return "infra_error"
                except openai.APITimeoutError as exc:
                    log.append(f"turn {turn}: request timed out ({exc})")
                    if time.monotonic() >= deadline - 0.05:
                        return "timeout"
                    meta[INFRA_REASON] = "endpoint_timeout"
                    log.append(f"turn {turn}: {s.base_url or 'OpenAI'} did not answer within "
                               f"{call_timeout:.3g} s (after {s.max_retries} retries)")
                    return "infra_error"
                except openai.APIStatusError as exc:
                    log.append(f"turn {turn}: HTTP {exc.status_code} from {s.base_url or 'OpenAI'}"
                               f" (after {s.max_retries} retries): {exc.message}")
                    reason = infra_reason_for_status(exc.status_code)
                    if reason is None:
                        return "agent_error"  # the request itself was refused (e.g. 400)
                    meta[INFRA_REASON] = reason
                    return "infra_error"
                except openai.APIConnectionError as exc:
                    log.append(f"turn {turn}: {type(exc).__name__} talking to "
                               f"{s.base_url or 'OpenAI'} (after {s.max_retries} retries): {exc}")
                    meta[INFRA_REASON] = "unreachable"
                    return "infra_error"
                except openai.OpenAIError as exc:
                    log.append(f"turn {turn}: {type(exc).__name__} talking to "
                               f"{s.base_url or 'OpenAI'} (after {s.max_retries} retries): {exc}")
                    return "agent_error"
                except Exception as exc:
                    log.append(f"turn {turn}: invalid response ({type(exc).__name__}: {exc})")
                    return "agent_error"
                call_usage = usage.add(getattr(resp, "usage", None))
                choices = getattr(resp, "choices", None) or []
                if not choices:
                    log.append(f"turn {turn}: the response has no choices")
                    return "agent_error"
                choice = choices[0]
                content = choice.message.content or ""
                finish = getattr(choice, "finish_reason", None)
                messages.append({"role": "assistant", "content": content})
                transcript.append({"role": "assistant", "content": content, "usage": call_usage,
                                   "finish_reason": finish})
                blocks, problems = parse_file_blocks(content)
                if finish == "length":
                    problems.append("the reply was cut off at max_tokens")
                written, rejected = self._apply(request, blocks)
                meta["written"].extend(p for p in written if p not in meta["written"])
                meta["rejected"].extend(rejected)
                problems.extend(f"{p}" for p in rejected)
                log.append(f"turn {turn}: wrote {len(written)} file(s)"
                           + (f": {', '.join(written)}" if written else "")
                           + (f"; finish_reason={finish}" if finish not in (None, "stop") else ""))
                log.extend(f"turn {turn}: {p}" for p in problems)
                if not blocks:
                    log.append(f"turn {turn}: the reply has no file blocks; stopping")
                    return "completed"
                feedback = ""
                if request.feedback_dir is not None and written:
                    remaining = deadline - time.monotonic()
                    if remaining <= 0:
                        return "timeout"
                    try:
                        fb = run_feedback_tests(request, sandbox=s.sandbox,
                                                timeout_s=min(remaining, 120.0))
                    except SandboxError as exc:
                        log.append(f"turn {turn}: the sandbox for the visible tests could not "
                                   f"start: {exc}")
                        meta[INFRA_REASON] = "sandbox"
                        return "infra_error"
                    meta["feedback_passed"] = fb.passed
                    transcript.append({"role": "tool", "name": "visible_tests",
                                       "passed": fb.passed, "returncode": fb.returncode,
                                       "content": fb.output})
                    log.append(f"turn {turn}: visible tests: {fb.tests - fb.failed} of "
                               f"{fb.tests} passed" + (" (time limit)" if fb.timed_out else ""))
                    if not fb.passed:
                        feedback = ("The visible tests failed" + (" (time limit)" if fb.timed_out
                                                                   else "") + ":\n\n"
                                    + f"```text\n{fb.output}\n```")
                if not feedback and not problems:
                    return "completed"
                if turn == s.max_turns:
                    log.append(f"max_turns={s.max_turns} reached")
                    return "completed"
                note = "\n".join(f"- {p}" for p in problems)
                parts = [x for x in (feedback, note and "Problems with your reply:\n" + note) if x]
                parts.append("Send the corrected files, complete, in the same format.")
                msg = {"role": "user", "content": "\n\n".join(parts)}
                messages.append(msg)
                transcript.append(dict(msg))
            return "completed"  # pragma: no cover - the loop returns
        finally:
            client.close()

    @staticmethod
    def _apply(request: AgentRequest, blocks: list[FileBlock]) -> tuple[list[str], list[str]]:
        written: list[str] = []
        rejected: list[str] = []
        for b in blocks:
            try:
                write_workspace_files(request.workspace, {b.path: b.content})
            except WorkspacePathError as exc:
                rejected.append(f"refused {exc}")
            except OSError as exc:
                rejected.append(f"could not write {b.path!r}: {exc.strerror or exc}")
            else:
                written.append(b.path)
        return written, rejected


_OPENAI_KEYS = frozenset({
    "model", "base_url", "api_key_env", "temperature", "max_turns", "max_tokens", "system_prompt",
    "seed", "usd_per_1k_input", "usd_per_1k_output", "max_retries", "request_timeout_s",
    "timeout_s", "sandbox", "extra_body",
})


def _require_sdk() -> None:
    if importlib.util.find_spec("openai") is None:
        raise MissingExtraError("openai", "agent kind 'openai'")


def _make_openai(table: Mapping[str, Any], ctx: AgentContext) -> OpenAIAgent:
    r = FieldReader(table, ctx, _OPENAI_KEYS)
    name = r.required_string("name")
    seed = r.boolean("seed", True)
    settings = OpenAISettings(
        model=r.required_string("model"),
        base_url=r.string("base_url"),
        api_key_env=r.string("api_key_env", "OPENAI_API_KEY") or "OPENAI_API_KEY",
        temperature=r.number("temperature", minimum=0.0),
        max_turns=r.integer("max_turns", 3, minimum=1) or 3,
        max_tokens=r.integer("max_tokens", minimum=1),
        system_prompt=r.string("system_prompt", DEFAULT_SYSTEM_PROMPT) or DEFAULT_SYSTEM_PROMPT,
        seed=seed,
        usd_per_1k_input=r.number("usd_per_1k_input", minimum=0.0),
        usd_per_1k_output=r.number("usd_per_1k_output", minimum=0.0),
        max_retries=r.integer("max_retries", 2, minimum=0) or 0,
        request_timeout_s=r.number("request_timeout_s", 300.0, positive=True) or 300.0,
        timeout_s=r.number("timeout_s", positive=True),
        sandbox=sandbox_name(r),
        extra_body=r.table_of("extra_body"),
    )
    if settings.base_url is not None:
        try:
            parse_endpoint(settings.base_url)
        except InvalidArgumentError as exc:
            raise ctx.error("base_url", str(exc).partition(": ")[2]) from None
    if (settings.usd_per_1k_input is None) != (settings.usd_per_1k_output is None):
        missing = "usd_per_1k_output" if settings.usd_per_1k_output is None else "usd_per_1k_input"
        raise ctx.error(missing, "set both usd_per_1k_input and usd_per_1k_output, or neither")
    _require_sdk()
    return OpenAIAgent(name, settings)
