"""Bounds on what a cell's reply carries besides its output: the trailing value, the error text.

A cell's ``value`` (the ``repr`` of its last expression) is bounded like a stream: past the cap
the reply keeps the first 40 % and the last 60 % of it, says it was truncated and gives the
full length in characters (the host puts the marker between head and tail). An exception's
message and traceback are cut the same way with the marker inline. A reply that still would
not fit in one frame is replaced by an error saying so: the size of a reply never costs the
kernel.
"""

from __future__ import annotations

from .frames import MAX_FRAME_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .frames import Header

#: Characters of a value, message or traceback kept when the config names no cap.
DEFAULT_TEXT_CAP = 1024 * 1024


def split_text(text: str, cap: int) -> tuple[str, str] | None:
    """``(head, tail)`` of ``text`` (40 % / 60 % of ``cap`` characters), or ``None`` if it fits."""
    if len(text) <= cap:
        return None
    head_cap = cap * 2 // 5
    tail_cap = cap - head_cap
    return text[:head_cap], (text[-tail_cap:] if tail_cap else "")


def bound_value(reply: Header, value: str, cap: int) -> None:
    """Put ``value`` in ``reply``: whole, or as ``value`` + ``value_tail`` with the facts."""
    parts = split_text(value, cap)
    if parts is None:
        reply["value"] = value
        return
    reply.update(value=parts[0], value_tail=parts[1], value_truncated=True, value_length=len(value))


def bound_inline(text: str, cap: int) -> str:
    """``text``, or its head and tail around a ``[... N characters dropped ...]`` marker."""
    parts = split_text(text, cap)
    if parts is None:
        return text
    dropped = len(text) - len(parts[0]) - len(parts[1])
    return f"{parts[0]}\n[... {dropped} characters dropped ...]\n{parts[1]}"


def too_large(header: Header, size: int) -> Header:
    """The ``error`` result sent instead of the result ``header`` whose frame of ``size`` bytes
    exceeds the frame limit (its id, count and duration kept; its text dropped)."""
    note = f"the cell's reply is {size} bytes, over the {MAX_FRAME_BYTES}-byte frame limit"
    keep = ("type", "id", "execution_count", "duration_s")
    out: Header = {k: header[k] for k in keep if k in header}
    out.update(status="error", ename="ReplyTooLarge", evalue=note, traceback=f"ReplyTooLarge: {note}\n")
    return out
