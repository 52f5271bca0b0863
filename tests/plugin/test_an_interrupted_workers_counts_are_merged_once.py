"""Bug: under pytest-xdist, a worker that a Ctrl-C or SIGTERM interrupted had its counts added to
the run's summary twice: xdist reports such a worker down twice (``pytest_testnodedown`` as it
finishes, then again as an error, "keyboard-interrupt"), and each call merged its final counts.
A run of two tests on two workers, one of them SIGTERMed mid-cell, said ``kernels started: 3; peak
alive: 3; deaths and resets by reason: died=2`` for two kernels and one death. Now each worker's
counts are merged once.
"""

from __future__ import annotations

import pytest

INTERRUPTED_IN_A_WORKER = """
def test_interrupted(hermes_kernel):
    assert hermes_kernel.execute("1 + 1").value == "2"
    raise KeyboardInterrupt  # what the worker's SIGTERM handler raises
"""


def test_an_interrupted_workers_counts_are_merged_once(pytester: pytest.Pytester, run) -> None:
    pytester.makepyfile(test_one=INTERRUPTED_IN_A_WORKER)
    result = run("-n", "2", "--hermes-transport=local")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.stdout.fnmatch_lines(["*received keyboard-interrupt*"])
    result.stdout.fnmatch_lines(["kernels started: 1; peak alive: 1; *"])
