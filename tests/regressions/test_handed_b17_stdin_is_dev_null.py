"""Handed case B17: ``input()`` in a cell, or a subprocess inheriting stdin, blocked forever (or
swallowed protocol bytes when stdin was the command pipe). Cells get ``/dev/null`` as stdin.

Each read here ends only at end-of-file, which a stdin that never closes never gives: with the bug
such a cell ends by its timeout (status ``"timeout"``), so each cell's status and value say that it
did not wait. How soon the cells come back (the case asks for at most 1 s) is a speed figure,
measured by ``benchmarks/handed_bounds.py``: asserted here per cell, it failed on a loaded 2-core
machine with every read correct.
"""

from __future__ import annotations

CELLS = [
    ("q = 3", None),
    ('input("name? ")', "EOFError"),
    ('import subprocess; subprocess.run(["cat"], capture_output=True).stdout', "b''"),
    ("import sys; sys.stdin.read()", "''"),
    ('subprocess.run(["sh", "-c", "read line; echo got:$line"], capture_output=True, text=True).stdout',
     repr("got:\n")),
    ("q", "3"),
]


def test_stdin_reads_end_at_once_and_the_protocol_is_intact(make_kernel):
    k = make_kernel()
    for code, expected in CELLS:
        r = k.execute(code, timeout=10.0)
        if expected == "EOFError":
            assert r.status == "error" and r.ename == "EOFError" and "EOF" in r.evalue, r.summary()
        else:
            assert r.status == "ok" and r.value == expected, (code, r.summary())


def test_a_cells_stdin_is_dev_null(make_kernel):
    """What every read above relies on, said directly: fd 0 of a cell (and so of its children) is
    ``/dev/null``, never a pipe the kernel holds open (the command channel)."""
    r = make_kernel().execute("import os; os.path.samestat(os.fstat(0), os.stat(os.devnull))", timeout=10.0)

    assert r.status == "ok" and r.value == "True", r.summary()
