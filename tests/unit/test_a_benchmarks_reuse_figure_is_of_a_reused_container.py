"""``benchmarks/reuse.py``: the "with --hermes-reuse" figure is of a second run whose kernel ran in
the first run's container, and the "without" figure of one whose kernel did not.

Seen (breaker review, 2026-12-06): nothing looked at which container the measured run used, so a
reuse that fell back to a new container (a store it could not read, a container it judged stale)
was reported as the reuse figure, and "reuse saves 0 ms" read as reuse being worth nothing.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support import bench_module


def _fake_runs(containers: list[str]) -> Any:
    """``subprocess.run`` for the inner pytest runs: each writes its marks, in ``containers`` in turn."""
    given = iter(containers)

    def run(args: list[str], *, env: dict[str, str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if "pytest" in args:
            Path(env["REUSE_BENCH_OUT"]).write_text(f"configured 1.0\nfirst-result 2.0\ncontainer {next(given)}\n")
        return subprocess.CompletedProcess(args, 0, "", "")
    return run


def test_a_reuse_run_in_a_new_container_gives_no_reuse_figure(monkeypatch: pytest.MonkeyPatch) -> None:
    reuse = bench_module("reuse")
    # without reuse: a new container each run; with reuse: the second run did not get the first's
    monkeypatch.setattr(reuse.subprocess, "run", _fake_runs(["aaa", "bbb", "ccc", "ddd"]))
    with pytest.raises(SystemExit, match="with --hermes-reuse ran its kernel in container ddd, the first run's was ccc: not reused"):
        reuse.measure(1)


def test_runs_that_used_the_containers_their_mode_says_give_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    reuse = bench_module("reuse")
    monkeypatch.setattr(reuse.subprocess, "run", _fake_runs(["aaa", "bbb", "ccc", "ccc"]))
    got = reuse.measure(1)
    assert set(got) == {"without --hermes-reuse", "with --hermes-reuse"}
    assert got["with --hermes-reuse"]["from_configure_s"] == 1.0
