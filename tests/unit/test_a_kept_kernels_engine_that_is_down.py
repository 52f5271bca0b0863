"""``hermes-kernel exec``/``attach`` on a docker kernel kept on an engine that does not answer now
(its dockerd stopped or restarted since, a second engine gone) say they cannot reach it, exit status
2, as for any kernel they cannot reach: both ended in a ``TransportUnavailableError`` traceback
(exit status 1, which says the cell failed)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.cli import main
from pytest_hermes_kernel.containers import kept


@pytest.mark.parametrize("argv", [["exec", "d" * 32, "1"], ["attach", "d" * 32]], ids=["exec", "attach"])
def test_a_kernel_kept_on_an_engine_that_does_not_answer_is_unreachable(argv, private_tmp: Path, capsys,
                                                                         monkeypatch) -> None:
    engine = f"unix://{private_tmp}/stopped-engine.sock"
    now = time.time()
    kept.save(kept.KeptKernel(
        kernel_id="d" * 32, transport="docker", token="t", nodeid="test_x.py::test_load[docker]", kept_at=now,
        detached_at=now, ttl_s=3600.0, host_pid=1,
        locator={"container_id": "f" * 64, "runner_pid": 23, "kernel_dir": "/hermes/k", "runner": "/hermes/k/r.pyz",
                 "python": "python3", "docker_host": engine, "reach": {"docker_host": engine}}))
    monkeypatch.setattr("sys.stdin", __import__("io").StringIO(""))

    code = main(argv)

    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith(f"hermes-kernel: the docker transport cannot run here: the docker engine at {engine} did "
                          "not answer"), err
    assert kept.find("d" * 32).kernel_id == "d" * 32  # its record stays: the engine may come back
