"""Serve a run's report page on the loopback interface (``reliabench view``).

For runs too large for one file: the page is the one ``reliabench report`` writes, rendered
with ``live=True`` (no details embedded); the explorer fetches each rollout's detail from
``/rollout?id=...`` when it is opened, built on demand by the same code. Only loopback
addresses are accepted (``127.0.0.1``, ``::1``, ``localhost``): the artifacts of a run are
code written by agents and logs that may hold anything, and they are not for the network.

Binding to the loopback does not keep out a web page in the user's own browser: a page of
``attacker.example`` whose name is then re-pointed at 127.0.0.1 (DNS rebinding) talks to the
server as same-origin. So every request must

* carry a ``Host`` header that names a loopback address with the server's port
  (``127.0.0.1:PORT``, ``localhost:PORT``, ``[::1]:PORT``): a rebinding page sends its own
  name; and
* prove it knows the per-start token: ``?token=...`` (the URL printed at start,
  :attr:`ReportServer.url`) or the ``HttpOnly``, ``SameSite=Strict`` cookie the page gets with
  it; the explorer adds the page's token to its own ``/rollout`` fetches.

Anything else gets 403 and nothing of the run. Responses forbid framing and referrers (the
token is in the page's URL).
"""

from __future__ import annotations

import hmac
import ipaddress
import json
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from reliabench.errors import InvalidArgumentError
from reliabench.metrics.analysis import ScoreReport
from reliabench.records import Rollout
from reliabench.report.explorer import embed_json, render_report_page, rollout_detail_json
from reliabench.report.rollout_detail import DetailLimits, rollout_id

if TYPE_CHECKING:
    from reliabench.runs import RunDirectory
    from reliabench.studies.noise import NoiseReport
    from reliabench.studies.scoring import PageFigures

__all__ = ["ReportServer", "allowed_hosts", "check_loopback", "make_server"]

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def check_loopback(host: str) -> str:
    """Return ``host`` if it is a loopback address, else raise.

    Examples:
        >>> check_loopback("127.0.0.1")
        '127.0.0.1'

    Raises:
        InvalidArgumentError: for any other address (``0.0.0.0``, a LAN address, a name).
    """
    if host == "localhost":
        return "127.0.0.1"
    try:
        ok = ipaddress.ip_address(host).is_loopback
    except ValueError:
        ok = False
    if not ok:
        raise InvalidArgumentError(
            f"host must be a loopback address (127.0.0.1, ::1 or localhost), got {host!r}: "
            "a run's artifacts are agent-written code and logs, not for the network")
    return host


def allowed_hosts(port: int) -> frozenset[str]:
    """The ``Host`` header values a server on ``port`` answers (lower case).

    Example:
        >>> sorted(allowed_hosts(8765))
        ['127.0.0.1:8765', '[::1]:8765', 'localhost:8765']
    """
    hosts = {f"{name}:{port}" for name in _LOOPBACK_NAMES}
    if port == 80:
        hosts |= set(_LOOPBACK_NAMES)
    return frozenset(hosts)


@dataclass
class ReportServer:
    """A running server; ``close()`` stops it.

    Attributes:
        httpd: The HTTP server.
        thread: The thread serving it (None: the caller serves).
        url: Where the page is, with the per-start token (what to open).
        origin: ``http://HOST:PORT/`` without the token.
        token: The per-start token every request must carry.
    """

    httpd: ThreadingHTTPServer
    thread: threading.Thread | None
    url: str
    origin: str = ""
    token: str = ""

    def close(self) -> None:
        """Stop serving and release the port."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if self.thread is not None:
            self.thread.join(timeout=5)


def make_server(run: RunDirectory, records: Sequence[Rollout], report: ScoreReport, figures: PageFigures, *,
                noise: NoiseReport | None = None, host: str = "127.0.0.1", port: int = 0,
                limits: DetailLimits | None = None, background: bool = True) -> ReportServer:
    """Start serving the report of ``run`` on ``host:port`` (0: any free port).

    Args:
        run: The run directory (artifacts are read through it on demand, from the server's
            threads; it must stay open while the server runs).
        records: The run's records.
        report: ``analysis.score`` of them.
        figures: ``studies.scoring.page_figures(report, records)``.
        noise: The run's harness noise, for its section.
        host: A loopback address.
        port: The port (0 picks a free one).
        limits: Bounds on each rollout's detail.
        background: Serve from a daemon thread (else the caller calls ``httpd.serve_forever``).

    Raises:
        InvalidArgumentError: for a non-loopback ``host``.
    """
    bind = check_loopback(host)
    lim = limits or DetailLimits()
    page = render_report_page(records, report, figures=figures, source=str(run.path), source_format="run",
                              run=run, noise=noise, live=True, limits=lim).encode()
    by_id = {rollout_id(r): r for r in records}
    token = secrets.token_urlsafe(32)
    hosts: frozenset[str] = frozenset()  # set once the port is known
    cookie_name = "reliabench_view"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, code: int, body: bytes, ctype: str, cookie: str | None = None) -> None:
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("X-Frame-Options", "DENY")
            self.send_header("Referrer-Policy", "no-referrer")
            self.send_header("Content-Security-Policy",
                             "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
                             "img-src data:; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; "
                             "form-action 'none'")
            if cookie is not None:
                self.send_header("Set-Cookie", f"{cookie_name}={cookie}; Path=/; HttpOnly; SameSite=Strict")
            self.end_headers()
            self.wfile.write(body)

        def _authorised(self, query: dict[str, list[str]]) -> bool:
            """A loopback ``Host`` with our port, and the token (query or cookie)."""
            host_headers = self.headers.get_all("Host") or []
            if len(host_headers) != 1 or host_headers[0].strip().lower() not in hosts:
                return False
            given = query.get("token") or []
            if len(given) == 1 and hmac.compare_digest(given[0].encode(), token.encode()):
                return True
            jar = SimpleCookie()
            for raw in self.headers.get_all("Cookie") or []:
                try:
                    jar.load(raw)
                except CookieError:
                    continue
            morsel = jar.get(cookie_name)
            return morsel is not None and hmac.compare_digest(morsel.value.encode(), token.encode())

        def do_GET(self) -> None:
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            if not self._authorised(query):
                self._send(403, b"forbidden: open the URL that `reliabench view` printed "
                                b"(loopback address, with its token)\n", "text/plain")
                return
            if url.path in ("/", "/index.html"):
                self._send(200, page, "text/html; charset=utf-8", cookie=token)
            elif url.path == "/rollout":
                rid = (query.get("id") or [""])[0]
                r = by_id.get(rid)
                if r is None:
                    self._send(404, json.dumps({"error": "no such rollout"}).encode(), "application/json")
                    return
                body = embed_json(rollout_detail_json(r, run, lim)).encode()
                self._send(200, body, "application/json; charset=utf-8")
            elif url.path == "/favicon.ico":
                self._send(204, b"", "image/x-icon")
            else:
                self._send(404, b"not found", "text/plain")

    server_cls = ThreadingHTTPServer
    if ":" in bind:
        import socket

        class V6(ThreadingHTTPServer):
            address_family = socket.AF_INET6

        server_cls = V6
    httpd = server_cls((bind, port), Handler)
    httpd.daemon_threads = True
    hosts = allowed_hosts(int(httpd.server_address[1]))
    shown = f"[{bind}]" if ":" in bind else bind
    origin = f"http://{shown}:{httpd.server_address[1]}/"
    url = f"{origin}?token={token}"
    thread = None
    if background:
        thread = threading.Thread(target=httpd.serve_forever, name="reliabench-view", daemon=True)
        thread.start()
    return ReportServer(httpd, thread, url, origin, token)
