"""A tool that raised an exception with a message longer than a frame lost its error.

The cell got ``ToolError: tool 'big' returned a value that does not fit in a frame``: the tool
had returned nothing, it had raised, and what it raised was gone. The message is now cut (its
head kept, the number of characters dropped said) so that the cell's ``ToolError`` names the
tool's exception and begins with its message.
"""

from __future__ import annotations

from pytest_hermes_kernel.kernel.rpc import MAX_TOOL_ERROR_CHARS


def _raise_long() -> None:
    raise ValueError("e" * (70 * 2**20))


def test_a_tool_error_longer_than_a_frame_reaches_the_cell_cut(hermes_kernel_factory):
    kernel = hermes_kernel_factory(tools={"big": _raise_long})

    result = kernel.execute("import hermes_tools\ntry:\n    hermes_tools.big()\nexcept hermes_tools.ToolError as exc:\n"
                            "    message = str(exc)\n(message[:16], message[-60:], len(message))", timeout=30)

    assert result.status == "ok", result.summary()
    head, tail, length = eval(result.value)  # noqa: S307 - a tuple repr made by the test's own cell
    assert head == "ValueError: eeee" and tail.endswith(f"[... {70 * 2**20 - MAX_TOOL_ERROR_CHARS} characters dropped ...]")
    assert length < MAX_TOOL_ERROR_CHARS + 100
    assert [c["ok"] for c in result.tool_calls] == [False]
