"""A ``sys.stdout`` of the cell's own whose ``flush`` or ``closed`` raises ended the worker.

The worker flushes the cell's streams after it (``flush_stdio``: only ``Exception`` caught) and
looks at ``sys.stdout.closed`` before the next one (``restore_stdio``: unguarded); both are the
cell's code. A ``flush`` raising ``SystemExit`` or ``KeyboardInterrupt``, or a ``closed`` property
that raises, escaped the worker's loop: ``died`` (exit code 70) with the runner's own traceback on
stderr, the namespace lost, on that cell or the next one. The worker now keeps going: the cell
ends as its code did and the state is kept. So with ``del sys.stdout`` (an ``AttributeError``
in ``flush_stdio``): the next cell has a working ``sys.stdout`` again.
"""

from __future__ import annotations

import pytest

STREAM = """\
import sys
class Stream:
    def write(self, text):
        return len(text)
    def flush(self):
        {flush}
    @property
    def closed(self):
        {closed}
sys.stdout = Stream()
"""

CASES = {
    "flush-systemexit": ("raise SystemExit(5)", "return False"),
    "flush-keyboardinterrupt": ("raise KeyboardInterrupt", "return False"),
    "closed-raises": ("pass", "raise ValueError('closed?')"),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_stream_that_raises_in_the_runners_hands_keeps_the_kernel(hermes_kernel_factory, case):
    flush, closed = CASES[case]
    kernel = hermes_kernel_factory()
    kernel.execute("kept = 'yes'")

    first = kernel.execute(STREAM.format(flush=flush, closed=closed))
    after = kernel.execute("kept")

    for result in (first, after):
        assert result.status == "ok" and not result.kernel.state_lost, result.summary()
        assert "hermes_kernel_runner" not in result.stderr, result.stderr
    assert after.value == "'yes'"


def test_a_deleted_sys_stdout_keeps_the_kernel_and_comes_back(hermes_kernel_factory):
    kernel = hermes_kernel_factory()
    kernel.execute("kept = 'yes'")

    first = kernel.execute("import sys; del sys.stdout, sys.__stderr__")
    after = kernel.execute("print('back'); kept")

    assert first.status == "ok" and not first.kernel.state_lost, first.summary()
    assert (after.status, after.stdout, after.value) == ("ok", "back\n", "'yes'"), after.summary()
    assert not after.kernel.state_lost
