from datetime import datetime, timedelta, timezone

import pytest

from access_log_stats import LogEntry, parse_line, summarize

COMMON = '127.0.0.1 - frank [10/Oct/2000:13:55:36 -0700] "GET /apache_pb.gif HTTP/1.0" 200 2326'
COMBINED = (
    '10.0.0.2 - - [05/Mar/2024:08:01:02 +0530] "POST /api/items?page=2 HTTP/1.1" 404 - '
    '"http://example.com/start" "Mozilla/5.0 (X11; Linux)"'
)


def line(host="1.1.1.1", path="/", status=200, size="10", method="GET", ts="01/Jan/2024:00:00:00 +0000"):
    return f'{host} - - [{ts}] "{method} {path} HTTP/1.1" {status} {size}'


def test_parse_common_line():
    entry = parse_line(COMMON)
    assert entry == LogEntry(
        host="127.0.0.1", user="frank",
        time=datetime(2000, 10, 10, 13, 55, 36, tzinfo=timezone(timedelta(hours=-7))),
        method="GET", path="/apache_pb.gif", protocol="HTTP/1.0", status=200, size=2326,
        referer=None, user_agent=None,
    )


def test_parse_combined_line():
    entry = parse_line(COMBINED)
    assert entry is not None
    assert entry.user is None
    assert entry.method == "POST"
    assert entry.path == "/api/items?page=2"
    assert entry.status == 404
    assert entry.size == 0
    assert entry.referer == "http://example.com/start"
    assert entry.user_agent == "Mozilla/5.0 (X11; Linux)"


def test_parse_timezone_positive_offset_with_minutes():
    entry = parse_line(COMBINED)
    assert entry.time == datetime(2024, 3, 5, 8, 1, 2, tzinfo=timezone(timedelta(hours=5, minutes=30)))
    assert entry.time.utcoffset() == timedelta(hours=5, minutes=30)


def test_parse_combined_dash_referer_and_agent():
    entry = parse_line(COMMON + ' "-" "-"')
    assert entry is not None
    assert entry.referer is None and entry.user_agent is None


def test_parse_trailing_newline_ok():
    assert parse_line(COMMON + "\n") == parse_line(COMMON)


@pytest.mark.parametrize(
    "bad",
    [
        "", "garbage", COMMON.replace("[", ""), COMMON.replace('"GET', "GET"),
        COMMON + " extra", COMMON.replace(" 2326", ""), COMMON.replace("2326", "12kb"),
    ],
)
def test_parse_structurally_malformed(bad):
    assert parse_line(bad) is None


def test_parse_bad_timestamps():
    for ts in ("32/Oct/2000:13:55:36 -0700", "10/Foo/2000:13:55:36 -0700", "10/Oct/2000:25:00:00 -0700",
               "10/Oct/2000:13:55:36", "10/oct/2000:13:55:36 -0700", "2000-10-10T13:55:36Z"):
        assert parse_line(line(ts=ts)) is None, ts


def test_parse_bad_requests():
    base = '1.1.1.1 - - [01/Jan/2024:00:00:00 +0000] "{}" 400 0'
    for request in ("-", "GET /", "GET / HTTP/1.1 extra", "get / HTTP/1.1", "GET index.html HTTP/1.1",
                    "GET / FTP/1.0", "GET  / HTTP/1.1"):
        assert parse_line(base.format(request)) is None, request
    assert parse_line(base.format("DELETE /x HTTP/2")) is not None


def test_parse_status_range():
    assert parse_line(line(status=100)).status == 100
    assert parse_line(line(status=599)).status == 599
    assert parse_line(line(status=600)) is None
    assert parse_line(line(status="099")) is None
    assert parse_line(line(status=2000)) is None


LOG = [
    line(host="a", path="/index.html", status=200, size="100"),
    line(host="b", path="/index.html?utm=x", status=200, size="50"),
    line(host="a", path="/about", status=301, size="-"),
    "this line is broken",
    "",
    "   \n",
    line(host="c", path="/missing", status=404, size="10"),
    line(host="a", path="/about", status=200, size="20"),
    line(host="d", path="/api", status=500, size="5"),
    line(host="a", path="/zeta", status=200, size="1"),
    COMMON.replace("[", "("),
]


def test_summarize_counts_and_malformed():
    stats = summarize(LOG)
    assert stats.total_requests == 7
    assert stats.malformed == 2


def test_summarize_total_bytes():
    assert summarize(LOG).total_bytes == 186


def test_summarize_status_counts():
    assert summarize(LOG).status_counts == {200: 4, 301: 1, 404: 1, 500: 1}


def test_summarize_unique_hosts_and_error_rate():
    stats = summarize(LOG)
    assert stats.unique_hosts == 4
    assert stats.error_rate == pytest.approx(2 / 7)


def test_error_rate_boundaries():
    stats = summarize([line(status=399), line(status=400), line(status=200), line(status=200)])
    assert stats.error_rate == pytest.approx(0.25)


def test_summarize_top_paths_strip_query_and_sort():
    stats = summarize(LOG)
    assert stats.top_paths == [("/about", 2), ("/index.html", 2), ("/api", 1)]


def test_summarize_top_n():
    assert summarize(LOG, top_n=1).top_paths == [("/about", 2)]
    assert summarize(LOG, top_n=0).top_paths == []
    assert len(summarize(LOG, top_n=10).top_paths) == 5
    with pytest.raises(ValueError):
        summarize(LOG, top_n=-1)


def test_summarize_empty_and_all_blank():
    stats = summarize(["", "  ", "\n"])
    assert stats.total_requests == 0
    assert stats.malformed == 0
    assert stats.error_rate == 0.0
    assert stats.top_paths == []
    assert stats.status_counts == {}


def test_summarize_accepts_file_like_iterable(tmp_path):
    log_file = tmp_path / "access.log"
    log_file.write_text(COMMON + "\n" + COMBINED + "\nnope\n", encoding="utf-8")
    with log_file.open(encoding="utf-8") as handle:
        stats = summarize(handle)
    assert (stats.total_requests, stats.malformed, stats.total_bytes) == (2, 1, 2326)
