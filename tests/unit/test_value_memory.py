"""Unit: what a large tool argument or value costs the host in memory (tracemalloc peaks, never times).

A 60 MB tool argument cost 240 MB of host RSS and a 60 MB value 180 MB (benchmarks/value_memory.py,
docs/numbers.md): the frame's buffer, a slice of it, its bytes, its text; ``json``'s text twice,
its bytes, the joined frame; the call's preview (the whole argument's repr, twice, and a lower-case
copy). Each bound here is well above what the code now takes and below what it took.
"""

from __future__ import annotations

import tracemalloc

import pytest

from pytest_hermes_kernel.kernel.results import FrameDecoder, encode_frame
from pytest_hermes_kernel.kernel.rpc import CellAuthority, ToolTable

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
