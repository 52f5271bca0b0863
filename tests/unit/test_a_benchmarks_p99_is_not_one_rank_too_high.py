"""``benchmarks/measures.py`` and ``bench_remote.py``: a p99 is the 99th percentile by nearest rank.

Seen (breaker review, 2026-12-06): ``xs[int(0.99 * n)]`` was one rank too high: the "rt_p99" of
100 round trips was the slowest of them, of 2000 the 1981st (the quoted p99 of ``--cells 2000``).
"""

from __future__ import annotations

import pytest

from tests.support import bench_module


@pytest.mark.parametrize(("n", "p99_rank"), [(1, 1), (2, 2), (100, 99), (101, 100), (2000, 1980)])
def test_the_p99_is_the_nearest_rank(n: int, p99_rank: int) -> None:
    times = [float(i) for i in range(n, 0, -1)]  # rank i is i seconds; given slowest first
    assert bench_module("measures").p99(times) == p99_rank
    assert bench_module("bench_remote").pct(times, 0.99) == p99_rank


@pytest.mark.parametrize(("n", "p90_rank"), [(1, 1), (10, 9), (50, 45), (51, 46)])
def test_the_seed_style_p90_is_the_nearest_rank(n: int, p90_rank: int) -> None:
    """``seed_style_filecell.py``'s p90 of run.py's 10 seed-style cells was the slowest of them."""
    times = [float(i) for i in range(n, 0, -1)]
    assert bench_module("seed_style_filecell").pct(times, 0.9) == p90_rank
