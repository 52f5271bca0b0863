"""Output a cell's C code wrote through C stdio (``printf``, ``puts``) never reached any result.

fd 1 is a pipe, so C's ``stdout`` is fully buffered; the worker flushed Python's streams after a
cell, never C's, and ended by ``os._exit``, which does not flush it either: a C extension's (or a
``ctypes`` call's) ``printf`` output was in no cell's ``stdout``, not in a later one, not at the
kernel's end. DESIGN.md section 4 captures "output of subprocesses and C code". The worker now
flushes C stdio after each cell.
"""

from __future__ import annotations

PRINTF = "import ctypes; libc = ctypes.CDLL(None); libc.printf(b'hello from C\\n'); libc.printf(b'no newline')"


def test_printf_output_is_in_its_cells_stdout(hermes_kernel):
    result = hermes_kernel.execute(PRINTF)

    assert result.status == "ok", result.summary()
    assert result.stdout == "hello from C\nno newline"


def test_printf_output_before_an_exit_is_kept(hermes_kernel):
    result = hermes_kernel.execute(PRINTF + "\nimport sys; sys.exit(0)")

    assert (result.status, result.stdout) == ("exited", "hello from C\nno newline"), result.summary()
