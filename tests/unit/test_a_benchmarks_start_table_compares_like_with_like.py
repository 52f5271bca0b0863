"""``benchmarks/run.py``'s start table: every figure beside what it is compared with is the same
kind of figure, and a figure that was not measured is said to be missing.

Seen (breaker review, 2026-12-06): "local 8.6 ms ... jupyter_client 633.4 ms (ours 74x faster)"
put our start to first result (shutdown not timed) beside jupyter_client's start + first result
+ shutdown.
"""

from __future__ import annotations

from typing import Any

from tests.support import bench_module


def _result(**starts: Any) -> dict[str, Any]:
    return {"env": {}, "transports": {},
            "anchors": {"bare_python_start_p50_ms": 20.0, "pipe_echo_p50_ms": 0.01, "relay_echo_p50_ms": 0.05,
                        "bare_python_rss_mb": 10.0,
                        "jupyter": {"start_first_p50_ms": 400.0, "start_p50_ms": 700.0}},
            "starts": starts}


def test_ours_to_first_result_is_beside_jupyter_clients_to_first_result() -> None:
    text = "\n".join(bench_module("run").start_table(_result(local={"start_first_p50_ms": 10.0})))
    assert "jupyter_client 400.0 ms (ours 40x faster)" in text, text
