"""A docker kernel whose container was removed under it (by hand, or by the start-up sweep of a
pytest-hermes-kernel before 2026-12-02, which reads this kit's labels as a dead run's) says the
container was removed, and what may have done it.

It said ``no re-attach: container stopped (5698efe882dd)`` after ``docker rm -f 5698efe882dd``:
nothing had stopped it, and nothing pointed at the older version on the same engine that removes a
newer run's containers mid-test (seen this session: an 0dc088b run's sweep took kept kernels'
containers).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pytest_hermes_kernel.kernel.handle import KernelHandle

pytestmark = pytest.mark.usefixtures("docker_ready")


@pytest.mark.parametrize("server", [True, False], ids=["server", "spawn"])
def test_a_removed_container_is_said_removed(server: bool, private_tmp: Path) -> None:
    from pytest_hermes_kernel.containers.lifecycle import remove_container
    from pytest_hermes_kernel.transports.docker.transport import DockerTransport

    transport = DockerTransport(server=server, run_id=f"removed-{os.getpid()}-{time.monotonic_ns()}")
    handle = KernelHandle(transport)
    try:
        handle.start()
        assert handle.execute("x = 1").ok
        cid = handle.launched.extra["container"]
        remove_container(cid)

        r = handle.execute("x + 1")

        assert r.status == "died", r
        note = r.kernel.note or ""
        assert f"container {cid[:12]} was removed" in note and "before 2026-12-02" in note, note
        assert "container stopped" not in note, note
    finally:
        handle.shutdown()
        transport.close()
