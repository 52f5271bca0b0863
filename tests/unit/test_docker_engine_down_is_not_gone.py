"""A docker engine that does not answer cannot tell whether a kernel runner runs: the docker
transport's ``alive()`` says ``False`` then (the port allows it), but ``seen_gone()`` says ``False``
too, so the core never counts that runner dead (a timed-out cell is ``abandoned``, a shutdown not
``confirmed``). A runner the engine shows gone (its container stopped, its process ended) is seen
gone; one in a paused container is alive (frozen, not gone). The engine is faked here; a real
paused container is ``tests/regressions/test_paused_docker_host_is_not_reported_killed.py``.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from pytest_hermes_kernel.kernel.contract import Launched
from pytest_hermes_kernel.transports.docker import probes


class Engine:
    """What the probes use of a DockerTransport: the container's state and one exec, each
    answering as told (an exception: the engine failed)."""

    def __init__(self, state: Any, exec_answer: Any = (0, b"")) -> None:
        self.state_answer, self.exec_answer = state, exec_answer
        self.hosts = SimpleNamespace(state=self._state, seen_paused=lambda cid: self._safe_state() == "paused")
        self.servers = None

    def _state(self, container_id: str, since: str | None = None) -> str:
        if isinstance(self.state_answer, Exception):
            raise self.state_answer
        return self.state_answer

    def _safe_state(self) -> str | None:
        try:
            return self._state("c")
        except Exception:  # noqa: BLE001
            return None

    def run_script(self, container_id: str, script: str, *args: str, user: str = "root",
                   probe: bool = False) -> tuple[int | None, bytes]:
        if isinstance(self.exec_answer, Exception):
            raise self.exec_answer
        return self.exec_answer


def _launched() -> Launched:
    return Launched(stream=None, pid=31, kernel_dir="/tmp/hermes-kernels/k31", extra={"container": "c" * 64})  # type: ignore[arg-type]


ENGINE_DOWN = ConnectionError("Error while fetching server API version: connection refused")


@pytest.mark.parametrize("engine", [
    Engine(ENGINE_DOWN),                                  # the engine does not answer at all
    Engine("running", exec_answer=ENGINE_DOWN),           # it answered, then failed the probe's exec
    Engine("running", exec_answer=(126, b"")),            # the probe itself failed (not: the runner is gone)
], ids=["engine down", "exec failed", "probe failed"])
def test_a_runner_the_engine_cannot_tell_about_is_neither_alive_nor_seen_gone(engine):
    launched = _launched()

    assert probes.runner_seen(engine, launched) is None
    assert (probes.alive(engine, launched), probes.seen_gone(engine, launched)) == (False, False)
    assert probes.kill(engine, launched) is False  # and a kill is not confirmed


@pytest.mark.parametrize(("engine", "seen"), [
    (Engine("stopped"), False),                   # it went with its container
    (Engine("running", exec_answer=(1, b"")), False),  # its process ended
    (Engine("running", exec_answer=(0, b"")), True),
    (Engine("paused"), True),                     # frozen, not gone
], ids=["container stopped", "process ended", "running", "paused"])
def test_a_runner_the_engine_shows_is_seen_as_it_is(engine, seen):
    launched = _launched()

    assert probes.runner_seen(engine, launched) is seen
    assert probes.seen_gone(engine, launched) is (not seen)
