"""``hermes_tools``: the module a cell imports to call the host's tools, through the worker
(:meth:`.worker.Worker.call_tool`, which runs each call under the running cell's authority)."""

from __future__ import annotations

import types

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    from .worker import Worker


class ToolError(Exception):
    """A tool call was refused or failed (raised inside the cell by ``hermes_tools``)."""


def make_tools_module(worker: Worker) -> types.ModuleType:
    """The ``hermes_tools`` module a cell imports: ``call(name, **kw)``, ``available()``, ``<name>(**kw)``."""
    mod = types.ModuleType("hermes_tools", "Tools the host registered; call them like functions.")
    mod.ToolError = ToolError  # type: ignore[attr-defined]

    def call(name: str, /, **kwargs: Any) -> Any:
        """Call the host tool ``name`` with keyword arguments; returns its JSON-able result."""
        return worker.call_tool(name, kwargs)

    def available() -> list[str]:
        """Names of the tools the host offers to the running cell."""
        return list(worker.tools)

    def __getattr__(name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)
        return lambda **kwargs: worker.call_tool(name, kwargs)

    mod.call, mod.available, mod.__getattr__ = call, available, __getattr__  # type: ignore[attr-defined]
    return mod
