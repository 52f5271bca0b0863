"""An exiting worker that wrote more than a pipe buffer was killed as hung, its output cut unsaid.

On ``SystemExit`` the worker runs its atexit handlers and
joins its threads while the supervisor waited for it to end, reading nothing from its output
pipes. A handler or thread that printed more than the pipe holds (1 MiB) blocked on the full pipe
until the 2-s grace ran out; the worker was then SIGKILLed: the cell said ``exit_code=137``,
``signal=9`` and "forced kill after grace: the exiting kernel did not end" (it was not hung, only
unread), the output past the pipe's size never came and the dropped count left it out (96 bytes
dropped of 3 MB written). The supervisor now reads the pipes while it waits.

That no grace was waited out is said by the exit itself (code 0, no signal, no "forced kill"):
the test also asserted the cell took under 1.5 s, a figure for 3 MB through a pipe that a loaded
2-core machine can pass with the behaviour right.
"""

from __future__ import annotations

import pytest

WRITTEN = 3_000_000

EXITS = {
    "atexit": f"import atexit, sys; atexit.register(lambda: print('x' * {WRITTEN}, end='')); sys.exit(0)",
    "thread": ("import threading, time\n"
               f"threading.Thread(target=lambda: (time.sleep(0.1), print('x' * {WRITTEN}, end=''))).start()\n"
               "raise SystemExit(0)"),
}


@pytest.mark.parametrize("how", list(EXITS))
def test_an_exit_that_prints_more_than_a_pipe_holds_exits_with_its_code(hermes_kernel_factory, how):
    kernel = hermes_kernel_factory()

    result = kernel.execute(EXITS[how])

    assert result.status == "exited", result.summary()
    assert (result.kernel.exit_code, result.kernel.signal) == (0, None), result.summary()
    assert "forced kill" not in result.kernel.note
    assert result.stdout_truncated and result.stdout_dropped_bytes > WRITTEN - 1024 * 1024, result.stdout_dropped_bytes
    assert result.stdout.endswith("x" * 1000)

