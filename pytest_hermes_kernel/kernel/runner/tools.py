"""``hermes_tools``: the module a cell imports to call the host's tools, through the worker
(:meth:`.worker.Worker.call_tool`, which runs each call under the running cell's authority)."""

from __future__ import annotations

import sys
import types

from .frames import MAX_FRAME_BYTES, encode_frame

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .frames import Header
    from .worker import Worker


class ToolError(Exception):
    """A tool call was refused or failed (raised inside the cell by ``hermes_tools``)."""


def make_tools_module(worker: Worker) -> types.ModuleType:
    """The ``hermes_tools`` module a cell imports: ``call(name, **kw)``, ``available()``, ``<name>(**kw)``."""
    mod = types.ModuleType("hermes_tools", "Tools the host registered; call them like functions.")
    mod.ToolError = ToolError  # type: ignore[attr-defined]

    def call(name: str, /, *args: Any, **kwargs: Any) -> Any:
        """Call the host tool ``name`` with keyword arguments; returns its JSON-able result."""
        if not isinstance(name, str):
            raise TypeError(f"hermes_tools.call() takes the tool's name first, as a str, not {type(name).__name__}")
        _keywords_only(name, args)
        return worker.call_tool(name, kwargs)

    def available() -> list[str]:
        """Names of the tools the host offers to the running cell."""
        return list(worker.tools)

    def __getattr__(name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)

        def tool(*args: Any, **kwargs: Any) -> Any:
            _keywords_only(name, args)
            return worker.call_tool(name, kwargs)

        tool.__name__ = tool.__qualname__ = name
        return tool

    mod.call, mod.available, mod.__getattr__ = call, available, __getattr__  # type: ignore[attr-defined]
    return mod


def install_tools_module(worker: Worker) -> None:
    """Put ``hermes_tools`` in ``sys.modules`` unless it is there: at the worker's start and before
    each cell (a cell that deleted it cut every later cell off the tools: the module has no spec)."""
    if "hermes_tools" not in sys.modules:
        sys.modules["hermes_tools"] = make_tools_module(worker)


def encode_tool_call(header: Header) -> bytes:
    """The frame of the ``tool_call`` ``header``.

    :raises ToolError: if its arguments are no JSON (``json``'s bare error named no tool), or too
        deep or too large for a frame: nothing is sent.
    """
    try:
        data = encode_frame(header)
    except (TypeError, ValueError, RecursionError) as exc:  # json's own, or FrameTooDeep
        raise ToolError(f"the arguments of tool {header.get('name')!r} cannot be sent to the host: {exc} "
                        "(they go as JSON: str, int, float, bool, None, lists and dicts of them)") from None
    if len(data) > MAX_FRAME_BYTES:
        raise ToolError(f"the tool call is {len(data)} bytes, over the {MAX_FRAME_BYTES}-byte frame limit")
    return data


def _keywords_only(name: str, args: tuple[Any, ...]) -> None:
    """:raises TypeError: if a call of tool ``name`` has positional ``args`` (a tool's arguments travel by name)."""
    if args:
        raise TypeError(f"hermes_tools.{name}() takes keyword arguments only (hermes_tools.{name}(key=value, ...)), "
                        f"not {len(args)} positional")
