"""``reliabench view``'s server: loopback Host headers and the per-start token, on a real server.

A DNS-rebinding page (``attacker.example`` re-pointed at 127.0.0.1) reaches the loopback
server from the user's browser as same-origin; it sends its own name in ``Host`` and does not
know the token. Every request below is sent over a real socket, with the Host header a
browser would send.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from report_helpers import copy_run, served

from reliabench.report.serve import ReportServer, allowed_hosts

RID = "run_git_log\x1fsim-hasty\x1f0"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReportServer]:
    run_dir = copy_run(tmp_path_factory.mktemp("serve"))
    with served(run_dir) as srv:
        yield srv


def _port(server: ReportServer) -> int:
    return int(server.origin.rstrip("/").rsplit(":", 1)[1])


def _get(server: ReportServer, target: str, *, host: str | None = None,
         headers: dict[str, str] | None = None) -> tuple[int, bytes, http.client.HTTPResponse]:
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=10)
    try:
        conn.putrequest("GET", target, skip_host=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{_port(server)}")
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        conn.endheaders()
        resp = conn.getresponse()
        return resp.status, resp.read(), resp
    finally:
        conn.close()


def _rollout(server: ReportServer, token: str | None = None) -> str:
    from urllib.parse import quote

    return f"/rollout?id={quote(RID)}" + (f"&token={token}" if token else "")


def test_the_printed_url_serves_page_and_detail(server: ReportServer) -> None:
    code, body, resp = _get(server, f"/?token={server.token}")
    assert code == 200 and b"rb-data" in body
    assert "frame-ancestors 'none'" in resp.headers["Content-Security-Policy"]
    assert resp.headers["X-Frame-Options"] == "DENY" and resp.headers["Referrer-Policy"] == "no-referrer"
    cookie = resp.headers["Set-Cookie"]
    assert server.token in cookie and "HttpOnly" in cookie and "SameSite=Strict" in cookie
    code, body, _ = _get(server, _rollout(server, server.token))
    assert code == 200 and json.loads(body)["id"] == RID
    # the cookie alone (a reload, the explorer's fetch) is enough
    code, body, _ = _get(server, _rollout(server), headers={"Cookie": f"reliabench_view={server.token}"})
    assert code == 200 and json.loads(body)["id"] == RID
    for name in ("localhost", "LOCALHOST", "[::1]"):
        assert _get(server, f"/?token={server.token}", host=f"{name}:{_port(server)}")[0] == 200


@pytest.mark.parametrize("host", ["attacker.example", "attacker.example:{port}", "127.0.0.1",
                                  "127.0.0.1:1", "localhost.attacker.example:{port}", "0.0.0.0:{port}",
                                  "127.0.0.2:{port}", ""])
def test_a_foreign_host_header_is_refused_even_with_the_token(server: ReportServer, host: str) -> None:
    host = host.format(port=_port(server))
    for target in (f"/?token={server.token}", _rollout(server, server.token)):
        code, body, _ = _get(server, target, host=host)
        assert code == 403, (host, target)
        assert b"rb-data" not in body and b"sim-hasty" not in body


def test_no_or_a_wrong_token_is_refused(server: ReportServer) -> None:
    for target in ("/", "/index.html", _rollout(server), _rollout(server, "x" * 43),
                   _rollout(server, server.token[:-1]), f"/?token={server.token}&token=x",
                   "/favicon.ico"):
        code, body, _ = _get(server, target)
        assert code == 403, target
        assert b"sim-hasty" not in body and b"rb-data" not in body
    for cookie in ("reliabench_view=nope", f"other={server.token}", "\x00;;=", f"reliabench_view={server.token}x"):
        assert _get(server, _rollout(server), headers={"Cookie": cookie})[0] == 403, cookie


def test_two_host_headers_are_refused(server: ReportServer) -> None:
    conn = http.client.HTTPConnection("127.0.0.1", _port(server), timeout=10)
    try:
        conn.putrequest("GET", f"/?token={server.token}", skip_host=True)
        conn.putheader("Host", f"127.0.0.1:{_port(server)}")
        conn.putheader("Host", "attacker.example")
        conn.endheaders()
        assert conn.getresponse().status == 403
    finally:
        conn.close()


def test_each_start_has_its_own_token(server: ReportServer, tmp_path: Path) -> None:
    run_dir = copy_run(tmp_path)
    with served(run_dir) as other:
        assert other.token != server.token and len(other.token) >= 40
        assert _get(other, f"/?token={server.token}", host=f"127.0.0.1:{_port(other)}")[0] == 403


def test_allowed_hosts_name_the_port() -> None:
    assert allowed_hosts(80) >= {"127.0.0.1", "localhost", "[::1]", "localhost:80"}
    assert "localhost" not in allowed_hosts(8080)
