"""Tools: host functions a cell calls through the ``hermes_tools`` module.

A tool runs in the test process, under the authority of the cell that is running when it
is called: each call is recorded on that cell's result, a cell may make at most
``max_tool_calls`` calls, and a call with no cell running (from a thread an earlier cell left
behind) is refused. Inside the kernel a refusal raises ``hermes_tools.ToolError``.
"""

import signal

import pytest

CITIES = {"Oslo": 6, "Lima": 19}
asked = []  # host-side: proof that the tool ran here, in the test process


def temperature(city):
    asked.append(city)
    return CITIES[city]


pytestmark = pytest.mark.hermes_kernel(tools={"temperature": temperature}, max_tool_calls=3)


def test_a_cell_calls_a_host_tool_and_the_result_records_it(hermes_kernel):
    result = hermes_kernel.execute("import hermes_tools\nhermes_tools.temperature(city='Oslo') + 1")

    assert result.value == "7"
    assert asked[-1] == "Oslo"
    assert [call["name"] for call in result.tool_calls] == ["temperature"]


def test_a_failing_tool_is_an_error_in_the_cell_not_in_the_host(hermes_kernel):
    result = hermes_kernel.execute("import hermes_tools\nhermes_tools.temperature(city='Atlantis')")

    assert result.status == "error" and result.ename == "ToolError"
    assert "KeyError" in result.evalue


def test_each_cell_has_a_budget_of_tool_calls(hermes_kernel):
    code = """
import hermes_tools
answers, refusal = [], None
for _ in range(5):
    try:
        answers.append(hermes_tools.temperature(city="Lima"))
    except hermes_tools.ToolError as exc:
        refusal = str(exc)
        break
"""
    result = hermes_kernel.execute(code)

    assert result.status == "ok" and len(result.tool_calls) == 3
    assert hermes_kernel.execute("len(answers)").value == "3"
    assert "Tool call limit reached (3)" in hermes_kernel.execute("refusal").value
    # the budget is per cell: the next cell starts with a fresh one
    assert hermes_kernel.execute("hermes_tools.temperature(city='Lima')").value == "19"


def test_a_thread_left_behind_by_a_cell_is_refused(hermes_kernel):
    # the thread waits for SIGUSR1, which the test sends between cells (through the transport,
    # so this works wherever the kernel runs); then it calls the tool and keeps the verdict
    hermes_kernel.execute("""
import hermes_tools, signal, threading

go, called, verdict = threading.Event(), threading.Event(), []

def on_usr1(*_):
    # runs in the kernel's main thread between cells: while it waits, no cell can start
    go.set()
    called.wait(5)

signal.signal(signal.SIGUSR1, on_usr1)

def late_caller():
    go.wait()
    try:
        verdict.append(f"answered {hermes_tools.temperature(city='Oslo')}")
    except hermes_tools.ToolError as exc:
        verdict.append(f"refused: {exc}")
    called.set()

threading.Thread(target=late_caller, daemon=True).start()
""")
    calls_before = len(asked)

    # no cell is running now: wake the leftover thread
    hermes_kernel.transport.signal_pid(hermes_kernel.launched, hermes_kernel.pid, signal.SIGUSR1)

    r = hermes_kernel.execute("import time\nt = time.monotonic()\n"
                              "while not verdict and time.monotonic() - t < 10: time.sleep(0.01)\nverdict")
    assert "refused: No active cell" in r.value, r.value
    assert len(asked) == calls_before  # the tool never ran
