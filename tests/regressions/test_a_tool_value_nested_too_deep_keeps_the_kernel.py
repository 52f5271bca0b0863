"""A tool's value nested deeper than the kernel can decode killed the kernel.

A list nested 980 deep is JSON the host encodes (its tool thread is shallow), but the kernel
runner decoding the frame ran out of recursion: it died, the cell ended ``died`` with "the
kernel runner or its relay is gone", and the namespace was lost. The other way, a cell that had
raised its recursion limit sent arguments nested 3000 deep and the runner died the same way.
A frame's header may now be nested at most ``MAX_FRAME_DEPTH`` (500) levels on either side:
deeper, the call is the cell's ``ToolError`` and the kernel goes on.
"""

from __future__ import annotations

import pytest

from pytest_hermes_kernel.kernel.runner.frames import MAX_FRAME_DEPTH


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth - 1):
        value = [value]
    return value


NEST = "def nest(n):\n    v = []\n    for _ in range(n - 1):\n        v = [v]\n    return v\n"


def test_a_tool_value_too_deep_for_the_kernel_is_the_cells_tool_error(hermes_kernel_factory):
    kernel = hermes_kernel_factory(tools={"deep": _nested})
    kernel.execute("kept = 'yes'")

    result = kernel.execute("import hermes_tools\nhermes_tools.deep(depth=980)", timeout=10)

    assert (result.status, result.ename) == ("error", "ToolError"), result.summary()
    assert "tool 'deep' returned a value that does not fit in a frame" in result.evalue, result.evalue
    assert f"over the {MAX_FRAME_DEPTH}" in result.evalue, result.evalue
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost, after.summary()


def test_a_tool_value_as_deep_as_a_frame_may_hold_arrives_whole(hermes_kernel_factory):
    kernel = hermes_kernel_factory(tools={"deep": _nested})

    result = kernel.execute(NEST + f"import hermes_tools\nhermes_tools.deep(depth={MAX_FRAME_DEPTH}) == nest({MAX_FRAME_DEPTH})")

    assert result.value == "True", result.summary()


def test_tool_arguments_too_deep_for_the_runner_are_refused_in_the_cell(hermes_kernel_factory):
    calls: list[object] = []
    kernel = hermes_kernel_factory(tools={"echo": lambda v: calls.append(v)})
    kernel.execute("kept = 'yes'")

    result = kernel.execute(NEST + "import hermes_tools, sys\nsys.setrecursionlimit(20000)\n"
                            "hermes_tools.echo(v=nest(3000))", timeout=10)

    assert result.status == "error" and f"over the {MAX_FRAME_DEPTH}" in result.evalue, result.summary()
    assert calls == []
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost, after.summary()
