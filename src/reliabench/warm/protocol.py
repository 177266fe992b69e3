"""The framing between a warm test worker's client and its server: length-prefixed JSON.

One request, one response, over the server's stdin and stdout pipes. Both ends are trusted
reliabench code; nothing a rollout runs can reach these pipes (the server closes them in every
child before anything else happens there).

A frame may carry raw *attachments*: their lengths are listed in the frame (``attachments``)
and their bytes follow it on the stream. They are how a rollout's bytes cross the server
without entering its memory (every later rollout is a fork of that memory): the server
answers with :class:`FileSpan` attachments that the kernel copies from the rollout's output
files to the pipe (``sendfile``), and moves a request's attachments (the channel's secret)
from the request pipe to the rollout's pipe with ``splice`` (:func:`splice_attachments`). The
client, which may hold them, reads them with :func:`read_message`.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_FRAME",
    "FileSpan",
    "Message",
    "ProtocolError",
    "read_frame",
    "read_message",
    "splice_attachments",
    "write_frame",
]

MAX_FRAME = 256 * 1024 * 1024
"""The largest frame either side accepts (a guard against a corrupted stream)."""

_HEADER = struct.Struct("!I")


class ProtocolError(Exception):
    """The other end closed the stream or sent something that is not a frame."""


@dataclass(frozen=True, slots=True)
class FileSpan:
    """An attachment sent from an open file by the kernel (``sendfile``), never read into memory.

    Attributes:
        fd: The file (a regular file).
        offset: Where the span starts in it.
        length: How many bytes it announces; a file shorter than that is padded with zero
            bytes, so the stream stays in step.
    """

    fd: int
    offset: int
    length: int


@dataclass(frozen=True, slots=True)
class Message:
    """A frame and the bytes of its attachments, as :func:`read_message` returns them.

    Attributes:
        frame: The JSON object.
        attachments: The attachments in order.
    """

    frame: dict[str, Any]
    attachments: tuple[bytes, ...]


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def _send_span(fd: int, span: FileSpan) -> None:
    sent = 0
    while sent < span.length:
        n = os.sendfile(fd, span.fd, span.offset + sent, span.length - sent)
        if n == 0:  # the file is shorter than announced: keep the stream in step
            break
        sent += n
    while sent < span.length:
        pad = min(span.length - sent, 1 << 16)
        _write_all(fd, bytes(pad))
        sent += pad


def write_frame(fd: int, obj: dict[str, Any], attachments: Sequence[bytes | FileSpan] = ()) -> None:
    """Write one frame (4-byte big-endian length, then UTF-8 JSON), then its attachments.

    ``attachments`` adds the key ``attachments`` (their lengths) to the frame; a
    :class:`FileSpan` goes from its file to ``fd`` inside the kernel.
    """
    if attachments:
        obj = {**obj, "attachments": [a.length if isinstance(a, FileSpan) else len(a)
                                      for a in attachments]}
    body = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    _write_all(fd, _HEADER.pack(len(body)) + body)
    for item in attachments:
        if isinstance(item, FileSpan):
            _send_span(fd, item)
        else:
            _write_all(fd, item)


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
    sizes = obj.get("attachments", [])
    if not (isinstance(sizes, list)
            and all(type(n) is int and 0 <= n <= MAX_FRAME for n in sizes)):
        raise ProtocolError(f"frame announces attachments that are not sizes: {sizes!r}")
    return obj


def read_message(fd: int) -> Message:
    """Read one frame and the bytes of its attachments (the client's side).

    Raises:
        ProtocolError: The stream ended or the frame is not a JSON object.
    """
    frame = read_frame(fd)
    return Message(frame, tuple(_read_exact(fd, n) for n in frame.get("attachments", [])))


def splice_attachments(fd: int, frame: dict[str, Any], targets: Sequence[int]) -> None:
    """Move the attachments of ``frame`` from ``fd`` (a pipe) to ``targets``, one each (the server's side).

    ``splice`` moves them inside the kernel: they never enter this process's memory.

    Raises:
        ProtocolError: The frame has another number of attachments, or the stream ended.
    """
    sizes = frame.get("attachments", [])
    if len(sizes) != len(targets):
        raise ProtocolError(f"frame has {len(sizes)} attachments, expected {len(targets)}")
    for size, target in zip(sizes, targets, strict=True):
        left = size
        while left:
            n = os.splice(fd, target, left)
            if n == 0:
                raise ProtocolError("the stream ended in the middle of an attachment")
            left -= n
