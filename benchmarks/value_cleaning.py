"""Host-side cost of cleaning a cell's text (ANSI strip + redaction), per MiB: issue #10 point 3.

``python benchmarks/value_cleaning.py [--mib 5]`` prints the seconds :func:`clean` takes on the
``repr`` of a ``"y" * N`` value and on the same size of log-like text (no credentials), best of 3.
Measured on the loaded 2-core dev machine (best of 3): the 5 MiB value repr 2941 ms before the
literal gates, 135 ms after (a few C-level substring searches); 5 MiB of log text that holds
``api`` 4384 ms before, 1773 ms after (the ``NAME=value`` pattern still runs, ~0.3 s per MiB).
A value is also bounded to ``max_output_bytes`` characters (1 MiB by default) before cleaning.
"""

from __future__ import annotations

import argparse
import time

from pytest_hermes_kernel.kernel.output import clean


def best_of(text: str, runs: int = 3) -> float:
    """Fewest seconds :func:`clean` took on ``text`` over ``runs`` runs."""
    best = float("inf")
    for _ in range(runs):
        started = time.perf_counter()
        clean(text)
        best = min(best, time.perf_counter() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--mib", type=int, default=5, help="text size in MiB")
    n = parser.parse_args().mib * 2**20
    value = repr("y" * n)
    line = "2026-12-01 09:00:00 INFO worker 17 handled request /api/items in 3 ms\n"
    log = (line * (n // len(line) + 1))[:n]
    for name, text in (("value repr", value), ("log text", log)):
        print(f"{name:>10}: {len(text) / 2**20:.1f} MiB cleaned in {best_of(text) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
