"""Contract: tool RPC runs under the authority of the cell that is running now, and only then."""

from __future__ import annotations

import signal

from ._probes import signal_in_kernel

TOOLS = {"add": lambda a, b: a + b, "boom": lambda: 1 / 0, "echo": lambda **kw: kw}


def test_tool_call_returns_the_host_value(kernel_factory):
    k = kernel_factory(tools=TOOLS)
    r = k.execute("import hermes_tools\n(hermes_tools.add(a=1, b=2), hermes_tools.call('echo', s='x', n=[1]))")
    assert r.status == "ok" and r.value == "(3, {'s': 'x', 'n': [1]})", r.summary()
    assert [c["name"] for c in r.tool_calls] == ["add", "echo"]
    assert all(c["ok"] for c in r.tool_calls)
    assert k.execute("sorted(hermes_tools.available())").value == "['add', 'boom', 'echo']"


def test_unknown_tool_is_refused_inside_the_cell(kernel_factory):
    k = kernel_factory(tools=TOOLS)
    r = k.execute("import hermes_tools\nhermes_tools.nope(a=1)")
    assert r.status == "error" and r.ename == "ToolError", r.summary()
    assert "unknown tool 'nope'" in r.evalue and "add" in r.evalue
    assert r.tool_calls == ()
    assert k.execute("hermes_tools.add(a=2, b=2)").value == "4"


def test_failing_tool_is_the_cells_error_not_the_hosts(kernel_factory):
    k = kernel_factory(tools=TOOLS)
    r = k.execute("import hermes_tools\nhermes_tools.boom()")
    assert r.status == "error" and r.ename == "ToolError" and "ZeroDivisionError" in r.evalue, r.summary()
    assert [c["ok"] for c in r.tool_calls] == [False]
    assert k.execute("1").status == "ok"


def _raise(exc: BaseException):
    raise exc


def test_a_tool_raising_keyboard_interrupt_or_system_exit_is_the_cells_error(kernel_factory):
    """Not an ``Exception``: it ended the host's tool thread with no answer, and the cell waited
    for one until its budget ran out (forever without one)."""
    k = kernel_factory(tools={"interrupt": lambda: _raise(KeyboardInterrupt("from the tool")),
                              "exit": lambda: _raise(SystemExit(3))})
    k.execute("kept = 1")
    code = ("import hermes_tools\nerrors = []\nfor name in ('interrupt', 'exit'):\n    try:\n"
            "        hermes_tools.call(name)\n    except Exception as exc:\n"
            "        errors.append(type(exc).__name__ + ': ' + str(exc))\nerrors")
    r = k.execute(code, timeout=15)
    assert r.status == "ok", r.summary()
    assert "KeyboardInterrupt: from the tool" in r.value and "SystemExit: 3" in r.value, r.value
    assert [c["ok"] for c in r.tool_calls] == [False, False]
    assert k.execute("kept").value == "1", "the kernel and its state go on"


def test_tool_budget_per_cell(kernel_factory):
    k = kernel_factory(tools=TOOLS, max_tool_calls=3)
    code = ("import hermes_tools\nout = []\nfor i in range(5):\n    try:\n"
            "        out.append(hermes_tools.add(a=i, b=0))\n    except hermes_tools.ToolError as exc:\n"
            "        out.append(str(exc))\nout")
    r = k.execute(code)
    values = eval(r.value)  # noqa: S307 - a list repr made by the test's own cell
    assert values[:3] == [0, 1, 2]
    assert all("limit reached (3)" in v for v in values[3:])
    assert len(r.tool_calls) == 3  # refusals are not counted
    assert k.execute("hermes_tools.add(a=5, b=5)").value == "10"  # a new cell, a new budget


def test_tool_call_from_a_thread_left_by_an_earlier_cell_is_refused(kernel_factory):
    """A thread of cell 1 calls a tool while no cell runs: refused, never run under a stale authority.

    The call is started between cells by a signal sent where the kernel runs (any transport); the
    handler holds the worker's main thread until the call was tried, so no cell can be active then.
    """
    calls: list[int] = []
    k = kernel_factory(tools={"add": lambda a, b: calls.append(1) or a + b})
    k.execute(
        "import hermes_tools, signal, threading\nout = []\ngo, done = threading.Event(), threading.Event()\n"
        "def late():\n    go.wait()\n"
        "    try:\n        out.append(hermes_tools.add(a=1, b=2))\n"
        "    except Exception as exc:\n        out.append(type(exc).__name__ + ': ' + str(exc))\n"
        "    done.set()\n"
        "def between_cells(signum, frame):\n    go.set()\n    done.wait(5)\n"
        "signal.signal(signal.SIGUSR1, between_cells)\n"
        "threading.Thread(target=late, daemon=True).start()")

    signal_in_kernel(k, k.pid, signal.SIGUSR1)  # between cells: no cell is active
    r = k.execute("out")

    assert r.value is not None and "ToolError" in r.value and "No active cell" in r.value
    assert calls == [] and r.tool_calls == ()


def test_tool_callable_captured_in_one_cell_runs_under_the_current_cell(kernel_factory):
    k = kernel_factory(tools=TOOLS, max_tool_calls=1)
    k.execute("import hermes_tools\nf = hermes_tools.add\nf(a=0, b=0)")
    r = k.execute("f(a=1, b=1)")
    assert r.value == "2" and [c["name"] for c in r.tool_calls] == ["add"]


def test_tool_call_with_no_tools_registered_is_refused(kernel_factory):
    k = kernel_factory()
    r = k.execute("import hermes_tools\nhermes_tools.add(a=1, b=2)")
    assert r.ename == "ToolError" and "available: none" in r.evalue
