"""``benchmarks/soak.py``: ``--cycles`` needs two rising checkpoints, else a usage error before anything runs.

Seen (breaker review, 2026-12-06): ``--cycles 200`` ran 200 cycles and printed "+0.0" per 100
cycles for every figure (the growth is between the first and last checkpoint: the same one), so a
leak read as none; ``--cycles 500 50`` measured no cycle between its checkpoints.
"""

from __future__ import annotations

import pytest

from tests.support import bench_module


@pytest.mark.parametrize(("cycles", "said"), [
    (["200"], "two checkpoints or more"),
    (["500", "50"], "above the one before"),
    (["0", "50"], "above the one before"),
])
def test_checkpoints_that_measure_no_growth_are_refused(cycles: list[str], said: str, monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    soak = bench_module("soak")
    monkeypatch.setattr(soak, "make_transport", lambda *a, **k: pytest.fail(f"ran with --cycles {cycles}"))
    with pytest.raises(SystemExit) as exit_info:
        soak.main(["--cycles", *cycles])
    assert exit_info.value.code == 2
    assert said in capsys.readouterr().err
