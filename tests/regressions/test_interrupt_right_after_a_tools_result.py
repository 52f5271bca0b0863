"""An interrupt sent right after a tool's result: the call returns the result, and the cell is
interrupted at its next step.

The worker raised such an interrupt inside the call when its SIGINT landed before the worker had
read the result waiting in its socket (the supervisor writes the result, then signals): the
cell lost the result (``x = hermes_tools.f()`` left ``x`` unset) and stopped before its next
statement. Measured with the host's stream sending the interrupt right after each result frame
(this test's shape, local transport): 17 of 200 cells lost the result before the fix, 0 of 200
after; 0 of 60 each on docker, ssh and filecell after
(``/tmp`` harness of the same shape, recorded in the commit).
"""

from __future__ import annotations

from tests.support import InterruptAfterFrame

CELL = "import hermes_tools, time\ngot = hermes_tools.value()\nafter = got + 1\nwhile True:\n    time.sleep(0.01)"


def test_an_interrupt_right_after_a_tools_result_lets_the_call_return_it(hermes_kernel_factory):
    kernel = hermes_kernel_factory(tools={"value": lambda: 7})
    stream = InterruptAfterFrame(kernel, "tool_result")

    # the race lost 1 cell in 12 to 1 in 40 here (it is the worker's, whatever the transport): many
    # tries where one costs ~5 ms, a few where it costs 60-170 ms (ssh, filecell)
    tries = 100 if kernel.transport.name in ("local", "docker") else 10
    for attempt in range(tries):
        kernel.execute("got = after = None")
        stream.arm()
        result = kernel.execute(CELL, timeout=15)
        assert result.status == "interrupted" and not result.kernel.state_lost, result.summary()
        assert kernel.execute("got, after").value == "(7, 8)", f"attempt {attempt}: the result was lost to the interrupt"
