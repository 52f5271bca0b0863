"""``benchmarks/run.py``: a start figure that could not be measured is named on the table, and a
remote anchor that fails does not end the run.

Seen (breaker review, 2026-12-06): a transport whose start figures failed (or that was not
available) was left out of the start table without a word, and the summary's ``not measured:``
line did not name it; a ``docker exec true`` anchor that raised ended the run in a traceback,
every figure measured before lost (no JSON, no table).
"""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from tests.support import bench_module


def _anchors() -> dict[str, Any]:
    return {"bare_python_start_p50_ms": 20.0, "pipe_echo_p50_ms": 0.01, "relay_echo_p50_ms": 0.05,
            "bare_python_rss_mb": 10.0}


def _figures(name: str, n: int) -> dict[str, Any]:
    if name == "ssh":
        raise RuntimeError("start to first result on ssh: 2 of 5 kernels were started by the spawn path")
    return {"start_first_p50_ms": 10.0, "server_note": ""}


def _engine_gone(n: int) -> float:
    raise ConnectionError("the docker engine went away")


def test_missing_start_figures_and_a_failed_anchor_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    run = bench_module("run")
    monkeypatch.setattr(run, "res_unavailable", lambda name, args: {"unavailable": "no sshd"} if name == "filecell" else {})
    monkeypatch.setattr(run.starts, "path_figures", _figures)
    monkeypatch.setattr(run.starts, "docker_exec_true", _engine_gone)
    args = argparse.Namespace(transports=["docker", "ssh", "filecell"], starts=5)
    res = {"env": {}, "transports": {}, "anchors": _anchors(), "starts": run.start_figures(args)}
    text = run.table(res)
    missing = text.splitlines()[-1]
    assert missing.startswith("not measured: "), text
    assert "docker_exec_true_p50_ms (ConnectionError: the docker engine went away)" in missing, text
    assert "ssh start figures (RuntimeError: start to first result on ssh" in missing, text
    assert "filecell start figures (no sshd)" in missing, text
    assert "  ssh       not measured: RuntimeError" in text and "  filecell  not measured: no sshd" in text, text
    assert "  docker        10.0 |" in text, text
