"""``benchmarks/compare_checkouts.py``: the ratio comes with its spread over the rounds, and a
number of rounds that cannot alternate evenly is a usage error.

Seen (breaker review, 2026-12-06): the default ``--rounds 5`` ran BEFORE first in 3 rounds and
AFTER in 2 (the order bias the alternation is there to cancel, 1.17-1.21x on docker); ``--rounds
0`` measured nothing and ended in a StatisticsError traceback; the one ratio printed ("1.051x",
then "0.951x" for the same two checkouts) gave no hint of how much the rounds disagreed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import bench_module


def test_each_figure_has_the_lowest_and_highest_ratio_of_a_round(monkeypatch: pytest.MonkeyPatch,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    compare = bench_module("compare_checkouts")
    after_start = iter([0.009, 0.012])  # rounds' after/before: 0.9x, 1.2x

    def fake_round(checkout: Path, transport: str, starts: int, cells: int) -> dict[str, list[float]]:
        if checkout.name == "before":
            return {"start": [0.010], "rt": [0.001]}
        return {"start": [next(after_start)], "rt": [0.001]}

    monkeypatch.setattr(compare, "_round", fake_round)
    assert compare.main(["/x/before", "/x/after", "--rounds", "2"]) == 0
    start_row = next(line for line in capsys.readouterr().out.splitlines() if "start+first cell+stop" in line)
    assert start_row.endswith("0.900x-1.200x"), start_row


@pytest.mark.parametrize(("argv", "said"), [
    (["--rounds", "5"], "5 is odd"),
    (["--rounds", "0"], "0 is too few"),
    (["--starts", "0"], "0 is too few"),
    (["--cells", "x"], "'x' is not a whole number"),
])
def test_a_bad_count_is_a_usage_error_before_anything_runs(argv: list[str], said: str, monkeypatch: pytest.MonkeyPatch,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    compare = bench_module("compare_checkouts")
    monkeypatch.setattr(compare, "_round", lambda *a: pytest.fail(f"measured with {argv}"))
    with pytest.raises(SystemExit) as exit_info:
        compare.main(["/x/before", "/x/after", *argv])
    assert exit_info.value.code == 2
    assert said in capsys.readouterr().err
