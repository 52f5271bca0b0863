"""A docker download whose archive exec's exit the engine reports late still completes.

After the archive's last byte the download asks the engine for the exec's exit code. It gave
the engine 5 s; a loaded engine took longer, and a complete download failed with "its
container stopped" while the container ran. Now it waits while the container runs (up to
``ARCHIVE_EXIT_WAIT_S``), and says which of the two it was when there is no code.
"""

from __future__ import annotations

import types

import pytest

from pytest_hermes_kernel.transports.docker import files


class SlowEngine:
    """``exec_inspect`` says ``Running`` for ``late_s`` seconds of the patched clock."""

    def __init__(self, clock: list[float], late_s: float, *, container_runs: bool = True) -> None:
        self.clock, self.until, self.container_runs = clock, clock[0] + late_s, container_runs

    def exec_inspect(self, exec_id: str) -> dict:
        running = self.clock[0] < self.until
        return {"Running": running, "ExitCode": None if running else 0, "ContainerID": "c0ffee"}

    def inspect_container(self, container_id: str) -> dict:
        return {"State": {"Running": self.container_runs}}


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    now = [100.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds

    monkeypatch.setattr(files, "time", types.SimpleNamespace(monotonic=lambda: now[0], sleep=sleep))
    return now


def _files(api: SlowEngine) -> files.DockerFiles:
    return types.SimpleNamespace(transport=types.SimpleNamespace(api=api))  # type: ignore[return-value]


def test_an_exit_reported_after_5_s_is_the_exit_code(clock: list[float]) -> None:
    assert files._exit_code(_files(SlowEngine(clock, late_s=12.0)), "e1") == 0  # it said "its container stopped"


def test_no_exit_code_says_whether_the_container_stopped(clock: list[float]) -> None:
    stopped = files._exit_code(_files(SlowEngine(clock, late_s=1e9, container_runs=False)), "e1")
    assert stopped == "its container stopped" and clock[0] - 100.0 < 2.0, (stopped, clock[0])

    silent = files._exit_code(_files(SlowEngine(clock, late_s=1e9)), "e1")
    assert silent == f"the docker engine did not report its exit within {files.ARCHIVE_EXIT_WAIT_S:g} s", silent
