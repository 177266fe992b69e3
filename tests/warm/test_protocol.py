"""The warm workers' framing (reliabench.warm.protocol): length-prefixed JSON, and a broken stream."""

from __future__ import annotations

import os
import struct
import threading
from collections.abc import Iterator

import pytest

from reliabench.warm.protocol import MAX_FRAME, ProtocolError, read_frame, write_frame


class Pipe:
    """Both ends of a pipe; each closed exactly once (a second close could hit a reused number)."""

    def __init__(self) -> None:
        self.r, self.w = os.pipe()

    def close_write(self) -> None:
        os.close(self.w)
        self.w = -1

    def close(self) -> None:
        for fd in (self.r, self.w):
            if fd >= 0:
                os.close(fd)


@pytest.fixture
def pipe() -> Iterator[Pipe]:
    p = Pipe()
    yield p
    p.close()


def test_round_trip_in_order(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    frames = [{"op": "exec", "argv": ["python3", "-c", "print('é')"]}, {}, {"n": [1, 2.5, None, True]}]
    for f in frames:
        write_frame(w, f)
    assert [read_frame(r) for _ in frames] == frames


def test_the_wire_format(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    write_frame(w, {"a": 1})
    body = b'{"a":1}'
    assert os.read(r, 100) == struct.pack("!I", len(body)) + body


def test_a_frame_larger_than_the_pipe_buffer_is_written_whole(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    big = {"data": "x" * (3 << 20)}  # 3 MiB: many partial writes and reads
    writer = threading.Thread(target=write_frame, args=(w, big))
    writer.start()
    assert read_frame(r) == big
    writer.join()


def test_broken_streams(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    os.write(w, struct.pack("!I", 10) + b'{"a"')
    pipe.close_write()
    with pytest.raises(ProtocolError, match="the stream ended in the middle of a frame"):
        read_frame(r)
    with pytest.raises(ProtocolError, match=r"^the stream ended$"):
        read_frame(r)


def test_a_header_cut_short(pipe: Pipe) -> None:
    r, w = pipe.r, pipe.w
    os.write(w, b"\x00\x00")
    pipe.close_write()
    with pytest.raises(ProtocolError, match="in the middle of a frame"):
        read_frame(r)


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (struct.pack("!I", MAX_FRAME + 1), f"frame of {MAX_FRAME + 1} bytes is larger than {MAX_FRAME}"),
        (struct.pack("!I", 3) + b"{x}", "frame is not JSON"),
        (struct.pack("!I", 2) + b"[]", "frame is not a JSON object"),
        (struct.pack("!I", 2) + b"\xff\xfe", "frame is not JSON"),
    ],
    ids=["too-large", "not-json", "not-an-object", "not-utf8"],
)
def test_frames_that_are_not_frames(pipe: Pipe, payload: bytes, message: str) -> None:
    r, w = pipe.r, pipe.w
    os.write(w, payload)
    with pytest.raises(ProtocolError, match=message):
        read_frame(r)


def test_attachments_follow_their_frame_and_a_short_file_is_padded(pipe: Pipe, tmp_path: object) -> None:
    import tempfile

    from reliabench.warm.protocol import FileSpan, read_message

    with tempfile.TemporaryFile() as fh:
        fh.write(b"0123456789")
        fh.flush()
        fd = fh.fileno()
        # a span past the end of the file is padded with zero bytes: the stream stays in step
        write_frame(pipe.w, {"a": 1}, [b"key", FileSpan(fd, 2, 3), FileSpan(fd, 8, 5)])
        write_frame(pipe.w, {"b": 2})
        first = read_message(pipe.r)
        assert first.frame == {"a": 1, "attachments": [3, 3, 5]}
        assert first.attachments == (b"key", b"234", b"89\0\0\0")
        assert read_message(pipe.r).frame == {"b": 2}


def test_the_server_moves_attachments_without_reading_them(pipe: Pipe) -> None:
    from reliabench.warm.protocol import splice_attachments

    write_frame(pipe.w, {"op": "run"}, [b"s3cret"])
    frame = read_frame(pipe.r)
    r, w = os.pipe()
    try:
        splice_attachments(pipe.r, frame, [w])
        assert os.read(r, 100) == b"s3cret"
        with pytest.raises(ProtocolError, match="1 attachments, expected 0"):
            splice_attachments(pipe.r, frame, [])
    finally:
        os.close(r)
        os.close(w)


@pytest.mark.parametrize("sizes", [[-1], ["3"], 5, [1.5]])
def test_a_frame_announcing_bad_attachments_is_refused(pipe: Pipe, sizes: object) -> None:
    write_frame(pipe.w, {"attachments": sizes})
    with pytest.raises(ProtocolError, match="attachments that are not sizes"):
        read_frame(pipe.r)
