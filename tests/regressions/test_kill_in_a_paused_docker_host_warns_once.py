"""Seen: ``shutdown()`` of a docker kernel whose container is ``docker pause``d logged "kill of
kernel runner N in ... not possible: the container is paused" twice, 3 ms apart: the shutdown
killed the runner from outside, and the discard after it, not told of that kill, tried again.

Now a kill that was not confirmed is not repeated by the discard: one warning, and the shutdown
still says the kernel may still run.
"""

from __future__ import annotations

import logging

import pytest

pytestmark = pytest.mark.usefixtures("docker_ready")

PAUSED_KILL = "not possible: the container is paused"


@pytest.mark.parametrize("now", [True, False], ids=["now", "asked"])
def test_a_kill_in_a_paused_container_is_logged_once(own_docker, start, caplog, now):
    k = start(own_docker)
    assert k.execute("x = 1").status == "ok"
    cid, runner = k.launched.extra["container"], k.runner_pid
    own_docker.api.pause(cid)
    try:
        with caplog.at_level(logging.WARNING, logger="pytest_hermes_kernel"):
            info = k.shutdown(now=now)
    finally:
        own_docker.api.unpause(cid)

    warned = [r.getMessage() for r in caplog.records if PAUSED_KILL in r.getMessage()]
    assert len(warned) == 1, warned
    assert f"kernel runner {runner} " in warned[0], warned
    assert (info.confirmed, info.may_still_run) == (False, True), info
