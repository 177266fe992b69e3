"""A tiny OpenAI-compatible chat-completions server on 127.0.0.1, for offline tests.

Usage::

    with FakeOpenAIServer(["```python path=a.py\\nx = 1\\n```"]) as server:
        client = openai.OpenAI(base_url=server.base_url, api_key="test-key")
        ...
        server.requests  # the JSON bodies received, in order

Each reply is one of:

- a ``str``: the assistant message content (usage is counted as words, deterministic);
- a ``Reply``: full control (status code, content, usage, headers, delay, raw body);
- a callable ``(body: dict, index: int) -> str | Reply``.

Once the scripted replies run out the last one repeats. ``GET /v1/models`` answers a
one-model list (401 without the key when ``api_key`` is set), for ``reliabench run``'s
pre-run check. A hang is a ``Reply`` with a long ``delay_s``. The server is bounded: it serves at
most ``max_requests`` requests (then answers 503) and shuts itself down after ``lifetime_s``
seconds even if the test forgets to stop it. It listens on an ephemeral port of 127.0.0.1.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeOpenAIServer", "Reply"]


@dataclass
class Reply:
    """One scripted response."""

    content: str = ""
    status: int = 200
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    raw_body: bytes | None = None
    finish_reason: str = "stop"
    tool_calls: list[dict[str, Any]] | None = None

    @staticmethod
    def bash(command: str, content: str = "") -> Reply:
        """A reply that calls the ``bash`` tool once (mini-swe-agent's tool-call protocol)."""
        return Reply(content, finish_reason="tool_calls", tool_calls=[{
            "id": "call_" + format(abs(hash(command)) % 10**12, "012d"), "type": "function",
            "function": {"name": "bash", "arguments": json.dumps({"command": command})}}])


Script = str | Reply | Callable[[dict[str, Any], int], "str | Reply"]


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    owner: FakeOpenAIServer


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout test)
            self.close_connection = True

    def do_GET(self) -> None:
        owner = self.server.owner
        with owner.lock:
            owner.gets.append(self.path)
        if not self.path.rstrip("/").endswith("/models"):
            self._send(404, b'{"error": {"message": "not found", "type": "invalid_request"}}')
            return
        if owner.models_delay_s:
            time.sleep(owner.models_delay_s)
        auth = self.headers.get("Authorization", "")
        if owner.api_key is not None and auth != f"Bearer {owner.api_key}":
            self._send(401, json.dumps({"error": {"message": "Incorrect API key provided",
                                                  "type": "invalid_request_error"}}).encode())
            return
        body = {"object": "list", "data": [{"id": "fake-model", "object": "model",
                                            "owned_by": "reliabench-tests"}]}
        self._send(200, json.dumps(body).encode())

    def do_POST(self) -> None:
        owner = self.server.owner
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length)
        if not self.path.rstrip("/").endswith("/chat/completions"):
            self._send(404, b'{"error": {"message": "not found", "type": "invalid_request"}}')
            return
        try:
            body = json.loads(raw)
        except ValueError:
            self._send(400, b'{"error": {"message": "invalid JSON", "type": "invalid_request"}}')
            return
        auth = self.headers.get("Authorization", "")
        with owner.lock:
            index = len(owner.requests)
            owner.requests.append(body)
            owner.auth_headers.append(auth)
        if index >= owner.max_requests:
            self._send(503, b'{"error": {"message": "fake server request limit", "type": "x"}}')
            return
        if owner.api_key is not None and auth != f"Bearer {owner.api_key}":
            self._send(401, json.dumps({"error": {"message": "Incorrect API key provided",
                                                  "type": "invalid_request_error",
                                                  "code": "invalid_api_key"}}).encode())
            return
        reply = owner.reply_for(body, index)
        if reply.delay_s:
            time.sleep(reply.delay_s)
        if reply.raw_body is not None:
            self._send(reply.status, reply.raw_body, reply.headers)
            return
        if reply.status != 200:
            err = {"error": {"message": reply.content or f"fake error {reply.status}",
                             "type": "server_error", "code": None}}
            self._send(reply.status, json.dumps(err).encode(), reply.headers)
            return
        prompt_words = sum(len(str(m.get("content", "")).split()) for m in body.get("messages", []))
        pt = reply.prompt_tokens if reply.prompt_tokens is not None else prompt_words
        ct = reply.completion_tokens if reply.completion_tokens is not None else len(
            reply.content.split())
        resp = {
            "id": f"chatcmpl-fake-{index}",
            "object": "chat.completion",
            "created": 1700000000,
            "model": body.get("model", "fake"),
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": reply.content,
                            **({"tool_calls": reply.tool_calls} if reply.tool_calls else {})},
                "finish_reason": reply.finish_reason,
                "logprobs": None,
            }],
            "usage": {"prompt_tokens": pt, "completion_tokens": ct, "total_tokens": pt + ct},
        }
        self._send(200, json.dumps(resp).encode(), reply.headers)


class FakeOpenAIServer:
    """A bounded, self-stopping fake of ``POST /v1/chat/completions`` (see module docstring).

    Args:
        script: The replies, in order (the last one repeats).
        api_key: When set, requests without ``Authorization: Bearer <api_key>`` get a 401.
        max_requests: Requests beyond this get a 503.
        lifetime_s: The server stops itself after this many seconds.
        models_delay_s: ``GET /models`` (the pre-run check) answers after this delay.
        per_conversation: Pick the reply by the number of assistant messages in the request
            (each rollout's conversation replays the script from its start) instead of by
            the request count.
    """

    def __init__(self, script: Sequence[Script] | Script = "", *, api_key: str | None = None,
                 max_requests: int = 50, lifetime_s: float = 60.0,
                 models_delay_s: float = 0.0, per_conversation: bool = False) -> None:
        self.script: list[Script] = (
            list(script) if isinstance(script, (list, tuple)) else [script]  # type: ignore[list-item]
        )
        self.api_key = api_key
        self.max_requests = max_requests
        self.lifetime_s = lifetime_s
        self.requests: list[dict[str, Any]] = []
        self.auth_headers: list[str] = []
        self.gets: list[str] = []
        self.models_delay_s = models_delay_s
        self.per_conversation = per_conversation
        self.lock = threading.Lock()
        self._httpd: _Server | None = None
        self._thread: threading.Thread | None = None
        self._timer: threading.Timer | None = None

    def reply_for(self, body: dict[str, Any], index: int) -> Reply:
        """The reply to request number ``index`` (0-based)."""
        if not self.script:
            return Reply("")
        if self.per_conversation:
            # a fresh conversation (agent CLI run) starts at the first reply again: the index
            # is the number of assistant messages already in the request
            index = sum(1 for m in body.get("messages", []) if m.get("role") == "assistant")
        item = self.script[min(index, len(self.script) - 1)]
        if callable(item) and not isinstance(item, Reply):
            item = item(body, index)
        return Reply(item) if isinstance(item, str) else item

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def start(self) -> FakeOpenAIServer:
        """Start serving in a daemon thread."""
        httpd = _Server(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fake-openai", daemon=True)
        self._thread.start()
        self._timer = threading.Timer(self.lifetime_s, self.stop)
        self._timer.daemon = True
        self._timer.start()
        return self

    def stop(self) -> None:
        """Stop serving (idempotent)."""
        httpd, self._httpd = self._httpd, None
        if self._timer is not None and self._timer is not threading.current_thread():
            self._timer.cancel()
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
