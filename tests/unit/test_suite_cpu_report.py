"""``benchmarks/suite_cpu.py``: the per-test CPU report behind the suite-time floor in docs/testing.md."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import bench_module


TESTS = {
    "tests/contract/test_contract.py::test_a[docker]": {"cpu_s": 3.0, "wall_s": 4.0},
    "tests/contract/test_contract.py::test_a[ssh-spawn]": {"cpu_s": 1.0, "wall_s": 6.0},
    "tests/plugin/test_x.py::test_b": {"cpu_s": 6.0, "wall_s": 2.0},
}


def test_the_report_sums_cpu_by_directory_leg_and_file_and_gives_the_floor() -> None:
    text = bench_module("suite_cpu").report(TESTS, top=2, cores=2)
    assert text.splitlines()[:2] == [
        "3 tests: 10 CPU-s in 12 s of wall time, one at a time (0.83 cores busy on average)",
        "floor of a parallel run on 2 cores: 5 s (every core busy all the time)"]
    assert "       6.0      2.0      1         6000  tests/plugin" in text
    assert "       4.0     10.0      2         2000  tests/contract" in text
    assert "       1.0      6.0      1         1000  ssh" in text  # a leg with a suffix is its transport
    costliest = text.split("costliest 2 tests:")[1].splitlines()[1:]
    assert [line.split()[-1] for line in costliest] == ["tests/plugin/test_x.py::test_b",
                                                         "tests/contract/test_contract.py::test_a[docker]"]


def test_a_missing_or_empty_file_is_a_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    module = bench_module("suite_cpu")
    assert module.main([str(tmp_path / "absent.json")]) == 2
    assert "cannot read" in capsys.readouterr().err
    (tmp_path / "empty.json").write_text(json.dumps({"tests": {}}))
    assert module.main([str(tmp_path / "empty.json")]) == 2
    assert "has no tests" in capsys.readouterr().err
