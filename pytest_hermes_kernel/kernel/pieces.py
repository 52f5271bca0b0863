"""Frames the host sends in pieces: a long one never held as one ``bytes``, nor its text twice.

The bytes are :func:`~.runner.frames.encode_frame`'s (of a frame without blobs), the same errors
raised; only how they are made differs. A 60 MB tool value cost ``json``'s text twice (its own join), the text's UTF-8
bytes and the joined frame before it went out (two copies held at once, four made); now its text,
once, made in chunks that are never joined, each encoded into at most :data:`PIECE_BYTES` as it
is sent (:meth:`Channel.send <.channel.Channel.send>`). A frame of up to :data:`PIECE_BYTES` is
made as before and goes out in one piece. The runner keeps the one codec (its file for
``filecell`` travels inside a command line: no room for this module).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from json.encoder import encode_basestring, encode_basestring_ascii
from typing import Any

from .runner.frames import _JSON_STRING, _NOT_BRACKETS, MAX_FRAME_DEPTH, FrameTooDeep, _depth, _too_deep, pack_head

#: A frame's header longer than this many characters is sent in pieces of about this many bytes.
PIECE_BYTES = 1 << 20
_ENCODERS = {ascii_only: (json.JSONEncoder(separators=(",", ":"), ensure_ascii=ascii_only).iterencode,
                          encode_basestring_ascii if ascii_only else encode_basestring)
             for ascii_only in (False, True)}
_JSON_STRING_TEXT = re.compile(_JSON_STRING.decode())


class OutFrame:
    """A frame to send: :attr:`size` bytes, which :meth:`pieces` yields in order."""

    __slots__ = ("size", "_head", "_chunks", "_whole")

    def __init__(self, size: int, head: bytes, chunks: list[str], whole: bytes) -> None:
        self.size, self._head, self._chunks, self._whole = size, head, chunks, whole

    def pieces(self) -> Iterator[bytes]:
        """The frame's bytes in pieces of at most about :data:`PIECE_BYTES` (the first holds its lengths)."""
        if self._whole:
            yield self._whole
            return
        yield self._head
        small: list[str] = []
        held = 0  # characters in small: flushed at a piece's size (joined whole, many short strings were
        for chunk in self._chunks:  # the frame's text and bytes again: 3.16x a 20 MB value of 60 KB strings)
            if len(chunk) < 65536:
                small.append(chunk)
                held += len(chunk)
                if held >= PIECE_BYTES:
                    yield "".join(small).encode("utf-8")
                    small.clear()
                    held = 0
                continue
            if small:
                yield "".join(small).encode("utf-8")
                small.clear()
                held = 0
            for at in range(0, len(chunk), PIECE_BYTES):
                yield chunk[at:at + PIECE_BYTES].encode("utf-8")
        if small:
            yield "".join(small).encode("utf-8")

    def joined(self) -> bytes:
        """The whole frame as one ``bytes``-like (a ``bytearray`` filled a piece at a time for a long one)."""
        if self._whole:
            return self._whole
        frame, at = bytearray(self.size), 0
        for piece in self.pieces():
            frame[at:at + len(piece)] = piece
            at += len(piece)
        return frame  # type: ignore[return-value]  # bytes-like: every stream's send takes it


def frame_out(header: dict[str, Any]) -> OutFrame:
    """``header`` (no blobs) as a frame to send.

    :raises FrameTooDeep: (``TypeError``, ``ValueError``, ``RecursionError``) as :func:`encode_frame`.
    """
    try:
        try:
            chunks, body = _text(header, False)
            size = len(body) if body else _utf8_size(chunks)
        except UnicodeEncodeError:  # a lone surrogate: ASCII-escaped, as encode_frame does
            chunks, body = _text(header, True)
            size = len(body) if body else sum(map(len, chunks))
    except RecursionError:
        if _too_deep(header):
            raise FrameTooDeep(f"nested more than {MAX_FRAME_DEPTH} levels deep, over the {MAX_FRAME_DEPTH} a "
                               "frame may hold") from None
        raise
    depth = _depth(body) if body else _depth_of(chunks)
    if depth > MAX_FRAME_DEPTH:
        raise FrameTooDeep(f"nested {depth} levels deep, over the {MAX_FRAME_DEPTH} a frame may hold")
    head = pack_head(4 + size, size)
    return OutFrame(8 + size, head, chunks, head + body) if body else OutFrame(8 + size, head, chunks, b"")


def _text(header: dict[str, Any], ascii_only: bool) -> tuple[list[str], bytes]:
    """``(chunks, b"")`` of a header's text over :data:`PIECE_BYTES` characters; ``([], its bytes)`` of a shorter one.

    :raises UnicodeEncodeError: if it holds a lone surrogate (never with ``ascii_only``).
    """
    chunks = _json_chunks(header, ascii_only, 2)
    if sum(map(len, chunks)) > PIECE_BYTES:
        return chunks, b""
    return [], "".join(chunks).encode("utf-8")


def _json_chunks(value: Any, ascii_only: bool, levels: int) -> list[str]:
    """``value`` as JSON text in chunks that join to what ``json.dumps`` (compact) makes of it.

    A plain dict ``levels`` deep (a header, a tool's arguments) that holds a string over
    :data:`PIECE_BYTES` characters is walked here and each string escaped on its own (``json``
    escapes a string into one chunk and joins all of them: twice the text at once); any other
    value is one ``json`` call, its chunks kept as they come.
    """
    iterencode, encode_str = _ENCODERS[ascii_only]
    if isinstance(value, str):
        return [encode_str(value)]
    if not (levels and type(value) is dict and _long_str_in(value, levels) and all(type(k) is str for k in value)):
        return list(iterencode(value, _one_shot=True))
    chunks = ["{"]
    for key, item in value.items():
        chunks.append(("" if len(chunks) == 1 else ",") + encode_str(key) + ":")
        chunks.extend(_json_chunks(item, ascii_only, levels - 1))
    chunks.append("}")
    return chunks


def _long_str_in(value: dict[Any, Any], levels: int) -> bool:
    """Whether dict ``value`` holds a string over :data:`PIECE_BYTES` characters, ``levels`` deep in dicts."""
    for item in value.values():
        kind = type(item)
        if kind is str:
            if len(item) > PIECE_BYTES:
                return True
        elif kind is dict and levels > 1 and _long_str_in(item, levels - 1):
            return True
    return False


def _utf8_size(chunks: list[str]) -> int:
    """Bytes ``chunks`` take in UTF-8, counted a piece at a time (never all the bytes at once).

    :raises UnicodeEncodeError: if one holds a lone surrogate.
    """
    size = 0
    for chunk in chunks:
        if chunk.isascii():
            size += len(chunk)
        else:
            size += sum(len(chunk[at:at + PIECE_BYTES].encode("utf-8")) for at in range(0, len(chunk), PIECE_BYTES))
    return size


def _depth_of(chunks: list[str]) -> int:
    """:func:`~.runner.frames._depth` of a header's text chunks, never joined (each holds whole strings)."""
    if sum(chunk.count("[") + chunk.count("{") for chunk in chunks) <= MAX_FRAME_DEPTH + 1:
        return 0
    brackets = b"".join(_JSON_STRING_TEXT.sub("", chunk).encode("utf-8").translate(None, _NOT_BRACKETS)
                        for chunk in chunks)
    return _deepest(brackets)


def _deepest(brackets: bytes) -> int:
    depth = deepest = 0
    for byte in brackets:
        depth += 1 if byte in b"[{" else -1
        deepest = max(deepest, depth)
    return deepest - 1
