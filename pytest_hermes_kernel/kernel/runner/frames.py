"""The wire codec: one frame format for host <-> supervisor and supervisor <-> worker.

::

    u32 BE total length | u32 BE header length | header JSON (UTF-8) | blob bytes...

``total`` counts everything after itself. The header's ``"blobs"`` lists the byte lengths of the
blobs that follow it (a cell's captured stdout/stderr travel as blobs, never inside JSON). The
host imports this module too (``kernel/results.py`` re-exports it): there is one codec.
"""

from __future__ import annotations

import sys

try:
    from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner
except ImportError:  # PyPy, a CPython built without ``_json``: ``json``'s Python parts (same text)
    make_encoder = make_scanner = None

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: the runner's start stays cheap
    import socket
    from collections.abc import Sequence
    from typing import Any

    Header = dict[str, Any]
    Frame = tuple[Header, list[bytes]]



def _unserializable(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class _Scanning:
    """What ``_json.make_scanner`` reads: ``json.loads``' defaults."""
    strict, object_hook, object_pairs_hook, parse_float, parse_int = True, None, None, float, int
    parse_constant = {"-Infinity": float("-inf"), "Infinity": float("inf"), "NaN": float("nan")}.__getitem__


#: The codec's JSON: ``json.dumps(..., separators=(",", ":"), ensure_ascii=...)`` and ``json.loads``,
#: made of ``json``'s own C parts (``_json``): the same text, without importing ``json`` (which
#: imports ``re`` and ``enum``: 6.6 of a filecell poll's 10 ms of imports), and the codec's own
#: (in a worker, cells run in this interpreter and may patch ``json``'s).
#: Without ``_json`` (PyPy, a CPython built without it) ``json``'s own Python encoder and scanner, as
#: ``json`` then uses them itself, bound here (2 Python frames a level of nesting: see :func:`_roomy`).
if make_scanner is None:
    from json.decoder import JSONDecoder
    from json.encoder import JSONEncoder

    _SCAN = JSONDecoder().scan_once
else:
    _SCAN = make_scanner(_Scanning())
_SPACE = " \t\n\r"


def _dumps(value: Any, ensure_ascii: bool = True) -> str:
    if make_encoder is None:
        return _roomy(JSONEncoder(ensure_ascii=ensure_ascii, separators=(",", ":")).encode, value)
    encode = encode_basestring_ascii if ensure_ascii else encode_basestring  # (a new encoder each time, as json's:
    return "".join(make_encoder({}, _unserializable, encode, None, ":", ",", False, False, True)(value, 0))  # its cycle marks)


def _roomy(call: Any, text: Any) -> Any:
    """``call(text)`` with room for ``json``'s Python encoder or scanner to nest a frame's
    :data:`MAX_FRAME_DEPTH` levels beyond the caller's stack (``_json``'s C parts need none on
    3.12+, and count one level a level before): the recursion limit is raised for the call."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(limit + 3 * MAX_FRAME_DEPTH)
    try:
        return call(text)
    finally:
        if sys.getrecursionlimit() == limit + 3 * MAX_FRAME_DEPTH:  # (unless another thread set its own)
            sys.setrecursionlimit(limit)


def _loads(text: str) -> Any:
    """As ``json.loads`` (``ValueError`` for what is not one JSON value; ``json.JSONDecodeError``,
    whose message differs only in the words, when the C scanner raises it itself)."""
    start = len(text) - len(text.lstrip(_SPACE))
    try:
        value, end = _SCAN(text, start) if make_scanner else _roomy(lambda t: _SCAN(t, start), text)
    except StopIteration as exc:
        raise ValueError(f"Expecting value: char {exc.value}") from None
    except SystemError:  # 3.10, 3.11: the scanner's error for a bad string (``{"t``, ``"\x"``) is json.decoder's,
        import json.decoder  # noqa: F401 - and with json not imported it raised none (the error path alone pays)
        return _loads(text)
    if text[end:].strip(_SPACE):
        raise ValueError(f"Extra data: char {end}")
    return value

PROTOCOL_VERSION = 1
#: Largest frame either side accepts (64 MiB): room for two 1 MiB captures many times over.
MAX_FRAME_BYTES = 64 * 1024 * 1024
#: Deepest nesting of lists and objects a frame's header may have. A reader decodes a header
#: in its own stack, ``json``'s recursion counted against it: the runner (and a worker reading
#: inside a cell's deep stack) died of a tool's value nested 980 deep that the host had encoded.
MAX_FRAME_DEPTH = 500
#: Bytes asked of one ``read``/``recv`` on a channel, a pipe or a socket.
READ_CHUNK = 65536


def pack_head(total: int, header_bytes: int) -> bytes:
    """A frame's first 8 bytes: ``total`` and the header's length, each a u32 big-endian.

    (``int.to_bytes``/``int.from_bytes``, not ``struct``: ``_struct`` is a shared library, and a
    filecell poll, which imports this module, paid ~0.2 ms to load it.)

    :raises OverflowError: if either number does not fit in 32 bits.
    """
    return total.to_bytes(4, "big") + header_bytes.to_bytes(4, "big")


def _u32(buf: bytearray, offset: int) -> int:
    return int.from_bytes(buf[offset:offset + 4], "big")


class FrameError(Exception):
    """A frame that cannot be decoded (bad length, bad JSON, blob lengths that do not add up)."""


class FrameTooDeep(ValueError):
    """A header nested deeper than :data:`MAX_FRAME_DEPTH`: not every reader could decode it."""


def encode_frame(header: Header, blobs: Sequence[bytes] = ()) -> bytes:
    """Serialize ``header`` and the byte ``blobs`` into one frame.

    :param header: a JSON-able dict; ``"blobs"`` is set here when there are blobs.
    :param blobs: raw byte strings sent after the header, in order.
    :returns: the frame's bytes. A header holding a lone surrogate (an environment's undecodable
        byte, ``os.fsdecode``'s ``\\udcff``) goes ASCII-escaped: JSON carries it, UTF-8 cannot.
    :raises FrameTooDeep: if the header is nested deeper than :data:`MAX_FRAME_DEPTH`.
    :raises TypeError: (``ValueError``, ``RecursionError``) if ``json`` cannot encode the header.
    """
    if blobs:
        header = dict(header, blobs=[len(b) for b in blobs])
    try:
        body = _dumps(header, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        body = _dumps(header).encode("ascii")
    except RecursionError:  # json's C recursion limit (3.12: ~1000 levels) before the depth check
        if _too_deep(header):
            raise FrameTooDeep(f"nested more than {MAX_FRAME_DEPTH} levels deep, over the {MAX_FRAME_DEPTH} a "
                               "frame may hold") from None
        raise
    depth = _depth(body)
    if depth > MAX_FRAME_DEPTH:
        raise FrameTooDeep(f"nested {depth} levels deep, over the {MAX_FRAME_DEPTH} a frame may hold")
    total = 4 + len(body) + sum(len(b) for b in blobs)
    return b"".join((pack_head(total, len(body)), body, *blobs))


class FrameDecoder:
    """Incremental frame parser: ``feed(data)``, then ``next_frame()`` until it returns ``None``.

    :param max_frame_bytes: a frame announcing more than this is a :class:`FrameError`.
    """

    def __init__(self, max_frame_bytes: int = MAX_FRAME_BYTES) -> None:
        self._buf = bytearray()
        self._max = max_frame_bytes

    def feed(self, data: bytes) -> None:
        """Append bytes read from the stream."""
        self._buf += data

    def pending(self) -> int:
        """Bytes fed but not yet returned as a frame."""
        return len(self._buf)

    def peek(self, n: int) -> bytes:
        """The first ``n`` bytes fed and not yet returned as a frame."""
        return bytes(self._buf[:n])

    def partial(self) -> tuple[int, int | None] | None:
        """``(bytes held, bytes the frame announced)`` while an unfinished frame is buffered (the
        second ``None`` before its length came); ``None`` when nothing is."""
        if not self._buf:
            return None
        return len(self._buf), (4 + _u32(self._buf, 0) if len(self._buf) >= 4 else None)

    def next_frame(self) -> Frame | None:
        """The next complete frame as ``(header, blobs)``, or ``None`` until more bytes come.

        :raises FrameError: if the buffered bytes cannot be a frame.
        """
        buf = self._buf
        if len(buf) < 4:
            return None
        total = _u32(buf, 0)
        if total < 4 or total > self._max:
            raise FrameError(f"frame length {total} outside 4..{self._max}")
        if len(buf) < 4 + total:
            return None
        hlen = _u32(buf, 4)
        if hlen > total - 4:
            raise FrameError(f"header length {hlen} exceeds frame length {total}")
        if total < 65536:  # the usual short frame
            header, rest = _parse_header(buf[8 : 8 + hlen]), buf[8 + hlen : 4 + total]
        else:
            with memoryview(buf) as view:  # the text straight from the buffer, dropped before the parse: a
                try:  # 60 MB tool argument was its buffer, a slice, its bytes, its text and its value at once
                    text = str(view[8 : 8 + hlen], "utf-8")
                except UnicodeDecodeError as exc:
                    raise FrameError(f"frame header is not JSON: {exc}") from None
                rest = bytes(view[8 + hlen : 4 + total])
            del buf[: 4 + total]
            header = _parse_header(text)
            del text
        lengths = header.get("blobs", [])
        if isinstance(rest, bytes) and lengths == [len(rest)]:  # (a list: no other value equals one)
            return header, [rest]  # one long blob: its bytes as they came
        blobs, pos = [], 0
        for n in lengths if isinstance(lengths, list) else [None]:
            if not isinstance(n, int) or n < 0 or pos + n > len(rest):
                raise FrameError("frame blob lengths do not add up")
            blobs.append(bytes(rest[pos : pos + n]))
            pos += n
        if not isinstance(rest, bytes):
            del buf[: 4 + total]
        return header, blobs


_JSON_STRING = rb'"[^"\\]*(?:\\.[^"\\]*)*"'  # (compiled when a header is that deep: ``re`` costs a poll 5 ms)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _depth(body: bytes) -> int:
    """How deep lists and objects nest inside the header ``body`` (a JSON object, not counted: a
    tool's value ``[[]]`` is 2 deep); ``0`` for one with too few brackets to nest deeper than
    :data:`MAX_FRAME_DEPTH` (the usual header's case: not counted)."""
    if body.count(b"[") + body.count(b"{") <= MAX_FRAME_DEPTH + 1:
        return 0
    depth = deepest = 0
    import re

    for byte in re.sub(_JSON_STRING, b"", body).translate(None, _NOT_BRACKETS):
        depth += 1 if byte in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest - 1


def _too_deep(header: Header) -> bool:
    """Whether lists and dicts nest in ``header`` deeper than :data:`MAX_FRAME_DEPTH` (counted as
    :func:`_depth` does), found without recursion."""
    todo = [(value, 1) for value in header.values() if isinstance(value, (list, dict))]
    while todo:
        value, depth = todo.pop()
        if depth > MAX_FRAME_DEPTH:
            return True
        items = value.values() if isinstance(value, dict) else value
        todo.extend((item, depth + 1) for item in items if isinstance(item, (list, dict)))
    return False


def _parse_header(text: bytearray | str) -> Header:
    try:
        header = _loads(text if isinstance(text, str) else text.decode("utf-8"))
    except ValueError as exc:
        raise FrameError(f"frame header is not JSON: {exc}") from None
    except RecursionError:  # a peer's (a cell's, on its worker's channel) ``[[[...`` 100,000 deep: the
        raise FrameError("frame header nests deeper than this reader can decode") from None  # runner died of it
    if not isinstance(header, dict):
        raise FrameError("frame header is not a JSON object")
    return header


def send_all(sock: socket.socket, data: bytes) -> None:
    """Send every byte of ``data`` on ``sock``, blocking or not (waits up to 1 s per stall).

    :raises OSError: if the peer is gone.
    """
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view):]
        except BlockingIOError:
            import select  # (here, not at the top: a filecell poll imports this module and never waits here)

            select.select([], [sock], [], 1.0)


def unread(sock: socket.socket) -> bool:
    """Whether bytes wait in ``sock``, not yet read."""
    import select  # (see :func:`send_all`)

    try:
        return bool(select.select([sock], [], [], 0)[0])
    except (OSError, ValueError):  # closed
        return False


def recv_or_end(sock: socket.socket) -> bytes:
    """What readable ``sock`` has; ``b""`` at its end or on an error."""
    try:
        return sock.recv(READ_CHUNK)
    except OSError:
        return b""
