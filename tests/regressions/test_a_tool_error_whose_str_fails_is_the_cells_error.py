"""A tool raising an exception whose ``__str__`` itself fails hung its cell.

The host described a failing tool as ``f"{type(exc).__name__}: {exc}"`` inside its ``except``:
the second exception escaped the tool's thread on the host (a thread traceback on the host's
stderr, "During handling of the above exception"), no result went out, and the cell waited for
one until its budget ran out (for ever with none). The message is now named as failed, as the
worker names a cell's own such exception, and the cell gets its ``ToolError`` at once.
"""

from __future__ import annotations

import pytest


def _failing_str(what: BaseException):
    class Bad(Exception):
        def __str__(self) -> str:
            raise what

    def tool() -> None:
        raise Bad()

    return tool


@pytest.mark.parametrize("what", [ValueError("no message"), KeyboardInterrupt(), SystemExit(3)],
                         ids=["ValueError", "KeyboardInterrupt", "SystemExit"])
def test_a_tool_error_whose_str_fails_is_the_cells_tool_error_at_once(hermes_kernel_factory, what):
    kernel = hermes_kernel_factory(tools={"bad": _failing_str(what)})
    kernel.execute("kept = 'yes'")

    result = kernel.execute("import hermes_tools\nhermes_tools.bad()", timeout=10)

    assert (result.status, result.ename) == ("error", "ToolError"), result.summary()
    assert result.evalue == f"Bad: <str failed: {type(what).__name__}>", result.evalue
    assert [c["ok"] for c in result.tool_calls] == [False]
    assert result.duration_s < 5, "answered at once, not at the end of the budget"
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost
