"""Unit: what a large tool argument or value costs the host in memory (tracemalloc peaks, never times).

A 60 MB tool argument cost 240 MB of host RSS and a 60 MB value 180 MB (benchmarks/value_memory.py,
docs/numbers.md): the frame's buffer, a slice of it, its bytes, its text; ``json``'s text twice,
its bytes, the joined frame; the call's preview (the whole argument's repr, twice, and a lower-case
copy). Each bound here is well above what the code now takes and below what it took.
"""

from __future__ import annotations

import socket
import threading
import tracemalloc

import pytest

from pytest_hermes_kernel.errors import FrameTooLargeError
from pytest_hermes_kernel.kernel.channel import Channel, SocketStream
from pytest_hermes_kernel.kernel.results import MAX_FRAME_BYTES, FrameDecoder, FrameTooDeep, encode_frame
from pytest_hermes_kernel.kernel.rpc import CellAuthority, ToolTable
from pytest_hermes_kernel.kernel.runner.frames import MAX_FRAME_DEPTH

SIZE = 20 * 10**6


def _peak(action) -> int:
    """Bytes allocated at the peak while ``action()`` ran, over what was held before."""
    tracemalloc.start()
    try:
        start = tracemalloc.get_traced_memory()[0]
        action()
        return tracemalloc.get_traced_memory()[1] - start
    finally:
        tracemalloc.stop()


def _drained_channel():
    """A channel whose peer reads and drops everything; ``(channel, received byte count, stop)``."""
    ours, theirs = socket.socketpair()
    got = [0]

    def drain() -> None:
        while data := theirs.recv(1 << 20):
            got[0] += len(data)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    channel = Channel(SocketStream(ours), name="test")

    def stop() -> None:
        channel.close()
        reader.join(10)
        theirs.close()

    return channel, got, stop


@pytest.mark.parametrize("shape", ["one-string", "many-short-strings"])
def test_a_20_mb_tool_value_is_sent_holding_its_text_once(shape):
    """A long string was held as json's text twice, its bytes and the frame (2.0x its size). A value whose
    long string sends it in pieces but whose other strings are each under 64 KiB (a dict of file
    contents, say) had those joined into one piece, its text and bytes at once (2.9x its size)."""
    value = "v" * SIZE if shape == "one-string" else {"big": "b" * (2 << 20),
                                                      **{f"f{i}": "v" * 60000 for i in range(SIZE // 60000)}}
    channel, got, stop = _drained_channel()
    try:
        peak = _peak(lambda: channel.send({"type": "tool_result", "id": 1, "ok": True, "value": value}))
    finally:
        stop()
    assert got[0] > SIZE  # it all went out
    assert peak < 1.5 * SIZE, f"sending a {SIZE}-byte value peaked at {peak / SIZE:.2f}x its size"


@pytest.mark.parametrize("char", ["a", "\u00e9"], ids=["ascii", "2-byte-utf8"])
def test_a_20_mb_frame_is_decoded_holding_at_most_two_copies(char):
    frame = encode_frame({"type": "tool_call", "id": 2, "name": "take", "args": {"x": char * (SIZE // len(char.encode()))}})
    chunks = [frame[at:at + (1 << 20)] for at in range(0, len(frame), 1 << 20)]
    size = len(frame)
    del frame
    decoder = FrameDecoder()
    got = []

    def decode() -> None:
        for chunk in chunks:
            decoder.feed(chunk)
        chunks.clear()
        got.append(decoder.next_frame())

    peak = _peak(decode)
    header, blobs = got[0]
    assert len(header["args"]["x"]) == SIZE // len(char.encode()) and blobs == [] and decoder.pending() == 0
    bound = 2.5 if char == "a" else 3.2  # CPython's decoder widens a non-ASCII text once: one more copy of it
    assert peak < bound * size, f"decoding a {size}-byte frame peaked at {peak / size:.2f}x its size (was 4.0x)"


def test_a_20_mb_tool_argument_costs_no_copy_for_its_preview():
    authority = CellAuthority("c", ToolTable({"take": lambda x: len(x)}), max_calls=5, secrets=("s3cret-token-42",))
    arg = "ab s3cret-token-42 " + "a" * SIZE
    result = []
    peak = _peak(lambda: result.append(authority.dispatch("c", "take", {"x": arg})))
    assert result == [len(arg)]
    preview = authority.snapshot()[0]["args"]
    assert preview.startswith("{'x': 'ab [REDACTED] aaa") and preview.endswith("...") and len(preview) == 80
    assert peak < 0.1 * SIZE, f"a {SIZE}-byte argument's call peaked at {peak / SIZE:.2f}x its size (was 2.25x)"


def test_long_frames_keep_the_codec_contract():
    """The host's frames in pieces are the codec's bytes, its errors the codec's (nested too deep)."""
    from pytest_hermes_kernel.kernel.pieces import frame_out

    big = "x" * (3 << 20)
    for header in ({"type": "tool_result", "value": big + "\u00e9\u2603\U0001f600"},
                   {"type": "tool_call", "args": {"x": "\udcff" + big, "y": [1, None]}},  # a lone surrogate: escaped
                   {"type": "tool_result", "value": [big, {"k": big}]},
                   {"type": "tool_result", "value": list(range(400_000)), "n": 1}):
        frame = encode_frame(header)
        assert b"".join(frame_out(header).pieces()) == frame and frame_out(header).size == len(frame)
        decoder = FrameDecoder()
        for at in range(0, len(frame), 65536):
            decoder.feed(frame[at:at + 65536])
        assert decoder.next_frame() == (header, [])
    decoder.feed(encode_frame({"type": "reply", "pad": big}, (b"out", b"", b"err")))
    assert decoder.next_frame() == ({"type": "reply", "pad": big, "blobs": [3, 0, 3]}, [b"out", b"", b"err"])
    deep: list = []
    for _ in range(MAX_FRAME_DEPTH + 5):
        deep = [deep]
    for encode in (encode_frame, frame_out):
        with pytest.raises(FrameTooDeep, match="nested 50[0-9] levels deep"):
            encode({"type": "tool_result", "value": deep, "pad": big})


def test_a_tool_value_over_the_frame_limit_still_errors_with_its_size():
    channel, got, stop = _drained_channel()
    try:
        header = {"type": "tool_result", "id": 1, "ok": True, "value": "z" * MAX_FRAME_BYTES}
        size = 8 + len('{"type":"tool_result","id":1,"ok":true,"value":""}') + MAX_FRAME_BYTES
        with pytest.raises(FrameTooLargeError, match=rf"a tool_result request of {size} bytes is over the "
                                                     rf"{MAX_FRAME_BYTES}-byte frame limit; nothing was sent"):
            channel.send(header)
    finally:
        stop()
    assert got[0] == 0  # nothing was sent
