"""``benchmarks/run.py``: a bad option is a usage error before anything is measured, and the
report writes no figure it did not measure (a chart it could not draw is not an older run's)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support import bench_module


def _never_measure(args: Any) -> dict[str, Any]:
    raise AssertionError(f"measured with {args}")


@pytest.mark.parametrize(("argv", "said"), [
    (["--cells", "0"], "--cells"),  # no median of no round trip: a StatisticsError traceback
    (["--cells", "-3"], "--cells"),
    (["--cells", "1"], "--cells"),  # cells // 2 == 0: 'cells/s 1 owner 0.000', measured on no cell
    (["--starts", "0"], "--starts"),  # every transport reported 'unavailable: StatisticsError'
    (["--transports", "dockr"], "dockr"),  # reported as an unavailable transport, exit status 0
    (["--transports", ""], "--transports"),
    (["--transports", "local,,docker"], "--transports"),
    (["--transports", "local,local"], "local"),
])
def test_a_bad_option_is_a_usage_error_before_anything_is_measured(
        argv: list[str], said: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    module = bench_module("run")
    monkeypatch.setattr(module, "collect", _never_measure)
    with pytest.raises(SystemExit) as exc:
        module.main(argv)
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert said in err and "Traceback" not in err


def _one_run() -> dict[str, Any]:
    return {"env": {"when": "2026-12-05 07:00:00", "cpus": 2, "python": "3.12", "platform": "linux"},
            "transports": {"local": {"rt_p50_ms": 0.5}},
            "anchors": {"pipe_echo_p50_ms": 0.01, "relay_echo_p50_ms": 0.02, "bare_python_start_p50_ms": 15.0,
                        "bare_python_rss_mb": 9.0},
            "starts": {}}


def test_without_matplotlib_the_run_keeps_its_figures_and_leaves_no_older_chart_as_latest(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    module = bench_module("run")
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    monkeypatch.setattr(module, "collect", lambda args: _one_run())
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    (tmp_path / "latest.png").write_bytes(b"an older run's chart")
    assert module.main(["--transports", "local", "--no-jupyter"]) == 0
    assert json.loads((tmp_path / "latest.json").read_text())["transports"]["local"]["rt_p50_ms"] == 0.5
    assert not (tmp_path / "latest.png").exists()  # it showed an older run's figures beside this run's
    err = capsys.readouterr().err
    assert "matplotlib" in err and "Traceback" not in err


def _quick(monkeypatch: pytest.MonkeyPatch, module: Any) -> None:
    """Every measurement of a ``--transports local`` run stubbed with a quick figure."""
    m, s = module.measures, module.starts
    monkeypatch.setattr(m, "kernel_figures", lambda name, cells, starts: {"rt_p50_ms": 0.5, "start_p50_ms": 12.0})
    monkeypatch.setattr(m, "throughput", lambda name, owners, cells: 1000.0)
    monkeypatch.setattr(m, "pipe_echo", lambda cells, relay=False: [1e-5, 2e-5])
    monkeypatch.setattr(m, "bare_python_start", lambda n: [0.015])
    monkeypatch.setattr(m, "bare_python_rss_mb", lambda: 9.0)
    monkeypatch.setattr(s, "path_figures", lambda name, n: {"start_first_p50_ms": 12.0, "server_note": ""})
    monkeypatch.setattr(s, "memory_per_kernel", lambda k=8: {"kernels": k, "idle_pss_mb": 5.5, "idle_uss_mb": 3.0})
    monkeypatch.setattr(s, "concurrent_starts", lambda n=64: {"kernels": n, "server_s": 0.4, "spawn_s": 1.0})


def _fails(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("No such kernel named python3")


def test_an_anchor_that_fails_late_in_the_run_loses_no_figure_measured_before_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    module = bench_module("run")
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    monkeypatch.setattr(module, "chart", lambda res, path: path.write_bytes(b"png"))
    _quick(monkeypatch, module)
    monkeypatch.setattr(module.measures, "jupyter_figures", _fails)  # jupyter_client there, its kernel not
    monkeypatch.setattr(module.starts, "concurrent_starts", _fails)

    assert module.main(["--transports", "local", "--cells", "10", "--starts", "2"]) == 0

    res = json.loads((tmp_path / "latest.json").read_text())
    assert res["transports"]["local"]["rt_p50_ms"] == 0.5 and res["starts"]["memory"]["idle_pss_mb"] == 5.5
    text = (tmp_path / "latest.txt").read_text()
    assert "not measured: jupyter (RuntimeError: No such kernel named python3)" in text, text
    assert "concurrent (RuntimeError: No such kernel named python3)" in text, text
    assert "idle memory per kernel, 8 forked from one server: PSS 5.5 MB" in text, text


def test_a_jupyter_anchor_that_is_not_installed_is_said_to_be_missing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = bench_module("run")
    monkeypatch.setattr(module, "RESULTS", tmp_path)
    monkeypatch.setattr(module, "chart", lambda res, path: path.write_bytes(b"png"))
    _quick(monkeypatch, module)
    monkeypatch.setattr(module.measures, "jupyter_figures", lambda cells, starts: None)  # not installed

    assert module.main(["--transports", "local", "--cells", "10", "--starts", "2"]) == 0

    text = (tmp_path / "latest.txt").read_text()
    assert "not measured: jupyter (jupyter_client or ipykernel is not installed: pip install '.[bench]')" in text, text
