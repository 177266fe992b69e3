"""The framing between a warm test worker's client and its server: length-prefixed JSON.

One request, one response, over the server's stdin and stdout pipes. Both ends are trusted
reliabench code; nothing a rollout runs can reach these pipes (the server closes them in every
child before anything else happens there).
"""

from __future__ import annotations

import json
import os
import struct
from typing import Any

__all__ = ["MAX_FRAME", "ProtocolError", "read_frame", "write_frame"]

MAX_FRAME = 256 * 1024 * 1024
"""The largest frame either side accepts (a guard against a corrupted stream)."""

_HEADER = struct.Struct("!I")


class ProtocolError(Exception):
    """The other end closed the stream or sent something that is not a frame."""


def write_frame(fd: int, obj: dict[str, Any]) -> None:
    """Write one frame (4-byte big-endian length, then UTF-8 JSON)."""
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    data = memoryview(_HEADER.pack(len(body)) + body)
    while data:
        n = os.write(fd, data)
        data = data[n:]


def _read_exact(fd: int, n: int) -> bytes:
    chunks: list[bytes] = []
    left = n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            raise ProtocolError("the stream ended in the middle of a frame" if chunks or left < n
                                else "the stream ended")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> dict[str, Any]:
    """Read one frame.

    Raises:
        ProtocolError: The stream ended or the frame is not a JSON object.
    """
    (size,) = _HEADER.unpack(_read_exact(fd, _HEADER.size))
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes is larger than {MAX_FRAME}")
    try:
        obj = json.loads(_read_exact(fd, size))
    except ValueError as exc:
        raise ProtocolError(f"frame is not JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise ProtocolError("frame is not a JSON object")
    return obj
