"""Tool RPC: host callables that code in a cell can call through ``hermes_tools``.

Inside a cell::

    import hermes_tools
    hermes_tools.lookup(city="Oslo")          # or hermes_tools.call("lookup", city="Oslo")

Every call runs under the authority of the cell that is running *now* (the seed system's
``CellAuthority``): it is refused when no cell is active (a thread an earlier cell left
behind), when the name is not registered, or when the cell's budget is spent. A callable
captured in cell 1 and called in cell 2 goes through cell 2's table and budget. An ``async def``
tool is awaited, on an event loop of its own in the tool's thread.
"""

from __future__ import annotations

import inspect
import keyword
import threading
import time
import unicodedata
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..errors import ConfigError, ToolCallRefused
from .output import redact

ToolFunc = Callable[..., Any]


class ToolTable:
    """Named host callables. Thread-safe; changes apply from the next cell on."""

    def __init__(self, tools: Mapping[str, ToolFunc] | None = None) -> None:
        if tools is not None and not isinstance(tools, Mapping):
            raise TypeError(f"tools must be a dict of name: callable, e.g. tools={{'print': print}}; got "
                            f"{type(tools).__name__} {tools!r}")
        self._tools: dict[str, ToolFunc] = {}
        self._lock = threading.Lock()
        for name, func in (tools or {}).items():
            self.register(name, func)

    def register(self, name: str, func: ToolFunc) -> None:
        """Offer ``func`` to cells as ``hermes_tools.<name>``.

        :raises ConfigError: if a cell could not call it by ``name``: not a str, not a public
            identifier, a keyword, one of ``hermes_tools``' own attributes, or changed by NFKC (as
            Python reads an identifier in source); or if ``func`` is not callable (a ``ValueError``).
        """
        problem = _unreachable(name)
        if problem:
            raise ConfigError(f"tool name {name!r} {problem}")
        if not callable(func):
            raise ConfigError(f"tool {name!r} is not callable: {func!r}")
        with self._lock:
            self._tools[name] = func

    def unregister(self, name: str) -> None:
        """Stop offering ``name`` to cells (a name not offered: nothing happens)."""
        with self._lock:
            self._tools.pop(name, None)

    def names(self) -> list[str]:
        """The names offered now, sorted."""
        with self._lock:
            return sorted(self._tools)

    def get(self, name: str) -> ToolFunc | None:
        """The callable offered as ``name``; ``None`` if none is."""
        with self._lock:
            return self._tools.get(name)

    def copy(self) -> ToolTable:
        """The table as it is now, apart from later changes (a running cell's tools)."""
        table = ToolTable()
        with self._lock:
            table._tools = dict(self._tools)
        return table


#: ``hermes_tools``' own attributes (kernel/runner/tools.py): a tool of one of these names was
#: registered, but ``hermes_tools.<name>`` in a cell is the module's, not the tool.
MODULE_NAMES = frozenset({"call", "available", "ToolError"})


def _unreachable(name: object) -> str | None:
    """Why a cell could not write ``hermes_tools.<name>``; ``None`` when it can."""
    if not isinstance(name, str):
        return f"must be a str, not {type(name).__name__}"
    if not name.isidentifier() or name.startswith("_"):
        return "must be a public Python identifier"
    if keyword.iskeyword(name):
        return "is a Python keyword: hermes_tools.<name> cannot be written"
    if name in MODULE_NAMES:
        return f"is hermes_tools' own ({', '.join(sorted(MODULE_NAMES))}): hermes_tools.{name} is not the tool"
    spelled = unicodedata.normalize("NFKC", name)
    if spelled != name:
        return f"is read as {spelled!r} in a cell's source (NFKC): register it as {spelled!r}"
    return None


#: A call's ``error`` in a result made while it still ran (a thread of the cut cell may still wait for it).
STILL_RUNNING = ("still running on the host when the cell ended: its result reaches only a thread of the cell "
                 "still waiting for it")
#: The same in the result of a cell whose worker died (an OOM kill, a SIGKILL): no thread is left to wait.
STILL_RUNNING_WORKER_GONE = "still running on the host when the cell's worker died: its result reaches nobody"


class CellAuthority:
    """The right to call tools, held by exactly one running cell and retired when it settles.

    :param cell_id: the request id of the cell.
    :param table: the tools it may call: as they are now (a change applies from the next cell on).
    :param max_calls: calls it may make (``KernelOptions.max_tool_calls``).
    :param secrets: values redacted from each call's ``args`` preview (before it is cut).
    """

    def __init__(self, cell_id: Any, table: ToolTable, max_calls: int, secrets: tuple[str, ...] = ()) -> None:
        self.cell_id = cell_id
        self.table = table.copy()  # a tool registered mid-cell was callable, one unregistered refused
        self.max_calls = max_calls
        self.secrets = secrets
        self.calls: list[dict[str, Any]] = []
        self.retired = False

    def retire(self) -> None:
        self.retired = True

    def snapshot(self, worker_gone: bool = False) -> list[dict[str, Any]]:
        """The calls as they stand now, for a cell's result (a copy: a call still running goes on
        without changing it). One still running has ``running=True`` and an ``error`` saying so.

        :param worker_gone: the cell's worker died: no thread of it waits for a call still running
            (the error said one did, for a cell the OOM killer ended).
        """
        out = []
        for call in list(self.calls):
            call = dict(call)
            if call.get("running"):
                call["error"] = STILL_RUNNING_WORKER_GONE if worker_gone else STILL_RUNNING
            out.append(call)
        return out

    def dispatch(self, cell_id: Any, name: str, args: Mapping[str, Any]) -> Any:
        """Run tool ``name`` for ``cell_id``.

        :returns: the tool's return value (must be JSON-serializable).
        :raises ToolCallRefused: if the authority is retired or belongs to another cell, the
            name is unknown, or the budget of ``max_calls`` is spent. Refusals are not counted.
        """
        if self.retired or cell_id != self.cell_id:
            raise ToolCallRefused("No active cell: the cell this call belonged to has settled, "
                                  "so its tool authority is retired.")
        func = self.table.get(name)
        if func is None:
            raise ToolCallRefused(f"unknown tool {name!r}; available: {', '.join(self.table.names()) or 'none'}")
        if len(self.calls) >= self.max_calls:
            raise ToolCallRefused(f"Tool call limit reached ({self.max_calls}). "
                                  "No more tool calls allowed in this cell.")
        started = time.perf_counter()
        record: dict[str, Any] = {"name": name, "args": _preview(args, self.secrets), "ok": False, "duration_s": 0.0, "running": True}
        self.calls.append(record)
        try:
            value = func(**args)
            if inspect.isawaitable(value):  # an ``async def`` tool
                value = _awaited(value)
            record["ok"] = True
            return value
        finally:
            record["duration_s"] = time.perf_counter() - started
            del record["running"]


def _awaited(awaitable: Awaitable[Any]) -> Any:
    """An async tool's value: run to its end on an event loop of its own, in the tool's thread (a
    caller's loop, if any, runs in another thread: a tool that needs it hands its work there with
    ``asyncio.run_coroutine_threadsafe``)."""
    import asyncio  # here: only a host with async tools pays for it

    async def wait() -> Any:
        return await awaitable

    return asyncio.run(wait())


#: Characters of a failing tool's message sent to the cell (4 bytes each at most: a frame holds
#: them); the cell's error is cut at ``max_output_bytes`` characters again.
MAX_TOOL_ERROR_CHARS = 4 * 1024 * 1024


def describe_tool_error(exc: BaseException, secrets: tuple[str, ...] = ()) -> str:
    """What the cell's ``ToolError`` says of a tool that raised ``exc``: ``"Name: message"``, the
    message redacted as a result's text is (``secrets`` and credential shapes: a tool runs where the
    host's secrets are, and an HTTP error naming its URL's ``?key=`` handed the kernel the key) and
    cut at :data:`MAX_TOOL_ERROR_CHARS`.

    The message is the tool's code too: one whose ``__str__`` fails is named as failed, in the
    worker's words for a cell's own such exception (raised here, it ended the tool's thread with
    no answer, and the cell waited for one until its budget ran out).
    """
    try:
        text = str(exc)
    except BaseException as again:  # noqa: BLE001 - a broken __str__ is the tool's, never the host's
        text = f"<str failed: {type(again).__name__}>"
    size = len(text)  # read past the cut as far as a secret reaches, so none is cut in two unredacted
    text = redact(text[:MAX_TOOL_ERROR_CHARS + 2 * max(map(len, secrets), default=0) + 160], secrets)
    if size > MAX_TOOL_ERROR_CHARS:  # (one past a frame was lost: "returned a value that does not fit")
        text = text[:MAX_TOOL_ERROR_CHARS] + f" [... {size - MAX_TOOL_ERROR_CHARS} characters dropped ...]"
    return f"{type(exc).__name__}: {text}"


#: Characters of a long string argument that a call's preview reads (redacted, then cut at 80):
#: the whole repr of a 60 MB argument, its dict's and a lower-case copy cost 2.25x its size more
#: (135 MB) and seconds of redaction, to show 77 characters.
PREVIEW_READ_CHARS = 65536


def _preview(args: Mapping[str, Any], secrets: tuple[str, ...]) -> str:
    """The arguments' repr, redacted as a result's text is, then cut at 80 characters (a secret cut
    first showed its head; uncut, a cell that passed its env's token to a tool showed it whole).
    A string argument longer than :data:`PREVIEW_READ_CHARS` (or twice the longest secret) is
    read that far: what is shown comes from its start, redacted as the whole would be (a secret
    literal that starts in the window is whole in what is read; only a pattern whose match ends
    further away, a URL password over 64 KiB long, could be missed)."""
    keep = max(PREVIEW_READ_CHARS, 2 * max(map(len, secrets), default=0) + 160)
    shown = {name: value[:keep] if type(value) is str and len(value) > keep else value for name, value in args.items()}
    text = redact(repr(shown), secrets)
    return text if len(text) <= 80 else text[:77] + "..."
