"""Unit: the length-prefixed frame codec shared by host and kernel runner."""

from __future__ import annotations

import importlib.util
import json
import json.encoder
import json.scanner
import struct
import sys
from types import ModuleType

import pytest

from pytest_hermes_kernel.kernel.results import FrameDecoder, FrameError, FrameTooDeep, encode_frame
from pytest_hermes_kernel.kernel.runner import frames as c_frames
from pytest_hermes_kernel.kernel.runner.frames import MAX_FRAME_DEPTH


@pytest.fixture(params=["c", "python"], ids=["json-c", "json-python"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """The codec as the runner has it: with ``_json``'s C parts, or as an interpreter without
    ``_json`` (PyPy, a CPython built without it) loads it, on ``json``'s Python encoder and scanner."""
    if request.param == "c":
        return c_frames
    monkeypatch.setitem(sys.modules, "_json", None)
    monkeypatch.setattr(json.scanner, "make_scanner", json.scanner.py_make_scanner)
    monkeypatch.setattr(json.encoder, "c_make_encoder", None)
    spec = importlib.util.spec_from_file_location("frames_without_json_c", c_frames.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.make_scanner is None and "py_make_scanner" in repr(module._SCAN)
    return module


def _raw(total: int, hlen: int, body: bytes) -> bytes:
    return struct.pack(">II", total, hlen) + body


def test_round_trip_with_blobs_and_unicode():
    frame = encode_frame({"type": "result", "id": 7, "text": "naïve ✓"}, (b"out\xff", b"", b"err"))
    dec = FrameDecoder()
    dec.feed(frame)
    header, blobs = dec.next_frame()
    assert header["type"] == "result" and header["id"] == 7 and header["text"] == "naïve ✓"
    assert header["blobs"] == [4, 0, 3] and blobs == [b"out\xff", b"", b"err"]
    assert dec.next_frame() is None and dec.pending() == 0


def test_frames_split_at_every_byte_boundary():
    data = encode_frame({"a": 1}, (b"x" * 10,)) + encode_frame({"b": 2})
    dec = FrameDecoder()
    frames = []
    for i in range(len(data)):
        dec.feed(data[i : i + 1])
        while (frame := dec.next_frame()) is not None:
            frames.append(frame)
    assert [h.get("a", h.get("b")) for h, _ in frames] == [1, 2]
    assert frames[0][1] == [b"x" * 10] and dec.pending() == 0


def test_several_frames_in_one_feed():
    dec = FrameDecoder()
    dec.feed(b"".join(encode_frame({"n": n}) for n in range(5)))
    assert [dec.next_frame()[0]["n"] for _ in range(5)] == list(range(5))
    assert dec.next_frame() is None


def test_incomplete_frame_waits_for_more():
    frame = encode_frame({"n": 1})
    dec = FrameDecoder()
    dec.feed(frame[:-1])
    assert dec.next_frame() is None
    dec.feed(frame[-1:])
    assert dec.next_frame()[0] == {"n": 1}


@pytest.mark.parametrize("data, why", [
    (struct.pack(">I", 0), "outside"),
    (struct.pack(">I", 3), "outside"),
    (struct.pack(">I", 2**32 - 1), "outside"),
    (_raw(4 + 2, 100, b"{}"), "header length"),
    (_raw(4 + 5, 5, b"{nope"), "not JSON"),
    (_raw(4 + 2, 2, b"[]"), "not a JSON object"),
    (_raw(4 + 3, 3, b"\xff\xfe{"), "not JSON"),
    (_raw(4 + 13, 13, b'{"blobs":[5]}'), "do not add up"),
    (_raw(4 + 14, 14, b'{"blobs":[-1]}'), "do not add up"),
    (_raw(4 + 15, 15, b'{"blobs":["1"]}'), "do not add up"),
])
def test_bad_frames_raise_frame_error(data, why):
    dec = FrameDecoder()
    dec.feed(data + b"\0" * 32)
    with pytest.raises(FrameError, match=why):
        dec.next_frame()


def test_max_frame_bytes_is_enforced_before_buffering_the_body():
    dec = FrameDecoder(max_frame_bytes=1024)
    dec.feed(struct.pack(">I", 2048))  # only the length has arrived: refuse at once, never wait
    with pytest.raises(FrameError):
        dec.next_frame()


def test_header_is_compact_json_and_length_matches():
    frame = encode_frame({"k": "v"})
    total, hlen = struct.unpack(">II", frame[:8])
    assert total == len(frame) - 4 and json.loads(frame[8 : 8 + hlen]) == {"k": "v"}


def test_a_header_with_a_lone_surrogate_round_trips():
    """An environment's undecodable byte (``\\udcff``, as ``os.environ`` holds it) cannot be UTF-8:
    the frame carries it JSON-escaped (it raised UnicodeEncodeError on a kernel server's spawn)."""
    header = {"type": "spawn", "config": {"env": {"A": "\udcff", "B": "é"}}}
    dec = FrameDecoder()
    dec.feed(encode_frame(header, [b"x"]))
    got, blobs = dec.next_frame()
    assert got["config"] == header["config"] and blobs == [b"x"]


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_a_header_nests_at_most_max_frame_depth_and_brackets_in_strings_do_not_count(codec: ModuleType):
    """A reader decodes a header in its own stack: one nested 980 deep killed the kernel runner
    (tests/regressions/test_a_tool_value_nested_too_deep_keeps_the_kernel.py)."""
    deepest = {"type": "tool_result", "value": _nested(MAX_FRAME_DEPTH)}
    text = {"type": "tool_result", "value": ['[{"\\' * 5000, {"k": "]]" * 5000}]}
    for header in (deepest, text):
        dec = codec.FrameDecoder()
        dec.feed(codec.encode_frame(header))
        assert dec.next_frame()[0] == header

    with pytest.raises(codec.FrameTooDeep, match=f"nested {MAX_FRAME_DEPTH + 1} levels deep, over the {MAX_FRAME_DEPTH}"):
        codec.encode_frame({"type": "tool_result", "value": _nested(MAX_FRAME_DEPTH + 1)})
    with pytest.raises(codec.FrameTooDeep, match=f"over the {MAX_FRAME_DEPTH}"):
        codec.encode_frame({"type": "tool_result", "value": _nested(3000)})  # past the recursion limit


_VALUES = [
    {"type": "execute", "id": 7, "code": "print('é ü 漢 \U0001f600')\n", "blobs": [1, 0]},
    {"s": "quote \" backslash \\ tab \t nl \n nul \x00 del \x7f", "e": "", "l": [], "d": {}},
    {"f": [0.1, -2.5e-300, 1e308, 3.0], "i": [0, -1, 2 ** 80], "b": [True, False, None]},
    {"surrogate": "\udcff and \ud800"},
    {"nan": float("nan"), "inf": [float("inf"), float("-inf")]},
    {"nested": [[[{"a": [1, {"b": None}]}]]], "unicode key é": 1},
]


@pytest.mark.parametrize("value", _VALUES, ids=range(len(_VALUES)))
def test_the_codecs_json_is_jsons(value, codec: ModuleType) -> None:
    """The codec's JSON (``_json``'s C parts, without importing ``json``: most of a filecell poll's
    imports; ``json``'s Python parts without ``_json``) writes the text ``json.dumps`` writes and
    reads back what ``json.loads`` reads."""
    _dumps, _loads = codec._dumps, codec._loads

    for ascii_only in (True, False):
        try:
            theirs = json.dumps(value, separators=(",", ":"), ensure_ascii=ascii_only)
        except UnicodeEncodeError:
            continue
        assert _dumps(value, ensure_ascii=ascii_only) == theirs
        assert json.dumps(_loads(theirs), separators=(",", ":")) == json.dumps(json.loads(theirs), separators=(",", ":"))
    assert json.dumps(_loads(" \n\t" + json.dumps(value) + "\r\n ")) == json.dumps(json.loads(json.dumps(value)))


@pytest.mark.parametrize("text", ["", " ", "{", "{} x", "[1,]", "{'a': 1}", "tru", "[1] [2]"])
def test_the_codec_refuses_what_json_refuses_as_a_value_error(text: str, codec: ModuleType) -> None:
    _loads = codec._loads

    with pytest.raises(ValueError):
        json.loads(text)
    with pytest.raises(ValueError):
        _loads(text)


def test_the_codec_names_what_it_cannot_encode_and_keeps_no_cycle_marks(codec: ModuleType) -> None:
    _dumps = codec._dumps

    loop: list = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        _dumps({"v": loop})
    shared = [1]
    assert _dumps({"a": shared, "b": shared}) == '{"a":[1],"b":[1]}'  # the same list twice is no cycle
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        _dumps({"v": {1}})
    with pytest.raises(TypeError):
        _dumps({"v": [shared, {2}]})  # failed midway: its marks must not make the next call see a cycle
    assert _dumps({"v": shared}) == '{"v":[1]}'
