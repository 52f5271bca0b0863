"""What a cell's reply carries besides its output (the trailing value, the error or exit), and its bounds.

A cell's ``value`` (the ``repr`` of its last expression) is bounded like a stream: past the cap
the reply keeps the first 40 % and the last 60 % of it, says it was truncated and gives the
full length in characters (the host puts the marker between head and tail). An exception's
message and traceback are cut the same way with the marker inline. A reply that still would
not fit in one frame is replaced by an error saying so: the size of a reply never costs the
kernel. A traceback leaves out the runner's own frames.
"""

from __future__ import annotations

import os
import sys
import traceback

from .frames import MAX_FRAME_BYTES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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


def _code_dir() -> str:
    """Where the runner's code says it lives (frames name their code's file: in a zipapp's
    compiled members that is the name given when they were compiled, not ``__file__``)."""
    return os.path.dirname(_code_dir.__code__.co_filename)


#: The runner's own source files: their frames never appear in a cell's traceback.
_RUNNER_DIR = _code_dir()


_TYPE_NAME = type.__dict__["__name__"]


def type_name(obj: object) -> str:
    """The name of ``obj``'s class as the interpreter keeps it: never user code (a metaclass may
    make ``__name__`` a property that raises; read after the cell, it ended the worker)."""
    return str(_TYPE_NAME.__get__(type(obj)))


def safe_repr(value: Any) -> str:
    """``repr(value)``, or a note when ``__repr__`` itself fails.

    :raises KeyboardInterrupt: if the cell is interrupted while ``__repr__`` runs (it is the
        cell's code: the worker calls this while the cell still runs, so an interrupt ends it).
    """
    try:
        return repr(value)
    except KeyboardInterrupt:
        raise
    except BaseException as exc:  # noqa: BLE001 - a broken __repr__ must not kill the cell
        return f"<repr failed: {type_name(exc)}: {_safe_str(exc)}>"


def _safe_str(exc: object) -> str:
    """``str(exc)``, or a note when the exception's ``__str__`` itself fails (it is user code)."""
    try:
        return str(exc)
    except BaseException as again:  # noqa: BLE001 - a broken __str__ must not kill the worker
        return f"<str failed: {type_name(again)}>"


def describe_error(exc: BaseException, reply: Header, status: str) -> None:
    """Fill ``reply`` with ``status``, the exception and its traceback (the runner's frames cut out).

    The exception's ``__str__`` is user code: one that fails is named, never raised (raised here,
    after the cell, it ended the worker: exit code 70, the namespace lost).
    """
    reply["status"] = status
    reply["ename"] = type_name(exc)
    reply["evalue"] = _safe_str(exc)
    try:
        tbe = traceback.TracebackException.from_exception(exc)
        tbe.stack = traceback.StackSummary.from_list(
            [f for f in tbe.stack if os.path.dirname(f.filename) != _RUNNER_DIR])
        reply["traceback"] = "".join(tbe.format())
    except BaseException as again:  # noqa: BLE001 - as for __str__
        reply["traceback"] = f"{reply['ename']}: {reply['evalue']} (traceback failed: {type_name(again)})\n"


def describe_exit(exc: SystemExit, reply: Header) -> int:
    """Fill ``reply`` for a cell that raised ``SystemExit``; return the exit status (0-255).

    A code that is no int is user code: its ``__str__``/``__repr__`` may fail, and is named then,
    never raised (raised here, after the cell, it ended the worker: exit code 70, ``died``).
    """
    code = exc.code
    if code is None:
        status, text = 0, ""
    elif isinstance(code, int):
        status, text = code & 0xFF, _safe_str(code)
    else:
        status, text = 1, _safe_str(code)
        try:
            sys.stderr.write(f"{text}\n")
        except Exception:  # noqa: BLE001 - stderr may be closed by the cell
            pass
    try:
        shown = repr(code)
    except BaseException as again:  # noqa: BLE001 - as for __str__
        shown = f"<repr failed: {type_name(again)}>"
    reply.update(status="exited", ename="SystemExit", evalue=text, exit_code=status,
                 traceback=f"SystemExit: {shown}\n")
    return status
