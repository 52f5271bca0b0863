"""Found by a breaker helper (2026-12-06, malformed input): a cell that wrote a frame whose header
nests deeper than ``json`` can decode (``[[[...]]]`` 100,000 deep) on its worker's channel fd
crashed the kernel runner itself with a ``RecursionError``: the decoder turned only ``ValueError``
into a ``FrameError``. Now such a header is a frame error as any other garbage: the runner kills
the worker and its death note names the cell's bytes, and the kernel lives on. Every leg.
"""

from __future__ import annotations

import pytest

from tests.regressions.test_a_worker_the_runner_killed_says_why import CHANNEL

DEEP = (CHANNEL + "import os, struct, time\nbody = b'[' * 100000 + b']' * 100000\n"
        "os.write(fd, struct.pack('>II', 4 + len(body), len(body)) + body)\ntime.sleep(5)")


@pytest.mark.parametrize("bracket", ["[", "{\"a\":"])
def test_the_runner_kills_the_worker_and_says_why(hermes_kernel, bracket):
    code = DEEP if bracket == "[" else DEEP.replace("b'[' * 100000 + b']' * 100000",
                                                    "b'{\"a\":' * 100000 + b'1' + b'}' * 100000")
    r = hermes_kernel.execute(code)
    after = hermes_kernel.execute("6 * 7")

    assert (r.status, r.kernel.state_lost, r.kernel.signal) == ("died", True, 9), r.summary()
    assert "the kernel runner killed the worker: it sent bytes that are no frame" in r.kernel.note, r.kernel.note
    assert (after.status, after.value) == ("ok", "42"), after.summary()
