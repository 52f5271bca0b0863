"""The frame decoder, fed mutated frames in random pieces (seeded: the same cases every run):
it returns frames (a dict header, byte blobs), waits for more, or raises ``FrameError``, and
nothing else. A header nested deeper than ``json`` decodes was a ``RecursionError`` (it ended
the kernel runner: ``tests/regressions/test_a_cell_that_writes_a_too_deep_frame_on_its_channel_is_named.py``).
"""

from __future__ import annotations

import random
import struct

import pytest

from pytest_hermes_kernel.kernel.runner.frames import FrameDecoder, FrameError, encode_frame

HEADERS = [{"type": "result", "id": 1, "status": "ok"}, {"type": "tool_call", "id": "1-1", "args": {"a": [1, "é"]}},
           {"type": "x", "blobs": [1, 2]}]
LENGTHS = [0, 1, 3, 4, 8, 2**26, 2**32 - 1]


def _mutated(rnd: random.Random) -> bytes:
    data = bytearray(encode_frame(rnd.choice(HEADERS), [b"ab", b"\xff"] if rnd.random() < 0.5 else []))
    for _ in range(rnd.randrange(1, 4)):
        op = rnd.randrange(5)
        if op == 0:
            data[rnd.randrange(len(data))] = rnd.randrange(256)
        elif op == 1:
            del data[rnd.randrange(len(data))]
        elif op == 2:
            data.insert(rnd.randrange(len(data) + 1), rnd.randrange(256))
        elif op == 3 and len(data) >= 8:
            struct.pack_into(">I", data, rnd.choice([0, 4]), rnd.choice(LENGTHS + [len(data), len(data) - 4]))
        elif op == 4:  # a header nested deeper than json decodes
            body = b"[" * 5000 + b"]" * 5000
            data = bytearray(struct.pack(">II", 4 + len(body), len(body)) + body)
    return bytes(data)


@pytest.mark.parametrize("seed", range(4))
def test_mutated_frames_in_random_pieces_are_frames_or_frame_errors(seed: int) -> None:
    rnd = random.Random(seed)
    for _ in range(2500):
        data = _mutated(rnd) + (encode_frame(HEADERS[0]) if rnd.random() < 0.3 else b"")
        cuts = sorted(rnd.sample(range(len(data) + 1), min(3, len(data) + 1))) + [len(data)]
        decoder, start = FrameDecoder(), 0
        try:
            for cut in cuts:
                decoder.feed(data[start:cut])
                start = cut
                while (frame := decoder.next_frame()) is not None:
                    header, blobs = frame
                    assert isinstance(header, dict) and all(isinstance(b, bytes) for b in blobs), frame
        except FrameError:
            pass
