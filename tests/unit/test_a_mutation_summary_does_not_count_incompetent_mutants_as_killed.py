"""``benchmarks/mutation.py``'s summary: a mutant that could not run (cosmic-ray's ``incompetent``)
is neither killed nor in the share of non-equivalent mutants killed.

Seen (breaker review, 2026-12-06): "killed after" was the mutants run minus the survivors left,
so an incompetent mutant counted as killed after the reruns (it was not among "killed before"),
and lifted the "% of the non-equivalent mutants killed" that docs/mutation-report.md quotes.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

import pytest

from tests.support import REPO_ROOT


def _mutation_module(monkeypatch: pytest.MonkeyPatch):  # noqa: ANN202 - a module loaded from its file
    spec = importlib.util.spec_from_file_location("bench_mutation", REPO_ROOT / "benchmarks" / "mutation.py")
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_mutation", module)  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _mutant(line: int, outcome: str) -> dict[str, Any]:
    return {"file": "pytest_hermes_kernel/x.py", "line": line, "operator": "ReplaceTrueWithFalse", "occurrence": 0,
            "outcome": outcome, "diff": f"-a{line}\n+b{line}"}


def test_an_incompetent_mutant_is_not_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    mutants = [_mutant(1, "killed"), _mutant(2, "killed"), _mutant(3, "survived"), _mutant(4, "incompetent")]
    report = {"file": "pytest_hermes_kernel/x.py", "count": 4, "selected": 4, "wall_s": 1.0, "mutants": mutants,
              "killed": 2, "survived": 1, "timeout": 0, "incompetent": 1}
    row = _mutation_module(monkeypatch)._file_row([report], equivalent=set())
    assert (row["killed_before"], row["killed_after"], len(row["survivors"])) == (2, 2, 1), row
