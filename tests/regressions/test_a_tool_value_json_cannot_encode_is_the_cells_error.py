"""A tool whose value ``json.dumps`` refuses with a ``ValueError`` or ``RecursionError`` hung its cell.

The host caught only ``TypeError`` (a set, bytes) and a frame too large when it sent a tool's
result: an int of more than 4300 digits, a list that holds itself, or a list nested some 1000
deep raised out of the tool's thread on the host (a thread traceback on the host's stderr), no
result went out, and the cell waited for one until its budget ran out (for ever with none). Each
is now the cell's ``ToolError`` naming the tool, at once, and the kernel goes on (the nested one
named by its depth, the frame's limit, since json's own recursion error is read as that).
"""

from __future__ import annotations

import pytest


def _circular() -> list[object]:
    value: list[object] = []
    value.append(value)
    return value


def _nested(depth: int) -> list[object]:
    value: list[object] = []
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize(("make", "says"), [
    (lambda: 10 ** 5000, "returned a value that is not JSON: Exceeds the limit (4300 digits) for integer string conversion"),
    (_circular, "returned a value that is not JSON: Circular reference"),
    (lambda: _nested(100_000), "returned a value that does not fit in a frame: nested more than 500 levels deep"),
], ids=["huge-int", "circular", "nested-100000"])
def test_a_tool_value_json_cannot_encode_is_the_cells_tool_error(hermes_kernel_factory, make, says):
    kernel = hermes_kernel_factory(tools={"make": make})
    kernel.execute("kept = 'yes'")

    result = kernel.execute("import hermes_tools\nhermes_tools.make()", timeout=10)

    assert (result.status, result.ename) == ("error", "ToolError"), result.summary()
    assert f"tool 'make' {says}" in result.evalue, result.evalue
    assert result.duration_s < 5, "answered at once, not at the end of the budget"
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost
