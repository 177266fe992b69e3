"""Tokens and cost reported by ``command`` agents: a usage file, or the CLI's own summary.

**The usage file.** Every ``command`` agent gets ``RELIABENCH_USAGE_FILE`` in its
environment: a path it may write once, at the end, with one JSON object::

    {"tokens_in": 12000, "tokens_out": 800, "usd": 0.0123}

Every key is optional (``tokens`` -- a total -- is accepted too). Token counts must be
integers from 0 to 2**63-1 and ``usd`` a finite number >= 0 (what a stored record can hold:
:func:`reliabench.records.cost_count`, :func:`~reliabench.records.cost_amount`); a value
outside that range (``1e300``, ``-1``, ``NaN``, ``"12"``, ``true``, ``2**70``) makes the
file ignored like any bad one (never clamped), and the log says which key and why. The path
is outside the workspace (the file is not part of what the agent changed, not scanned, not
tested): it is ``usage.json`` in the channel folder of the agent's environment
(:attr:`reliabench.sandbox.environment.Environment.channel_dir`: fresh and empty for the
rollout, writable by the agent, removed with the environment), so every backend, a container
included, carries it. Write it by opening the path, e.g.
``json.dump(usage, open(os.environ["RELIABENCH_USAGE_FILE"], "w"))`` or
``echo '{"usd": 0.01}' > "$RELIABENCH_USAGE_FILE"``. reliabench reads it on the host after
the command ended, without following a link and without blocking (a link, a FIFO or a
device there is ignored, and the log says so), at most the first 64 KiB (a larger file is
ignored); a file that is not such an object is ignored and the log says why.

**Parsers of CLI output.** ``usage_parser = "aider"`` reads aider's own summary lines,
``Tokens: 2.1k sent, 245 received. Cost: $0.0012 message, $0.0034 session.``: tokens are
the sums over the lines (aider rounds to 0.1k above 1000, so they are approximate:
``meta["usage_approx"]``), the cost is the last ``session`` figure. The usage file, when
written, wins over a parser.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, cast

from reliabench.files import json_input
from reliabench.files.untrusted import file_kind, read_bounded
from reliabench.records import cost_amount, cost_count

__all__ = [
    "USAGE_FILE",
    "USAGE_PARSERS",
    "UsageReport",
    "parse_aider_usage",
    "parse_usage_json",
    "read_usage_file",
]

USAGE_FILE: Final = "usage.json"
"""The usage file's name in the channel folder (``RELIABENCH_USAGE_FILE`` is its inside path)."""

_MAX_USAGE_BYTES = 1 << 16


@dataclass(frozen=True, slots=True)
class UsageReport:
    """Tokens and cost of one rollout as an agent reported them.

    Attributes:
        tokens_in: Prompt tokens.
        tokens_out: Completion tokens.
        tokens: Total tokens (``tokens_in + tokens_out`` when both are known).
        usd: Cost in US dollars.
        source: Where it came from: ``usage_file`` or the parser's name.
        approx: The numbers were rounded by the agent (aider's ``2.1k``).
        dropped: Values out of the range a record holds, dropped: ``{key: why}`` (a parser's
            sums; the usage file is ignored whole instead).
    """

    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens: int | None = None
    usd: float | None = None
    source: str = "usage_file"
    approx: bool = False
    dropped: Mapping[str, str] = field(default_factory=dict)


def _field(obj: dict[str, Any], key: str, dropped: dict[str, str]) -> int | float | None:
    """``obj[key]`` in the range a record holds, or None (and why in ``dropped``)."""
    value = obj.get(key)
    if value is None:
        return None
    try:
        return cost_amount(value) if key == "usd" else cost_count(value)
    except ValueError as exc:
        dropped[key] = str(exc)
        return None


def parse_usage_json(text: str) -> UsageReport:
    """Parse the usage file's content (see the module docstring).

    Raises:
        ValueError: not a JSON object, or a value out of the range a record holds (named).

    Examples:
        >>> parse_usage_json('{"tokens_in": 10, "tokens_out": 5, "usd": 0.5}').tokens
        15
        >>> parse_usage_json('{"tokens_in": 1e300}')
        Traceback (most recent call last):
        ...
        ValueError: tokens_in: expected a token count from 0 to 2**63-1, got 1e+300
    """
    try:
        obj = json_input.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    dropped: dict[str, str] = {}
    tin, tout, tot = (cast("int | None", _field(obj, k, dropped))
                      for k in ("tokens_in", "tokens_out", "tokens"))
    usd = cast("float | None", _field(obj, "usd", dropped))
    if tot is None and not dropped and tin is not None and tout is not None:
        try:
            tot = cost_count(tin + tout)
        except ValueError as exc:
            dropped["tokens"] = f"tokens_in + tokens_out: {exc}"
    for key, why in dropped.items():  # the file is ignored as a whole, as for any bad file
        raise ValueError(f"{key}: {why}")
    return UsageReport(tin, tout, tot, usd, "usage_file")


_NUM = r"\d{1,30}(?:\.\d{1,30})?"  # bounded: a 5000-digit "number" is not aider's
_AIDER_TOKENS = re.compile(
    rf"Tokens: (?P<sent>{_NUM}k?) sent(?:, {_NUM}k? cache write)?(?:, {_NUM}k? cache hit)?, "
    rf"(?P<recv>{_NUM}k?) received\.")
_AIDER_COST = re.compile(rf"Cost: \$(?P<msg>{_NUM}) message, \$(?P<session>{_NUM}) session\.")


def _aider_number(text: str) -> tuple[int, bool]:
    if text.endswith("k"):
        return round(float(text[:-1]) * 1000), True
    return int(float(text)), False


def parse_aider_usage(output: str) -> UsageReport | None:
    r"""Sum aider's per-message ``Tokens:`` lines and take its last ``session`` cost.

    The output is the agent's: a sum past what a record holds is dropped (``dropped``).

    Example:
        >>> out = ("Tokens: 2.1k sent, 245 received. Cost: $0.0012 message, $0.0012 session.\n"
        ...        "Tokens: 900 sent, 50 received. Cost: $0.0003 message, $0.0015 session.\n")
        >>> r = parse_aider_usage(out)
        >>> (r.tokens_in, r.tokens_out, r.usd, r.approx)
        (3000, 295, 0.0015, True)
    """
    sent = recv = 0
    approx = False
    found = False
    for m in _AIDER_TOKENS.finditer(output):
        s, a1 = _aider_number(m.group("sent"))
        r, a2 = _aider_number(m.group("recv"))
        sent += s
        recv += r
        approx = approx or a1 or a2
        found = True
    costs = list(_AIDER_COST.finditer(output))
    if not found and not costs:
        return None
    dropped: dict[str, str] = {}
    raw: dict[str, Any] = {"tokens_in": sent, "tokens_out": recv, "tokens": sent + recv} if found else {}
    if costs:
        raw["usd"] = float(costs[-1].group("session"))
    tin, tout, tot = (cast("int | None", _field(raw, k, dropped))
                      for k in ("tokens_in", "tokens_out", "tokens"))
    return UsageReport(tin, tout, tot, cast("float | None", _field(raw, "usd", dropped)), "aider",
                       approx, dropped)


USAGE_PARSERS: dict[str, Callable[[str], UsageReport | None]] = {"aider": parse_aider_usage}
"""``usage_parser`` name -> a function of the agent's stdout + stderr."""


def read_usage_file(channel_host: Path) -> tuple[UsageReport | None, str | None]:
    """The usage file the agent left in its channel folder (host path), bounded, no link followed.

    Returns:
        ``(report, problem)``: the parsed file, or why it was ignored (both None: no file, or
        an empty one).
    """
    path = Path(channel_host) / USAGE_FILE
    kind = file_kind(path)
    if kind == "error":
        return None, None  # not there: nothing reported
    if kind != "file":
        return None, f"usage file ignored: not a regular file ({kind}; never followed or read)"
    data = read_bounded(path, _MAX_USAGE_BYTES)
    if data is None:
        return None, "usage file unreadable (replaced while it was read, or not a regular file)"
    if not data.strip():
        return None, None
    if len(data) > _MAX_USAGE_BYTES:
        return None, f"usage file ignored: larger than {_MAX_USAGE_BYTES} bytes"
    try:
        return parse_usage_json(data.decode("utf-8", "replace")), None
    except ValueError as exc:
        return None, f"usage file ignored: {exc}"
