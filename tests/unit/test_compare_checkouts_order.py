"""``benchmarks/compare_checkouts.py``: each checkout runs first in as many rounds as the other.

Seen (breaker review, 2026-12-06): the rounds always ran BEFORE then AFTER, and on docker the run
second in a round was slower whatever its code: main against 6f0c4df read 1.17x and 1.22x "slower",
and the same two swapped read 6f0c4df 1.21x slower than main (6f0c4df against itself: 1.10x).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import bench_module


@pytest.mark.parametrize("rounds", [2, 4, 6])
def test_each_checkout_runs_first_in_half_the_rounds(rounds: int, monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    compare = bench_module("compare_checkouts")
    runs: list[str] = []

    def fake_round(checkout: Path, transport: str, starts: int, cells: int) -> dict[str, list[float]]:
        runs.append(checkout.name)
        return {"start": [0.01], "rt": [0.001]}

    monkeypatch.setattr(compare, "_round", fake_round)
    assert compare.main(["/x/before", "/x/after", "--rounds", str(rounds)]) == 0

    pairs = [runs[i:i + 2] for i in range(0, len(runs), 2)]
    assert all(sorted(pair) == ["after", "before"] for pair in pairs), runs
    firsts = [pair[0] for pair in pairs]
    assert firsts.count("before") == firsts.count("after") == rounds // 2, runs
    assert "before" in capsys.readouterr().out
