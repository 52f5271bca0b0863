"""Found by a breaker helper (the host out of resources, 2026-12-06): a filecell kernel's cell run
while the test process had no file descriptor left (``ulimit -n`` reached) could not start its
polls (each is a backend command: pipes, a process), and the kernel was lost with ``filecell
stream broke: 3 polls failed in a row; last: OSError: [Errno 24] Too many open files (the runner
could not be reached ...)``, naming no limit. The note now says this process ran out of file
descriptors, its limit and what to do. (The local, docker and ssh transports need no new fd for
a cell: they run it.)
"""

from __future__ import annotations

from pytest_hermes_kernel import start_kernel
from pytest_hermes_kernel.transports import make_transport
from tests.support import fds_left


def test_a_cell_whose_polls_found_no_fd_names_the_fd_limit() -> None:
    transport = make_transport("filecell")
    try:
        kernel = start_kernel(transport)
        assert kernel.execute("x = 41").status == "ok"
        with fds_left(0):
            result = kernel.execute("x + 1")
        note = result.kernel.note
        assert result.status == "died" and "Too many open files" in note, result
        assert "this process has run out of file descriptors (its limit, ulimit -n, is " in note, note
        kernel.shutdown()
    finally:
        transport.close()
