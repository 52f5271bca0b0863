"""A cell that replaces its runner's log with a fifo hangs no failing test's report.

A kernel dir is its cells' working dir, and its ``runner.log`` is what a failing test's report
shows of the runner (the story's "runner log", ``Transport.runner_log``; a start error's too).
A cell that removed it and made a fifo there (``os.mkfifo("runner.log")``) made that read wait for
a writer: on ``local`` (``open``) and ``docker`` (an exec of ``tail``) for good, so the report of
any later failure of the test hung the run; on ``ssh`` 15 s, with a ``tail`` left waiting on the
fifo on the ssh host; on ``filecell`` 15 s (its backend's timeout ended the ``tail``). The log is
now read only when it is a regular file: a fifo there reads as an empty log, at once.
"""

from __future__ import annotations

import errno

from tests.support import hang_alarm

MAKE_FIFO = "import os\nos.remove('runner.log')\nos.mkfifo('runner.log')"
#: In a cell: whether a process still waits to read the fifo (an open for writing without
#: blocking finds a reader, else fails with ENXIO).
READER_WAITS = f"""
import os
try:
    os.close(os.open('runner.log', os.O_WRONLY | os.O_NONBLOCK))
    waits = True
except OSError as exc:
    waits = exc.errno != {errno.ENXIO}
waits"""


def test_the_runner_log_of_a_kernel_whose_log_is_a_fifo_reads_empty_at_once(hermes_kernel) -> None:
    made = hermes_kernel.execute(MAKE_FIFO)
    assert made.ok, made.summary()

    with hang_alarm(60, "the runner log read waits on the cell's fifo"):
        log = hermes_kernel.transport.runner_log(hermes_kernel.launched)

    assert log == ""
    assert hermes_kernel.execute(READER_WAITS).value == "False", "a reader of the log was left waiting on the fifo"
