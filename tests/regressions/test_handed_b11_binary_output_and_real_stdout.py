"""Handed case B11: binary or non-UTF-8 output crashed the output pipeline, and code that expects
a real ``sys.stdout`` (``.buffer``, ``.fileno()``) broke inside the kernel.
"""

from __future__ import annotations


def test_binary_output_and_real_stdout(make_kernel):
    k = make_kernel()

    r1 = k.execute('import sys, subprocess; subprocess.run(["printf", "via-fd\\\\n"], stdout=sys.stdout)')
    assert r1.status == "ok" and "via-fd" in r1.stdout, r1.summary()

    r2 = k.execute('sys.stdout.buffer.write(b"raw:\\xff\\xfe\\xc3\\n"); sys.stdout.flush()')
    assert r2.status == "ok", r2.summary()
    assert r2.stdout.startswith("raw:") and r2.stdout.count("\ufffd") >= 2
    assert k.alive

    r3 = k.execute('import os; os.write(2, b"err:\\x80\\x81\\n")')
    assert r3.stderr == "err:\ufffd\ufffd\n"

    r4 = k.execute('print("naïve ✓ 😀")')
    assert r4.stdout == "naïve ✓ 😀\n"

    assert k.execute("1 + 1").value == "2"
