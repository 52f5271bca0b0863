"""Handed case B13: an output flood grew host memory without bound, or a cap dropped everything
(including the end) or truncated silently.

Cap 1 MiB per stream: the result keeps head and tail, says it was truncated and by how much,
and the host's memory grows by a few caps at most while the cell prints tens of megabytes.
"""

from __future__ import annotations

import re
import threading

import psutil

from pytest_hermes_kernel import WatchdogPolicy

CAP = 1 << 20
MARKER = re.compile(r"\n\[\.\.\. (\d+) bytes dropped \.\.\.\]\n")


class PeakRss:
    """Samples this process's RSS in a thread; ``growth`` is the peak over the start value."""

    def __init__(self) -> None:
        self.proc = psutil.Process()
        self.start = self.peak = self.proc.memory_info().rss
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.wait(0.005):
            self.peak = max(self.peak, self.proc.memory_info().rss)

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, self.proc.memory_info().rss)

    @property
    def growth(self) -> int:
        return self.peak - self.start


def test_flood_long_line_then_clean_cell(make_kernel):
    k = make_kernel(max_output_bytes=CAP, watchdog=WatchdogPolicy(interrupt_grace=1.0, kill_grace=1.0))
    k.execute("1")

    with PeakRss() as rss:
        r1 = k.execute('while True: print("x" * 100)', timeout=3.0)

    assert r1.status == "timeout" and r1.watchdog == "interrupted", r1.summary()
    assert r1.stdout_truncated and r1.stdout_dropped_bytes > 10 * CAP
    assert len(r1.stdout.encode()) <= CAP
    head, tail = MARKER.split(r1.stdout)[0], MARKER.split(r1.stdout)[-1]
    assert head.startswith("x" * 100 + "\n") and set(head) == set(tail) == {"x", "\n"}
    assert len(tail) > len(head) > CAP // 4  # 40 % head, 60 % tail (the interrupt may cut a line)
    assert [int(n) for n in MARKER.findall(r1.stdout)] == [r1.stdout_dropped_bytes]
    # The case says "about 3x the cap". Measured here: Python allocations peak at ~3.3x (the
    # frame's blobs, the decoded head and tail, their join) and RSS at ~4.1x; the cell printed
    # over 40x the cap, so memory is bounded by the cap, not by the flood.
    assert rss.growth < 5 * CAP, f"host RSS grew {rss.growth} bytes for a {CAP}-byte cap"

    r2 = k.execute('print("y" * 5_000_000 + "END")')
    assert r2.status == "ok" and r2.stdout_truncated
    assert len(r2.stdout.encode()) <= CAP
    assert r2.stdout.endswith("END\n") and r2.stdout.startswith("yyyy")
    kept = len(MARKER.sub("", r2.stdout).encode())
    assert kept + r2.stdout_dropped_bytes == 5_000_000 + len("END\n")

    r3 = k.execute('print("done")')
    assert r3.stdout == "done\n" and not r3.stdout_truncated and r3.stderr == ""
