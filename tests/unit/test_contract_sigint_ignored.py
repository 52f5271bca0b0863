"""The contract suite's Ctrl-C case holds where pytest itself was started with SIGINT ignored.

A pytest started as a background job of a non-interactive shell (``cmd &`` in a CI script)
inherits SIGINT ignored, and ``_thread.interrupt_main`` does nothing then: the case's cell ran on
to its 60 s timeout and the case failed with "DID NOT RAISE KeyboardInterrupt" on every
transport (a clean-clone ``.ci/run`` started with ``&`` failed ten tests that way).
"""

from __future__ import annotations

import signal

from pytest_hermes_kernel.contract import cancel


def test_the_ctrl_c_case_passes_with_sigint_ignored_and_restores_it(make_kernel) -> None:
    kernel = make_kernel()
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        cancel.test_keyboard_interrupt_in_the_waiting_thread_leaves_no_orphaned_waiter(kernel)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN  # the run's own choice, given back
    finally:
        signal.signal(signal.SIGINT, previous)
