"""Tokens and cost reported by ``command`` agents: a usage file, or the CLI's own summary.

**The usage file.** Every ``command`` agent gets ``RELIABENCH_USAGE_FILE`` in its
environment: a path it may write once, at the end, with one JSON object::

    {"tokens_in": 12000, "tokens_out": 800, "usd": 0.0123}

Every key is optional (``tokens`` -- a total -- is accepted too); numbers must be finite and
>= 0. The path is outside the workspace (the file is not part of what the agent changed, not
scanned, not tested): it is ``/dev/fd/N``, a file descriptor that reliabench opens on a
private file of its own before the sandbox starts and that the sandboxed process inherits, so
the sandbox needs no second writable folder. Write it by opening the path (truncating), e.g.
``json.dump(usage, open(os.environ["RELIABENCH_USAGE_FILE"], "w"))`` or
``echo '{"usd": 0.01}' > "$RELIABENCH_USAGE_FILE"``. Only the first 64 KiB are read; a file
that is not such an object is ignored and the log says why.

**Parsers of CLI output.** ``usage_parser = "aider"`` reads aider's own summary lines,
``Tokens: 2.1k sent, 245 received. Cost: $0.0012 message, $0.0034 session.``: tokens are
the sums over the lines (aider rounds to 0.1k above 1000, so they are approximate:
``meta["usage_approx"]``), the cost is the last ``session`` figure. The usage file, when
written, wins over a parser.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "USAGE_PARSERS",
    "UsageChannel",
    "UsageReport",
    "open_usage_channel",
    "parse_aider_usage",
    "parse_usage_json",
]

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
    """

    tokens_in: int | None = None
    tokens_out: int | None = None
    tokens: int | None = None
    usd: float | None = None
    source: str = "usage_file"
    approx: bool = False


def _count(obj: dict[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value < 0:
        raise ValueError(f"{key}: expected a finite number >= 0, got {value!r}")
    return float(value)


def parse_usage_json(text: str) -> UsageReport:
    """Parse the usage file's content (see the module docstring).

    Raises:
        ValueError: not a JSON object with numeric ``tokens_in``/``tokens_out``/``tokens``/``usd``.

    Example:
        >>> parse_usage_json('{"tokens_in": 10, "tokens_out": 5, "usd": 0.5}').tokens
        15
    """
    try:
        obj = json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON ({exc})") from None
    if not isinstance(obj, dict):
        raise ValueError(f"expected a JSON object, got {type(obj).__name__}")
    t_in, t_out, total, usd = (_count(obj, k) for k in ("tokens_in", "tokens_out", "tokens", "usd"))
    tin = None if t_in is None else int(t_in)
    tout = None if t_out is None else int(t_out)
    tot = int(total) if total is not None else (tin + tout if tin is not None and tout is not None
                                                 else None)
    return UsageReport(tin, tout, tot, usd, "usage_file")


_AIDER_TOKENS = re.compile(
    r"Tokens: (?P<sent>[\d.]+k?) sent(?:, [\d.]+k? cache write)?(?:, [\d.]+k? cache hit)?, "
    r"(?P<recv>[\d.]+k?) received\.")
_AIDER_COST = re.compile(r"Cost: \$(?P<msg>[\d.]+) message, \$(?P<session>[\d.]+) session\.")


def _aider_number(text: str) -> tuple[int, bool]:
    if text.endswith("k"):
        return round(float(text[:-1]) * 1000), True
    return int(float(text)), False


def parse_aider_usage(output: str) -> UsageReport | None:
    r"""Sum aider's per-message ``Tokens:`` lines and take its last ``session`` cost.

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
    usd = float(costs[-1].group("session")) if costs else None
    return UsageReport(sent if found else None, recv if found else None,
                       sent + recv if found else None, usd, "aider", approx)


USAGE_PARSERS: dict[str, Callable[[str], UsageReport | None]] = {"aider": parse_aider_usage}
"""``usage_parser`` name -> a function of the agent's stdout + stderr."""


@dataclass(frozen=True, slots=True)
class UsageChannel:
    """An open usage file: pass ``fd`` to the sandbox and ``env_value`` as the variable.

    Attributes:
        fd: The inherited file descriptor.
        path: The host path of the file (private to reliabench).
        env_value: ``/dev/fd/<fd>``, the value of ``RELIABENCH_USAGE_FILE``.
    """

    fd: int
    path: Path
    env_value: str

    def read(self) -> tuple[UsageReport | None, str | None]:
        """``(report, problem)``: the parsed file, or why it was ignored (both None: empty)."""
        try:
            with open(self.path, "rb") as fh:
                data = fh.read(_MAX_USAGE_BYTES + 1)
        except OSError as exc:
            return None, f"usage file unreadable: {exc}"
        if not data.strip():
            return None, None
        if len(data) > _MAX_USAGE_BYTES:
            return None, f"usage file ignored: larger than {_MAX_USAGE_BYTES} bytes"
        try:
            return parse_usage_json(data.decode("utf-8", "replace")), None
        except ValueError as exc:
            return None, f"usage file ignored: {exc}"


@contextlib.contextmanager
def open_usage_channel() -> Iterator[UsageChannel]:
    """Create the private usage file and keep a descriptor on it open for the sandbox.

    The file is in a fresh 0700 directory of this process's user, so no sandboxed uid can
    reach it by path; it is mode 0666 so that the sandboxed uid can reopen it through
    ``/dev/fd/N`` (which checks only the file's own mode).
    """
    tmp = tempfile.mkdtemp(prefix="rb-usage-")
    path = Path(tmp) / "usage.json"
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o666)
    try:
        os.fchmod(fd, 0o666)
        os.set_inheritable(fd, True)
        yield UsageChannel(fd, path, f"/dev/fd/{fd}")
    finally:
        os.close(fd)
        shutil.rmtree(tmp, ignore_errors=True)
