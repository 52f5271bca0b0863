"""Handed case B17: ``input()`` in a cell, or a subprocess inheriting stdin, blocked forever (or
swallowed protocol bytes when stdin was the command pipe). Cells get ``/dev/null`` as stdin.
"""

from __future__ import annotations

import time

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
        started = time.monotonic()
        r = k.execute(code, timeout=10.0)
        assert time.monotonic() - started < 1.0, f"{code!r} took too long: {r.summary()}"
        if expected == "EOFError":
            assert r.status == "error" and r.ename == "EOFError" and "EOF" in r.evalue
        else:
            assert r.status == "ok" and r.value == expected, (code, r.summary())
