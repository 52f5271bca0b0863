"""Seen (breaker review of e177b0d, 2026-12-06): a docker kernel under ``mem_limit_bytes`` whose
container was killed by hand (``docker kill``) mid-cell, after one of its cells had run out of
memory earlier (the kernel reset, the container running on), came back ``died`` with "container
stopped (ID): the engine says the OOM killer fired in it (State.OOMKilled): its memory limit
(mem_limit_bytes=N) ran out": the engine's ``OOMKilled`` says an OOM kill happened in the container
since it started (any process's: 64 MiB limit, one exec out of memory, then ``docker kill``:
``OOMKilled`` true, exit 137), not that it stopped the container.

Now a container that the engine's events show killed (a ``kill`` event: ``docker kill``, ``stop``,
``rm -f``) is said to be killed, with the signal; the OOM kill is named as an earlier one, not as the
cause. A container whose init the OOM killer ended still says its memory limit ran out
(test_a_docker_container_out_of_memory_says_so.py).
"""

from __future__ import annotations

import os
import time
import uuid
from concurrent.futures import ThreadPoolExecutor

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport
from tests.support import wait_until

pytestmark = pytest.mark.usefixtures("docker_ready")

LIMIT = 128 * 2**20


def test_a_container_killed_by_hand_after_an_oom_kill_is_said_killed_not_out_of_memory() -> None:
    transport = make_transport("docker", container="fresh", mem_limit_bytes=LIMIT, server=False,
                               run_id=f"oom-then-kill-{os.getpid()}-{time.monotonic_ns()}")
    handle = KernelHandle(transport)
    marker = f"/tmp/hermes-oom-then-kill-{uuid.uuid4().hex}"
    try:
        handle.start()
        cid = handle.launched.extra["container"]
        code, _, _ = transport._run(cid, ["python3", "-c", f"x = bytearray({2 * LIMIT})"])
        assert code == 137  # the OOM killer ended that process; the container and its kernel run on
        assert handle.execute("1 + 1").value == "2"
        with ThreadPoolExecutor(1) as pool:
            cell = pool.submit(handle.execute, f"open({marker!r}, 'w').close()\nimport time\ntime.sleep(60)",
                               timeout=90)
            assert wait_until(lambda: transport._run(cid, ["test", "-e", marker])[0] == 0, 30.0, interval=0.1,
                              what="the cell to run")
            transport.api.kill(cid, "KILL")
            result = cell.result(timeout=60)

        assert transport.api.inspect_container(cid)["State"]["OOMKilled"]  # what the engine says
        note = result.kernel.note or ""
        assert result.status == "died", result.summary()
        assert f"container stopped ({cid[:12]})" in note, note
        assert "ran out" not in note, note
        assert "killed" in note and "signal 9" in note, note
    finally:
        handle.shutdown()
        close_transport(transport)
        forget_closed_transports()
