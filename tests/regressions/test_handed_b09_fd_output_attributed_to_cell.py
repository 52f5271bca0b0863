"""Handed case B09: output written straight to fd 1/2 (os.system, subprocess, C printf) was lost
or went to the host's log instead of the cell's result.
"""

from __future__ import annotations

CELL = """
import os, subprocess, ctypes
print("P1", flush=True)
os.system("echo S1")
subprocess.run(["sh", "-c", "echo S2; echo S3 >&2"])
libc = ctypes.CDLL(None); libc.puts(b"C1"); libc.fflush(None)
print("P2")
"""


def test_fd_level_output_in_order_in_the_cells_result(make_kernel, capfd):
    k = make_kernel()

    r = k.execute(CELL)

    assert r.status == "ok", r.summary()
    assert r.stdout.splitlines() == ["P1", "S1", "S2", "C1", "P2"]
    assert r.stderr.splitlines() == ["S3"]
    nxt = k.execute("print('next')")
    assert (nxt.stdout, nxt.stderr) == ("next\n", "")
    runner_log = k.transport.runner_log(k.launched)
    host = capfd.readouterr()
    for text in ("P1", "S1", "S2", "S3", "C1", "P2"):
        assert text not in host.out and text not in host.err
        assert text not in runner_log
