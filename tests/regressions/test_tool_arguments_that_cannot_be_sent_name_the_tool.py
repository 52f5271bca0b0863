"""A tool call whose arguments cannot be sent said neither which call nor why.

Arguments JSON cannot carry raised ``json``'s own error in the cell (``TypeError: Object of type
set is not JSON serializable``, ``ValueError: Exceeds the limit (4300 digits)...``), naming
neither the tool nor the rule, and a positional argument raised ``TypeError:
make_tools_module.<locals>.__getattr__.<locals>.<lambda>() takes 0 positional arguments but 1
was given``. Each now names the tool and what it takes; nothing reaches the host, and the kernel
goes on.
"""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(("call", "ename", "says"), [
    ("hermes_tools.echo(v={1, 2})", "ToolError", "Object of type set is not JSON serializable"),
    ("hermes_tools.echo(v=b'x')", "ToolError", "Object of type bytes is not JSON serializable"),
    ("hermes_tools.echo(v=10 ** 5000)", "ToolError", "integer string conversion"),
    ("hermes_tools.echo(1)", "TypeError", "hermes_tools.echo() takes keyword arguments only"),
    ("hermes_tools.call('echo', 1, 2)", "TypeError", "hermes_tools.echo() takes keyword arguments only"),
], ids=["set", "bytes", "huge-int", "positional", "positional-through-call"])
def test_tool_arguments_that_cannot_be_sent_name_the_tool(hermes_kernel_factory, call, ename, says):
    calls: list[object] = []
    kernel = hermes_kernel_factory(tools={"echo": lambda **kw: calls.append(kw)})
    kernel.execute("kept = 'yes'")

    result = kernel.execute("import hermes_tools\n" + call)

    assert (result.status, result.ename) == ("error", ename), result.summary()
    assert says in result.evalue and "echo" in result.evalue, result.evalue
    assert calls == [] and result.tool_calls == ()
    after = kernel.execute("kept")
    assert after.value == "'yes'" and not after.kernel.state_lost
