"""A tool that runs a cell on a kernel whose running cell waits (through tools on other kernels)
for that very tool is refused at once, as a tool that runs a cell on its own kernel is.

Kernel A's cell calls tool ``delegate``, which runs a cell on kernel B (a sub-agent's); that cell
calls tool ``ask_parent``, which runs a cell on A. A's running cell waits for ``delegate``, so the
new cell waited for A's turn, which never came: all three hung for ever (a tool's time pauses
its cell's budget). Only the direct case, a tool running a cell on its own kernel, was refused.
"""

from __future__ import annotations

from typing import Any

from tests.support import hang_alarm

CALLS = "import hermes_tools\n"


def test_a_tool_that_would_wait_for_its_own_callers_kernel_is_refused(hermes_kernel_factory) -> None:
    kernels: dict[str, Any] = {}

    def delegate() -> str:
        return kernels["b"].execute(CALLS + "hermes_tools.ask_parent()", timeout=60).summary()

    def ask_parent() -> str:
        return kernels["a"].execute("'from the parent'", timeout=60).value

    kernels["a"] = hermes_kernel_factory(tools={"delegate": delegate})
    kernels["b"] = hermes_kernel_factory(tools={"ask_parent": ask_parent})
    kernels["a"].execute("kept = 'yes'")

    with hang_alarm(60, "a tool ran a cell on a kernel whose running cell waited for the tool: deadlock"):
        result = kernels["a"].execute(CALLS + "hermes_tools.delegate()", timeout=60)

    assert result.status == "ok", result.summary()
    said = result.value  # the sub-agent's cell: its ToolError names A and why
    assert "ToolError" in said and kernels["a"].kernel_id in said and "waits for this tool" in said, said
    assert kernels["a"].execute("kept").value == "'yes'" and kernels["b"].execute("1").value == "1"


def test_a_tool_may_run_cells_on_other_kernels_that_do_not_wait_for_it(hermes_kernel_factory) -> None:
    kernels: dict[str, Any] = {}

    def delegate() -> str:
        return kernels["b"].execute(CALLS + "hermes_tools.ask_c()", timeout=60).value

    def ask_c() -> str:
        return kernels["c"].execute("6 * 7", timeout=60).value

    kernels["a"] = hermes_kernel_factory(tools={"delegate": delegate})
    kernels["b"] = hermes_kernel_factory(tools={"ask_c": ask_c})
    kernels["c"] = hermes_kernel_factory()

    with hang_alarm(60, "a chain of tools over three kernels hung"):
        result = kernels["a"].execute(CALLS + "hermes_tools.delegate()", timeout=60)

    assert (result.status, result.value) == ("ok", "\"'42'\""), result.summary()
