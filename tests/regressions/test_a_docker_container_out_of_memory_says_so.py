"""Seen: a docker kernel under ``mem_limit_bytes`` whose container ran out of memory, and whose
OOM kill ended not the kernel's worker but the runner (its supervisor) or the container's init,
came back ``died`` with "no re-attach: the kernel runner (pid 23) in 86fde9d42ad1 is gone" or
"no re-attach: container stopped (2c6be7c73814)": nothing said memory, though the container's
memory cgroup had counted the kill and the engine said ``State.OOMKilled``. (A worker the OOM
killer ends is ``oom_killed``, read by its supervisor.) Now the loss says the OOM killer fired and
names the limit.

Which process the OOM killer takes is set the way an operator would: ``oom_score_adj`` 1000 on it,
by a root exec, before a cell outgrows the limit.
"""

from __future__ import annotations

import os
import time

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle
from pytest_hermes_kernel.transports import close_transport, forget_closed_transports, make_transport

pytestmark = pytest.mark.usefixtures("docker_ready")

LIMIT = 128 * 2**20


@pytest.mark.parametrize("victim", ["runner", "init"])
def test_an_oom_kill_of_the_runner_or_the_containers_init_is_said(victim: str) -> None:
    transport = make_transport("docker", container="fresh", mem_limit_bytes=LIMIT, server=False,
                               run_id=f"oom-{victim}-{os.getpid()}-{time.monotonic_ns()}")
    handle = KernelHandle(transport)
    try:
        handle.start()
        cid = handle.launched.extra["container"]
        pid = str(handle.launched.pid) if victim == "runner" else "1"
        code, _, err = transport._run(cid, ["sh", "-c", f"echo 1000 > /proc/{pid}/oom_score_adj"])
        assert code == 0, err

        result = handle.execute(f"x = bytearray({2 * LIMIT})", timeout=60)

        assert result.status == "died", result.summary()
        note = result.kernel.note or ""
        assert "OOM" in note and f"mem_limit_bytes={LIMIT}" in note, note
        if victim == "init":
            assert f"container stopped ({cid[:12]})" in note, note
    finally:
        handle.shutdown()
        close_transport(transport)
        forget_closed_transports()
