"""An ``async def`` tool is awaited: its cell gets the value it returns, or its error.

A tool of ``async def`` (an agent framework's tools often are) returned its coroutine unawaited:
the cell got ``ToolError: tool 'fetch' returned a value that is not JSON: Object of type
coroutine ...``, the host printed ``RuntimeWarning: coroutine ... was never awaited``, and the
tool's body never ran. It now runs to its end on an event loop of its own in the tool's thread.
"""

from __future__ import annotations

import asyncio
import warnings


async def fetch(city: str) -> dict[str, object]:
    await asyncio.sleep(0.01)
    return {"city": city, "temp": 21}


async def refuse(city: str) -> None:
    await asyncio.sleep(0)
    raise LookupError(f"no weather for {city}")


def test_an_async_tool_returns_its_value_to_the_cell(hermes_kernel_factory) -> None:
    kernel = hermes_kernel_factory(tools={"fetch": fetch})

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # "coroutine ... was never awaited"
        result = kernel.execute("import hermes_tools\nhermes_tools.fetch(city='Oslo')['temp']", timeout=30)

    assert (result.status, result.value) == ("ok", "21"), result.summary()
    assert [(c["name"], c["ok"]) for c in result.tool_calls] == [("fetch", True)]


def test_an_async_tool_that_raises_is_the_cells_tool_error(hermes_kernel_factory) -> None:
    kernel = hermes_kernel_factory(tools={"refuse": refuse})

    result = kernel.execute("import hermes_tools\nhermes_tools.refuse(city='Oslo')", timeout=30)

    assert (result.status, result.ename) == ("error", "ToolError"), result.summary()
    assert "LookupError: no weather for Oslo" in result.evalue, result.evalue


def test_an_async_tool_called_from_aexecute_runs_off_the_callers_loop(hermes_kernel_factory) -> None:
    from pytest_hermes_kernel import aexecute

    kernel = hermes_kernel_factory(tools={"fetch": fetch})

    result = asyncio.run(aexecute(kernel, "import hermes_tools\nhermes_tools.fetch(city='Bergen')['city']",
                                  timeout=30))

    assert (result.status, result.value) == ("ok", "'Bergen'"), result.summary()
